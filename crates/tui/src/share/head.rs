//! The Share screen's head pane: its settings, a gauge per instance type, whom it borrows
//! from and lends to, and its last audited change, under the share's name.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use super::super::effects::LastShareChange;
use super::super::gauge;
use super::super::overview::strategy_label;
use super::super::screen;
use super::super::text::{clean, elide};
use super::super::theme::{Role, Theme};
use super::ShareScreen;
use quotatop_analysis::ShareUsage;

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
    if u.instance_type.is_empty() {
        return Line::from(Span::styled("no capacity limits", theme.style(Role::Warning)));
    }
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

/// The first steps of [`ShareScreen`]'s `draw`: the head pane's lines and the head.
impl ShareScreen {
    /// The head pane's lines under the badges: the share's settings, a gauge per instance
    /// type, whom it borrows from and lends to, and its last audited change.
    pub(super) fn head_lines(
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
        ];
        // Its configuration's status when AWS says it is not valid (UPDATING, INVALID, …).
        if let Some(st) = &s.status {
            first.push(Span::styled(" · status ", muted));
            first.push(Span::styled(clean(st).into_owned(), theme.style(Role::Warning)));
        }
        first.extend([
            Span::styled(" · runnable ", muted),
            Span::raw(v.runnable.get(&s.name).copied().unwrap_or(0).to_string()),
            Span::styled(" · preemptions ", muted),
            Span::styled(
                pre.map_or(0, |p| p.preemptions).to_string(),
                theme.style(Role::Preempted),
            ),
        ]);
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
    pub(super) fn draw_head(
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
}
