//! Scheduling policies, the job queue and the service environment: CreateSchedulingPolicy,
//! DescribeSchedulingPolicies, ListSchedulingPolicies, DescribeJobQueues,
//! DescribeServiceEnvironments.
//!
//! The emulated account has one quota-management job queue and its service environment, both
//! from the scenario; they cannot be created or changed through the API.

use axum::response::Response;

use super::error::ApiError;
use super::ops_tags::validate_tags;
use super::paging;
use super::scenario::valid_resource_name;
use super::state::{Policy, World};
use super::wire::{
    self, CapacityLimitJson, CreateSchedulingPolicyRequest, DescribeJobQueuesRequest,
    DescribeSchedulingPoliciesRequest, DescribeServiceEnvironmentsRequest, JobQueueDetail,
    PageRequest, SchedulingPolicyDetail, ServiceEnvironmentDetail, ServiceEnvironmentOrder, ok,
    parse, required, required_str,
};

pub fn create_policy(world: &mut World, body: &[u8]) -> Result<Response, ApiError> {
    let req: CreateSchedulingPolicyRequest = parse(body)?;
    let name = required_str(req.name, "name")?;
    if !valid_resource_name(&name) {
        return Err(ApiError::client(format!(
            "Invalid name {name:?}: use 1-128 letters, digits, '-' or '_'"
        )));
    }
    if req.quota_share_policy.is_some() && req.fairshare_policy.is_some() {
        return Err(ApiError::client(
            "quotaSharePolicy and fairsharePolicy are mutually exclusive",
        ));
    }
    if let Some(q) = &req.quota_share_policy {
        match q.idle_resource_assignment_strategy.as_deref() {
            Some("FIFO") => {}
            None => {
                return Err(ApiError::client(
                    "quotaSharePolicy.idleResourceAssignmentStrategy is required",
                ));
            }
            Some(other) => {
                return Err(ApiError::client(format!(
                    "idleResourceAssignmentStrategy must be FIFO, got {other:?}"
                )));
            }
        }
    }
    if let Some(tags) = &req.tags {
        validate_tags(tags)?;
    }
    if world.policies.iter().any(|p| p.name == name) {
        return Err(ApiError::client("Object already exists"));
    }
    let arn = world.arn("scheduling-policy", &name);
    world.policies.push(Policy {
        name: name.clone(),
        arn: arn.clone(),
        quota: req.quota_share_policy,
        fairshare: req.fairshare_policy,
    });
    if let Some(tags) = req.tags.filter(|t| !t.is_empty()) {
        world.tags.insert(arn.clone(), tags);
    }
    ok(&serde_json::json!({ "name": name, "arn": arn }))
}

pub fn describe_policies(world: &mut World, body: &[u8]) -> Result<Response, ApiError> {
    let req: DescribeSchedulingPoliciesRequest = parse(body)?;
    let arns = required(req.arns, "arns")?;
    if arns.is_empty() || arns.len() > 100 {
        return Err(ApiError::client(format!(
            "arns must have 1 to 100 entries, got {}",
            arns.len()
        )));
    }
    let found: Vec<SchedulingPolicyDetail> = arns
        .iter()
        .filter_map(|arn| world.policies.iter().find(|p| &p.arn == arn))
        .map(|p| SchedulingPolicyDetail {
            name: p.name.clone(),
            arn: p.arn.clone(),
            quota_share_policy: p.quota.clone(),
            fairshare_policy: p.fairshare.clone(),
            tags: Some(world.tags.get(&p.arn).cloned().unwrap_or_default()),
        })
        .collect();
    ok(&serde_json::json!({ "schedulingPolicies": found }))
}

pub fn list_policies(world: &mut World, body: &[u8]) -> Result<Response, ApiError> {
    let req: PageRequest = parse(body)?;
    let size = wire::page_size(req.max_results)?;
    let arns: Vec<String> = world.policies.iter().map(|p| p.arn.clone()).collect();
    let (page, next) = paging::by_offset(
        arns,
        req.next_token.as_deref(),
        size,
        "listschedulingpolicies",
    )?;
    let list: Vec<serde_json::Value> = page
        .into_iter()
        .map(|arn| serde_json::json!({ "arn": arn }))
        .collect();
    ok(&with_token(
        serde_json::json!({ "schedulingPolicies": list }),
        next,
    ))
}

pub fn describe_queues(world: &mut World, body: &[u8]) -> Result<Response, ApiError> {
    let req: DescribeJobQueuesRequest = parse(body)?;
    let size = wire::page_size(req.max_results)?;
    let wanted = check_names(req.job_queues, "jobQueues")?;
    let (name, arn) = (world.queue_name.clone(), world.queue_arn());
    let matches = wanted
        .as_ref()
        .is_none_or(|w| w.iter().any(|q| *q == name || *q == arn));
    let queues: Vec<JobQueueDetail> = if matches {
        vec![JobQueueDetail {
            job_queue_name: name,
            job_queue_arn: arn.clone(),
            state: "ENABLED",
            scheduling_policy_arn: world.policy_arn(),
            status: "VALID",
            status_reason: "JobQueue Healthy",
            priority: world.queue_priority,
            compute_environment_order: Vec::new(),
            service_environment_order: vec![ServiceEnvironmentOrder {
                order: 1,
                service_environment: world.env_arn(),
            }],
            job_queue_type: "SAGEMAKER_TRAINING",
            tags: world.tags.get(&arn).cloned().unwrap_or_default(),
            job_state_time_limit_actions: Vec::new(),
        }]
    } else {
        Vec::new()
    };
    let (page, next) =
        paging::by_offset(queues, req.next_token.as_deref(), size, "describejobqueues")?;
    ok(&with_token(serde_json::json!({ "jobQueues": page }), next))
}

pub fn describe_environments(world: &mut World, body: &[u8]) -> Result<Response, ApiError> {
    let req: DescribeServiceEnvironmentsRequest = parse(body)?;
    let size = wire::page_size(req.max_results)?;
    let wanted = check_names(req.service_environments, "serviceEnvironments")?;
    let (name, arn) = (world.env_name.clone(), world.env_arn());
    let matches = wanted
        .as_ref()
        .is_none_or(|w| w.iter().any(|e| *e == name || *e == arn));
    let envs: Vec<ServiceEnvironmentDetail> = if matches {
        vec![ServiceEnvironmentDetail {
            service_environment_name: name,
            service_environment_arn: arn.clone(),
            service_environment_type: "SAGEMAKER_TRAINING",
            state: "ENABLED",
            status: "VALID",
            capacity_limits: world
                .engine
                .config()
                .capacity
                .iter()
                .map(|l| CapacityLimitJson {
                    max_capacity: Some(l.max_capacity as i64),
                    capacity_unit: Some(l.instance_type.clone()),
                })
                .collect(),
            tags: world.tags.get(&arn).cloned().unwrap_or_default(),
        }]
    } else {
        Vec::new()
    };
    let (page, next) = paging::by_offset(
        envs,
        req.next_token.as_deref(),
        size,
        "describeserviceenvironments",
    )?;
    ok(&with_token(
        serde_json::json!({ "serviceEnvironments": page }),
        next,
    ))
}

/// An optional list of names or ARNs: at most 100.
fn check_names(names: Option<Vec<String>>, member: &str) -> Result<Option<Vec<String>>, ApiError> {
    match names {
        Some(n) if n.len() > 100 => Err(ApiError::client(format!(
            "{member} can have at most 100 entries, got {}",
            n.len()
        ))),
        Some(n) if n.is_empty() => Ok(None),
        other => Ok(other),
    }
}

pub fn with_token(mut body: serde_json::Value, next: Option<String>) -> serde_json::Value {
    if let Some(next) = next {
        body["nextToken"] = next.into();
    }
    body
}
