//! The log pane (`l` on a job: Job detail, Jobs, Preemptions): the training log of one attempt
//! of the selected job, as `quotatop logs` prints it (the same rows, `quotatop_analysis::log_rows`,
//! each attempt's end marked with the API's reason), read through a [`LogReader`] built outside
//! the console (`quotatop::services`, the CloudWatch Logs reader the command uses) as the
//! screen's own work, off the UI thread.
//!
//! Keys of its own: `f` follow (the log read again every [`FOLLOW_EVERY`], the view kept at the
//! end), `n` / `N` the next / previous match of the `/` search, `[` / `]` the previous / next
//! attempt. The preemption signal (`received SIGTERM`) is drawn as critical, the attempt's end
//! as a warning line. Log text is untrusted: every row is cleaned of control characters.

use std::sync::Arc;
use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::data::Data;
use super::effects::{Effect, EffectResult, ScreenWork};
use super::keymap::Action;
use super::list::ListState;
use super::registry::{Opens, ScreenEntry, ScreenKey};
use super::screen::{self, Ctx, DrawCtx, Kind, Load, Screen};
use super::text::clean;
use super::theme::Role;
use quotatop_analysis::{LogRow, NumberedAttempt, attempts_of, log_rows, stream_prefix};
use quotatop_model::Millis;

/// Its entry in the screen registry (the `screens!` list in `lib.rs`).
pub const ENTRY: ScreenEntry = ScreenEntry {
    kind: Kind::Logs,
    opens: Opens::OnJob(open),
    key: Some(ScreenKey {
        name: "logs",
        keys: &["l"],
        description: "the selected job's training log (f follow, n/N match, [ ] attempt)",
        hint: None,
    }),
    command: None,
};

fn open(queue: String, id: String) -> Box<dyn Screen + Send> {
    Box::new(LogPane::new(queue, id))
}

/// At most this many events of an attempt are read (more is said).
pub const MAX_LINES: usize = 10_000;

/// Follow mode reads the attempt's log again this often.
pub const FOLLOW_EVERY: Duration = Duration::from_secs(2);

/// The width the pane's messages (an error, its next step) are wrapped to.
const WRAP: usize = 100;

/// The marker of the preemption signal in a training log.
pub const SIGNAL: &str = "received SIGTERM";

/// An attempt's log events (time, message) and whether more were left unread.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogText {
    pub events: Vec<(Millis, String)>,
    pub truncated: bool,
}

/// Why an attempt's log could not be read, in words with the next step.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LogReadError {
    #[error(
        "this console has no API connection to read logs from; `quotatop logs JOB` reads them \
         from a shell"
    )]
    NoReader,
    /// The log group (or the stream) does not exist: the API's message.
    #[error(
        "no log for this attempt in /aws/sagemaker/TrainingJobs ({0}): SageMaker writes it once \
         the training job starts; check the region (--region), or press f to read it again"
    )]
    NoLogGroup(String),
    /// The credentials may not read the log: the API's message.
    #[error(
        "access denied reading CloudWatch Logs ({0}): the console's role needs \
         logs:FilterLogEvents on /aws/sagemaker/TrainingJobs"
    )]
    Denied(String),
    /// Anything else (throttled past the retries, unreachable): the reason.
    #[error("the log could not be read: {0}; press f to read it again")]
    Unavailable(String),
}

/// Reads an attempt's log: the events of the streams starting with `stream_prefix`, at most
/// `max`. Blocking (the API), so it runs as the screen's work.
pub trait LogReader: Send + Sync {
    fn read(&self, queue: &str, stream_prefix: &str, max: usize) -> Result<LogText, LogReadError>;
}

/// The answer for one attempt of one job.
#[derive(Debug, Clone, PartialEq)]
pub struct LogAnswer {
    pub queue: String,
    pub id: String,
    pub attempt: usize,
    pub result: Result<LogText, LogReadError>,
}

/// The work of reading `attempt`'s log, after `delay` (follow mode).
fn work(queue: &str, id: &str, attempt: &NumberedAttempt, delay: Option<Duration>) -> Effect {
    let (queue, id, number) = (queue.to_string(), id.to_string(), attempt.number);
    let prefix = stream_prefix(&attempt.row.resource_id);
    Effect::Screen(ScreenWork::new(
        Kind::Logs,
        move |reader: Option<&Arc<dyn LogReader>>| {
            if let Some(d) = delay {
                std::thread::sleep(d);
            }
            LogAnswer {
                queue: queue.clone(),
                id: id.clone(),
                attempt: number,
                result: match reader {
                    Some(r) => r.read(&queue, &prefix, MAX_LINES),
                    None => Err(LogReadError::NoReader),
                },
            }
        },
    ))
}

/// What the pane shows.
#[derive(Debug, Clone, Default, PartialEq)]
enum State {
    #[default]
    Loading,
    Ready(LogText),
    Failed(LogReadError),
}

/// The log pane of one job.
pub struct LogPane {
    queue: String,
    id: String,
    name: String,
    /// The job's status, for "no attempt yet".
    status: String,
    attempts: Vec<NumberedAttempt>,
    /// The attempt shown (its number); `None` until the job has one.
    chosen: Option<usize>,
    state: State,
    /// The rows drawn, each with its colour role.
    lines: Vec<(String, Role)>,
    follow: bool,
    /// Rows are the lines; the selection is the top line shown. Its filter text is the search.
    scroll: ListState,
    search: String,
    /// The line of the current match.
    hit: Option<usize>,
    /// How many lines match the search: counted when the lines or the search change
    /// ([`Self::rebuild`]), not on every frame's title (10,000 lines at the most).
    matched: usize,
}

impl LogPane {
    pub fn new(queue: String, id: String) -> Self {
        Self {
            name: id.clone(),
            queue,
            id,
            status: String::new(),
            attempts: Vec::new(),
            chosen: None,
            state: State::Loading,
            lines: Vec::new(),
            follow: false,
            scroll: ListState::text_pane(0),
            search: String::new(),
            hit: None,
            matched: 0,
        }
    }

    /// The lines shown (what tests read).
    pub fn text(&self) -> Vec<String> {
        self.lines.iter().map(|(t, _)| t.clone()).collect()
    }

    fn attempt(&self) -> Option<&NumberedAttempt> {
        let n = self.chosen?;
        self.attempts.iter().find(|a| a.number == n)
    }

    fn read(&self, delay: Option<Duration>) -> Vec<Effect> {
        self.attempt()
            .map(|a| work(&self.queue, &self.id, a, delay))
            .into_iter()
            .collect()
    }

    /// Rebuilds the lines from the state and the attempt, keeping the view (at the end when
    /// following).
    fn rebuild(&mut self) {
        self.lines = lines(self.attempt(), &self.state, &self.name, &self.status);
        self.scroll
            .set_rows((0..self.lines.len()).collect(), |_| false);
        if self.follow {
            self.scroll.bottom();
        }
        if self.search != self.scroll.filter.text {
            self.search = self.scroll.filter.text.clone();
            self.hit = None;
            self.find(true);
        }
        self.matched = count_matches(&self.lines, &self.search);
    }

    /// Moves to the next (or previous) line matching the search, wrapping around.
    fn find(&mut self, forward: bool) {
        let needle = self.search.to_lowercase();
        if needle.is_empty() || self.lines.is_empty() {
            self.hit = None;
            return;
        }
        let n = self.lines.len();
        let from = self.hit.unwrap_or(if forward { n - 1 } else { 0 });
        let found = (1..=n)
            .map(|k| {
                if forward {
                    (from + k) % n
                } else {
                    (from + n - k) % n
                }
            })
            .find(|&i| self.lines[i].0.to_lowercase().contains(&needle));
        self.hit = found;
        if let Some(i) = found {
            self.follow = false;
            self.scroll.selected = i.saturating_sub(2);
        }
    }

    fn matches(&self) -> usize {
        self.matched
    }

    /// `[` / `]`: the attempt before or after the one shown, read from its start.
    fn switch(&mut self, later: bool) -> Vec<Effect> {
        let Some(n) = self.chosen else {
            return Vec::new();
        };
        let next = if later { n + 1 } else { n.saturating_sub(1) };
        if next == n || !self.attempts.iter().any(|a| a.number == next) {
            return Vec::new();
        }
        self.chosen = Some(next);
        self.state = State::Loading;
        self.hit = None;
        self.rebuild();
        self.scroll.top();
        self.read(None)
    }

    fn title(&self) -> String {
        let mut t = format!("Log · {}", clean(&self.name));
        if let Some(n) = self.chosen {
            t.push_str(&format!(" · attempt {n} of {}", self.attempts.len()));
        }
        if self.follow {
            t.push_str(" · following");
        }
        if !self.search.is_empty() {
            t.push_str(&format!(" · /{} {} match(es)", clean(&self.search), self.matches()));
        }
        t
    }
}

/// How many of `lines` contain `search`, ignoring case (0 for an empty search).
fn count_matches(lines: &[(String, Role)], search: &str) -> usize {
    let needle = search.to_lowercase();
    if needle.is_empty() {
        return 0;
    }
    lines
        .iter()
        .filter(|(t, _)| t.to_lowercase().contains(&needle))
        .count()
}

/// The pane's lines for `attempt` in `state`, with their colour roles: the log rows cleaned
/// (through [`LogRow::render`]), the preemption signal critical, the attempt's end a warning.
fn lines(
    attempt: Option<&NumberedAttempt>,
    state: &State,
    name: &str,
    status: &str,
) -> Vec<(String, Role)> {
    let Some(a) = attempt else {
        return vec![(
            format!(
                "job {} has no attempt yet ({status}): no training job has started, so there is \
                 no log",
                clean(name)
            ),
            Role::Muted,
        )];
    };
    match state {
        State::Loading => vec![(
            format!(
                "reading the log of attempt {} (training job {})…",
                a.number,
                clean(quotatop_analysis::training_job_name(&a.row.resource_id))
            ),
            Role::Muted,
        )],
        // Words, not a log: wrapped to the pane (the reason and the next step both shown).
        State::Failed(e) => super::policy::wrap(&clean(&e.to_string()), WRAP, 2)
            .into_iter()
            .map(|l| (l, Role::Critical))
            .collect(),
        State::Ready(t) => {
            let mut out: Vec<(String, Role)> =
                log_rows(a, &t.events).iter().map(row_line).collect();
            if t.events.is_empty() {
                out.insert(
                    0,
                    (
                        format!(
                            "no log lines for attempt {} yet: SageMaker writes them once the \
                             training job runs (f follows)",
                            a.number
                        ),
                        Role::Muted,
                    ),
                );
            }
            if t.truncated {
                out.push((
                    format!(
                        "… more than {MAX_LINES} lines; the first {MAX_LINES} shown \
                         (`quotatop logs JOB --since …` reads later ones)"
                    ),
                    Role::Muted,
                ));
            }
            out
        }
    }
}

fn row_line(r: &LogRow) -> (String, Role) {
    // `render` cleans the untrusted text, as `quotatop logs` prints it.
    let text = r.render();
    let role = match r {
        LogRow::Mark {
            preempted: true, ..
        } => Role::Warning,
        LogRow::Mark { .. } => Role::Muted,
        LogRow::Line { text: t, .. } if t.contains(SIGNAL) => Role::Critical,
        LogRow::Line { .. } => Role::Text,
    };
    (text, role)
}

impl Screen for LogPane {
    fn kind(&self) -> Kind {
        Kind::Logs
    }

    fn refresh(&mut self, data: &Data, _queue: Option<&str>) {
        if let Some(t) = data.job(Some(&self.queue), &self.id) {
            self.name = t.job.name.clone();
            self.status = t.job.status.as_str().to_string();
            let newest = |a: &[NumberedAttempt]| a.last().map(|a| a.number);
            let was_newest = self.chosen.is_none() || self.chosen == newest(&self.attempts);
            self.attempts = attempts_of(&t.job);
            // Following the newest attempt goes on to the next when the job runs again.
            if (self.chosen.is_none() || (self.follow && was_newest))
                && self.chosen != newest(&self.attempts)
            {
                self.chosen = newest(&self.attempts);
                self.state = State::Loading;
            }
        }
        self.rebuild();
    }

    fn load(&mut self, why: Load, _ctx: &Ctx) -> Vec<Effect> {
        // The log is of the training job, not of the time shown; follow mode reads it again.
        if why != Load::Opened {
            return Vec::new();
        }
        self.read(None)
    }

    fn on_result(&mut self, result: &EffectResult, _ctx: &Ctx) -> Vec<Effect> {
        let Some(a) = result.answer::<LogAnswer>(Kind::Logs) else {
            return Vec::new();
        };
        if a.queue != self.queue || a.id != self.id {
            return Vec::new();
        }
        if Some(a.attempt) != self.chosen {
            // An answer for the attempt shown before: following reads the one shown now.
            return if self.follow {
                self.read(None)
            } else {
                Vec::new()
            };
        }
        self.state = match &a.result {
            Ok(t) => State::Ready(t.clone()),
            Err(e) => State::Failed(e.clone()),
        };
        self.rebuild();
        if self.follow {
            self.read(Some(FOLLOW_EVERY))
        } else {
            Vec::new()
        }
    }

    fn own_key(
        &mut self,
        key: &KeyEvent,
        _action: Option<Action>,
        _ctx: &Ctx,
    ) -> Option<Vec<Effect>> {
        match key.code {
            KeyCode::Char('f') => {
                self.follow = !self.follow;
                if !self.follow {
                    return Some(Vec::new());
                }
                self.scroll.bottom();
                Some(self.read(None))
            }
            KeyCode::Char('n') => {
                self.find(true);
                Some(Vec::new())
            }
            KeyCode::Char('N') => {
                self.find(false);
                Some(Vec::new())
            }
            KeyCode::Char('[') => Some(self.switch(false)),
            KeyCode::Char(']') => Some(self.switch(true)),
            _ => None,
        }
    }

    fn draw(&self, frame: &mut Frame, area: Rect, ctx: &DrawCtx) {
        let pane = screen::TextPane {
            area,
            block: screen::block(self.title(), None, &[], ctx.theme),
            len: self.lines.len(),
            scroll: &self.scroll,
            theme: ctx.theme,
        };
        // Only the lines shown are built (up to 10,000 are kept), borrowing their text.
        screen::draw_text_window(frame, pane, |shown| {
            let first = shown.start;
            self.lines
                .get(shown)
                .unwrap_or_default()
                .iter()
                .zip(first..)
                .map(|((t, role), i)| {
                    let role = if Some(i) == self.hit {
                        Role::Selected
                    } else {
                        *role
                    };
                    Line::from(Span::styled(t.as_str(), ctx.theme.style(role)))
                })
                .collect()
        });
    }

    fn list(&mut self) -> Option<&mut ListState> {
        Some(&mut self.scroll)
    }

    /// `/` types the search (the list's filter text; nothing is filtered out).
    fn list_ref(&self) -> Option<&ListState> {
        Some(&self.scroll)
    }

    fn selected_job(&self, _data: &Data, _queue: Option<&str>) -> Option<(String, String)> {
        Some((self.queue.clone(), self.id.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::theme::Theme;
    use quotatop_analysis::AttemptRow;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    fn pane(events: Vec<(Millis, String)>) -> LogPane {
        let mut p = LogPane::new("ml-training".into(), "j-1".into());
        p.name = "evil\x1b]0;owned\x07-job".into();
        p.attempts = vec![NumberedAttempt {
            number: 1,
            row: AttemptRow {
                resource_id: "arn:aws:sagemaker:us-east-1:1:training-job/tj-1".into(),
                started_at: Some(0),
                stopped_at: Some(60_000),
                reason: Some("Cross-share preemption".into()),
                preempted: true,
            },
        }];
        p.chosen = Some(1);
        p.state = State::Ready(LogText {
            events,
            truncated: false,
        });
        p.rebuild();
        p
    }

    fn drawn(p: &LogPane) -> String {
        let Ok(mut t) = Terminal::new(TestBackend::new(120, 12)) else {
            unreachable!("a test backend always opens")
        };
        let data = Data::default();
        let theme = Theme::plain("test");
        let ctx = DrawCtx {
            data: &data,
            queue: None,
            theme: &theme,
        };
        t.draw(|f| p.draw(f, f.area(), &ctx)).unwrap();
        t.backend()
            .buffer()
            .content()
            .iter()
            .map(|c| c.symbol())
            .collect()
    }

    #[test]
    fn hostile_log_text_is_drawn_cleaned() {
        let p = pane(vec![
            (1_000, "loss \x1b[2J\x1b[31mred\x07 \u{9b}1;1H".into()),
            (2_000, "line one\nline\rtwo".into()),
            (30_000, "received SIGTERM (preemption): stopping at step 9".into()),
        ]);
        let screen = drawn(&p);
        assert!(
            !screen.chars().any(|c| c.is_control()),
            "a control character reached the terminal: {screen:?}"
        );
        assert!(screen.contains("loss \u{fffd}[2J\u{fffd}[31mred\u{fffd}"), "{screen}");
        assert!(screen.contains("evil\u{fffd}]0;owned\u{fffd}-job"), "{screen}");
        // A message of several lines is several lines; the signal and the end are marked.
        assert!(screen.contains("#1 line one"), "{screen}");
        let roles: Vec<Role> = p.lines.iter().map(|(_, r)| *r).collect();
        assert_eq!(
            roles,
            [
                Role::Text,
                Role::Text,
                Role::Text,
                Role::Critical,
                Role::Warning
            ],
            "{:?}",
            p.text()
        );
    }

    #[test]
    fn following_reads_again_and_an_older_attempts_answer_is_not_shown() {
        let mut p = pane(vec![(1_000, "step 1".into())]);
        let data = Data::default();
        let ctx = Ctx {
            data: &data,
            queue: None,
            history: false,
            past: false,
        };
        let answer = |attempt: usize, text: &str| EffectResult::Screen {
            screen: Kind::Logs,
            answer: crate::effects::ScreenAnswer::new(LogAnswer {
                queue: "ml-training".into(),
                id: "j-1".into(),
                attempt,
                result: Ok(LogText {
                    events: vec![(2_000, text.into())],
                    truncated: false,
                }),
            }),
        };
        // Not following: the answer is shown, nothing more is asked.
        assert!(p.on_result(&answer(1, "step 2"), &ctx).is_empty());
        assert!(p.text()[0].ends_with("#1 step 2"), "{:?}", p.text());
        // Following: each answer asks for the next read.
        let key = KeyEvent::from(KeyCode::Char('f'));
        assert_eq!(p.own_key(&key, None, &ctx).map(|e| e.len()), Some(1));
        assert_eq!(p.on_result(&answer(1, "step 3"), &ctx).len(), 1);
        // A late answer for another attempt is not drawn as this one's.
        assert_eq!(p.on_result(&answer(2, "other"), &ctx).len(), 1);
        assert!(p.text()[0].ends_with("#1 step 3"), "{:?}", p.text());
        assert!(p.title().contains("following"), "{}", p.title());
    }

    /// A frame builds only the lines the pane shows, not the up to 10,000 it keeps; and they
    /// are the right ones: the top line, the search hit, the last line at the bottom.
    #[test]
    fn a_frame_builds_only_the_lines_shown() {
        let mut p = pane(
            (0..5_000)
                .map(|i| (i * 1_000, format!("step {i}: loss")))
                .collect(),
        );
        let before = screen::lines_built();
        let screen = drawn(&p);
        // 12 rows less the two borders.
        assert_eq!(screen::lines_built() - before, 10, "{screen}");
        assert!(screen.contains("step 0: loss"), "{screen}");
        p.scroll.set_filter("step 2500:".into());
        p.rebuild();
        let before = screen::lines_built();
        let screen = drawn(&p);
        assert_eq!(screen::lines_built() - before, 10, "{screen}");
        assert!(screen.contains("step 2500: loss"), "{screen}");
        assert!(screen.contains("step 2498: loss"), "{screen}");
        assert!(!screen.contains("step 2497: loss"), "{screen}");
        p.scroll.selected = usize::MAX;
        let screen = drawn(&p);
        assert!(screen.contains("step 4999: loss"), "{screen}");
    }

    #[test]
    fn search_moves_between_matches_and_wraps() {
        let mut p = pane(
            (0..40)
                .map(|i| (i * 1_000, format!("step {i}: loss")))
                .collect(),
        );
        p.scroll.set_filter("step 1".into());
        p.rebuild();
        // "step 1", "step 10" … "step 19": the first, then on, then round again.
        assert_eq!(p.hit, Some(1));
        p.find(true);
        assert_eq!(p.hit, Some(10));
        p.find(false);
        assert_eq!(p.hit, Some(1));
        p.find(false);
        assert_eq!(p.hit, Some(19));
        assert_eq!(p.matches(), 11);
        assert!(p.title().contains("/step 1 11 match(es)"), "{}", p.title());
    }
}
