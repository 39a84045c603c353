//! The AWS setup flow: Create/Update/DeleteServiceEnvironment and Create/Update/DeleteJobQueue,
//! with AWS's validation and states.
//!
//! - Environments are SAGEMAKER_TRAINING with quota management: each capacity limit is an
//!   instance type (`ml.p4d.24xlarge`), 1 to 5 of them; `NUM_INSTANCES` (for environments
//!   without quota management) is refused, as the emulator models quota management only.
//! - A queue is SAGEMAKER_TRAINING, has exactly one `serviceEnvironmentOrder` entry naming a VALID
//!   environment that no other queue uses (AWS connects a quota-management environment to one
//!   queue), and a `schedulingPolicyArn` whose policy has a `quotaSharePolicy`.
//! - Created resources are CREATING, changed ones UPDATING, deleted ones DELETING for
//!   `account::SETTLE_MS` (real time, whatever the speed). Deleting needs the resource DISABLED; an
//!   environment cannot be deleted while a queue uses it (UpdateJobQueue with
//!   `serviceEnvironmentOrder=[]` detaches it, as DeleteServiceEnvironment's documentation
//!   says; another entry moves the queue to that environment and its capacity); deleting a
//!   queue terminates its unfinished jobs.
//! - A queue places jobs only while it has an environment and that environment is ENABLED;
//!   jobs already running finish.

use axum::response::Response;
use serde::Deserialize;

use quotatop_engine::Engine;
use quotatop_model::CapacityLimit;

use super::account::{Account, Environment, Transition, check_room, status_at};
use super::error::ApiError;
use super::hash::fnv1a_seeded;
use super::ops_tags::validate_tags;
use super::scenario::valid_resource_name;
use super::state::{QueueSettings, QueueWorld};
use super::wire::{self, CapacityLimitJson, Tags, ok, parse, required, required_str};
use super::workload::Workload;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CreateEnvironmentRequest {
    service_environment_name: Option<String>,
    service_environment_type: Option<String>,
    state: Option<String>,
    capacity_limits: Option<Vec<CapacityLimitJson>>,
    tags: Option<Tags>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct UpdateEnvironmentRequest {
    service_environment: Option<String>,
    state: Option<String>,
    capacity_limits: Option<Vec<CapacityLimitJson>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct EnvironmentRequest {
    service_environment: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct EnvironmentOrderJson {
    order: Option<i64>,
    service_environment: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CreateQueueRequest {
    job_queue_name: Option<String>,
    state: Option<String>,
    scheduling_policy_arn: Option<String>,
    priority: Option<i64>,
    compute_environment_order: Option<Vec<serde_json::Value>>,
    service_environment_order: Option<Vec<EnvironmentOrderJson>>,
    job_queue_type: Option<String>,
    tags: Option<Tags>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct UpdateQueueRequest {
    job_queue: Option<String>,
    state: Option<String>,
    scheduling_policy_arn: Option<String>,
    priority: Option<i64>,
    compute_environment_order: Option<Vec<serde_json::Value>>,
    service_environment_order: Option<Vec<EnvironmentOrderJson>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct QueueRequest {
    job_queue: Option<String>,
}

// ----- service environments ------------------------------------------------------------------

pub fn create_environment(account: &mut Account, body: &[u8]) -> Result<Response, ApiError> {
    let req: CreateEnvironmentRequest = parse(body)?;
    let name = required_str(req.service_environment_name, "serviceEnvironmentName")?;
    check_name(&name)?;
    match required_str(req.service_environment_type, "serviceEnvironmentType")?.as_str() {
        "SAGEMAKER_TRAINING" => {}
        other => {
            return Err(ApiError::client(format!(
                "serviceEnvironmentType must be SAGEMAKER_TRAINING, got {:?}",
                quotatop_model::clean(other)
            )));
        }
    }
    let enabled = enabled(req.state.as_deref(), "state")?.unwrap_or(true);
    let capacity = capacity(required(req.capacity_limits, "capacityLimits")?)?;
    if let Some(tags) = &req.tags {
        validate_tags(tags)?;
    }
    if account.envs.iter().any(|e| e.name == name) {
        return Err(ApiError::client("Object already exists"));
    }
    check_room(account.envs.len(), "service environments")?;
    let arn = account.arn("service-environment", &name);
    account.envs.push(Environment {
        name: name.clone(),
        arn: arn.clone(),
        enabled,
        capacity,
        transition: Transition::creating(account.settle),
    });
    if let Some(tags) = req.tags.filter(|t| !t.is_empty()) {
        account.tags.insert(arn.clone(), tags);
    }
    ok(&serde_json::json!({ "serviceEnvironmentName": name, "serviceEnvironmentArn": arn }))
}

pub fn update_environment(account: &mut Account, body: &[u8]) -> Result<Response, ApiError> {
    let req: UpdateEnvironmentRequest = parse(body)?;
    let which = required_str(req.service_environment, "serviceEnvironment")?;
    let i = account.env_index(&which)?;
    let now = account.settle;
    check_not_deleting(
        account.envs[i].transition,
        now,
        "Service environment",
        &which,
    )?;
    let enabled = enabled(req.state.as_deref(), "state")?;
    let capacity = req.capacity_limits.map(capacity).transpose()?;
    let arn = account.envs[i].arn.clone();
    if let Some(capacity) = &capacity
        && let Some(q) = account.queues.iter_mut().find(|q| q.uses(&arn))
    {
        q.engine.set_capacity(capacity.clone())?;
        q.after_change();
    }
    let env = &mut account.envs[i];
    if let Some(enabled) = enabled {
        env.enabled = enabled;
    }
    if let Some(capacity) = capacity {
        env.capacity = capacity;
    }
    env.transition = Transition::updating(now);
    let out = serde_json::json!({
        "serviceEnvironmentName": env.name,
        "serviceEnvironmentArn": env.arn,
    });
    account.sync_dispatching()?;
    ok(&out)
}

pub fn delete_environment(account: &mut Account, body: &[u8]) -> Result<Response, ApiError> {
    let req: EnvironmentRequest = parse(body)?;
    let which = required_str(req.service_environment, "serviceEnvironment")?;
    let i = account.env_index(&which)?;
    let now = account.settle;
    check_not_deleting(
        account.envs[i].transition,
        now,
        "Service environment",
        &which,
    )?;
    let env = &account.envs[i];
    if env.enabled {
        return Err(ApiError::client(format!(
            "Service environment {} is ENABLED: disable it before deleting it",
            env.name
        )));
    }
    if let Some(q) = account.queues.iter().find(|q| q.uses(&env.arn)) {
        return Err(ApiError::client(format!(
            "Service environment {} is used by job queue {}: detach it with UpdateJobQueue serviceEnvironmentOrder=[] or delete the queue first",
            env.name, q.queue_name
        )));
    }
    account.envs[i].transition = Transition::deleting(now);
    wire::ok_empty()
}

// ----- job queues --------------------------------------------------------------------------

pub fn create_queue(account: &mut Account, body: &[u8]) -> Result<Response, ApiError> {
    let req: CreateQueueRequest = parse(body)?;
    let name = required_str(req.job_queue_name, "jobQueueName")?;
    check_name(&name)?;
    let priority = priority(required(req.priority, "priority")?)?;
    if let Some(t) = req.job_queue_type.as_deref()
        && t != "SAGEMAKER_TRAINING"
    {
        return Err(ApiError::client(format!(
            "jobQueueType must be SAGEMAKER_TRAINING (the emulator serves quota-management queues only), got {:?}",
            quotatop_model::clean(t)
        )));
    }
    no_compute_environments(req.compute_environment_order.as_deref())?;
    let enabled = enabled(req.state.as_deref(), "state")?.unwrap_or(true);
    let Some(env_arn) = queue_environment(
        account,
        required(req.service_environment_order, "serviceEnvironmentOrder")?,
    )?
    else {
        return Err(ApiError::client(
            "serviceEnvironmentOrder of a quota-management job queue must have exactly 1 entry, got 0",
        ));
    };
    let policy_arn = quota_policy(
        account,
        &required_str(req.scheduling_policy_arn, "schedulingPolicyArn")?,
    )?;
    if let Some(tags) = &req.tags {
        validate_tags(tags)?;
    }
    if account.queues.iter().any(|q| q.queue_name == name) {
        return Err(ApiError::client("Object already exists"));
    }
    check_room(account.queues.len(), "job queues")?;
    check_unconnected(account, &env_arn)?;
    let capacity = account
        .envs
        .iter()
        .find(|e| e.arn == env_arn)
        .map(|e| e.capacity.clone())
        .ok_or_else(|| ApiError::Server("environment vanished".into()))?;
    // Each queue's job ids come from a stream of their own, so no two queues (in any region)
    // hand out the same id; reproducible when the emulator's ids are.
    account.queues_created += 1;
    let id_seed = queue_id_seed(
        account.id_seed.unwrap_or(account.template.seed) ^ account.queues_created,
        &account.arn("job-queue", &name),
    );
    let config =
        account
            .template
            .engine_config(capacity, account.now, Some(id_seed), &account.base);
    let engine = Engine::new(config)?;
    let settings = QueueSettings {
        priority,
        enabled,
        policy_arn,
        env_arn: Some(env_arn),
    };
    let queue = QueueWorld::new(
        &name,
        settings,
        engine,
        Workload::none(),
        &account.base,
        account.settle,
    );
    let arn = queue.queue_arn();
    account.queues.push(queue);
    account.sync_dispatching()?;
    if let Some(tags) = req.tags.filter(|t| !t.is_empty()) {
        account.tags.insert(arn.clone(), tags);
    }
    ok(&serde_json::json!({ "jobQueueName": name, "jobQueueArn": arn }))
}

pub fn update_queue(account: &mut Account, body: &[u8]) -> Result<Response, ApiError> {
    let req: UpdateQueueRequest = parse(body)?;
    let which = required_str(req.job_queue, "jobQueue")?;
    let i = account.queue_index(&which)?;
    let now = account.settle;
    check_not_deleting(account.queues[i].transition, now, "Job queue", &which)?;
    no_compute_environments(req.compute_environment_order.as_deref())?;
    let enabled = enabled(req.state.as_deref(), "state")?;
    let priority = req.priority.map(priority).transpose()?;
    let policy_arn = req
        .scheduling_policy_arn
        .map(|p| quota_policy(account, &p))
        .transpose()?;
    if let Some(order) = req.service_environment_order {
        let env_arn = queue_environment(account, order)?;
        move_queue(account, i, env_arn)?;
    }
    let q = &mut account.queues[i];
    if let Some(enabled) = enabled {
        q.settings.enabled = enabled;
    }
    if let Some(priority) = priority {
        q.settings.priority = priority;
    }
    if let Some(policy_arn) = policy_arn {
        q.settings.policy_arn = policy_arn;
    }
    q.transition = Transition::updating(now);
    let out = serde_json::json!({ "jobQueueName": q.queue_name, "jobQueueArn": q.queue_arn() });
    account.sync_dispatching()?;
    ok(&out)
}

pub fn delete_queue(account: &mut Account, body: &[u8]) -> Result<Response, ApiError> {
    let req: QueueRequest = parse(body)?;
    let which = required_str(req.job_queue, "jobQueue")?;
    let i = account.queue_index(&which)?;
    let now = account.settle;
    check_not_deleting(account.queues[i].transition, now, "Job queue", &which)?;
    let q = &mut account.queues[i];
    if q.settings.enabled {
        return Err(ApiError::client(format!(
            "Job queue {} is ENABLED: disable it before deleting it",
            q.queue_name
        )));
    }
    let unfinished: Vec<_> = q
        .engine
        .jobs()
        .filter(|j| !j.status.is_terminal())
        .filter_map(|j| q.engine.find(&j.id))
        .collect();
    for id in unfinished {
        q.engine.terminate(id, "Job queue deleted")?;
    }
    q.after_change();
    q.transition = Transition::deleting(now);
    wire::ok_empty()
}

/// Puts queue `i` on `env_arn` (its capacity from now on), or detaches it (`None`).
fn move_queue(account: &mut Account, i: usize, env_arn: Option<String>) -> Result<(), ApiError> {
    if account.queues[i].settings.env_arn == env_arn {
        return Ok(());
    }
    if let Some(arn) = &env_arn {
        check_unconnected(account, arn)?;
        let capacity = account
            .envs
            .iter()
            .find(|e| e.arn == *arn)
            .map(|e| e.capacity.clone())
            .ok_or_else(|| ApiError::Server("environment vanished".into()))?;
        account.queues[i].engine.set_capacity(capacity)?;
    }
    account.queues[i].settings.env_arn = env_arn;
    Ok(())
}

/// Refuses an environment another queue is connected to.
fn check_unconnected(account: &Account, env_arn: &str) -> Result<(), ApiError> {
    match account.queues.iter().find(|q| q.uses(env_arn)) {
        Some(q) => Err(ApiError::client(format!(
            "Service environment {env_arn} is already connected to job queue {}: a quota-management service environment serves one job queue",
            q.queue_name
        ))),
        None => Ok(()),
    }
}

/// A seed for a queue's ids from the emulator's and the queue's ARN (FNV-1a).
fn queue_id_seed(base: u64, queue_arn: &str) -> u64 {
    fnv1a_seeded(base, queue_arn.bytes())
}

// ----- checks ------------------------------------------------------------------------------

fn check_name(name: &str) -> Result<(), ApiError> {
    if valid_resource_name(name) {
        Ok(())
    } else {
        Err(ApiError::client(format!(
            "Invalid name {:?}: use 1-128 letters, digits, '-' or '_'",
            quotatop_model::clean(name)
        )))
    }
}

fn enabled(state: Option<&str>, member: &str) -> Result<Option<bool>, ApiError> {
    match state {
        None => Ok(None),
        Some("ENABLED") => Ok(Some(true)),
        Some("DISABLED") => Ok(Some(false)),
        Some(other) => Err(ApiError::client(format!(
            "{member} must be ENABLED or DISABLED, got {:?}",
            quotatop_model::clean(other)
        ))),
    }
}

fn priority(p: i64) -> Result<i64, ApiError> {
    if (0..=1000).contains(&p) {
        Ok(p)
    } else {
        Err(ApiError::client(format!(
            "priority must be between 0 and 1000, got {p}"
        )))
    }
}

fn check_not_deleting(
    t: Option<Transition>,
    now: quotatop_model::Millis,
    what: &str,
    name: &str,
) -> Result<(), ApiError> {
    match status_at(t, now) {
        "DELETING" | "DELETED" => Err(ApiError::client(format!(
            "{what} {} is being deleted",
            quotatop_model::clean(name)
        ))),
        _ => Ok(()),
    }
}

fn no_compute_environments(order: Option<&[serde_json::Value]>) -> Result<(), ApiError> {
    if order.is_some_and(|o| !o.is_empty()) {
        return Err(ApiError::client(
            "computeEnvironmentOrder is for ECS and EKS job queues; a SAGEMAKER_TRAINING queue takes serviceEnvironmentOrder",
        ));
    }
    Ok(())
}

/// The one VALID environment a queue's `serviceEnvironmentOrder` names (`None` for an empty
/// order: the queue detached from its environment).
fn queue_environment(
    account: &Account,
    order: Vec<EnvironmentOrderJson>,
) -> Result<Option<String>, ApiError> {
    if order.is_empty() {
        return Ok(None);
    }
    let [entry] = <[EnvironmentOrderJson; 1]>::try_from(order).map_err(|o| {
        ApiError::client(format!(
            "serviceEnvironmentOrder of a quota-management job queue must have at most 1 entry (a quota-management queue runs on one service environment), got {}",
            o.len()
        ))
    })?;
    required(entry.order, "serviceEnvironmentOrder[].order")?;
    let which = required_str(
        entry.service_environment,
        "serviceEnvironmentOrder[].serviceEnvironment",
    )?;
    let env = &account.envs[account.env_index(&which)?];
    match status_at(env.transition, account.settle) {
        "VALID" | "UPDATING" => Ok(Some(env.arn.clone())),
        status => Err(ApiError::client(format!(
            "Service environment {} is {status}; wait until it is VALID",
            env.name
        ))),
    }
}

/// `schedulingPolicyArn` must name a quota-share policy.
fn quota_policy(account: &Account, arn: &str) -> Result<String, ApiError> {
    let policy = account
        .policies
        .iter()
        .find(|p| p.arn == arn)
        .ok_or_else(|| ApiError::client(format!("Scheduling policy {arn} does not exist")))?;
    if policy.quota.is_none() {
        return Err(ApiError::client(format!(
            "Scheduling policy {arn} has no quotaSharePolicy: the emulator serves quota-management job queues only"
        )));
    }
    Ok(policy.arn.clone())
}

/// 1 to 5 limits, each an instance type with at least 1 instance, no type twice.
fn capacity(raw: Vec<CapacityLimitJson>) -> Result<Vec<CapacityLimit>, ApiError> {
    if raw.is_empty() || raw.len() > quotatop_model::MAX_CAPACITY_LIMITS {
        return Err(ApiError::client(format!(
            "capacityLimits must have 1 to {} entries, got {}",
            quotatop_model::MAX_CAPACITY_LIMITS,
            raw.len()
        )));
    }
    let mut out: Vec<CapacityLimit> = Vec::new();
    for l in raw {
        let unit = required_str(l.capacity_unit, "capacityLimits[].capacityUnit")?;
        if unit == "NUM_INSTANCES" {
            return Err(ApiError::client(
                "capacityUnit NUM_INSTANCES is for service environments without quota management; the emulator models quota management, whose limits are per instance type (e.g. ml.p4d.24xlarge)",
            ));
        }
        if !quotatop_model::is_training_instance_type(&unit) {
            return Err(ApiError::client(format!(
                "capacityUnit must be a SageMaker training instance type such as ml.p4d.24xlarge, got {:?}",
                quotatop_model::clean(&unit)
            )));
        }
        let max = required(l.max_capacity, "capacityLimits[].maxCapacity")?;
        if !(1..=i64::from(i32::MAX)).contains(&max) {
            return Err(ApiError::client(format!(
                "maxCapacity for {unit} must be between 1 and 2147483647, got {max}"
            )));
        }
        if out.iter().any(|c| c.instance_type == unit) {
            return Err(ApiError::client(format!(
                "capacityLimits lists {unit} twice"
            )));
        }
        out.push(CapacityLimit::new(unit, max as u32));
    }
    Ok(out)
}
