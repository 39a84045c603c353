//! Scheduling policies and the reading side of job queues and service environments:
//! Create/Update/Delete/Describe/ListSchedulingPolicies, DescribeJobQueues,
//! DescribeServiceEnvironments. Creating, changing and deleting queues and environments is in
//! `ops_setup.rs`.

use axum::response::Response;

use super::account::{Account, Policy, check_room, status_at};
use super::error::ApiError;
use super::ops_tags::validate_tags;
use super::paging;
use super::scenario::valid_resource_name;
use super::wire::{
    self, CapacityLimitJson, CreateSchedulingPolicyRequest, DescribeJobQueuesRequest,
    DescribeSchedulingPoliciesRequest, DescribeServiceEnvironmentsRequest, JobQueueDetail,
    PageRequest, QuotaSharePolicyJson, SchedulingPolicyDetail, ServiceEnvironmentDetail,
    ServiceEnvironmentOrder, ok, parse, required, required_str,
};

pub fn create_policy(account: &mut Account, body: &[u8]) -> Result<Response, ApiError> {
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
        check_quota_policy(q)?;
    }
    if let Some(tags) = &req.tags {
        validate_tags(tags)?;
    }
    if account.policies.iter().any(|p| p.name == name) {
        return Err(ApiError::client("Object already exists"));
    }
    check_room(account.policies.len(), "scheduling policies")?;
    let arn = account.arn("scheduling-policy", &name);
    account.policies.push(Policy {
        name: name.clone(),
        arn: arn.clone(),
        quota: req.quota_share_policy,
        fairshare: req.fairshare_policy,
    });
    if let Some(tags) = req.tags.filter(|t| !t.is_empty()) {
        account.tags.insert(arn.clone(), tags);
    }
    ok(&serde_json::json!({ "name": name, "arn": arn }))
}

pub fn describe_policies(account: &mut Account, body: &[u8]) -> Result<Response, ApiError> {
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
        .filter_map(|arn| account.policies.iter().find(|p| &p.arn == arn))
        .map(|p| SchedulingPolicyDetail {
            name: p.name.clone(),
            arn: p.arn.clone(),
            quota_share_policy: p.quota.clone(),
            fairshare_policy: p.fairshare.clone(),
            tags: Some(account.tags.get(&p.arn).cloned().unwrap_or_default()),
        })
        .collect();
    ok(&serde_json::json!({ "schedulingPolicies": found }))
}

pub fn list_policies(account: &mut Account, body: &[u8]) -> Result<Response, ApiError> {
    let req: PageRequest = parse(body)?;
    let size = wire::page_size(req.max_results)?;
    let arns: Vec<String> = account.policies.iter().map(|p| p.arn.clone()).collect();
    let (page, next) = paging::by_offset(
        arns,
        req.next_token.as_deref(),
        size,
        &paging::Scope::new("listschedulingpolicies", &[]),
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

pub fn describe_queues(account: &mut Account, body: &[u8]) -> Result<Response, ApiError> {
    let req: DescribeJobQueuesRequest = parse(body)?;
    let size = wire::page_size(req.max_results)?;
    let wanted = check_names(req.job_queues, "jobQueues")?;
    let queues: Vec<JobQueueDetail> = account
        .queues
        .iter()
        .filter(|q| wanted.as_ref().is_none_or(|w| w.iter().any(|n| q.is(n))))
        .map(|q| {
            let arn = q.queue_arn();
            let status = q.status();
            JobQueueDetail {
                job_queue_name: q.queue_name.clone(),
                job_queue_arn: arn.clone(),
                state: if q.settings.enabled {
                    "ENABLED"
                } else {
                    "DISABLED"
                },
                scheduling_policy_arn: q.settings.policy_arn.clone(),
                status,
                status_reason: match status {
                    "VALID" => "JobQueue Healthy",
                    "CREATING" => "Creating",
                    "UPDATING" => "Updating",
                    _ => "Deleting",
                },
                priority: q.settings.priority,
                compute_environment_order: Vec::new(),
                service_environment_order: q
                    .settings
                    .env_arn
                    .iter()
                    .map(|arn| ServiceEnvironmentOrder {
                        order: 1,
                        service_environment: arn.clone(),
                    })
                    .collect(),
                job_queue_type: "SAGEMAKER_TRAINING",
                tags: account.tags.get(&arn).cloned().unwrap_or_default(),
                job_state_time_limit_actions: Vec::new(),
            }
        })
        .collect();
    let scope = paging::Scope::new("describejobqueues", &names(wanted.as_deref()));
    let (page, next) = paging::by_offset(queues, req.next_token.as_deref(), size, &scope)?;
    ok(&with_token(serde_json::json!({ "jobQueues": page }), next))
}

pub fn describe_environments(account: &mut Account, body: &[u8]) -> Result<Response, ApiError> {
    let req: DescribeServiceEnvironmentsRequest = parse(body)?;
    let size = wire::page_size(req.max_results)?;
    let wanted = check_names(req.service_environments, "serviceEnvironments")?;
    let now = account.settle;
    let envs: Vec<ServiceEnvironmentDetail> = account
        .envs
        .iter()
        .filter(|e| {
            wanted
                .as_ref()
                .is_none_or(|w| w.iter().any(|n| *n == e.name || *n == e.arn))
        })
        .map(|e| ServiceEnvironmentDetail {
            service_environment_name: e.name.clone(),
            service_environment_arn: e.arn.clone(),
            service_environment_type: "SAGEMAKER_TRAINING",
            state: if e.enabled { "ENABLED" } else { "DISABLED" },
            status: status_at(e.transition, now),
            capacity_limits: e
                .capacity
                .iter()
                .map(|l| CapacityLimitJson {
                    max_capacity: Some(l.max_capacity as i64),
                    capacity_unit: Some(l.instance_type.clone()),
                })
                .collect(),
            tags: account.tags.get(&e.arn).cloned().unwrap_or_default(),
        })
        .collect();
    let (page, next) = paging::by_offset(
        envs,
        req.next_token.as_deref(),
        size,
        &paging::Scope::new("describeserviceenvironments", &names(wanted.as_deref())),
    )?;
    ok(&with_token(
        serde_json::json!({ "serviceEnvironments": page }),
        next,
    ))
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct UpdatePolicyRequest {
    arn: Option<String>,
    quota_share_policy: Option<QuotaSharePolicyJson>,
    fairshare_policy: Option<serde_json::Value>,
}

/// UpdateSchedulingPolicy: a policy's type cannot change ("once set, this policy type cannot be
/// removed or changed"); a quota-share policy's strategy must stay FIFO.
pub fn update_policy(account: &mut Account, body: &[u8]) -> Result<Response, ApiError> {
    let req: UpdatePolicyRequest = parse(body)?;
    let arn = required_str(req.arn, "arn")?;
    let policy = account
        .policies
        .iter_mut()
        .find(|p| p.arn == arn)
        .ok_or_else(|| ApiError::client(format!("Scheduling policy {arn} does not exist")))?;
    if let Some(q) = req.quota_share_policy {
        if policy.quota.is_none() {
            return Err(ApiError::client(
                "A fair-share policy cannot become a quota-share policy",
            ));
        }
        check_quota_policy(&q)?;
        policy.quota = Some(q);
    }
    if let Some(f) = req.fairshare_policy {
        if policy.quota.is_some() {
            return Err(ApiError::client(
                "A quota-share policy cannot become a fair-share policy",
            ));
        }
        policy.fairshare = Some(f);
    }
    wire::ok_empty()
}

#[derive(serde::Deserialize)]
struct ArnRequest {
    arn: Option<String>,
}

/// DeleteSchedulingPolicy: refused while a job queue uses it.
pub fn delete_policy(account: &mut Account, body: &[u8]) -> Result<Response, ApiError> {
    let req: ArnRequest = parse(body)?;
    let arn = required_str(req.arn, "arn")?;
    let index = account
        .policies
        .iter()
        .position(|p| p.arn == arn)
        .ok_or_else(|| ApiError::client(format!("Scheduling policy {arn} does not exist")))?;
    if let Some(q) = account.queues.iter().find(|q| q.settings.policy_arn == arn) {
        return Err(ApiError::client(format!(
            "Scheduling policy {arn} is used by job queue {}",
            q.queue_name
        )));
    }
    account.policies.remove(index);
    account.tags.remove(&arn);
    wire::ok_empty()
}

/// `idleResourceAssignmentStrategy` is required and FIFO.
fn check_quota_policy(q: &QuotaSharePolicyJson) -> Result<(), ApiError> {
    match q.idle_resource_assignment_strategy.as_deref() {
        Some("FIFO") => Ok(()),
        None => Err(ApiError::client(
            "quotaSharePolicy.idleResourceAssignmentStrategy is required",
        )),
        Some(other) => Err(ApiError::client(format!(
            "idleResourceAssignmentStrategy must be FIFO, got {other:?}"
        ))),
    }
}

/// An optional list of names or ARNs: at most 100.
pub fn check_names(
    names: Option<Vec<String>>,
    member: &str,
) -> Result<Option<Vec<String>>, ApiError> {
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

/// The names a Describe request asked for, as a token's scope.
fn names(wanted: Option<&[String]>) -> Vec<&str> {
    wanted.map_or_else(|| vec!["*"], |w| w.iter().map(String::as_str).collect())
}
