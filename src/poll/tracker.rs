//! What the poller remembers about one queue between refreshes: every tracked job with its
//! listing and describe fingerprints, and the queue's last good data. Pure (no I/O).

use std::collections::{HashMap, HashSet};

use crate::batch::{DescribedJob, JobFingerprint, JobSummary, QueueFront};
use crate::model::{JobStatus, Millis, QueueSnapshot, QuotaShare, TrackedJob};

use super::discover::QueueInfo;
use super::plan::JobFacts;

#[derive(Debug, Clone)]
struct Entry {
    tracked: TrackedJob,
    /// Fingerprint in the current refresh's listings (`None`: not listed this time).
    listed: Option<JobFingerprint>,
    /// Not listed although its last known status was listed successfully.
    gone: bool,
    /// Fingerprint when last described.
    described: Option<JobFingerprint>,
    /// Known from the journal only (a warm start), until the first listing is merged.
    journaled: bool,
}

/// One queue's remembered state.
#[derive(Debug, Clone)]
pub struct QueueTracker {
    base: QueueSnapshot,
    /// Boxed: an entry is about 530 bytes, and a hash table keeps an eighth to a half of its
    /// slots empty (at 50,000 jobs, 65,536 slots: 35 MB inline against 2 MB of pointers).
    jobs: HashMap<String, Box<Entry>>,
}

impl QueueTracker {
    pub fn new(info: &QueueInfo) -> Self {
        let mut t = Self {
            base: QueueSnapshot::default(),
            jobs: HashMap::new(),
        };
        t.set_info(info);
        t
    }

    /// A tracker that starts from a queue as journaled (a warm start): its jobs are known as
    /// they were then, each described job with the fingerprint it had when described, so the
    /// first refresh describes only the jobs whose listing differs (and the new and vanished
    /// ones), as a steady refresh does; until then those show as not described (the view is
    /// partial, see [`QueueSnapshot::describe_progress`]). Jobs journaled before they were
    /// described stay new.
    pub fn seeded(info: &QueueInfo, journaled: &QueueSnapshot) -> Self {
        let mut base = journaled.clone();
        base.jobs = Vec::new();
        base.stale_reason = None;
        let jobs = journaled
            .jobs
            .iter()
            .map(|tj| {
                let entry = Entry {
                    tracked: tj.clone(),
                    listed: None,
                    gone: false,
                    described: tj
                        .described_at
                        .map(|_| JobFingerprint::of_described(&tj.job)),
                    journaled: true,
                };
                (tj.job.id.clone(), Box::new(entry))
            })
            .collect();
        let mut t = Self { base, jobs };
        t.set_info(info);
        t
    }

    pub fn arn(&self) -> &str {
        &self.base.arn
    }

    pub fn name(&self) -> &str {
        &self.base.name
    }

    /// Queue attributes from discovery.
    pub fn set_info(&mut self, info: &QueueInfo) {
        let q = &info.queue;
        self.base.name.clone_from(&q.name);
        self.base.arn.clone_from(&q.arn);
        self.base.state.clone_from(&q.state);
        self.base.status.clone_from(&q.status);
        self.base
            .scheduling_policy_arn
            .clone_from(&q.scheduling_policy_arn);
        self.base.environment = info.environment.clone();
    }

    pub fn set_shares(&mut self, shares: Vec<QuotaShare>) {
        self.base.shares = shares;
    }

    pub fn set_front(&mut self, front: QueueFront) {
        self.base.front_of_queue = front.front_of_queue;
        self.base.front_of_shares = front.front_of_shares;
        self.base.utilization = front.utilization;
        if front.last_updated_at.is_some() {
            self.base.server_time = front.last_updated_at;
        }
    }

    /// A refresh finished: complete (`None`) or not (the reason).
    pub fn finish(&mut self, now: Millis, stale_reason: Option<String>) {
        if stale_reason.is_none() {
            self.base.refreshed_at = Some(now);
        }
        self.base.stale_reason = stale_reason;
    }

    /// Takes this refresh's listings (active statuses and the recent finished page): updates
    /// the listing fields of known jobs, adds new ones, and remembers who was listed. `listed`
    /// are the statuses whose listing succeeded; a job whose last known status is among them
    /// but that is not listed has moved on (`gone`).
    pub fn merge_listing(&mut self, summaries: Vec<JobSummary>, listed: &[JobStatus], now: Millis) {
        for e in self.jobs.values_mut() {
            e.listed = None;
            e.gone = listed.contains(&e.tracked.job.status);
        }
        for s in summaries {
            match self.jobs.get_mut(&s.id) {
                Some(e) => {
                    s.apply_to(&mut e.tracked.job);
                    if !s.arn.is_empty() {
                        e.tracked.arn.clone_from(&s.arn);
                    }
                    e.tracked.listed_at = now;
                    e.listed = Some(s.fingerprint.clone());
                    e.gone = false;
                }
                None => {
                    let entry = Entry {
                        tracked: TrackedJob {
                            job: s.to_job(),
                            arn: s.arn.clone(),
                            described_at: None,
                            listed_at: now,
                        },
                        listed: Some(s.fingerprint.clone()),
                        gone: false,
                        described: None,
                        journaled: false,
                    };
                    self.jobs.insert(s.id, Box::new(entry));
                }
            }
        }
        // A journaled job whose listing differs from its journaled facts (or that moved on) is
        // not described in this view until it is described again: the view is partial until
        // then, never complete with details known to be out of date.
        for e in self.jobs.values_mut().filter(|e| e.journaled) {
            let moved = match &e.listed {
                Some(l) => e.described.as_ref() != Some(l),
                None => e.gone,
            };
            if moved {
                e.tracked.described_at = None;
            }
            e.journaled = false;
        }
    }

    /// Position of jobs at the front of the queue (then the fronts of shares not in it).
    pub fn front_ranks(&self) -> HashMap<String, usize> {
        let by_arn: HashMap<&str, &str> = self
            .jobs
            .iter()
            .map(|(id, e)| (e.tracked.arn.as_str(), id.as_str()))
            .collect();
        let mut ranks = HashMap::new();
        let entries = self
            .base
            .front_of_queue
            .iter()
            .chain(self.base.front_of_shares.values().flatten());
        for f in entries {
            if let Some(id) = by_arn.get(f.job_arn.as_str()) {
                let next = ranks.len();
                ranks.entry(id.to_string()).or_insert(next);
            }
        }
        ranks
    }

    /// The planner's view of every tracked job.
    pub fn facts<'a>(&'a self, ranks: &HashMap<String, usize>) -> Vec<JobFacts<'a>> {
        self.jobs
            .iter()
            .map(|(id, e)| JobFacts {
                id,
                listed: e.listed.as_ref(),
                gone: e.gone,
                described: e.described.as_ref(),
                status: e.tracked.job.status,
                described_at: e.tracked.described_at,
                front_rank: ranks.get(id).copied(),
            })
            .collect()
    }

    pub fn apply_described(&mut self, d: DescribedJob, now: Millis) {
        let id = d.job.id.clone();
        let listed_at = self.jobs.get(&id).map_or(now, |e| e.tracked.listed_at);
        let listed = self.jobs.get(&id).and_then(|e| e.listed.clone());
        let gone = self.jobs.get(&id).is_some_and(|e| e.gone);
        self.jobs.insert(
            id,
            Box::new(Entry {
                tracked: TrackedJob {
                    job: d.job,
                    arn: d.arn,
                    described_at: Some(now),
                    listed_at,
                },
                listed,
                gone,
                described: Some(d.fingerprint),
                journaled: false,
            }),
        );
    }

    /// A job the service no longer knows.
    pub fn forget(&mut self, id: &str) {
        self.jobs.remove(id);
    }

    /// Bounds the finished jobs kept: those in this refresh's finished listing, plus the
    /// `keep` most recently stopped of the others.
    pub fn prune_finished(&mut self, keep: usize) {
        let mut unlisted: Vec<(Millis, String)> = self
            .jobs
            .iter()
            .filter(|(_, e)| e.tracked.job.status.is_terminal() && e.listed.is_none())
            .map(|(id, e)| {
                let j = &e.tracked.job;
                (j.stopped_at.unwrap_or(j.created_at), id.clone())
            })
            .collect();
        unlisted.sort_by(|a, b| b.cmp(a));
        let drop: HashSet<String> = unlisted.into_iter().skip(keep).map(|(_, id)| id).collect();
        self.jobs.retain(|id, _| !drop.contains(id));
    }

    pub fn job_count(&self) -> usize {
        self.jobs.len()
    }

    /// The queue as the console sees it now; jobs oldest first.
    pub fn snapshot(&self) -> QueueSnapshot {
        let mut out = self.base.clone();
        let mut jobs: Vec<TrackedJob> = self.jobs.values().map(|e| e.tracked.clone()).collect();
        jobs.sort_by(|a, b| {
            a.job
                .created_at
                .cmp(&b.job.created_at)
                .then_with(|| a.job.id.cmp(&b.job.id))
        });
        out.jobs = jobs;
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::JobQueueInfo;
    use crate::model::{ServiceEnvironment, ServiceJob};

    fn info() -> QueueInfo {
        QueueInfo {
            queue: JobQueueInfo {
                name: "q".into(),
                arn: "arn:q".into(),
                state: "ENABLED".into(),
                status: "VALID".into(),
                status_reason: None,
                queue_type: None,
                scheduling_policy_arn: None,
                service_environments: Vec::new(),
            },
            environment: ServiceEnvironment::default(),
        }
    }

    fn summary(id: &str, status: JobStatus) -> JobSummary {
        JobSummary {
            id: id.into(),
            arn: format!("arn:{id}"),
            name: id.into(),
            share: "a".into(),
            instance_type: "ml.m5.large".into(),
            instance_count: 1,
            created_at: 1_000,
            fingerprint: JobFingerprint {
                status,
                status_reason: None,
                latest_attempt: None,
                scheduled_at: None,
                started_at: None,
                stopped_at: None,
                is_terminated: false,
            },
        }
    }

    /// A job as described then journaled: priority 7, described at 5,000.
    fn journaled(id: &str, status: JobStatus) -> TrackedJob {
        let job = ServiceJob {
            priority: 7,
            ..summary(id, status).to_job()
        };
        TrackedJob {
            job,
            arn: format!("arn:{id}"),
            described_at: Some(5_000),
            listed_at: 5_000,
        }
    }

    #[test]
    fn a_warm_start_describes_only_what_moved_and_is_partial_until_it_is() {
        let q = QueueSnapshot {
            arn: "arn:q".into(),
            jobs: vec![
                journaled("same", JobStatus::Runnable),
                journaled("moved", JobStatus::Runnable),
                journaled("gone", JobStatus::Runnable),
            ],
            ..QueueSnapshot::default()
        };
        let mut t = QueueTracker::seeded(&info(), &q);
        t.merge_listing(
            vec![
                summary("same", JobStatus::Runnable),
                summary("moved", JobStatus::Running),
                summary("new", JobStatus::Runnable),
            ],
            &[JobStatus::Runnable, JobStatus::Running],
            9_000,
        );
        let mut todo = super::super::plan::plan(&t.facts(&HashMap::new()), 0);
        todo.sort();
        use super::super::plan::Reason;
        let want = [
            ("gone", Reason::Vanished),
            ("moved", Reason::Changed),
            ("new", Reason::New),
        ];
        assert_eq!(todo, want.map(|(id, r)| (id.to_string(), r)));
        let snap = t.snapshot();
        let get = |id: &str| snap.jobs.iter().find(|j| j.job.id == id).unwrap();
        // The unchanged job keeps its journaled details, as described then.
        assert_eq!(get("same").described_at, Some(5_000));
        assert_eq!(get("same").job.priority, 7);
        // The others are not described in this view until they are described again.
        assert_eq!(get("moved").described_at, None);
        assert_eq!(get("gone").described_at, None);
        assert_eq!(snap.describe_progress(), Some((1, 4)));
    }
}
