//! What several priority changes confirmed together do: the engine's next scheduling pass with
//! every change placed at once, against the same pass without them. Each job's own preview
//! ([`super::preview`]) places its change alone; changes made together interact (two raised jobs
//! compete for one free slot, a lowered head lets a raised one through), so a bulk change is
//! previewed here as one.

use std::collections::BTreeSet;
use std::sync::Arc;

use quotatop_engine::{Placement, PreemptionKind};
use quotatop_model::QueueSnapshot;

use super::simulate::{candidate, next_pass};
use super::{Candidate, PreviewError, Starter};
use crate as analysis;

/// The combined effect of changes on one queue's next scheduling pass.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Combined {
    /// Waiting jobs the pass starts with the changes and not without, in the pass's order.
    pub starts: Vec<Starter>,
    /// Running jobs the pass preempts with the changes and not without.
    pub preempted: Vec<Candidate>,
    /// Whether every order of tied jobs tried gives the same starts and preemptions (else these
    /// are the likeliest order's).
    pub settled: bool,
}

impl Combined {
    /// Instance-hours at risk of the jobs preempted.
    pub fn instance_hours_at_risk(&self) -> f64 {
        self.preempted
            .iter()
            .map(|c| c.instance_hours_at_risk)
            .sum()
    }

    /// The combined effect in one line, naming the jobs.
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        if !self.starts.is_empty() {
            let names: Vec<&str> = self.starts.iter().map(|s| s.name.as_str()).collect();
            parts.push(format!("starts {}", names.join(", ")));
        }
        if !self.preempted.is_empty() {
            let names: Vec<String> = self
                .preempted
                .iter()
                .map(|c| match c.kind {
                    PreemptionKind::CrossShare => format!("{} (cross-share)", c.name),
                    _ => format!("{} (in-share)", c.name),
                })
                .collect();
            parts.push(format!(
                "preempts {} ({:.1} instance-hours at risk)",
                names.join(", "),
                self.instance_hours_at_risk()
            ));
        }
        let mut out = if parts.is_empty() {
            "together: the next scheduling pass starts and preempts nothing more".to_string()
        } else {
            format!("together: the next scheduling pass {}", parts.join(" and "))
        };
        if !self.settled {
            out.push_str(" (in the likeliest order of tied jobs the API does not order)");
        }
        if self
            .preempted
            .iter()
            .any(|c| c.kind == PreemptionKind::CrossShare)
        {
            out.push_str(&format!(" ({})", super::CROSS_SHARE_NOTE));
        }
        out
    }
}

/// What one order's pass dispatches and preempts, by job index.
type Effect = (Vec<u32>, Vec<(u32, PreemptionKind)>);

fn effect(decisions: &[(u32, Placement)]) -> Effect {
    let mut started = Vec::new();
    let mut preempted = Vec::new();
    for (id, placement) in decisions {
        match placement {
            Placement::Dispatch => started.push(*id),
            Placement::Preempt(victims) => {
                preempted.extend(victims.iter().map(|v| (v.id, v.kind)));
            }
            Placement::AwaitRelease | Placement::Blocked => {}
        }
    }
    (started, preempted)
}

/// Previews setting each `(job, priority)` of `changes` at once on snapshot `q`: the starts
/// and preemptions of the next pass with all of them, less those it makes without them.
pub fn combined(q: &QueueSnapshot, changes: &[(&str, u32)]) -> Result<Combined, PreviewError> {
    // Both passes ordered by priority alone, as the single preview orders them (the service's
    // front-of-queue order reflects the old priorities).
    let mut before = q.clone();
    before.front_of_queue.clear();
    let mut after = before.clone();
    let mut types = BTreeSet::new();
    for &(job_id, new) in changes {
        let t = after
            .jobs
            .iter_mut()
            .find(|j| j.job.id == job_id || j.arn == job_id)
            .ok_or_else(|| PreviewError::UnknownJob(job_id.to_string()))?;
        if t.job.status.is_terminal() {
            return Err(PreviewError::Finished(
                t.job.id.clone(),
                t.job.status.as_str(),
            ));
        }
        types.insert(t.job.instance_type.clone());
        Arc::make_mut(&mut t.job).priority = new;
        t.described_at = t.described_at.or(Some(0));
    }
    let now = analysis::now_of(q).unwrap_or(0);
    let mut out = Combined {
        settled: true,
        ..Combined::default()
    };
    for ty in &types {
        let without = next_pass(&before, ty)?;
        let with = next_pass(&after, ty)?;
        let (base_started, base_preempted) = without
            .decisions
            .first()
            .map(|d| effect(d))
            .unwrap_or_default();
        let mut orders = with.decisions.iter().map(|d| effect(d));
        let Some((started, preempted)) = orders.next() else {
            continue;
        };
        let ids = |(s, p): &Effect| -> (BTreeSet<u32>, BTreeSet<u32>) {
            (s.iter().copied().collect(), p.iter().map(|v| v.0).collect())
        };
        let likeliest = ids(&(started.clone(), preempted.clone()));
        let same = |e: &Effect| ids(e) == likeliest;
        if !orders.all(|e| same(&e)) {
            out.settled = false;
        }
        for id in started.iter().filter(|id| !base_started.contains(id)) {
            if let Some(t) = after.jobs.get(*id as usize) {
                out.starts.push(Starter::of(&t.job));
            }
        }
        for (id, kind) in preempted.iter().filter(|v| !base_preempted.contains(v)) {
            if let Some(t) = after.jobs.get(*id as usize) {
                out.preempted.push(candidate(t, now, *kind));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture::{job, queue};
    use quotatop_model::{JobStatus, SharingConfig};

    const P4: &str = "ml.p4d.24xlarge";

    /// Share `s` of 2 instances, one held by `r`; the head `h` needs 2 and cannot start, so
    /// `a` and `b` (1 each) wait behind it.
    fn blocked_head() -> QueueSnapshot {
        let mut q = queue(&[("s", P4, 2, SharingConfig::reserve())]);
        let mut r = job("r", "s", P4, 1, JobStatus::Running, 5, 0);
        Arc::make_mut(&mut r.job).started_at = Some(500_000);
        q.jobs = vec![
            r,
            job("h", "s", P4, 2, JobStatus::Runnable, 9, 10),
            job("a", "s", P4, 1, JobStatus::Runnable, 1, 20),
            job("b", "s", P4, 1, JobStatus::Runnable, 1, 30),
        ];
        q
    }

    fn started(c: &Combined) -> Vec<&str> {
        c.starts.iter().map(|s| s.name.as_str()).collect()
    }

    /// Lowering the blocked head and raising `b` together starts `b`, not `a`: neither change
    /// alone says so (alone, `b` waits behind the head; alone, lowering the head starts `a`).
    #[test]
    fn changes_placed_together_interact() {
        let q = blocked_head();
        let alone = combined(&q, &[("id-h", 0)]).unwrap();
        assert_eq!(started(&alone), ["a"]);
        let alone = combined(&q, &[("id-b", 9)]).unwrap();
        assert!(alone.starts.is_empty(), "{alone:?}");
        let both = combined(&q, &[("id-h", 0), ("id-b", 9)]).unwrap();
        assert_eq!(started(&both), ["b"]);
        assert!(both.settled);
        assert!(both.summary().contains("starts b"), "{}", both.summary());
    }

    /// Two jobs raised over the running ones with in-share preemption: the pass preempts for
    /// the first head only (head of line), so together they preempt one job, once.
    #[test]
    fn a_victim_is_counted_once_for_changes_made_together() {
        let mut q = crate::fixture::preview_world(true);
        // waiting-a at 0: without the changes nothing is preempted.
        if let Some(t) = q.jobs.iter_mut().find(|t| t.job.name == "waiting-a") {
            Arc::make_mut(&mut t.job).priority = 0;
        }
        assert_eq!(combined(&q, &[]).unwrap().preempted, []);
        let both = combined(&q, &[("id-target", 5), ("id-waiting-a", 5)]).unwrap();
        let names: Vec<&str> = both.preempted.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["low-run"]);
        // Alone, each change names low-run: adding the two previews would count it twice.
        let alone: f64 = ["id-target", "id-waiting-a"]
            .iter()
            .map(|id| {
                super::super::preview(&q, id, 5)
                    .unwrap()
                    .instance_hours_at_risk()
            })
            .sum();
        assert!((alone - 1.0).abs() < 1e-9, "{alone}");
        assert!((both.instance_hours_at_risk() - 0.5).abs() < 1e-9);
        let s = both.summary();
        assert!(s.contains("preempts low-run (in-share)"), "{s}");
    }

    #[test]
    fn no_effect_and_unknown_jobs() {
        let q = blocked_head();
        let none = combined(&q, &[("id-a", 2)]).unwrap();
        assert_eq!(
            none,
            Combined {
                settled: true,
                ..Combined::default()
            }
        );
        assert!(none.summary().contains("starts and preempts nothing more"));
        // What the pass does anyway is not the changes' effect: waiting-a (2) preempts low-run
        // (1) with or without target moving below it.
        let q = crate::fixture::preview_world(true);
        assert_eq!(combined(&q, &[("id-target", 1)]).unwrap().preempted, []);
        assert!(matches!(
            combined(&q, &[("id-a", 2), ("nope", 1)]),
            Err(PreviewError::UnknownJob(_))
        ));
    }
}
