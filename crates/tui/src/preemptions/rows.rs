//! The Preemptions screen's rows: a preempted job's row, the attempts pane's title and rows,
//! and the jobs table's columns.

use ratatui::text::{Line, Span};
use ratatui::widgets::Cell;

use super::{NO_REASON, flags};
use crate::jobs::status_style;
use crate::screen;
use crate::text::{clean, clock, date_time, duration, elide, hours};
use crate::theme::{Role, Theme};
use quotatop_analysis::{AttemptRow, PreemptionFacts};

/// A preempted job's row: name and share elided to their columns' widths `w`, its flags and
/// retries left, the hours held (`+`: a lower bound) and when it was last preempted.
pub(super) fn job_row(f: &PreemptionFacts, w: &[usize], dated: bool, theme: &Theme) -> Vec<Cell<'static>> {
    let w = |i: usize| w.get(i).copied().unwrap_or(0);
    let mut flag_spans = Vec::new();
    for (text, role) in flags(f) {
        if !flag_spans.is_empty() {
            flag_spans.push(Span::raw(" "));
        }
        flag_spans.push(Span::styled(text, theme.style(role)));
    }
    if let Some(left) = f.retries_left {
        flag_spans.push(Span::styled(
            format!("{left} left"),
            theme.style(Role::Muted),
        ));
    }
    let partial = if f.loss_is_partial || f.starts_unknown > 0 {
        "+"
    } else {
        ""
    };
    vec![
        Cell::from(elide(&clean(&f.name), w(0))),
        Cell::from(elide(&clean(&f.share), w(1))),
        Cell::from(Span::styled(
            f.status.as_str(),
            status_style(f.status, theme),
        )),
        Cell::from(Span::styled(
            f.count.to_string(),
            theme.style(Role::Preempted),
        )),
        Cell::from(Line::from(flag_spans)),
        Cell::from(format!("{:.1}{partial}", f.instance_hours_lost)),
        Cell::from(format!("{}{partial}", hours(f.gpu_hours_lost))),
        Cell::from(if dated {
            date_time(f.recent.first().map(|a| a.stopped_at))
        } else {
            clock(f.recent.first().map(|a| a.stopped_at))
        }),
    ]
}

/// The attempts pane's title: the selected job's name elided to leave room for the count,
/// which is never dropped.
pub(super) fn attempts_title(
    selected: Option<&PreemptionFacts>,
    shown_len: usize,
    with_history: bool,
    width: u16,
) -> String {
    let what = if with_history {
        "Preempted attempts"
    } else {
        "Recent preempted attempts"
    };
    let Some(f) = selected else {
        return what.to_string();
    };
    let shown = if shown_len < f.count as usize {
        format!("{shown_len} shown of {}", f.count)
    } else {
        shown_len.to_string()
    };
    let room = usize::from(width).saturating_sub(4);
    let rest = format!(" · {shown} (newest first)");
    let name_room = room
        .saturating_sub(what.chars().count() + 3 + rest.chars().count())
        .max(8);
    crate::text::first_fitting(
        &[
            format!("{what} · {}{rest}", elide(&clean(&f.name), name_room)),
            format!("{} · {shown}", elide(&clean(&f.name), name_room)),
        ],
        room,
    )
}

/// A preempted attempt's row: started, stopped, how long it ran, and why it stopped.
pub(super) fn attempt_row(a: &AttemptRow, theme: &Theme) -> Vec<Cell<'static>> {
    let (start, ran) = if a.start_unknown() {
        ("start unknown".to_string(), "unknown".to_string())
    } else {
        (date_time(a.started_at), duration(a.ran()))
    };
    vec![
        Cell::from(start),
        Cell::from(date_time(a.stopped_at)),
        Cell::from(ran),
        Cell::from(Span::styled(
            a.reason
                .as_deref()
                .map_or_else(|| NO_REASON.to_string(), |r| clean(r).into_owned()),
            theme.style(Role::Muted),
        )),
    ]
}

/// The columns of the jobs table for [`screen::layout`]: names whole when they can be (at
/// least 14), the status, count and flags (LOOP, OVER BUDGET) always; the last preemption's
/// time goes first, then the hours.
pub(super) fn top_columns(
    q: &quotatop_model::QueueSnapshot,
    v: &crate::data::QueueView,
) -> [screen::Col; 8] {
    use screen::{Col, drop_order};
    let names = v.preemptions.iter().map(|f| clean(&f.name).chars().count());
    let shares = q.shares.iter().map(|s| clean(&s.name).chars().count());
    [
        Col::text(14, names.max().unwrap_or(0), drop_order::KEPT),
        Col::text(10, shares.max().unwrap_or(0), 1),
        Col::fixed(9, drop_order::KEPT),
        Col::fixed(4, drop_order::KEPT),
        // Room for every flag (OVER BUDGET LOOP ∞retry) once the rest have theirs.
        Col::text(12, 24, drop_order::KEPT),
        Col::fixed(6, 3),
        Col::fixed(6, 2),
        Col::text(9, 20, drop_order::HISTORY),
    ]
}
