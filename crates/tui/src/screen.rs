//! What every screen provides (the [`Screen`] trait and the types it speaks in), and the drawing
//! they share: [`table`] (the titled block, a list's table, cell text), [`columns`] (the column
//! layout every table uses), [`text`] (text panes and scrollbars).

mod columns;
mod table;
mod text;

pub use columns::{Col, drop_order, layout, layout_in};
#[cfg(test)]
pub use table::walks;
pub use table::{
    MARKER, TableView, block, draw_table, longest_name_and_reason, short_type, shown_cells,
    shown_constraints, since, sort_label, sorted_header, title_room,
};
#[cfg(test)]
pub use text::lines_built;
pub use text::{TextPane, draw_text, draw_text_window, scrollbar};

use ratatui::Frame;
use ratatui::layout::Rect;

use super::data::Data;
use super::effects::{Effect, EffectResult};
use super::keymap::Action;
use super::list::ListState;
use super::theme::Theme;
use quotatop_model::Millis;

/// Which screen a view is (for the registry, key dispatch, `:` commands and tests): its name.
/// The built-in ones (`Kind::Jobs`) come from the `screens!` list in `lib.rs`; a screen
/// registered from outside names its own (`Kind::new("Hello")`). [`super::registry`] refuses
/// two with one name.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Kind(&'static str);

impl Kind {
    pub const fn new(name: &'static str) -> Self {
        Self(name)
    }

    pub const fn name(self) -> &'static str {
        self.0
    }
}

impl std::fmt::Debug for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

/// What drawing needs besides the screen's own state.
pub struct DrawCtx<'a> {
    pub data: &'a Data,
    /// The current queue (`None`: the first one).
    pub queue: Option<&'a str>,
    pub theme: &'a Theme,
    /// The marked jobs (Jobs and Preemptions draw theirs in the `marked` role).
    pub marks: &'a super::marks::Marks,
    /// The keys in force, for hints that name one.
    pub keymap: &'a super::keymap::KeyMap,
}

/// What a screen's own work (loading what it shows) needs besides its state.
pub struct Ctx<'a> {
    /// The data shown (the past one while time travelling).
    pub data: &'a Data,
    /// The current queue (`None`: the first one).
    pub queue: Option<&'a str>,
    /// The journal records, so history can be read.
    pub history: bool,
    /// Time travelling (the data is a recorded snapshot).
    pub past: bool,
}

impl Ctx<'_> {
    /// The current queue's name (the first one's when none is chosen).
    pub fn queue_name(&self) -> Option<String> {
        self.data
            .queue(self.queue)
            .map(|(q, _)| q.key())
            .or_else(|| self.queue.map(str::to_string))
    }

    /// The service time of the recorded snapshot shown (`None`: live).
    pub fn as_of(&self, queue: &str) -> Option<Millis> {
        if !self.past {
            return None;
        }
        self.data
            .queue(Some(queue))
            .and_then(|(q, _)| quotatop_analysis::now_of(q))
    }
}

/// Why a screen is asked to load what it shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Load {
    /// It was opened.
    Opened,
    /// The time shown changed (a step in time, or back to live).
    Moved,
    /// Every [`super::scorecard::RECOMPUTE_EVERY`] snapshots while it is shown.
    Periodic,
}

/// Where Enter leads.
pub enum Open {
    Share { queue: String, share: String },
    Job { queue: String, id: String },
    Jobs { queue: String },
}

/// What every screen is to the app. `Any`: the app never looks inside a screen, but
/// [`super::App::scorecard`] (for the integration tests) finds the Scorecard screen by its type.
pub trait Screen: std::any::Any {
    fn kind(&self) -> Kind;
    /// Whether Tab switches between panes of it (its footer hint shows only then).
    fn has_panes(&self) -> bool {
        false
    }
    /// Note which item is selected, by identity, before the data, filter or sort change, so
    /// [`Screen::refresh`] can keep it selected (row indices change with the data).
    fn remember(&mut self, _data: &Data) {}
    /// As [`Screen::remember`], before new live data arrives. A screen whose rows move with
    /// the data (Jobs: a job changing status moves in the sort) overrides it to keep its row
    /// instead, so the view stays still while it is read.
    fn remember_before_data(&mut self, data: &Data) {
        self.remember(data);
    }
    /// The actions of its own it offers (the Overview's views); they reach
    /// [`Screen::on_action`], and their footer hints show only on it.
    fn own_actions(&self) -> &'static [Action] {
        &[]
    }
    /// Before each draw, the `area` it will be drawn in (a screen whose rows depend on its
    /// room recomputes them here).
    fn fit(&mut self, _area: Rect, _data: &Data, _queue: Option<&str>) {}
    /// Recompute rows after the data, filter or sort changed.
    fn refresh(&mut self, data: &Data, queue: Option<&str>);
    fn draw(&self, frame: &mut Frame, area: Rect, ctx: &DrawCtx);
    /// The list that navigation, `/` and sort keys act on.
    fn list(&mut self) -> Option<&mut ListState>;
    fn list_ref(&self) -> Option<&ListState>;
    /// Sort column names (empty: not sortable).
    fn sort_columns(&self) -> &'static [&'static str] {
        &[]
    }
    fn enter(&self, _data: &Data, _queue: Option<&str>) -> Option<Open> {
        None
    }
    /// A key in normal mode, offered to the screen before the key map (`action`: what the map
    /// would do with it): `Some(work)` when the screen took it (the log pane's `f`, `n`, `[`).
    fn own_key(
        &mut self,
        _key: &crossterm::event::KeyEvent,
        _action: Option<Action>,
        _ctx: &Ctx,
    ) -> Option<Vec<Effect>> {
        None
    }
    /// An action the app leaves to the screen (Tab: the next pane); the work it needs.
    fn on_action(&mut self, _action: Action, _ctx: &Ctx) -> Vec<Effect> {
        Vec::new()
    }
    /// The list that Up/Down/Page keys move in (by default the one `/` and sort act on; a
    /// screen with a second pane returns that pane's list while it has the focus).
    fn nav_list(&mut self) -> Option<&mut ListState> {
        self.list()
    }
    /// After Up/Down/Page moved the selection (a screen whose second pane follows the first
    /// refreshes it here).
    fn after_nav(&mut self, _data: &Data) {}
    /// The work the screen needs for what it shows (history it reads through the effect
    /// runner); a newer request of the same kind cancels the older one.
    fn load(&mut self, _why: Load, _ctx: &Ctx) -> Vec<Effect> {
        Vec::new()
    }
    /// An answer to work it asked for (every answer is offered; a screen takes its own).
    fn on_result(&mut self, _result: &EffectResult, _ctx: &Ctx) -> Vec<Effect> {
        Vec::new()
    }
    /// Work its last [`Screen::refresh`] asked for (the Jobs rows of a new sort or filter,
    /// made off the UI thread); the app starts it.
    fn take_work(&mut self) -> Vec<Effect> {
        Vec::new()
    }
    /// The filter and sort of rows it takes ready-made from each snapshot's derivation off
    /// the UI thread (Jobs; see [`crate::data::DeriveInputs`]).
    fn derived_rows(&self) -> Option<super::list::RowsKey> {
        None
    }
    /// The ids of the jobs it shows (its rows, filtered), in the current queue: what
    /// "mark all" marks. Screens that list no jobs show none.
    fn shown_jobs(&self, _data: &Data) -> Vec<String> {
        Vec::new()
    }
    /// The job a priority change applies to (by default: the one Enter would open).
    fn selected_job(&self, data: &Data, queue: Option<&str>) -> Option<(String, String)> {
        match self.enter(data, queue)? {
            Open::Job { queue, id } => Some((queue, id)),
            _ => None,
        }
    }
}

/// What tests count of the drawing on this thread.
#[cfg(test)]
#[derive(Clone, Copy)]
enum Counted {
    /// Walks over every row of a table ([`longest_name_and_reason`]).
    Walks,
    /// Lines a text pane built.
    LinesBuilt,
}

#[cfg(test)]
thread_local! {
    static COUNTS: [std::cell::Cell<usize>; 2] =
        const { [std::cell::Cell::new(0), std::cell::Cell::new(0)] };
}

#[cfg(test)]
fn count(what: Counted, n: usize) {
    COUNTS.with(|c| c[what as usize].set(c[what as usize].get() + n));
}

#[cfg(test)]
fn counted(what: Counted) -> usize {
    COUNTS.with(|c| c[what as usize].get())
}
