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

/// What [`draw_table`] draws, travelling together: the block, the header, the column widths
/// from [`layout`] (a column of width 0 is left out, header and cells alike), the list and
/// whether it has the focus.
pub struct TableView<'a, 'b> {
    pub block: Block<'a>,
    pub header: &'b [String],
    pub widths: &'b [u16],
    pub list: &'b ListState,
    pub focused: bool,
}

/// Draws a list's visible rows as a table; `row` builds one row (every column's cell) from a
/// row index. The selected row is marked and gets the `selected` role when focused. Returns
/// the area of the first visible row's line and the list offset, for screens that draw over
/// rows (headings).
pub fn draw_table<'a>(
    frame: &mut Frame,
    area: Rect,
    view: TableView<'a, '_>,
    theme: &Theme,
    mut row: impl FnMut(usize) -> Vec<Cell<'a>>,
) -> (Rect, usize) {
    let TableView {
        block,
        header,
        widths,
        list,
        focused,
    } = view;
    let keep = |cells: Vec<Cell<'a>>| shown_cells(cells, widths);
    let inner = block.inner(area);
    let height = (inner.height as usize).saturating_sub(1);
    let (offset, rows) = list.visible(height);
    let rows: Vec<Row> = rows
        .iter()
        .map(|&r| Row::new(keep(row(r))).style(theme.style(Role::Text)))
        .collect();
    let len = list.rows.len();
    let header = Row::new(keep(header.iter().map(|h| Cell::from(h.clone())).collect()))
        .style(theme.style(Role::Header));
    let table = Table::new(rows, shown_constraints(widths))
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

/// The cells of the columns [`layout`] kept (width above 0; a cell past the widths stays).
pub fn shown_cells<'a>(cells: Vec<Cell<'a>>, widths: &[u16]) -> Vec<Cell<'a>> {
    cells
        .into_iter()
        .enumerate()
        .filter(|(i, _)| widths.get(*i).is_none_or(|w| *w > 0))
        .map(|(_, c)| c)
        .collect()
}

/// The constraints of the columns [`layout`] kept.
pub fn shown_constraints(widths: &[u16]) -> Vec<Constraint> {
    widths
        .iter()
        .filter(|w| **w > 0)
        .map(|w| Constraint::Length(*w))
        .collect()
}

/// One column of a table, as [`layout`] sizes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Col {
    /// The least it is shown at (its header, its widest figure).
    pub min: u16,
    /// What its content needs whole (the longest name, `trn1.32xlarge`); spare room gives
    /// every column this, the columns never dropped first, before anything grows.
    pub want: u16,
    /// Its part of the room left once every column has its `want` (bars, sparklines); 0: none.
    pub grow: u16,
    /// 0: never dropped; else the order it goes in when the row is short, highest first.
    pub drop: u8,
}

impl Col {
    /// A column always `w` wide (a figure, a status).
    pub const fn fixed(w: u16, drop: u8) -> Self {
        Self {
            min: w,
            want: w,
            grow: 0,
            drop,
        }
    }

    /// Text as long as `longest`, shown at least `min` wide (cut in the middle below that).
    pub fn text(min: u16, longest: usize, drop: u8) -> Self {
        let want = u16::try_from(longest).unwrap_or(u16::MAX).max(min);
        Self {
            min: min.min(want),
            want,
            grow: 0,
            drop,
        }
    }

    /// A graphic (a bar, a sparkline): at least `min`, then `grow` parts of what is left.
    pub const fn graphic(min: u16, grow: u16, drop: u8) -> Self {
        Self {
            min,
            want: min,
            grow,
            drop,
        }
    }
}

/// The one column layout every table uses: the widths of `cols` in a row of `width` columns
/// (a table pane's whole width: borders and the selection marker are taken off, and one space
/// between the columns shown). What does not fit at its `min` is dropped (width 0), highest
/// `drop` first, never a column of `drop` 0 (a name whose `min` is its whole length stays whole
/// while anything else can go); one dropped early comes back if it fits once a wider one went.
/// Then every column gets its `want` (the never-dropped first: names before anything grows),
/// and only then do the growing columns (bars, sparklines) share the rest. Only when the
/// columns never dropped do not fit at all are the widest cut.
pub fn layout(cols: &[Col], width: u16) -> Vec<u16> {
    layout_in(
        cols,
        width.saturating_sub(2 + MARKER.chars().count() as u16),
    )
}

/// [`layout`] in `room` columns exactly (a table drawn without borders or marker).
pub fn layout_in(cols: &[Col], room: u16) -> Vec<u16> {
    let mut widths = drop_to_fit(cols, cols.iter().map(|c| c.min).collect(), room);
    while used(&widths) > room {
        match (0..cols.len())
            .filter(|&i| widths[i] > 1)
            .max_by_key(|&i| widths[i])
        {
            Some(i) => widths[i] -= 1,
            None => break,
        }
    }
    grow(cols, &mut widths, room);
    widths
}

/// The room `widths` take, one space between the columns shown.
fn used(widths: &[u16]) -> u16 {
    let n = widths.iter().filter(|w| **w > 0).count() as u16;
    widths.iter().sum::<u16>() + n.saturating_sub(1)
}

/// `widths` with columns dropped, highest `drop` first, until they fit `room` (or only
/// columns never dropped are left); then those dropped that fit again come back.
fn drop_to_fit(cols: &[Col], mut widths: Vec<u16>, room: u16) -> Vec<u16> {
    while used(&widths) > room {
        let droppable = (0..cols.len())
            .filter(|&i| widths[i] > 0 && cols[i].drop > 0)
            .max_by_key(|&i| (cols[i].drop, i));
        match droppable {
            Some(i) => widths[i] = 0,
            None => break,
        }
    }
    let mut dropped: Vec<usize> = (0..cols.len()).filter(|&i| widths[i] == 0).collect();
    dropped.sort_by_key(|&i| cols[i].drop);
    for i in dropped {
        if cols[i].min > 0 && used(&widths) + cols[i].min < room {
            widths[i] = cols[i].min;
        }
    }
    widths
}

/// The spare room of `widths`: every column to its `want` (never dropped first), then the
/// growing ones by weight.
fn grow(cols: &[Col], widths: &mut [u16], room: u16) {
    let mut spare = room.saturating_sub(used(widths));
    let mut order: Vec<usize> = (0..cols.len()).filter(|&i| widths[i] > 0).collect();
    order.sort_by_key(|&i| cols[i].drop);
    for &i in &order {
        let more = cols[i].want.saturating_sub(widths[i]).min(spare);
        widths[i] += more;
        spare -= more;
    }
    let weights: u16 = order.iter().map(|&i| cols[i].grow).sum();
    if weights == 0 {
        return;
    }
    let share = spare;
    for &i in &order {
        let more = (u32::from(share) * u32::from(cols[i].grow) / u32::from(weights)) as u16;
        widths[i] += more;
        spare -= more;
    }
    // The remainder to the first growing columns, a cell each.
    for &i in order
        .iter()
        .filter(|&&i| cols[i].grow > 0)
        .cycle()
        .take(spare.into())
    {
        widths[i] += 1;
    }
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
    mut lines: Vec<Line>,
    scroll: &ListState,
    theme: &Theme,
) {
    let len = lines.len();
    let pane = TextPane {
        area,
        block,
        len,
        scroll,
        theme,
    };
    draw_text_window(frame, pane, |shown| lines.drain(shown).collect());
}

/// A text pane of `len` lines, for [`draw_text_window`].
pub struct TextPane<'b, 's> {
    pub area: Rect,
    pub block: Block<'b>,
    pub len: usize,
    pub scroll: &'s ListState,
    pub theme: &'s Theme,
}

/// [`draw_text`] for a long text: `shown` builds only the lines in the range the pane shows
/// (the lines are not wrapped, so line `i` is row `i - top`), not every line each frame.
pub fn draw_text_window<'a>(
    frame: &mut Frame,
    pane: TextPane,
    shown: impl FnOnce(std::ops::Range<usize>) -> Vec<Line<'a>>,
) {
    let height = pane.block.inner(pane.area).height as usize;
    pane.scroll.visible(height);
    let top = pane.scroll.pane_top(height).min(pane.len);
    let lines = shown(top..pane.len.min(top.saturating_add(height)));
    #[cfg(test)]
    count(Counted::LinesBuilt, lines.len());
    frame.render_widget(Paragraph::new(lines).block(pane.block), pane.area);
    scrollbar(frame, pane.area, pane.len, top, height, pane.theme);
}

/// How many lines text panes built on this thread (tests check a long pane builds only what
/// it shows).
#[cfg(test)]
pub fn lines_built() -> usize {
    counted(Counted::LinesBuilt)
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

/// How many times [`longest_name_and_reason`] ran on this thread (tests count the walks over
/// every row a frame would make).
#[cfg(test)]
pub fn walks() -> usize {
    counted(Counted::Walks)
}

/// The longest cleaned name and reason (in characters) of a table's rows, for
/// [`name_width`]. Walks every row: screens call it when their rows change (snapshot, sort,
/// filter), never per frame (at 50,000 jobs the walk took 17 ms a frame).
pub fn longest_name_and_reason<'a>(
    rows: impl Iterator<Item = (&'a str, Option<&'a str>)>,
) -> (usize, usize) {
    #[cfg(test)]
    count(Counted::Walks, 1);
    rows.fold((0, 0), |(name, reason), (n, r)| {
        (
            name.max(super::text::clean(n).chars().count()),
            reason.max(super::text::clean(r.unwrap_or("")).chars().count()),
        )
    })
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

    fn col(min: u16, want: u16, grow: u16, drop: u8) -> Col {
        Col {
            min,
            want,
            grow,
            drop,
        }
    }

    /// A row of 40 columns leaves 36 inside the borders and the marker.
    #[test]
    fn names_are_whole_before_bars_grow() {
        let cols = [col(8, 30, 0, 0), col(6, 6, 3, 0), col(4, 4, 0, 1)];
        // 30 + 6 + 4 + 2 spaces = 42 > 36: nothing drops (the fixed column fits at its min),
        // the name gets what is left after the others' minimum.
        assert_eq!(layout(&cols, 40), vec![24, 6, 4]);
        // Room for all: the name whole first, then the bar grows.
        assert_eq!(layout(&cols, 60), vec![30, 20, 4]);
    }

    #[test]
    fn what_does_not_fit_is_dropped_by_priority() {
        let cols = [
            col(10, 10, 0, 0),
            col(5, 5, 0, 2),
            col(5, 5, 0, 1),
            col(5, 5, 0, 3),
        ];
        // 36 inside: everything (10+5+5+5+3 = 28).
        assert_eq!(layout(&cols, 40), vec![10, 5, 5, 5]);
        // 20 inside: drop 3 goes, then drop 2 (10+5+1 = 16).
        assert_eq!(layout(&cols, 24), vec![10, 0, 5, 0]);
        // 10 inside: only the column never dropped is left.
        assert_eq!(layout(&cols, 14), vec![10, 0, 0, 0]);
        // Less than that: it gives way rather than overflow.
        assert_eq!(layout(&cols, 10), vec![6, 0, 0, 0]);
        // A name whole when dropping the optional columns makes room for it.
        let cols = [col(20, 20, 0, 0), col(6, 6, 0, 1), col(6, 6, 0, 2)];
        assert_eq!(layout(&cols, 32), vec![20, 6, 0]);
        // A name that may be cut (min below its length) leaves them and takes what is left.
        let cols = [col(8, 20, 0, 0), col(6, 6, 0, 1), col(6, 6, 0, 2)];
        assert_eq!(layout(&cols, 32), vec![14, 6, 6]);
        // A narrow column dropped before a wide one comes back when the wide one went.
        let cols = [
            col(10, 10, 0, 0),
            col(3, 3, 0, 1),
            col(8, 8, 0, 2),
            col(2, 2, 0, 3),
        ];
        assert_eq!(layout(&cols, 24), vec![10, 3, 0, 2]);
    }

    #[test]
    fn growing_columns_share_the_rest_by_weight() {
        let cols = [col(4, 4, 0, 0), col(2, 2, 1, 0), col(2, 2, 3, 0)];
        // 96 inside: 4 + 2 + 2 + 2 spaces = 10; 86 left, a quarter and three quarters.
        let w = layout(&cols, 100);
        assert_eq!(w.iter().sum::<u16>() + 2, 96);
        assert_eq!(w, vec![4, 2 + 21 + 1, 2 + 64]);
    }
}
