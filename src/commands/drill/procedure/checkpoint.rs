//! The checkpoint verdict of each job a priority job preempted: `--checkpoint-check` (run in a
//! process group of its own), else measured from the job's checkpoints and its restarted log.

use quotatop_analysis::drill::{self, CheckpointVerdict};
use quotatop_analysis::scorecard::TrainingRecord;
use quotatop_aws::batch::LogQuery;
use quotatop_model::{Millis, ServiceJob, clean_text};

use super::Drill;

/// Most checkpoint objects the drill lists for one job.
const CHECKPOINTS_LISTED: usize = 1000;

impl Drill<'_> {
    /// The borrower jobs the priority job preempted, each restarted one with its checkpoint
    /// verdict; one that ended without restarting is noted.
    pub(super) async fn preempted(
        &self,
        prio: &ServiceJob,
        jobs: &[ServiceJob],
        notes: &mut Vec<String>,
    ) -> Vec<drill::PreemptedJob> {
        let mut preempted = drill::preempted_jobs(jobs, prio.created_at);
        for p in &mut preempted {
            if p.final_status.is_terminal() && p.restarted_at.is_none() {
                notes.push(format!(
                    "{} ended {} without restarting",
                    clean_text(&p.name),
                    p.final_status
                ));
            }
            if p.restarted_at.is_some() {
                (p.checkpoint, p.checkpoint_evidence) = self.checkpoint_verdict(p, jobs).await;
            }
        }
        preempted
    }

    /// A restarted job's checkpoint verdict and its evidence: `--checkpoint-check` when given,
    /// else measured.
    async fn checkpoint_verdict(
        &self,
        p: &drill::PreemptedJob,
        jobs: &[ServiceJob],
    ) -> (CheckpointVerdict, String) {
        if self.checkpoint_check.is_some() {
            return (
                self.check_checkpoint(&p.job_id, p.attempt).await,
                "--checkpoint-check".to_string(),
            );
        }
        match jobs.iter().find(|j| j.id == p.job_id) {
            Some(j) => self.measure_checkpoint(j, p.requeued_at).await,
            None => (CheckpointVerdict::Unknown, String::new()),
        }
    }

    /// The checkpoint verdict of a restarted job from measurements: its checkpoints listed
    /// under its prefix, and the restarted attempt's first log lines.
    async fn measure_checkpoint(
        &self,
        job: &ServiceJob,
        requeued_at: Millis,
    ) -> (CheckpointVerdict, String) {
        let Some(uri) = self.template.checkpoint_uri(&job.name) else {
            return (
                CheckpointVerdict::Unknown,
                "the template names no CheckpointConfig.S3Uri to measure from".to_string(),
            );
        };
        let listing = match self.client.list_checkpoints(&uri, CHECKPOINTS_LISTED).await {
            Ok(l) => l,
            Err(e) => {
                return (
                    CheckpointVerdict::Unknown,
                    format!("listing {} failed: {e}", clean_text(&uri)),
                );
            }
        };
        let prefix = quotatop_aws::batch::split_s3_uri(&uri)
            .map(|(_, p)| p)
            .unwrap_or_default();
        let training = TrainingRecord::from_objects(
            listing.objects.iter().map(|o| {
                (
                    o.key.strip_prefix(&prefix).unwrap_or(&o.key),
                    o.last_modified,
                    o.size,
                )
            }),
            listing.truncated,
        );
        // The restarted attempt: the first that started after the preemption.
        let restarted = job
            .attempts
            .iter()
            .filter(|a| a.started_at.is_some_and(|s| s >= requeued_at))
            .min_by_key(|a| a.started_at);
        let restored_log = match restarted {
            Some(a) => self.restored_in_log(&a.resource_id).await,
            None => None,
        };
        drill::measured_verdict(job, requeued_at, training, restored_log)
    }

    /// Whether the attempt's first log lines show the restore pattern, and when (`None`: fewer
    /// than two lines yet, or the log could not be read).
    async fn restored_in_log(&self, attempt: &str) -> Option<(bool, Option<Millis>)> {
        let page = self
            .client
            .log_events(&LogQuery {
                stream_prefix: Some(quotatop_model::stream_prefix(attempt)),
                max_events: 3,
                ..LogQuery::default()
            })
            .await
            .ok()?;
        (page.lines.len() >= 2).then(|| {
            let line = page
                .lines
                .iter()
                .find(|l| l.message.contains(quotatop_model::RESTORE_PATTERN));
            (line.is_some(), line.map(|l| l.time))
        })
    }

    /// Runs `--checkpoint-check` for a restarted job: exit 0 = resumed from a valid checkpoint;
    /// no check, or one that cannot run, is "unknown".
    async fn check_checkpoint(&self, job_id: &str, attempt: u32) -> CheckpointVerdict {
        let Some(cmd) = &self.checkpoint_check else {
            return CheckpointVerdict::Unknown;
        };
        // In a process group of its own, with its output on stderr (stdout carries the report,
        // e.g. --format json): when it ends, or the drill is stopped, the whole group goes,
        // including anything it left running in the background.
        let status = async {
            let mut child = tokio::process::Command::new("sh")
                .arg("-c")
                .arg(cmd)
                .env("QUOTATOP_DRILL_JOB_ID", job_id)
                .env("QUOTATOP_DRILL_ATTEMPT", attempt.to_string())
                .env("QUOTATOP_DRILL_RUN", &self.run_id)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::from(std::io::stderr()))
                .process_group(0)
                .kill_on_drop(true)
                .spawn()?;
            let _group = child.id().map(GroupKill);
            child.wait().await
        }
        .await;
        match status {
            Ok(s) if s.success() => CheckpointVerdict::Resumed,
            Ok(s) if s.code().is_some() => CheckpointVerdict::NotResumed,
            Ok(_) => CheckpointVerdict::Unknown,
            Err(e) => {
                eprintln!("warning: --checkpoint-check could not run: {e}");
                CheckpointVerdict::Unknown
            }
        }
    }
}

/// Kills a `--checkpoint-check` command's process group when dropped: after it ends (what it
/// left in the background) or when the drill stops while it runs.
struct GroupKill(u32);

impl Drop for GroupKill {
    fn drop(&mut self) {
        // `kill` the command, not a signal call: no unsafe code for one group.
        let _ = std::process::Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.0)])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
    }
}
