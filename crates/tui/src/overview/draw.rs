//! The steps of the Overview's draw: the table of the view with the source and queue headings
//! drawn over their rows, the title, the heights of the table and the panel, and what it says
//! when there is no queue.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::super::data::Data;
use super::super::screen::{self, DrawCtx};
use super::super::text::clean;
use super::super::theme::{Role, Theme};
use super::{Entry, Overview, PANEL_MIN, View, attention, sort, table};

impl Overview {
    /// A queue heading spans the whole row: name, state, status, environment and its capacity.
    fn draw_headings(
        &self,
        frame: &mut Frame,
        area: Rect,
        offset: usize,
        data: &Data,
        theme: &Theme,
    ) {
        let visible = self
            .list
            .rows
            .iter()
            .skip(offset)
            .take(area.height as usize);
        for (i, &r) in visible.enumerate() {
            let selected = offset + i == self.list.selected;
            let row = Rect {
                y: area.y + i as u16,
                height: 1,
                ..area
            };
            let line = match self.entries.get(r) {
                Some(Entry::Source(si)) => source_heading(data, *si, selected, theme),
                Some(Entry::Queue(qi)) => queue_heading(data, *qi, selected, area.width, theme),
                _ => None,
            };
            if let Some(line) = line {
                frame.render_widget(ratatui::widgets::Clear, row);
                frame.render_widget(line, row);
            }
        }
    }

    /// The table of the view: its columns laid out by [`screen::layout`], its rows from
    /// [`table`]; source and queue headings drawn over their rows.
    pub(super) fn draw_table(&self, frame: &mut Frame, area: Rect, table: table::Drawn<'_>) {
        let table::Drawn { view, block, data, theme } = table;
        let (mut header, mut cols) = table::columns(view, data);
        sort::mark_header(&mut header, &mut cols, view, self.list.sort);
        let widths = screen::layout(&cols, area.width);
        let cx = table::RowCtx {
            data,
            widths: &widths,
            theme,
        };
        let (rows_area, offset) = screen::draw_table(
            frame,
            area,
            screen::TableView {
                block,
                header: &header,
                widths: &widths,
                list: &self.list,
                focused: !self.panel_focused,
                marked: None,
            },
            theme,
            |r| match self.entries.get(r) {
                Some(Entry::Usage(qi, ui)) => match view {
                    View::Wide => table::wide_cells(&cx, *qi, *ui),
                    View::Compact => table::type_row_cells(&cx, *qi, *ui),
                    View::ByType => table::by_type_cells(&cx, *qi, *ui),
                },
                Some(Entry::Share(qi, ui)) => table::share_cells(&cx, *qi, *ui),
                Some(Entry::Type(qi, ty)) => table::type_heading_cells(&cx, *qi, ty),
                // A source or queue heading is drawn over the row below, across every column.
                _ => Vec::new(),
            },
        );
        self.draw_headings(frame, rows_area, offset, data, theme);
    }

    /// The title: the view in words, as long as fits.
    pub(super) fn title(&self, view: View, width: u16) -> String {
        let what = match view {
            View::Compact => ["Overview · one row per share", "Overview · per share"],
            View::Wide => [
                "Overview · a row per share and instance type",
                "Overview · per share × type",
            ],
            View::ByType => ["Overview · by instance type", "Overview · by type"],
        };
        let mut candidates: Vec<String> = what.iter().map(|s| (*s).to_string()).collect();
        candidates.push("Overview".to_string());
        super::super::text::first_fitting(
            &candidates,
            screen::title_room(width, Some(&self.list), sort::title_columns(&self.list)),
        )
    }

    /// The table's, the legend's and the panel's heights in `area`: the table as tall as its
    /// rows (borders and header included) and the panel as tall as its items, when both fit;
    /// else the panel takes what the table leaves (at least [`PANEL_MIN`] lines when the
    /// screen allows) and the table scrolls.
    pub(super) fn heights(&self, area: Rect, ctx: &DrawCtx) -> (u16, u16) {
        let wanted = u16::try_from(self.list.rows.len())
            .unwrap_or(u16::MAX)
            .saturating_add(3);
        let avail = area.height.saturating_sub(1);
        let panel_least = if self.attention.is_empty() {
            3
        } else {
            PANEL_MIN
        };
        let table_h = wanted
            .min(avail.saturating_sub(panel_least))
            .max(area.height.min(6));
        let left = avail.saturating_sub(table_h);
        let panel_h = if self.attention.is_empty() {
            3.min(left)
        } else {
            let key = ctx.keymap.first_key(super::Action::Requeue);
            attention::panel_height(ctx.data, ctx.queue, &self.attention, &key, area.width, left)
        };
        (table_h, panel_h)
    }
}

/// A queue's heading line: name, state and status, environment and its capacity per type.
/// Parts are dropped (environment, then state) before the capacity is cut, so every instance
/// type stays on the line. Selected, the line takes the selection's colours whole: a part
/// keeping its own colour could match the selection's background and vanish.
fn queue_heading(
    data: &Data,
    qi: usize,
    selected: bool,
    width: u16,
    theme: &Theme,
) -> Option<Line<'static>> {
    let q = data.queues().get(qi)?;
    let caps: Vec<String> = q
        .environment
        .capacity
        .iter()
        .map(|c| format!("{} {}", screen::short_type(&c.instance_type), c.max_capacity))
        .collect();
    let (title, muted) = if selected {
        (ratatui::style::Style::new(), ratatui::style::Style::new())
    } else {
        (theme.style(Role::Title), theme.style(Role::Muted))
    };
    let name = format!("▾ {}", clean(&q.name));
    let caps = caps.join(", ");
    let state = format!("  {} {}", clean(&q.state), clean(&q.status));
    let env = format!(" · env {}", clean(&q.environment.name));
    let room = usize::from(width).saturating_sub(2 + name.chars().count());
    let len = |on: bool, t: &str| if on { t.chars().count() } else { 0 };
    let (s, e) = [(true, true), (true, false), (false, false)]
        .into_iter()
        .find(|&(s, e)| {
            len(s, &state) + len(e, &env) + " · capacity ".len() + caps.chars().count() <= room
        })
        .unwrap_or((false, false));
    let pick = |on: bool, t: &str| if on { t.to_string() } else { String::new() };
    let line = Line::from(vec![
        Span::raw(if selected { screen::MARKER } else { "  " }),
        Span::styled(name, title),
        Span::styled(pick(s, &state), muted),
        Span::styled(format!("{} · capacity ", pick(e, &env)), muted),
        Span::raw(caps),
    ]);
    Some(if selected {
        line.style(theme.style(Role::Selected))
    } else {
        line
    })
}

/// A source's heading: its name, where it is (region, profile, endpoint) and its health in
/// words, the status bar's wording.
fn source_heading(data: &Data, si: usize, selected: bool, theme: &Theme) -> Option<Line<'static>> {
    let snap = data.snapshot.as_ref()?;
    let src = snap.sources.get(si)?;
    let (title, muted) = if selected {
        (ratatui::style::Style::new(), ratatui::style::Style::new())
    } else {
        (theme.style(Role::Title), theme.style(Role::Muted))
    };
    let mut place = vec![format!(
        "region {}",
        clean(src.source.region.as_deref().unwrap_or("-"))
    )];
    if let Some(p) = &src.source.profile {
        place.push(format!("profile {}", clean(p)));
    }
    if let Some(e) = &src.source.endpoint {
        place.push(format!("endpoint {}", clean(e)));
    }
    let health = super::super::status_bar::source_health(&src.verdict(&snap.queues), theme);
    let line = Line::from(vec![
        Span::raw(if selected { screen::MARKER } else { "  " }),
        Span::styled(format!("■ {}", clean(&src.name)), title),
        Span::styled(format!("  {} · ", place.join(" · ")), muted),
        if selected {
            Span::raw(health.content.into_owned())
        } else {
            health
        },
    ]);
    Some(if selected {
        line.style(theme.style(Role::Selected))
    } else {
        line
    })
}

/// What the Overview says when there is no queue to show: why, when a refresh failed.
pub(super) fn empty_text(data: &Data) -> String {
    match &data.snapshot {
        None => "waiting for the first refresh…".to_string(),
        Some(s) => match s.health.last_error.as_deref() {
            Some(e) => format!("no data yet: {}", clean(e)),
            None => "no quota-managed queue found".to_string(),
        },
    }
}
