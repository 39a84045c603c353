//! Submitting, reprioritising and terminating jobs, and reading them back.

use std::cmp::Reverse;
use std::collections::VecDeque;

use quotatop_model::{JobStatus, Millis, PreemptionSummary, ServiceJob};

use super::types::{FailureState, JobApi, JobRec, check_priority, valid_instance_type};
use super::{
    Engine, EngineError, EventReason, JobFacts, JobId, JobSpec, Rng, WorkProgress, policy,
};

impl Engine {
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
        if self.share_rec(s).spec.state == quotatop_model::ShareState::Disabled {
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
        // Two draws per job in every mode, so a lean engine's and an engine with its own id
        // stream's delays are exactly those of a full one.
        let (a, b) = (self.rng.next_u64(), self.rng.next_u64());
        let api = if self.lean {
            None
        } else {
            let uuid = match self.ids.as_mut() {
                Some(ids) => ids.uuid(),
                None => Rng::uuid_of(a, b),
            };
            self.uuid_index.insert(uuid.clone(), id);
            self.by_status.insert((JobStatus::Submitted, id));
            Some(Box::new(JobApi {
                uuid,
                name: spec.name,
                recent: VecDeque::new(),
                attempts: Vec::new(),
                work: Vec::new(),
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
            rolled_back_ms: 0,
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
        // Kept beside the record, so jobs without failure settings (most, and every replayed
        // trace job) cost nothing for them.
        if let Some(spec) = spec.failures {
            self.failures.insert(
                id,
                FailureState {
                    spec,
                    failed: 0,
                    ending: None,
                },
            );
        }
        self.emit(id, None, JobStatus::Submitted, EventReason::Submitted);
        let d = self.delay(self.config.delays.submitted_ms);
        self.schedule(id, d);
        self.settle()?;
        Ok(JobId(id))
    }

    /// UpdateServiceJob: changes the scheduling priority of an unfinished job.
    pub fn update_priority(&mut self, job: JobId, priority: i64) -> Result<(), EngineError> {
        let j = self.job_idx(job)?;
        let new = check_priority(priority)?;
        let rec = self.rec(j);
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
            self.share_rec_mut(s).slot_mut(ty).queue.remove(&key);
        }
        self.rec_mut(j).priority = new;
        if queued {
            let key = self.rec(j).queue_key(j);
            self.share_rec_mut(s).slot_mut(ty).queue.insert(key);
        }
        self.emit(
            j,
            Some(status),
            status,
            EventReason::PriorityChanged { old, new },
        );
        self.dirty = true;
        self.settle()?;
        Ok(())
    }

    /// TerminateServiceJob: the job ends FAILED with the given reason. Terminating a finished
    /// job changes nothing.
    pub fn terminate(&mut self, job: JobId, reason: &str) -> Result<(), EngineError> {
        let j = self.job_idx(job)?;
        if self.rec(j).status.is_terminal() {
            return Ok(());
        }
        self.rec_mut(j).terminated = true;
        self.finish_failed(j, reason.to_string(), EventReason::Terminated);
        self.dirty = true;
        self.settle()?;
        Ok(())
    }

    pub(super) fn job_idx(&self, job: JobId) -> Result<u32, EngineError> {
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
                rolled_back_ms: r.rolled_back_ms,
                overhead_ms: r.overhead_ms + running.min(r.overhead_due),
                run_ms: r.run_ms + running,
            }
        })
    }

    /// What each attempt did with the job's work, oldest first (empty in a lean engine).
    pub fn attempt_work(&self, job: JobId) -> &[super::AttemptWork] {
        self.jobs
            .get(job.0 as usize)
            .and_then(|r| r.api.as_deref())
            .map_or(&[], |a| a.work.as_slice())
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
            share: self.share_rec(r.share).spec.name.clone(),
            priority: r.priority,
            instance_type: self.type_name(r.ty).to_string(),
            instance_count: r.count,
            status: r.status,
            status_reason: r.reason.as_deref().map(str::to_string),
            created_at: r.created_at,
            scheduled_at: r.scheduled_at,
            started_at: r.started_at,
            stopped_at: r.stopped_at,
            preemption_retries: r.retries,
            checkpoint_interval_ms: r.checkpoint_ms,
            class_tag: None,
            preemption: (r.preempted > 0).then(|| PreemptionSummary {
                preempted_attempt_count: r.preempted,
                recent_preempted_attempts: api
                    .map(|a| a.recent.iter().cloned().collect())
                    .unwrap_or_default(),
            }),
            attempts: api.map(|a| a.attempts.clone()).unwrap_or_default(),
            is_terminated: r.terminated,
            extras: Default::default(),
        })
    }

    /// What a job is listed and filtered by, without building its API view ([`Engine::job`]
    /// copies its attempts and strings): cheap enough to scan every job per request.
    pub fn facts(&self, job: JobId) -> Option<JobFacts<'_>> {
        let r = self.jobs.get(job.0 as usize)?;
        Some(JobFacts {
            name: r.api.as_deref().map_or("", |a| a.name.as_str()),
            share: &self.share_rec(r.share).spec.name,
            status: r.status,
            created_at: r.created_at,
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
        let share = self.share_rec(s);
        let mut keys: Vec<policy::QueueKey> = share
            .slots
            .iter()
            .flat_map(|slot| slot.queue.iter().copied())
            .collect();
        keys.sort_unstable();
        let mut misconfigured: Vec<policy::QueueKey> = share
            .misconfigured
            .iter()
            .map(|&j| self.rec(j).queue_key(j))
            .collect();
        misconfigured.sort_unstable();
        keys.iter()
            .chain(misconfigured.iter())
            .map(|k| JobId(k.2))
            .collect()
    }

    /// The jobs in `status` numbered below `below`, highest (newest) first, from the status
    /// index: a page of them costs its own jobs, not a scan of the others. Covers the jobs with
    /// an API view, so every job of an engine that is not lean ([`Engine::set_lean`]).
    pub fn with_status(&self, status: JobStatus, below: u32) -> impl Iterator<Item = JobId> + '_ {
        self.by_status
            .range((status, 0)..(status, below))
            .rev()
            .map(|&(_, j)| JobId(j))
    }

    /// The first RUNNABLE job of a share: the first of [`Engine::share_queue`], without
    /// building it (each type's queue is in dispatch order, so it is the least of their heads;
    /// a misconfigured job only when nothing else waits).
    pub fn share_first(&self, name: &str) -> Option<JobId> {
        let share = self.share_rec(*self.share_index.get(name)?);
        let head = share
            .slots
            .iter()
            .filter_map(|slot| slot.queue.first().copied())
            .min();
        let key = head.or_else(|| {
            share
                .misconfigured
                .iter()
                .map(|&j| self.rec(j).queue_key(j))
                .min()
        })?;
        Some(JobId(key.2))
    }

    /// Per-mille usage of each share's own limits (indexed by share); shares with no limit
    /// sort last.
    fn usage_ratios(&self) -> Vec<u64> {
        self.shares
            .iter()
            .map(|s| {
                let own: u64 = s.slots.iter().map(|t| t.own as u64).sum();
                let used: u64 = s.slots.iter().map(|t| t.used as u64).sum();
                (used * 1000).checked_div(own).unwrap_or(u64::MAX)
            })
            .collect()
    }

    /// The first `n` jobs of [`Engine::queue_order`], without sorting the whole queue: within a
    /// share and instance type the queue is already in that order (a share's usage is one
    /// figure for all its jobs), so the front is a merge of those queues' heads, costing
    /// `n` steps of a heap as large as the number of queues.
    pub fn queue_front(&self, n: usize) -> Vec<JobId> {
        let ratio = self.usage_ratios();
        let mut queues: Vec<(u64, std::collections::btree_set::Iter<'_, policy::QueueKey>)> = self
            .shares
            .iter()
            .enumerate()
            .filter(|(_, s)| !s.deleted)
            .flat_map(|(i, s)| {
                let r = ratio.get(i).copied().unwrap_or(u64::MAX);
                s.slots.iter().map(move |t| (r, t.queue.iter()))
            })
            .collect();
        let mut heads = std::collections::BinaryHeap::with_capacity(queues.len());
        for (q, (r, keys)) in queues.iter_mut().enumerate() {
            if let Some(k) = keys.next() {
                heads.push(Reverse(((k.0, *r, k.1, k.2), q)));
            }
        }
        let mut front = Vec::with_capacity(n.min(heads.len() * 4));
        while front.len() < n {
            let Some(Reverse((key, q))) = heads.pop() else {
                break;
            };
            front.push(JobId(key.3));
            if let Some((r, keys)) = queues.get_mut(q)
                && let Some(k) = keys.next()
            {
                heads.push(Reverse(((k.0, *r, k.1, k.2), q)));
            }
        }
        front
    }

    /// RUNNABLE jobs of the whole queue in the order the engine would consider them: priority
    /// descending, then the share using the smallest fraction of its limits, then oldest.
    pub fn queue_order(&self) -> Vec<JobId> {
        let ratio = self.usage_ratios();
        let mut all: Vec<(Reverse<u32>, u64, Millis, u32)> = self
            .live_shares()
            .flat_map(|s| s.slots.iter().flat_map(|t| t.queue.iter()))
            .map(|k| {
                let r = self.rec(k.2);
                (
                    k.0,
                    ratio.get(r.share).copied().unwrap_or(u64::MAX),
                    k.1,
                    k.2,
                )
            })
            .collect();
        all.sort_unstable();
        all.into_iter().map(|k| JobId(k.3)).collect()
    }
}
