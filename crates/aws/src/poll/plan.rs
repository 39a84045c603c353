//! Which jobs to describe in a refresh: pure, so the polling policy is unit-tested without a
//! network.
//!
//! - **Must** describe (no budget): jobs seen for the first time (`New`), jobs whose listing
//!   fingerprint differs from the one they had when last described (`Changed`: status, status
//!   reason, latest attempt, timestamps), and active jobs that vanished from the active
//!   listings (`Vanished`: they finished or were deleted; one describe tells which; a job whose
//!   status listing failed this time is not vanished, just unknown). A describe
//!   that fails leaves the job's fingerprint unmatched, so it is retried next refresh.
//! - **Rolling** refresh (within `budget`): unchanged active jobs, to catch what a listing does
//!   not show (a priority changed by someone else). Half the budget (rounded up) goes to jobs
//!   at the front of the queue or of a share, least recently described first; the rest to every
//!   remaining candidate, least recently described first, so each active job comes round.
//! - Terminal jobs are described once: a terminal job whose fingerprint matches is never
//!   described again.

use crate::batch::JobFingerprint;
use quotatop_model::{JobStatus, Millis};

/// Why a job is described.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Reason {
    New,
    Changed,
    Vanished,
    Rolling,
}

/// What the planner knows about one tracked or newly listed job.
#[derive(Debug, Clone)]
pub struct JobFacts<'a> {
    pub id: &'a str,
    /// Fingerprint in this refresh's listings; `None` when the job was not listed.
    pub listed: Option<&'a JobFingerprint>,
    /// Not listed although the listing of its last known status succeeded: it moved on.
    /// (When that listing failed, an unlisted job is simply left alone.)
    pub gone: bool,
    /// Fingerprint when last described; `None` when never described.
    pub described: Option<&'a JobFingerprint>,
    /// Last known status.
    pub status: JobStatus,
    /// When last described (local epoch ms).
    pub described_at: Option<Millis>,
    /// Position at the front of the queue or of a share, if there.
    pub front_rank: Option<usize>,
}

/// The describes of one refresh, musts first (front of queue first), then the rolling ones.
pub fn plan(jobs: &[JobFacts<'_>], budget: usize) -> Vec<(String, Reason)> {
    let mut must: Vec<(&JobFacts<'_>, Reason)> = Vec::new();
    let mut rolling: Vec<&JobFacts<'_>> = Vec::new();
    for j in jobs {
        match (j.listed, j.described) {
            (None, _) if j.gone && !j.status.is_terminal() => must.push((j, Reason::Vanished)),
            (None, _) => {}
            (Some(_), None) => must.push((j, Reason::New)),
            (Some(l), Some(d)) if l != d => must.push((j, Reason::Changed)),
            (Some(l), Some(_)) if !l.status.is_terminal() => rolling.push(j),
            (Some(_), Some(_)) => {}
        }
    }
    must.sort_by(|a, b| {
        rank_key(a.0.front_rank)
            .cmp(&rank_key(b.0.front_rank))
            .then(a.1.cmp(&b.1))
            .then(a.0.id.cmp(b.0.id))
    });
    let mut out: Vec<(String, Reason)> = must
        .into_iter()
        .map(|(j, r)| (j.id.to_string(), r))
        .collect();

    let staleness = |j: &&JobFacts<'_>| (j.described_at, rank_key(j.front_rank), j.id.to_string());
    let front_quota = budget.div_ceil(2);
    let mut front: Vec<&JobFacts<'_>> = rolling
        .iter()
        .copied()
        .filter(|j| j.front_rank.is_some())
        .collect();
    front.sort_by_key(staleness);
    front.truncate(front_quota);
    let picked: std::collections::HashSet<&str> = front.iter().map(|j| j.id).collect();
    let mut rest: Vec<&JobFacts<'_>> = rolling
        .iter()
        .copied()
        .filter(|j| !picked.contains(j.id))
        .collect();
    rest.sort_by_key(staleness);
    rest.truncate(budget.saturating_sub(front.len()));
    out.extend(
        front
            .into_iter()
            .chain(rest)
            .map(|j| (j.id.to_string(), Reason::Rolling)),
    );
    out
}

fn rank_key(rank: Option<usize>) -> usize {
    rank.unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fp(status: JobStatus, reason: &str) -> JobFingerprint {
        JobFingerprint {
            status,
            status_reason: Some(reason.to_string()),
            latest_attempt: None,
            scheduled_at: None,
            started_at: None,
            stopped_at: None,
            is_terminated: false,
        }
    }

    struct J {
        id: String,
        listed: Option<JobFingerprint>,
        gone: bool,
        described: Option<JobFingerprint>,
        status: JobStatus,
        at: Option<Millis>,
        rank: Option<usize>,
    }

    fn facts(js: &[J]) -> Vec<JobFacts<'_>> {
        js.iter()
            .map(|j| JobFacts {
                id: &j.id,
                listed: j.listed.as_ref(),
                gone: j.gone,
                described: j.described.as_ref(),
                status: j.status,
                described_at: j.at,
                front_rank: j.rank,
            })
            .collect()
    }

    /// `n` quiet RUNNABLE jobs described at times 0..n, the first `front` of them at the front.
    fn quiet(n: usize, front: usize) -> Vec<J> {
        let f = fp(JobStatus::Runnable, "waiting");
        (0..n)
            .map(|i| J {
                id: format!("j{i:03}"),
                listed: Some(f.clone()),
                gone: false,
                described: Some(f.clone()),
                status: JobStatus::Runnable,
                at: Some(i as Millis),
                rank: (i < front).then_some(i),
            })
            .collect()
    }

    #[test]
    fn new_changed_and_vanished_jobs_are_always_described_front_first() {
        let run = fp(JobStatus::Runnable, "r");
        let mut js = quiet(3, 0);
        js.push(J {
            id: "new".into(),
            listed: Some(run.clone()),
            gone: false,
            described: None,
            status: JobStatus::Runnable,
            at: None,
            rank: None,
        });
        js.push(J {
            id: "moved".into(),
            listed: Some(fp(JobStatus::Running, "r")),
            gone: false,
            described: Some(run.clone()),
            status: JobStatus::Running,
            at: Some(1),
            rank: None,
        });
        js.push(J {
            id: "gone".into(),
            listed: None,
            gone: true,
            described: Some(run.clone()),
            status: JobStatus::Running,
            at: Some(1),
            rank: None,
        });
        js.push(J {
            id: "newfront".into(),
            listed: Some(run.clone()),
            gone: false,
            described: None,
            status: JobStatus::Runnable,
            at: None,
            rank: Some(0),
        });
        let p = plan(&facts(&js), 0);
        assert_eq!(
            p,
            vec![
                ("newfront".to_string(), Reason::New),
                ("new".to_string(), Reason::New),
                ("moved".to_string(), Reason::Changed),
                ("gone".to_string(), Reason::Vanished),
            ]
        );
    }

    #[test]
    fn jobs_whose_listing_failed_are_left_alone() {
        let run = fp(JobStatus::Running, "r");
        let js = vec![J {
            id: "unknown".into(),
            listed: None,
            gone: false,
            described: Some(run.clone()),
            status: JobStatus::Running,
            at: Some(0),
            rank: None,
        }];
        assert!(plan(&facts(&js), 0).is_empty());
    }

    #[test]
    fn terminal_jobs_are_described_once() {
        let done = fp(JobStatus::Succeeded, "Completed");
        let js = vec![
            J {
                id: "described".into(),
                listed: Some(done.clone()),
                gone: false,
                described: Some(done.clone()),
                status: JobStatus::Succeeded,
                at: Some(0),
                rank: None,
            },
            J {
                id: "unlisted".into(),
                listed: None,
                gone: true,
                described: Some(done.clone()),
                status: JobStatus::Succeeded,
                at: Some(0),
                rank: None,
            },
            J {
                id: "fresh".into(),
                listed: Some(done.clone()),
                gone: false,
                described: None,
                status: JobStatus::Succeeded,
                at: None,
                rank: None,
            },
        ];
        assert_eq!(
            plan(&facts(&js), 10),
            vec![("fresh".to_string(), Reason::New)]
        );
    }

    #[test]
    fn rolling_refresh_stays_within_budget_and_favours_the_front() {
        let js = quiet(100, 10);
        let p = plan(&facts(&js), 8);
        assert_eq!(p.len(), 8);
        assert!(p.iter().all(|(_, r)| *r == Reason::Rolling));
        let front = p.iter().filter(|(id, _)| id.as_str() < "j010").count();
        assert_eq!(
            front, 8,
            "least recently described are the front ones here: {p:?}"
        );
        // Front quota is half the budget when front jobs are fresher than the rest.
        let mut js = quiet(100, 10);
        for (i, j) in js.iter_mut().enumerate() {
            j.at = Some(if i < 10 {
                1000 + i as Millis
            } else {
                i as Millis
            });
        }
        let p = plan(&facts(&js), 8);
        let ids: Vec<&str> = p.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "j000", "j001", "j002", "j003", "j010", "j011", "j012", "j013"
            ]
        );
    }

    #[test]
    fn rolling_order_comes_round_to_every_active_job() {
        // Simulate refreshes: each described job gets a newer described_at.
        let mut js = quiet(30, 5);
        let mut seen = std::collections::HashSet::new();
        for round in 0..10 {
            let p = plan(&facts(&js), 6);
            assert!(p.len() <= 6);
            for (id, _) in &p {
                seen.insert(id.clone());
                let j = js.iter_mut().find(|j| &j.id == id).unwrap();
                j.at = Some(10_000 + round);
            }
        }
        assert_eq!(seen.len(), 30, "every job refreshed within 10 rounds");
    }
}
