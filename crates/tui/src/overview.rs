//! Overview: every queue and share, in one of three views (its rows in [`rows`], the table's
//! columns and cells in [`table`], the rest of its drawing in [`draw`]):
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
mod attention_group;
mod badge_fit;
mod draw;
mod rows;
mod sort;
mod table;

#[cfg(test)]
mod limitless_tests;

pub use attention::badge_spans;
use draw::empty_text;
use rows::{entry_key, groups};

use std::collections::BTreeSet;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Span;

use super::data::Data;
use super::effects::Effect;
use super::keymap::Action;
use super::list::ListState;
use super::registry::{Opens, ScreenCommand, ScreenEntry, ScreenKey};
use super::screen::{self, Ctx, DrawCtx, Kind, Open, Screen};
use super::theme::Role;
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
        let columns = sort::title_columns(&self.list);
        let block = screen::block(self.title(view, area.width), Some(&self.list), columns, theme);
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
                requeue_key: &ctx.keymap.first_key(Action::Requeue),
            };
            attention::draw_panel(frame, panel_area, &panel, theme);
        }
    }

    fn sort_columns(&self) -> &'static [&'static str] {
        sort::COLUMNS
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
