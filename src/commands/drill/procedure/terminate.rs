//! Terminating a drill's jobs: a repetition's open ones at its end, and every job of a run
//! that may still be alive when the drill stops (or `drill cleanup` runs).

use anyhow::bail;

use quotatop_aws::batch::BatchClient;
use quotatop_model::{JobStatus, ServiceJob};

use super::super::audited::DrillAudit;
use super::{Drill, lock, name_prefix};

impl Drill<'_> {
    /// Terminates the jobs of `jobs` that have not finished.
    pub(super) async fn terminate_open(
        &self,
        jobs: &[ServiceJob],
        reason: &str,
    ) -> anyhow::Result<()> {
        let open: Vec<String> = jobs
            .iter()
            .filter(|j| !j.status.is_terminal())
            .map(|j| j.id.clone())
            .collect();
        if open.is_empty() {
            return Ok(());
        }
        let r = self.audit.terminate(self.client, &open, reason).await?;
        if let Some(e) = r.errors.first() {
            bail!(
                "could not terminate drill job {}: {} {}",
                e.job,
                e.code,
                e.message
            );
        }
        let mut s = lock(&self.state);
        for id in r.successful {
            if !s.finished.contains(&id) {
                s.finished.push(id.clone());
            }
            s.terminated.push(id);
        }
        Ok(())
    }
}

/// Terminates every job of the run that may still be alive: the ones `state` remembers, and
/// any unfinished job of the queue whose name carries the run's prefix (a submission cut short
/// before its answer arrived). Returns (terminated ids, failures).
pub async fn terminate_everything(
    client: &BatchClient,
    audit: &DrillAudit,
    queue: &str,
    run_id: &str,
    known: &[String],
    reason: &str,
) -> (Vec<String>, Vec<String>) {
    let mut ids: Vec<String> = Vec::new();
    let prefix = name_prefix(run_id);
    let mut errors = Vec::new();
    // Jobs already finished need no termination (and say nothing about the cleanup).
    for id in known {
        match client.describe_service_job(id).await {
            Ok(d) if d.job.status.is_terminal() => {}
            _ => ids.push(id.clone()),
        }
    }
    for status in JobStatus::ALL.into_iter().filter(|s| !s.is_terminal()) {
        match client.list_service_jobs(queue, status, None).await {
            Ok(list) => ids.extend(
                list.into_iter()
                    .filter(|j| j.name.starts_with(&prefix))
                    .map(|j| j.id),
            ),
            Err(e) => errors.push(format!("listing {status} jobs: {e}")),
        }
    }
    ids.sort();
    ids.dedup();
    if ids.is_empty() {
        return (Vec::new(), errors);
    }
    match audit.terminate(client, &ids, reason).await {
        Ok(r) => {
            errors.extend(
                r.errors
                    .iter()
                    .map(|e| format!("{}: {} {}", e.job, e.code, e.message)),
            );
            (r.successful, errors)
        }
        Err(e) => {
            errors.push(quotatop_model::error_chain(e.as_ref()));
            (Vec::new(), errors)
        }
    }
}
