//! What every screen provides, and the table drawing they share.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Row, Table};

use super::data::Data;
use super::list::ListState;
use super::theme::{Role, Theme};
use crate::model::Millis;

/// Which screen a view is (for titles, tests and `:` commands).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Overview,
    Share,
    Jobs,
    Preemptions,
    JobDetail,
}

/// What drawing needs besides the screen's own state.
pub struct DrawCtx<'a> {
    pub data: &'a Data,
    /// The current queue (`None`: the first one).
    pub queue: Option<&'a str>,
    pub theme: &'a Theme,
}

/// Where Enter leads.
pub enum Open {
    Share { queue: String, share: String },
    Job { queue: String, id: String },
    Jobs { queue: String },
}

pub trait Screen {
    fn kind(&self) -> Kind;
    /// Note which item is selected, by identity, before the data, filter or sort change, so
    /// [`Screen::refresh`] can keep it selected (row indices change with the data).
    fn remember(&mut self, _data: &Data) {}
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
    fn next_pane(&mut self) {}
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
        if let Some(col) = columns.get(l.sort.column) {
            let arrow = if l.sort.descending { '↓' } else { '↑' };
            spans.push(Span::styled(
                format!("sort {col}{arrow} "),
                theme.style(Role::Muted),
            ));
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

/// Draws a list's visible rows as a table; `row` builds one row from a row index. The selected
/// row gets the `selected` role when `focused`.
#[allow(clippy::too_many_arguments)]
pub fn draw_table<'a>(
    frame: &mut Frame,
    area: Rect,
    block: Block<'a>,
    header: &[&'a str],
    widths: &[Constraint],
    list: &ListState,
    focused: bool,
    theme: &Theme,
    mut row: impl FnMut(usize) -> Vec<Cell<'a>>,
) {
    let inner = block.inner(area);
    let height = (inner.height as usize).saturating_sub(1);
    let (offset, rows) = list.visible(height);
    let rows: Vec<Row> = rows
        .iter()
        .enumerate()
        .map(|(i, &r)| {
            let cells = row(r);
            let style = if focused && offset + i == list.selected {
                theme.style(Role::Selected)
            } else {
                theme.style(Role::Text)
            };
            Row::new(cells).style(style)
        })
        .collect();
    let header = Row::new(header.iter().map(|h| Cell::from(*h))).style(theme.style(Role::Header));
    let table = Table::new(rows, widths.to_vec())
        .header(header)
        .block(block)
        .column_spacing(1);
    frame.render_widget(table, area);
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
