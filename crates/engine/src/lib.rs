//! The quota-share scheduling model: pure, deterministic and event-driven.
//!
//! No I/O and no async: time is passed in with [`Engine::advance_to`], randomness comes only from
//! the configured seed. Every state change is recorded as an [`Event`]. The choices AWS leaves
//! open live in [`policy`].
//!
//! Indexing that may panic is denied: the tables are reached through [`Engine`]'s accessors,
//! whose indices the engine issues itself, or with `get`.
#![deny(clippy::indexing_slicing)]
// Functions over 80 lines (clippy.toml) are denied workspace-wide (Cargo.toml); tests may be
// longer.
#![cfg_attr(test, allow(clippy::too_many_lines))]
#![cfg_attr(test, allow(clippy::indexing_slicing))]

mod config;
mod error;
mod event;
mod jobs;
mod lifecycle;
mod placement;
mod policy;
mod rng;
mod sched;
mod share;
mod share_ops;
mod types;

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap};

pub use config::{Delays, EngineConfig};
pub use error::EngineError;
pub use event::{Event, EventReason};
pub use placement::{
    CapacityLedger, Head, Holder, NoFixpoint, Pass, Placement, TypeState, TypeView, Victim,
    pass as placement_pass,
};
pub use policy::{
    FailureKind, Misconfiguration, PreemptionKind, RetryAction, RetryRule, misconfiguration,
    queue_key,
};
pub use rng::Rng;

use quotatop_model::{CapacityLimit, JobStatus, Millis, ServiceEnvironment};
#[cfg(test)]
use quotatop_model::{QuotaShare, SharingConfig};
use share::ShareRec;
pub use types::{
    AttemptWork, FailureSpec, JobSpec, ShareUpdate, ShareUsage, TypeUsage, WorkProgress,
    validate_share_name, validate_sharing,
};
use types::{JobRec, valid_instance_type};

/// The engine's handle of a job (its index in submission order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JobId(pub u32);

/// What a job is listed and filtered by ([`Engine::facts`]). Jobs are numbered in submission
/// order and the engine's clock never goes back, so `created_at` never decreases with the
/// [`JobId`]: newest first is highest id first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobFacts<'a> {
    /// Empty in a lean engine.
    pub name: &'a str,
    pub share: &'a str,
    pub status: JobStatus,
    pub created_at: Millis,
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
    /// Jobs with an API view (every job of an engine that is not lean) by status, then id:
    /// a status's jobs newest first without scanning the others ([`Engine::with_status`]).
    by_status: BTreeSet<(JobStatus, u32)>,
    timers: BinaryHeap<Reverse<Timer>>,
    timer_seq: u64,
    dispatch_seq: u64,
    events: Vec<Event>,
    dirty: bool,
    /// Whether scheduling passes run ([`Engine::set_dispatching`]).
    dispatching: bool,
    /// Jobs keep no API view ([`Engine::set_lean`]).
    lean: bool,
    /// The id stream, when ids are not drawn from the schedule's stream
    /// ([`EngineConfig::id_seed`]).
    ids: Option<Rng>,
    /// Timeouts, injected failures and retries of the jobs that have them.
    failures: HashMap<u32, types::FailureState>,
    /// Preemptions started per job during the current [`Engine::settle`] (one instant).
    instant_preemptions: HashMap<u32, u32>,
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
            by_status: BTreeSet::new(),
            timers: BinaryHeap::new(),
            timer_seq: 0,
            dispatch_seq: 0,
            events: Vec::new(),
            dirty: false,
            dispatching: true,
            lean: false,
            ids: config.id_seed.map(Rng::new),
            failures: HashMap::new(),
            instant_preemptions: HashMap::new(),
            config,
        };
        let capacity = engine.config.capacity.clone();
        engine.apply_capacity(&capacity)?;
        Ok(engine)
    }

    fn apply_capacity(&mut self, capacity: &[CapacityLimit]) -> Result<(), EngineError> {
        let mut seen = std::collections::HashSet::new();
        for limit in capacity {
            if limit.max_capacity < 1 {
                return Err(EngineError::InvalidEnvironment(limit.instance_type.clone()));
            }
            if !valid_instance_type(&limit.instance_type) {
                return Err(EngineError::InvalidInstanceType(
                    limit.instance_type.clone(),
                ));
            }
            if !seen.insert(limit.instance_type.clone()) {
                return Err(EngineError::DuplicateLimit(limit.instance_type.clone()));
            }
        }
        for e in &mut self.env {
            *e = 0;
        }
        for limit in capacity {
            let t = self.intern(&limit.instance_type);
            if let Some(env) = self.env.get_mut(t) {
                *env = limit.max_capacity;
            }
        }
        Ok(())
    }

    /// UpdateServiceEnvironment's `capacityLimits`: the environment's capacity per instance
    /// type from now on (a type left out has none). Jobs already holding capacity keep it; new
    /// dispatches respect the new capacity, and jobs that can no longer fit are misconfigured.
    pub fn set_capacity(&mut self, capacity: Vec<CapacityLimit>) -> Result<(), EngineError> {
        let before = self.env.clone();
        if let Err(e) = self.apply_capacity(&capacity) {
            self.env = before;
            return Err(e);
        }
        self.config.capacity = capacity;
        self.reevaluate_misconfigurations();
        self.dirty = true;
        self.settle()
    }

    /// Whether the engine places jobs: off while the queue's service environment is DISABLED
    /// or the queue has none. Jobs already holding capacity run on (and finish); nothing new is
    /// dispatched and nobody is preempted until it is on again.
    pub fn set_dispatching(&mut self, on: bool) -> Result<(), EngineError> {
        if self.dispatching == on {
            return Ok(());
        }
        self.dispatching = on;
        self.dirty = true;
        self.settle()
    }

    /// Whether the engine places jobs ([`Engine::set_dispatching`]).
    pub fn dispatching(&self) -> bool {
        self.dispatching
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
            self.settle()?;
        }
        self.now = t;
        self.settle()
    }

    /// When the next step is due, if any.
    pub fn next_step_at(&self) -> Option<Millis> {
        self.timers.peek().map(|Reverse(t)| t.at)
    }

    /// Advances until nothing more is scheduled (jobs that can never run stay RUNNABLE), or
    /// until `limit`. Returns the time reached.
    pub fn run_until_idle(&mut self, limit: Millis) -> Result<Millis, EngineError> {
        while let Some(at) = self.next_step_at() {
            if at > limit {
                break;
            }
            self.advance_to(at.max(self.now))?;
        }
        Ok(self.now)
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
            generation: self.rec(job).generation,
        }));
    }

    /// Runs every due step and scheduling pass at the current instant until nothing changes.
    ///
    /// This ends: at one instant a job moves forward through its states, and moves back (to
    /// RUNNABLE) only when preempted, which needs a strictly higher priority in its share or
    /// an owner reclaiming what it lent. A job can be reclaimed once per lender it borrowed
    /// from, so it is preempted at most about once per share at one instant; a job preempted
    /// more often than twice that means the placement rules contradict each other (two jobs
    /// preempting each other in turn) and is an error naming the job, not an endless loop.
    fn settle(&mut self) -> Result<(), EngineError> {
        self.instant_preemptions.clear();
        let limit = 2 * (self.shares.len() as u32 + 1);
        loop {
            let mut progressed = false;
            while let Some(Reverse(t)) = self.timers.peek().copied() {
                if t.at > self.now {
                    break;
                }
                self.timers.pop();
                progressed = true;
                if self.rec(t.job).generation == t.generation {
                    self.step(t.job);
                }
            }
            if self.dirty && self.dispatching {
                self.dirty = false;
                progressed = true;
                self.schedule_pass()?;
            }
            if let Some((&job, &times)) = self.instant_preemptions.iter().max_by_key(|(_, n)| **n)
                && times > limit
            {
                return Err(EngineError::PreemptionLoop {
                    at: self.now,
                    job: self.job_label(job),
                    times,
                });
            }
            if !progressed {
                return Ok(());
            }
        }
    }

    /// Job `j`'s record.
    #[expect(
        clippy::indexing_slicing,
        reason = "`j` is a job id the engine issued: `submit` pushes the record at index \
                  `jobs.len()` and records are never removed; ids from callers pass `job_idx`"
    )]
    fn rec(&self, j: u32) -> &JobRec {
        &self.jobs[j as usize]
    }

    /// Job `j`'s record, to change.
    #[expect(
        clippy::indexing_slicing,
        reason = "`j` is a job id the engine issued: `submit` pushes the record at index \
                  `jobs.len()` and records are never removed; ids from callers pass `job_idx`"
    )]
    fn rec_mut(&mut self, j: u32) -> &mut JobRec {
        &mut self.jobs[j as usize]
    }

    /// Share `s`'s record.
    #[expect(
        clippy::indexing_slicing,
        reason = "`s` is a share index the engine issued: `create_share` records `shares.len()` \
                  in `share_index` and pushes the record; records are never removed (a deleted \
                  share is marked deleted)"
    )]
    fn share_rec(&self, s: usize) -> &ShareRec {
        &self.shares[s]
    }

    /// Share `s`'s record, to change.
    #[expect(
        clippy::indexing_slicing,
        reason = "`s` is a share index the engine issued: `create_share` records `shares.len()` \
                  in `share_index` and pushes the record; records are never removed (a deleted \
                  share is marked deleted)"
    )]
    fn share_rec_mut(&mut self, s: usize) -> &mut ShareRec {
        &mut self.shares[s]
    }

    /// The name of interned type `ty`.
    #[expect(
        clippy::indexing_slicing,
        reason = "`ty` is an interned type index: `intern` pushes the name at `types.len()` and \
                  types are never removed"
    )]
    fn type_name(&self, ty: usize) -> &str {
        &self.types[ty]
    }

    /// The environment's capacity of interned type `ty` (0 when it lists none).
    fn env_of(&self, ty: usize) -> u32 {
        self.env.get(ty).copied().unwrap_or(0)
    }

    /// A job as an error names it: its name, or its index in a lean engine.
    fn job_label(&self, j: u32) -> String {
        match self.jobs.get(j as usize).and_then(|r| r.api.as_ref()) {
            Some(api) => format!("{} (#{j})", api.name),
            None => format!("#{j}"),
        }
    }
}

#[cfg(test)]
mod tests;
