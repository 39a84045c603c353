//! The emulated account: the engine (one quota-management job queue and its service
//! environment), its workload and clock, and what the API keeps beside the engine (ARNs, tags,
//! payloads, scheduling policies, positions in the queue).

use std::collections::{HashMap, VecDeque};

use crate::engine::{Engine, Event, JobId};
use crate::model::Millis;

use super::clock::SimClock;
use super::error::{ApiError, EmulatorError};
use super::scenario::Scenario;
use super::wire::{QuotaSharePolicyJson, RetryStrategyJson, Tags, TimeoutJson};
use super::workload::{self, Workload};

/// The account id in every ARN.
pub const ACCOUNT: &str = "123456789012";
/// How many engine events the world keeps for inspection.
const RECENT_EVENTS: usize = 10_000;
/// `frontOfQueue` lists at most this many jobs.
pub const FRONT_OF_QUEUE: usize = 100;

/// What SubmitServiceJob received that the engine does not keep.
#[derive(Debug, Clone, Default)]
pub struct JobMeta {
    pub payload: String,
    pub retry_strategy: Option<RetryStrategyJson>,
    pub timeout: Option<TimeoutJson>,
}

#[derive(Debug, Clone)]
pub struct Policy {
    pub name: String,
    pub arn: String,
    pub quota: Option<QuotaSharePolicyJson>,
    pub fairshare: Option<serde_json::Value>,
}

pub struct World {
    pub engine: Engine,
    pub workload: Workload,
    pub clock: SimClock,
    pub region: String,
    pub queue_name: String,
    pub queue_priority: i64,
    pub env_name: String,
    pub policy_name: String,
    pub policies: Vec<Policy>,
    pub meta: HashMap<u32, JobMeta>,
    pub tags: HashMap<String, Tags>,
    pub client_tokens: HashMap<String, JobId>,
    /// Position in `frontOfQueue` and since when.
    positions: HashMap<u32, (usize, Millis)>,
    /// First job of each share and since when.
    share_front: HashMap<String, (u32, Millis)>,
    pub recent_events: VecDeque<Event>,
    /// Generated arrivals the engine refused (their share was disabled or deleted).
    pub refused_arrivals: u64,
    /// Notes for the emulator's log (e.g. an instance type the GPU table lacks), taken by
    /// [`super::EmulatorHandle::take_warnings`]; at most [`MAX_WARNINGS`] kept.
    pub warnings: VecDeque<String>,
}

/// How many unread warnings the world keeps.
const MAX_WARNINGS: usize = 100;

impl World {
    pub fn new(
        scenario: &Scenario,
        clock: SimClock,
        start_ms: Millis,
        region: &str,
        id_seed: Option<u64>,
    ) -> Result<Self, EmulatorError> {
        let engine = scenario.build_engine_with_ids(start_ms, id_seed)?;
        let mut world = Self {
            workload: Workload::new(scenario, start_ms),
            engine,
            clock,
            region: region.to_string(),
            queue_name: scenario.queue.name.clone(),
            queue_priority: scenario.queue.priority,
            env_name: scenario.queue.service_environment.clone(),
            policy_name: scenario.queue.scheduling_policy.clone(),
            policies: Vec::new(),
            meta: HashMap::new(),
            tags: HashMap::new(),
            client_tokens: HashMap::new(),
            positions: HashMap::new(),
            share_front: HashMap::new(),
            recent_events: VecDeque::new(),
            refused_arrivals: 0,
            warnings: VecDeque::new(),
        };
        world.policies.push(Policy {
            name: world.policy_name.clone(),
            arn: world.arn("scheduling-policy", &world.policy_name),
            quota: Some(QuotaSharePolicyJson {
                idle_resource_assignment_strategy: Some("FIFO".to_string()),
            }),
            fairshare: None,
        });
        world.after_change();
        Ok(world)
    }

    // ----- ARNs ------------------------------------------------------------------------------

    pub fn arn(&self, kind: &str, name: &str) -> String {
        format!("arn:aws:batch:{}:{ACCOUNT}:{kind}/{name}", self.region)
    }
    pub fn queue_arn(&self) -> String {
        self.arn("job-queue", &self.queue_name)
    }
    pub fn env_arn(&self) -> String {
        self.arn("service-environment", &self.env_name)
    }
    pub fn policy_arn(&self) -> String {
        self.arn("scheduling-policy", &self.policy_name)
    }
    pub fn share_arn(&self, share: &str) -> String {
        format!("{}/quota-share/{share}", self.queue_arn())
    }
    pub fn job_arn(&self, uuid: &str) -> String {
        self.arn("service-job", uuid)
    }

    /// Accepts the queue's name or ARN.
    pub fn check_queue(&self, queue: &str) -> Result<(), ApiError> {
        if queue == self.queue_name || queue == self.queue_arn() {
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

    /// Whether `arn` names a resource that exists (for the tag operations).
    pub fn resource_exists(&self, arn: &str) -> bool {
        if arn == self.queue_arn() || arn == self.env_arn() {
            return true;
        }
        if self.policies.iter().any(|p| p.arn == arn) {
            return true;
        }
        if self.share_from_arn(arn).is_ok() {
            return true;
        }
        arn.strip_prefix(&self.arn("service-job", ""))
            .is_some_and(|uuid| self.engine.find(uuid).is_some())
    }

    /// Logs that `instance_type` is well formed but missing from the GPU table: accepted (AWS
    /// adds types), but GPU-hour figures will not count it.
    pub fn note_instance_type(&mut self, instance_type: &str) {
        if crate::analysis::gpus_per_instance(instance_type).is_none() {
            let text = format!(
                "warning: {} is not in quotatop's GPU table: accepted, but GPU-hour figures will not count it (set its GPUs with [gpus] in quotatop's config)",
                crate::model::clean(instance_type)
            );
            if self.warnings.len() >= MAX_WARNINGS {
                self.warnings.pop_front();
            }
            self.warnings.push_back(text);
        }
    }

    // ----- time ------------------------------------------------------------------------------

    /// Brings the engine (and the workload) up to the clock.
    pub fn catch_up(&mut self) -> Result<(), ApiError> {
        let t = self.clock.now();
        let Self {
            engine,
            workload,
            meta,
            refused_arrivals,
            ..
        } = self;
        workload::advance(
            engine,
            workload,
            t,
            |_, id, arrival| {
                meta.insert(
                    id.0,
                    JobMeta {
                        payload: generated_payload(&arrival.spec),
                        ..JobMeta::default()
                    },
                );
            },
            |_, _| *refused_arrivals += 1,
        )?;
        self.after_change();
        Ok(())
    }

    /// After the engine moved: keep its events (bounded) and track queue positions.
    pub fn after_change(&mut self) {
        let events = self.engine.drain_events();
        self.recent_events.extend(events);
        while self.recent_events.len() > RECENT_EVENTS {
            self.recent_events.pop_front();
        }
        let now = self.engine.now();
        let order = self.engine.queue_order();
        let mut positions = HashMap::with_capacity(order.len().min(FRONT_OF_QUEUE));
        for (pos, id) in order.iter().take(FRONT_OF_QUEUE).enumerate() {
            let since = match self.positions.get(&id.0) {
                Some(&(p, since)) if p == pos => since,
                _ => now,
            };
            positions.insert(id.0, (pos, since));
        }
        self.positions = positions;
        let mut fronts = HashMap::new();
        for share in self.engine.shares() {
            if let Some(first) = self.engine.share_queue(&share.name).first() {
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

/// The SageMaker CreateTrainingJob payload of a generated job: what a client would have sent.
pub fn generated_payload(spec: &crate::engine::JobSpec) -> String {
    serde_json::json!({
        "TrainingJobName": spec.name,
        "AlgorithmSpecification": {"TrainingImage": "emulator/train:latest", "TrainingInputMode": "File"},
        "ResourceConfig": {
            "InstanceType": spec.instance_type,
            "InstanceCount": spec.instance_count,
            "VolumeSizeInGB": 30
        },
        "StoppingCondition": {"MaxRuntimeInSeconds": spec.work_ms.div_ceil(1000)}
    })
    .to_string()
}
