//! Policy screen (`:policy`, `5`): per class of the policy beside the config, the conformance
//! lines `quotatop policy check` prints (wait against its promise, deadlines, interruption
//! budget, shares and range, priority changes), naming the jobs that breached them.
//!
//! The console computes nothing of the policy itself: a [`PolicyReader`] built outside it
//! (`quotatop::services`) reads the journal and runs the policy's one conformance function; this
//! screen asks for it (its own [`ScreenWork`]) and draws the answer. The same reader gives the
//! Overview's "needs attention" panel its policy items ([`attention_work`]).

use std::sync::Arc;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::data::Data;
use super::effects::{Effect, EffectResult, ScreenWork};
use super::list::ListState;
use super::registry::{Opens, ScreenCommand, ScreenEntry, ScreenKey, fresh};
use super::screen::{self, Ctx, DrawCtx, Kind, Load, Screen};
use super::text::clean;
use super::theme::Role;

/// Its entry in the screen registry (the `screens!` list in `lib.rs`).
pub const ENTRY: ScreenEntry = ScreenEntry {
    kind: Kind::Policy,
    opens: Opens::Fresh(fresh::<PolicyScreen>),
    key: Some(ScreenKey {
        name: "policy",
        keys: &["5"],
        description: "policy: each class against its promises and rules, from history",
        hint: Some("screens"),
    }),
    command: Some(ScreenCommand {
        names: &["policy", "5"],
        help: "each class of the policy against its promises and rules, from history",
    }),
};

/// The kind the attention panel's policy work answers to (no screen has it: the app applies its
/// items, [`attention_items`]).
pub const ATTENTION: Kind = Kind::new("PolicyAttention");

/// The console asks for the policy's attention items every this many snapshots (and at the
/// first); each Policy screen computation replaces them as well.
pub const ATTENTION_EVERY: u64 = 10;

/// One class and its conformance lines (`wait: P95 … — breached: 2 job(s), worst …`).
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyClass {
    pub name: String,
    pub jobs: usize,
    pub breaches: usize,
    pub lines: Vec<String>,
}

/// One breach in words for the attention panel.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyItem {
    pub text: String,
    /// The worst job (Enter opens it).
    pub job: Option<String>,
    /// The class's first share.
    pub share: Option<String>,
}

/// The policy against a queue's history, as the reader computed it.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyView {
    /// How far back it judges, as `--since` reads it (`24h`): the title says `last 24h`.
    pub window: String,
    /// `Policy FILE (sha256 …), FROM to TO. A job's class: …`.
    pub heading: String,
    pub classes: Vec<PolicyClass>,
    /// Jobs in no class.
    pub unclassified: Vec<String>,
    pub items: Vec<PolicyItem>,
}

/// Why there is no conformance to show.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyViewError {
    /// No policy file beside the config (the path and what to do).
    #[error("{0}")]
    NoPolicy(String),
    /// The console keeps no journal, or the journal has no history of the queue yet.
    #[error("{0}")]
    NoHistory(String),
    /// The policy or the journal could not be read (what went wrong).
    #[error("{0}")]
    Unavailable(String),
}

/// Computes a queue's conformance; blocking (it reads the journal and the policy file).
pub trait PolicyReader: Send + Sync {
    fn conformance(&self, queue: &str) -> Result<PolicyView, PolicyViewError>;
}

/// The answer for one queue.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyAnswer {
    pub queue: String,
    /// When it was asked for, in the order of asking ([`next_ask`]): of two answers for a
    /// queue, the later-asked one is the newer conformance, whichever arrives last.
    pub asked: u64,
    pub result: Result<PolicyView, PolicyViewError>,
}

/// The next number in the order conformance is asked for (the screen's and the attention
/// panel's alike), so the panel keeps the newest of either.
fn next_ask() -> u64 {
    static ASKED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    ASKED.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

fn ask(reader: Option<&Arc<dyn PolicyReader>>, queue: &str, asked: u64) -> PolicyAnswer {
    PolicyAnswer {
        queue: queue.to_string(),
        asked,
        result: match reader {
            Some(r) => r.conformance(queue),
            None => Err(PolicyViewError::NoPolicy(
                "this console has no policy reader".into(),
            )),
        },
    }
}

/// The screen's own work: the conformance of `queue`.
fn screen_work(queue: &str) -> Effect {
    let queue = queue.to_string();
    let asked = next_ask();
    Effect::Screen(ScreenWork::new(
        Kind::Policy,
        move |reader: Option<&Arc<dyn PolicyReader>>| ask(reader, &queue, asked),
    ))
}

/// The attention panel's work: the conformance of each of `queues` (the app keeps their
/// items, see [`Data::set_policy_items`]). The Policy screen's answers give the panel its
/// items too, so the two never disagree once the screen has loaded: one computation, shown
/// in both places.
pub fn attention_work(queues: Vec<String>) -> Effect {
    let asked = next_ask();
    Effect::Screen(ScreenWork::new(
        ATTENTION,
        move |reader: Option<&Arc<dyn PolicyReader>>| -> Vec<PolicyAnswer> {
            match reader {
                Some(_) => queues.iter().map(|q| ask(reader, q, asked)).collect(),
                None => Vec::new(),
            }
        },
    ))
}

/// The attention items the policy's answers in `result` give, per queue (the queue, when its
/// conformance was asked for, its items): the panel's own answers ([`ATTENTION`]) or the Policy
/// screen's, so the panel's items come from the newest conformance asked for, one computation
/// shown in both places. Empty when `result` is neither. A queue whose conformance cannot be
/// computed has no policy items.
pub(crate) fn attention_items(
    result: &EffectResult,
) -> Vec<(&str, u64, Vec<quotatop_analysis::Attention>)> {
    let answers: Vec<&PolicyAnswer> = result
        .answer::<Vec<PolicyAnswer>>(ATTENTION)
        .map(|v| v.iter().collect())
        .or_else(|| result.answer::<PolicyAnswer>(Kind::Policy).map(|a| vec![a]))
        .unwrap_or_default();
    answers
        .into_iter()
        .map(|a| {
            let items = a.result.as_ref().map(attention).unwrap_or_default();
            (a.queue.as_str(), a.asked, items)
        })
        .collect()
}

/// The attention panel's lines for a queue's policy breaches: the worst job's (Enter opens
/// it), else the class's share.
pub fn attention(v: &PolicyView) -> Vec<quotatop_analysis::Attention> {
    use quotatop_analysis::{Attention, AttentionKind, AttentionTarget};
    v.items
        .iter()
        .map(|i| Attention {
            kind: AttentionKind::PolicyBreach,
            target: match (&i.job, &i.share) {
                (Some(j), _) => AttentionTarget::Job(j.clone()),
                (None, s) => AttentionTarget::Share(s.clone().unwrap_or_default()),
            },
            share: i.share.clone().unwrap_or_default(),
            text: i.text.clone(),
            waiting_ms: None,
        })
        .collect()
}

/// What the screen shows.
#[derive(Debug, Clone, Default, PartialEq)]
enum State {
    #[default]
    Idle,
    Computing,
    Ready(Box<PolicyView>),
    Failed(PolicyViewError),
}

/// The Policy screen: the last answer for the current queue, kept while a newer one is
/// computed.
pub struct PolicyScreen {
    state: State,
    /// The queue the request under way (or the answer shown) is for.
    queue: Option<String>,
    scroll: ListState,
    /// The width lines are wrapped to (set before each draw).
    width: usize,
}

impl Default for PolicyScreen {
    fn default() -> Self {
        Self {
            state: State::Idle,
            queue: None,
            // A text pane: Up/Down/Page scroll it; nothing to filter or sort.
            scroll: ListState::text_pane(0),
            width: 0,
        }
    }
}

/// `text` cut into lines of at most `width` characters, at spaces where it can be; the lines
/// after the first indented by `indent`.
pub(crate) fn wrap(text: &str, width: usize, indent: usize) -> Vec<String> {
    let width = width.max(indent + 10);
    let mut out = Vec::new();
    let mut rest: Vec<char> = text.chars().collect();
    while !rest.is_empty() {
        let room = if out.is_empty() { width } else { width - indent };
        let lead = if out.is_empty() { 0 } else { indent };
        if rest.len() <= room {
            out.push(format!("{}{}", " ".repeat(lead), rest.iter().collect::<String>()));
            break;
        }
        let at = rest[..=room]
            .iter()
            .rposition(|c| *c == ' ')
            .filter(|&i| i > room / 2)
            .unwrap_or(room);
        out.push(format!(
            "{}{}",
            " ".repeat(lead),
            rest[..at].iter().collect::<String>()
        ));
        let skip = usize::from(rest.get(at) == Some(&' '));
        rest.drain(..at + skip);
    }
    out
}

fn view_lines(v: &PolicyView, width: usize) -> Vec<(String, Role)> {
    let mut out: Vec<(String, Role)> = wrap(&clean(&v.heading), width, 1)
        .into_iter()
        .map(|l| (l, Role::Muted))
        .collect();
    for c in &v.classes {
        out.push((String::new(), Role::Text));
        let (verdict, role) = if c.breaches == 0 {
            ("holds".to_string(), Role::Header)
        } else {
            (format!("{} breach(es)", c.breaches), Role::Critical)
        };
        out.push((
            format!("{} — {} job(s), {verdict}", clean(&c.name), c.jobs),
            role,
        ));
        for l in &c.lines {
            let role = if l.contains("— breached:") {
                Role::Warning
            } else {
                Role::Text
            };
            out.extend(
                wrap(&format!("- {}", clean(l)), width, 4)
                    .into_iter()
                    .map(|w| (w, role)),
            );
        }
    }
    if !v.unclassified.is_empty() {
        out.push((String::new(), Role::Text));
        let names: Vec<String> = v.unclassified.iter().map(|j| clean(j).into_owned()).collect();
        let text = format!("{} job(s) in no class: {}", names.len(), names.join(", "));
        out.extend(wrap(&text, width, 1).into_iter().map(|w| (w, Role::Muted)));
    }
    out
}

/// The screen's text in `width` columns, each line with its colour role.
fn texts(state: &State, width: usize) -> Vec<(String, Role)> {
    match state {
        State::Idle => vec![("no queue yet".into(), Role::Muted)],
        State::Computing => vec![("reading the journal…".into(), Role::Muted)],
        State::Ready(v) => view_lines(v, width),
        State::Failed(e) => {
            let role = match e {
                PolicyViewError::Unavailable(_) => Role::Critical,
                _ => Role::Muted,
            };
            wrap(&clean(&e.to_string()), width, 1)
                .into_iter()
                .map(|l| (l, role))
                .collect()
        }
    }
}

impl Screen for PolicyScreen {
    fn kind(&self) -> Kind {
        Kind::Policy
    }

    fn load(&mut self, why: Load, ctx: &Ctx) -> Vec<Effect> {
        // The conformance is of the history recorded so far: travelling in time changes
        // nothing it shows.
        if why == Load::Moved {
            return Vec::new();
        }
        let Some(queue) = ctx.queue_name() else {
            return Vec::new();
        };
        if self.state == State::Idle || self.queue.as_deref() != Some(queue.as_str()) {
            self.state = State::Computing;
        }
        self.queue = Some(queue.clone());
        vec![screen_work(&queue)]
    }

    fn on_result(&mut self, result: &EffectResult, _ctx: &Ctx) -> Vec<Effect> {
        if let Some(a) = result.answer::<PolicyAnswer>(Kind::Policy)
            && Some(&a.queue) == self.queue.as_ref()
        {
            self.state = match &a.result {
                Ok(v) => State::Ready(Box::new(v.clone())),
                Err(e) => State::Failed(e.clone()),
            };
            let n = texts(&self.state, self.width.max(40)).len();
            self.scroll.set_rows((0..n).collect(), |_| false);
        }
        Vec::new()
    }

    fn fit(&mut self, area: Rect, _data: &Data, _queue: Option<&str>) {
        let width = usize::from(area.width.saturating_sub(2));
        if width != self.width {
            self.width = width;
            let n = texts(&self.state, width.max(40)).len();
            self.scroll.set_rows((0..n).collect(), |_| false);
        }
    }

    fn refresh(&mut self, _data: &Data, _queue: Option<&str>) {}

    fn draw(&self, frame: &mut Frame, area: Rect, ctx: &DrawCtx) {
        let mut title = match &self.queue {
            Some(q) => format!("Policy · {}", clean(q)),
            None => "Policy".to_string(),
        };
        if let State::Ready(v) = &self.state {
            title.push_str(&format!(" · last {}", clean(&v.window)));
        }
        let block = screen::block(title, None, &[], ctx.theme);
        let width = usize::from(area.width.saturating_sub(2)).max(40);
        screen::draw_text(
            frame,
            area,
            block,
            texts(&self.state, width)
                .into_iter()
                .map(|(t, role)| Line::from(Span::styled(t, ctx.theme.style(role))))
                .collect(),
            &self.scroll,
            ctx.theme,
        );
    }

    fn list(&mut self) -> Option<&mut ListState> {
        Some(&mut self.scroll)
    }

    /// Nothing to filter: the pane scrolls (through [`Screen::list`]) but offers no `/`.
    fn list_ref(&self) -> Option<&ListState> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lines_wrap_at_spaces_and_indent_what_follows() {
        let w = wrap("- wait: P95 12m00s — breached: 2 job(s), worst j-1 (a): waited", 30, 4);
        assert!(w.iter().all(|l| l.chars().count() <= 30), "{w:?}");
        assert_eq!(w[0], "- wait: P95 12m00s — breached:");
        assert!(w[1].starts_with("    2 job(s)"), "{w:?}");
        // A word longer than the line is cut, never lost.
        let long = "x".repeat(100);
        let w = wrap(&long, 40, 4);
        assert_eq!(w.concat().replace(' ', ""), long);
    }
}
