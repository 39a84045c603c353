//! SDK types into [`quotatop_model`] and [`super::types`]. Missing optional fields take the
//! model's defaults; a job without an id or a known status is refused (the caller skips it).

use std::collections::BTreeMap;

use aws_sdk_batch::operation::describe_service_job::DescribeServiceJobOutput;
use aws_sdk_batch::operation::get_job_queue_snapshot::GetJobQueueSnapshotOutput;
use aws_sdk_batch::types as sdk;

use quotatop_model::{
    Attempt, CapacityLimit, FrontEntry, InSharePreemption, JobExtras, JobStatus, MAX_PRIORITY,
    PreemptedAttempt, PreemptionSummary, QuotaShare, ServiceJob, ShareState, SharingConfig,
    SharingStrategy,
};

use super::capacity::capacity;
use super::types::{
    DescribedJob, JobFingerprint, JobQueueInfo, JobSummary, PolicyKind, QueueFront,
    SchedulingPolicyInfo, ServiceEnvironmentInfo,
};

/// A timestamp, with 0 read as "not set": DescribeServiceJob's `startedAt` is required in the
/// model, so a job that has not started comes back with 0 (reference §3.1), while its listing
/// summary omits the field.
fn stamp(t: Option<i64>) -> Option<i64> {
    t.filter(|&t| t > 0)
}

fn status(s: Option<&sdk::ServiceJobStatus>) -> Option<JobStatus> {
    s.and_then(|s| JobStatus::parse(s.as_str()))
}

fn resource_id(r: Option<&sdk::ServiceResourceId>) -> Option<String> {
    r.and_then(|r| r.value()).map(str::to_string)
}

pub fn job_summary(s: &sdk::ServiceJobSummary) -> Option<JobSummary> {
    let id = s.job_id()?.to_string();
    let status = status(s.status())?;
    let usage: Vec<_> = s
        .capacity_usage()
        .iter()
        .map(|u| (u.capacity_unit(), u.quantity()))
        .collect();
    let c = capacity(&usage, None);
    Some(JobSummary {
        arn: s.job_arn().unwrap_or_default().to_string(),
        name: s.job_name().unwrap_or_default().to_string(),
        share: s.quota_share_name().unwrap_or_default().to_string(),
        instance_type: c.instance_type,
        instance_count: c.instance_count,
        capacity_notes: c.notes,
        created_at: s.created_at().unwrap_or(0),
        fingerprint: JobFingerprint {
            status,
            status_reason: s.status_reason().map(str::to_string),
            latest_attempt: resource_id(s.latest_attempt().and_then(|a| a.service_resource_id())),
            scheduled_at: stamp(s.scheduled_at()),
            started_at: stamp(s.started_at()),
            stopped_at: stamp(s.stopped_at()),
            is_terminated: s.is_terminated().unwrap_or(false),
        },
        id,
    })
}

pub fn described_job(d: &DescribeServiceJobOutput) -> Option<DescribedJob> {
    let id = d.job_id()?.to_string();
    let status = status(d.status())?;
    let usage: Vec<_> = d
        .capacity_usage()
        .iter()
        .map(|u| (u.capacity_unit(), u.quantity()))
        .collect();
    let mut c = capacity(&usage, d.service_request_payload());
    let priority = priority_in_range(d.scheduling_priority(), &mut c.notes);
    let preemption = d.preemption_summary().and_then(preemption_summary);
    let fingerprint = JobFingerprint {
        status,
        status_reason: d.status_reason().map(str::to_string),
        latest_attempt: resource_id(d.latest_attempt().and_then(|a| a.service_resource_id())),
        scheduled_at: stamp(d.scheduled_at()),
        started_at: stamp(d.started_at()),
        stopped_at: stamp(d.stopped_at()),
        is_terminated: d.is_terminated().unwrap_or(false),
    };
    let job = ServiceJob {
        name: d.job_name().unwrap_or_default().to_string(),
        share: d.quota_share_name().unwrap_or_default().to_string(),
        priority,
        instance_type: c.instance_type,
        instance_count: c.instance_count,
        status,
        status_reason: fingerprint.status_reason.clone(),
        created_at: d.created_at().unwrap_or(0),
        scheduled_at: fingerprint.scheduled_at,
        started_at: fingerprint.started_at,
        stopped_at: fingerprint.stopped_at,
        preemption_retries: d
            .preemption_configuration()
            .and_then(|p| p.preemption_retries_before_termination())
            .map(|n| n.max(0) as u32),
        checkpoint_interval_ms: quotatop_model::checkpoint_from_tags(
            d.tags()
                .into_iter()
                .flatten()
                .map(|(k, v)| (k.as_str(), v.as_str())),
        ),
        class_tag: quotatop_model::class_from_tags(
            d.tags()
                .into_iter()
                .flatten()
                .map(|(k, v)| (k.as_str(), v.as_str())),
        ),
        preemption,
        attempts: attempts(d),
        is_terminated: fingerprint.is_terminated,
        id,
        extras: Box::new(JobExtras {
            capacity_usage: c.used,
            notes: c.notes,
            ..described_extras(d)
        }),
    };
    Some(DescribedJob {
        arn: d.job_arn().unwrap_or_default().to_string(),
        queue: d.job_queue().unwrap_or_default().to_string(),
        job,
        fingerprint,
        checkpoint_uri: d
            .service_request_payload()
            .and_then(quotatop_model::checkpoint_uri_of_payload),
    })
}

/// A job's `schedulingPriority` within 0..=[`MAX_PRIORITY`], the range the API documents; one
/// outside it is noted on the job with what is shown instead, never changed silently.
fn priority_in_range(sent: Option<i32>, notes: &mut Vec<String>) -> u32 {
    let sent = sent.unwrap_or(0);
    let shown = sent.clamp(0, MAX_PRIORITY as i32);
    if shown != sent {
        notes.push(format!(
            "schedulingPriority {sent} is outside 0-{MAX_PRIORITY}; shown and exported as {shown}"
        ));
    }
    shown as u32
}

/// The job's preemption summary, when it has been preempted (or lists preempted attempts).
fn preemption_summary(p: &sdk::ServiceJobPreemptionSummary) -> Option<PreemptionSummary> {
    let count = p.preempted_attempt_count().unwrap_or(0).max(0) as u32;
    let recent: Vec<PreemptedAttempt> = p
        .recent_preempted_attempts()
        .iter()
        .map(|a| PreemptedAttempt {
            resource_id: resource_id(a.service_resource_id()).unwrap_or_default(),
            started_at: a.started_at(),
            stopped_at: a.stopped_at().unwrap_or(0),
            status_reason: a.status_reason().unwrap_or_default().to_string(),
        })
        .collect();
    (count > 0 || !recent.is_empty()).then_some(PreemptionSummary {
        preempted_attempt_count: count,
        recent_preempted_attempts: recent,
    })
}

fn attempts(d: &DescribeServiceJobOutput) -> Vec<Attempt> {
    d.attempts()
        .iter()
        .map(|a| Attempt {
            resource_id: resource_id(a.service_resource_id()).unwrap_or_default(),
            started_at: stamp(a.started_at()),
            stopped_at: stamp(a.stopped_at()),
            status_reason: a.status_reason().map(str::to_string),
        })
        .collect()
}

/// DescribeServiceJob's retry strategy, attempt timeout and tags, as sent (what Job detail
/// shows; the console computes nothing with them).
fn described_extras(d: &DescribeServiceJobOutput) -> JobExtras {
    JobExtras {
        retry: d.retry_strategy().map(|r| quotatop_model::RetryStrategy {
            attempts: r.attempts().map(i64::from),
            evaluate_on_exit: r
                .evaluate_on_exit()
                .iter()
                .map(|e| quotatop_model::ExitRule {
                    action: e.action().map(|a| a.as_str().to_string()),
                    on_status_reason: e.on_status_reason().map(str::to_string),
                })
                .collect(),
        }),
        timeout_seconds: d
            .timeout_config()
            .and_then(|t| t.attempt_duration_seconds())
            .map(i64::from),
        tags: d
            .tags()
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        ..JobExtras::default()
    }
}

pub fn quota_share(s: &sdk::QuotaShareDetail) -> Option<QuotaShare> {
    let name = s.quota_share_name()?.to_string();
    let sharing = s.resource_sharing_configuration();
    let strategy = sharing
        .and_then(|c| c.strategy())
        .and_then(|st| SharingStrategy::parse(st.as_str()))
        .unwrap_or(SharingStrategy::Reserve);
    let borrow_limit = if strategy.borrows() {
        sharing.and_then(|c| c.borrow_limit())
    } else {
        None
    };
    Some(QuotaShare {
        name,
        capacity_limits: s
            .capacity_limits()
            .iter()
            .filter_map(|l| {
                Some(CapacityLimit::new(
                    l.capacity_unit()?,
                    l.max_capacity().unwrap_or(0).max(0) as u32,
                ))
            })
            .collect(),
        sharing: SharingConfig {
            strategy,
            borrow_limit,
        },
        in_share_preemption: match s
            .preemption_configuration()
            .and_then(|p| p.in_share_preemption())
        {
            Some(sdk::QuotaShareInSharePreemptionState::Enabled) => InSharePreemption::Enabled,
            _ => InSharePreemption::Disabled,
        },
        state: match s.state() {
            Some(sdk::QuotaShareState::Disabled) => ShareState::Disabled,
            _ => ShareState::Enabled,
        },
        status: s
            .status()
            .map(|st| st.as_str())
            .filter(|st| *st != "VALID")
            .map(str::to_string),
    })
}

pub fn job_queue(q: &sdk::JobQueueDetail) -> Option<JobQueueInfo> {
    let mut envs: Vec<(i32, String)> = q
        .service_environment_order()
        .iter()
        .filter_map(|o| Some((o.order().unwrap_or(0), o.service_environment()?.to_string())))
        .collect();
    envs.sort();
    Some(JobQueueInfo {
        name: q.job_queue_name()?.to_string(),
        arn: q.job_queue_arn()?.to_string(),
        state: q
            .state()
            .map(|s| s.as_str().to_string())
            .unwrap_or_default(),
        status: q
            .status()
            .map(|s| s.as_str().to_string())
            .unwrap_or_default(),
        status_reason: q.status_reason().map(str::to_string),
        queue_type: q.job_queue_type().map(|t| t.as_str().to_string()),
        scheduling_policy_arn: q.scheduling_policy_arn().map(str::to_string),
        service_environments: envs.into_iter().map(|(_, e)| e).collect(),
    })
}

pub fn scheduling_policy(p: &sdk::SchedulingPolicyDetail) -> Option<SchedulingPolicyInfo> {
    Some(SchedulingPolicyInfo {
        name: p.name().unwrap_or_default().to_string(),
        arn: p.arn()?.to_string(),
        kind: if p.quota_share_policy().is_some() {
            PolicyKind::QuotaShare
        } else if p.fairshare_policy().is_some() {
            PolicyKind::FairShare
        } else {
            PolicyKind::Plain
        },
    })
}

pub fn service_environment(e: &sdk::ServiceEnvironmentDetail) -> Option<ServiceEnvironmentInfo> {
    Some(ServiceEnvironmentInfo {
        name: e.service_environment_name()?.to_string(),
        arn: e.service_environment_arn()?.to_string(),
        env_type: e.service_environment_type().map(|t| t.as_str().to_string()),
        capacity: e
            .capacity_limits()
            .iter()
            .filter_map(|l| {
                Some(CapacityLimit::new(
                    l.capacity_unit()?,
                    l.max_capacity().unwrap_or(0).max(0) as u32,
                ))
            })
            .collect(),
    })
}

pub fn queue_front(s: &GetJobQueueSnapshotOutput) -> QueueFront {
    let entry = |arn: Option<&str>, at: Option<i64>| {
        arn.map(|a| FrontEntry {
            job_arn: a.to_string(),
            earliest_time_at_position: at,
        })
    };
    let mut out = QueueFront::default();
    let mut stamps = Vec::new();
    if let Some(f) = s.front_of_queue() {
        out.front_of_queue = f
            .jobs()
            .iter()
            .filter_map(|j| entry(j.job_arn(), j.earliest_time_at_position()))
            .collect();
        stamps.push(f.last_updated_at());
    }
    if let Some(f) = s.front_of_quota_shares() {
        for (share, jobs) in f.quota_shares().into_iter().flatten() {
            out.front_of_shares.insert(
                share.clone(),
                jobs.iter()
                    .filter_map(|j| entry(j.job_arn(), j.earliest_time_at_position()))
                    .collect(),
            );
        }
        stamps.push(f.last_updated_at());
    }
    if let Some(u) = s.queue_utilization() {
        for c in u.total_capacity_usage() {
            if let Some(unit) = c.capacity_unit() {
                out.total_usage
                    .insert(unit.to_string(), c.quantity().unwrap_or(0.0));
            }
        }
        for share in u
            .quota_share_utilization()
            .map(|q| q.top_capacity_utilization())
            .unwrap_or_default()
        {
            let Some(name) = share.quota_share_name() else {
                continue;
            };
            let per_type: BTreeMap<String, f64> = share
                .capacity_usage()
                .iter()
                .filter_map(|c| Some((c.capacity_unit()?.to_string(), c.quantity().unwrap_or(0.0))))
                .collect();
            out.utilization.insert(name.to_string(), per_type);
        }
        stamps.push(u.last_updated_at());
    }
    out.last_updated_at = stamps.into_iter().flatten().max();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What Job detail shows beyond the fields computed with: DescribeServiceJob's retry
    /// strategy, attempt timeout and tags reach the model as sent; a share's status other than
    /// VALID is kept, VALID is not.
    #[test]
    fn retry_timeout_tags_and_a_share_s_status_are_kept() {
        let d = DescribeServiceJobOutput::builder()
            .job_id("j-1")
            .status(sdk::ServiceJobStatus::Runnable)
            .retry_strategy(
                sdk::ServiceJobRetryStrategy::builder()
                    .attempts(3)
                    .evaluate_on_exit(
                        sdk::ServiceJobEvaluateOnExit::builder()
                            .action(sdk::ServiceJobRetryAction::Retry)
                            .on_status_reason("Spot*")
                            .build(),
                    )
                    .build(),
            )
            .timeout_config(
                sdk::ServiceJobTimeout::builder()
                    .attempt_duration_seconds(7200)
                    .build(),
            )
            .tags("team", "vision")
            .build();
        let e = described_job(&d).map(|j| j.job.extras.as_ref().clone());
        let Some(e) = e else {
            panic!("not converted");
        };
        assert_eq!(
            e.retry,
            Some(quotatop_model::RetryStrategy {
                attempts: Some(3),
                evaluate_on_exit: vec![quotatop_model::ExitRule {
                    action: Some("RETRY".into()),
                    on_status_reason: Some("Spot*".into()),
                }],
            })
        );
        assert_eq!(e.timeout_seconds, Some(7200));
        assert!(e.notes.is_empty(), "{:?}", e.notes);
        let mut notes = Vec::new();
        assert_eq!(priority_in_range(Some(12_000), &mut notes), 9999);
        assert_eq!(priority_in_range(Some(-3), &mut notes), 0);
        assert_eq!(priority_in_range(Some(9999), &mut notes), 9999);
        assert_eq!(
            notes,
            [
                "schedulingPriority 12000 is outside 0-9999; shown and exported as 9999",
                "schedulingPriority -3 is outside 0-9999; shown and exported as 0"
            ]
        );
        assert_eq!(e.tags.get("team").map(String::as_str), Some("vision"));
        let share = |st: sdk::QuotaShareStatus| {
            quota_share(
                &sdk::QuotaShareDetail::builder()
                    .quota_share_name("s")
                    .status(st)
                    .build(),
            )
            .and_then(|s| s.status)
        };
        assert_eq!(
            share(sdk::QuotaShareStatus::Updating).as_deref(),
            Some("UPDATING")
        );
        assert_eq!(share(sdk::QuotaShareStatus::Valid), None);
    }
}
