//! The one definition of a preemption loop. Every count of loops (the Preemptions title and its
//! FLAGS column, the attention panel's LOOP items, the Overview's PRE highlight and LOOP badges,
//! `snapshot`'s looping jobs, the `quotatop_looping_jobs` metric) reads
//! [`crate::PreemptionFacts::looping`], which is set by [`is_looping`] alone.

use quotatop_model::{JobStatus, Millis, PreemptedAttempt};

use crate::LoopRule;

/// Whether a job is caught in a preemption loop: it has not finished (a SUCCEEDED or FAILED
/// job burns no more capacity, however often it was preempted on the way) and it was preempted
/// at least `rule.min_preemptions` times in all, or at least `rule.within.0` times among the
/// `attempts` that stopped within the last `rule.within.1` ms before `now`.
pub fn is_looping(
    status: JobStatus,
    count: u32,
    attempts: &[PreemptedAttempt],
    now: Option<Millis>,
    rule: &LoopRule,
) -> bool {
    if status.is_terminal() {
        return false;
    }
    let recent_in_window = match (rule.within, now) {
        (Some((_, window)), Some(now)) => attempts
            .iter()
            .filter(|a| a.stopped_at >= now - window)
            .count() as u32,
        _ => 0,
    };
    count >= rule.min_preemptions
        || rule
            .within
            .is_some_and(|(m, _)| m > 0 && recent_in_window >= m)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attempt(stop: Millis) -> PreemptedAttempt {
        PreemptedAttempt {
            resource_id: format!("r{stop}"),
            started_at: Some(stop - 60_000),
            stopped_at: stop,
            status_reason: String::new(),
        }
    }

    #[test]
    fn a_finished_job_is_not_looping_however_often_it_was_preempted() {
        let rule = LoopRule::default();
        let recent: Vec<_> = (1..=5).map(|i| attempt(i * 60_000)).collect();
        let now = Some(10 * 60_000);
        for status in [JobStatus::Succeeded, JobStatus::Failed] {
            assert!(!is_looping(status, 12, &recent, now, &rule), "{status:?}");
        }
        for status in [JobStatus::Runnable, JobStatus::Starting, JobStatus::Running] {
            assert!(is_looping(status, 12, &recent, now, &rule), "{status:?}");
        }
    }

    #[test]
    fn the_count_or_the_recent_window_makes_a_loop() {
        let rule = LoopRule::default();
        let now = Some(10 * 3_600_000);
        // Three in all.
        assert!(is_looping(JobStatus::Running, 3, &[], now, &rule));
        assert!(!is_looping(JobStatus::Running, 2, &[], now, &rule));
        // Two within the last hour.
        let recent = [attempt(10 * 3_600_000 - 60_000), attempt(9 * 3_600_000 + 1)];
        assert!(is_looping(JobStatus::Running, 2, &recent, now, &rule));
        let old = [attempt(3_600_000), attempt(2 * 3_600_000)];
        assert!(!is_looping(JobStatus::Running, 2, &old, now, &rule));
    }
}
