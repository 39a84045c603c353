//! Snapshot fixtures for analysis tests.

use quotatop_model::{
    CapacityLimit, JobStatus, Millis, QueueSnapshot, QuotaShare, ServiceJob, SharingConfig,
    TrackedJob,
};

pub fn queue(shares: &[(&str, &str, u32, SharingConfig)]) -> QueueSnapshot {
    QueueSnapshot {
        name: "q".into(),
        arn: "arn:aws:batch:us-east-1:123456789012:job-queue/q".into(),
        shares: shares
            .iter()
            .map(|(n, t, c, s)| QuotaShare::new(*n, vec![CapacityLimit::new(*t, *c)], *s))
            .collect(),
        server_time: Some(1_000_000),
        ..Default::default()
    }
}

pub fn job(
    name: &str,
    share: &str,
    ty: &str,
    count: u32,
    status: JobStatus,
    priority: u32,
    created_at: Millis,
) -> TrackedJob {
    TrackedJob {
        job: std::sync::Arc::new(ServiceJob {
            id: format!("id-{name}"),
            name: name.into(),
            share: share.into(),
            priority,
            instance_type: ty.into(),
            instance_count: count,
            status,
            status_reason: None,
            created_at,
            scheduled_at: None,
            started_at: None,
            stopped_at: None,
            preemption_retries: None,
            class_tag: None,
            preemption: None,
            attempts: Vec::new(),
            checkpoint_interval_ms: None,
            is_terminated: false,
            extras: Default::default(),
        }),
        arn: format!("arn:aws:batch:us-east-1:123456789012:service-job/id-{name}"),
        described_at: Some(created_at),
        listed_at: created_at,
    }
}

/// The priority previews' world: one share of 2 p4d (in-share preemption as given) running a
/// priority-1 job for 30 min and a priority-3 job for an hour, with `waiting-a` (priority 2)
/// and `target` (priority 0) queued behind.
pub fn preview_world(in_share: bool) -> QueueSnapshot {
    const P4: &str = "ml.p4d.24xlarge";
    let mut q = queue(&[("s", P4, 2, SharingConfig::reserve())]);
    if let Some(sh) = q.shares.first_mut() {
        *sh = sh.clone().with_in_share_preemption(in_share);
    }
    let mut low = job("low-run", "s", P4, 1, JobStatus::Running, 1, 0);
    std::sync::Arc::make_mut(&mut low.job).started_at = Some(1_000_000 - 1_800_000);
    let mut mid = job("mid-run", "s", P4, 1, JobStatus::Running, 3, 0);
    std::sync::Arc::make_mut(&mut mid.job).started_at = Some(1_000_000 - 3_600_000);
    q.jobs = vec![
        low,
        mid,
        job("waiting-a", "s", P4, 1, JobStatus::Runnable, 2, 10),
        job("target", "s", P4, 1, JobStatus::Runnable, 0, 20),
    ];
    q
}
