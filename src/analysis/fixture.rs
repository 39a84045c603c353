//! Snapshot fixtures for analysis tests.

use crate::model::{
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
        job: ServiceJob {
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
            preemption: None,
            attempts: Vec::new(),
            is_terminated: false,
        },
        arn: format!("arn:aws:batch:us-east-1:123456789012:service-job/id-{name}"),
        described_at: Some(created_at),
        listed_at: created_at,
    }
}
