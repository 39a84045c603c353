//! The Overview's sorts (`s`, `<`/`>`, `S`, `:sort`): its shares as listed, by contention
//! (waiting GPUs, then how long the oldest has waited, then use against the limit: the most
//! contended first), by name, or by use against the limit; each queue's shares sorted within
//! it, a share's per-type rows kept under it. The sorted column's header says ▲/▼.

use std::cmp::{Ordering, Reverse};

use super::View;
use crate::data::QueueView;
use crate::list::{ListState, Sort};
use crate::screen::Col;
use quotatop_analysis::{gpu_weight, share_totals};

/// The sort columns, as the title's `sort NAME` and `:sort NAME` say them.
pub const COLUMNS: &[&str] = &["listed", "contention", "share", "use"];

/// The sort that lists the shares as the service does (the title says no sort then).
const LISTED: usize = 0;
const CONTENTION: usize = 1;
const NAME: usize = 2;
const USE: usize = 3;

/// The columns the title names: none while the shares are as listed.
pub fn title_columns(list: &ListState) -> &'static [&'static str] {
    if list.sort.column == LISTED {
        &[]
    } else {
        COLUMNS
    }
}

/// What a share is sorted by: its waiting GPUs, the oldest wait (ms), its use per mille of
/// its limit (a share using GPUs with no limit is the fullest there is).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Contention {
    pub waiting_gpus: u64,
    pub oldest_wait: i64,
    pub use_per_mille: u64,
}

/// Share `share`'s contention in queue view `v`.
pub fn contention(v: &QueueView, share: &str) -> Contention {
    let waiting = v.dispatch.iter().filter(|j| j.share == share);
    let waiting_gpus = waiting
        .clone()
        .map(|j| u64::from(j.instance_count) * u64::from(gpu_weight(&j.instance_type)))
        .sum();
    let oldest_wait = waiting.filter_map(|j| j.waiting_ms).max().unwrap_or(0);
    Contention {
        waiting_gpus,
        oldest_wait,
        use_per_mille: use_per_mille(v, share),
    }
}

fn use_per_mille(v: &QueueView, share: &str) -> u64 {
    let t = share_totals(&v.usage, share);
    match t.limit {
        0 if t.used > 0 => u64::MAX,
        0 => 0,
        l => u64::from(t.used) * 1000 / u64::from(l),
    }
}

/// Each share's (first usage row, all its rows) of `v`, in the order `sort` puts them.
pub fn shares(v: &QueueView, sort: Sort) -> Vec<(usize, Vec<usize>)> {
    let mut shares = super::table::shares_of(&v.usage);
    let name = |s: &(usize, Vec<usize>)| v.usage[s.0].share.clone();
    // Each column's natural order: the most contended, the fullest first; names A to Z.
    let natural = |a: &(usize, Vec<usize>), b: &(usize, Vec<usize>)| -> Ordering {
        match sort.column {
            CONTENTION => Reverse(contention(v, &name(a))).cmp(&Reverse(contention(v, &name(b)))),
            NAME => name(a).cmp(&name(b)),
            USE => Reverse(use_per_mille(v, &name(a))).cmp(&Reverse(use_per_mille(v, &name(b)))),
            _ => Ordering::Equal,
        }
    };
    shares.sort_by(natural);
    if sort.descending {
        shares.reverse();
    }
    shares
}

/// The header index of the column `sort` is by in `view` (`None`: as listed, or a view not
/// sorted), and whether its natural order is descending.
fn header_at(view: View, sort: Sort) -> Option<(usize, bool)> {
    let usage = match view {
        View::Compact => 3,
        View::Wide => 4,
        View::ByType => return None,
    };
    match sort.column {
        // The WAIT column: the runnable jobs contention starts from.
        CONTENTION => Some((6, true)),
        NAME => Some((0, false)),
        USE => Some((usage, true)),
        _ => None,
    }
}

/// ▲ (ascending) or ▼ (descending) after the sorted column's header, that column one wider
/// so the mark is never cut.
pub fn mark_header(header: &mut [String], cols: &mut [Col], view: View, sort: Sort) {
    let Some((at, natural_down)) = header_at(view, sort) else {
        return;
    };
    if let (Some(h), Some(c)) = (header.get_mut(at), cols.get_mut(at)) {
        h.push(if natural_down != sort.descending {
            '▼'
        } else {
            '▲'
        });
        let need = u16::try_from(h.chars().count()).unwrap_or(u16::MAX);
        c.min = c.min.max(need);
        c.want = c.want.max(need);
    }
}

#[cfg(test)]
#[path = "sort_tests.rs"]
mod tests;
