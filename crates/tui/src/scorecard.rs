//! Scorecard screen (`:scorecard`, `4`): per share of the current queue, the five metrics from
//! the journal (completed-work utilisation, P50/P95 wait, preemption waste, fairness drift,
//! recovery) with a sparkline of the GPU-hours the share held.
//!
//! Nothing is computed while drawing: the app asks the event loop for a scorecard (an
//! [`super::effects::Effect::ComputeScorecard`]), a blocking task reads the journal and computes
//! it (a service from outside the console, which builds the card with [`view`]), and the result
//! comes back as a message; this screen draws the last one.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Row, Table, Wrap};

use super::data::Data;
use super::effects::{Effect, EffectResult, HistoryError};
use super::list::ListState;
use super::registry::{Opens, ScreenCommand, ScreenEntry, ScreenKey, fresh};
use super::screen::{Ctx, DrawCtx, Kind, Load, Screen};
use super::text::clean;
use super::theme::{Role, Theme};
use quotatop_analysis::scorecard::decision::Evaluation;
use quotatop_analysis::scorecard::{
    self, AuditView, COLUMNS, Column, Scope, Scorecard, ScorecardInput, ScorecardOptions,
    format as fmt,
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

/// The line on deadlines and interruption budgets: breaches first, in words.
fn budget_line(view: &ScorecardView, theme: &Theme) -> Line<'static> {
    let e = &view.evaluation;
    if !view.rules_set {
        return Line::from(Span::styled(
            " no deadlines or interruption budgets set ([deadlines.SHARE], [budgets.SHARE] in the config)",
            theme.style(Role::Muted),
        ));
    }
    let breaches = e.budget_breaches();
    let over: Vec<String> = e
        .budgets
        .iter()
        .filter(|b| b.jobs_over_preemptions + b.days_over_lost > 0)
        .map(|b| {
            let mut parts = Vec::new();
            if b.jobs_over_preemptions > 0 {
                parts.push(format!(
                    "{} job(s) over its preemption budget",
                    b.jobs_over_preemptions
                ));
            }
            if b.days_over_lost > 0 {
                parts.push(format!(
                    "{} day(s) over its lost GPU-h budget",
                    b.days_over_lost
                ));
            }
            format!(
                "{} {}",
                quotatop_model::clean_text(&b.share),
                parts.join(", ")
            )
        })
        .collect();
    let budgets = if !e.budgets_defined {
        Span::raw(" interruption not judged: no budget defined".to_string())
    } else if breaches == 0 {
        Span::raw(" budgets: no breach".to_string())
    } else {
        Span::styled(
            format!(" BUDGET BREACHED: {}", over.join("; ")),
            theme.style(Role::Critical),
        )
    };
    Line::from(vec![
        budgets,
        Span::raw(format!(
            " · deadlines missed {}/{} (important {}/{}) · important P95 wait {}",
            e.all.deadlines.missed,
            e.all.deadlines.with_deadline,
            e.important.deadlines.missed,
            e.important.deadlines.with_deadline,
            fmt::duration(e.important.wait.p95_ms),
        )),
    ])
}

/// A span for people: the one duration format ([`quotatop_model::format_duration`]).
pub fn span(ms: Millis) -> String {
    quotatop_model::format_duration(ms)
}

/// Which window the figures cover: `last 24 h`, or `12 min of history` when the journal holds
/// less than the window asked for.
pub fn window_label(view: &ScorecardView) -> String {
    let len = view.card.window.len_ms();
    if len < view.asked_ms {
        format!("{} of history", span(len))
    } else {
        format!("last {}", span(len))
    }
}

const LEVELS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// `values` scaled to `max` (all shares share one scale, so heights compare).
pub fn spark(values: &[f64], max: f64) -> String {
    let max = if max > 0.0 { max } else { 1.0 };
    values
        .iter()
        .map(|v| {
            let level = ((v.max(0.0) / max) * (LEVELS.len() - 1) as f64).round() as usize;
            LEVELS[level.min(LEVELS.len() - 1)]
        })
        .collect()
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

/// The table's head: the share, every figure of the scorecard's column list, the sparkline.
fn header() -> Vec<&'static str> {
    std::iter::once("share")
        .chain(COLUMNS.iter().map(|c| c.header))
        .chain(std::iter::once("held"))
        .collect()
}

/// The audit view under the table: who changed priorities in which share, and jobs raised
/// repeatedly (at most three of each; `report` lists them all).
fn exception_lines(x: &AuditView, theme: &Theme) -> Vec<Line<'static>> {
    let muted = theme.style(Role::Muted);
    let mut out = vec![Line::from(Span::styled(
        " priority changes (operator · share · changes / raises / without change record)",
        theme.style(Role::Header),
    ))];
    if x.per_operator.is_empty() {
        out.push(Line::from(Span::styled(" none in the window", muted)));
    }
    for o in x.per_operator.iter().take(3) {
        let role = if o.without_change_record > 0 {
            Role::Warning
        } else {
            Role::Text
        };
        out.push(Line::from(vec![
            Span::raw(format!(" {} · {} · ", clean(&o.operator), clean(&o.share))),
            Span::styled(
                format!("{} / {} / {}", o.changes, o.raises, o.without_change_record),
                theme.style(role),
            ),
        ]));
    }
    if x.per_operator.len() > 3 {
        out.push(Line::from(Span::styled(
            format!(
                " … {} more (quotatop report lists all)",
                x.per_operator.len() - 3
            ),
            muted,
        )));
    }
    for j in x.raised_repeatedly.iter().take(3) {
        out.push(Line::from(Span::styled(
            format!(
                " raised {}× · job {} ({}) · {} → {}",
                j.raises,
                clean(&j.job_id),
                clean(&j.share),
                j.from,
                j.to
            ),
            theme.style(Role::Warning),
        )));
    }
    out
}

fn draw_card(frame: &mut Frame, area: Rect, block: Block, view: &ScorecardView, theme: &Theme) {
    let card = &view.card;
    let q = &card.queue_row;
    // The window is named next to the figures: the Preemptions screen's GPU-hours cover
    // another span (every preempted attempt recorded) and another quantity.
    // Completed-work utilisation counts only finished work: early in a window, with capacity
    // busy and little finished, it is low. The share of capacity held and the GPU-hours still
    // in unfinished jobs say so beside it (from the same ledger), never inside it.
    let held = (q.utilisation.allocated_gpu_hours > 0.0)
        .then(|| q.ledger.held_gpu_hours() / q.utilisation.allocated_gpu_hours);
    let summary = vec![
        Line::from(vec![
            Span::styled(
                format!(" queue, {}: ", window_label(view)),
                theme.style(Role::Muted),
            ),
            Span::raw(format!(
                "util {} (finished work) · capacity held {} · {:.1} GPU-h in unfinished jobs",
                fmt::percent(q.utilisation.ratio),
                fmt::percent(held),
                q.ledger.unfinished_gpu_hours,
            )),
        ]),
        Line::from(Span::raw(format!(
            " wait P50 {} P95 {} · waste {:.1} GPU-h (lost {:.1} + overhead {:.1}) · recovery {} · {} jobs",
            fmt::duration(q.wait.p50_ms),
            fmt::duration(q.wait.p95_ms),
            q.waste.total_gpu_hours,
            q.waste.lost_gpu_hours,
            q.waste.overhead_gpu_hours,
            fmt::percent(q.recovery.ratio),
            q.jobs
        ))),
        Line::from(Span::raw(format!(
            " lost work: {}",
            q.ledger.lost_basis_text()
        ))),
        // Its own line: the restore's figures are read apart from the lost work's basis.
        Line::from(Span::raw(format!(" {}", q.recovery.restores.label()))),
        budget_line(view, theme),
    ];
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let exceptions = exception_lines(&view.exceptions, theme);
    let [top, table_area, bottom] = ratatui::layout::Layout::vertical([
        // Each summary line wraps rather than losing its end on a narrow terminal.
        Constraint::Length(
            summary
                .iter()
                .map(|l| l.width().max(1).div_ceil(usize::from(inner.width.max(1))) as u16)
                .sum(),
        ),
        Constraint::Fill(1),
        Constraint::Length(exceptions.len() as u16),
    ])
    .areas(inner);
    frame.render_widget(Paragraph::new(summary).wrap(Wrap { trim: false }), top);
    frame.render_widget(Paragraph::new(exceptions), bottom);
    // Names whole, then the figures, the held sparkline taking the rest; the figures least
    // read go first on a narrow screen.
    let widths = card_widths(card, table_area.width);
    let rows = card_rows(view, &widths, theme);
    let header = Row::new(super::screen::shown_cells(
        header().into_iter().map(Cell::from).collect(),
        &widths,
    ))
    .style(theme.style(Role::Header));
    let len = rows.len();
    frame.render_widget(
        Table::new(rows, super::screen::shown_constraints(&widths))
            .header(header)
            .column_spacing(1),
        table_area,
    );
    // More shares than rows: a scrollbar on the border beside them says so.
    let beside = Rect {
        x: area.x,
        width: area.width,
        y: table_area.y,
        height: table_area.height.saturating_add(1),
    };
    let shown = usize::from(table_area.height.saturating_sub(1));
    super::screen::scrollbar(frame, beside, len, 0, shown, theme);
}

/// The table's widths in `room`: the sparkline whole (a cell per bucket) and the figures that
/// fit beside it; when that would leave out one of the five metrics, only the five and a
/// shorter sparkline.
fn card_widths(card: &Scorecard, room: u16) -> Vec<u16> {
    let buckets = u16::try_from(SERIES_BUCKETS).unwrap_or(u16::MAX);
    let whole = super::screen::layout_in(&card_columns(card, buckets, true), room);
    let metrics_kept = COLUMNS
        .iter()
        .zip(whole.iter().skip(1))
        .all(|(c, w)| !c.is_metric() || *w > 0);
    if metrics_kept {
        whole
    } else {
        super::screen::layout_in(&card_columns(card, 4, false), room)
    }
}

/// The table's columns: share names whole (the longest), every figure as wide as its header
/// and dropped in the column list's order when short (with `others` false, only the five
/// metrics), the held sparkline at least `spark` wide, growing.
fn card_columns(card: &Scorecard, spark: u16, others: bool) -> Vec<super::screen::Col> {
    use super::screen::Col;
    let names = card
        .shares
        .iter()
        .filter_map(|r| match &r.scope {
            Scope::Share(name) => Some(clean(name.as_str()).chars().count()),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    let width = |h: &str| u16::try_from(h.chars().count()).unwrap_or(u16::MAX);
    let names = u16::try_from(names).unwrap_or(u16::MAX).max(width("share"));
    // A figure as wide as its header, and a space of air when there is room; a column of
    // width 0 is never shown.
    let figure = |c: &Column| {
        let w = if others || c.is_metric() {
            width(c.header).max(6)
        } else {
            0
        };
        Col::text(w, usize::from(w) + 1, c.drop)
    };
    std::iter::once(Col::text(names, usize::from(names) + 1, 0))
        .chain(COLUMNS.iter().map(figure))
        .chain(std::iter::once(Col::graphic(spark, 1, 2)))
        .collect()
}

/// How a figure is shown: waste in the preempted colour, a share held 10 pp or more below its
/// entitlement as a warning.
fn figure_role(c: &Column, value: Option<f64>) -> Role {
    match (c.key, value) {
        ("waste_gpu_hours", Some(v)) if v > 0.0 => Role::Preempted,
        ("drift_pp", Some(v)) if v <= -10.0 => Role::Warning,
        _ => Role::Text,
    }
}

/// One row per share of the scorecard, in the columns `widths` keeps.
fn card_rows<'a>(view: &ScorecardView, widths: &[u16], theme: &Theme) -> Vec<Row<'a>> {
    let card = &view.card;
    // One scale for every share's sparkline.
    let max = view
        .series
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .fold(0.0_f64, f64::max);
    card.shares
        .iter()
        .filter_map(|r| match &r.scope {
            Scope::Share(name) => Some((name, r)),
            _ => None,
        })
        .map(|(name, r)| {
            let series = view
                .series
                .iter()
                .find(|(n, _)| n == name)
                .map_or_else(String::new, |(_, v)| spark(v, max));
            let figures = COLUMNS.iter().map(|c| {
                let value = (c.of)(card, r);
                Cell::from(Span::styled(
                    c.unit.text(value),
                    theme.style(figure_role(c, value)),
                ))
            });
            let cells = std::iter::once(Cell::from(clean(name).into_owned()))
                .chain(figures)
                .chain(std::iter::once(Cell::from(Span::styled(
                    series,
                    theme.style(Role::Spark),
                ))))
                .collect();
            Row::new(super::screen::shown_cells(cells, widths)).style(theme.style(Role::Text))
        })
        .collect()
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

    fn scorecard(&self) -> Option<&ScorecardState> {
        Some(&self.state)
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
