//! The log pane (`l` on a job: Job detail, Jobs, Preemptions): the training log of one attempt
//! of the selected job, as `quotatop logs` prints it (the same rows, `quotatop_analysis::log_rows`,
//! each attempt's end marked with the API's reason), read through a [`LogReader`] built outside
//! the console (`quotatop::services`, the CloudWatch Logs reader the command uses) as the
//! screen's own work, off the UI thread.
//!
//! Keys of its own: `f` follow (the log read again every [`FOLLOW_EVERY`], the view kept at the
//! end), `n` / `N` the next / previous match of the `/` search, `[` / `]` the previous / next
//! attempt, ←/→ along lines longer than the pane (cut with `…`, as `less -S` does). The preemption signal (`received SIGTERM`) is drawn as critical, the attempt's end
//! as a warning line. Log text is untrusted: every row is cleaned of control characters.
//!
//! The reading is in [`reader`], the rows drawn in [`rows`].

use std::time::Duration;

use crossterm::event::KeyEvent;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::data::Data;
use super::effects::{Effect, EffectResult};
use super::keymap::Action;
use super::list::ListState;
use super::registry::{Opens, ScreenEntry, ScreenKey};
use super::screen::{self, Ctx, DrawCtx, Kind, Load, Screen};
use super::text::clean;
use super::theme::Role;
use quotatop_analysis::{NumberedAttempt, attempts_of};

mod reader;
mod rows;
#[cfg(test)]
mod tests;

pub use reader::{LogAnswer, LogReadError, LogReader, LogText, MAX_LINES};
pub use rows::SIGNAL;
use reader::work;
use rows::{count_matches, lines};

/// Its entry in the screen registry (the `screens!` list in `lib.rs`).
pub const ENTRY: ScreenEntry = ScreenEntry {
    kind: Kind::Logs,
    opens: Opens::OnJob(open),
    key: Some(ScreenKey {
        name: "logs",
        keys: &["l"],
        description: "the selected job's training log (f follow, n/N match, [ ] attempt)",
        hint: Some("logs"),
    }),
    command: None,
};

fn open(queue: String, id: String) -> Box<dyn Screen + Send> {
    Box::new(LogPane::new(queue, id))
}

/// Follow mode reads the attempt's log again this often.
pub const FOLLOW_EVERY: Duration = Duration::from_secs(2);

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
    /// Columns scrolled to the right (`less -S`): a line longer than the pane is cut, marked
    /// `…`, and ←/→ move along it.
    hscroll: usize,
}

/// Columns ←/→ move the log by.
const HSCROLL_STEP: usize = 20;

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
            hscroll: 0,
        }
    }

    /// A line as the pane shows it in `width` columns: from the scrolled column, cut with `…`
    /// at the end when longer (and at the start when scrolled), as `less -S` shows it.
    fn shown_part(&self, line: &str, width: usize) -> String {
        let mut part: String = line.chars().skip(self.hscroll).collect();
        if self.hscroll > 0 && !part.is_empty() {
            part.replace_range(..part.chars().next().map_or(0, char::len_utf8), "…");
        }
        if part.chars().count() > width && width > 0 {
            part = part.chars().take(width - 1).collect();
            part.push('…');
        }
        part
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
        if self.hscroll > 0 {
            t.push_str(&format!(" · from column {}", self.hscroll + 1));
        }
        t
    }
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

    fn own_actions(&self) -> &'static [Action] {
        &[
            Action::Follow,
            Action::NextMatch,
            Action::PrevMatch,
            Action::Older,
            Action::Newer,
            Action::ScrollLeft,
            Action::ScrollRight,
        ]
    }

    /// Its keys come from the key map (`f`, `n` / `N`; `[` / `]`, time travel's keys, step
    /// through the attempts here, and the footer says so: `keymap::SCREEN_LABELS`).
    fn own_key(
        &mut self,
        _key: &KeyEvent,
        action: Option<Action>,
        _ctx: &Ctx,
    ) -> Option<Vec<Effect>> {
        match action? {
            Action::Follow => {
                self.follow = !self.follow;
                if !self.follow {
                    return Some(Vec::new());
                }
                self.scroll.bottom();
                Some(self.read(None))
            }
            Action::NextMatch => {
                self.find(true);
                Some(Vec::new())
            }
            Action::PrevMatch => {
                self.find(false);
                Some(Vec::new())
            }
            Action::Older => Some(self.switch(false)),
            Action::Newer => Some(self.switch(true)),
            Action::ScrollLeft => {
                self.hscroll = self.hscroll.saturating_sub(HSCROLL_STEP);
                Some(Vec::new())
            }
            Action::ScrollRight => {
                let longest = self.lines.iter().map(|(t, _)| t.chars().count()).max();
                let last = longest.unwrap_or(0).saturating_sub(1);
                self.hscroll = (self.hscroll + HSCROLL_STEP).min(last);
                Some(Vec::new())
            }
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
        // Only the lines shown are built (up to 10,000 are kept), from the scrolled column.
        let width = usize::from(area.width.saturating_sub(2));
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
                    Line::from(Span::styled(
                        self.shown_part(t, width),
                        ctx.theme.style(role),
                    ))
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
