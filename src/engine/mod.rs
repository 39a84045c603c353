//! The quota-share scheduling model: pure, deterministic and event-driven.
//!
//! No I/O and no async: time is passed in with [`Engine::advance_to`], randomness comes only from
//! the configured seed. Every state change is recorded as an [`Event`]. The choices AWS leaves
//! open live in [`policy`].

mod config;
mod error;
mod event;
pub mod policy;
mod rng;
mod sched;
mod share;

use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap, VecDeque};

pub use config::{Delays, EngineConfig};
pub use error::EngineError;
pub use event::{Event, EventReason};
pub use policy::{Misconfiguration, PreemptionKind};
pub use rng::Rng;

use crate::model::{
    Attempt, CapacityLimit, JobStatus, MAX_PRIORITY, Millis, PreemptedAttempt, PreemptionSummary,
    QuotaShare, ServiceEnvironment, ServiceJob, SharingConfig,
};
use share::ShareRec;

/// The engine's handle of a job (its index in submission order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JobId(pub u32);

/// A job to submit.
#[derive(Debug, Clone, PartialEq)]
pub struct JobSpec {
    pub name: String,
    pub share: String,
    /// `schedulingPriority`, 0–9999 (higher first).
    pub priority: i64,
    pub instance_type: String,
    pub instance_count: u32,
    /// Running time needed to finish, in ms of RUNNING.
    pub work_ms: u64,
    /// Progress is saved every this many ms of running; `None` means a preempted job restarts
    /// from zero.
    pub checkpoint_interval_ms: Option<u64>,
    /// `preemptionRetriesBeforeTermination`; `None` requeues forever.
    pub preemption_retries: Option<u32>,
    /// Running time a resumed job spends before making progress again (restoring its last
    /// checkpoint, warming up), after each preemption.
    pub restart_overhead_ms: u64,
}

impl JobSpec {
    pub fn new(
        name: impl Into<String>,
        share: impl Into<String>,
        instance_type: impl Into<String>,
        instance_count: u32,
        work_ms: u64,
    ) -> Self {
        Self {
            name: name.into(),
            share: share.into(),
            priority: 0,
            instance_type: instance_type.into(),
            instance_count,
            work_ms,
            checkpoint_interval_ms: None,
            preemption_retries: None,
            restart_overhead_ms: 0,
        }
    }
    pub fn priority(mut self, p: i64) -> Self {
        self.priority = p;
        self
    }
    pub fn checkpoint_every(mut self, ms: u64) -> Self {
        self.checkpoint_interval_ms = Some(ms);
        self
    }
    pub fn retries(mut self, n: u32) -> Self {
        self.preemption_retries = Some(n);
        self
    }
}

/// A partial update of a share, as UpdateQuotaShare takes it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ShareUpdate {
    pub capacity_limits: Option<Vec<CapacityLimit>>,
    pub sharing: Option<SharingConfig>,
    pub in_share_preemption: Option<crate::model::InSharePreemption>,
    pub state: Option<crate::model::ShareState>,
}

/// How much work a job has done and lost: what the engine knows beyond the API's view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkProgress {
    pub work_ms: u64,
    /// Durable progress (at the last checkpoint, or all of it once finished).
    pub saved_ms: u64,
    /// Running time thrown away by preemptions.
    pub lost_ms: u64,
    /// Restart overhead spent after preemptions.
    pub overhead_ms: u64,
    /// Total time spent RUNNING across attempts: `work + lost + overhead` once finished.
    pub run_ms: u64,
}

/// Usage of one instance type by one share.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeUsage {
    pub instance_type: String,
    /// The share's own limit (0 when the type is not among its limits).
    pub limit: u32,
    /// Instances held by SCHEDULED, STARTING or RUNNING jobs.
    pub used: u32,
    /// The part of `used` beyond `limit`.
    pub borrowed: u32,
}

/// A share and what it uses, per instance type of the environment or of its limits.
#[derive(Debug, Clone, PartialEq)]
pub struct ShareUsage {
    pub share: QuotaShare,
    pub usage: Vec<TypeUsage>,
}

/// What a job keeps for the API's view of it (DescribeServiceJob): its AWS-style id, name,
/// attempts and recent preemptions. A lean engine keeps none of it.
pub(crate) struct JobApi {
    pub uuid: String,
    pub name: String,
    pub recent: VecDeque<PreemptedAttempt>,
    pub attempts: Vec<Attempt>,
}

pub(crate) struct JobRec {
    /// `None` in a lean engine.
    pub api: Option<Box<JobApi>>,
    pub share: usize,
    pub ty: usize,
    pub count: u32,
    pub priority: u32,
    pub status: JobStatus,
    pub reason: Option<Cow<'static, str>>,
    pub created_at: Millis,
    pub scheduled_at: Option<Millis>,
    pub started_at: Option<Millis>,
    pub stopped_at: Option<Millis>,
    pub work_ms: u64,
    pub checkpoint_ms: Option<u64>,
    pub saved_ms: u64,
    pub lost_ms: u64,
    pub run_ms: u64,
    pub restart_overhead_ms: u64,
    /// Overhead still to spend in the current attempt before progress resumes.
    pub overhead_due: u64,
    pub overhead_ms: u64,
    pub run_since: Option<Millis>,
    pub retries: Option<u32>,
    pub preempted: u32,
    /// Bumped whenever a pending timer of this job must be ignored.
    pub generation: u32,
    /// Set while a preemption is in progress.
    pub preempting: Option<PreemptionKind>,
    pub misconfigured: Option<Misconfiguration>,
    pub dispatch_seq: u64,
    pub terminated: bool,
}

impl JobRec {
    fn queue_key(&self, id: u32) -> policy::QueueKey {
        policy::queue_key(self.priority, self.created_at, id)
    }
    /// When the current attempt began to hold capacity.
    fn attempt_start(&self) -> Millis {
        self.started_at
            .or(self.scheduled_at)
            .unwrap_or(self.created_at)
    }
}

/// A pending timer: the job's next lifecycle step. Stale when the job's generation moved on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Timer {
    at: Millis,
    seq: u64,
    job: u32,
    generation: u32,
}

/// The quota-share scheduling engine for one job queue and its service environment.
pub struct Engine {
    config: EngineConfig,
    now: Millis,
    rng: Rng,
    types: Vec<String>,
    type_index: HashMap<String, usize>,
    /// Service environment capacity per interned type.
    env: Vec<u32>,
    shares: Vec<ShareRec>,
    share_index: HashMap<String, usize>,
    jobs: Vec<JobRec>,
    uuid_index: HashMap<String, u32>,
    timers: BinaryHeap<Reverse<Timer>>,
    timer_seq: u64,
    dispatch_seq: u64,
    events: Vec<Event>,
    dirty: bool,
    /// Jobs keep no API view ([`Engine::set_lean`]).
    lean: bool,
}

impl Engine {
    pub fn new(config: EngineConfig) -> Result<Self, EngineError> {
        let mut engine = Self {
            now: config.start_ms,
            rng: Rng::new(config.seed),
            types: Vec::new(),
            type_index: HashMap::new(),
            env: Vec::new(),
            shares: Vec::new(),
            share_index: HashMap::new(),
            jobs: Vec::new(),
            uuid_index: HashMap::new(),
            timers: BinaryHeap::new(),
            timer_seq: 0,
            dispatch_seq: 0,
            events: Vec::new(),
            dirty: false,
            lean: false,
            config,
        };
        let mut seen = std::collections::HashSet::new();
        for limit in engine.config.capacity.clone() {
            if limit.max_capacity < 1 {
                return Err(EngineError::InvalidEnvironment(limit.instance_type));
            }
            if !valid_instance_type(&limit.instance_type) {
                return Err(EngineError::InvalidInstanceType(limit.instance_type));
            }
            if !seen.insert(limit.instance_type.clone()) {
                return Err(EngineError::DuplicateLimit(limit.instance_type));
            }
            let t = engine.intern(&limit.instance_type);
            engine.env[t] = limit.max_capacity;
        }
        Ok(engine)
    }

    /// A lean engine keeps no API view of its jobs: no AWS-style ids (so [`Engine::find`] and
    /// [`Engine::job_uuid`] find nothing), names, attempts or recent preemptions, and
    /// [`Engine::job`] shows them empty. Scheduling, timing, accounting ([`Engine::work`]) and
    /// the event log are the same as in a full engine with the same seed. For replays that read
    /// the event log; applies to the jobs submitted after it is set.
    pub fn set_lean(&mut self, lean: bool) {
        self.lean = lean;
    }

    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// The simulated time.
    pub fn now(&self) -> Millis {
        self.now
    }

    pub fn service_environment(&self, name: &str) -> ServiceEnvironment {
        ServiceEnvironment {
            name: name.to_string(),
            capacity: self.config.capacity.clone(),
        }
    }

    fn intern(&mut self, ty: &str) -> usize {
        if let Some(&i) = self.type_index.get(ty) {
            return i;
        }
        let i = self.types.len();
        self.types.push(ty.to_string());
        self.type_index.insert(ty.to_string(), i);
        self.env.push(0);
        for s in &mut self.shares {
            s.add_type();
        }
        i
    }

    // ----- shares -------------------------------------------------------------------------

    pub fn create_share(&mut self, share: QuotaShare) -> Result<(), EngineError> {
        validate_share_name(&share.name)?;
        validate_limits(&share.capacity_limits)?;
        validate_sharing(&share.sharing)?;
        if self.share_index.contains_key(&share.name) {
            return Err(EngineError::DuplicateShare(share.name));
        }
        if self.share_index.len() >= crate::model::MAX_SHARES_PER_QUEUE {
            return Err(EngineError::TooManyShares {
                max: crate::model::MAX_SHARES_PER_QUEUE,
            });
        }
        for l in &share.capacity_limits {
            self.intern(&l.instance_type);
        }
        let idx = self.shares.len();
        let rec = ShareRec::new(share, &self.type_index, self.types.len());
        self.share_index.insert(rec.spec.name.clone(), idx);
        self.shares.push(rec);
        self.reevaluate_misconfigurations();
        self.dirty = true;
        self.settle();
        Ok(())
    }

    /// Partial update; lowering a limit (or taking away borrowing) may preempt the share's jobs.
    pub fn update_share(&mut self, name: &str, update: ShareUpdate) -> Result<(), EngineError> {
        let s = self.share_idx(name)?;
        if let Some(limits) = &update.capacity_limits {
            validate_limits(limits)?;
        }
        let mut sharing = self.shares[s].spec.sharing;
        if let Some(new) = update.sharing {
            // A strategy change without a borrow limit keeps no stale borrow limit.
            sharing = new;
            if sharing.strategy.borrows() && sharing.borrow_limit.is_none() {
                sharing.borrow_limit = Some(crate::model::UNLIMITED_BORROW);
            }
        }
        validate_sharing(&sharing)?;
        if let Some(limits) = update.capacity_limits {
            for l in &limits {
                self.intern(&l.instance_type);
            }
            self.shares[s].spec.capacity_limits = limits;
            let (index, n) = (&self.type_index, self.types.len());
            self.shares[s].refresh_own(index, n);
        }
        self.shares[s].spec.sharing = sharing;
        if let Some(p) = update.in_share_preemption {
            self.shares[s].spec.in_share_preemption = p;
        }
        if let Some(st) = update.state {
            self.shares[s].spec.state = st;
        }
        self.enforce_limits(s);
        self.reevaluate_misconfigurations();
        self.dirty = true;
        self.settle();
        Ok(())
    }

    /// Deletes a DISABLED share; its unfinished jobs end FAILED.
    pub fn delete_share(&mut self, name: &str) -> Result<(), EngineError> {
        let s = self.share_idx(name)?;
        if self.shares[s].spec.state != crate::model::ShareState::Disabled {
            return Err(EngineError::ShareNotDisabled(name.to_string()));
        }
        let ids: Vec<u32> = (0..self.jobs.len() as u32)
            .filter(|&j| {
                let r = &self.jobs[j as usize];
                r.share == s && !r.status.is_terminal()
            })
            .collect();
        for j in ids {
            self.finish_failed(
                j,
                "Quota share deleted".to_string(),
                EventReason::ShareDeleted,
            );
        }
        self.shares[s].deleted = true;
        self.share_index.remove(name);
        self.reevaluate_misconfigurations();
        self.dirty = true;
        self.settle();
        Ok(())
    }

    fn share_idx(&self, name: &str) -> Result<usize, EngineError> {
        self.share_index
            .get(name)
            .copied()
            .ok_or_else(|| EngineError::UnknownShare(name.to_string()))
    }

    /// Live shares in creation order.
    pub fn shares(&self) -> Vec<QuotaShare> {
        self.live_shares().map(|s| s.spec.clone()).collect()
    }

    pub fn share(&self, name: &str) -> Option<&QuotaShare> {
        self.share_index.get(name).map(|&i| &self.shares[i].spec)
    }

    fn live_shares(&self) -> impl Iterator<Item = &ShareRec> {
        self.shares.iter().filter(|s| !s.deleted)
    }

    /// Usage of every live share for every instance type it has a limit for or uses.
    pub fn usage(&self) -> Vec<ShareUsage> {
        self.live_shares()
            .map(|s| ShareUsage {
                share: s.spec.clone(),
                usage: (0..self.types.len())
                    .filter(|&u| s.own[u] > 0 || s.used[u] > 0)
                    .map(|u| TypeUsage {
                        instance_type: self.types[u].clone(),
                        limit: s.own[u],
                        used: s.used[u],
                        borrowed: s.used[u].saturating_sub(s.own[u]),
                    })
                    .collect(),
            })
            .collect()
    }

    /// Instances of each type held across the queue.
    pub fn total_usage(&self) -> Vec<(String, u32)> {
        (0..self.types.len())
            .map(|u| {
                let used = self.live_shares().map(|s| s.used[u]).sum();
                (self.types[u].clone(), used)
            })
            .filter(|(_, used)| *used > 0)
            .collect()
    }

    // ----- jobs ---------------------------------------------------------------------------

    /// Makes room for `additional` more jobs up front (a replay knows its trace's size), so the
    /// job table is not left up to twice as large as needed by its growth.
    pub fn reserve_jobs(&mut self, additional: usize) {
        self.jobs.reserve_exact(additional);
        if !self.lean {
            self.uuid_index.reserve(additional);
        }
    }

    pub fn submit(&mut self, spec: JobSpec) -> Result<JobId, EngineError> {
        let s = self.share_idx(&spec.share)?;
        if self.shares[s].spec.state == crate::model::ShareState::Disabled {
            return Err(EngineError::ShareDisabled(spec.share));
        }
        let priority = check_priority(spec.priority)?;
        if spec.instance_count < 1 {
            return Err(EngineError::InvalidInstanceCount);
        }
        if !valid_instance_type(&spec.instance_type) {
            return Err(EngineError::InvalidInstanceType(spec.instance_type));
        }
        let ty = self.intern(&spec.instance_type);
        let id = self.jobs.len() as u32;
        let api = if self.lean {
            // The same draws as an id, so a lean engine's delays are a full one's.
            self.rng.next_u64();
            self.rng.next_u64();
            None
        } else {
            let uuid = self.rng.uuid();
            self.uuid_index.insert(uuid.clone(), id);
            Some(Box::new(JobApi {
                uuid,
                name: spec.name,
                recent: VecDeque::new(),
                attempts: Vec::new(),
            }))
        };
        self.jobs.push(JobRec {
            api,
            share: s,
            ty,
            count: spec.instance_count,
            priority,
            status: JobStatus::Submitted,
            reason: None,
            created_at: self.now,
            scheduled_at: None,
            started_at: None,
            stopped_at: None,
            work_ms: spec.work_ms,
            checkpoint_ms: spec.checkpoint_interval_ms.filter(|&c| c > 0),
            saved_ms: 0,
            lost_ms: 0,
            run_ms: 0,
            restart_overhead_ms: spec.restart_overhead_ms,
            overhead_due: 0,
            overhead_ms: 0,
            run_since: None,
            retries: spec.preemption_retries,
            preempted: 0,
            generation: 0,
            preempting: None,
            misconfigured: None,
            dispatch_seq: 0,
            terminated: false,
        });
        self.emit(id, None, JobStatus::Submitted, EventReason::Submitted);
        let d = self.delay(self.config.delays.submitted_ms);
        self.schedule(id, d);
        self.settle();
        Ok(JobId(id))
    }

    /// UpdateServiceJob: changes the scheduling priority of an unfinished job.
    pub fn update_priority(&mut self, job: JobId, priority: i64) -> Result<(), EngineError> {
        let j = self.job_idx(job)?;
        let new = check_priority(priority)?;
        let rec = &self.jobs[j as usize];
        if rec.status.is_terminal() {
            return Err(EngineError::JobFinished(
                rec.api
                    .as_ref()
                    .map_or_else(|| format!("#{j}"), |a| a.uuid.clone()),
            ));
        }
        let old = rec.priority;
        let (s, ty, status) = (rec.share, rec.ty, rec.status);
        let queued = status == JobStatus::Runnable && rec.misconfigured.is_none();
        if queued {
            let key = rec.queue_key(j);
            self.shares[s].queues[ty].remove(&key);
        }
        self.jobs[j as usize].priority = new;
        if queued {
            let key = self.jobs[j as usize].queue_key(j);
            self.shares[s].queues[ty].insert(key);
        }
        self.emit(
            j,
            Some(status),
            status,
            EventReason::PriorityChanged { old, new },
        );
        self.dirty = true;
        self.settle();
        Ok(())
    }

    /// TerminateServiceJob: the job ends FAILED with the given reason. Terminating a finished
    /// job changes nothing.
    pub fn terminate(&mut self, job: JobId, reason: &str) -> Result<(), EngineError> {
        let j = self.job_idx(job)?;
        if self.jobs[j as usize].status.is_terminal() {
            return Ok(());
        }
        self.jobs[j as usize].terminated = true;
        self.finish_failed(j, reason.to_string(), EventReason::Terminated);
        self.dirty = true;
        self.settle();
        Ok(())
    }

    fn job_idx(&self, job: JobId) -> Result<u32, EngineError> {
        if (job.0 as usize) < self.jobs.len() {
            Ok(job.0)
        } else {
            Err(EngineError::UnknownJob(format!("#{}", job.0)))
        }
    }

    /// Looks a job up by its AWS-style id.
    pub fn find(&self, uuid: &str) -> Option<JobId> {
        self.uuid_index.get(uuid).map(|&i| JobId(i))
    }

    pub fn job_count(&self) -> usize {
        self.jobs.len()
    }

    pub fn status(&self, job: JobId) -> Option<JobStatus> {
        self.jobs.get(job.0 as usize).map(|r| r.status)
    }

    pub fn job_uuid(&self, job: JobId) -> Option<&str> {
        self.jobs
            .get(job.0 as usize)
            .and_then(|r| Some(r.api.as_ref()?.uuid.as_str()))
    }

    pub fn work(&self, job: JobId) -> Option<WorkProgress> {
        self.jobs.get(job.0 as usize).map(|r| {
            let running = r.run_since.map_or(0, |t| (self.now - t).max(0) as u64);
            WorkProgress {
                work_ms: r.work_ms,
                saved_ms: r.saved_ms,
                lost_ms: r.lost_ms,
                overhead_ms: r.overhead_ms + running.min(r.overhead_due),
                run_ms: r.run_ms + running,
            }
        })
    }

    /// The running time a re-run of the job spends restoring before it makes progress.
    pub fn restart_overhead(&self, job: JobId) -> Option<u64> {
        self.jobs.get(job.0 as usize).map(|r| r.restart_overhead_ms)
    }

    /// The job's checkpoint interval (ms of RUNNING between durable checkpoints), if it has one:
    /// a fact the API does not show, used by ground-truth scorecards.
    pub fn checkpoint_interval(&self, job: JobId) -> Option<u64> {
        self.jobs.get(job.0 as usize).and_then(|r| r.checkpoint_ms)
    }

    /// The job as DescribeServiceJob shows it.
    pub fn job(&self, job: JobId) -> Option<ServiceJob> {
        let r = self.jobs.get(job.0 as usize)?;
        let api = r.api.as_deref();
        Some(ServiceJob {
            id: api.map(|a| a.uuid.clone()).unwrap_or_default(),
            name: api.map(|a| a.name.clone()).unwrap_or_default(),
            share: self.shares[r.share].spec.name.clone(),
            priority: r.priority,
            instance_type: self.types[r.ty].clone(),
            instance_count: r.count,
            status: r.status,
            status_reason: r.reason.as_deref().map(str::to_string),
            created_at: r.created_at,
            scheduled_at: r.scheduled_at,
            started_at: r.started_at,
            stopped_at: r.stopped_at,
            preemption_retries: r.retries,
            preemption: (r.preempted > 0).then(|| PreemptionSummary {
                preempted_attempt_count: r.preempted,
                recent_preempted_attempts: api
                    .map(|a| a.recent.iter().cloned().collect())
                    .unwrap_or_default(),
            }),
            attempts: api.map(|a| a.attempts.clone()).unwrap_or_default(),
            is_terminated: r.terminated,
        })
    }

    /// Every job, in submission order.
    pub fn jobs(&self) -> impl Iterator<Item = ServiceJob> + '_ {
        (0..self.jobs.len() as u32).filter_map(|j| self.job(JobId(j)))
    }

    /// RUNNABLE jobs of a share in dispatch order (misconfigured ones last, in their own order).
    pub fn share_queue(&self, name: &str) -> Vec<JobId> {
        let Some(&s) = self.share_index.get(name) else {
            return Vec::new();
        };
        let share = &self.shares[s];
        let mut keys: Vec<policy::QueueKey> = share
            .queues
            .iter()
            .flat_map(|q| q.iter().copied())
            .collect();
        keys.sort_unstable();
        let mut misconfigured: Vec<policy::QueueKey> = share
            .misconfigured
            .iter()
            .map(|&j| self.jobs[j as usize].queue_key(j))
            .collect();
        misconfigured.sort_unstable();
        keys.iter()
            .chain(misconfigured.iter())
            .map(|k| JobId(k.2))
            .collect()
    }

    /// RUNNABLE jobs of the whole queue in the order the engine would consider them: priority
    /// descending, then the share using the smallest fraction of its limits, then oldest.
    pub fn queue_order(&self) -> Vec<JobId> {
        let ratio: Vec<u64> = self
            .shares
            .iter()
            .map(|s| {
                let own: u64 = s.own.iter().map(|&x| x as u64).sum();
                let used: u64 = s.used.iter().map(|&x| x as u64).sum();
                // Per-mille usage of the share's own limits; shares with no limit sort last.
                (used * 1000).checked_div(own).unwrap_or(u64::MAX)
            })
            .collect();
        let mut all: Vec<(Reverse<u32>, u64, Millis, u32)> = self
            .live_shares()
            .flat_map(|s| s.queues.iter().flat_map(|q| q.iter()))
            .map(|k| {
                let r = &self.jobs[k.2 as usize];
                (k.0, ratio[r.share], k.1, k.2)
            })
            .collect();
        all.sort_unstable();
        all.into_iter().map(|k| JobId(k.3)).collect()
    }

    // ----- time ---------------------------------------------------------------------------

    /// Runs every step due up to and including `t`, then sets the clock to `t`.
    pub fn advance_to(&mut self, t: Millis) -> Result<(), EngineError> {
        if t < self.now {
            return Err(EngineError::ClockBackwards {
                now: self.now,
                to: t,
            });
        }
        while let Some(Reverse(next)) = self.timers.peek() {
            if next.at > t {
                break;
            }
            self.now = self.now.max(next.at);
            self.settle();
        }
        self.now = t;
        self.settle();
        Ok(())
    }

    /// When the next step is due, if any.
    pub fn next_step_at(&self) -> Option<Millis> {
        self.timers.peek().map(|Reverse(t)| t.at)
    }

    /// Advances until nothing more is scheduled (jobs that can never run stay RUNNABLE), or
    /// until `limit`. Returns the time reached.
    pub fn run_until_idle(&mut self, limit: Millis) -> Millis {
        while let Some(at) = self.next_step_at() {
            if at > limit {
                break;
            }
            // `at >= now` always holds for queued steps, so this cannot fail.
            if self.advance_to(at.max(self.now)).is_err() {
                break;
            }
        }
        self.now
    }

    // ----- events -------------------------------------------------------------------------

    /// Every event since creation (or since the last [`Engine::drain_events`]).
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    pub fn drain_events(&mut self) -> Vec<Event> {
        std::mem::take(&mut self.events)
    }

    fn emit(&mut self, job: u32, from: Option<JobStatus>, to: JobStatus, reason: EventReason) {
        self.events.push(Event {
            time: self.now,
            job: JobId(job),
            from,
            to,
            reason,
        });
    }

    fn delay(&mut self, base: u64) -> u64 {
        base + self.rng.upto(self.config.delays.jitter_ms)
    }

    fn schedule(&mut self, job: u32, after_ms: u64) {
        self.timer_seq += 1;
        let at = self
            .now
            .saturating_add(after_ms.min(i64::MAX as u64) as i64);
        self.timers.push(Reverse(Timer {
            at,
            seq: self.timer_seq,
            job,
            generation: self.jobs[job as usize].generation,
        }));
    }

    /// Runs every due step and scheduling pass at the current instant until nothing changes.
    fn settle(&mut self) {
        loop {
            let mut progressed = false;
            while let Some(Reverse(t)) = self.timers.peek().copied() {
                if t.at > self.now {
                    break;
                }
                self.timers.pop();
                progressed = true;
                if self.jobs[t.job as usize].generation == t.generation {
                    self.step(t.job);
                }
            }
            if self.dirty {
                self.dirty = false;
                progressed = true;
                self.schedule_pass();
            }
            if !progressed {
                break;
            }
        }
    }

    /// A job's timer fired: take its next lifecycle step.
    fn step(&mut self, j: u32) {
        let rec = &self.jobs[j as usize];
        if rec.preempting.is_some() {
            self.finish_preemption(j);
            return;
        }
        match rec.status {
            JobStatus::Submitted => {
                self.set_status(j, JobStatus::Pending, EventReason::Advanced);
                let d = self.delay(self.config.delays.pending_ms);
                self.schedule(j, d);
            }
            JobStatus::Pending => {
                self.set_status(j, JobStatus::Runnable, EventReason::Advanced);
                self.enqueue(j);
            }
            JobStatus::Scheduled => {
                self.set_status(j, JobStatus::Starting, EventReason::Advanced);
                let d = self.delay(self.config.delays.starting_ms);
                self.schedule(j, d);
            }
            JobStatus::Starting => {
                self.set_status(j, JobStatus::Running, EventReason::Advanced);
                let now = self.now;
                let r = &mut self.jobs[j as usize];
                r.started_at = Some(now);
                r.run_since = Some(now);
                if let Some(a) = r.api.as_mut().and_then(|a| a.attempts.last_mut()) {
                    a.started_at = Some(now);
                }
                r.overhead_due = if r.preempted > 0 {
                    r.restart_overhead_ms
                } else {
                    0
                };
                let remaining = r.work_ms.saturating_sub(r.saved_ms) + r.overhead_due;
                self.schedule(j, remaining);
            }
            JobStatus::Running => self.complete(j),
            JobStatus::Runnable | JobStatus::Succeeded | JobStatus::Failed => {}
        }
    }

    fn set_status(&mut self, j: u32, to: JobStatus, reason: EventReason) {
        let from = self.jobs[j as usize].status;
        self.jobs[j as usize].status = to;
        self.emit(j, Some(from), to, reason);
    }

    fn complete(&mut self, j: u32) {
        let now = self.now;
        self.release(j);
        let r = &mut self.jobs[j as usize];
        if let Some(t) = r.run_since.take() {
            let ran = (now - t).max(0) as u64;
            r.run_ms += ran;
            r.overhead_ms += ran.min(r.overhead_due);
        }
        r.overhead_due = 0;
        r.saved_ms = r.work_ms;
        r.stopped_at = Some(now);
        r.reason = Some(Cow::Borrowed("Completed"));
        if let Some(a) = r.api.as_mut().and_then(|a| a.attempts.last_mut()) {
            a.stopped_at = Some(now);
            a.status_reason = Some("Completed".to_string());
        }
        self.set_status(j, JobStatus::Succeeded, EventReason::Completed);
    }

    /// Ends an unfinished job FAILED (termination or share deletion).
    fn finish_failed(&mut self, j: u32, reason: String, why: EventReason) {
        let now = self.now;
        let status = self.jobs[j as usize].status;
        if status == JobStatus::Runnable {
            self.dequeue(j);
        }
        if status.holds_capacity() {
            self.stop_work(j, false);
            self.release(j);
        }
        let r = &mut self.jobs[j as usize];
        r.generation += 1;
        r.preempting = None;
        r.stopped_at = Some(now);
        if status.holds_capacity()
            && let Some(a) = r.api.as_mut().and_then(|a| a.attempts.last_mut())
        {
            a.stopped_at = Some(now);
            a.status_reason = Some(reason.clone());
        }
        r.reason = Some(Cow::Owned(reason));
        self.set_status(j, JobStatus::Failed, why);
    }

    /// Stops the work clock of a running job. With `preempted`, progress falls back to the last
    /// checkpoint and the rest counts as lost.
    fn stop_work(&mut self, j: u32, preempted: bool) {
        let now = self.now;
        let r = &mut self.jobs[j as usize];
        let Some(t) = r.run_since.take() else {
            return;
        };
        let ran = (now - t).max(0) as u64;
        r.run_ms += ran;
        // The first part of an attempt after a preemption is restart overhead, not progress.
        let overhead = ran.min(r.overhead_due);
        r.overhead_ms += overhead;
        r.overhead_due = 0;
        let ran = ran - overhead;
        if !preempted {
            return;
        }
        // `saved_ms` is always a multiple of the checkpoint interval (or 0 without one), so the
        // last checkpoint is never before it.
        let total = (r.saved_ms + ran).min(r.work_ms);
        let saved = r.checkpoint_ms.map_or(0, |c| total / c * c);
        r.lost_ms += total - saved;
        r.saved_ms = saved;
    }

    /// Gives back the capacity a job holds.
    fn release(&mut self, j: u32) {
        let r = &self.jobs[j as usize];
        let (s, ty, count, seq) = (r.share, r.ty, r.count, r.dispatch_seq);
        let share = &mut self.shares[s];
        share.used[ty] -= count;
        if r.preempting.is_some() {
            share.releasing[ty] -= count;
        }
        share.running[ty].remove(&(seq, j));
        self.dirty = true;
    }

    /// A job became RUNNABLE: queue it, or park it when it can never run as configured.
    fn enqueue(&mut self, j: u32) {
        let r = &self.jobs[j as usize];
        let (s, ty, count) = (r.share, r.ty, r.count);
        match self.misconfiguration_of(s, ty, count) {
            Some(m) => {
                self.shares[s].misconfigured.insert(j);
                self.mark_misconfigured(j, m);
            }
            None => {
                let key = self.jobs[j as usize].queue_key(j);
                self.shares[s].queues[ty].insert(key);
                self.dirty = true;
            }
        }
    }

    fn dequeue(&mut self, j: u32) {
        let r = &self.jobs[j as usize];
        let key = r.queue_key(j);
        let share = &mut self.shares[r.share];
        share.queues[r.ty].remove(&key);
        share.misconfigured.remove(&j);
    }

    fn mark_misconfigured(&mut self, j: u32, m: Misconfiguration) {
        let r = &mut self.jobs[j as usize];
        if r.misconfigured == Some(m) {
            return;
        }
        r.misconfigured = Some(m);
        r.reason = Some(Cow::Borrowed(m.reason()));
        self.emit(
            j,
            Some(JobStatus::Runnable),
            JobStatus::Runnable,
            EventReason::Misconfigured(m),
        );
    }

    fn misconfiguration_of(&self, s: usize, ty: usize, count: u32) -> Option<Misconfiguration> {
        let share = &self.shares[s];
        let lendable: u64 = self
            .shares
            .iter()
            .enumerate()
            .filter(|(i, o)| *i != s && !o.deleted && o.spec.sharing.strategy.lends())
            .map(|(_, o)| o.own[ty] as u64)
            .sum();
        policy::misconfiguration(
            count,
            share.own[ty],
            &share.spec.sharing,
            lendable,
            self.env[ty],
        )
    }

    /// After any share change: move RUNNABLE jobs between the queues and the misconfigured lists.
    fn reevaluate_misconfigurations(&mut self) {
        let runnable: Vec<u32> = (0..self.jobs.len() as u32)
            .filter(|&j| {
                let r = &self.jobs[j as usize];
                r.status == JobStatus::Runnable && !self.shares[r.share].deleted
            })
            .collect();
        for j in runnable {
            let r = &self.jobs[j as usize];
            let (s, ty, count, was) = (r.share, r.ty, r.count, r.misconfigured);
            let now = self.misconfiguration_of(s, ty, count);
            match (was, now) {
                (None, None) => {}
                (Some(_), Some(m)) => self.mark_misconfigured(j, m),
                (None, Some(m)) => {
                    self.dequeue(j);
                    self.shares[s].misconfigured.insert(j);
                    self.mark_misconfigured(j, m);
                }
                (Some(_), None) => {
                    self.shares[s].misconfigured.remove(&j);
                    let r = &mut self.jobs[j as usize];
                    r.misconfigured = None;
                    r.reason = None;
                    let key = r.queue_key(j);
                    self.shares[s].queues[ty].insert(key);
                    self.emit(
                        j,
                        Some(JobStatus::Runnable),
                        JobStatus::Runnable,
                        EventReason::Reconfigured,
                    );
                }
            }
        }
    }

    /// Completes an in-progress preemption: the capacity goes back, the attempt is recorded,
    /// and the job is requeued or fails when its retries are exhausted.
    fn finish_preemption(&mut self, j: u32) {
        let now = self.now;
        self.release(j);
        let window = self.config.recent_preemptions;
        let r = &mut self.jobs[j as usize];
        let Some(kind) = r.preempting.take() else {
            return;
        };
        r.preempted += 1;
        let start = r.attempt_start();
        if let Some(api) = r.api.as_mut() {
            let resource = api
                .attempts
                .last()
                .map(|a| a.resource_id.clone())
                .unwrap_or_default();
            if let Some(a) = api.attempts.last_mut() {
                a.stopped_at = Some(now);
                a.status_reason = Some(kind.reason().to_string());
            }
            api.recent.push_front(PreemptedAttempt {
                resource_id: resource,
                started_at: start,
                stopped_at: now,
                status_reason: kind.reason().to_string(),
            });
            api.recent.truncate(window.max(1));
        }
        let exhausted = r.retries.is_some_and(|n| r.preempted > n);
        r.scheduled_at = None;
        r.started_at = None;
        if exhausted {
            let count = r.preempted;
            r.stopped_at = Some(now);
            r.reason = Some(Cow::Owned(policy::retries_exhausted_reason(count)));
            self.set_status(j, JobStatus::Failed, EventReason::RetriesExhausted);
        } else {
            r.reason = None;
            self.set_status(j, JobStatus::Runnable, EventReason::Preempted(kind));
            self.enqueue(j);
        }
    }
}

fn check_priority(p: i64) -> Result<u32, EngineError> {
    if (0..=MAX_PRIORITY as i64).contains(&p) {
        Ok(p as u32)
    } else {
        Err(EngineError::PriorityOutOfRange(p))
    }
}

fn valid_instance_type(t: &str) -> bool {
    !t.is_empty()
        && t.len() <= 64
        && t.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_')
}

fn validate_share_name(name: &str) -> Result<(), EngineError> {
    let ok = !name.is_empty()
        && name.len() <= 128
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if ok {
        Ok(())
    } else {
        Err(EngineError::InvalidShareName(name.to_string()))
    }
}

fn validate_limits(limits: &[CapacityLimit]) -> Result<(), EngineError> {
    if limits.is_empty() || limits.len() > crate::model::MAX_CAPACITY_LIMITS {
        return Err(EngineError::LimitCount(limits.len()));
    }
    let mut seen = BTreeSet::new();
    for l in limits {
        if !valid_instance_type(&l.instance_type) {
            return Err(EngineError::InvalidInstanceType(l.instance_type.clone()));
        }
        if l.max_capacity < 1 {
            return Err(EngineError::LimitBelowOne(l.instance_type.clone()));
        }
        if !seen.insert(l.instance_type.as_str()) {
            return Err(EngineError::DuplicateLimit(l.instance_type.clone()));
        }
    }
    Ok(())
}

fn validate_sharing(s: &SharingConfig) -> Result<(), EngineError> {
    match s.borrow_limit {
        Some(_) if !s.strategy.borrows() => {
            Err(EngineError::BorrowLimitNotAllowed(s.strategy.as_str()))
        }
        Some(b) if b < -1 => Err(EngineError::InvalidBorrowLimit(b)),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests;
