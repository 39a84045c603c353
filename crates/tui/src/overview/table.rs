//! The Overview's tables: the columns of each view (sized by [`screen::layout`]: names and
//! instance types whole, then bars and sparklines grow, the least needed columns dropped on a
//! narrow screen) and the cells of each kind of row.

use std::collections::VecDeque;

use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Cell};

use super::super::data::Data;
use super::super::gauge;
use super::super::screen::{self, Col};
use super::super::text::{clean, elide};
use super::super::theme::{Role, Theme};
use super::{View, attention, strategy_label};
use quotatop_analysis::{ShareTotals, ShareUsage, gpu_weight, share_totals};
use quotatop_model::QueueSnapshot;

/// What drawing the table needs, travelling together.
pub struct Drawn<'a> {
    pub view: View,
    pub block: Block<'a>,
    pub data: &'a Data,
    pub theme: &'a Theme,
}

/// What building a row needs: the data, the column widths [`screen::layout`] gave, the theme.
pub struct RowCtx<'a> {
    pub data: &'a Data,
    pub widths: &'a [u16],
    pub theme: &'a Theme,
}

impl RowCtx<'_> {
    fn w(&self, col: usize) -> usize {
        usize::from(self.widths.get(col).copied().unwrap_or(0))
    }
}

/// Each share's first usage row and all its rows, in the rows' order.
pub fn shares_of(usage: &[ShareUsage]) -> Vec<(usize, Vec<usize>)> {
    let mut out: Vec<(usize, Vec<usize>)> = Vec::new();
    for (ui, u) in usage.iter().enumerate() {
        match out.iter_mut().find(|(f, _)| usage[*f].share == u.share) {
            Some((_, rows)) => rows.push(ui),
            None => out.push((ui, vec![ui])),
        }
    }
    out
}

/// Each instance type (the environment's, in its order, then any other a share has) and the
/// usage rows of it, the busiest share first.
pub fn types_of(q: &QueueSnapshot, usage: &[ShareUsage]) -> Vec<(String, Vec<usize>)> {
    let mut types: Vec<String> = q
        .environment
        .capacity
        .iter()
        .map(|c| c.instance_type.clone())
        .collect();
    for u in usage {
        if !types.contains(&u.instance_type) {
            types.push(u.instance_type.clone());
        }
    }
    types
        .into_iter()
        .map(|ty| {
            let mut rows: Vec<usize> = (0..usage.len())
                .filter(|&i| usage[i].instance_type == ty)
                .collect();
            rows.sort_by_key(|&i| std::cmp::Reverse((usage[i].used, usage[i].limit)));
            (ty, rows)
        })
        .collect()
}

/// Columns of the compact view.
const COMPACT: [&str; 10] = [
    "SHARE", "STRATEGY", "ISP", "USAGE", "GPUS", "TIGHTEST", "WAIT", "PRE", "FLAGS", "HISTORY",
];
/// Columns of the wide view.
const WIDE: [&str; 10] = [
    "SHARE", "STRATEGY", "ISP", "TYPE", "USAGE", "USED", "WAIT", "PRE", "FLAGS", "HISTORY",
];
/// Columns of the by-type view.
const BY_TYPE: [&str; 6] = [
    "TYPE / SHARE",
    "STRATEGY",
    "USAGE",
    "USED",
    "BORROWS FROM",
    "LENDS TO",
];

fn longest<'a>(texts: impl Iterator<Item = &'a str>) -> usize {
    texts.map(|t| clean(t).chars().count()).max().unwrap_or(0)
}

/// The header and the columns of `view` over `data`.
pub fn columns(view: View, data: &Data) -> (Vec<String>, Vec<Col>) {
    let usage = || data.views.iter().flat_map(|v| v.usage.iter());
    let names = longest(usage().map(|u| u.share.as_str()));
    let types = longest(usage().map(|u| screen::short_type(&u.instance_type)));
    let used = usage()
        .map(|u| format!("{}/{}", u.used, u.limit).len())
        .max()
        .unwrap_or(0);
    let flags = (attention::badge_min(data), attention::badge_width(data));
    let header = |h: &[&str]| h.iter().map(|s| (*s).to_string()).collect();
    match view {
        View::Compact => {
            let (gpus, tight) = compact_widths(data);
            let cols = vec![
                name_col(names.max(types + 4)),
                Col::fixed(8, 4),
                Col::fixed(3, 5),
                Col::graphic(8, 3, 0),
                Col::fixed(gpus.max(4), 0),
                Col::fixed(tight.max(8), 1),
                Col::fixed(4, 0),
                Col::fixed(3, 3),
                flags_col(flags),
                Col::graphic(8, 2, 6),
            ];
            (header(&COMPACT), cols)
        }
        View::Wide => {
            let cols = vec![
                name_col(names),
                Col::fixed(8, 4),
                Col::fixed(3, 5),
                Col::fixed(u16::try_from(types.max(4)).unwrap_or(u16::MAX), 0),
                Col::graphic(6, 3, 0),
                Col::fixed(u16::try_from(used.max(4)).unwrap_or(u16::MAX), 0),
                Col::fixed(4, 0),
                Col::fixed(3, 3),
                flags_col(flags),
                Col::graphic(8, 2, 6),
            ];
            (header(&WIDE), cols)
        }
        View::ByType => {
            let (from, to) = flows_width(data);
            let used = used.max(type_used_width(data));
            let cols = vec![
                name_col(names.max(types + 2)),
                Col::fixed(8, 3),
                Col::graphic(6, 3, 0),
                Col::fixed(u16::try_from(used.max(4)).unwrap_or(u16::MAX), 0),
                Col {
                    grow: 1,
                    ..Col::text(12, from, 1)
                },
                Col {
                    grow: 1,
                    ..Col::text(12, to, 2)
                },
            ];
            (header(&BY_TYPE), cols)
        }
    }
}

/// The widest `used/capacity` of an instance type's heading (by-type view).
fn type_used_width(data: &Data) -> usize {
    data.queues()
        .iter()
        .zip(&data.views)
        .flat_map(|(q, v)| {
            types_of(q, &v.usage)
                .into_iter()
                .map(move |(ty, _)| type_figures(q, &v.usage, &ty))
        })
        .map(|(used, _, capacity)| format!("{used}/{capacity}").len())
        .max()
        .unwrap_or(0)
}

/// An instance type's use in a queue: instances in use, of them borrowed, and the
/// environment's capacity (its use, when the environment has no limit for it).
fn type_figures(q: &QueueSnapshot, usage: &[ShareUsage], ty: &str) -> (u32, u32, u32) {
    let rows = || usage.iter().filter(|u| u.instance_type == ty);
    let used: u32 = rows().map(|u| u.used).sum();
    let borrowed: u32 = rows().map(|u| u.borrowed).sum();
    let capacity = q
        .environment
        .capacity
        .iter()
        .find(|c| c.instance_type == ty)
        .map_or(used, |c| c.max_capacity);
    (used, borrowed.min(used), capacity)
}

/// The compact view's widest GPU figure (`96/128`) and tightest-type label, whole.
fn compact_widths(data: &Data) -> (u16, u16) {
    let mut gpus = 0;
    let mut tight = 0;
    for v in &data.views {
        for (f, _) in shares_of(&v.usage) {
            let share = &v.usage[f].share;
            let t = share_totals(&v.usage, share);
            gpus = gpus.max(format!("{}/{}", t.used, t.limit).len());
            tight = tight.max(tightest_label(&v.usage, share).chars().count());
        }
        // An expanded share's type rows show `used/limit inst` there.
        for u in &v.usage {
            tight = tight.max(format!("{}/{} inst", u.used, u.limit).len());
            let g = gpu_weight(&u.instance_type);
            gpus = gpus.max(format!("{}/{}", u.used * g, u.limit * g).len());
        }
    }
    let w = |n: usize| u16::try_from(n).unwrap_or(u16::MAX);
    (w(gpus), w(tight))
}

/// SHARE: names whole, always (cut in the middle only when even the columns never dropped
/// do not fit).
fn name_col(longest: usize) -> Col {
    let w = u16::try_from(longest).unwrap_or(u16::MAX);
    Col::text(w, longest, 0)
}

/// FLAGS: the badges whole when there is room (up to [`FLAGS_WANT`], then it grows with the
/// bars), else cut to `+N`; dropped before names.
fn flags_col((least, whole): (usize, usize)) -> Col {
    let least = u16::try_from(least).unwrap_or(u16::MAX).max(5);
    Col {
        grow: 1,
        ..Col::text(least, whole.min(FLAGS_WANT), 2)
    }
}

/// What FLAGS asks for before the bars grow: two badges with long names.
const FLAGS_WANT: usize = 40;

/// What the "borrows from" and "lends to" columns ask for: the longest whole text, at most the
/// longest first name with its `+N` (the columns then grow together).
fn flows_width(data: &Data) -> (usize, usize) {
    let rows = || data.views.iter().flat_map(|v| v.usage.iter());
    type Part = fn(&ShareUsage) -> (u32, &[(String, u32)]);
    let want = |part: Part| {
        rows()
            .map(|u| {
                let (n, parts) = part(u);
                let whole = flow_text(n, parts, "", usize::MAX).chars().count();
                let first = flow_text(n, &parts[..parts.len().min(1)], "", usize::MAX);
                whole.min(first.chars().count() + 4)
            })
            .max()
            .unwrap_or(0)
    };
    (
        want(|u| (u.borrowed, &u.borrowed_from)),
        want(|u| (u.lent, &u.lent_to)),
    )
}

/// Whom a share borrows from or lends to, in at most `width` characters: `team-a 2, team-b 1`
/// (the instances of each), the names that fit whole then `+N` for those left out, or
/// `3 from 2 shares` (`word`: `from` or `to`) or just `3` when not even one fits; empty for
/// none.
pub fn flow_text(total: u32, parts: &[(String, u32)], word: &str, width: usize) -> String {
    if total == 0 {
        return String::new();
    }
    let named: Vec<String> = parts
        .iter()
        .map(|(s, n)| format!("{} {n}", clean(s)))
        .collect();
    for shown in (1..=named.len()).rev() {
        let left = named.len() - shown;
        let mut t = named[..shown].join(", ");
        if left > 0 {
            t.push_str(&format!(" +{left}"));
        }
        if t.chars().count() <= width {
            return t;
        }
    }
    let short = match parts.len() {
        1 => format!("{total} {word} 1 share"),
        n => format!("{total} {word} {n} shares"),
    };
    super::super::text::first_fitting(&[short, total.to_string()], width)
}

/// `p5.48xlarge 4/4`: a share's most constrained instance type and its use of it.
fn tightest_label(usage: &[ShareUsage], share: &str) -> String {
    share_totals(usage, share)
        .tightest
        .and_then(|i| usage.get(i))
        .map_or_else(String::new, |u| {
            format!(
                "{} {}/{}",
                screen::short_type(&u.instance_type),
                u.used,
                u.limit
            )
        })
}

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
        Cell::from(elide(&clean(share), cx.w(0))),
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
        Cell::from(if first {
            // Cut in the middle (only when even the never-dropped columns do not fit), so
            // shares sharing a prefix stay distinct.
            elide(&clean(&u.share), cx.w(0))
        } else {
            String::new()
        }),
        strategy,
        isp,
        Cell::from(screen::short_type(&u.instance_type).to_string()),
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

#[cfg(test)]
mod tests {
    use super::flow_text;

    #[test]
    fn flows_drop_names_whole_and_count_them() {
        let parts = vec![("team-a".to_string(), 2), ("team-b".to_string(), 1)];
        assert_eq!(flow_text(3, &parts, "from", 40), "team-a 2, team-b 1");
        assert_eq!(flow_text(3, &parts, "from", 18), "team-a 2, team-b 1");
        assert_eq!(flow_text(3, &parts, "from", 17), "team-a 2 +1");
        assert_eq!(flow_text(3, &parts, "to", 11), "team-a 2 +1");
        let long = vec![("team-long-name".to_string(), 2), ("team-b".to_string(), 1)];
        assert_eq!(flow_text(3, &long, "to", 13), "3 to 2 shares");
        assert_eq!(flow_text(3, &parts, "to", 10), "3");
        assert_eq!(flow_text(0, &parts, "to", 40), "");
    }
}
