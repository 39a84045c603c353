//! The console's state and its update function. Input, snapshots and ticks come in as [`Msg`];
//! [`App::draw`] renders from `&self`. Each screen keeps its own state (in `stack`); the app holds
//! only what is shared: the data, navigation, input mode, theme and key map.

use std::path::PathBuf;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Frame;
use ratatui::layout::{Alignment, Constraint, Layout};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::command::{self, Command, When};
use super::data::Data;
use super::effects::{ChangeResult, Effect, PreemptionHistory, TravelResult, TravelTo};
use super::event_loop::NO_HISTORY;
use super::footer::{self, Flash};
use super::help;
use super::input::Input;
use super::job_detail::JobDetail;
use super::jobs::Jobs;
use super::keymap::{Action, KeyMap, Mode};
use super::overview::Overview;
use super::preemptions::Preemptions;
use super::priority::{PriorityDialog, Reply};
use super::scorecard::{
    HISTORY_UNAVAILABLE, RECOMPUTE_EVERY, ScorecardResult, ScorecardScreen, ScorecardState,
};
use super::screen::{DrawCtx, Kind, Open, Screen};
use super::share::ShareScreen;
use super::status_bar::{self, History, PastMark, StatusInfo};
use super::text::clean;
use super::theme::{self, Role, Theme};
use crate::actions::PriorityPolicy;
use crate::analysis::{LoopRule, now_of};
use crate::model::{Millis, Snapshot};

/// Below this the console shows only a "terminal too small" notice.
pub const MIN_WIDTH: u16 = 80;
pub const MIN_HEIGHT: u16 = 24;

/// Everything that changes the console.
#[derive(Debug)]
pub enum Msg {
    Key(KeyEvent),
    Resize,
    Snapshot(Box<Snapshot>),
    /// The poller's channel closed.
    SourceClosed,
    Tick,
    /// A priority change's background task finished.
    ChangeDone(Box<ChangeResult>),
    /// A scorecard computation finished; the service time its window ended at (`None`: the
    /// latest observation).
    ScorecardDone(Box<ScorecardResult>, Option<Millis>),
    /// A recorded snapshot was loaded (time travel).
    TravelDone(Box<TravelResult>),
    /// The journal's preemption history of a queue was read.
    PreemptionHistory(Box<PreemptionHistory>),
    /// The journal stopped recording (the reason), or records again (`None`).
    JournalState(Option<String>),
}

/// Time travel: a recorded snapshot shown instead of the live data, which keeps updating
/// underneath (its sparklines are never fed from the past).
struct Past {
    data: Data,
    /// 1-based position among the stored snapshots, and how many there are.
    position: usize,
    total: usize,
}

impl Past {
    fn taken_at(&self) -> Millis {
        self.data.snapshot.as_ref().map_or(0, |s| s.taken_at)
    }

    /// The service's time in the snapshot (what the PAST badge shows).
    fn data_at(&self, queue: Option<&str>) -> Millis {
        self.data
            .queue(queue)
            .and_then(|(q, _)| now_of(q))
            .unwrap_or_else(|| self.taken_at())
    }
}

/// The data screens show: the past one while travelling, else the live one.
fn shown<'a>(live: &'a Data, past: &'a Option<Past>) -> &'a Data {
    past.as_ref().map_or(live, |p| &p.data)
}

/// How to build an [`App`].
pub struct AppOptions {
    pub theme: Theme,
    pub no_color: bool,
    /// Where user themes live (`:theme NAME` looks there after the built-ins).
    pub theme_dir: Option<PathBuf>,
    pub keymap: KeyMap,
    pub status: StatusInfo,
    /// The queue to show first (`None`: the first the poller reports).
    pub queue: Option<String>,
    pub loop_rule: LoopRule,
    /// Local wall clock in epoch ms (tests pass a fixed one).
    pub clock: Box<dyn Fn() -> Millis + Send>,
    /// Shown in the footer at start (config problems).
    pub warnings: Vec<String>,
    /// When a priority change needs a change record.
    pub priority_policy: PriorityPolicy,
}

pub struct App {
    data: Data,
    /// The overview is always at the bottom of the navigation stack.
    root: Overview,
    /// Screens opened on top of it (Esc pops).
    stack: Vec<Box<dyn Screen + Send>>,
    input: Input,
    help: bool,
    /// First line of the help shown (it scrolls on small terminals).
    help_scroll: u16,
    theme: Theme,
    no_color: bool,
    theme_dir: Option<PathBuf>,
    keymap: KeyMap,
    status: StatusInfo,
    queue: Option<String>,
    flash: Option<Flash>,
    clock: Box<dyn Fn() -> Millis + Send>,
    /// The priority dialog, while open (it takes every key).
    dialog: Option<PriorityDialog>,
    priority_policy: PriorityPolicy,
    /// Work for the event loop, taken after each update.
    effects: Vec<Effect>,
    /// The last scorecard (computed off the render path by the event loop).
    scorecard: ScorecardState,
    /// A scorecard computation is running.
    scorecard_pending: bool,
    /// The scorecard asked for was as of this service time (`None`: the latest).
    scorecard_as_of: Option<Millis>,
    /// Snapshots received, to recompute the scorecard every [`RECOMPUTE_EVERY`].
    snapshots_seen: u64,
    /// Time travel, while on.
    past: Option<Past>,
    /// A recorded snapshot is being loaded.
    travel_pending: bool,
    /// Steps pressed while one was loading (older > 0, newer < 0), taken one by one after it.
    travel_backlog: i32,
    /// The journal's preemption history is being read.
    preemptions_pending: bool,
    /// Data age (whole seconds) at the last draw, so a tick redraws only when it changes.
    shown_age: Option<i64>,
    dirty: bool,
    quit: bool,
}

impl App {
    pub fn new(opts: AppOptions) -> Self {
        let theme = if opts.no_color {
            opts.theme.without_colour()
        } else {
            opts.theme
        };
        let flash = (!opts.warnings.is_empty()).then(|| Flash {
            text: opts.warnings.join("; "),
            error: true,
        });
        let mut app = Self {
            data: Data::new(opts.loop_rule),
            root: Overview::new(),
            stack: Vec::new(),
            input: Input::Normal,
            help: false,
            help_scroll: 0,
            theme,
            no_color: opts.no_color,
            theme_dir: opts.theme_dir,
            keymap: opts.keymap,
            status: opts.status,
            queue: opts.queue,
            flash,
            clock: opts.clock,
            dialog: None,
            priority_policy: opts.priority_policy,
            effects: Vec::new(),
            scorecard: ScorecardState::Idle,
            scorecard_pending: false,
            scorecard_as_of: None,
            snapshots_seen: 0,
            past: None,
            travel_pending: false,
            travel_backlog: 0,
            preemptions_pending: false,
            shown_age: None,
            dirty: true,
            quit: false,
        };
        app.refresh_all();
        app
    }

    pub fn should_quit(&self) -> bool {
        self.quit
    }

    /// Something changed since the last draw.
    pub fn is_dirty(&self) -> bool {
        self.dirty
    }

    pub fn screen_kind(&self) -> Kind {
        self.current().kind()
    }

    pub fn theme(&self) -> &Theme {
        &self.theme
    }

    pub fn help_open(&self) -> bool {
        self.help
    }

    pub fn dialog(&self) -> Option<&PriorityDialog> {
        self.dialog.as_ref()
    }

    /// The local time of the recorded snapshot shown, while time travelling.
    pub fn past_at(&self) -> Option<Millis> {
        self.past.as_ref().map(Past::taken_at)
    }

    /// The poller's latest data (it keeps updating while time travelling).
    pub fn live_data(&self) -> &Data {
        &self.data
    }

    /// What the screens show (the past while time travelling).
    pub fn shown(&self) -> &Data {
        shown(&self.data, &self.past)
    }

    /// Work the last updates asked for (the event loop runs it off the UI path).
    pub fn take_effects(&mut self) -> Vec<Effect> {
        std::mem::take(&mut self.effects)
    }

    fn current(&self) -> &(dyn Screen + Send) {
        match self.stack.last() {
            Some(s) => s.as_ref(),
            None => &self.root,
        }
    }

    fn current_mut(&mut self) -> &mut (dyn Screen + Send) {
        match self.stack.last_mut() {
            Some(s) => s.as_mut(),
            None => &mut self.root,
        }
    }

    pub fn update(&mut self, msg: Msg) {
        match msg {
            Msg::Key(key) => {
                self.on_key(key);
                self.dirty = true;
            }
            Msg::Resize => self.dirty = true,
            Msg::Snapshot(s) => {
                self.snapshots_seen += 1;
                self.dirty = true;
                if self.past.is_some() {
                    // The live data keeps up underneath; the screens stay on the past.
                    self.data.apply(*s);
                    return;
                }
                self.remember_all();
                self.data.apply(*s);
                self.refresh_all();
                if self.snapshots_seen.is_multiple_of(RECOMPUTE_EVERY) {
                    match self.current().kind() {
                        Kind::Scorecard => self.request_scorecard(),
                        Kind::Preemptions => self.request_preemptions(),
                        _ => {}
                    }
                }
            }
            Msg::SourceClosed => {
                self.data.source_closed = true;
                self.dirty = true;
            }
            Msg::Tick => {
                if self.age_seconds() != self.shown_age {
                    self.dirty = true;
                }
            }
            Msg::ChangeDone(r) => {
                if let Some(d) = &mut self.dialog {
                    d.finished(&r);
                }
                let (text, error) = super::priority::result_text(&r);
                self.flash = Some(Flash { text, error });
                self.effects.push(Effect::RefreshNow);
                self.dirty = true;
            }
            Msg::TravelDone(r) => {
                self.travel_pending = false;
                self.on_travel(*r);
                self.dirty = true;
            }
            Msg::PreemptionHistory(r) => {
                self.preemptions_pending = false;
                match r.result {
                    Ok(recorded) => {
                        self.remember_all();
                        if let Some(p) = &mut self.past {
                            p.data.set_recorded(&r.queue, recorded.clone());
                        }
                        self.data.set_recorded(&r.queue, recorded);
                        self.refresh_all();
                    }
                    // Without a history service the title already says "API window only".
                    Err(e) if e == NO_HISTORY => {}
                    Err(e) => self.flash_error(format!("preemption history: {e}")),
                }
                self.dirty = true;
            }
            Msg::JournalState(broken) => {
                match broken {
                    Some(reason) if self.status.history == History::Recording => {
                        self.status.history = History::Unavailable;
                        self.flash_error(format!(
                            "history unavailable: {reason}; the console goes on without \
                             recording"
                        ));
                    }
                    None if self.status.history == History::Unavailable => {
                        self.status.history = History::Recording;
                        self.flash_info("history recording again");
                    }
                    _ => {}
                }
                self.dirty = true;
            }
            Msg::ScorecardDone(r, as_of) => {
                self.scorecard_pending = false;
                // Asked for before a step in time or a queue switch: not what the screen is
                // about now. Ask again rather than show another time's figures.
                let wanted = self.scorecard_target();
                if self.current().kind() == Kind::Scorecard
                    && wanted
                        .as_ref()
                        .is_some_and(|(q, at)| *q != r.queue || *at != as_of)
                {
                    self.scorecard = ScorecardState::Computing;
                    self.request_scorecard();
                    self.dirty = true;
                    return;
                }
                self.scorecard = match r.result {
                    Ok(view) => ScorecardState::Ready(view),
                    Err(e) if e == HISTORY_UNAVAILABLE => ScorecardState::Unavailable,
                    Err(e) => ScorecardState::Failed(e),
                };
                self.dirty = true;
            }
        }
    }

    /// The last scorecard result (tests).
    pub fn scorecard(&self) -> &ScorecardState {
        &self.scorecard
    }

    /// Asks the event loop for the current queue's scorecard, unless one is being computed or
    /// there is no history to compute it from. The last result stays on screen meanwhile.
    fn request_scorecard(&mut self) {
        if self.status.history != History::Recording {
            self.scorecard = ScorecardState::Unavailable;
            return;
        }
        if self.scorecard_pending {
            return;
        }
        let Some((queue, as_of)) = self.scorecard_target() else {
            self.scorecard = ScorecardState::Failed("no data yet".into());
            return;
        };
        let stale = match &self.scorecard {
            ScorecardState::Ready(v) => v.card.queue != queue || self.scorecard_as_of != as_of,
            _ => true,
        };
        if stale {
            self.scorecard = ScorecardState::Computing;
        }
        self.scorecard_pending = true;
        self.scorecard_as_of = as_of;
        self.effects.push(Effect::ComputeScorecard { queue, as_of });
    }

    /// The scorecard the screen should show: the current queue, and the service time its window
    /// ends at (travelling: the snapshot shown; live: `None`, the latest observation).
    fn scorecard_target(&self) -> Option<(String, Option<Millis>)> {
        let queue = self
            .shown()
            .queue(self.queue.as_deref())
            .map(|(q, _)| q.name.clone())
            .or_else(|| self.queue.clone())?;
        let as_of = self
            .past
            .as_ref()
            .and_then(|p| p.data.queue(Some(&queue)).and_then(|(q, _)| now_of(q)));
        Some((queue, as_of))
    }

    /// Asks the event loop for the journal's preemption history of the current queue (the
    /// Preemptions screen shows the API's window until it comes, and says so).
    fn request_preemptions(&mut self) {
        if self.status.history != History::Recording || self.preemptions_pending {
            return;
        }
        let Some(queue) = self
            .shown()
            .queue(self.queue.as_deref())
            .map(|(q, _)| q.name.clone())
        else {
            return;
        };
        self.preemptions_pending = true;
        self.effects.push(Effect::LoadPreemptions { queue });
    }

    /// Starts a time-travel step, unless one is under way or there is no history.
    fn travel(&mut self, to: TravelTo) {
        if self.status.history != History::Recording {
            return self.flash_error(
                "time travel needs history: this console keeps no journal (--no-journal, or it \
                 could not be opened)",
            );
        }
        if self.travel_pending {
            // Keep the keypress: a step waits for the one loading; a jump replaces them.
            match to {
                TravelTo::Older(_) => self.travel_backlog += 1,
                TravelTo::Newer(_) => self.travel_backlog -= 1,
                TravelTo::At(_) | TravelTo::AtData(_) => {}
            }
            return;
        }
        self.travel_pending = true;
        self.effects.push(Effect::Travel(to));
    }

    /// After a step landed, the next one pressed meanwhile.
    fn travel_next(&mut self) {
        if self.travel_backlog > 0 {
            self.travel_backlog -= 1;
            self.travel_older();
        } else if self.travel_backlog < 0 {
            self.travel_backlog += 1;
            self.travel_newer();
        }
    }

    fn travel_older(&mut self) {
        let from = match &self.past {
            Some(p) => p.taken_at(),
            None => self
                .data
                .snapshot
                .as_ref()
                .map_or_else(|| (self.clock)(), |s| s.taken_at),
        };
        self.travel(TravelTo::Older(from));
    }

    fn travel_newer(&mut self) {
        match &self.past {
            Some(p) => {
                let from = p.taken_at();
                self.travel(TravelTo::Newer(from));
            }
            None => self.flash_info("already live: [ steps back through the recorded snapshots"),
        }
    }

    fn go_live(&mut self, why: &str) {
        self.travel_backlog = 0;
        if self.past.is_none() {
            return self.flash_info("already live");
        }
        self.remember_all();
        self.past = None;
        self.refresh_all();
        self.flash_info(why);
        if self.current().kind() == Kind::Scorecard {
            self.request_scorecard();
        }
    }

    fn on_travel(&mut self, r: TravelResult) {
        match r.result {
            Ok(Some(frame)) => {
                let frame = *frame;
                self.remember_all();
                let data = Data::past(
                    frame.snapshot,
                    self.data.loop_rule.clone(),
                    self.data.recorded.clone(),
                    frame.usage,
                );
                self.past = Some(Past {
                    data,
                    position: frame.position,
                    total: frame.total,
                });
                self.refresh_all();
                if self.current().kind() == Kind::Scorecard {
                    self.request_scorecard();
                }
                if let Some(p) = &self.past {
                    let data_at = p.data_at(self.queue.as_deref());
                    let before = match r.to {
                        TravelTo::At(t) => p.taken_at() > t,
                        TravelTo::AtData(t) => data_at > t,
                        _ => false,
                    };
                    if before {
                        let oldest = super::text::date_time(Some(data_at));
                        self.flash_info(format!(
                            "the journal goes back only to {oldest}: its oldest snapshot is shown"
                        ));
                    }
                }
                self.travel_next();
            }
            Ok(None) => {
                // Nothing further that way: the rest of the presses would go nowhere either.
                self.travel_backlog = 0;
                match r.to {
                    TravelTo::Older(_) if self.past.is_some() => {
                        self.flash_info("this is the oldest recorded snapshot the journal keeps")
                    }
                    TravelTo::Older(_) | TravelTo::At(_) | TravelTo::AtData(_) => self
                        .flash_info("no recorded snapshot yet: the journal stores them as it goes"),
                    TravelTo::Newer(_) => self.go_live("live again: no newer recorded snapshot"),
                }
            }
            Err(e) => {
                self.travel_backlog = 0;
                self.flash_error(format!("time travel: {e}"));
            }
        }
    }

    fn age_seconds(&self) -> Option<i64> {
        let s = self.data.snapshot.as_ref()?;
        let at = self
            .data
            .queue(self.queue.as_deref())
            .and_then(|(q, _)| q.refreshed_at)
            .unwrap_or(s.taken_at);
        Some(((self.clock)() - at) / 1000)
    }

    fn remember_all(&mut self) {
        let data = shown(&self.data, &self.past);
        self.root.remember(data);
        for s in &mut self.stack {
            s.remember(data);
        }
    }

    fn refresh_all(&mut self) {
        let data = shown(&self.data, &self.past);
        self.root.refresh(data, self.queue.as_deref());
        for s in &mut self.stack {
            s.refresh(data, self.queue.as_deref());
        }
    }

    /// Changes the current screen's list (filter or sort) and recomputes its rows.
    fn with_list(&mut self, f: impl FnOnce(&mut super::list::ListState)) {
        let queue = self.queue.clone();
        let screen: &mut (dyn Screen + Send) = match self.stack.last_mut() {
            Some(s) => s.as_mut(),
            None => &mut self.root,
        };
        let data = shown(&self.data, &self.past);
        screen.remember(data);
        if let Some(list) = screen.list() {
            f(list);
        }
        screen.refresh(data, queue.as_deref());
    }

    fn on_key(&mut self, key: KeyEvent) {
        if let Some(dialog) = &mut self.dialog {
            let action = self.keymap.action(Mode::Dialog, &key);
            match dialog.on_key(action, &key, &self.data) {
                Reply::Stay => {}
                Reply::Close => self.dialog = None,
                Reply::Submit(req) => self.effects.push(Effect::ApplyChange(req)),
            }
            return;
        }
        if self.help {
            match self.keymap.action(Mode::Normal, &key) {
                Some(Action::Back | Action::Help | Action::Quit) => self.help = false,
                Some(Action::Down) => self.help_scroll = self.help_scroll.saturating_add(1),
                Some(Action::Up) => self.help_scroll = self.help_scroll.saturating_sub(1),
                Some(Action::PageDown) => self.help_scroll = self.help_scroll.saturating_add(10),
                Some(Action::PageUp) => self.help_scroll = self.help_scroll.saturating_sub(10),
                Some(Action::Top) => self.help_scroll = 0,
                _ => {}
            }
            return;
        }
        if self.input.is_typing() {
            self.on_prompt_key(key);
            return;
        }
        self.flash = None;
        if let Some(action) = self.keymap.action(Mode::Normal, &key) {
            self.on_action(action);
        }
    }

    fn on_prompt_key(&mut self, key: KeyEvent) {
        match self.keymap.action(Mode::Prompt, &key) {
            Some(Action::Confirm) => {
                match std::mem::take(&mut self.input) {
                    Input::Command(line) => self.run_command(&line),
                    Input::Filter(_) | Input::Normal => {}
                }
                return;
            }
            Some(Action::Cancel) => {
                if matches!(self.input, Input::Filter(_)) {
                    self.with_list(|l| l.filter.text.clear());
                }
                self.input = Input::Normal;
                return;
            }
            _ => {}
        }
        let Some(text) = self.input.text_mut() else {
            return;
        };
        match key.code {
            KeyCode::Backspace => {
                if text.pop().is_none() {
                    self.input = Input::Normal;
                    return;
                }
            }
            KeyCode::Char(c)
                if !key
                    .modifiers
                    .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT) =>
            {
                if !c.is_control() && text.chars().count() < 200 {
                    text.push(c);
                }
            }
            _ => return,
        }
        if let Input::Filter(t) = &self.input {
            let t = t.clone();
            self.with_list(|l| l.filter.text = t);
        }
    }

    fn on_action(&mut self, action: Action) {
        match action {
            Action::Quit => self.quit = true,
            Action::Help => {
                self.help = true;
                self.help_scroll = 0;
            }
            Action::CommandMode => self.input = Input::Command(String::new()),
            Action::FilterMode => {
                if let Some(list) = self.current().list_ref() {
                    self.input = Input::Filter(list.filter.text.clone());
                } else {
                    self.flash_error("this screen has no filter");
                }
            }
            Action::Back => {
                if self
                    .current()
                    .list_ref()
                    .is_some_and(|l| !l.filter.text.is_empty())
                {
                    self.with_list(|l| l.filter.text.clear());
                } else if self.stack.pop().is_some() {
                    self.refresh_all();
                }
            }
            Action::Enter => {
                let open = self.current().enter(self.shown(), self.queue.as_deref());
                if let Some(open) = open {
                    self.open(open);
                }
            }
            Action::Up => self.with_nav(|l| l.move_by(-1)),
            Action::Down => self.with_nav(|l| l.move_by(1)),
            Action::PageUp => self.with_nav(|l| l.page(false)),
            Action::PageDown => self.with_nav(|l| l.page(true)),
            Action::Top => self.with_nav(|l| l.top()),
            Action::Bottom => self.with_nav(|l| l.bottom()),
            Action::SortNext | Action::SortReverse => {
                let columns = self.current().sort_columns();
                if columns.is_empty() {
                    self.flash_error("this screen has a fixed order");
                    return;
                }
                self.with_list(|l| {
                    if action == Action::SortNext {
                        l.sort.column = (l.sort.column + 1) % columns.len();
                    } else {
                        l.sort.descending = !l.sort.descending;
                    }
                });
            }
            Action::NextPane => self.current_mut().next_pane(),
            Action::Overview => self.switch_root(Kind::Overview),
            Action::Jobs => self.switch_root(Kind::Jobs),
            Action::Preemptions => self.switch_root(Kind::Preemptions),
            Action::Scorecard => self.switch_root(Kind::Scorecard),
            Action::NextQueue => {
                let names: Vec<String> = self
                    .shown()
                    .queues()
                    .iter()
                    .map(|q| q.name.clone())
                    .collect();
                if names.len() > 1 {
                    let at = self
                        .queue
                        .as_ref()
                        .and_then(|q| names.iter().position(|n| n == q))
                        .unwrap_or(0);
                    self.set_queue(names[(at + 1) % names.len()].clone());
                }
            }
            Action::NextTheme => {
                let names: Vec<&str> = theme::built_in_names().collect();
                let at = names
                    .iter()
                    .position(|n| *n == self.theme.name)
                    .map_or(0, |i| i + 1);
                self.set_theme(names[at % names.len()]);
            }
            Action::Priority => self.open_priority_dialog(),
            Action::Older => self.travel_older(),
            Action::Newer => self.travel_newer(),
            Action::Live => self.go_live("live data"),
            Action::Confirm | Action::Cancel | Action::NextField | Action::PrevField => {}
        }
    }

    fn open_priority_dialog(&mut self) {
        if self.status.read_only {
            return self.flash_error(
                "read-only mode: priority changes are disabled (--read-only or read_only = true)",
            );
        }
        if self.past.is_some() {
            return self.flash_error(format!(
                "you are looking at the past: {} returns to live data, where priorities can change",
                self.keymap.first_key(Action::Live)
            ));
        }
        let Some((queue, id)) = self
            .current()
            .selected_job(&self.data, self.queue.as_deref())
        else {
            return self.flash_error("select a job first (Jobs, a share's queue or a job)");
        };
        let Some(job) = self.data.job(Some(&queue), &id) else {
            return self.flash_error("that job is no longer in the data");
        };
        if job.job.status.is_terminal() {
            return self.flash_error(format!(
                "{} has already finished ({}): its priority cannot change",
                clean(&job.job.name),
                job.job.status.as_str()
            ));
        }
        self.dialog = Some(PriorityDialog::new(&queue, job, self.priority_policy));
    }

    fn with_nav(&mut self, f: impl FnOnce(&mut super::list::ListState)) {
        let data = shown(&self.data, &self.past);
        let screen: &mut (dyn Screen + Send) = match self.stack.last_mut() {
            Some(s) => s.as_mut(),
            None => &mut self.root,
        };
        if let Some(list) = screen.nav_list() {
            f(list);
        }
        screen.after_nav(data);
    }

    fn flash_error(&mut self, text: impl Into<String>) {
        self.flash = Some(Flash {
            text: text.into(),
            error: true,
        });
    }

    fn flash_info(&mut self, text: impl Into<String>) {
        self.flash = Some(Flash {
            text: text.into(),
            error: false,
        });
    }

    fn set_queue(&mut self, name: String) {
        self.queue = Some(name);
        self.stack.clear();
        self.refresh_all();
    }

    fn set_theme(&mut self, name: &str) {
        match Theme::resolve(name, self.theme_dir.as_deref()) {
            Ok(t) => {
                self.theme = if self.no_color { t.without_colour() } else { t };
                self.flash = Some(Flash {
                    text: format!("theme {}", self.theme.name),
                    error: false,
                });
            }
            Err(e) => self.flash_error(e.to_string()),
        }
    }

    fn switch_root(&mut self, kind: Kind) {
        self.stack.clear();
        let screen: Box<dyn Screen + Send> = match kind {
            Kind::Jobs => Box::new(Jobs::new()),
            Kind::Preemptions => {
                self.request_preemptions();
                Box::new(Preemptions::new())
            }
            Kind::Scorecard => {
                self.request_scorecard();
                Box::new(ScorecardScreen::new())
            }
            _ => {
                self.refresh_all();
                return;
            }
        };
        self.push(screen);
    }

    fn push(&mut self, mut screen: Box<dyn Screen + Send>) {
        screen.refresh(shown(&self.data, &self.past), self.queue.as_deref());
        self.stack.push(screen);
    }

    fn open(&mut self, open: Open) {
        match open {
            Open::Share { queue, share } => {
                self.queue = Some(queue.clone());
                self.push(Box::new(ShareScreen::new(queue, share)));
            }
            Open::Job { queue, id } => self.push(Box::new(JobDetail::new(queue, id))),
            Open::Jobs { queue } => {
                self.queue = Some(queue);
                self.push(Box::new(Jobs::new()));
            }
        }
    }

    fn run_command(&mut self, line: &str) {
        let cmd = match command::parse(line) {
            Ok(c) => c,
            Err(e) => return self.flash_error(e),
        };
        match cmd {
            Command::Overview => self.switch_root(Kind::Overview),
            Command::Jobs => self.switch_root(Kind::Jobs),
            Command::Preemptions => self.switch_root(Kind::Preemptions),
            Command::Scorecard => self.switch_root(Kind::Scorecard),
            Command::Help => self.help = true,
            Command::Quit => self.quit = true,
            Command::Theme(name) => self.set_theme(&name),
            Command::At(when) => {
                // "30m" is ago by this machine's clock (as "recorded … ago" is); a time of day
                // is read on the data's own clock (as the PAST badge and job times are).
                let live_taken = self
                    .data
                    .snapshot
                    .as_ref()
                    .map_or_else(|| (self.clock)(), |s| s.taken_at);
                let (to, live) = match when {
                    When::Ago(d) => {
                        let t = (self.clock)().saturating_sub(d);
                        (TravelTo::At(t), t >= live_taken)
                    }
                    When::At(t) => {
                        // Times are shown to the second: a time typed to the second covers it.
                        let t = if t % 1000 == 0 { t + 999 } else { t };
                        let live_data = self
                            .data
                            .queue(self.queue.as_deref())
                            .and_then(|(q, _)| now_of(q))
                            .unwrap_or(live_taken);
                        (TravelTo::AtData(t), t >= live_data)
                    }
                };
                if live {
                    self.go_live("live: that time is now or later");
                } else {
                    self.travel(to);
                }
            }
            Command::Live => self.go_live("live data"),
            Command::Queue(name) => {
                if self.shown().queues().iter().any(|q| q.name == name) {
                    self.set_queue(name);
                } else {
                    self.flash_error(format!("no queue {}", clean(&name)));
                }
            }
            Command::Share(name) => {
                let Some((q, _)) = self.shown().queue(self.queue.as_deref()) else {
                    return self.flash_error("no data yet");
                };
                if q.shares.iter().any(|s| s.name == name) {
                    let queue = q.name.clone();
                    self.stack.clear();
                    self.open(Open::Share { queue, share: name });
                } else {
                    self.flash_error(format!(
                        "no share {} in queue {}",
                        clean(&name),
                        clean(&q.name)
                    ));
                }
            }
            Command::Job(needle) => {
                let Some((q, _)) = self.shown().queue(self.queue.as_deref()) else {
                    return self.flash_error("no data yet");
                };
                let found = q
                    .jobs
                    .iter()
                    .find(|j| j.job.id == needle)
                    .or_else(|| q.jobs.iter().find(|j| j.job.name == needle))
                    .or_else(|| {
                        let mut m = q.jobs.iter().filter(|j| j.job.id.ends_with(&needle));
                        let first = m.next();
                        if m.next().is_some() { None } else { first }
                    });
                match found {
                    Some(j) => {
                        let open = Open::Job {
                            queue: q.name.clone(),
                            id: j.job.id.clone(),
                        };
                        self.open(open);
                    }
                    None => self.flash_error(format!(
                        "no job {} in queue {}",
                        clean(&needle),
                        clean(&q.name)
                    )),
                }
            }
        }
    }

    /// Draws the whole console.
    pub fn draw(&mut self, frame: &mut Frame) {
        self.shown_age = self.age_seconds();
        self.dirty = false;
        self.render(frame);
    }

    /// Rendering proper, from `&self`.
    pub fn render(&self, frame: &mut Frame) {
        let area = frame.area();
        let theme = &self.theme;
        if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
            let text = vec![
                Line::from(Span::styled(
                    "terminal too small",
                    theme.style(Role::Critical),
                )),
                Line::from(format!(
                    "{}×{}, need {MIN_WIDTH}×{MIN_HEIGHT}",
                    area.width, area.height
                )),
                Line::from(Span::styled(
                    format!("{} quits", self.keymap.first_key(Action::Quit)),
                    theme.style(Role::Muted),
                )),
            ];
            let top = area.height.saturating_sub(3) / 2;
            let [_, mid, _] = Layout::vertical([
                Constraint::Length(top),
                Constraint::Length(3),
                Constraint::Fill(1),
            ])
            .areas(area);
            frame.render_widget(
                Paragraph::new(text)
                    .alignment(Alignment::Center)
                    .wrap(Wrap { trim: true }),
                mid,
            );
            return;
        }
        let [status, body, foot] = Layout::vertical([
            Constraint::Length(2),
            Constraint::Fill(1),
            Constraint::Length(1),
        ])
        .areas(area);
        let past_mark = self.past.as_ref().map(|p| PastMark {
            taken_at: p.taken_at(),
            data_at: p.data_at(self.queue.as_deref()),
            position: p.position,
            total: p.total,
            older: self.keymap.first_key(Action::Older),
            newer: self.keymap.first_key(Action::Newer),
            live: self.keymap.first_key(Action::Live),
        });
        status_bar::draw(
            frame,
            status,
            &self.data,
            self.shown(),
            past_mark.as_ref(),
            self.queue.as_deref(),
            &self.status,
            (self.clock)(),
            theme,
        );
        // The past is drawn inside borders of its own role, so no screen of it passes for live.
        let past_theme;
        let theme = if self.past.is_some() {
            past_theme = theme.with_past_borders();
            &past_theme
        } else {
            theme
        };
        let ctx = DrawCtx {
            data: self.shown(),
            queue: self.queue.as_deref(),
            theme,
            scorecard: &self.scorecard,
        };
        self.current().draw(frame, body, &ctx);
        if self.help {
            help::draw(frame, body, &self.keymap, self.help_scroll, theme);
        }
        if let Some(d) = &self.dialog {
            d.draw(frame, body, &self.keymap, theme);
        }
        footer::draw(
            frame,
            foot,
            &self.input,
            self.flash.as_ref(),
            &self.keymap,
            if self.dialog.is_some() {
                Mode::Dialog
            } else {
                Mode::Normal
            },
            theme,
        );
    }
}
