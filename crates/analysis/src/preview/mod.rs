//! What a priority change will do, computed on a snapshot with the engine's own placement
//! functions (`engine::placement`): the job's new place in its share's queue, and whether it
//! would run, borrow, wait, or preempt which running jobs, in the engine's order.
//!
//! A snapshot does not show everything the engine orders by: jobs created in the same
//! millisecond have no published submission order, nor jobs dispatched in the same millisecond a
//! dispatch order. The preview tries every such order (up to [`MAX_ORDERS`]); when they disagree
//! it says "up to N of" these candidates instead of naming the victims.

mod combined;
mod compare;
mod fidelity;
mod simulate;
#[cfg(test)]
mod start_tests;
mod terminate;
mod validate;

pub use combined::{Combined, combined};
pub use compare::Changed;
pub use fidelity::{AWS_MODEL_NOTE, is_emulator, model_note};
pub use terminate::{JobLoss, Starter, TerminatePreview, terminate_preview};

pub use validate::{
    PriorityPolicy, ValidationError, change_record_reason, check_change, parse_priority,
};

/// Why no preview can be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PreviewError {
    #[error("job {0} is not in the current snapshot")]
    UnknownJob(String),
    #[error("job {0} has already finished ({1})")]
    Finished(String, &'static str),
    /// A fault in quotatop, not in the request: the preview cannot say what happens.
    #[error("cannot predict the next scheduling pass: {0}; this is a fault in quotatop")]
    NoFixpoint(#[from] quotatop_engine::NoFixpoint),
}
use crate as analysis;
use quotatop_engine::PreemptionKind;
use quotatop_model::{JobStatus, Millis, QueueSnapshot};

pub(crate) use simulate::next_pass;
use simulate::predict;

/// Orders of tied jobs tried at most; beyond, only the likeliest and its reverse, and every job
/// the API cannot tell from a victim counts as a candidate.
pub const MAX_ORDERS: usize = 720;

/// What the preview says of cross-share victims: AWS does not publish how it picks them.
pub const CROSS_SHARE_NOTE: &str = "as modelled: against AWS the cross-share victim choice is unpublished, so which borrowers are preempted is quotatop's model";

/// A running job the change would preempt (or may preempt, see [`Preemptions`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub job_id: String,
    pub name: String,
    pub share: String,
    pub priority: u32,
    pub instance_type: String,
    pub instance_count: u32,
    pub running_ms: Millis,
    /// Instance-hours of its current attempt so far: lost if it has no recent checkpoint.
    pub instance_hours_at_risk: f64,
    /// Cross-share (reclaiming lent capacity) or in-share (lower priority in its own share).
    pub kind: PreemptionKind,
}

/// What happens to the job right after the change.
#[derive(Debug, Clone, PartialEq)]
pub enum Prediction {
    /// It is not RUNNABLE: only its standing changes (a lower priority on a running job makes it
    /// a likelier victim).
    NotWaiting { status: JobStatus },
    /// Others stay ahead of it in its share.
    Waits { ahead: usize },
    /// Fits in its share's unused capacity.
    RunsOnOwnCapacity,
    /// Its share takes lent capacity back by cross-share preemption of borrowers (listed in
    /// [`Preview::preemptions`]); `instances` is what those borrowers hold.
    ReclaimsLent { instances: u32 },
    /// Runs by borrowing idle capacity of other shares.
    Borrows { instances: u32 },
    /// Preemption of these jobs: in-share, or in-share and cross-share together. When the
    /// snapshot cannot settle which, every candidate (see [`Preview::preemptions`]).
    Preempts(Vec<Candidate>),
    /// At the head of its share but no room can be made now (or room is already being made by
    /// preemptions in progress, see [`Preview::awaits_release`]): it waits for capacity.
    WaitsForCapacity,
    /// The service refuses to place it whatever its priority (its `MISCONFIGURATION` reason):
    /// it stays behind every job that can run until the job or its share's limits change.
    CannotRun { reason: String },
}

/// The jobs the change preempts at once.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Preemptions {
    /// The victims in the engine's order; when unsettled, every job that may be one.
    pub candidates: Vec<Candidate>,
    /// How many are preempted: `min == max == candidates.len()` when settled.
    pub min: usize,
    pub max: usize,
}

impl Preemptions {
    /// The victims: named (with their kind of preemption when `kinds`), or counted.
    fn names(&self, named: bool, kinds: bool) -> String {
        if !named {
            let n = self.candidates.len();
            let kind = if kinds && self.cross_share() {
                let cross = self
                    .candidates
                    .iter()
                    .filter(|c| c.kind == PreemptionKind::CrossShare)
                    .count();
                format!(" ({cross} cross-share, {} in-share)", n - cross)
            } else {
                String::new()
            };
            return format!("{n} running job{}{kind}", if n == 1 { "" } else { "s" });
        }
        self.candidates
            .iter()
            .map(|c| {
                if kinds {
                    let k = match c.kind {
                        PreemptionKind::CrossShare => "cross-share",
                        _ => "in-share",
                    };
                    format!("{} ({k})", c.name)
                } else {
                    c.name.clone()
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// [`Preemptions::names`], saying how many of them when the tie orders disagree.
    fn which(&self, named: bool, kinds: bool) -> String {
        if self.settled() {
            self.names(named, kinds)
        } else {
            format!(
                "up to {} of {} (tied jobs the API does not order)",
                self.max,
                self.names(named, kinds)
            )
        }
    }

    /// Whether the snapshot settles exactly which jobs are preempted.
    pub fn settled(&self) -> bool {
        self.min == self.max && self.max == self.candidates.len()
    }
    pub fn is_empty(&self) -> bool {
        self.candidates.is_empty()
    }
    /// Whether any candidate is a cross-share victim.
    pub fn cross_share(&self) -> bool {
        self.candidates
            .iter()
            .any(|c| c.kind == PreemptionKind::CrossShare)
    }
}

/// The preview shown before confirming.
#[derive(Debug, Clone, PartialEq)]
pub struct Preview {
    pub job_id: String,
    pub job_name: String,
    pub job_arn: String,
    pub share: String,
    pub old_priority: u32,
    pub new_priority: u32,
    /// 1-based position in the share's queue (RUNNABLE jobs only), before and after.
    pub old_position: Option<usize>,
    pub new_position: Option<usize>,
    pub queue_length: usize,
    pub in_share_preemption: bool,
    pub prediction: Prediction,
    /// Every preemption the change starts, cross-share and in-share.
    pub preemptions: Preemptions,
    /// It waits for capacity that preemptions already in progress give back.
    pub awaits_release: bool,
    /// The job's `quotatop:class` tag, when the snapshot knows it: the policy's change-time
    /// check reads it first, as membership everywhere does.
    pub class_tag: Option<String>,
}

impl Preview {
    /// Instance-hours at risk of the preempted jobs (of every candidate when unsettled).
    pub fn instance_hours_at_risk(&self) -> f64 {
        self.preemptions
            .candidates
            .iter()
            .map(|c| c.instance_hours_at_risk)
            .sum()
    }

    /// The note to show with a prediction that involves cross-share victims: against AWS it is
    /// "as modelled". `None` when no cross-share victim is predicted.
    pub fn model_note(&self) -> Option<&'static str> {
        self.preemptions.cross_share().then_some(CROSS_SHARE_NOTE)
    }

    /// The predicted effect in words (the part of [`Preview::summary`] after the position),
    /// naming the victims, with the model note.
    pub fn effect_text(&self) -> String {
        let mut what = self.effect(true);
        if let Some(note) = self.model_note() {
            what.push_str(&format!(" ({note})"));
        }
        what
    }

    /// The predicted effect with the victims counted, not named (they are listed one per line
    /// below it), and without the model note: the dialog's and the command line's headline.
    pub fn effect_headline(&self) -> String {
        self.effect(false)
    }

    fn effect(&self, named: bool) -> String {
        let p = &self.preemptions;
        let which = |kinds: bool| p.which(named, kinds);
        let mut what = match &self.prediction {
            Prediction::NotWaiting { status } => format!("job is {status}"),
            Prediction::Waits { ahead } => format!("{ahead} job(s) stay ahead"),
            Prediction::RunsOnOwnCapacity => "runs on its share's unused capacity".to_string(),
            Prediction::ReclaimsLent { instances } => format!(
                "reclaims {instances} lent instance(s) by cross-share preemption of {}",
                which(false)
            ),
            Prediction::Borrows { instances } => format!("runs borrowing {instances} instance(s)"),
            Prediction::Preempts(_) if !p.cross_share() => format!(
                "in-share preemption of {} ({:.1} instance-hours at risk)",
                which(false),
                self.instance_hours_at_risk()
            ),
            Prediction::Preempts(_) => format!(
                "preemption of {} ({:.1} instance-hours at risk)",
                which(true),
                self.instance_hours_at_risk()
            ),
            Prediction::WaitsForCapacity if self.awaits_release => {
                "waits for capacity that preemptions in progress give back".to_string()
            }
            Prediction::WaitsForCapacity => {
                "waits for capacity (no preemption possible)".to_string()
            }
            Prediction::CannotRun { reason } => format!("cannot run at any priority: {reason}"),
        };
        let own_victims = matches!(
            self.prediction,
            Prediction::Preempts(_) | Prediction::ReclaimsLent { .. }
        );
        if !own_victims && !p.is_empty() {
            what.push_str(&format!(
                ", and the same scheduling pass then preempts {}",
                which(true)
            ));
        }
        what
    }

    /// One line for the audit log and the command line.
    pub fn summary(&self) -> String {
        let pos = match (self.old_position, self.new_position) {
            (Some(a), Some(b)) => format!(
                "position {a} -> {b} of {} in {}",
                self.queue_length, self.share
            ),
            _ => format!("not queued (share {})", self.share),
        };
        format!(
            "priority {} -> {}; {pos}; {}",
            self.old_priority,
            self.new_priority,
            self.effect_text()
        )
    }

    /// Lines a dialog can show: the effect, each candidate, and the model note.
    pub fn explanation(&self) -> Vec<String> {
        let mut out = vec![self.effect_text()];
        for c in &self.preemptions.candidates {
            out.push(format!(
                "- {} ({}, priority {}, {}x {}, running {}, {:.2} instance-h, {})",
                c.name,
                c.share,
                c.priority,
                c.instance_count,
                c.instance_type,
                quotatop_model::format_duration(c.running_ms),
                c.instance_hours_at_risk,
                match c.kind {
                    PreemptionKind::CrossShare => "cross-share",
                    _ => "in-share",
                }
            ));
        }
        out
    }
}

/// Previews setting `job_id`'s priority to `new_priority` on snapshot `q`.
pub fn preview(
    q: &QueueSnapshot,
    job_id: &str,
    new_priority: u32,
) -> Result<Preview, PreviewError> {
    let tracked = q
        .jobs
        .iter()
        .find(|j| j.job.id == job_id || j.arn == job_id)
        .ok_or_else(|| PreviewError::UnknownJob(job_id.to_string()))?;
    let job = &tracked.job;
    if job.status.is_terminal() {
        return Err(PreviewError::Finished(job.id.clone(), job.status.as_str()));
    }
    let share = q.shares.iter().find(|s| s.name == job.share);
    let in_share = share.is_some_and(|s| s.in_share_preemption.enabled());

    // Positions by priority order (the service's own front-of-queue order reflects the old
    // priorities, so both positions are computed the same way, without it).
    let mut before = q.clone();
    before.front_of_queue.clear();
    let mut after = before.clone();
    if let Some(j) = after.jobs.iter_mut().find(|j| j.job.id == job.id) {
        std::sync::Arc::make_mut(&mut j.job).priority = new_priority;
        j.described_at = j.described_at.or(Some(0));
    }
    let old_queue = analysis::share_queue(&before, &job.share);
    let new_queue = analysis::share_queue(&after, &job.share);
    let old_position = old_queue
        .iter()
        .find(|j| j.job_id == job.id)
        .map(|j| j.share_position);
    let new_position = new_queue
        .iter()
        .find(|j| j.job_id == job.id)
        .map(|j| j.share_position);

    let misconfigured = job.misconfiguration().map(|m| m.text);
    let (prediction, preemptions, awaits_release) = if job.status != JobStatus::Runnable {
        (
            Prediction::NotWaiting { status: job.status },
            Preemptions::default(),
            false,
        )
    } else if let Some(reason) = misconfigured {
        (
            Prediction::CannotRun {
                reason: reason.to_string(),
            },
            Preemptions::default(),
            false,
        )
    } else {
        predict(&after, &job.id, &new_queue)?
    };
    Ok(Preview {
        job_id: job.id.clone(),
        job_name: job.name.clone(),
        job_arn: tracked.arn.clone(),
        share: job.share.clone(),
        old_priority: job.priority,
        new_priority,
        old_position,
        new_position,
        queue_length: new_queue.len(),
        in_share_preemption: in_share,
        prediction,
        preemptions,
        awaits_release,
        class_tag: job.class_tag.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture::{job, queue};
    use quotatop_model::SharingConfig;

    const P4: &str = "ml.p4d.24xlarge";

    fn world(in_share: bool) -> QueueSnapshot {
        crate::fixture::preview_world(in_share)
    }

    #[test]
    fn raising_to_the_head_preempts_the_lowest_priority_running_job() {
        let p = preview(&world(true), "id-target", 5).unwrap();
        assert_eq!(
            (p.old_position, p.new_position, p.queue_length),
            (Some(2), Some(1), 2)
        );
        let Prediction::Preempts(c) = &p.prediction else {
            panic!("{:?}", p.prediction)
        };
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].name, "low-run");
        assert!((p.instance_hours_at_risk() - 0.5).abs() < 1e-9);
        assert!(
            p.summary().contains("in-share preemption of low-run"),
            "{}",
            p.summary()
        );
    }

    /// A job the service refuses to place stays last whatever its priority, and the preview
    /// says why instead of predicting a preemption it will never cause.
    #[test]
    fn a_misconfigured_job_cannot_run_at_any_priority() {
        let mut q = world(true);
        let reason = "MISCONFIGURATION:QUOTA_MANAGEMENT_LIMIT_EXCEEDED - too big";
        if let Some(t) = q.jobs.iter_mut().find(|j| j.job.name == "target") {
            std::sync::Arc::make_mut(&mut t.job).status_reason = Some(reason.into());
        }
        let p = preview(&q, "id-target", 9_000).unwrap();
        assert_eq!((p.old_position, p.new_position), (Some(2), Some(2)));
        assert_eq!(
            p.prediction,
            Prediction::CannotRun {
                reason: reason.into()
            }
        );
        assert!(p.summary().contains("cannot run at any priority"));
    }

    #[test]
    fn only_strictly_lower_priority_and_only_when_enabled() {
        // Priority 3 does not preempt the priority-3 job, only the priority-1 one.
        let p = preview(&world(true), "id-target", 3).unwrap();
        assert!(matches!(&p.prediction, Prediction::Preempts(c) if c[0].name == "low-run"));
        // Priority 1 ties the lowest running job: nothing to preempt, and waiting-a (2) stays ahead.
        let p = preview(&world(true), "id-target", 1).unwrap();
        assert_eq!(p.prediction, Prediction::Waits { ahead: 1 });
        let p = preview(&world(false), "id-target", 5).unwrap();
        assert_eq!(p.prediction, Prediction::WaitsForCapacity);
    }

    /// Two running jobs the API cannot order (same priority, creation and start): the engine
    /// preempts one of them, and the preview says "up to 1 of" both.
    #[test]
    fn tied_victims_are_up_to_n_of_the_candidates() {
        let mut q = queue(&[("s", P4, 2, SharingConfig::reserve())]);
        q.shares[0] = q.shares[0].clone().with_in_share_preemption(true);
        let mut x = job("x", "s", P4, 1, JobStatus::Running, 1, 0);
        std::sync::Arc::make_mut(&mut x.job).started_at = Some(500_000);
        let mut y = job("y", "s", P4, 1, JobStatus::Running, 1, 0);
        std::sync::Arc::make_mut(&mut y.job).started_at = Some(500_000);
        q.jobs = vec![x, y, job("target", "s", P4, 1, JobStatus::Runnable, 0, 10)];
        let p = preview(&q, "id-target", 5).unwrap();
        assert!(matches!(p.prediction, Prediction::Preempts(_)));
        assert!(!p.preemptions.settled());
        assert_eq!((p.preemptions.min, p.preemptions.max), (1, 1));
        let names: Vec<&str> = p
            .preemptions
            .candidates
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(names.len(), 2);
        assert!(names.contains(&"x") && names.contains(&"y"));
        assert!(p.summary().contains("up to 1 of "), "{}", p.summary());
        assert_eq!(p.model_note(), None);
    }

    /// Reclaiming lent capacity names the borrower the engine preempts (the one dispatched
    /// last, counted as borrowing) and says that against AWS this is as modelled.
    #[test]
    fn a_reclaim_names_the_borrower_and_says_it_is_as_modelled() {
        let mut q = queue(&[
            ("owner", P4, 2, SharingConfig::lend()),
            ("borrower", P4, 1, SharingConfig::lend_and_borrow(-1)),
        ]);
        let mut o1 = job("o1", "owner", P4, 1, JobStatus::Running, 0, 0);
        std::sync::Arc::make_mut(&mut o1.job).started_at = Some(100_000);
        let mut b1 = job("b1", "borrower", P4, 1, JobStatus::Running, 0, 0);
        std::sync::Arc::make_mut(&mut b1.job).scheduled_at = Some(200_000);
        std::sync::Arc::make_mut(&mut b1.job).started_at = Some(200_000);
        let mut b2 = job("b2", "borrower", P4, 1, JobStatus::Running, 0, 1);
        std::sync::Arc::make_mut(&mut b2.job).scheduled_at = Some(300_000);
        std::sync::Arc::make_mut(&mut b2.job).started_at = Some(300_000);
        q.jobs = vec![
            o1,
            b1,
            b2,
            job("target", "owner", P4, 1, JobStatus::Runnable, 0, 10),
        ];
        let p = preview(&q, "id-target", 1).unwrap();
        assert_eq!(p.prediction, Prediction::ReclaimsLent { instances: 1 });
        assert!(p.preemptions.settled());
        assert_eq!(p.preemptions.candidates[0].name, "b2");
        assert_eq!(p.preemptions.candidates[0].kind, PreemptionKind::CrossShare);
        assert_eq!(p.model_note(), Some(CROSS_SHARE_NOTE));
        let s = p.summary();
        assert!(s.contains("cross-share preemption of b2"), "{s}");
        assert!(s.contains("as modelled"), "{s}");
        assert!(p.explanation().iter().any(|l| l.contains("b2 (borrower")));
    }

    /// Many jobs created in one millisecond: the orders are not all tried (their number
    /// overflows), and the preview still answers.
    #[test]
    fn many_ties_do_not_overflow() {
        let mut q = queue(&[("s", P4, 40, SharingConfig::reserve())]);
        q.shares[0] = q.shares[0].clone().with_in_share_preemption(true);
        q.jobs = (0..40)
            .map(|i| {
                let mut j = job(&format!("r{i}"), "s", P4, 1, JobStatus::Running, 1, 0);
                std::sync::Arc::make_mut(&mut j.job).started_at = Some(500_000);
                j
            })
            .collect();
        q.jobs
            .push(job("target", "s", P4, 2, JobStatus::Runnable, 0, 10));
        let p = preview(&q, "id-target", 5).unwrap();
        assert!(matches!(p.prediction, Prediction::Preempts(_)));
        assert_eq!(p.preemptions.max, 2);
        assert_eq!(p.preemptions.candidates.len(), 40, "any two of the forty");
        assert!(p.summary().contains("up to 2 of "), "{}", p.summary());
    }

    #[test]
    fn finished_and_unknown_jobs_are_refused() {
        let mut q = world(true);
        std::sync::Arc::make_mut(&mut q.jobs[3].job).status = JobStatus::Succeeded;
        assert!(matches!(
            preview(&q, "id-target", 5),
            Err(PreviewError::Finished(..))
        ));
        assert!(matches!(
            preview(&q, "nope", 5),
            Err(PreviewError::UnknownJob(_))
        ));
    }
}
