//! The drill's procedure, one repetition at a time: fill the lender's idle capacity from the
//! borrower, wait until those jobs RUN (and half their length), submit the priority job to the
//! lender, watch until it has run and the preempted jobs are RUNNING again, check their
//! checkpoints, terminate what is left. Every job submitted is remembered in [`State`] before
//! anything else happens, so whatever stops the drill can terminate it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, bail};

use quotatop_analysis::drill::{
    self, CheckpointVerdict, DrillPlan, RepetitionResult, RepetitionSpec,
};
use quotatop_analysis::scorecard::{ScorecardOptions, TrainingRecord, Window};

/// Most checkpoint objects the drill lists for one job.
const CHECKPOINTS_LISTED: usize = 1000;
use quotatop_aws::batch::{BatchClient, LogQuery, SubmitRequest};
use quotatop_model::{JobStatus, Millis, ServiceJob, clean_text};

use super::audited::DrillAudit;
use super::template::Template;

/// What the drill has done so far: shared with the code that cleans up after it.
#[derive(Debug, Default)]
pub struct State {
    /// Ids of every job submitted, in order.
    pub submitted: Vec<String>,
    /// Ids already known to have finished or been terminated.
    pub finished: Vec<String>,
    /// Ids the drill terminated at the end of their repetition.
    pub terminated: Vec<String>,
    pub results: Vec<RepetitionResult>,
    /// The repetition under way, for a partial measurement when the drill is stopped.
    pub current: Option<Current>,
}

/// What a repetition under way has submitted so far.
#[derive(Debug, Clone)]
pub struct Current {
    pub spec: RepetitionSpec,
    pub borrowers: Vec<String>,
    pub priority: Option<String>,
    pub window_start: Option<Millis>,
}

pub type Shared = Arc<Mutex<State>>;

pub fn lock(s: &Shared) -> std::sync::MutexGuard<'_, State> {
    s.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

pub struct Drill<'a> {
    pub client: &'a BatchClient,
    pub audit: &'a DrillAudit,
    pub plan: &'a DrillPlan,
    pub template: &'a Template,
    pub run_id: String,
    pub poll: Duration,
    pub checkpoint_check: Option<String>,
    pub ledger: ScorecardOptions,
    pub state: Shared,
}

/// The names of a run's jobs start with this (how `drill cleanup` and the final cleanup find a
/// job whose submission was cut short).
pub fn name_prefix(run_id: &str) -> String {
    format!("{run_id}-")
}

impl Drill<'_> {
    pub async fn run_all(&self) -> anyhow::Result<()> {
        for spec in &self.plan.repetitions {
            self.wait_all_finished().await?;
            eprintln!(
                "repetition {}/{}: {}",
                spec.index,
                self.plan.repetitions.len(),
                clean_text(&describe_spec(spec))
            );
            lock(&self.state).current = Some(Current {
                spec: spec.clone(),
                borrowers: Vec::new(),
                priority: None,
                window_start: None,
            });
            let result = self.repetition(spec).await?;
            eprintln!(
                "  {} {}, {} borrower job{} preempted",
                if spec.baseline {
                    "start latency"
                } else {
                    "reclaim latency"
                },
                result
                    .reclaim_latency_ms
                    .map_or("-".to_string(), super::render::ms),
                result.preempted.len(),
                if result.preempted.len() == 1 { "" } else { "s" }
            );
            let mut st = lock(&self.state);
            st.current = None;
            st.results.push(result);
        }
        Ok(())
    }

    /// The service's clock (the queue snapshot's), else this machine's.
    async fn now(&self) -> Millis {
        match self.client.get_job_queue_snapshot(&self.plan.queue).await {
            Ok(f) => f
                .last_updated_at
                .unwrap_or_else(quotatop_model::wall_clock_ms),
            Err(_) => quotatop_model::wall_clock_ms(),
        }
    }

    async fn describe(&self, ids: &[String]) -> anyhow::Result<Vec<ServiceJob>> {
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            let d = self
                .client
                .describe_service_job(id)
                .await
                .with_context(|| format!("describing drill job {id}"))?;
            if d.job.status.is_terminal() {
                let mut s = lock(&self.state);
                if !s.finished.contains(id) {
                    s.finished.push(id.clone());
                }
            }
            out.push(d.job);
        }
        Ok(out)
    }

    async fn sleep(&self) {
        tokio::time::sleep(self.poll).await;
    }

    /// Waits until every job submitted so far has finished (so the next repetition starts
    /// from idle capacity).
    async fn wait_all_finished(&self) -> anyhow::Result<()> {
        loop {
            let open: Vec<String> = {
                let s = lock(&self.state);
                s.submitted
                    .iter()
                    .filter(|id| !s.finished.contains(id))
                    .cloned()
                    .collect()
            };
            if open.is_empty() {
                return Ok(());
            }
            self.describe(&open).await?;
            self.sleep().await;
        }
    }

    async fn submit(
        &self,
        spec: &RepetitionSpec,
        role: &str,
        share: &str,
        count: u32,
        length_ms: Millis,
        priority: u32,
    ) -> anyhow::Result<String> {
        let name = format!("{}r{}-{role}", name_prefix(&self.run_id), spec.index);
        let ty = &spec.instance_type;
        let req = SubmitRequest {
            job_name: name.clone(),
            queue: self.plan.queue.clone(),
            share: share.to_string(),
            priority,
            payload: self.template.payload(&name, ty, count, length_ms),
            preemption_retries: Some(self.plan.preemption_retries),
            tags: self.template.tags(&self.run_id, length_ms),
            client_token: Some(name.chars().take(64).collect()),
        };
        let detail = format!(
            "share {share}, {count}x {ty}, priority {priority}, works {}, preemptionRetriesBeforeTermination {}, tag {}={}",
            super::render::ms(length_ms),
            self.plan.preemption_retries,
            super::template::DRILL_TAG,
            self.run_id
        );
        let job = self.audit.submit(self.client, &req, detail).await?;
        lock(&self.state).submitted.push(job.id.clone());
        Ok(job.id)
    }

    /// One repetition: the borrower jobs run on the lender's capacity, the lender's priority
    /// job takes it back, and what that preempted is measured; then its jobs are terminated.
    async fn repetition(&self, spec: &RepetitionSpec) -> anyhow::Result<RepetitionResult> {
        let mut notes = Vec::new();
        let borrowers = self.submit_borrowers(spec).await?;
        let window_start = self.now().await;
        if let Some(c) = lock(&self.state).current.as_mut() {
            c.window_start = Some(window_start);
        }
        self.wait_for_borrowers(spec, &borrowers, window_start)
            .await?;
        let prio_id = self
            .submit(
                spec,
                "priority",
                &self.plan.lender,
                spec.priority_count,
                self.plan.priority_length_ms,
                self.plan.priority,
            )
            .await?;
        if let Some(c) = lock(&self.state).current.as_mut() {
            c.priority = Some(prio_id.clone());
        }
        let (prio, jobs) = self
            .wait_for_priority(spec, &prio_id, &borrowers, &mut notes)
            .await?;
        let preempted = self.preempted(&prio, &jobs, &mut notes).await;
        let window_end = self.now().await;
        let mut all = jobs.clone();
        all.push(prio.clone());
        let reason = format!("quotatop drill {}: repetition finished", self.run_id);
        self.terminate_open(&all, &reason).await?;
        Ok(result_of(
            spec,
            &prio,
            Observed {
                jobs: &jobs,
                borrowers,
                preempted,
                window: Window::new(window_start.min(prio.created_at), window_end),
                notes,
            },
            &self.ledger,
        ))
    }

    /// Submits the repetition's borrower jobs, each recorded as the repetition's at once.
    async fn submit_borrowers(&self, spec: &RepetitionSpec) -> anyhow::Result<Vec<String>> {
        let mut borrowers = Vec::new();
        for i in 1..=spec.borrower_jobs {
            borrowers.push(
                self.submit(
                    spec,
                    &format!("b{i}"),
                    &self.plan.borrower,
                    1,
                    spec.length_ms,
                    self.plan.borrower_priority,
                )
                .await?,
            );
            if let Some(c) = lock(&self.state).current.as_mut() {
                c.borrowers.clone_from(&borrowers);
            }
        }
        Ok(borrowers)
    }

    /// Waits until the borrower jobs all RUN (the lender's capacity really lent) and have
    /// worked half their length (the first to start); an error when one ends before.
    async fn wait_for_borrowers(
        &self,
        spec: &RepetitionSpec,
        borrowers: &[String],
        window_start: Millis,
    ) -> anyhow::Result<()> {
        if borrowers.is_empty() {
            return Ok(());
        }
        let due = loop {
            let jobs = self.describe(borrowers).await?;
            if let Some(j) = jobs.iter().find(|j| j.status.is_terminal()) {
                bail!(
                    "borrower job {} ended {} before every borrower job was RUNNING: {} (a length shorter than the borrower jobs' start-up, or, on a fast emulator clock, a --poll-interval too long)",
                    clean_text(&j.name),
                    j.status,
                    clean_text(j.status_reason.as_deref().unwrap_or("no reason given"))
                );
            }
            if jobs.iter().all(|j| j.status == JobStatus::Running) {
                break drill::priority_due(&jobs, spec.length_ms);
            }
            self.sleep().await;
        };
        let due = due.unwrap_or(window_start + spec.length_ms / 2);
        while self.now().await < due {
            self.sleep().await;
        }
        Ok(())
    }

    /// Waits until the priority job ran (a baseline), or succeeded with every job it preempted
    /// restarted or ended, or failed (noted); then the priority job and the borrower jobs.
    async fn wait_for_priority(
        &self,
        spec: &RepetitionSpec,
        prio_id: &str,
        borrowers: &[String],
        notes: &mut Vec<String>,
    ) -> anyhow::Result<(ServiceJob, Vec<ServiceJob>)> {
        loop {
            let prio = self
                .describe(&[prio_id.to_string()])
                .await?
                .into_iter()
                .next()
                .ok_or_else(|| {
                    anyhow::anyhow!("the priority job {} was not found", clean_text(prio_id))
                })?;
            let jobs = self.describe(borrowers).await?;
            if prio.status == JobStatus::Failed {
                notes.push(format!(
                    "the priority job failed: {}",
                    clean_text(prio.status_reason.as_deref().unwrap_or("no reason given"))
                ));
                return Ok((prio, jobs));
            }
            let ran = drill::first_start(&prio).is_some();
            let done = if spec.baseline {
                ran
            } else {
                prio.status == JobStatus::Succeeded
                    && drill::preempted_jobs(&jobs, prio.created_at)
                        .iter()
                        .all(|p| p.restarted_at.is_some() || p.final_status.is_terminal())
            };
            if done {
                return Ok((prio, jobs));
            }
            self.sleep().await;
        }
    }

    /// The borrower jobs the priority job preempted, each restarted one with its checkpoint
    /// verdict; one that ended without restarting is noted.
    async fn preempted(
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

    /// Terminates the jobs of `jobs` that have not finished.
    async fn terminate_open(&self, jobs: &[ServiceJob], reason: &str) -> anyhow::Result<()> {
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

/// What one repetition observed, measured into its result by [`result_of`].
struct Observed<'a> {
    /// Its jobs as last described.
    jobs: &'a [ServiceJob],
    borrowers: Vec<String>,
    preempted: Vec<drill::PreemptedJob>,
    window: Window,
    notes: Vec<String>,
}

/// A repetition's result from what it observed.
fn result_of(
    spec: &RepetitionSpec,
    prio: &ServiceJob,
    seen: Observed<'_>,
    ledger: &ScorecardOptions,
) -> RepetitionResult {
    let Observed {
        jobs,
        borrowers,
        preempted,
        window,
        notes,
    } = seen;
    RepetitionResult {
        spec: spec.clone(),
        priority_job_id: prio.id.clone(),
        priority_submitted_at: prio.created_at,
        priority_started_at: drill::first_start(prio),
        reclaim_latency_ms: drill::reclaim_latency(prio),
        borrower_job_ids: borrowers,
        preempted,
        lost_gpu_hours: drill::lost_gpu_hours(jobs, window, ledger),
        notes,
    }
}

/// What the repetition under way when the drill stopped had measured, once its jobs are
/// terminated: `None` when its priority job had not been submitted (nothing to measure).
pub async fn partial(
    client: &BatchClient,
    current: Option<Current>,
    ledger: &ScorecardOptions,
    now: Millis,
) -> Option<RepetitionResult> {
    let c = current?;
    let prio_id = c.priority?;
    let prio = client.describe_service_job(&prio_id).await.ok()?.job;
    let mut jobs = Vec::new();
    for id in &c.borrowers {
        if let Ok(d) = client.describe_service_job(id).await {
            jobs.push(d.job);
        }
    }
    let preempted = drill::preempted_jobs(&jobs, prio.created_at);
    let start = c
        .window_start
        .unwrap_or(prio.created_at)
        .min(prio.created_at);
    Some(result_of(
        &c.spec,
        &prio,
        Observed {
            jobs: &jobs,
            borrowers: c.borrowers,
            preempted,
            window: Window::new(start, now),
            notes: vec![
                "the drill stopped during this repetition: measured until then; checkpoints not checked".into(),
            ],
        },
        ledger,
    ))
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

pub fn describe_spec(spec: &RepetitionSpec) -> String {
    if spec.baseline {
        format!(
            "baseline on {}: priority job of {} with nothing borrowing",
            spec.instance_type, spec.priority_count
        )
    } else {
        format!(
            "{}, borrower jobs of {} (round {}): {} borrower job{}, priority job of {}",
            spec.instance_type,
            super::render::ms(spec.length_ms),
            spec.round,
            spec.borrower_jobs,
            if spec.borrower_jobs == 1 { "" } else { "s" },
            spec.priority_count
        )
    }
}
