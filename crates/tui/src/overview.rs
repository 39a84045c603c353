//! Overview: every queue and share, in one of three views (the table's columns in
//! [`table`]):
//! - one row per share (compact, by default when the per-type rows do not fit): a bar in GPUs
//!   over all its instance types, its most constrained type, runnable jobs, preemptions, badges;
//!   space expands one share to its per-type rows;
//! - a row per share and instance type (wide, `w`, k9s's convention): a bar of own use /
//!   borrowed / lent / idle per type, the limit, strategy, in-share preemption and a sparkline;
//! - by instance type (`i`): per type the environment's capacity, then each share's use, what
//!   it borrows and from whom, what it lends and to whom ("who has the p5s?").
//!
//! A legend, and below, the "needs attention" panel, as tall as its items up to what the table
//! leaves (Tab selects it, Enter opens the job or share of a line).

mod attention;
mod table;

pub use attention::badge_spans;

use std::collections::BTreeSet;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};

use super::data::Data;
use super::effects::Effect;
use super::keymap::Action;
use super::list::ListState;
use super::registry::{Opens, ScreenCommand, ScreenEntry, ScreenKey};
use super::screen::{self, Ctx, DrawCtx, Kind, Open, Screen};
use super::text::clean;
use super::theme::{Role, Theme};
use quotatop_model::{QuotaShare, SharingStrategy};

/// Its entry in the screen registry (the `screens!` list in `lib.rs`).
pub const ENTRY: ScreenEntry = ScreenEntry {
    kind: Kind::Overview,
    opens: Opens::Root,
    key: Some(ScreenKey {
        name: "overview",
        keys: &["1"],
        description: "overview: queues and shares",
        hint: Some("screens"),
    }),
    command: Some(ScreenCommand {
        names: &["shares", "overview", "o", "1"],
        help: "queues and shares",
    }),
};

/// One row: a source heading (with `[[sources]]`: its index in the snapshot's `sources`), a
/// queue heading, a share on one row, one share × instance type, or an instance type's heading.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    Source(usize),
    Queue(usize),
    /// (queue, its first usage row).
    Share(usize, usize),
    /// (queue, usage row).
    Usage(usize, usize),
    /// (queue, instance type).
    Type(usize, String),
}

/// Which table the Overview shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    /// One row per share (and the per-type rows of the shares expanded).
    Compact,
    /// A row per share and instance type.
    Wide,
    /// Per instance type, the shares that have or use it.
    ByType,
}

#[derive(Debug, Default)]
pub struct Overview {
    entries: Vec<Entry>,
    list: ListState,
    remembered: Option<(String, String, String)>,
    /// The attention panel's items, (queue index, item index).
    attention: Vec<(usize, usize)>,
    attention_list: ListState,
    /// The attention panel has the focus (Tab).
    panel_focused: bool,
    /// `w`: the wide view or not; `None`: wide when its rows fit.
    wide: Option<bool>,
    /// Shares expanded in the compact view: (queue key, share).
    expanded: BTreeSet<(String, String)>,
    /// `i`: by instance type.
    by_type: bool,
    /// Lines of the screen at the last draw (the automatic choice of view reads it).
    room: u16,
}

const COLUMNS: &[&str] = &[];
/// Lines the attention panel gets at least (borders included), when there is room.
const PANEL_MIN: u16 = 5;
const OWN_ACTIONS: &[Action] = &[Action::Wide, Action::Expand, Action::ByType];

impl Overview {
    pub fn new() -> Self {
        Self::default()
    }

    /// The view shown.
    pub fn view(&self, data: &Data) -> View {
        if self.by_type {
            View::ByType
        } else if self.wide.unwrap_or_else(|| self.wide_fits(data)) {
            View::Wide
        } else {
            View::Compact
        }
    }

    /// Whether every row of the wide view fits in the room, with the legend and the panel's
    /// least.
    fn wide_fits(&self, data: &Data) -> bool {
        let sources = data.snapshot.as_ref().map_or(0, |s| s.sources.len());
        let rows = sources + data.queues().len() + data.views.iter().map(|v| v.usage.len()).sum::<usize>();
        let panel = if attention::items(data).is_empty() {
            3
        } else {
            PANEL_MIN
        };
        rows + 3 + 1 + usize::from(panel) <= usize::from(self.room)
    }

    /// The share of the selected row (a share, or one of its per-type rows).
    fn selected_share(&self, data: &Data) -> Option<(String, String)> {
        let (qi, ui) = match self.entries.get(self.list.selected_row()?)? {
            Entry::Share(qi, ui) | Entry::Usage(qi, ui) => (*qi, *ui),
            _ => return None,
        };
        let share = data.views.get(qi)?.usage.get(ui)?.share.clone();
        Some((data.queues().get(qi)?.key(), share))
    }
}

/// `RESERVE`, `LEND`, `L&B 200%`, `L&B ∞`.
pub fn strategy_label(s: &QuotaShare) -> String {
    match s.sharing.strategy {
        SharingStrategy::LendAndBorrow => match s.sharing.borrow_percent() {
            None => "L&B ∞".to_string(),
            Some(p) => format!("L&B {p}%"),
        },
        other => other.as_str().to_string(),
    }
}

fn entry_key(data: &Data, e: &Entry) -> Option<(String, String, String)> {
    let q = data.queues();
    match e {
        Entry::Source(si) => {
            let name = &data.snapshot.as_ref()?.sources.get(*si)?.name;
            Some((String::new(), "source".to_string(), name.clone()))
        }
        Entry::Queue(qi) => Some((q.get(*qi)?.key(), String::new(), String::new())),
        Entry::Share(qi, ui) => {
            let u = data.views.get(*qi)?.usage.get(*ui)?;
            Some((q.get(*qi)?.key(), u.share.clone(), String::new()))
        }
        Entry::Usage(qi, ui) => {
            let u = data.views.get(*qi)?.usage.get(*ui)?;
            Some((q.get(*qi)?.key(), u.share.clone(), u.instance_type.clone()))
        }
        Entry::Type(qi, ty) => Some((q.get(*qi)?.key(), "type".to_string(), ty.clone())),
    }
}

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
    fn draw_table(&self, frame: &mut Frame, area: Rect, table: table::Drawn<'_>) {
        let table::Drawn { view, block, data, theme } = table;
        let (header, cols) = table::columns(view, data);
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

    /// The rows of queue `qi` in `view`: its heading's entry, and the rows the filter keeps.
    fn queue_rows(
        &self,
        data: &Data,
        qi: usize,
        view: View,
        entries: &mut Vec<Entry>,
    ) -> Option<(usize, Vec<usize>)> {
        let (q, v) = (data.queues().get(qi)?, data.views.get(qi)?);
        let head = entries.len();
        entries.push(Entry::Queue(qi));
        let filter = &self.list.filter;
        let matches = |u: &quotatop_analysis::ShareUsage| {
            filter.matches([
                u.share.as_str(),
                u.instance_type.as_str(),
                u.strategy.as_str(),
                q.name.as_str(),
                q.source.as_deref().unwrap_or(""),
            ])
        };
        let mut kept = Vec::new();
        let mut push = |e: Entry, keep: bool, entries: &mut Vec<Entry>| {
            entries.push(e);
            if keep {
                kept.push(entries.len() - 1);
            }
        };
        match view {
            View::Wide => {
                for (ui, u) in v.usage.iter().enumerate() {
                    push(Entry::Usage(qi, ui), matches(u), entries);
                }
            }
            View::Compact => {
                for (first, rows) in table::shares_of(&v.usage) {
                    let share = &v.usage[first].share;
                    let keep = rows.iter().any(|&ui| matches(&v.usage[ui]));
                    push(Entry::Share(qi, first), keep, entries);
                    if self.expanded.contains(&(q.key(), share.clone())) {
                        for ui in rows {
                            push(Entry::Usage(qi, ui), keep, entries);
                        }
                    }
                }
            }
            View::ByType => {
                for (ty, rows) in table::types_of(q, &v.usage) {
                    let keep: Vec<bool> = rows.iter().map(|&ui| matches(&v.usage[ui])).collect();
                    push(Entry::Type(qi, ty), keep.contains(&true), entries);
                    for (ui, k) in rows.into_iter().zip(keep) {
                        push(Entry::Usage(qi, ui), k, entries);
                    }
                }
            }
        }
        Some((head, kept))
    }

    /// The panel's rows after its filter.
    fn refresh_attention(&mut self, data: &Data) {
        self.attention = attention::items(data);
        let filter = &self.attention_list.filter;
        let shown: Vec<usize> = (0..self.attention.len())
            .filter(|&i| {
                attention::text_of(data, self.attention[i])
                    .is_some_and(|(tag, share, text)| filter.matches([tag, share, text]))
            })
            .collect();
        self.attention_list.set_rows(shown, |_| false);
    }

    /// The title: the view in words, as long as fits.
    fn title(&self, view: View, width: u16) -> String {
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
        super::text::first_fitting(
            &candidates,
            screen::title_room(width, Some(&self.list), COLUMNS),
        )
    }

    /// The table's, the legend's and the panel's heights in `area`: the table as tall as its
    /// rows (borders and header included) and the panel as tall as its items, when both fit;
    /// else the panel takes what the table leaves (at least [`PANEL_MIN`] lines when the
    /// screen allows) and the table scrolls.
    fn heights(&self, area: Rect, ctx: &DrawCtx) -> (u16, u16) {
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
            attention::panel_height(ctx.data, ctx.queue, &self.attention, area.width, left)
        };
        (table_h, panel_h)
    }
}

impl Screen for Overview {
    fn kind(&self) -> Kind {
        Kind::Overview
    }

    fn own_actions(&self) -> &'static [Action] {
        OWN_ACTIONS
    }

    fn fit(&mut self, area: Rect, data: &Data, queue: Option<&str>) {
        if area.height == self.room {
            return;
        }
        let before = self.view(data);
        self.room = area.height;
        if self.view(data) != before {
            self.remember(data);
            self.refresh(data, queue);
        }
    }

    fn remember(&mut self, data: &Data) {
        self.remembered = self
            .list
            .selected_row()
            .and_then(|r| self.entries.get(r))
            .and_then(|e| entry_key(data, e));
    }

    fn refresh(&mut self, data: &Data, _queue: Option<&str>) {
        let previous = self.remembered.take();
        let view = self.view(data);
        let mut entries = Vec::new();
        let mut rows = Vec::new();
        for (heading, group) in groups(data) {
            // With sources, each one's heading, then its queues: shown while one of its queues
            // is, or with no filter (a source whose every call fails has no queue to show).
            let mut head_row = heading.map(|si| {
                entries.push(Entry::Source(si));
                entries.len() - 1
            });
            if !self.list.filter.is_active() {
                rows.extend(head_row.take());
            }
            for qi in group {
                let Some((head, kept)) = self.queue_rows(data, qi, view, &mut entries) else {
                    continue;
                };
                if !kept.is_empty() || !self.list.filter.is_active() {
                    rows.extend(head_row.take());
                    rows.push(head);
                    rows.extend(kept);
                }
            }
        }
        self.entries = entries;
        let keys: Vec<_> = self.entries.iter().map(|e| entry_key(data, e)).collect();
        // The same row, else (after a change of view) the row of the same share.
        let same_share = |k: &Option<(String, String, String)>| match (k, &previous) {
            (Some((q, s, _)), Some((pq, ps, _))) => q == pq && s == ps && !s.is_empty(),
            _ => false,
        };
        let exact = keys.iter().any(|k| previous.is_some() && *k == previous);
        self.list.set_rows(rows, |r| {
            let k = keys.get(r).cloned().flatten();
            if exact {
                previous.is_some() && k == previous
            } else {
                same_share(&k)
            }
        });
        self.refresh_attention(data);
    }

    fn draw(&self, frame: &mut Frame, area: Rect, ctx: &DrawCtx) {
        let theme = ctx.theme;
        let data = ctx.data;
        let view = self.view(data);
        let block = screen::block(self.title(view, area.width), Some(&self.list), COLUMNS, theme);
        if data.queues().is_empty() {
            let msg = empty_text(data);
            frame.render_widget(
                ratatui::widgets::Paragraph::new(Span::styled(msg, theme.style(Role::Muted)))
                    .wrap(ratatui::widgets::Wrap { trim: true })
                    .block(block),
                area,
            );
            return;
        }
        let (table_h, panel_h) = self.heights(area, ctx);
        let [table_area, legend_area, panel_area, _] = Layout::vertical([
            Constraint::Length(table_h),
            Constraint::Length(1),
            Constraint::Length(panel_h),
            Constraint::Fill(1),
        ])
        .areas(area);
        let drawn = table::Drawn {
            view,
            block,
            data,
            theme,
        };
        self.draw_table(frame, table_area, drawn);
        frame.render_widget(attention::legend(area.width, view, theme), legend_area);
        if panel_area.height >= 3 {
            let panel = attention::Panel {
                data,
                current: ctx.queue,
                rows: &self.attention,
                list: &self.attention_list,
                focused: self.panel_focused,
            };
            attention::draw_panel(frame, panel_area, &panel, theme);
        }
    }

    fn list(&mut self) -> Option<&mut ListState> {
        Some(if self.panel_focused {
            &mut self.attention_list
        } else {
            &mut self.list
        })
    }

    fn list_ref(&self) -> Option<&ListState> {
        Some(if self.panel_focused {
            &self.attention_list
        } else {
            &self.list
        })
    }

    fn on_action(&mut self, action: Action, ctx: &Ctx) -> Vec<Effect> {
        let data = ctx.data;
        match action {
            Action::NextPane => {
                self.panel_focused = !self.panel_focused && !self.attention.is_empty();
                return Vec::new();
            }
            Action::Wide => {
                self.wide = Some(self.by_type || self.view(data) != View::Wide);
                self.by_type = false;
            }
            Action::ByType => self.by_type = !self.by_type,
            Action::Expand => {
                if self.view(data) != View::Compact {
                    return Vec::new();
                }
                if let Some(key) = self.selected_share(data)
                    && !self.expanded.remove(&key)
                {
                    self.expanded.insert(key);
                }
            }
            _ => return Vec::new(),
        }
        self.remember(data);
        self.refresh(data, ctx.queue);
        Vec::new()
    }

    fn enter(&self, data: &Data, _queue: Option<&str>) -> Option<Open> {
        if self.panel_focused {
            let at = *self.attention.get(self.attention_list.selected_row()?)?;
            return attention::open(data, at);
        }
        let entry = self.entries.get(self.list.selected_row()?)?;
        match entry {
            Entry::Source(_) | Entry::Type(..) => None,
            Entry::Queue(qi) => Some(Open::Jobs {
                queue: data.queues().get(*qi)?.key(),
            }),
            Entry::Share(qi, ui) | Entry::Usage(qi, ui) => Some(Open::Share {
                queue: data.queues().get(*qi)?.key(),
                share: data.views.get(*qi)?.usage.get(*ui)?.share.clone(),
            }),
        }
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

/// The Overview's groups of queue indices: one without a heading when there are no sources;
/// else one per source in the snapshot's order (its heading even when it has no queue), then
/// any queue of no known source.
fn groups(data: &Data) -> Vec<(Option<usize>, Vec<usize>)> {
    let queues = data.queues();
    let sources = data.snapshot.as_ref().map_or(&[][..], |s| &s.sources[..]);
    if sources.is_empty() {
        return vec![(None, (0..queues.len()).collect())];
    }
    let of = |name: Option<&str>| -> Vec<usize> {
        let same = |(qi, q): (usize, &quotatop_model::QueueSnapshot)| {
            (q.source.as_deref() == name).then_some(qi)
        };
        queues.iter().enumerate().filter_map(same).collect()
    };
    let mut out: Vec<(Option<usize>, Vec<usize>)> = sources
        .iter()
        .enumerate()
        .map(|(si, s)| (Some(si), of(Some(&s.name))))
        .collect();
    let orphans: Vec<usize> = queues
        .iter()
        .enumerate()
        .filter(|(_, q)| {
            !sources
                .iter()
                .any(|s| q.source.as_deref() == Some(s.name.as_str()))
        })
        .map(|(qi, _)| qi)
        .collect();
    if !orphans.is_empty() {
        out.push((None, orphans));
    }
    out
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
    let health = super::status_bar::source_health(&src.verdict(&snap.queues), theme);
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
fn empty_text(data: &Data) -> String {
    match &data.snapshot {
        None => "waiting for the first refresh…".to_string(),
        Some(s) => match s.health.last_error.as_deref() {
            Some(e) => format!("no data yet: {}", clean(e)),
            None => "no quota-managed queue found".to_string(),
        },
    }
}
