//! `quotatop drill cleanup --run ID`: terminate what a drill left alive (it was killed with
//! SIGKILL, or lost its connection while terminating). The jobs are the audit log's
//! submissions of the run and any unfinished job of the queue named with the run's prefix.

use anyhow::{anyhow, bail};

use crate::cli::DrillCleanupArgs;
use quotatop_aws::batch::BatchClient;
use quotatop_model::clean_text;
use quotatop_store::audit::{self, RecordKind};

/// The queue and the job ids the audit log's records of `run_id` name.
fn from_log(
    records: &[(usize, audit::AuditRecord)],
    run_id: &str,
) -> (Option<String>, Vec<String>) {
    let mut queue = None;
    let mut ids = Vec::new();
    for (_, r) in records {
        let Some(action) = &r.action else { continue };
        if action.run_id.as_deref() != Some(run_id) {
            continue;
        }
        queue.get_or_insert_with(|| r.queue.clone());
        if action.call == "SubmitServiceJob"
            && r.kind == RecordKind::Outcome
            && !r.job.id.is_empty()
        {
            ids.push(r.job.id.clone());
        }
    }
    (queue, ids)
}

pub fn run(a: &DrillCleanupArgs) -> anyhow::Result<()> {
    super::load_config(a.config.clone(), a.read_only, "drill cleanup")?;
    if !a.run_id.starts_with("drill-") || !a.run_id[6..].chars().all(|c| c.is_ascii_alphanumeric())
    {
        bail!(
            "{:?} is not a drill run id (drill-xxxxxxxx, as the drill printed)",
            clean_text(&a.run_id)
        );
    }
    let log = super::super::audit::open_log(&a.log)?;
    log.check_tail()
        .map_err(|e| anyhow!(clean_text(&quotatop_model::error_chain(&e))))?;
    let records = if log.path().exists() {
        audit::read_records(log.path())?
    } else {
        Vec::new()
    };
    let (logged_queue, ids) = from_log(&records, &a.run_id);
    let Some(queue) = a.queue.clone().or(logged_queue) else {
        bail!(
            "the audit log {} has no record of drill {}: pass --queue to look for its jobs by name",
            log.path().display(),
            clean_text(&a.run_id)
        );
    };
    let rt = super::super::runtime()?;
    rt.block_on(async {
        let client = BatchClient::connect(super::super::snapshot::connect_options(&a.aws)).await?;
        let audit = super::audited::DrillAudit::new(log, &client, &queue, &a.run_id).await?;
        let (terminated, errors) = super::procedure::terminate_everything(
            &client,
            &audit,
            &queue,
            &a.run_id,
            &ids,
            &format!("quotatop drill cleanup of {}", a.run_id),
        )
        .await;
        println!(
            "drill {}: terminated {} job{} ({} submitted per the audit log)",
            clean_text(&a.run_id),
            terminated.len(),
            if terminated.len() == 1 { "" } else { "s" },
            ids.len()
        );
        if errors.is_empty() {
            Ok(())
        } else {
            bail!("not terminated: {}", clean_text(&errors.join("; ")))
        }
    })
}
