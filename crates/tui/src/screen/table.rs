//! The table drawing every screen shares: the titled block, the table of a list's visible rows
//! with its sorted header, and the cell text helpers (names, types, ages).

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, HighlightSpacing, Row, Table, TableState};

use super::scrollbar;
#[cfg(test)]
use super::{Counted, count, counted};
use crate::list::ListState;
use crate::theme::{Role, Theme};
use quotatop_model::Millis;

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
    /// Which rows are marked (drawn in the `marked` role); `None`: the table has no marks.
    pub marked: Option<&'b dyn Fn(usize) -> bool>,
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
        marked,
    } = view;
    let keep = |cells: Vec<Cell<'a>>| shown_cells(cells, widths);
    let inner = block.inner(area);
    let height = (inner.height as usize).saturating_sub(1);
    let (offset, rows) = list.visible(height);
    let rows: Vec<Row> = rows
        .iter()
        .map(|&r| {
            let role = if marked.is_some_and(|m| m(r)) {
                Role::Marked
            } else {
                Role::Text
            };
            Row::new(keep(row(r))).style(theme.style(role))
        })
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
            name.max(crate::text::clean(n).chars().count()),
            reason.max(crate::text::clean(r.unwrap_or("")).chars().count()),
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
        (Some(n), Some(a)) => crate::text::duration(Some(n - a)),
        _ => "-".to_string(),
    }
}
