//! One quota-management job queue of the emulated account: its engine (the queue's quota
//! shares over its service environment's capacity: AWS connects a quota-management service
//! environment to one queue only), its workload, and what the API keeps beside the engine (ARNs,
//! tags of its jobs and shares, payloads, positions in the queue). The account's other resources
//! (environments, policies, regions) are in [`super::account`].

use std::collections::{HashMap, VecDeque};

use quotatop_engine::{Engine, Event, JobId};
use quotatop_model::Millis;

use super::account::{ArnBase, Transition};
use super::error::{ApiError, EmulatorError};
use super::hash::fnv1a;
use super::scenario::Scenario;
use super::training;
use super::wire::{RetryStrategyJson, Tags, TimeoutJson};
use super::workload::{self, Workload};

/// The default account id in every ARN (`EmulatorConfig::account` changes it).
pub const ACCOUNT: &str = "123456789012";
/// How many engine events the world keeps for inspection.
const RECENT_EVENTS: usize = 10_000;
/// `frontOfQueue` lists at most this many jobs.
pub const FRONT_OF_QUEUE: usize = 100;

/// What SubmitServiceJob received that the engine does not keep.
#[derive(Debug, Clone, Default)]
pub struct JobMeta {
    pub payload: String,
    /// How its training job checkpoints.
    pub training: super::training::Training,
    pub retry_strategy: Option<RetryStrategyJson>,
    pub timeout: Option<TimeoutJson>,
}

/// A job queue's state: set by CreateJobQueue / UpdateJobQueue.
#[derive(Debug, Clone)]
pub struct QueueSettings {
    pub priority: i64,
    pub enabled: bool,
    pub policy_arn: String,
    /// The service environment the queue runs on; `None` once detached with UpdateJobQueue
    /// `serviceEnvironmentOrder=[]` (the queue then places nothing).
    pub env_arn: Option<String>,
}

pub struct QueueWorld {
    pub engine: Engine,
    pub workload: Workload,
    pub base: ArnBase,
    pub queue_name: String,
    pub settings: QueueSettings,
    /// CREATING, UPDATING or DELETING for a while after such a change.
    pub transition: Option<Transition>,
    /// The settle clock at the last catch-up (see [`Transition`]).
    pub settle: Millis,
    pub meta: HashMap<u32, JobMeta>,
    /// Tags of the queue's jobs and quota shares (the account keeps the others').
    pub tags: HashMap<String, Tags>,
    /// SubmitServiceJob's `clientToken`s: the job each submitted and a fingerprint of the
    /// request ([`request_fingerprint`]).
    pub client_tokens: HashMap<String, (JobId, u64)>,
    /// Position in `frontOfQueue` and since when.
    positions: HashMap<u32, (usize, Millis)>,
    /// First job of each share and since when.
    share_front: HashMap<String, (u32, Millis)>,
    pub recent_events: VecDeque<Event>,
    /// Whether the region's bus has a rule listening: only then are the engine's events made
    /// into EventBridge events ([`super::bus_events::job_events`]).
    pub publishing: bool,
    /// EventBridge events made since the account last published them.
    pub outbox: Vec<serde_json::Value>,
    /// Generated arrivals the engine refused (their share was disabled or deleted).
    pub refused_arrivals: u64,
    /// Notes for the emulator's log (e.g. an instance type the GPU table lacks), taken by
    /// [`super::EmulatorHandle::take_warnings`]; at most [`MAX_WARNINGS`] kept.
    pub warnings: VecDeque<String>,
}

/// How many unread warnings a queue keeps.
const MAX_WARNINGS: usize = 100;

impl QueueWorld {
    /// The scenario's queue, its shares and workload, with the engine's clock at `start_ms`.
    pub fn from_scenario(
        scenario: &Scenario,
        start_ms: Millis,
        base: &ArnBase,
        id_seed: Option<u64>,
    ) -> Result<Self, EmulatorError> {
        let engine = scenario.build_engine_with_ids(start_ms, id_seed, base)?;
        let settings = QueueSettings {
            priority: scenario.queue.priority,
            enabled: true,
            policy_arn: base.arn("scheduling-policy", &scenario.queue.scheduling_policy),
            env_arn: Some(base.arn("service-environment", &scenario.queue.service_environment)),
        };
        let mut world = Self::new(
            &scenario.queue.name,
            settings,
            engine,
            Workload::new(scenario, start_ms),
            base,
            0,
        );
        // A scenario's queue exists from the start: no CREATING phase.
        world.transition = None;
        world.after_change();
        Ok(world)
    }

    /// A queue created through the API: CREATING until it settles.
    pub fn new(
        name: &str,
        settings: QueueSettings,
        engine: Engine,
        workload: Workload,
        base: &ArnBase,
        settle: Millis,
    ) -> Self {
        Self {
            transition: Transition::creating(settle),
            settle,
            engine,
            workload,
            base: base.clone(),
            queue_name: name.to_string(),
            settings,
            meta: HashMap::new(),
            tags: HashMap::new(),
            client_tokens: HashMap::new(),
            positions: HashMap::new(),
            share_front: HashMap::new(),
            recent_events: VecDeque::new(),
            publishing: false,
            outbox: Vec::new(),
            refused_arrivals: 0,
            warnings: VecDeque::new(),
        }
    }

    /// Logs that `instance_type` is well formed but missing from the GPU table: accepted (AWS
    /// adds types), but GPU-hour figures will not count it.
    pub fn note_instance_type(&mut self, instance_type: &str) {
        if quotatop_analysis::gpus_per_instance(instance_type).is_none() {
            let text = format!(
                "warning: {} is not in quotatop's GPU table: accepted, but GPU-hour figures will not count it (set its GPUs with [gpus] in quotatop's config)",
                quotatop_model::clean(instance_type)
            );
            if self.warnings.len() >= MAX_WARNINGS {
                self.warnings.pop_front();
            }
            self.warnings.push_back(text);
        }
    }

    // ----- ARNs ------------------------------------------------------------------------------

    pub fn arn(&self, kind: &str, name: &str) -> String {
        self.base.arn(kind, name)
    }
    pub fn queue_arn(&self) -> String {
        self.arn("job-queue", &self.queue_name)
    }
    pub fn share_arn(&self, share: &str) -> String {
        format!("{}/quota-share/{share}", self.queue_arn())
    }
    pub fn job_arn(&self, uuid: &str) -> String {
        self.arn("service-job", uuid)
    }

    /// VALID, CREATING, UPDATING or DELETING.
    pub fn status(&self) -> &'static str {
        super::account::status_at(self.transition, self.settle)
    }

    /// Whether the queue runs on `env_arn`.
    pub fn uses(&self, env_arn: &str) -> bool {
        self.settings.env_arn.as_deref() == Some(env_arn)
    }

    /// Refuses changes to a queue still being created or being deleted.
    pub fn check_settled(&self) -> Result<(), ApiError> {
        match self.status() {
            "VALID" | "UPDATING" => Ok(()),
            status => Err(ApiError::client(format!(
                "Job queue {} is {status}; wait until it is VALID",
                self.queue_name
            ))),
        }
    }

    /// Refuses submissions unless the queue is settled and ENABLED.
    pub fn check_accepts_jobs(&self) -> Result<(), ApiError> {
        self.check_settled()?;
        if self.settings.enabled {
            Ok(())
        } else {
            Err(ApiError::client(format!(
                "Job queue {} is DISABLED: it accepts no new jobs",
                self.queue_name
            )))
        }
    }

    /// Whether `queue` (a name or an ARN) names this queue.
    pub fn is(&self, queue: &str) -> bool {
        queue == self.queue_name || queue == self.queue_arn()
    }

    /// Accepts the queue's name or ARN.
    pub fn check_queue(&self, queue: &str) -> Result<(), ApiError> {
        if self.is(queue) {
            Ok(())
        } else {
            Err(ApiError::client(format!(
                "Job queue {queue} does not exist"
            )))
        }
    }

    /// The share name in a quota-share ARN of this queue.
    pub fn share_from_arn(&self, arn: &str) -> Result<String, ApiError> {
        let prefix = format!("{}/quota-share/", self.queue_arn());
        match arn.strip_prefix(&prefix) {
            Some(name) if self.engine.share(name).is_some() => Ok(name.to_string()),
            Some(_) => Err(ApiError::client(format!(
                "Quota share {arn} does not exist"
            ))),
            None if arn.starts_with("arn:") => Err(ApiError::client(format!(
                "Quota share {arn} does not exist"
            ))),
            None => Err(ApiError::client(format!(
                "Invalid quotaShareArn {arn:?}: expected {prefix}<name>"
            ))),
        }
    }

    /// A job by its id (or its ARN).
    pub fn find_job(&self, id: &str) -> Result<JobId, ApiError> {
        let prefix = self.arn("service-job", "");
        let uuid = id.strip_prefix(&prefix).unwrap_or(id);
        self.engine
            .find(uuid)
            .ok_or_else(|| ApiError::client(format!("Job {id} does not exist")))
    }

    /// Whether `arn` names one of this queue's quota shares or jobs (for the tag operations).
    pub fn owns(&self, arn: &str) -> bool {
        if self.share_from_arn(arn).is_ok() {
            return true;
        }
        arn.strip_prefix(&self.arn("service-job", ""))
            .is_some_and(|uuid| self.engine.find(uuid).is_some())
    }

    // ----- time ------------------------------------------------------------------------------

    /// Brings the engine (and the workload) up to `t`, the simulated time.
    pub fn catch_up(&mut self, t: Millis) -> Result<(), ApiError> {
        let job_arn = self.arn("service-job", "");
        let Self {
            engine,
            workload,
            meta,
            refused_arrivals,
            queue_name,
            tags,
            ..
        } = self;
        workload::advance(
            engine,
            workload,
            t,
            |engine, id, arrival| {
                if !arrival.tags.is_empty() {
                    let uuid = engine.job_uuid(id).unwrap_or_default();
                    tags.insert(format!("{job_arn}{uuid}"), arrival.tags.clone());
                }
                let mut training = arrival.training.clone();
                if training.every_ms.is_some() {
                    let uuid = engine.job_uuid(id).unwrap_or_default();
                    training.s3 = Some((
                        training::BUCKET.to_string(),
                        format!("{queue_name}/{uuid}/"),
                    ));
                }
                meta.insert(
                    id.0,
                    JobMeta {
                        payload: generated_payload(&arrival.spec, training.s3.as_ref()),
                        training,
                        ..JobMeta::default()
                    },
                );
            },
            |_, _| *refused_arrivals += 1,
        )?;
        // Time alone changes no position: only what the engine did (its events) does. Most
        // requests find nothing new, and sorting a queue of 50,000 jobs for each would cost
        // more than the request.
        if self.keep_events() {
            self.track_positions();
        }
        Ok(())
    }

    /// After an operation changed the engine: keep its events (bounded) and track queue
    /// positions (an operation may reorder the queue without an event, e.g. a share's limits).
    pub fn after_change(&mut self) {
        self.keep_events();
        self.track_positions();
    }

    /// Moves the engine's new events into `recent_events` (bounded); whether there were any.
    fn keep_events(&mut self) -> bool {
        let events = self.engine.drain_events();
        let any = !events.is_empty();
        if self.publishing {
            let made: Vec<serde_json::Value> = events
                .iter()
                .flat_map(|e| super::bus_events::job_events(self, e))
                .collect();
            self.outbox.extend(made);
        }
        self.recent_events.extend(events);
        while self.recent_events.len() > RECENT_EVENTS {
            self.recent_events.pop_front();
        }
        any
    }

    /// Each job's position in `frontOfQueue` and each share's first job, and since when.
    fn track_positions(&mut self) {
        let now = self.engine.now();
        let order = self.engine.queue_front(FRONT_OF_QUEUE);
        let mut positions = HashMap::with_capacity(order.len());
        for (pos, id) in order.iter().enumerate() {
            let since = match self.positions.get(&id.0) {
                Some(&(p, since)) if p == pos => since,
                _ => now,
            };
            positions.insert(id.0, (pos, since));
        }
        self.positions = positions;
        let mut fronts = HashMap::new();
        for share in self.engine.shares() {
            if let Some(first) = self.engine.share_first(&share.name) {
                let since = match self.share_front.get(&share.name) {
                    Some(&(j, since)) if j == first.0 => since,
                    _ => now,
                };
                fronts.insert(share.name, (first.0, since));
            }
        }
        self.share_front = fronts;
    }

    /// When a job reached its current position in `frontOfQueue`.
    pub fn position_since(&self, job: JobId) -> Millis {
        self.positions
            .get(&job.0)
            .map_or(self.engine.now(), |&(_, since)| since)
    }

    /// The first RUNNABLE job of a share and since when it is first.
    pub fn share_front(&self, share: &str) -> Option<(JobId, Millis)> {
        self.share_front
            .get(share)
            .map(|&(j, since)| (JobId(j), since))
    }
}

/// A fingerprint of a JSON request: FNV-1a of its canonical form (keys sorted), so the same
/// request re-encoded with its members in another order has the same fingerprint.
pub fn request_fingerprint(body: &[u8]) -> u64 {
    let canonical = serde_json::from_slice::<serde_json::Value>(body)
        .map(|v| v.to_string().into_bytes())
        .unwrap_or_else(|_| body.to_vec());
    fnv1a(canonical)
}

/// The SageMaker CreateTrainingJob payload of a generated job: what a client would have sent.
pub fn generated_payload(
    spec: &quotatop_engine::JobSpec,
    checkpoints: Option<&(String, String)>,
) -> String {
    let mut payload = serde_json::json!({
        "TrainingJobName": spec.name,
        "AlgorithmSpecification": {"TrainingImage": "emulator/train:latest", "TrainingInputMode": "File"},
        "ResourceConfig": {
            "InstanceType": spec.instance_type,
            "InstanceCount": spec.instance_count,
            "VolumeSizeInGB": 30
        },
        "StoppingCondition": {"MaxRuntimeInSeconds": spec.work_ms.div_ceil(1000)}
    });
    if let Some((bucket, prefix)) = checkpoints {
        payload["CheckpointConfig"] = serde_json::json!({
            "S3Uri": format!("s3://{bucket}/{prefix}"),
            "LocalPath": "/opt/ml/checkpoints"
        });
    }
    payload.to_string()
}
