//! The listings of one refresh as page chains: each active status is one chain of
//! ListServiceJobs pages (each page needs the previous one's token), or, when it is big, one
//! chain per quota share (the `QUOTA_SHARE_NAME` filter combines with the status), so that
//! 10,000 RUNNABLE jobs are twenty short chains side by side instead of 100 pages one after
//! another. The finished statuses are one bounded page each.
//!
//! Listing by share assumes that every job of a quota-managed queue belongs to one of the
//! queue's quota shares as ListQuotaShares lists them (a job is submitted to a share; a share
//! with jobs cannot be deleted). A job of a share missing from that list would not be listed: it
//! would be taken as having moved on and described, which finds it again, so it is described
//! every refresh but never lost.

use std::collections::{HashMap, VecDeque};

use quotatop_model::JobStatus;

use super::refresh::{ACTIVE, FINISHED};
use crate::batch::pager::Pager;
use crate::batch::{BatchError, Op};

/// Largest page the list operations accept.
pub const PAGE: usize = 100;
/// A status whose last complete listing had more jobs than this is listed per quota share; on
/// a first load, a status whose first page has a next token is. More than a few pages one after
/// another, and more than a page per share: listed by share, each share's last page is partly
/// empty, so the listing costs up to one call per share more than the plain one (at most twice
/// its calls past this size), which under a rate limit on ListServiceJobs is time lost, not
/// won.
pub fn by_share_above(shares: usize) -> usize {
    (3 * PAGE).max(shares * PAGE)
}

/// One chain of pages.
#[derive(Debug, Clone)]
pub struct Chain {
    pub status: JobStatus,
    /// Only this quota share's jobs.
    pub share: Option<String>,
    /// The next page's token (`None` before the first page).
    pub token: Option<String>,
    /// At most this many jobs (the finished statuses' newest page).
    pub limit: Option<usize>,
    /// Jobs listed so far.
    pub got: usize,
    /// A first load's plain listing of a status: if its first page has a next token, the
    /// status is listed by share instead.
    pub probe: bool,
    /// How far the chain has followed `nextToken` (a server that never ends it is stopped).
    pub pager: Pager,
}

impl Chain {
    pub fn page_size(&self) -> usize {
        self.limit.map_or(PAGE, |l| l.clamp(1, PAGE))
    }
}

/// What comes after a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum After {
    /// The chain goes on with its next page.
    Next,
    /// The chain ended.
    Done,
    /// The status is listed by share from now on: these chains were added.
    Forked,
}

/// Every chain of one refresh and how each status is doing.
#[derive(Debug, Default)]
pub struct Listings {
    pub chains: Vec<Chain>,
    /// Chains whose next page is to be fetched.
    pub ready: VecDeque<usize>,
    /// Chains not ended, per status.
    open: HashMap<JobStatus, usize>,
    /// Statuses one of whose pages failed.
    failed: Vec<JobStatus>,
    shares: Vec<String>,
}

impl Listings {
    /// The chains of one refresh: `last(status)` is how many jobs the status had in its last
    /// complete listing (`None`: never listed completely), `shares` the queue's quota shares.
    pub fn plan(
        last: impl Fn(JobStatus) -> Option<usize>,
        shares: Vec<String>,
        finished_limit: usize,
    ) -> Self {
        let mut l = Self {
            shares,
            ..Self::default()
        };
        let above = by_share_above(l.shares.len());
        for status in ACTIVE {
            match last(status) {
                Some(n) if n > above && !l.shares.is_empty() => l.by_share(status),
                last => l.add(Chain {
                    status,
                    share: None,
                    token: None,
                    limit: None,
                    got: 0,
                    probe: last.is_none(),
                    pager: Pager::new(Op::ListServiceJobs),
                }),
            }
        }
        if finished_limit > 0 {
            for status in FINISHED {
                l.add(Chain {
                    status,
                    share: None,
                    token: None,
                    limit: Some(finished_limit),
                    got: 0,
                    probe: false,
                    pager: Pager::new(Op::ListServiceJobs),
                });
            }
        }
        l
    }

    fn add(&mut self, chain: Chain) {
        *self.open.entry(chain.status).or_default() += 1;
        self.ready.push_back(self.chains.len());
        self.chains.push(chain);
    }

    fn by_share(&mut self, status: JobStatus) {
        for share in self.shares.clone() {
            self.add(Chain {
                status,
                share: Some(share),
                token: None,
                limit: None,
                got: 0,
                probe: false,
                pager: Pager::new(Op::ListServiceJobs),
            });
        }
    }

    /// Chain `i` got a page of `jobs` jobs with `next` as the next token; an error (and the
    /// status's listing incomplete, as for a failed page) when the chain's pages would not end.
    pub fn page(
        &mut self,
        i: usize,
        jobs: usize,
        next: Option<String>,
    ) -> Result<After, BatchError> {
        let Some(c) = self.chains.get_mut(i) else {
            return Ok(After::Done);
        };
        let next = match c.pager.next(next.as_deref(), &c.token, jobs) {
            Ok(next) => next,
            Err(e) => {
                self.failed(i);
                return Err(e);
            }
        };
        c.got += jobs;
        let probe = std::mem::take(&mut c.probe);
        let status = c.status;
        let full = c.limit.is_some_and(|l| c.got >= l);
        match next {
            Some(_) if probe && !self.shares.is_empty() => {
                self.close(status);
                self.by_share(status);
                Ok(After::Forked)
            }
            Some(token) if !full => {
                c.token = Some(token);
                // Depth first: a chain's next page goes before chains not started, so chains
                // end one after another through the listing (and what vanished from each is
                // known then, [`Listings::ended`]) rather than all near its end.
                self.ready.push_front(i);
                Ok(After::Next)
            }
            _ => {
                self.close(status);
                Ok(After::Done)
            }
        }
    }

    /// What chain `i`, just ended ([`After::Done`]), completed the listing of: its active
    /// status in its quota share, or the whole status once its last chain ended without a
    /// failed page; `None` for a finished status (listed in part) or a status still open.
    /// A tracked job of that scope that was not listed has moved on.
    pub fn ended(&self, i: usize) -> Option<(JobStatus, Option<String>)> {
        let c = self.chains.get(i)?;
        if c.limit.is_some() || !ACTIVE.contains(&c.status) {
            return None;
        }
        match &c.share {
            Some(share) => Some((c.status, Some(share.clone()))),
            None => (self.open.get(&c.status) == Some(&0) && !self.failed.contains(&c.status))
                .then_some((c.status, None)),
        }
    }

    /// A page of chain `i` failed: its status's listing is incomplete.
    pub fn failed(&mut self, i: usize) {
        if let Some(status) = self.chains.get(i).map(|c| c.status) {
            self.close(status);
            if !self.failed.contains(&status) {
                self.failed.push(status);
            }
        }
    }

    fn close(&mut self, status: JobStatus) {
        if let Some(n) = self.open.get_mut(&status) {
            *n = n.saturating_sub(1);
        }
    }

    /// Statuses whose listing completed (every chain ended, no page failed).
    pub fn complete(&self) -> Vec<JobStatus> {
        self.open
            .iter()
            .filter(|(s, n)| **n == 0 && !self.failed.contains(s))
            .map(|(s, _)| *s)
            .collect()
    }

    /// Pages still to fetch: nothing ready (chains in flight are counted by the caller).
    pub fn idle(&self) -> bool {
        self.ready.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shares() -> Vec<String> {
        vec!["a".into(), "b".into()]
    }

    #[test]
    fn a_big_status_is_listed_by_share_and_a_small_one_plainly() {
        let last = |s: JobStatus| match s {
            JobStatus::Runnable => Some(5_000),
            _ => Some(10),
        };
        assert_eq!(by_share_above(2), 300);
        assert_eq!(by_share_above(20), 2_000);
        let l = Listings::plan(last, shares(), 50);
        let runnable: Vec<_> = l
            .chains
            .iter()
            .filter(|c| c.status == JobStatus::Runnable)
            .map(|c| c.share.clone())
            .collect();
        assert_eq!(runnable, [Some("a".to_string()), Some("b".to_string())]);
        assert_eq!(
            l.chains.len(),
            5 + 2 + 2,
            "5 plain actives, 2 by share, 2 finished"
        );
        // Without shares known, a big status is still listed (plainly).
        let l = Listings::plan(last, Vec::new(), 0);
        assert_eq!(l.chains.len(), 6);
    }

    #[test]
    fn a_first_load_forks_a_status_whose_first_page_goes_on() {
        let mut l = Listings::plan(|_| None, shares(), 0);
        let i = l.ready.pop_front().unwrap();
        let status = l.chains[i].status;
        assert_eq!(l.page(i, 100, Some("t".into())).unwrap(), After::Forked);
        assert_eq!(l.chains.len(), 8);
        assert!(!l.complete().contains(&status));
        // The share chains end: the status is complete.
        for c in [6, 7] {
            assert_eq!(l.page(c, 40, Some("t2".into())).unwrap(), After::Next);
            assert_eq!(l.page(c, 40, None).unwrap(), After::Done);
        }
        assert!(l.complete().contains(&status));
        // A failed page leaves its status incomplete.
        let j = l
            .ready
            .iter()
            .copied()
            .find(|&j| l.chains[j].share.is_none())
            .unwrap();
        let other = l.chains[j].status;
        l.failed(j);
        assert!(!l.complete().contains(&other));
    }

    #[test]
    fn chains_go_depth_first_and_say_what_they_completed() {
        let last = |s: JobStatus| match s {
            JobStatus::Runnable => Some(5_000),
            _ => Some(10),
        };
        let mut l = Listings::plan(last, shares(), 50);
        let a = l
            .chains
            .iter()
            .position(|c| c.share.as_deref() == Some("a"))
            .unwrap();
        let b = a + 1;
        assert_eq!(l.chains[b].share.as_deref(), Some("b"));
        // A chain's next page comes before the chains not started yet.
        assert_eq!(l.page(a, 100, Some("t".into())).unwrap(), After::Next);
        assert_eq!(l.ready.front(), Some(&a));
        assert_eq!(
            l.ended(a),
            Some((JobStatus::Runnable, Some("a".to_string())))
        );
        assert_eq!(l.page(a, 20, None).unwrap(), After::Done);
        // Share "a" is complete, RUNNABLE is not (share "b" is still open).
        assert!(!l.complete().contains(&JobStatus::Runnable));
        // A plain status is complete when its one chain ends.
        let run = l
            .chains
            .iter()
            .position(|c| c.status == JobStatus::Running)
            .unwrap();
        assert_eq!(l.page(run, 10, None).unwrap(), After::Done);
        assert_eq!(l.ended(run), Some((JobStatus::Running, None)));
        // A finished status's bounded page completes nothing.
        let done = l
            .chains
            .iter()
            .position(|c| c.status == JobStatus::Succeeded)
            .unwrap();
        assert_eq!(l.page(done, 50, None).unwrap(), After::Done);
        assert_eq!(l.ended(done), None);
        // A plain status whose page failed completes nothing.
        let sub = l
            .chains
            .iter()
            .position(|c| c.status == JobStatus::Submitted)
            .unwrap();
        l.failed(sub);
        assert_eq!(l.ended(sub), None);
    }

    #[test]
    fn a_finished_status_is_one_bounded_page() {
        let mut l = Listings::plan(|_| Some(0), shares(), 50);
        let i = l
            .chains
            .iter()
            .position(|c| c.status == JobStatus::Succeeded)
            .unwrap();
        assert_eq!(l.chains[i].page_size(), 50);
        assert_eq!(l.page(i, 50, Some("more".into())).unwrap(), After::Done);
    }
}
