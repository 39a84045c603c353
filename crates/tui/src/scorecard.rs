//! Scorecard screen (`:scorecard`, `4`): per share of the current queue, the five metrics from
//! the journal (completed-work utilisation, P50/P95 wait, preemption waste, fairness drift,
//! recovery) with a sparkline of the GPU-hours the share held.
//!
//! Nothing is computed while drawing: the app asks the event loop for a scorecard (an
//! [`super::effects::Effect::ComputeScorecard`]), a blocking task reads the journal and computes
//! it (a service from outside the console, which builds the card with [`view`]), and the result
//! comes back as a message; this screen draws the last one ([`card`] draws a computed card).

mod card;

pub use card::{span, spark, window_label};

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};

use super::data::Data;
use super::effects::{Effect, EffectResult, HistoryError};
use super::list::ListState;
use super::registry::{Opens, ScreenCommand, ScreenEntry, ScreenKey, fresh};
use super::screen::{Ctx, DrawCtx, Kind, Load, Screen};
use super::text::clean;
use super::theme::{Role, Theme};
use card::draw_card;
use quotatop_analysis::scorecard::decision::Evaluation;
use quotatop_analysis::scorecard::{
    self, AuditView, Scorecard, ScorecardInput, ScorecardOptions,
};
use quotatop_model::Millis;

/// Its entry in the screen registry (the `screens!` list in `lib.rs`).
pub const ENTRY: ScreenEntry = ScreenEntry {
    kind: Kind::Scorecard,
    opens: Opens::Fresh(fresh::<ScorecardScreen>),
    key: Some(ScreenKey {
        name: "scorecard",
        keys: &["4"],
        description: "scorecard: the five metrics per share, from history",
        hint: Some("screens"),
    }),
    command: Some(ScreenCommand {
        names: &["scorecard", "score", "4"],
        help: "the five metrics per share, from history",
    }),
};

/// The window the console's scorecard covers, ending at the queue's last observation (shorter
/// when the journal's history of the queue is).
pub const WINDOW_MS: Millis = 24 * 3_600_000;
/// Points per share sparkline.
pub const SERIES_BUCKETS: Millis = 24;
/// The screen recomputes after this many snapshots while it is shown.
pub const RECOMPUTE_EVERY: u64 = 30;

/// A computed scorecard, its per-share series (GPU-hours held per bucket) and the audit view
/// of exceptions (priority changes per operator and share, jobs raised repeatedly).
#[derive(Debug, Clone, PartialEq)]
pub struct ScorecardView {
    pub card: Scorecard,
    /// The window length asked for (config); the card's window is shorter when the journal
    /// holds less history than that, and the screen says so.
    pub asked_ms: Millis,
    pub series: Vec<(String, Vec<f64>)>,
    pub exceptions: AuditView,
    /// Important work, deadlines, interruption budgets and cost by the config's rules.
    pub evaluation: Evaluation,
    /// Whether the config sets any deadline or budget (else the screen says how to).
    pub rules_set: bool,
}

/// The answer of a scorecard computation for `queue`.
#[derive(Debug, Clone, PartialEq)]
pub struct ScorecardResult {
    pub queue: String,
    pub result: Result<Box<ScorecardView>, HistoryError>,
}

/// What the screen shows.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum ScorecardState {
    /// Never asked.
    #[default]
    Idle,
    /// Asked, no result yet.
    Computing,
    Ready(Box<ScorecardView>),
    /// The computation failed (the reason, shown).
    Failed(String),
    /// No journal: off, or it could not be opened.
    Unavailable,
}

/// The scorecard of `input` and its per-share series over [`SERIES_BUCKETS`] buckets of its
/// window (the history observed, when that is shorter than asked).
pub fn view(input: &ScorecardInput, opts: &ScorecardOptions) -> ScorecardView {
    let card = scorecard::scorecard(input, opts);
    // Rounded up: never a 25th sliver of a bucket at the end.
    let bucket = ((input.window.len_ms() + SERIES_BUCKETS - 1) / SERIES_BUCKETS).max(1);
    let series = scorecard::share_series(input, opts, bucket)
        .into_iter()
        .map(|(name, points)| (name, points.iter().map(|p| p.held_gpu_hours).collect()))
        .collect();
    ScorecardView {
        asked_ms: input.window.len_ms(),
        card,
        series,
        exceptions: AuditView::default(),
        evaluation: Evaluation::default(),
        rules_set: false,
    }
}
/// The Scorecard screen owns its computation: it asks for the card of the current queue (and
/// the time shown), keeps the last answer on screen while a newer one is computed, and takes
/// only the answer to its latest request.
pub struct ScorecardScreen {
    state: ScorecardState,
    /// The queue and service time (`None`: the latest) of the request under way.
    pending: Option<Target>,
    /// What the card shown was computed for.
    shown_for: Option<Target>,
}

/// A queue and the service time its window ends at (`None`: the latest observation).
type Target = (String, Option<Millis>);

impl ScorecardScreen {
    pub fn new() -> Self {
        Self {
            state: ScorecardState::Idle,
            pending: None,
            shown_for: None,
        }
    }

    pub fn state(&self) -> &ScorecardState {
        &self.state
    }
}

impl Default for ScorecardScreen {
    fn default() -> Self {
        Self::new()
    }
}

fn message(frame: &mut Frame, area: Rect, block: Block, text: &str, role: Role, theme: &Theme) {
    frame.render_widget(
        Paragraph::new(Line::from(Span::styled(
            text.to_string(),
            theme.style(role),
        )))
        .wrap(Wrap { trim: true })
        .block(block),
        area,
    );
}
impl Screen for ScorecardScreen {
    fn kind(&self) -> Kind {
        Kind::Scorecard
    }

    fn refresh(&mut self, _data: &Data, _queue: Option<&str>) {}

    fn load(&mut self, why: Load, ctx: &Ctx) -> Vec<Effect> {
        if !ctx.history {
            self.state = ScorecardState::Unavailable;
            return Vec::new();
        }
        let Some(queue) = ctx.queue_name() else {
            self.state = ScorecardState::Failed("no data yet".into());
            return Vec::new();
        };
        let target = (queue.clone(), ctx.as_of(&queue));
        // The same card every so often: not while it is still being computed.
        if why == Load::Periodic && self.pending.as_ref() == Some(&target) {
            return Vec::new();
        }
        // Another queue or time: not the figures shown, which stay only for a recomputation.
        let same = matches!(self.state, ScorecardState::Ready(_))
            && self.shown_for.as_ref() == Some(&target);
        if !same {
            self.state = ScorecardState::Computing;
        }
        let as_of = target.1;
        self.pending = Some(target);
        vec![Effect::ComputeScorecard { queue, as_of }]
    }

    fn on_result(&mut self, result: &EffectResult, _ctx: &Ctx) -> Vec<Effect> {
        let EffectResult::Scorecard(r, as_of) = result else {
            return Vec::new();
        };
        let target = (r.queue.clone(), *as_of);
        // An answer to an older request (the runner drops those it cancelled).
        if self.pending.as_ref() != Some(&target) {
            return Vec::new();
        }
        self.pending = None;
        self.state = match &r.result {
            Ok(view) => ScorecardState::Ready(view.clone()),
            Err(HistoryError::NoHistory) => ScorecardState::Unavailable,
            Err(e) => ScorecardState::Failed(e.to_string()),
        };
        self.shown_for = Some(target);
        Vec::new()
    }

    fn draw(&self, frame: &mut Frame, area: Rect, ctx: &DrawCtx) {
        let theme = ctx.theme;
        let queue = ctx
            .data
            .queue(ctx.queue)
            .map(|(q, _)| q.key())
            .or(ctx.queue.map(str::to_string))
            .unwrap_or_else(|| "-".to_string());
        // The window of the result shown (its length comes from config, cut to the history
        // observed; it ends at the time travelled to while in the past).
        let title = match &self.state {
            ScorecardState::Ready(v) if v.card.window.len_ms() < v.asked_ms => format!(
                " Scorecard · {} · {} (window {}) to {} ",
                clean(&queue),
                window_label(v),
                span(v.asked_ms),
                super::text::date_time(Some(v.card.window.end.saturating_sub(1)))
            ),
            ScorecardState::Ready(v) => format!(
                " Scorecard · {} · {} to {} ",
                clean(&queue),
                window_label(v),
                super::text::date_time(Some(v.card.window.end.saturating_sub(1)))
            ),
            _ => format!(" Scorecard · {} ", clean(&queue)),
        };
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(theme.style(Role::Border))
            .title(Span::styled(title, theme.style(Role::Title)));
        match &self.state {
            ScorecardState::Idle | ScorecardState::Computing => {
                message(frame, area, block, "computing…", Role::Muted, theme)
            }
            ScorecardState::Unavailable => message(
                frame,
                area,
                block,
                "history unavailable: the console is not keeping a journal (see the status bar)",
                Role::Warning,
                theme,
            ),
            ScorecardState::Failed(e) => message(
                frame,
                area,
                block,
                &format!("no scorecard: {}", clean(e)),
                Role::Warning,
                theme,
            ),
            ScorecardState::Ready(view) => draw_card(frame, area, block, view, theme),
        }
    }

    fn list(&mut self) -> Option<&mut ListState> {
        None
    }

    fn list_ref(&self) -> Option<&ListState> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spark_scales_to_the_shared_max() {
        assert_eq!(spark(&[0.0, 5.0, 10.0], 10.0), "▁▅█");
        assert_eq!(spark(&[0.0, 0.0], 0.0), "▁▁");
    }

    #[test]
    fn spans_read_as_people_say_them() {
        let min = 60_000;
        assert_eq!(span(42_000), "42s");
        assert_eq!(span(12 * min), "12m00s");
        assert_eq!(span(185 * min), "3h05m");
        assert_eq!(span(120 * min), "2h00m");
        assert_eq!(span(24 * 60 * min), "1d00h");
        assert_eq!(span(7 * 24 * 60 * min), "7d00h");
        assert_eq!(span(51 * 60 * min), "2d03h");
    }
}

#[cfg(test)]
mod work_tests;
