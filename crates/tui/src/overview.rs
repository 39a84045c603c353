//! Overview: every queue and share; per instance type a bar of own use / borrowed / lent / idle,
//! the limit, strategy and borrow limit, in-share preemption, runnable jobs, preemptions, and a
//! sparkline of use over the session; per share its badges (loops, misconfigured jobs, whom it
//! borrows from and lends to); a legend; and below, the "needs attention" panel (Tab selects it,
//! Enter opens the job or share of a line).

mod attention;

pub use attention::badge_spans;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Cell;

use super::data::Data;
use super::effects::Effect;
use super::gauge;
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
/// queue heading or one share × instance type.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    Source(usize),
    Queue(usize),
    Usage(usize, usize),
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
}

const COLUMNS: &[&str] = &[];
const HEADER: [&str; 10] = [
    "SHARE", "STRATEGY", "ISP", "TYPE", "USAGE", "USED", "WAIT", "PRE", "FLAGS", "HISTORY",
];
/// Widths of every column but USAGE, FLAGS and HISTORY, which share the rest.
const FIXED: [u16; 7] = [11, 8, 3, 12, 5, 4, 3];
/// Below this many columns left for USAGE, FLAGS and HISTORY, HISTORY is left out.
const HISTORY_FROM: u16 = 40;
/// Lines the attention panel gets at least (borders included), when there is room.
const PANEL_MIN: u16 = 5;

impl Overview {
    pub fn new() -> Self {
        Self::default()
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
        Entry::Usage(qi, ui) => {
            let u = data.views.get(*qi)?.usage.get(*ui)?;
            Some((q.get(*qi)?.key(), u.share.clone(), u.instance_type.clone()))
        }
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
            if let Some(Entry::Source(si)) = self.entries.get(r) {
                if let Some(line) = source_heading(data, *si, selected, theme) {
                    frame.render_widget(ratatui::widgets::Clear, row);
                    frame.render_widget(line, row);
                }
                continue;
            }
            let Some(Entry::Queue(qi)) = self.entries.get(r) else {
                continue;
            };
            let Some(q) = data.queues().get(*qi) else {
                continue;
            };
            let caps: Vec<String> = q
                .environment
                .capacity
                .iter()
                .map(|c| {
                    format!(
                        "{} {}",
                        screen::short_type(&c.instance_type),
                        c.max_capacity
                    )
                })
                .collect();
            // Selected, the line takes the selection's colours whole: a part keeping its own
            // colour could match the selection's background and vanish.
            let (title, muted) = if selected {
                (ratatui::style::Style::new(), ratatui::style::Style::new())
            } else {
                (theme.style(Role::Title), theme.style(Role::Muted))
            };
            // Parts dropped (environment, then state) before the capacity is cut, so every
            // instance type stays on the line.
            let name = format!("▾ {}", clean(&q.name));
            let caps = caps.join(", ");
            let state = format!("  {} {}", clean(&q.state), clean(&q.status));
            let env = format!(" · env {}", clean(&q.environment.name));
            let room = usize::from(area.width).saturating_sub(2 + name.chars().count());
            let (state, env) = [(true, true), (true, false), (false, false)]
                .into_iter()
                .find(|&(s, e)| {
                    let len = |on: bool, t: &str| if on { t.chars().count() } else { 0 };
                    len(s, &state) + len(e, &env) + " · capacity ".len() + caps.chars().count()
                        <= room
                })
                .map_or((String::new(), String::new()), |(s, e)| {
                    (
                        if s { state.clone() } else { String::new() },
                        if e { env.clone() } else { String::new() },
                    )
                });
            let line = Line::from(vec![
                Span::raw(if selected { screen::MARKER } else { "  " }),
                Span::styled(name, title),
                Span::styled(state, muted),
                Span::styled(format!("{env} · capacity "), muted),
                Span::raw(caps),
            ]);
            let line = if selected {
                line.style(theme.style(Role::Selected))
            } else {
                line
            };
            frame.render_widget(ratatui::widgets::Clear, row);
            frame.render_widget(line, row);
        }
    }
}

impl Overview {
    /// The table of queues and shares: bars on a common scale per instance type and queue,
    /// badges per share; HISTORY only when there is room.
    fn draw_table(
        &self,
        frame: &mut Frame,
        area: Rect,
        block: ratatui::widgets::Block<'_>,
        data: &Data,
        theme: &Theme,
    ) {
        let inner_w = area.width.saturating_sub(2);
        // Columns, the spaces between them, and the selection marker.
        let fixed: u16 = FIXED.iter().sum::<u16>()
            + (HEADER.len() as u16 - 1)
            + screen::MARKER.chars().count() as u16;
        let rest = inner_w.saturating_sub(fixed);
        let (usage_w, flags_w, hist_w) = if rest < HISTORY_FROM {
            let flags = (attention::badge_width(data) as u16).min(rest * 3 / 5);
            (rest.saturating_sub(flags).max(4), flags, 0)
        } else {
            let flags = (attention::badge_width(data) as u16).min(rest * 3 / 10);
            let usage = (rest - flags) * 11 / 20;
            (usage, flags, rest - flags - usage)
        };
        let widths = [
            Constraint::Length(FIXED[0]),
            Constraint::Length(FIXED[1]),
            Constraint::Length(FIXED[2]),
            Constraint::Length(FIXED[3]),
            Constraint::Length(usage_w),
            Constraint::Length(FIXED[4]),
            Constraint::Length(FIXED[5]),
            Constraint::Length(FIXED[6]),
            Constraint::Length(flags_w),
            Constraint::Length(hist_w),
        ];
        let header: &[&str] = if hist_w == 0 {
            &HEADER[..HEADER.len() - 1]
        } else {
            &HEADER
        };
        let (rows_area, offset) = screen::draw_table(
            frame,
            area,
            block,
            header,
            &widths[..header.len()],
            &self.list,
            !self.panel_focused,
            theme,
            |r| {
                let Some(Entry::Usage(qi, ui)) = self.entries.get(r) else {
                    // A source or queue heading is drawn over the row below, across every
                    // column.
                    return Vec::new();
                };
                self.usage_cells(data, *qi, *ui, (usage_w, flags_w, hist_w), theme)
            },
        );
        self.draw_headings(frame, rows_area, offset, data, theme);
    }

    fn usage_cells(
        &self,
        data: &Data,
        qi: usize,
        ui: usize,
        (usage_w, flags_w, hist_w): (u16, u16, u16),
        theme: &Theme,
    ) -> Vec<Cell<'static>> {
        let (Some(q), Some(v)) = (data.queues().get(qi), data.views.get(qi)) else {
            return Vec::new();
        };
        let Some(u) = v.usage.get(ui) else {
            return Vec::new();
        };
        let first = ui == 0 || v.usage[ui - 1].share != u.share;
        let share = q.shares.iter().find(|s| s.name == u.share);
        let used_style = if u.borrowed > 0 {
            theme.style(Role::Borrowed)
        } else {
            theme.style(Role::Text)
        };
        let scale = gauge::type_scale(&v.usage, &u.instance_type);
        let mut cells = vec![
            Cell::from(if first {
                // Cut in the middle, so shares sharing a prefix stay distinct.
                super::text::elide(&clean(&u.share), FIXED[0] as usize)
            } else {
                String::new()
            }),
            Cell::from(if first {
                share.map(strategy_label).unwrap_or_default()
            } else {
                String::new()
            }),
            Cell::from(match share {
                Some(s) if first && s.in_share_preemption.enabled() => "on",
                _ => "",
            }),
            Cell::from(screen::short_type(&u.instance_type).to_string()),
            Cell::from(gauge::usage_bar(u, usage_w as usize, scale, theme)),
            Cell::from(Span::styled(format!("{}/{}", u.used, u.limit), used_style)),
        ];
        if first {
            let run = v.runnable.get(&u.share).copied().unwrap_or(0);
            let pre = v.share_preemptions.get(&u.share);
            let pre_n = pre.map_or(0, |p| p.preemptions);
            let pre_style = match pre {
                Some(p) if p.looping > 0 => theme.style(Role::Looping),
                Some(p) if p.preemptions > 0 => theme.style(Role::Preempted),
                _ => theme.style(Role::Text),
            };
            cells.push(Cell::from(run.to_string()));
            cells.push(Cell::from(Span::styled(pre_n.to_string(), pre_style)));
            cells.push(Cell::from(Line::from(attention::badge_spans(
                v.badges.get(&u.share),
                flags_w as usize,
                theme,
            ))));
        } else {
            cells.extend([Cell::from(""), Cell::from(""), Cell::from("")]);
        }
        if hist_w > 0 {
            let hist = data.history(&q.key(), &u.share, &u.instance_type);
            // One scale for the whole line: the limit, or the most it ever used.
            let max = hist
                .and_then(|h| h.iter().max().copied())
                .unwrap_or(0)
                .max(u.limit);
            cells.push(Cell::from(Line::from(gauge::sparkline(
                hist,
                max,
                hist_w as usize,
                theme,
            ))));
        }
        cells
    }
}

impl Screen for Overview {
    fn kind(&self) -> Kind {
        Kind::Overview
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
        let mut entries = Vec::new();
        let mut rows = Vec::new();
        let queues = data.queues();
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
                let (Some(q), Some(v)) = (queues.get(qi), data.views.get(qi)) else {
                    continue;
                };
                let head = entries.len();
                entries.push(Entry::Queue(qi));
                let mut kept = Vec::new();
                for (ui, u) in v.usage.iter().enumerate() {
                    entries.push(Entry::Usage(qi, ui));
                    let strategy = u.strategy.as_str();
                    if self.list.filter.matches([
                        u.share.as_str(),
                        u.instance_type.as_str(),
                        strategy,
                        q.name.as_str(),
                        q.source.as_deref().unwrap_or(""),
                    ]) {
                        kept.push(entries.len() - 1);
                    }
                }
                if !kept.is_empty() || !self.list.filter.is_active() {
                    rows.extend(head_row.take());
                    rows.push(head);
                    rows.extend(kept);
                }
            }
        }
        self.entries = entries;
        let keys: Vec<_> = self.entries.iter().map(|e| entry_key(data, e)).collect();
        self.list.set_rows(rows, |r| {
            previous.is_some() && keys.get(r).cloned().flatten() == previous
        });
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

    fn draw(&self, frame: &mut Frame, area: Rect, ctx: &DrawCtx) {
        let theme = ctx.theme;
        let data = ctx.data;
        let block = screen::block("Overview".to_string(), Some(&self.list), COLUMNS, theme);
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
        // The table as tall as its rows (borders and header included), then the legend, then
        // the attention panel in the rest (at least PANEL_MIN lines when the screen allows).
        let wanted = self.list.rows.len() as u16 + 3;
        let table_h = wanted
            .min(area.height.saturating_sub(PANEL_MIN + 1))
            .max(area.height.min(6));
        // The panel as tall as its items (one line saying "nothing" when there are none), so
        // an empty panel does not take half a tall screen; what is left stays blank.
        let panel_h = if self.attention.is_empty() {
            3
        } else {
            attention::panel_height(data, ctx.queue, &self.attention, area.width).max(PANEL_MIN)
        };
        let [table_area, legend_area, panel_area, _] = Layout::vertical([
            Constraint::Length(table_h),
            Constraint::Length(1),
            Constraint::Max(panel_h),
            Constraint::Fill(1),
        ])
        .areas(area);
        self.draw_table(frame, table_area, block, data, theme);
        frame.render_widget(attention::legend(area.width, theme), legend_area);
        if panel_area.height >= 3 {
            attention::draw_panel(
                frame,
                panel_area,
                data,
                ctx.queue,
                &self.attention,
                &self.attention_list,
                self.panel_focused,
                theme,
            );
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

    fn on_action(&mut self, action: Action, _ctx: &Ctx) -> Vec<Effect> {
        if action == Action::NextPane {
            self.panel_focused = !self.panel_focused && !self.attention.is_empty();
        }
        Vec::new()
    }

    fn enter(&self, data: &Data, _queue: Option<&str>) -> Option<Open> {
        if self.panel_focused {
            let at = *self.attention.get(self.attention_list.selected_row()?)?;
            return attention::open(data, at);
        }
        let entry = self.entries.get(self.list.selected_row()?)?;
        match entry {
            Entry::Source(_) => None,
            Entry::Queue(qi) => Some(Open::Jobs {
                queue: data.queues().get(*qi)?.key(),
            }),
            Entry::Usage(qi, ui) => Some(Open::Share {
                queue: data.queues().get(*qi)?.key(),
                share: data.views.get(*qi)?.usage.get(*ui)?.share.clone(),
            }),
        }
    }
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
