//! The console's state and its update function. Input, snapshots and ticks come in as [`Msg`];
//! [`App::draw`] renders from `&self`. Each screen keeps its own state and work (in `stack`:
//! what it shows, the history it loads through [`Effect`]s and their answers); time travel is
//! its own module ([`Travel`]). The app holds only what is shared: the data, navigation, input
//! mode, theme and key map.
//!
//! - `keys`: keys and actions; `commands`: `:` commands; `nav`: the screen stack; `render`:
//!   drawing.

mod act;
mod commands;
mod keys;
mod nav;
mod render;

use std::path::PathBuf;

use crossterm::event::KeyEvent;

use super::data::{Data, DeriveInputs, Prepared, Retired};
use super::effects::{Effect, EffectResult, HistoryError, ScreenServices};
use super::footer::Flash;
use super::input::Input;
use super::keymap::KeyMap;
use super::messages::Messages;
use super::overview::Overview;
use super::priority::PriorityDialog;
use super::registry::Screens;
use super::scorecard::{RECOMPUTE_EVERY, ScorecardScreen, ScorecardState};
use super::screen::{Ctx, Kind, Load, Screen};
use super::status_bar::{History, StatusInfo};
use super::theme::Theme;
use super::travel::{self, Travel};
use quotatop_analysis::LoopRule;
use quotatop_model::{Millis, Snapshot};

/// Below this the console shows only a "terminal too small" notice.
pub const MIN_WIDTH: u16 = 80;
pub const MIN_HEIGHT: u16 = 24;

/// Everything that changes the console.
#[derive(Debug)]
pub enum Msg {
    Key(KeyEvent),
    Resize,
    Snapshot(Box<Snapshot>),
    /// A snapshot whose analysis was derived elsewhere ([`Prepared::new`] with
    /// [`App::derive_inputs`]): applied like [`Msg::Snapshot`], without the derivation.
    Prepared(Box<Prepared>),
    /// The poller's channel closed.
    SourceClosed,
    Tick,
    /// Work the app asked for finished (see [`super::runner`]).
    Done(EffectResult),
    /// The journal stopped recording (the reason), or records again (`None`).
    JournalState(Option<String>),
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
    /// The rules every door checks a change against (read-only, `[priority]`, the class
    /// policy), with this console's operator: the dialogs judge by them before a preview.
    pub door: std::sync::Arc<quotatop_analysis::gate::Door>,
    /// What checkpoint storage costs (`[prices] s3_gb_month`), for Job detail.
    pub storage_price: super::data::StoragePrice,
}

pub struct App {
    /// The screens this console knows (keys, commands, help and navigation read it).
    screens: Screens,
    data: Data,
    /// The overview is always at the bottom of the navigation stack.
    root: Overview,
    /// Screens opened on top of it (Esc pops).
    stack: Vec<Box<dyn Screen + Send>>,
    input: Input,
    help: bool,
    /// First line of the help shown (it scrolls on small terminals).
    help_scroll: super::list::ListState,
    theme: Theme,
    no_color: bool,
    theme_dir: Option<PathBuf>,
    keymap: KeyMap,
    status: StatusInfo,
    queue: Option<String>,
    flash: Option<Flash>,
    /// Every warning and error shown (`:messages`).
    messages: Messages,
    messages_open: bool,
    clock: Box<dyn Fn() -> Millis + Send>,
    /// The priority dialog, while open (it takes every key).
    dialog: Option<PriorityDialog>,
    /// The terminate, requeue or marked-priority dialog, while open (it takes every key).
    acting: Option<super::job_act::JobAct>,
    /// The marked jobs (Jobs, Preemptions), by job id.
    marks: super::marks::Marks,
    door: std::sync::Arc<quotatop_analysis::gate::Door>,
    /// Work for the event loop, taken after each update.
    effects: Vec<Effect>,
    /// Snapshots received, to reload history screens every [`RECOMPUTE_EVERY`].
    snapshots_seen: u64,
    /// The [`Prepared::order`] of the last prepared snapshot applied: an older one arriving
    /// later is dropped.
    prepared_applied: u64,
    travel: Travel,
    /// Data age (whole seconds) at the last draw, so a tick redraws only when it changes.
    shown_age: Option<i64>,
    dirty: bool,
    quit: bool,
    /// Ctrl-C was pressed over a half-typed change: a second one quits, any other key goes
    /// back to the change.
    quit_asked: bool,
}

impl App {
    /// A console with the built-in screens.
    pub fn new(opts: AppOptions) -> Self {
        Self::with_screens(opts, Screens::builtin())
    }

    /// A console with `screens` (the built-in ones and any added, see
    /// [`super::registry::Screens::with`]); keys of screens the key map lacks are added to it.
    pub fn with_screens(mut opts: AppOptions, screens: Screens) -> Self {
        let clashes = opts.keymap.add_screens(screens.entries());
        opts.warnings.extend(clashes);
        let theme = if opts.no_color {
            opts.theme.without_colour()
        } else {
            opts.theme
        };
        let flash = (!opts.warnings.is_empty()).then(|| Flash {
            text: format!("{} (:messages lists them)", opts.warnings.join("; ")),
            error: true,
        });
        let messages = Messages::with_startup(opts.warnings);
        let mut status = opts.status;
        status.messages = messages.startup.len();
        let mut app = Self {
            screens,
            data: Data {
                storage_price: opts.storage_price,
                ..Data::new(opts.loop_rule)
            },
            root: Overview::new(),
            stack: Vec::new(),
            input: Input::Normal,
            help: false,
            help_scroll: super::list::ListState::default(),
            theme,
            no_color: opts.no_color,
            theme_dir: opts.theme_dir,
            keymap: opts.keymap,
            status,
            queue: opts.queue,
            flash,
            messages,
            messages_open: false,
            clock: opts.clock,
            dialog: None,
            acting: None,
            marks: Default::default(),
            door: opts.door,
            effects: Vec::new(),
            snapshots_seen: 0,
            prepared_applied: 0,
            travel: Travel::default(),
            shown_age: None,
            dirty: true,
            quit: false,
            quit_asked: false,
        };
        app.refresh_all();
        app
    }

    /// What the screens' own work reads (the registry's services).
    pub fn screen_services(&self) -> &ScreenServices {
        self.screens.services()
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

    /// The theme in use. Only tests read it: public for the integration tests (`tui_app.rs`:
    /// which theme `t` switched to; `tui_history.rs`: the colours the past is drawn in).
    pub fn theme(&self) -> &Theme {
        &self.theme
    }

    /// Whether `?` help is open. Only tests read it: public for the integration tests
    /// (`tui_app.rs`, `tui_lists.rs`).
    pub fn help_open(&self) -> bool {
        self.help
    }

    /// The priority dialog, while open. Only tests read it: public for the integration tests
    /// (`tui_priority*.rs`, `tui_history.rs`, `tui_states.rs`), which check its step and
    /// preview through it.
    pub fn dialog(&self) -> Option<&PriorityDialog> {
        self.dialog.as_ref()
    }

    /// The local time of the recorded snapshot shown, while time travelling. Only tests read
    /// it: public for the integration tests (`tui_history.rs`).
    pub fn past_at(&self) -> Option<Millis> {
        self.travel.past().map(travel::Past::taken_at)
    }

    /// The poller's latest data (it keeps updating while time travelling).
    pub fn live_data(&self) -> &Data {
        &self.data
    }

    /// What the screens show (the past while time travelling).
    pub fn shown(&self) -> &Data {
        self.travel.shown(&self.data)
    }

    /// Work the last updates asked for (the event loop runs it off the UI path).
    pub fn take_effects(&mut self) -> Vec<Effect> {
        std::mem::take(&mut self.effects)
    }

    /// The current screen's list (tests).
    #[cfg(test)]
    pub(crate) fn current_list(&self) -> Option<&super::list::ListState> {
        self.current().list_ref()
    }

    /// The Scorecard screen's last result (`Idle` when it is not open). Only tests read it:
    /// public because the integration tests (`tests/it/tui_scorecard.rs`, `tui_history.rs`)
    /// check the computed card's figures, which the drawn screen shows only in part.
    pub fn scorecard(&self) -> &ScorecardState {
        let screen: &dyn std::any::Any = self.current();
        screen
            .downcast_ref::<ScorecardScreen>()
            .map_or(&ScorecardState::Idle, ScorecardScreen::state)
    }

    /// The kinds of screen open (the root and the stack).
    fn open_kinds(&self) -> Vec<Kind> {
        std::iter::once(self.root.kind())
            .chain(self.stack.iter().map(|s| s.kind()))
            .collect()
    }

    /// Stops the work of each kind of screen open before and not any more: nobody is left
    /// to take its answer (a closed log pane's follow reads no page more).
    fn forget_closed(&mut self, before: &[Kind]) {
        let now = self.open_kinds();
        let mut gone: Vec<Kind> = before
            .iter()
            .copied()
            .filter(|k| !now.contains(k))
            .collect();
        gone.dedup();
        self.effects.extend(gone.into_iter().map(Effect::Forget));
    }

    fn current(&self) -> &(dyn Screen + Send) {
        match self.stack.last() {
            Some(s) => s.as_ref(),
            None => &self.root,
        }
    }

    pub fn update(&mut self, msg: Msg) {
        match msg {
            Msg::Key(key) => {
                let open = self.open_kinds();
                self.on_key(key);
                self.forget_closed(&open);
            }
            Msg::Resize => {}
            Msg::Snapshot(s) => self.on_snapshot(|data| data.apply(*s)),
            Msg::Prepared(p) => {
                if p.order() <= self.prepared_applied {
                    return;
                }
                self.prepared_applied = p.order();
                self.on_snapshot(|data| data.apply_prepared(*p));
            }
            Msg::SourceClosed => self.data.source_closed = true,
            Msg::Tick => {
                if self.age_seconds() == self.shown_age {
                    return;
                }
            }
            Msg::Done(result) => self.on_done(result),
            Msg::JournalState(broken) => match broken {
                Some(reason) if self.status.history == History::Recording => {
                    self.status.history = History::Unavailable;
                    let text = self.journal_lost(&reason);
                    self.flash_error(text);
                }
                None if self.status.history == History::Unavailable => {
                    self.status.history = History::Recording;
                    self.flash_info("history recording again");
                }
                _ => {}
            },
        }
        self.dirty = true;
    }

    /// What deriving a snapshot's analysis off the UI thread reads ([`Prepared::new`]): with
    /// the filter and sort of the rows the open screens take ready-made (Jobs).
    pub fn derive_inputs(&self) -> DeriveInputs {
        let keys = std::iter::once(&self.root as &(dyn Screen + Send))
            .chain(self.stack.iter().map(|s| s.as_ref()))
            .filter_map(|s| s.derived_rows())
            .collect();
        self.data.inputs().with_rows(self.queue.clone(), keys)
    }

    /// The snapshot and analysis the last [`Msg::Prepared`] replaced, for the caller to free
    /// off the UI thread (the event loop does; at 50,000 jobs freeing them took 94 ms of a
    /// dev build). Not taken, they are freed when the next one replaces them.
    pub fn take_retired(&mut self) -> Option<Retired> {
        self.data.take_retired()
    }

    /// A new snapshot: `apply` puts it into the live data; the screens follow unless time
    /// travelling (the live data keeps up underneath; the screens stay on the past).
    fn on_snapshot(&mut self, apply: impl FnOnce(&mut Data)) {
        self.snapshots_seen += 1;
        if self.travel.past().is_some() {
            apply(&mut self.data);
        } else {
            self.remember_before_data();
            apply(&mut self.data);
            if let Some(s) = &self.data.snapshot {
                self.messages.note_refresh(s);
            }
            self.refresh_all();
            if let Some(d) = &mut self.dialog {
                d.follow(&self.data);
            }
            if self.snapshots_seen.is_multiple_of(RECOMPUTE_EVERY) {
                self.load_current(Load::Periodic);
            }
        }
        if self.snapshots_seen == 1
            || self
                .snapshots_seen
                .is_multiple_of(super::policy::ATTENTION_EVERY)
        {
            let queues = self.data.queues().iter().map(|q| q.key()).collect();
            self.effects.push(super::policy::attention_work(queues));
        }
    }

    /// An answer from the runner: the screen that asked takes it, then the app applies what
    /// is shared (the data, the past, the footer).
    fn on_done(&mut self, result: EffectResult) {
        let ctx = Ctx {
            data: self.travel.shown(&self.data),
            queue: self.queue.as_deref(),
            history: self.status.history == History::Recording,
            past: self.travel.past().is_some(),
        };
        // Every open screen is offered it (the one that asked may be under another now); a
        // screen's own work goes to the screens of its kind only.
        let to = |s: &dyn Screen| match &result {
            EffectResult::Screen { screen, .. } => s.kind() == *screen,
            _ => true,
        };
        let mut more = Vec::new();
        if to(&self.root) {
            more.extend(self.root.on_result(&result, &ctx));
        }
        for s in &mut self.stack {
            if to(s.as_ref()) {
                more.extend(s.on_result(&result, &ctx));
            }
        }
        self.effects.extend(more);
        // The policy's answers (the attention panel's or the Policy screen's) are shared data:
        // the policy module says what they are; the app applies them.
        let items = super::policy::attention_items(&result);
        if !items.is_empty() {
            self.remember_all();
            for (queue, asked, items) in items {
                self.data.set_policy_items(queue, asked, items);
            }
            self.refresh_all();
        }
        self.job_act_done(&result);
        match result {
            EffectResult::Act(_) => self.effects.push(Effect::RefreshNow),
            EffectResult::Change(_) if self.acting.is_some() => {
                self.effects.push(Effect::RefreshNow)
            }
            EffectResult::Change(r) => {
                if let Some(d) = &mut self.dialog {
                    d.finished(&r);
                }
                let (text, error) = super::priority::result_text(&r);
                self.flash = Some(Flash { text, error });
                self.effects.push(Effect::RefreshNow);
            }
            EffectResult::Travel(r) => {
                let history = self.history();
                let (root, stack) = (&mut self.root, &mut self.stack);
                let reply = self.travel.on_result(
                    *r,
                    &self.data,
                    self.queue.as_deref(),
                    history,
                    &mut |data| nav::remember(root, stack, data),
                );
                self.after_travel(reply);
            }
            EffectResult::Preemptions(r) => match r.result {
                Ok(recorded) => {
                    self.remember_all();
                    if let Some(p) = self.travel.past_mut() {
                        p.data.set_recorded(&r.queue, recorded.clone());
                    }
                    self.data.set_recorded(&r.queue, recorded);
                    self.refresh_all();
                }
                // Without a history service the title already says "API window only".
                Err(HistoryError::NoHistory) => {}
                Err(e) => self.flash_error(format!("preemption history: {e}")),
            },
            // The Scorecard screen took it.
            EffectResult::Scorecard(..) => {}
            // The screen that asked took it.
            EffectResult::Screen { .. } => {}
        }
    }

    /// What the current screen's own work needs, and the screen.
    fn split(&mut self) -> (Ctx<'_>, &mut (dyn Screen + Send)) {
        let ctx = Ctx {
            data: self.travel.shown(&self.data),
            queue: self.queue.as_deref(),
            history: self.status.history == History::Recording,
            past: self.travel.past().is_some(),
        };
        let screen: &mut (dyn Screen + Send) = match self.stack.last_mut() {
            Some(s) => s.as_mut(),
            None => &mut self.root,
        };
        (ctx, screen)
    }

    /// The journal records (history can be read).
    fn history(&self) -> bool {
        self.status.history == History::Recording
    }

    /// The live snapshot's local time (the clock before the first one).
    fn live_taken(&self) -> Millis {
        self.data
            .snapshot
            .as_ref()
            .map_or_else(|| (self.clock)(), |s| s.taken_at)
    }

    /// Asks the current screen for the work it needs (`why`: it opened, the time moved, …).
    fn load_current(&mut self, why: Load) {
        let (ctx, screen) = self.split();
        let effects = screen.load(why, &ctx);
        self.effects.extend(effects);
    }

    /// Applies what a time-travel operation asked for.
    fn after_travel(&mut self, r: travel::Reply) {
        if r.moved {
            self.refresh_all();
            self.load_current(Load::Moved);
        }
        self.effects.extend(r.effect);
        if let Some(f) = r.flash {
            self.flash = Some(f);
        }
    }

    fn go_live(&mut self, why: &str) {
        let (root, stack) = (&mut self.root, &mut self.stack);
        let r = self
            .travel
            .go_live(why, &mut |data| nav::remember(root, stack, data));
        self.after_travel(r);
    }

    /// What losing the journal means: a console writing one goes on without recording; one
    /// following a store records nothing anyway, and shows its last snapshot while it retries.
    fn journal_lost(&self, reason: &str) -> String {
        if self.status.store.is_none() {
            return format!("history unavailable: {reason}; the console goes on without recording");
        }
        match self.data.snapshot.as_ref() {
            Some(s) => format!(
                "store unreachable: {reason}; showing the last snapshot from {}, retrying",
                crate::text::clock(Some(s.taken_at))
            ),
            None => format!("store unreachable: {reason}; no snapshot yet, retrying"),
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

    fn flash_error(&mut self, text: impl Into<String>) {
        let text = text.into();
        self.messages.push(&text);
        self.flash = Some(Flash { text, error: true });
    }

    /// Whether `:messages` is open. Only tests read it: public for the integration tests
    /// (`tui_states.rs`).
    pub fn messages_open(&self) -> bool {
        self.messages_open
    }

    fn flash_info(&mut self, text: impl Into<String>) {
        self.flash = Some(Flash {
            text: text.into(),
            error: false,
        });
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
            Err(e) => self.flash_error(quotatop_model::error_chain(&e)),
        }
    }
}

#[cfg(test)]
mod tests;
