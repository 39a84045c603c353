//! The columns of each Overview table: their headers, and their sizes for [`screen::layout`]
//! (names and instance types whole, then bars and sparklines grow, the least needed columns
//! dropped on a narrow screen).

use crate::data::Data;
use crate::overview::{View, attention};
use crate::screen::{self, Col, drop_order};
use crate::text::clean;
use quotatop_analysis::{ShareUsage, gpu_weight, share_totals};

use super::{flow_text, shares_of, tightest_label, type_figures, types_of};

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
    // A share's name, and its status beside it when AWS says it is not valid.
    let statuses = data
        .queues()
        .iter()
        .flat_map(|q| q.shares.iter())
        .map(|s| {
            clean(&s.name).chars().count()
                + s.status.as_deref().map_or(0, |st| clean(st).chars().count() + 1)
        })
        .max()
        .unwrap_or(0);
    let names = longest(usage().map(|u| u.share.as_str())).max(statuses);
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
                Col::fixed(8, drop_order::STRATEGY),
                Col::fixed(3, 5),
                Col::graphic(8, 3, 0),
                Col::fixed(gpus.max(4), 0),
                Col::fixed(tight.max(8), 1),
                Col::fixed(4, 0),
                Col::fixed(3, 3),
                flags_col(flags),
                Col::graphic(8, 2, drop_order::HISTORY),
            ];
            (header(&COMPACT), cols)
        }
        View::Wide => {
            let cols = vec![
                name_col(names),
                Col::fixed(8, drop_order::STRATEGY),
                Col::fixed(3, 5),
                Col::fixed(u16::try_from(types.max(4)).unwrap_or(u16::MAX), 0),
                Col::graphic(6, 3, 0),
                Col::fixed(u16::try_from(used.max(4)).unwrap_or(u16::MAX), 0),
                Col::fixed(4, 0),
                Col::fixed(3, 3),
                flags_col(flags),
                Col::graphic(8, 2, drop_order::HISTORY),
            ];
            (header(&WIDE), cols)
        }
        View::ByType => {
            let (from, to) = flows_width(data);
            let used = used.max(type_used_width(data));
            let cols = vec![
                name_col(names.max(types + 2)),
                Col::fixed(8, drop_order::STRATEGY),
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
/// bars), else cut to `+N`; never dropped (LOOP, LIMIT, MISCONFIG are what the row is for).
fn flags_col((least, whole): (usize, usize)) -> Col {
    let least = u16::try_from(least).unwrap_or(u16::MAX).max(5);
    Col {
        grow: 1,
        ..Col::text(least, whole.min(FLAGS_WANT), drop_order::KEPT)
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
