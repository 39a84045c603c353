//! What the poller remembers about one queue between refreshes: every tracked job with its
//! listing and describe fingerprints, and the queue's last good data. Pure (no I/O).

use std::collections::{HashMap, HashSet};

use crate::batch::{DescribedJob, JobFingerprint, JobSummary, QueueFront};
use quotatop_model::{
    JobStatus, ListingProgress, Millis, QueueSnapshot, QuotaShare, ServiceJob, TrackedJob,
    TrainingEvidence,
};

use super::discover::QueueInfo;
use super::plan::JobFacts;
use super::training::TrainingState;

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
    /// Listed by the listing in progress (see [`QueueTracker::begin_listing`]).
    seen: bool,
}

/// One queue's remembered state.
#[derive(Debug, Clone)]
pub struct QueueTracker {
    base: QueueSnapshot,
    /// Boxed: an entry is about 530 bytes, and a hash table keeps an eighth to a half of its
    /// slots empty (at 50,000 jobs, 65,536 slots: 35 MB inline against 2 MB of pointers).
    jobs: HashMap<String, Box<Entry>>,
    /// A listing of every active status completed at least once: until then the view is
    /// partial whatever was described ([`QueueSnapshot::listing`]).
    listed_once: bool,
    /// Jobs each status had in its last complete listing (which statuses to list by share).
    status_jobs: HashMap<JobStatus, usize>,
    /// What was read of the jobs' training jobs (checkpoint listings, log marks).
    training: TrainingState,
    /// Set while a reconciliation (a full refresh with Batch's events applied) runs: what a
    /// describe finds changed is noted in `found`, since an event should have told it.
    watch: bool,
    /// (job id, what changed) noted while watching, taken by [`QueueTracker::take_found`].
    found: Vec<(String, String)>,
    /// The local time (ms) the service clock `base.server_time` was read at.
    clock_read_at: Option<Millis>,
}

impl QueueTracker {
    pub fn new(info: &QueueInfo) -> Self {
        let mut t = Self {
            base: QueueSnapshot::default(),
            jobs: HashMap::new(),
            listed_once: false,
            status_jobs: HashMap::new(),
            training: TrainingState::default(),
            watch: false,
            found: Vec::new(),
            clock_read_at: None,
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
        base.listing = None;
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
                    seen: false,
                };
                (tj.job.id.clone(), Box::new(entry))
            })
            .collect();
        // The journaled sizes of the statuses say which to list by share, as a last listing
        // would.
        let mut status_jobs = HashMap::new();
        for tj in &journaled.jobs {
            *status_jobs.entry(tj.job.status).or_insert(0) += 1;
        }
        let mut t = Self {
            base,
            jobs,
            listed_once: false,
            status_jobs,
            training: TrainingState::default(),
            watch: false,
            found: Vec::new(),
            clock_read_at: None,
        };
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
        // Each refresh carries only what it read of the training jobs.
        self.base.training.clear();
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
            self.clock_read_at = Some(quotatop_model::wall_clock_ms());
        }
    }

    /// A refresh finished: complete (`None`) or not (the reason).
    pub fn finish(&mut self, now: Millis, stale_reason: Option<String>) {
        if stale_reason.is_none() {
            self.base.refreshed_at = Some(now);
        }
        self.base.stale_reason = stale_reason;
    }

    /// A listing of the queue's jobs starts: jobs are merged page by page as they arrive
    /// ([`QueueTracker::merge_page`]); which jobs moved on is decided when it ends
    /// ([`QueueTracker::end_listing`]). Until then each job keeps what its last listing said.
    pub fn begin_listing(&mut self) {
        for e in self.jobs.values_mut() {
            e.seen = false;
        }
        self.base.listing = Some(ListingProgress::default());
    }

    /// Takes one page of the listing in progress: updates the listing fields of known jobs and
    /// adds new ones. Returns the ids of the page's jobs whose listing differs from what they
    /// were last described as (new or changed: they must be described).
    pub fn merge_page(&mut self, summaries: Vec<JobSummary>, now: Millis) -> Vec<String> {
        let mut todo = Vec::new();
        let mut added = 0;
        for mut s in summaries {
            if !self.jobs.contains_key(&s.id) {
                let share = self.base.shares.iter().find(|sh| sh.name == s.share);
                crate::batch::resolve_from_share(
                    &mut s.instance_type,
                    &mut s.capacity_notes,
                    share,
                );
            }
            let e = match self.jobs.get_mut(&s.id) {
                Some(e) => {
                    // The job is shared with the snapshots already sent: copied only if changed.
                    if s.differs_from(&e.tracked.job) {
                        s.apply_to(std::sync::Arc::make_mut(&mut e.tracked.job));
                    }
                    if !s.arn.is_empty() {
                        e.tracked.arn.clone_from(&s.arn);
                    }
                    e.tracked.listed_at = now;
                    e
                }
                None => self.jobs.entry(s.id.clone()).or_insert_with(|| {
                    Box::new(Entry {
                        tracked: TrackedJob {
                            job: s.to_job().into(),
                            arn: s.arn.clone(),
                            described_at: None,
                            listed_at: now,
                        },
                        listed: None,
                        gone: false,
                        described: None,
                        journaled: false,
                        seen: false,
                    })
                }),
            };
            if !e.seen {
                added += 1;
            }
            e.seen = true;
            e.gone = false;
            e.listed = Some(s.fingerprint);
            if e.described != e.listed {
                // A journaled job whose listing differs from its journaled facts is not
                // described in this view until it is described again: never shown with details
                // known to be out of date.
                if e.journaled {
                    e.tracked.described_at = None;
                }
                todo.push(s.id);
            }
        }
        if let Some(l) = self.base.listing.as_mut() {
            l.listed += added;
        }
        todo
    }

    /// The listing in progress ended. `listed` are the statuses whose listing completed: a
    /// job whose last known status is among them but that was not listed has moved on
    /// (`gone`); jobs of other statuses are left as they were. `complete`: every active
    /// status was listed.
    pub fn end_listing(&mut self, listed: &[JobStatus], complete: bool) {
        for e in self.jobs.values_mut() {
            if !e.seen {
                e.listed = None;
                e.gone = listed.contains(&e.tracked.job.status);
                // A journaled job that moved on is not described in this view until it is
                // described again.
                if e.journaled && e.gone {
                    e.tracked.described_at = None;
                }
            }
            e.journaled = false;
        }
        for status in listed {
            let n = self
                .jobs
                .values()
                .filter(|e| e.seen && e.tracked.job.status == *status)
                .count();
            self.status_jobs.insert(*status, n);
        }
        self.listed_once |= complete;
        self.base.listing = (!self.listed_once).then_some(ListingProgress::default());
    }

    /// Jobs the listing in progress has not shown whose last known status is `status` (in
    /// quota share `share`, if given): once that status's (or share's) listing is complete,
    /// they have moved on and are described at once, not when every listing has ended
    /// ([`QueueTracker::end_listing`] marks them the same way then). Sorted by id.
    pub fn unlisted(&self, status: JobStatus, share: Option<&str>) -> Vec<String> {
        let mut ids: Vec<String> = self
            .jobs
            .iter()
            .filter(|(_, e)| {
                !e.seen
                    && e.tracked.job.status == status
                    && share.is_none_or(|s| e.tracked.job.share == s)
            })
            .map(|(id, _)| id.clone())
            .collect();
        ids.sort();
        ids
    }

    /// Jobs `status` had in its last complete listing.
    pub fn jobs_last_listed(&self, status: JobStatus) -> Option<usize> {
        self.status_jobs.get(&status).copied()
    }

    /// Whether a listing of every active status ever completed.
    pub fn listed_once(&self) -> bool {
        self.listed_once
    }

    /// Every listing at once (tests): [`QueueTracker::begin_listing`], one page, and
    /// [`QueueTracker::end_listing`].
    #[cfg(test)]
    pub fn merge_listing(&mut self, summaries: Vec<JobSummary>, listed: &[JobStatus], now: Millis) {
        self.begin_listing();
        self.merge_page(summaries, now);
        self.end_listing(listed, true);
    }

    /// Position at the front of the queue (then the fronts of shares not in it) by job ARN.
    pub fn front_ranks_by_arn(&self) -> HashMap<String, usize> {
        let mut ranks = HashMap::new();
        let entries = self
            .base
            .front_of_queue
            .iter()
            .chain(self.base.front_of_shares.values().flatten());
        for f in entries {
            let next = ranks.len();
            ranks.entry(f.job_arn.clone()).or_insert(next);
        }
        ranks
    }

    /// The ARN of a tracked job.
    pub fn arn_of(&self, id: &str) -> Option<&str> {
        self.jobs.get(id).map(|e| e.tracked.arn.as_str())
    }

    /// The quota shares' names, as last listed.
    pub fn share_names(&self) -> Vec<String> {
        self.base.shares.iter().map(|s| s.name.clone()).collect()
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

    /// The service clock moved on by the local time since it was read (`now`): what an
    /// event's describes between listings are observed at.
    pub fn tick_clock(&mut self, now: Millis) {
        if let (Some(t), Some(at)) = (self.base.server_time, self.clock_read_at) {
            self.base.server_time = Some(t + (now - at).max(0));
            self.clock_read_at = Some(now);
        }
    }

    /// Whether the job is tracked.
    pub fn has(&self, id: &str) -> bool {
        self.jobs.contains_key(id)
    }

    /// Notes what describes find changed from then on (`true`), or stops (`false`).
    pub fn watch(&mut self, on: bool) {
        self.watch = on;
    }

    /// What describes found changed while watching, since last taken.
    pub fn take_found(&mut self) -> Vec<(String, String)> {
        std::mem::take(&mut self.found)
    }

    pub fn apply_described(&mut self, d: DescribedJob, now: Millis) {
        self.training.set_uri(&d.job.id, d.checkpoint_uri.clone());
        if self.watch {
            let before = self
                .jobs
                .get(&d.job.id)
                .filter(|e| e.described.is_some())
                .map(|e| &*e.tracked.job);
            if let Some(what) = super::events::missed_change(before, &d.job) {
                self.found.push((d.job.id.clone(), what));
            }
        }
        match self.jobs.get_mut(&d.job.id) {
            Some(e) => {
                e.tracked.job = d.job.into();
                e.tracked.arn = d.arn;
                e.tracked.described_at = Some(now);
                e.described = Some(d.fingerprint);
                e.journaled = false;
            }
            None => {
                let id = d.job.id.clone();
                let entry = Entry {
                    tracked: TrackedJob {
                        job: d.job.into(),
                        arn: d.arn,
                        described_at: Some(now),
                        listed_at: now,
                    },
                    listed: None,
                    gone: false,
                    described: Some(d.fingerprint),
                    journaled: false,
                    seen: false,
                };
                self.jobs.insert(id, Box::new(entry));
            }
        }
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

    /// The training-job reads' state, the tracked jobs, and where this refresh's evidence goes
    /// (see `training::measure`).
    pub(super) fn training_parts(
        &mut self,
    ) -> (
        &mut TrainingState,
        Vec<&ServiceJob>,
        &mut Vec<TrainingEvidence>,
    ) {
        let jobs = self.jobs.values().map(|e| &*e.tracked.job).collect();
        (&mut self.training, jobs, &mut self.base.training)
    }

    pub fn job_count(&self) -> usize {
        self.jobs.len()
    }

    /// The queue as the console sees it now; jobs oldest first.
    pub fn snapshot(&self) -> QueueSnapshot {
        let mut out = self.base.clone();
        if !self.listed_once && out.listing.is_none() {
            out.listing = Some(ListingProgress::default());
        }
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
    use quotatop_model::{ServiceEnvironment, ServiceJob};

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
            capacity_notes: Vec::new(),
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
            job: job.into(),
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
