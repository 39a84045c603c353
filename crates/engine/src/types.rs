//! The engine's public value types (jobs to submit, share updates, usage, progress), its job
//! record, and the validation of what callers pass in.

use std::collections::{BTreeSet, VecDeque};

use quotatop_model::{
    Attempt, CapacityLimit, JobStatus, MAX_PRIORITY, Millis, PreemptedAttempt, QuotaShare,
    SharingConfig,
};

use super::EngineError;
use super::policy::{self, Misconfiguration, PreemptionKind};

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
    /// Timeouts, injected failures and retries ([`policy`] rule 13); `None`: the job's attempts
    /// end only by completion, preemption or termination.
    pub failures: Option<FailureSpec>,
}

/// How a job's attempts may fail and be retried.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FailureSpec {
    /// `retryStrategy.attempts` (1–10): how many attempts may fail before the job fails.
    /// 0 is read as 1.
    pub attempts: u32,
    /// `retryStrategy.evaluateOnExit`.
    pub rules: Vec<policy::RetryRule>,
    /// `timeoutConfig.attemptDurationSeconds`, in ms of RUNNING per attempt.
    pub attempt_timeout_ms: Option<u64>,
    /// `StoppingCondition.MaxRuntimeInSeconds`, in ms of RUNNING per attempt.
    pub max_runtime_ms: Option<u64>,
    /// Injected: the first `failing_attempts` attempts fail after this much RUNNING.
    pub fail_after_ms: Option<u64>,
    pub failing_attempts: u32,
}

impl FailureSpec {
    /// From settings in seconds (`attempts` 1–10; injected failures in the first
    /// `failing_attempts` attempts when `fail_after_s` is set); `None` when nothing can end an
    /// attempt early and nothing retries, so such a job costs nothing extra.
    pub fn from_seconds(
        attempts: u32,
        rules: Vec<policy::RetryRule>,
        timeout_s: Option<u64>,
        max_runtime_s: Option<u64>,
        fail_after_s: Option<u64>,
        failing_attempts: u32,
    ) -> Option<Self> {
        let ms = |s: Option<u64>| s.map(|s| s.max(1).saturating_mul(1000));
        let spec = Self {
            attempts: attempts.clamp(1, 10),
            rules,
            attempt_timeout_ms: ms(timeout_s),
            max_runtime_ms: ms(max_runtime_s),
            fail_after_ms: ms(fail_after_s),
            failing_attempts: if fail_after_s.is_some() {
                failing_attempts
            } else {
                0
            },
        };
        let inert = spec.attempt_timeout_ms.is_none()
            && spec.max_runtime_ms.is_none()
            && spec.failing_attempts == 0;
        (!inert).then_some(spec)
    }

    /// What ends the attempt now RUNNING with `remaining` ms still to run, and after how long:
    /// the earliest of completion, timeout, max runtime and an injected failure. Completion wins
    /// a tie, except with the max runtime: SageMaker stops a training job that reaches
    /// `MaxRuntimeInSeconds` (MaxRuntimeExceeded) whatever it was about to do.
    pub(super) fn first_end(
        &self,
        failed: u32,
        remaining: u64,
    ) -> (u64, Option<policy::FailureKind>) {
        let injected = self
            .fail_after_ms
            .filter(|_| failed < self.failing_attempts);
        [
            (self.attempt_timeout_ms, policy::FailureKind::Timeout),
            (self.max_runtime_ms, policy::FailureKind::MaxRuntime),
            (injected, policy::FailureKind::Error),
        ]
        .into_iter()
        .filter_map(|(at, kind)| Some((at?, kind)))
        .filter(|&(at, kind)| {
            at < remaining || (at == remaining && kind == policy::FailureKind::MaxRuntime)
        })
        .min_by_key(|&(at, _)| at)
        .map_or((remaining, None), |(at, kind)| (at, Some(kind)))
    }
}

/// A job's failure settings and how many of its attempts failed so far.
#[derive(Debug, Clone)]
pub(crate) struct FailureState {
    pub spec: FailureSpec,
    pub failed: u32,
    /// How the attempt now RUNNING will end when its timer fires (`None`: it completes).
    pub ending: Option<policy::FailureKind>,
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
            failures: None,
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
    pub in_share_preemption: Option<quotatop_model::InSharePreemption>,
    pub state: Option<quotatop_model::ShareState>,
}

/// How much work a job has done and rolled back: what the engine knows beyond the API's view.
///
/// `rolled_back_ms` is not the GPU-time ledger's *lost* work: the ledger
/// (`quotatop_analysis::scorecard::job_ledger`, the one definition every shown "lost" figure
/// reads, `simulate`'s included) also counts the time a preemption held the capacity after its
/// signal, and counts a failed attempt's whole hold as *failed*, not lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkProgress {
    pub work_ms: u64,
    /// Durable progress (at the last checkpoint, or all of it once finished).
    pub saved_ms: u64,
    /// Progress rolled back to the last checkpoint when an attempt stopped early (preempted or
    /// failed): running time whose work has to be done again.
    pub rolled_back_ms: u64,
    /// Restart overhead spent after preemptions.
    pub overhead_ms: u64,
    /// Total time spent RUNNING across attempts: `work + rolled back + overhead` once finished.
    pub run_ms: u64,
}

/// What one attempt did with the job's work, as the engine ran it: the ground truth a
/// training job's logs and checkpoints are derived from. Kept beside `attempts`, one per
/// attempt, in an engine with an API view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AttemptWork {
    /// When the attempt became RUNNING (`None`: it never ran).
    pub running_at: Option<Millis>,
    /// Durable progress it started from (the last checkpoint restored, or 0).
    pub resumed_ms: u64,
    /// Restart overhead it had to spend before making progress.
    pub overhead_ms: u64,
    /// When its work stopped: the preemption signal, the failure or the completion.
    pub stopped_at: Option<Millis>,
    /// Progress it made (beyond `resumed_ms`, restart overhead excluded).
    pub progress_ms: u64,
    /// The part of that progress rolled back when it stopped (not covered by a checkpoint).
    pub rolled_back_ms: u64,
    /// Whether it ended by preemption.
    pub preempted: bool,
}

impl AttemptWork {
    /// When the attempt began to make progress (after its restart overhead), if it ran.
    pub fn progress_from(&self) -> Option<Millis> {
        self.running_at.map(|t| t + self.overhead_ms as Millis)
    }
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
    /// One per attempt: what it did with the work.
    pub work: Vec<AttemptWork>,
}

pub(crate) struct JobRec {
    /// `None` in a lean engine.
    pub api: Option<Box<JobApi>>,
    pub share: usize,
    pub ty: usize,
    pub count: u32,
    pub priority: u32,
    pub status: JobStatus,
    pub reason: Option<std::borrow::Cow<'static, str>>,
    pub created_at: Millis,
    pub scheduled_at: Option<Millis>,
    pub started_at: Option<Millis>,
    pub stopped_at: Option<Millis>,
    pub work_ms: u64,
    pub checkpoint_ms: Option<u64>,
    pub saved_ms: u64,
    pub rolled_back_ms: u64,
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
    pub(super) fn queue_key(&self, id: u32) -> policy::QueueKey {
        policy::queue_key(self.priority, self.created_at, id)
    }
    /// When the current attempt's run began ([`quotatop_model::attempt_start`]): what a
    /// victim's elapsed time counts from.
    pub(super) fn attempt_start(&self) -> Millis {
        quotatop_model::attempt_start(self.started_at, self.scheduled_at).unwrap_or(self.created_at)
    }
}

pub(super) fn check_priority(p: i64) -> Result<u32, EngineError> {
    if (0..=MAX_PRIORITY as i64).contains(&p) {
        Ok(p as u32)
    } else {
        Err(EngineError::PriorityOutOfRange(p))
    }
}

pub(super) fn valid_instance_type(t: &str) -> bool {
    !t.is_empty()
        && t.len() <= 64
        && t.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_')
}

pub fn validate_share_name(name: &str) -> Result<(), EngineError> {
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

pub(super) fn validate_limits(limits: &[CapacityLimit]) -> Result<(), EngineError> {
    if limits.is_empty() || limits.len() > quotatop_model::MAX_CAPACITY_LIMITS {
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

pub fn validate_sharing(s: &SharingConfig) -> Result<(), EngineError> {
    match s.borrow_limit {
        Some(_) if !s.strategy.borrows() => {
            Err(EngineError::BorrowLimitNotAllowed(s.strategy.as_str()))
        }
        Some(b) if b < -1 => Err(EngineError::InvalidBorrowLimit(b)),
        _ => Ok(()),
    }
}
