//! The Jobs screen's rows: a queue's jobs filtered and sorted (on the UI thread, with each
//! snapshot off it, or as the screen's own work), with the widths they need.

use std::cmp::Reverse;
use std::sync::Arc;

use super::super::list::{ListState, RowsKey};
use super::super::screen;
use quotatop_model::{ServiceJob, TrackedJob};

/// A job as the rows read it: a snapshot's tracked job (on the UI thread), or the job alone
/// (the rows' work off it holds only the jobs, shared).
pub(crate) trait AsJob {
    fn as_job(&self) -> &ServiceJob;
}

impl AsJob for TrackedJob {
    fn as_job(&self) -> &ServiceJob {
        &self.job
    }
}

impl AsJob for Arc<ServiceJob> {
    fn as_job(&self) -> &ServiceJob {
        self
    }
}

fn sort_rows<J: AsJob>(rows: &mut [usize], jobs: &[J], column: usize, descending: bool) {
    let key = |i: usize| jobs[i].as_job();
    match column {
        1 => rows.sort_by(|&a, &b| key(a).name.cmp(&key(b).name)),
        2 => rows.sort_by(|&a, &b| {
            key(a)
                .share
                .cmp(&key(b).share)
                .then(key(a).name.cmp(&key(b).name))
        }),
        3 => rows.sort_by_key(|&i| (Reverse(key(i).priority), key(i).created_at)),
        4 => rows.sort_by_key(|&i| (Reverse(key(i).preemption_count()), key(i).created_at)),
        5 => rows.sort_by_key(|&i| key(i).created_at),
        _ => rows.sort_by_key(|&i| (key(i).status, Reverse(key(i).priority), key(i).created_at)),
    }
    if descending {
        rows.reverse();
    }
}

/// Up to this many jobs a new sort or filter is applied at once on the UI thread (a few ms in
/// a dev build); above, off it ([`Jobs`](super::Jobs)' work), the rows on screen staying
/// until it is done.
pub(crate) const SORT_AT_ONCE: usize = 1_000;

/// The Jobs screen's rows of one queue: its jobs filtered and sorted as `key` says, with the
/// widths they need. Derived with each snapshot off the UI thread ([`crate::data::Prepared`])
/// or by the screen's own work; one function either way ([`JobRows::of`]).
#[derive(Debug, Clone)]
pub struct JobRows {
    /// The queue's key.
    pub(crate) queue: String,
    pub(crate) key: RowsKey,
    /// Indexes into the queue's `jobs`.
    pub(crate) rows: Vec<usize>,
    /// The longest cleaned name and reason among the rows (in characters).
    pub(crate) longest: (usize, usize),
}

impl JobRows {
    /// The rows of `jobs` (the queue `queue`'s, in the snapshot's order) for `key`.
    pub(crate) fn of<J: AsJob>(queue: String, jobs: &[J], key: RowsKey) -> Self {
        let mut rows: Vec<usize> = jobs
            .iter()
            .enumerate()
            .filter(|(_, j)| {
                let j = j.as_job();
                key.filter.matches([
                    j.name.as_str(),
                    j.id.as_str(),
                    j.share.as_str(),
                    j.status.as_str(),
                    j.instance_type.as_str(),
                    j.status_reason.as_deref().unwrap_or(""),
                ])
            })
            .map(|(i, _)| i)
            .collect();
        sort_rows(&mut rows, jobs, key.sort.column, key.sort.descending);
        let longest = screen::longest_name_and_reason(
            rows.iter()
                .filter_map(|&r| jobs.get(r))
                .map(|t| (t.as_job().name.as_str(), t.as_job().status_reason.as_deref())),
        );
        Self {
            queue,
            key,
            rows,
            longest,
        }
    }
}

/// The rows a fresh Jobs screen shows (by status, unfiltered): derived with every snapshot,
/// so opening the screen sorts nothing on the UI thread.
pub(crate) fn first_rows_key() -> RowsKey {
    ListState::with_sort(0, false).rows_key()
}
