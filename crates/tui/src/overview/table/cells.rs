//! The cells of each kind of the Overview tables' rows: a share on one row, an expanded
//! share's type row, a share × instance type, an instance type's heading and a share under it.

use std::collections::VecDeque;

use ratatui::text::{Line, Span};
use ratatui::widgets::Cell;

use crate::data::Data;
use crate::gauge;
use crate::overview::{attention, strategy_label};
use crate::screen;
use crate::text::{clean, elide};
use crate::theme::Role;
use quotatop_analysis::{ShareTotals, ShareUsage, gpu_weight, share_totals};

use super::{RowCtx, flow_text, shares_of, tightest_label, type_figures};

/// What a share with no capacity limits shows for its instance type.
const NO_LIMITS: &str = "no limits";

/// The share's WAIT, PRE and FLAGS cells (on its first row only).
fn share_tail(cx: &RowCtx, qi: usize, share: &str, flags_col: usize) -> [Cell<'static>; 3] {
    let theme = cx.theme;
    let Some(v) = cx.data.views.get(qi) else {
        return [Cell::from(""), Cell::from(""), Cell::from("")];
    };
    let run = v.runnable.get(share).copied().unwrap_or(0);
    let pre = v.share_preemptions.get(share);
    let pre_n = pre.map_or(0, |p| p.preemptions);
    let pre_style = match pre {
        Some(p) if p.looping > 0 => theme.style(Role::Looping),
        Some(p) if p.preemptions > 0 => theme.style(Role::Preempted),
        _ => theme.style(Role::Text),
    };
    [
        Cell::from(run.to_string()),
        Cell::from(Span::styled(pre_n.to_string(), pre_style)),
        Cell::from(Line::from(attention::badge_spans(
            v.badges.get(share),
            cx.w(flags_col),
            theme,
        ))),
    ]
}

/// The share's strategy and in-share preemption cells.
fn share_head(cx: &RowCtx, qi: usize, share: &str) -> [Cell<'static>; 2] {
    let s = cx
        .data
        .queues()
        .get(qi)
        .and_then(|q| q.shares.iter().find(|s| s.name == share));
    [
        Cell::from(s.map(strategy_label).unwrap_or_default()),
        Cell::from(match s {
            Some(s) if s.in_share_preemption.enabled() => "on",
            _ => "",
        }),
    ]
}

/// The share's name cut to `width`, and its status when AWS says it is not valid
/// (`UPDATING`, `INVALID`, …), as a warning.
fn share_name(cx: &RowCtx, qi: usize, share: &str, width: usize) -> Cell<'static> {
    let status = cx
        .data
        .queues()
        .get(qi)
        .and_then(|q| q.shares.iter().find(|s| s.name == share))
        .and_then(|s| s.status.as_deref())
        .map(|st| format!(" {}", clean(st)));
    let Some(status) = status else {
        return Cell::from(elide(&clean(share), width));
    };
    let room = width.saturating_sub(status.chars().count()).max(4);
    Cell::from(Line::from(vec![
        Span::raw(elide(&clean(share), room)),
        Span::styled(status, cx.theme.style(Role::Warning)),
    ]))
}

/// A share on one row (compact view): its bar in GPUs over every instance type, on one scale
/// for the queue's shares, and its most constrained type.
pub fn share_cells(cx: &RowCtx, qi: usize, ui: usize) -> Vec<Cell<'static>> {
    let (Some(q), Some(v)) = (cx.data.queues().get(qi), cx.data.views.get(qi)) else {
        return Vec::new();
    };
    let Some(u) = v.usage.get(ui) else {
        return Vec::new();
    };
    let share = u.share.as_str();
    let t = share_totals(&v.usage, share);
    let scale = shares_of(&v.usage)
        .iter()
        .map(|(f, _)| bar_total(&share_totals(&v.usage, &v.usage[*f].share)))
        .max()
        .unwrap_or(0);
    let used_style = if t.borrowed > 0 {
        cx.theme.style(Role::Borrowed)
    } else {
        cx.theme.style(Role::Text)
    };
    let [strategy, isp] = share_head(cx, qi, share);
    let [wait, pre, flags] = share_tail(cx, qi, share, 8);
    let hist = share_history(cx.data, &q.key(), &v.usage, share);
    let max = hist.iter().max().copied().unwrap_or(0).max(t.limit);
    vec![
        share_name(cx, qi, share, cx.w(0)),
        strategy,
        isp,
        Cell::from(gauge::totals_bar(&t, cx.w(3), scale, cx.theme)),
        Cell::from(Span::styled(format!("{}/{}", t.used, t.limit), used_style)),
        Cell::from(tightest_label(&v.usage, share)),
        wait,
        pre,
        flags,
        Cell::from(Line::from(gauge::sparkline(
            Some(&hist),
            max,
            cx.w(9),
            cx.theme,
        ))),
    ]
}

fn bar_total(t: &ShareTotals) -> u32 {
    t.own_used + t.borrowed + t.lent + t.idle
}

/// A share's use over the session in GPUs: its types' samples, weighted, summed from the
/// newest back.
fn share_history(data: &Data, queue: &str, usage: &[ShareUsage], share: &str) -> VecDeque<u32> {
    let mut sum: Vec<u32> = Vec::new();
    for u in usage.iter().filter(|u| u.share == share) {
        let Some(h) = data.history(queue, share, &u.instance_type) else {
            continue;
        };
        let g = gpu_weight(&u.instance_type);
        for (i, v) in h.iter().rev().enumerate() {
            if sum.len() <= i {
                sum.push(0);
            }
            sum[i] += v * g;
        }
    }
    sum.into_iter().rev().collect()
}

/// An expanded share's row of one instance type (compact view): the type under the share,
/// its bar (on the type's scale), its use in GPUs, whom it borrows from and lends to.
pub fn type_row_cells(cx: &RowCtx, qi: usize, ui: usize) -> Vec<Cell<'static>> {
    let (Some(q), Some(v)) = (cx.data.queues().get(qi), cx.data.views.get(qi)) else {
        return Vec::new();
    };
    let Some(u) = v.usage.get(ui) else {
        return Vec::new();
    };
    let last = v.usage.get(ui + 1).is_none_or(|n| n.share != u.share);
    let name = format!(
        "{} {}",
        if last { "└" } else { "├" },
        screen::short_type(&u.instance_type)
    );
    let g = gpu_weight(&u.instance_type);
    let scale = gauge::type_scale(&v.usage, &u.instance_type);
    let mut flows = Vec::new();
    if u.borrowed > 0 {
        flows.push(format!(
            "← {}",
            flow_text(u.borrowed, &u.borrowed_from, "from", cx.w(8))
        ));
    }
    if u.lent > 0 {
        flows.push(format!("→ {}", flow_text(u.lent, &u.lent_to, "to", cx.w(8))));
    }
    let hist = cx.data.history(&q.key(), &u.share, &u.instance_type);
    let max = hist
        .and_then(|h| h.iter().max().copied())
        .unwrap_or(0)
        .max(u.limit);
    vec![
        Cell::from(Span::styled(
            format!("  {}", elide(&name, cx.w(0).saturating_sub(2))),
            cx.theme.style(Role::Muted),
        )),
        Cell::from(""),
        Cell::from(""),
        Cell::from(gauge::usage_bar(u, cx.w(3), scale, cx.theme)),
        Cell::from(format!("{}/{}", u.used * g, u.limit * g)),
        Cell::from(format!("{}/{} inst", u.used, u.limit)),
        Cell::from(""),
        Cell::from(""),
        Cell::from(elide(&flows.join(" "), cx.w(8))),
        Cell::from(Line::from(gauge::sparkline(hist, max, cx.w(9), cx.theme))),
    ]
}

/// One share × instance type (wide view): bars on a common scale per instance type, the
/// share's name, strategy, badges and counts on its first row.
pub fn wide_cells(cx: &RowCtx, qi: usize, ui: usize) -> Vec<Cell<'static>> {
    let (Some(q), Some(v)) = (cx.data.queues().get(qi), cx.data.views.get(qi)) else {
        return Vec::new();
    };
    let Some(u) = v.usage.get(ui) else {
        return Vec::new();
    };
    let first = ui == 0 || v.usage[ui - 1].share != u.share;
    let used_style = if u.borrowed > 0 {
        cx.theme.style(Role::Borrowed)
    } else {
        cx.theme.style(Role::Text)
    };
    let scale = gauge::type_scale(&v.usage, &u.instance_type);
    let blank = || Cell::from("");
    let [strategy, isp] = if first {
        share_head(cx, qi, &u.share)
    } else {
        [blank(), blank()]
    };
    let [wait, pre, flags] = if first {
        share_tail(cx, qi, &u.share, 8)
    } else {
        [blank(), blank(), blank()]
    };
    let hist = cx.data.history(&q.key(), &u.share, &u.instance_type);
    // One scale for the whole line: the limit, or the most it ever used.
    let max = hist
        .and_then(|h| h.iter().max().copied())
        .unwrap_or(0)
        .max(u.limit);
    vec![
        if first {
            // Cut in the middle (only when even the never-dropped columns do not fit), so
            // shares sharing a prefix stay distinct.
            share_name(cx, qi, &u.share, cx.w(0))
        } else {
            Cell::from("")
        },
        strategy,
        isp,
        Cell::from(if u.instance_type.is_empty() {
            NO_LIMITS.to_string()
        } else {
            screen::short_type(&u.instance_type).to_string()
        }),
        Cell::from(gauge::usage_bar(u, cx.w(4), scale, cx.theme)),
        Cell::from(Span::styled(format!("{}/{}", u.used, u.limit), used_style)),
        wait,
        pre,
        flags,
        Cell::from(Line::from(gauge::sparkline(hist, max, cx.w(9), cx.theme))),
    ]
}

/// An instance type's heading (by-type view): the environment's capacity, in use and idle,
/// what the shares borrow of it.
pub fn type_heading_cells(cx: &RowCtx, qi: usize, ty: &str) -> Vec<Cell<'static>> {
    let (Some(q), Some(v)) = (cx.data.queues().get(qi), cx.data.views.get(qi)) else {
        return Vec::new();
    };
    let (used, borrowed, capacity) = type_figures(q, &v.usage, ty);
    let free = capacity.saturating_sub(used);
    let title = cx.theme.style(Role::Title);
    let fake = ShareUsage {
        share: String::new(),
        instance_type: ty.to_string(),
        strategy: quotatop_model::SharingStrategy::Reserve,
        limit: capacity,
        used,
        own_used: used - borrowed,
        borrowed,
        idle: free,
        lent: 0,
        borrowed_from: Vec::new(),
        lent_to: Vec::new(),
    };
    vec![
        Cell::from(Span::styled(
            elide(&format!("▸ {}", screen::short_type(ty)), cx.w(0)),
            title,
        )),
        Cell::from(Span::styled("capacity", cx.theme.style(Role::Muted))),
        Cell::from(gauge::usage_bar(&fake, cx.w(2), capacity, cx.theme)),
        Cell::from(Span::styled(format!("{used}/{capacity}"), title)),
        Cell::from(Span::styled(
            if borrowed > 0 {
                format!("{borrowed} borrowed in all")
            } else {
                String::new()
            },
            cx.theme.style(Role::Borrowed),
        )),
        Cell::from(Span::styled(
            format!("{free} free"),
            cx.theme.style(Role::Muted),
        )),
    ]
}

/// A share's row under its instance type (by-type view): its use (own and borrowed) against
/// its limit, whom it borrows from and whom it lends to.
pub fn by_type_cells(cx: &RowCtx, qi: usize, ui: usize) -> Vec<Cell<'static>> {
    let Some(v) = cx.data.views.get(qi) else {
        return Vec::new();
    };
    let Some(u) = v.usage.get(ui) else {
        return Vec::new();
    };
    let [strategy, _] = share_head(cx, qi, &u.share);
    let scale = gauge::type_scale(&v.usage, &u.instance_type);
    let used_style = if u.borrowed > 0 {
        cx.theme.style(Role::Borrowed)
    } else {
        cx.theme.style(Role::Text)
    };
    vec![
        Cell::from(elide(&clean(&u.share), cx.w(0))),
        strategy,
        Cell::from(gauge::usage_bar(u, cx.w(2), scale, cx.theme)),
        Cell::from(Span::styled(format!("{}/{}", u.used, u.limit), used_style)),
        Cell::from(Span::styled(
            flow_text(u.borrowed, &u.borrowed_from, "from", cx.w(4)),
            cx.theme.style(Role::Borrowed),
        )),
        Cell::from(Span::styled(
            flow_text(u.lent, &u.lent_to, "to", cx.w(5)),
            cx.theme.style(Role::Lent),
        )),
    ]
}
