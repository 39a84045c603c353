//! Whether a preview recomputed on newer data predicts something else than the one the operator
//! read: the job's priority before the change, its predicted position, the effect, or the set
//! of victims. The share's queue growing behind the job, a job ahead of it dispatching (its
//! position now, not after the change), and times running and hours at risk growing by the
//! second change nothing that matters.

use std::collections::BTreeSet;

use super::{Candidate, Prediction, Preview};
use quotatop_engine::PreemptionKind;

/// One way a recomputed preview differs from the one shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Changed {
    /// The job's priority (the change's starting point) changed meanwhile.
    Priority { was: u32 },
    /// The job's predicted position in its share's queue after the change (`was`: before and
    /// after, as shown).
    Position { was: (Option<usize>, Option<usize>) },
    /// What happens to the job: runs, borrows, waits, preempts, and how many.
    Effect { was: String },
    /// Jobs that became victims (or candidates) and jobs that no longer are, by name.
    Victims {
        added: Vec<String>,
        removed: Vec<String>,
    },
}

/// The effect without its victims' identities or growing figures.
fn effect_key(p: &Preview) -> (Prediction, usize, usize, bool) {
    let prediction = match &p.prediction {
        Prediction::Preempts(_) => Prediction::Preempts(Vec::new()),
        other => other.clone(),
    };
    (
        prediction,
        p.preemptions.min,
        p.preemptions.max,
        p.awaits_release,
    )
}

/// The victims (or candidates) by job and kind of preemption.
fn victims(p: &Preview) -> BTreeSet<(&str, bool)> {
    p.preemptions
        .candidates
        .iter()
        .map(|c| (c.job_id.as_str(), c.is_cross_share()))
        .collect()
}

impl Candidate {
    /// Whether it is a cross-share victim (reclaimed lent capacity), not an in-share one.
    pub fn is_cross_share(&self) -> bool {
        self.kind == PreemptionKind::CrossShare
    }
}

impl Preview {
    /// How this preview (recomputed) differs from `shown` in what matters to the operator's
    /// decision; empty when it predicts the same thing.
    pub fn changes_since(&self, shown: &Preview) -> Vec<Changed> {
        let mut out = Vec::new();
        if self.old_priority != shown.old_priority {
            out.push(Changed::Priority {
                was: shown.old_priority,
            });
        }
        // Where the job will be: a job ahead of it leaving the queue moves where it is now,
        // not where the change puts it.
        if self.new_position != shown.new_position {
            out.push(Changed::Position {
                was: (shown.old_position, shown.new_position),
            });
        }
        if effect_key(self) != effect_key(shown) {
            out.push(Changed::Effect {
                was: shown.effect_headline(),
            });
        }
        let (now, was) = (victims(self), victims(shown));
        if now != was {
            let name = |p: &Preview, set: BTreeSet<&(&str, bool)>| -> Vec<String> {
                p.preemptions
                    .candidates
                    .iter()
                    .filter(|c| set.iter().any(|(id, _)| *id == c.job_id))
                    .map(|c| c.name.clone())
                    .collect()
            };
            out.push(Changed::Victims {
                added: name(self, now.difference(&was).collect()),
                removed: name(shown, was.difference(&now).collect()),
            });
        }
        out
    }

    /// Whether `other` predicts the same thing (see [`Preview::changes_since`]).
    pub fn same_outcome(&self, other: &Preview) -> bool {
        self.changes_since(other).is_empty()
    }
}

#[cfg(test)]
mod tests {
    use crate::fixture::job;
    use crate::preview::{Changed, preview};
    use quotatop_model::JobStatus;

    const P4: &str = "ml.p4d.24xlarge";

    fn world() -> quotatop_model::QueueSnapshot {
        crate::fixture::preview_world(true)
    }

    /// Jobs arriving behind the target make the queue longer and change nothing else.
    #[test]
    fn jobs_arriving_behind_change_nothing_that_matters() {
        let mut q = world();
        let shown = preview(&q, "id-target", 5).unwrap();
        for i in 0..3 {
            q.jobs.push(job(
                &format!("late-{i}"),
                "s",
                P4,
                1,
                JobStatus::Runnable,
                0,
                30 + i,
            ));
        }
        q.server_time = q.server_time.map(|t| t + 60_000);
        let fresh = preview(&q, "id-target", 5).unwrap();
        assert_eq!(fresh.queue_length, shown.queue_length + 3);
        assert_eq!(fresh.changes_since(&shown), vec![]);
        assert!(fresh.same_outcome(&shown));
    }

    /// A new lower-priority running job becomes the victim: the change names who came and went.
    #[test]
    fn a_changed_victim_set_is_named() {
        let mut q = world();
        let shown = preview(&q, "id-target", 5).unwrap();
        let mut newer = job("newer-run", "s", P4, 1, JobStatus::Running, 0, 5);
        std::sync::Arc::make_mut(&mut newer.job).started_at = Some(1_000_000 - 60_000);
        q.jobs.retain(|j| j.job.name != "mid-run");
        q.jobs.push(newer);
        let fresh = preview(&q, "id-target", 5).unwrap();
        assert_eq!(
            fresh.changes_since(&shown),
            vec![Changed::Victims {
                added: vec!["newer-run".into()],
                removed: vec!["low-run".into()],
            }]
        );
    }

    /// A job ahead of the target dispatching moves where it is now, not where the change puts
    /// it: nothing that matters.
    #[test]
    fn a_job_ahead_leaving_changes_nothing_that_matters() {
        let mut q = world();
        let shown = preview(&q, "id-target", 5).unwrap();
        assert_eq!((shown.old_position, shown.new_position), (Some(2), Some(1)));
        // waiting-a (ahead) is dispatched in place of mid-run, which finished.
        q.jobs.retain(|j| j.job.name != "mid-run");
        if let Some(a) = q.jobs.iter_mut().find(|j| j.job.name == "waiting-a") {
            std::sync::Arc::make_mut(&mut a.job).status = JobStatus::Running;
            std::sync::Arc::make_mut(&mut a.job).started_at = Some(990_000);
        }
        let fresh = preview(&q, "id-target", 5).unwrap();
        assert_eq!(fresh.old_position, Some(1));
        assert_eq!(fresh.changes_since(&shown), vec![], "{fresh:?}");
    }

    /// A job arriving ahead moves the target's predicted position and its effect.
    #[test]
    fn a_job_arriving_ahead_changes_position_and_effect() {
        let mut q = world();
        let shown = preview(&q, "id-target", 2).unwrap();
        q.jobs
            .push(job("urgent", "s", P4, 1, JobStatus::Runnable, 9, 30));
        let fresh = preview(&q, "id-target", 2).unwrap();
        let changes = fresh.changes_since(&shown);
        assert!(
            changes
                .iter()
                .any(|c| matches!(c, Changed::Position { .. })),
            "{changes:?}"
        );
        assert!(
            changes.iter().any(|c| matches!(c, Changed::Effect { .. })),
            "{changes:?}"
        );
    }
}
