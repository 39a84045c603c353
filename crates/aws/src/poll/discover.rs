//! Queue discovery: the queues named with `--queue` (names or ARNs), or every
//! `SAGEMAKER_TRAINING` queue whose scheduling policy is a quota-share policy (reference §3.7).
//! A named queue that is not quota-managed is refused with the reason.

use std::collections::HashMap;

use crate::batch::{BatchClient, JobQueueInfo, PolicyKind, SchedulingPolicyInfo};
use quotatop_model::ServiceEnvironment;

use super::PollError;

/// The queue type quota management requires.
pub const SAGEMAKER_TRAINING: &str = "SAGEMAKER_TRAINING";

/// A quota-managed queue and its service environment.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueInfo {
    pub queue: JobQueueInfo,
    pub environment: ServiceEnvironment,
}

/// Scheduling policies seen so far (their type cannot change, so each is described once).
#[derive(Debug, Default)]
pub struct PolicyCache(HashMap<String, SchedulingPolicyInfo>);

/// Why a queue is not quota-managed, `None` when it is.
pub fn not_quota_managed(q: &JobQueueInfo, policies: &PolicyCache) -> Option<String> {
    match q.queue_type.as_deref() {
        Some(SAGEMAKER_TRAINING) => {}
        Some(other) => {
            return Some(format!(
                "its type is {other}; quota shares exist only on {SAGEMAKER_TRAINING} queues"
            ));
        }
        None => {
            return Some(format!(
                "it has no job queue type; quota shares exist only on {SAGEMAKER_TRAINING} queues"
            ));
        }
    }
    let Some(arn) = &q.scheduling_policy_arn else {
        return Some("it has no scheduling policy (a FIFO queue)".to_string());
    };
    match policies.0.get(arn).map(|p| p.kind) {
        Some(PolicyKind::QuotaShare) => None,
        Some(PolicyKind::FairShare) => Some(format!(
            "its scheduling policy {arn} is a fair-share policy, not a quota-share policy"
        )),
        Some(PolicyKind::Plain) => Some(format!(
            "its scheduling policy {arn} has no quotaSharePolicy"
        )),
        None => Some(format!("its scheduling policy {arn} does not exist")),
    }
}

/// Resolves `wanted` (empty = every quota-managed queue) into queues with their environments.
pub async fn discover(
    client: &BatchClient,
    wanted: &[String],
    policies: &mut PolicyCache,
) -> Result<Vec<QueueInfo>, PollError> {
    let queues = client.describe_job_queues(wanted).await?;
    let unknown: Vec<String> = policy_arns(&queues)
        .into_iter()
        .filter(|a| !policies.0.contains_key(a))
        .collect();
    if !unknown.is_empty() {
        for p in client.describe_scheduling_policies(&unknown).await? {
            policies.0.insert(p.arn.clone(), p);
        }
    }
    let mut chosen = Vec::new();
    if wanted.is_empty() {
        chosen.extend(
            queues
                .into_iter()
                .filter(|q| not_quota_managed(q, policies).is_none()),
        );
        if chosen.is_empty() {
            return Err(PollError::NoQuotaQueues);
        }
    } else {
        for w in wanted {
            let Some(q) = queues.iter().find(|q| &q.name == w || &q.arn == w) else {
                // A typo: say which queues there are (one more call, on this error path only).
                let mut existing: Vec<String> = client
                    .describe_job_queues(&[])
                    .await?
                    .into_iter()
                    .map(|q| q.name)
                    .collect();
                existing.sort();
                return Err(PollError::QueueNotFound {
                    queue: w.clone(),
                    existing,
                });
            };
            if let Some(reason) = not_quota_managed(q, policies) {
                return Err(PollError::NotQuotaManaged {
                    queue: w.clone(),
                    reason,
                });
            }
            if !chosen.iter().any(|c: &JobQueueInfo| c.arn == q.arn) {
                chosen.push(q.clone());
            }
        }
    }
    let mut env_arns: Vec<String> = chosen
        .iter()
        .flat_map(|q| q.service_environments.iter().cloned())
        .collect();
    env_arns.sort();
    env_arns.dedup();
    let envs = if env_arns.is_empty() {
        Vec::new()
    } else {
        client.describe_service_environments(&env_arns).await?
    };
    Ok(chosen
        .into_iter()
        .map(|queue| {
            let environment = queue
                .service_environments
                .iter()
                .find_map(|a| envs.iter().find(|e| &e.arn == a || &e.name == a))
                .map(|e| ServiceEnvironment {
                    name: e.name.clone(),
                    capacity: e.capacity.clone(),
                })
                .unwrap_or_default();
            QueueInfo { queue, environment }
        })
        .collect())
}

fn policy_arns(queues: &[JobQueueInfo]) -> Vec<String> {
    let mut arns: Vec<String> = queues
        .iter()
        .filter(|q| q.queue_type.as_deref() == Some(SAGEMAKER_TRAINING))
        .filter_map(|q| q.scheduling_policy_arn.clone())
        .collect();
    arns.sort();
    arns.dedup();
    arns
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue(ty: Option<&str>, policy: Option<&str>) -> JobQueueInfo {
        JobQueueInfo {
            name: "q".into(),
            arn: "arn:q".into(),
            state: "ENABLED".into(),
            status: "VALID".into(),
            status_reason: None,
            queue_type: ty.map(str::to_string),
            scheduling_policy_arn: policy.map(str::to_string),
            service_environments: vec![],
        }
    }

    #[test]
    fn reasons_name_what_is_missing() {
        let mut cache = PolicyCache::default();
        for (arn, kind) in [
            ("arn:qs", PolicyKind::QuotaShare),
            ("arn:fs", PolicyKind::FairShare),
        ] {
            cache.0.insert(
                arn.into(),
                SchedulingPolicyInfo {
                    name: arn.into(),
                    arn: arn.into(),
                    kind,
                },
            );
        }
        assert_eq!(
            not_quota_managed(&queue(Some(SAGEMAKER_TRAINING), Some("arn:qs")), &cache),
            None
        );
        let why = |q| not_quota_managed(&q, &cache).unwrap();
        assert!(why(queue(Some("EC2"), Some("arn:qs"))).contains("type is EC2"));
        assert!(why(queue(Some(SAGEMAKER_TRAINING), None)).contains("no scheduling policy"));
        assert!(why(queue(Some(SAGEMAKER_TRAINING), Some("arn:fs"))).contains("fair-share"));
        assert!(why(queue(Some(SAGEMAKER_TRAINING), Some("arn:x"))).contains("does not exist"));
    }
}
