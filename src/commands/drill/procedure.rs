//! The drill's procedure, one repetition at a time: fill the lender's idle capacity from the
//! borrower, wait until those jobs RUN (and half their length), submit the priority job to the
//! lender, watch until it has run and the preempted jobs are RUNNING again, check their
//! checkpoints, terminate what is left. Every job submitted is remembered in [`State`] before
//! anything else happens, so whatever stops the drill can terminate it.
//!
//! Here: the state and the steps of a repetition; in `checkpoint`, the checkpoint verdict of
//! each preempted job; in `result`, what a repetition (or one cut short) measured; in
//! `terminate`, terminating a repetition's jobs and everything of a run.

mod checkpoint;
mod result;
mod terminate;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, bail};

use quotatop_analysis::drill::{self, DrillPlan, RepetitionResult, RepetitionSpec};
use quotatop_analysis::scorecard::{ScorecardOptions, Window};
use quotatop_aws::batch::{BatchClient, SubmitRequest};
use quotatop_model::{JobStatus, Millis, ServiceJob, clean_text};

use super::audited::DrillAudit;
use super::template::Template;
pub use result::partial;
use result::{Observed, result_of};
pub use terminate::terminate_everything;

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
            retry_strategy: None,
            timeout_s: None,
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
