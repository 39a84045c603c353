//! What every screen provides, and the table drawing they share.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{
    Block, Borders, Cell, HighlightSpacing, Paragraph, Row, Scrollbar, ScrollbarOrientation,
    ScrollbarState, Table, TableState,
};

use super::data::Data;
use super::effects::{Effect, EffectResult};
use super::keymap::Action;
use super::list::ListState;
use super::theme::{Role, Theme};
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

pub trait Screen {
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
    /// The Scorecard screen's state (tests).
    fn scorecard(&self) -> Option<&super::scorecard::ScorecardState> {
        None
    }
    /// The job a priority change applies to (by default: the one Enter would open).
    fn selected_job(&self, data: &Data, queue: Option<&str>) -> Option<(String, String)> {
        match self.enter(data, queue)? {
            Open::Job { queue, id } => Some((queue, id)),
            _ => None,
        }
    }
}

/// A bordered block titled with the screen name, filter and sort.
pub fn block<'a>(
    title: String,
    list: Option<&ListState>,
    columns: &[&str],
    theme: &Theme,
) -> Block<'a> {
    let mut spans = vec![Span::styled(format!(" {title} "), theme.style(Role::Title))];
    if let Some(l) = list {
        if l.filter.is_active() {
            spans.push(Span::styled(
                format!("/{} ", l.filter.text),
                theme.style(Role::Prompt),
            ));
        }
        if let Some(label) = sort_label(l, columns) {
            spans.push(Span::styled(label, theme.style(Role::Muted)));
        }
        spans.push(Span::styled(
            format!("[{}] ", l.rows.len()),
            theme.style(Role::Muted),
        ));
    }
    Block::default()
        .borders(Borders::ALL)
        .border_style(theme.style(Role::Border))
        .title(Line::from(spans))
}

/// Width of the selection marker column every table has.
pub const MARKER: &str = "▶ ";

/// Draws a list's visible rows as a table; `row` builds one row from a row index. The selected
/// row is marked and gets the `selected` role when `focused`. Returns the area of the first
/// visible row's line and the list offset, for screens that draw over rows (headings).
#[allow(clippy::too_many_arguments)]
pub fn draw_table<'a>(
    frame: &mut Frame,
    area: Rect,
    block: Block<'a>,
    header: &[impl AsRef<str>],
    widths: &[Constraint],
    list: &ListState,
    focused: bool,
    theme: &Theme,
    mut row: impl FnMut(usize) -> Vec<Cell<'a>>,
) -> (Rect, usize) {
    let inner = block.inner(area);
    let height = (inner.height as usize).saturating_sub(1);
    let (offset, rows) = list.visible(height);
    let rows: Vec<Row> = rows
        .iter()
        .map(|&r| Row::new(row(r)).style(theme.style(Role::Text)))
        .collect();
    let len = list.rows.len();
    let header = Row::new(header.iter().map(|h| Cell::from(h.as_ref().to_string())))
        .style(theme.style(Role::Header));
    let table = Table::new(rows, widths.to_vec())
        .header(header)
        .block(block)
        .column_spacing(1)
        .highlight_spacing(HighlightSpacing::Always)
        .highlight_symbol(if focused { MARKER } else { "  " })
        .row_highlight_style(if focused {
            theme.style(Role::Selected)
        } else {
            Style::new()
        });
    let mut state = TableState::default();
    if !list.rows.is_empty() && list.selected >= offset {
        state.select(Some(list.selected - offset));
    }
    frame.render_stateful_widget(table, area, &mut state);
    // On the right border, beside the rows (below the header line).
    let track = Rect {
        y: area.y.saturating_add(1),
        height: area.height.saturating_sub(1),
        ..area
    };
    scrollbar(frame, track, len, offset, height, theme);
    let first = Rect {
        y: inner.y.saturating_add(1),
        height: inner.height.saturating_sub(1),
        ..inner
    };
    (first, offset)
}

/// A scrollbar on the right border of `area` (a bordered pane) when `len` lines or rows do
/// not fit in the `viewport` shown from `offset`; nothing when they fit.
pub fn scrollbar(
    frame: &mut Frame,
    area: Rect,
    len: usize,
    offset: usize,
    viewport: usize,
    theme: &Theme,
) {
    if len <= viewport || viewport == 0 {
        return;
    }
    // One position per possible first line, so the thumb reaches the end with the last line.
    let mut state = ScrollbarState::new(len - viewport + 1)
        .viewport_content_length(viewport)
        .position(offset);
    let bar = Scrollbar::new(ScrollbarOrientation::VerticalRight)
        .begin_symbol(Some("▲"))
        .end_symbol(Some("▼"))
        .track_symbol(Some("│"))
        .thumb_symbol("█")
        .style(theme.style(Role::Border))
        .thumb_style(theme.style(Role::Accent));
    let inner = Rect {
        y: area.y.saturating_add(1),
        height: area.height.saturating_sub(2),
        ..area
    };
    frame.render_stateful_widget(bar, inner, &mut state);
}

/// Draws `lines` in `block` over `area` as a text pane scrolled by `scroll` (a
/// [`ListState::text_pane`]: it records the height and stops with the last line at the
/// bottom), with a scrollbar when they do not fit.
pub fn draw_text(
    frame: &mut Frame,
    area: Rect,
    block: Block,
    lines: Vec<Line>,
    scroll: &ListState,
    theme: &Theme,
) {
    let height = block.inner(area).height as usize;
    let len = lines.len();
    scroll.visible(height);
    let top = scroll.pane_top(height);
    frame.render_widget(
        Paragraph::new(lines)
            .block(block)
            .scroll((top.min(u16::MAX as usize) as u16, 0)),
        area,
    );
    scrollbar(frame, area, len, top, height, theme);
}

/// The table header with ▲ (ascending) or ▼ (descending) after the sorted column's name.
/// `columns[i]` is sort column `i`'s header index and whether its natural order is descending.
pub fn sorted_header(header: &[&str], list: &ListState, columns: &[(usize, bool)]) -> Vec<String> {
    let mut out: Vec<String> = header.iter().map(|h| (*h).to_string()).collect();
    if let Some(&(at, natural_down)) = columns.get(list.sort.column)
        && let Some(h) = out.get_mut(at)
    {
        h.push(if natural_down != list.sort.descending {
            '▼'
        } else {
            '▲'
        });
    }
    out
}

/// The widths `draw_table` gives its columns in `area` (inside the border, after the
/// selection marker, one space apart), so a screen can elide a cell to its column.
pub fn column_widths(area: Rect, widths: &[Constraint]) -> Vec<u16> {
    let inner = area.width.saturating_sub(2 + MARKER.chars().count() as u16);
    ratatui::layout::Layout::horizontal(widths.to_vec())
        .flex(ratatui::layout::Flex::Start)
        .spacing(1)
        .split(Rect::new(0, 0, inner, 1))
        .iter()
        .map(|r| r.width)
        .collect()
}

#[cfg(test)]
thread_local! {
    static WALKS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// How many times [`longest_name_and_reason`] ran on this thread (tests count the walks over
/// every row a frame would make).
#[cfg(test)]
pub fn walks() -> usize {
    WALKS.with(std::cell::Cell::get)
}

/// The longest cleaned name and reason (in characters) of a table's rows, for
/// [`name_width`]. Walks every row: screens call it when their rows change (snapshot, sort,
/// filter), never per frame (at 50,000 jobs the walk took 17 ms a frame).
pub fn longest_name_and_reason<'a>(
    rows: impl Iterator<Item = (&'a str, Option<&'a str>)>,
) -> (usize, usize) {
    #[cfg(test)]
    WALKS.with(|w| w.set(w.get() + 1));
    rows.fold((0, 0), |(name, reason), (n, r)| {
        (
            name.max(super::text::clean(n).chars().count()),
            reason.max(super::text::clean(r.unwrap_or("")).chars().count()),
        )
    })
}

/// The width of a name column beside a reason column sharing `room` characters: both whole
/// when they fit; else the reason gets what it needs as long as the name keeps two fifths of
/// the room (at least 18), and the name the rest. Spare width goes to the reason, not to blank
/// name cells.
pub fn name_width(room: u16, longest_name: usize, longest_reason: usize) -> u16 {
    let name = u16::try_from(longest_name).unwrap_or(u16::MAX).max(4);
    let reason = u16::try_from(longest_reason).unwrap_or(u16::MAX);
    if name.saturating_add(reason).saturating_add(1) <= room {
        return name;
    }
    let floor = name.min((room.saturating_mul(2) / 5).max(18));
    room.saturating_sub(reason.saturating_add(1))
        .clamp(floor, name)
        .min(room)
}

/// Room for a table title in a pane `width` wide, beside the filter, sort and row count
/// [`block`] adds (and the borders and padding).
pub fn title_room(width: u16, list: Option<&ListState>, columns: &[&str]) -> usize {
    let beside = list.map_or(0, |l| {
        sort_label(l, columns).map_or(0, |s| s.chars().count())
            + format!("[{}] ", l.rows.len()).len()
            + if l.filter.is_active() {
                l.filter.text.chars().count() + 2
            } else {
                0
            }
    });
    usize::from(width).saturating_sub(4 + beside)
}

/// `sort NAME` (and `, reversed`) for a title.
pub fn sort_label(list: &ListState, columns: &[&str]) -> Option<String> {
    let col = columns.get(list.sort.column)?;
    Some(if list.sort.descending {
        format!("sort {col}, reversed ")
    } else {
        format!("sort {col} ")
    })
}

/// `ml.p4d.24xlarge` → `p4d.24xlarge` (every SageMaker type starts with `ml.`).
pub fn short_type(t: &str) -> &str {
    t.strip_prefix("ml.").unwrap_or(t)
}

/// How long ago `at` was relative to `now`, or `-`.
pub fn since(now: Option<Millis>, at: Option<Millis>) -> String {
    match (now, at) {
        (Some(n), Some(a)) => super::text::duration(Some(n - a)),
        _ => "-".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spare_width_goes_to_the_reason() {
        // Both fit: the name as long as it is.
        assert_eq!(name_width(100, 30, 40), 30);
        // A long reason takes what the name can spare, down to two fifths of the room.
        assert_eq!(name_width(140, 69, 75), 64);
        assert_eq!(name_width(60, 69, 75), 24);
        // A short name never gets more than it needs.
        assert_eq!(name_width(60, 10, 75), 10);
        assert_eq!(name_width(20, 69, 75), 18);
    }
}
