//! Capacity use per share and instance type, and who borrows from whom.
//!
//! AWS reports only totals per share, so lending is attributed by a rule (this module is the one
//! place it lives):
//! 1. A share's use up to its own limit is "own use"; the rest is "borrowed".
//! 2. The total borrowed of an instance type is attributed to the lending shares (`LEND`,
//!    `LEND_AND_BORROW`) in proportion to their unused own capacity, rounded by largest
//!    remainder (ties to the earlier share). `RESERVE` shares never lend.
//! 3. Each borrower's borrowing is then matched to those lenders in share order (first borrower
//!    against first lender, and so on), so every borrower's row and every lender's column add up.
//! 4. Borrowing beyond what the lenders have unused (a reclaim in progress, over-subscription)
//!    stays unattributed: it appears as `borrowed` without a lender.

use std::collections::BTreeSet;

use quotatop_model::{QueueSnapshot, SharingStrategy};

/// One share's use of one instance type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareUsage {
    pub share: String,
    pub instance_type: String,
    pub strategy: SharingStrategy,
    /// The share's own limit for this type (0 when not among its limits).
    pub limit: u32,
    /// Instances held by its SCHEDULED, STARTING and RUNNING jobs.
    pub used: u32,
    /// `min(used, limit)`.
    pub own_used: u32,
    /// `used - own_used`.
    pub borrowed: u32,
    /// Own capacity neither used nor lent.
    pub idle: u32,
    /// Own capacity in use by other shares.
    pub lent: u32,
    /// (lender, instances), in share order.
    pub borrowed_from: Vec<(String, u32)>,
    /// (borrower, instances), in share order.
    pub lent_to: Vec<(String, u32)>,
}

/// Every share × instance type it has a limit for or uses, in share order.
pub fn share_usage(q: &QueueSnapshot) -> Vec<ShareUsage> {
    let mut rows: Vec<ShareUsage> = Vec::new();
    for share in &q.shares {
        let mut types: Vec<String> = share
            .capacity_limits
            .iter()
            .map(|l| l.instance_type.clone())
            .collect();
        let extra: BTreeSet<&str> = q
            .jobs
            .iter()
            .filter(|j| j.job.share == share.name && j.job.status.holds_capacity())
            .map(|j| j.job.instance_type.as_str())
            // An unknown type (the job's unit was not an instance type, see its notes) is
            // no row of its own.
            .filter(|t| !t.is_empty() && !types.iter().any(|x| x == t))
            .collect();
        types.extend(extra.into_iter().map(str::to_string));
        for ty in types {
            let mut used: u32 = q
                .jobs
                .iter()
                .filter(|j| {
                    j.job.share == share.name
                        && j.job.instance_type == ty
                        && j.job.status.holds_capacity()
                })
                .map(|j| j.job.instance_count)
                .sum();
            if q.listing.is_some() {
                // While the jobs are being listed, those holding capacity may not be listed
                // yet: the service's own figure (GetJobQueueSnapshot) is known already.
                let reported = q
                    .utilization
                    .get(&share.name)
                    .and_then(|per_type| per_type.get(&ty))
                    .map_or(0, |v| v.round().clamp(0.0, f64::from(u32::MAX)) as u32);
                used = used.max(reported);
            }
            let limit = share.limit_for(&ty);
            let own_used = used.min(limit);
            rows.push(ShareUsage {
                share: share.name.clone(),
                instance_type: ty,
                strategy: share.sharing.strategy,
                limit,
                used,
                own_used,
                borrowed: used - own_used,
                idle: limit - own_used,
                lent: 0,
                borrowed_from: Vec::new(),
                lent_to: Vec::new(),
            });
        }
    }
    let types: BTreeSet<String> = rows.iter().map(|r| r.instance_type.clone()).collect();
    for ty in types {
        attribute(&mut rows, &ty);
    }
    rows
}

/// Applies rules 2–4 to the rows of one instance type.
fn attribute(rows: &mut [ShareUsage], ty: &str) {
    let of_type = |r: &ShareUsage| r.instance_type == ty;
    // (row, idle) of the lending rows with idle capacity, in share order.
    let lenders: Vec<(usize, u64)> = rows
        .iter()
        .enumerate()
        .filter(|(_, r)| of_type(r) && r.strategy.lends() && r.idle > 0)
        .map(|(i, r)| (i, r.idle as u64))
        .collect();
    let free: u64 = lenders.iter().map(|&(_, idle)| idle).sum();
    let borrowed: u64 = rows
        .iter()
        .filter(|r| of_type(r))
        .map(|r| r.borrowed as u64)
        .sum();
    let weights: Vec<u64> = lenders.iter().map(|&(_, idle)| idle).collect();
    let lent = apportion(borrowed.min(free), &weights);
    for (&(i, _), &l) in lenders.iter().zip(&lent) {
        if let Some(r) = rows.get_mut(i) {
            r.lent = l as u32;
            r.idle -= l as u32;
        }
    }
    // Match borrowers to lenders in share order: (lender row, borrower row, instances).
    let borrowers: Vec<(usize, u64)> = rows
        .iter()
        .enumerate()
        .filter(|(_, r)| of_type(r) && r.borrowed > 0)
        .map(|(i, r)| (i, r.borrowed as u64))
        .collect();
    let mut pool = lenders.iter().map(|&(i, _)| i).zip(lent).peekable();
    let mut transfers: Vec<(usize, usize, u64)> = Vec::new();
    for (b, mut need) in borrowers {
        while need > 0 {
            let Some((l, remaining)) = pool.peek_mut() else {
                break;
            };
            let take = need.min(*remaining);
            if take > 0 {
                transfers.push((*l, b, take));
                *remaining -= take;
                need -= take;
            }
            if *remaining == 0 {
                pool.next();
            }
        }
    }
    let name = |rows: &[ShareUsage], i: usize| rows.get(i).map(|r| r.share.clone());
    for (l, b, take) in transfers {
        let (Some(lender), Some(borrower)) = (name(rows, l), name(rows, b)) else {
            continue;
        };
        if let Some(r) = rows.get_mut(b) {
            r.borrowed_from.push((lender, take as u32));
        }
        if let Some(r) = rows.get_mut(l) {
            r.lent_to.push((borrower, take as u32));
        }
    }
}

/// Splits `total` in proportion to `weights` with largest-remainder rounding (ties: earlier).
fn apportion(total: u64, weights: &[u64]) -> Vec<u64> {
    let sum: u64 = weights.iter().sum();
    if sum == 0 {
        return vec![0; weights.len()];
    }
    let mut out: Vec<u64> = weights.iter().map(|w| total * w / sum).collect();
    let mut left = total - out.iter().sum::<u64>();
    let mut order: Vec<(usize, u64)> = weights.iter().copied().enumerate().collect();
    order.sort_by_key(|&(i, w)| (std::cmp::Reverse(total * w % sum), i));
    for (i, _) in order {
        if left == 0 {
            break;
        }
        if let Some(o) = out.get_mut(i) {
            *o += 1;
        }
        left -= 1;
    }
    out
}

/// GPUs one instance of `ty` counts for in [`share_totals`]: its GPUs (or accelerator chips); an
/// instance of a type without GPUs, or of a type the table does not know, counts as one.
pub fn gpu_weight(ty: &str) -> u32 {
    super::gpus_per_instance(ty).filter(|&g| g > 0).unwrap_or(1)
}

/// One share's use over every instance type it has, in GPUs ([`gpu_weight`]), the figures of
/// its [`ShareUsage`] rows summed: what its one-row bar shows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ShareTotals {
    pub own_used: u32,
    pub borrowed: u32,
    pub lent: u32,
    pub idle: u32,
    /// GPUs in use (own and borrowed).
    pub used: u32,
    /// GPUs of its limits.
    pub limit: u32,
    /// Index in the rows of its most constrained instance type: the one nearest to (or most
    /// over) its limit, then the busiest; `None` for a share without rows.
    pub tightest: Option<usize>,
}

/// [`ShareTotals`] of `share` over `rows` (a queue's [`share_usage`]).
pub fn share_totals(rows: &[ShareUsage], share: &str) -> ShareTotals {
    let mut t = ShareTotals::default();
    let mut best: Option<(u64, u32)> = None;
    for (i, u) in rows.iter().enumerate().filter(|(_, u)| u.share == share) {
        let g = gpu_weight(&u.instance_type);
        t.own_used += u.own_used * g;
        t.borrowed += u.borrowed * g;
        t.lent += u.lent * g;
        t.idle += u.idle * g;
        t.used += u.used * g;
        t.limit += u.limit * g;
        // Use per mille of the limit (a type it uses without a limit is the tightest there is).
        let ratio = match u.limit {
            0 if u.used > 0 => u64::MAX,
            0 => 0,
            l => u64::from(u.used) * 1000 / u64::from(l),
        };
        if best.is_none_or(|b| (ratio, u.used) > b) {
            best = Some((ratio, u.used));
            t.tightest = Some(i);
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture::{job, queue};
    use quotatop_model::{JobStatus, SharingConfig};

    #[test]
    fn apportion_is_exact_and_proportional() {
        assert_eq!(apportion(5, &[2, 2, 1]), vec![2, 2, 1]);
        assert_eq!(apportion(3, &[1, 1]), vec![2, 1]);
        assert_eq!(apportion(0, &[3, 4]), vec![0, 0]);
        assert_eq!(apportion(4, &[0, 0]), vec![0, 0]);
        assert_eq!(apportion(7, &[10, 5, 5]).iter().sum::<u64>(), 7);
    }

    #[test]
    fn borrowing_is_attributed_to_lenders_and_never_to_reserve() {
        let mut q = queue(&[
            (
                "borrower",
                "ml.m5.xlarge",
                2,
                SharingConfig::lend_and_borrow(-1),
            ),
            ("lender-a", "ml.m5.xlarge", 4, SharingConfig::lend()),
            ("lender-b", "ml.m5.xlarge", 2, SharingConfig::lend()),
            ("reserved", "ml.m5.xlarge", 8, SharingConfig::reserve()),
        ]);
        q.jobs = vec![
            job(
                "b1",
                "borrower",
                "ml.m5.xlarge",
                5,
                JobStatus::Running,
                3,
                100,
            ),
            job(
                "a1",
                "lender-a",
                "ml.m5.xlarge",
                1,
                JobStatus::Running,
                0,
                100,
            ),
            job(
                "q1",
                "borrower",
                "ml.m5.xlarge",
                4,
                JobStatus::Runnable,
                0,
                200,
            ),
        ];
        let rows = share_usage(&q);
        let row = |s: &str| rows.iter().find(|r| r.share == s).unwrap().clone();
        let b = row("borrower");
        assert_eq!((b.used, b.own_used, b.borrowed, b.idle), (5, 2, 3, 0));
        // Unused own capacity: lender-a 3, lender-b 2; 3 borrowed split 3:2 -> 2 and 1.
        let a = row("lender-a");
        assert_eq!((a.own_used, a.lent, a.idle), (1, 2, 1));
        let l = row("lender-b");
        assert_eq!((l.lent, l.idle), (1, 1));
        assert_eq!(
            b.borrowed_from,
            vec![("lender-a".to_string(), 2), ("lender-b".to_string(), 1)]
        );
        assert_eq!(a.lent_to, vec![("borrower".to_string(), 2)]);
        let r = row("reserved");
        assert_eq!((r.lent, r.idle), (0, 8));
    }

    #[test]
    fn borrowing_beyond_unused_capacity_stays_unattributed() {
        let mut q = queue(&[
            (
                "borrower",
                "ml.m5.xlarge",
                1,
                SharingConfig::lend_and_borrow(-1),
            ),
            ("lender", "ml.m5.xlarge", 2, SharingConfig::lend()),
        ]);
        q.jobs = vec![
            job(
                "b1",
                "borrower",
                "ml.m5.xlarge",
                3,
                JobStatus::Running,
                0,
                1,
            ),
            job(
                "l1",
                "lender",
                "ml.m5.xlarge",
                1,
                JobStatus::Scheduled,
                0,
                2,
            ),
        ];
        let rows = share_usage(&q);
        assert_eq!(rows[0].borrowed, 2);
        assert_eq!(rows[0].borrowed_from, vec![("lender".to_string(), 1)]);
        assert_eq!((rows[1].lent, rows[1].idle), (1, 0));
    }

    #[test]
    fn while_the_jobs_are_listed_the_services_utilisation_counts() {
        let mut q = queue(&[("s", "ml.m5.xlarge", 4, SharingConfig::lend_and_borrow(-1))]);
        q.jobs = vec![job("a", "s", "ml.m5.xlarge", 1, JobStatus::Running, 0, 1)];
        q.utilization
            .entry("s".into())
            .or_default()
            .insert("ml.m5.xlarge".into(), 3.0);
        // A complete listing: the jobs are the figure.
        assert_eq!(share_usage(&q)[0].used, 1);
        // Listing in progress (the early look): the service's utilisation, until the jobs
        // holding it are listed.
        q.listing = Some(quotatop_model::ListingProgress { listed: 1 });
        assert_eq!(share_usage(&q)[0].used, 3);
    }

    #[test]
    fn a_type_outside_the_limits_shows_as_all_borrowed() {
        let mut q = queue(&[("s", "ml.m5.xlarge", 2, SharingConfig::lend_and_borrow(-1))]);
        q.jobs = vec![job("g", "s", "ml.g5.xlarge", 1, JobStatus::Running, 0, 1)];
        let rows = share_usage(&q);
        assert_eq!(rows.len(), 2);
        assert_eq!(
            (
                rows[1].instance_type.as_str(),
                rows[1].limit,
                rows[1].borrowed
            ),
            ("ml.g5.xlarge", 0, 1)
        );
    }

    /// GPUs summed over a share's types (8 a p4d, 1 a g5.2xlarge), and the tightest type the
    /// one nearest its limit, not the busiest.
    #[test]
    fn totals_are_in_gpus_and_name_the_tightest_type() {
        let mut q = queue(&[
            ("s", "ml.p4d.24xlarge", 4, SharingConfig::lend()),
            ("other", "ml.p4d.24xlarge", 1, SharingConfig::lend()),
        ]);
        q.shares[0]
            .capacity_limits
            .push(quotatop_model::CapacityLimit::new("ml.g5.2xlarge", 2));
        q.jobs = vec![
            job("a", "s", "ml.p4d.24xlarge", 3, JobStatus::Running, 1, 10),
            job("b", "s", "ml.g5.2xlarge", 2, JobStatus::Running, 1, 10),
        ];
        let rows = share_usage(&q);
        let t = share_totals(&rows, "s");
        assert_eq!((t.used, t.limit), (3 * 8 + 2, 4 * 8 + 2));
        assert_eq!((t.own_used, t.idle, t.borrowed), (26, 8, 0));
        // p4d is at 3/4, g5.2xlarge at 2/2: the g5 is the tightest though p4d holds more.
        let tight = &rows[t.tightest.unwrap()];
        assert_eq!(tight.instance_type, "ml.g5.2xlarge");
        assert_eq!(share_totals(&rows, "nobody"), ShareTotals::default());
    }
}
