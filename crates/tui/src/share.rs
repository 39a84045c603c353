//! Share: one quota share's capacity, whom it borrows from and lends to, its running jobs, and
//! its queue in dispatch order with priority and waiting time.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Paragraph};

use std::sync::Arc;

use super::data::Data;
use super::effects::{
    Effect, EffectResult, LastShareChange, ScreenWork, ShareChangeError, ShareChangeReader,
};
use super::gauge;
use super::jobs::status_style;
use super::keymap::Action;
use super::list::ListState;
use super::overview::{badge_spans, strategy_label};
use super::registry::{Opens, ScreenEntry};
use super::screen::{Col, self, Ctx, DrawCtx, Kind, Load, Open, Screen};
use super::text::{clean, duration, elide};
use super::theme::{Role, Theme};
use quotatop_analysis::{self as analysis, ShareUsage};

/// Its entry in the screen registry (the `screens!` list in `lib.rs`).
pub const ENTRY: ScreenEntry = ScreenEntry {
    kind: Kind::Share,
    opens: Opens::FromAnother,
    key: None,
    command: None,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pane {
    Running,
    Queued,
}

#[derive(Debug)]
pub struct ShareScreen {
    queue: String,
    share: String,
    running: ListState,
    queued: ListState,
    focus: Pane,
    remembered: (Option<String>, Option<String>),
    /// The longest cleaned name and reason among the queued rows (in characters), computed
    /// with the rows, not per frame.
    queued_longest: (usize, usize),
    /// The last audited change of the share's configuration, once loaded (`None`: not asked,
    /// or no audit log).
    last_change: Option<Option<LastShareChange>>,
}

impl ShareScreen {
    pub fn new(queue: String, share: String) -> Self {
        Self {
            queue,
            share,
            running: ListState::default(),
            queued: ListState::default(),
            focus: Pane::Queued,
            remembered: (None, None),
            queued_longest: (0, 0),
            last_change: None,
        }
    }
}

/// The share's last audited configuration change, read from the audit log (`Ok(None)`: the log
/// has none).
#[derive(Debug, Clone, PartialEq, Eq)]
struct LastChangeAnswer {
    queue: String,
    share: String,
    result: Result<Option<LastShareChange>, ShareChangeError>,
}

/// The Share screen's own work: reading the audit log for the share's last change.
fn last_change_work(queue: &str, share: &str) -> Effect {
    let (queue, share) = (queue.to_string(), share.to_string());
    Effect::Screen(ScreenWork::new(
        Kind::Share,
        move |reader: Option<&Arc<dyn ShareChangeReader>>| LastChangeAnswer {
            queue: queue.clone(),
            share: share.clone(),
            result: match reader {
                Some(r) => r.last_change(&queue, &share),
                None => Err(ShareChangeError::NoLog),
            },
        },
    ))
}

/// `share N×type, …`, each share's name elided to `name_w` characters.
fn partners(
    rows: &[&ShareUsage],
    pick: impl Fn(&ShareUsage) -> &Vec<(String, u32)>,
    name_w: usize,
) -> String {
    let parts: Vec<String> = rows
        .iter()
        .flat_map(|u| {
            pick(u).iter().map(move |(s, n)| {
                format!(
                    "{} {}×{}",
                    elide(&clean(s), name_w),
                    n,
                    screen::short_type(&u.instance_type)
                )
            })
        })
        .collect();
    if parts.is_empty() {
        "—".to_string()
    } else {
        parts.join(", ")
    }
}

/// A gauge line of one instance type: `type ████░░ used/limit own N borrowed N lent N idle N`.
fn usage_line(u: &ShareUsage, bar_w: usize, theme: &Theme) -> Line<'static> {
    let muted = theme.style(Role::Muted);
    let mut spans = vec![Span::raw(format!(
        "{:<13}",
        screen::short_type(&u.instance_type)
    ))];
    spans.extend(gauge::usage_bar(u, bar_w, 0, theme).spans);
    spans.push(Span::raw(format!(" {:>3}/{:<3}", u.used, u.limit)));
    spans.push(Span::styled(" own ", muted));
    spans.push(Span::styled(u.own_used.to_string(), theme.style(Role::Own)));
    spans.push(Span::styled(" borrowed ", muted));
    spans.push(Span::styled(
        u.borrowed.to_string(),
        theme.style(Role::Borrowed),
    ));
    spans.push(Span::styled(" lent ", muted));
    spans.push(Span::styled(u.lent.to_string(), theme.style(Role::Lent)));
    spans.push(Span::styled(" idle ", muted));
    spans.push(Span::styled(u.idle.to_string(), theme.style(Role::Idle)));
    Line::from(spans)
}

/// `borrows from … · lends to …`: whole share names when the line has room for them, else
/// elided in the middle.
fn partners_line(usage: &[&ShareUsage], line_room: usize, theme: &Theme) -> Line<'static> {
    let muted = theme.style(Role::Muted);
    let (borrows, lends) = [usize::MAX, 24, 16, 10]
        .into_iter()
        .map(|w| {
            (
                partners(usage, |u| &u.borrowed_from, w),
                partners(usage, |u| &u.lent_to, w),
            )
        })
        .find(|(b, l)| {
            "borrows from  · lends to ".len() + b.chars().count() + l.chars().count() <= line_room
        })
        .unwrap_or_else(|| {
            (
                partners(usage, |u| &u.borrowed_from, 10),
                partners(usage, |u| &u.lent_to, 10),
            )
        });
    Line::from(vec![
        Span::styled("borrows from ", muted),
        Span::styled(borrows, theme.style(Role::Borrowed)),
        Span::styled(" · lends to ", muted),
        Span::styled(lends, theme.style(Role::Lent)),
    ])
}

/// The last audited change as one line: `2026-11-30 23:53 user@host UpdateQuotaShare
/// borrowLimit: 200% -> 100% · succeeded · CHG-1042`; `none audited` when there is none.
pub fn last_change_text(c: Option<&LastShareChange>) -> String {
    let Some(c) = c else {
        return "none audited".to_string();
    };
    let time = c.time.get(..16).unwrap_or(&c.time).replace('T', " ");
    let mut out = format!(
        "{time} {} {} {} · {}",
        c.operator, c.call, c.detail, c.outcome
    );
    if let Some(r) = &c.change_record {
        out.push_str(&format!(" · {r}"));
    }
    clean(&out).into_owned()
}

/// The steps of [`ShareScreen`]'s `draw`: the head pane's lines, the head, the running jobs and
/// the queue.
impl ShareScreen {
    /// The head pane's lines under the badges: the share's settings, a gauge per instance
    /// type, whom it borrows from and lends to, and its last audited change.
    fn head_lines(
        &self,
        q: &quotatop_model::QueueSnapshot,
        v: &crate::data::QueueView,
        usage: &[&ShareUsage],
        width: u16,
        theme: &Theme,
    ) -> Vec<Line<'static>> {
        let mut lines = vec![self.settings_line(q, v, theme)];
        let bar_w = (width as usize)
            .saturating_sub(2)
            .saturating_sub(52)
            .clamp(8, 30);
        lines.extend(usage.iter().map(|u| usage_line(u, bar_w, theme)));
        // Whole share names when the line has room for them, else elided in the middle.
        let line_room = usize::from(width).saturating_sub(2);
        lines.push(partners_line(usage, line_room, theme));
        lines.extend(self.last_change_lines(line_room, theme));
        lines
    }

    /// `strategy … · in-share preemption … · state · runnable N · preemptions N`.
    fn settings_line(
        &self,
        q: &quotatop_model::QueueSnapshot,
        v: &crate::data::QueueView,
        theme: &Theme,
    ) -> Line<'static> {
        let muted = theme.style(Role::Muted);
        let Some(s) = q.shares.iter().find(|s| s.name == self.share) else {
            return Line::from(Span::styled(
                "share not in the queue's configuration",
                theme.style(Role::Warning),
            ));
        };
        let pre = v.share_preemptions.get(&s.name);
        let mut first = vec![
            Span::styled("strategy ", muted),
            Span::raw(strategy_label(s)),
            Span::styled(" · in-share preemption ", muted),
            Span::raw(if s.in_share_preemption.enabled() {
                "on"
            } else {
                "off"
            }),
            Span::styled(" · ", muted),
            Span::raw(s.state.as_str()),
            Span::styled(" · runnable ", muted),
            Span::raw(v.runnable.get(&s.name).copied().unwrap_or(0).to_string()),
            Span::styled(" · preemptions ", muted),
            Span::styled(
                pre.map_or(0, |p| p.preemptions).to_string(),
                theme.style(Role::Preempted),
            ),
        ];
        if let Some(p) = pre.filter(|p| p.looping > 0) {
            first.push(Span::styled(
                format!(" ({} looping)", p.looping),
                theme.style(Role::Looping),
            ));
        }
        Line::from(first)
    }

    /// `last change …` (when loaded) and, when there is one, its `why` on a line of its own:
    /// at 80 columns it no longer falls off the end of the change.
    fn last_change_lines(&self, line_room: usize, theme: &Theme) -> Vec<Line<'static>> {
        let muted = theme.style(Role::Muted);
        let Some(last) = &self.last_change else {
            return Vec::new();
        };
        let label = "last change ";
        let mut lines = vec![Line::from(vec![
            Span::styled(label, muted),
            Span::raw(elide(
                &last_change_text(last.as_ref()),
                line_room.saturating_sub(label.len()),
            )),
        ])];
        if let Some(c) = last {
            let label = "  why       ";
            lines.push(Line::from(vec![
                Span::styled(label, muted),
                Span::raw(elide(
                    &clean(&c.justification),
                    line_room.saturating_sub(label.len()),
                )),
            ]));
        }
        lines
    }

    /// The head pane: `lines` under the share's name (elided in the middle when long; the
    /// queue's `queue_key` dropped before that).
    fn draw_head(
        &self,
        frame: &mut Frame,
        head: Rect,
        lines: Vec<Line>,
        queue_key: &str,
        theme: &Theme,
    ) {
        let room = usize::from(head.width).saturating_sub(4);
        let name = clean(&self.share);
        let title = Line::from(Span::styled(
            format!(
                " {} ",
                crate::text::first_fitting(
                    &[
                        format!("Share {name} · {}", clean(queue_key)),
                        format!("Share {}", elide(&name, room.saturating_sub(6))),
                    ],
                    room,
                )
            ),
            theme.style(Role::Title),
        ));
        frame.render_widget(
            Paragraph::new(lines).block(
                Block::default()
                    .borders(Borders::ALL)
                    .border_style(theme.style(Role::Border))
                    .title(title),
            ),
            head,
        );
    }

    /// The share's running jobs.
    fn draw_running(
        &self,
        frame: &mut Frame,
        running_area: Rect,
        q: &quotatop_model::QueueSnapshot,
        theme: &Theme,
    ) {
        let now = analysis::now_of(q);
        let running_block = screen::block("Running".into(), Some(&self.running), &[], theme);
        let header = ["NAME", "STATUS", "PRI", "TYPE×N", "RUNNING", "PRE"].map(String::from);
        // Running jobs are bounded by the share's capacity: measured here, per frame.
        let longest = self
            .running
            .rows
            .iter()
            .filter_map(|&r| q.jobs.get(r))
            .map(|t| clean(&t.job.name).chars().count())
            .max()
            .unwrap_or(0);
        let widths = screen::layout(&running_columns(longest), running_area.width);
        let name_w = usize::from(widths[0]);
        screen::draw_table(
            frame,
            running_area,
            screen::TableView {
                block: running_block,
                header: &header,
                widths: &widths,
                list: &self.running,
                focused: self.focus == Pane::Running,
            },
            theme,
            |r| {
                let Some(t) = q.jobs.get(r) else {
                    return Vec::new();
                };
                let j = &t.job;
                vec![
                    Cell::from(elide(&clean(&j.name), name_w)),
                    Cell::from(Span::styled(
                        j.status.as_str(),
                        status_style(j.status, theme),
                    )),
                    Cell::from(j.priority.to_string()),
                    Cell::from(format!(
                        "{}×{}",
                        screen::short_type(&j.instance_type),
                        j.instance_count
                    )),
                    Cell::from(screen::since(now, j.started_at.or(j.scheduled_at))),
                    Cell::from(Span::styled(
                        match j.preemption_count() {
                            0 => String::new(),
                            n => n.to_string(),
                        },
                        theme.style(Role::Preempted),
                    )),
                ]
            },
        );
    }

    /// The share's queued jobs in dispatch order.
    fn draw_queued(
        &self,
        frame: &mut Frame,
        queued_area: Rect,
        v: &crate::data::QueueView,
        theme: &Theme,
    ) {
        let muted = theme.style(Role::Muted);
        let queued_block = screen::block(
            "Queue (dispatch order)".into(),
            Some(&self.queued),
            &[],
            theme,
        );
        let header =
            ["POS", "#", "NAME", "PRI", "TYPE×N", "WAITING", "REASON"].map(String::from);
        let widths = screen::layout(&queued_columns(self.queued_longest), queued_area.width);
        let queued_name_w = usize::from(widths[2]);
        screen::draw_table(
            frame,
            queued_area,
            screen::TableView {
                block: queued_block,
                header: &header,
                widths: &widths,
                list: &self.queued,
                focused: self.focus == Pane::Queued,
            },
            theme,
            |r| {
                let Some(j) = v.dispatch.get(r) else {
                    return Vec::new();
                };
                let reason_style = if j.misconfigured {
                    theme.style(Role::Critical)
                } else {
                    muted
                };
                vec![
                    Cell::from(j.queue_position.to_string()),
                    Cell::from(j.share_position.to_string()),
                    Cell::from(elide(&clean(&j.name), queued_name_w)),
                    Cell::from(
                        j.priority
                            .map_or_else(|| "…".to_string(), |p| p.to_string()),
                    ),
                    Cell::from(format!(
                        "{}×{}",
                        screen::short_type(&j.instance_type),
                        j.instance_count
                    )),
                    Cell::from(duration(j.waiting_ms)),
                    Cell::from(Span::styled(
                        clean(j.reason.as_deref().unwrap_or("")).into_owned(),
                        reason_style,
                    )),
                ]
            },
        );
    }
}

impl Screen for ShareScreen {
    fn kind(&self) -> Kind {
        Kind::Share
    }

    fn load(&mut self, why: Load, _ctx: &Ctx) -> Vec<Effect> {
        if why == Load::Moved {
            return Vec::new();
        }
        vec![last_change_work(&self.queue, &self.share)]
    }

    fn on_result(&mut self, result: &EffectResult, _ctx: &Ctx) -> Vec<Effect> {
        if let Some(r) = result.answer::<LastChangeAnswer>(Kind::Share)
            && r.queue == self.queue
            && r.share == self.share
        {
            // Without an audit log (or when it cannot be read) the line is left out.
            self.last_change = r.result.clone().ok();
        }
        Vec::new()
    }

    fn remember(&mut self, data: &Data) {
        let Some((q, v)) = data.queue(Some(&self.queue)) else {
            return;
        };
        self.remembered = (
            self.running
                .selected_row()
                .and_then(|r| q.jobs.get(r))
                .map(|j| j.job.id.clone()),
            self.queued
                .selected_row()
                .and_then(|r| v.dispatch.get(r))
                .map(|j| j.job_id.clone()),
        );
    }

    fn refresh(&mut self, data: &Data, _queue: Option<&str>) {
        let (run_prev, queue_prev) = std::mem::take(&mut self.remembered);
        let Some((q, v)) = data
            .queue(Some(&self.queue))
            .filter(|(q, _)| q.key() == self.queue)
        else {
            self.running.set_rows(Vec::new(), |_| false);
            self.queued.set_rows(Vec::new(), |_| false);
            self.queued_longest = (0, 0);
            return;
        };
        let running: Vec<usize> = analysis::running_jobs(q, Some(&self.share))
            .into_iter()
            .filter_map(|t| v.job_index.get(&q.jobs, &t.job.id))
            .filter(|&i| {
                let j = &q.jobs[i].job;
                self.running
                    .filter
                    .matches([j.name.as_str(), j.id.as_str(), j.status.as_str()])
            })
            .collect();
        self.running.set_rows(running, |r| {
            run_prev.as_deref() == q.jobs.get(r).map(|j| j.job.id.as_str())
        });
        let queued: Vec<usize> = v
            .dispatch
            .iter()
            .enumerate()
            .filter(|(_, j)| j.share == self.share)
            .filter(|(_, j)| {
                self.queued.filter.matches([
                    j.name.as_str(),
                    j.job_id.as_str(),
                    j.reason.as_deref().unwrap_or(""),
                ])
            })
            .map(|(i, _)| i)
            .collect();
        self.queued_longest = screen::longest_name_and_reason(
            queued
                .iter()
                .filter_map(|&r| v.dispatch.get(r))
                .map(|j| (j.name.as_str(), j.reason.as_deref())),
        );
        self.queued.set_rows(queued, |r| {
            queue_prev.as_deref() == v.dispatch.get(r).map(|j| j.job_id.as_str())
        });
    }

    fn draw(&self, frame: &mut Frame, area: Rect, ctx: &DrawCtx) {
        let theme = ctx.theme;
        let Some((q, v)) = ctx
            .data
            .queue(Some(&self.queue))
            .filter(|(q, _)| q.key() == self.queue)
        else {
            frame.render_widget(
                Paragraph::new(format!("queue {} is gone", clean(&self.queue))),
                area,
            );
            return;
        };
        let usage: Vec<&ShareUsage> = v.usage.iter().filter(|u| u.share == self.share).collect();
        let badges = badge_spans(
            v.badges.get(&self.share),
            area.width.saturating_sub(2) as usize,
            theme,
        );
        let header_h = (usage.len() as u16
            + 4
            + u16::from(!badges.is_empty())
            // "last change …", and its reason on a line of its own when there is one.
            + match &self.last_change {
                Some(Some(_)) => 2,
                Some(None) => 1,
                None => 0,
            })
        .min(area.height / 2);
        let [head, running_area, queued_area] = Layout::vertical([
            Constraint::Length(header_h),
            Constraint::Percentage(40),
            Constraint::Fill(1),
        ])
        .areas(area);
        let mut lines = Vec::new();
        if !badges.is_empty() {
            lines.push(Line::from(badges));
        }
        lines.extend(self.head_lines(q, v, &usage, head.width, theme));
        self.draw_head(frame, head, lines, &q.key(), theme);
        self.draw_running(frame, running_area, q, theme);
        self.draw_queued(frame, queued_area, v, theme);
    }

    fn list(&mut self) -> Option<&mut ListState> {
        Some(match self.focus {
            Pane::Running => &mut self.running,
            Pane::Queued => &mut self.queued,
        })
    }

    fn list_ref(&self) -> Option<&ListState> {
        Some(match self.focus {
            Pane::Running => &self.running,
            Pane::Queued => &self.queued,
        })
    }

    fn has_panes(&self) -> bool {
        true
    }

    fn on_action(&mut self, action: Action, _ctx: &Ctx) -> Vec<Effect> {
        if action == Action::NextPane {
            self.focus = match self.focus {
                Pane::Running => Pane::Queued,
                Pane::Queued => Pane::Running,
            };
        }
        Vec::new()
    }

    fn enter(&self, data: &Data, _queue: Option<&str>) -> Option<Open> {
        let (q, v) = data.queue(Some(&self.queue))?;
        let id = match self.focus {
            Pane::Running => q.jobs.get(self.running.selected_row()?)?.job.id.clone(),
            Pane::Queued => v.dispatch.get(self.queued.selected_row()?)?.job_id.clone(),
        };
        Some(Open::Job {
            queue: self.queue.clone(),
            id,
        })
    }
}

/// The running table's columns for [`screen::layout`]: the name whole when it can be (at least
/// 16) and growing, the status always.
fn running_columns(longest: usize) -> [Col; 6] {
    [
        Col {
            grow: 1,
            ..Col::text(16, longest, 0)
        },
        Col::fixed(9, 0),
        Col::fixed(4, 2),
        Col::fixed(15, 1),
        Col::fixed(8, 3),
        Col::fixed(3, 4),
    ]
}

/// The queue table's columns: the name whole when it can be (at least 16), then the reason
/// takes the rest; `longest`: the longest name and reason.
fn queued_columns(longest: (usize, usize)) -> [Col; 7] {
    [
        Col::fixed(4, 0),
        Col::fixed(3, 4),
        Col::text(16, longest.0, 0),
        Col::fixed(4, 3),
        Col::fixed(15, 1),
        Col::fixed(8, 2),
        Col {
            grow: 1,
            ..Col::text(12, longest.1, 5)
        },
    ]
}
