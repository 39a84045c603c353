//! A job's attempts as the console lists them, from one function for every screen: the API's
//! `attempts` merged with the preempted attempts the preemption facts know (the API's recent
//! window, widened by the journal), by resource id. Job detail lists them all; the Preemptions
//! screen lists the preempted ones; both therefore show the same attempts with the same times.

use quotatop_model::{Attempt, Millis, PreemptedAttempt};

/// One attempt of a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptRow {
    pub resource_id: String,
    pub started_at: Option<Millis>,
    pub stopped_at: Option<Millis>,
    pub reason: Option<String>,
    /// Ended by preemption: one of the preempted attempts, or a stopped attempt whose reason
    /// says it was preempted (older than the API's window of preempted attempts).
    pub preempted: bool,
}

impl AttemptRow {
    /// Stopped, but when it started was never seen: its run time is unknown (not zero).
    pub fn start_unknown(&self) -> bool {
        self.started_at.is_none() && self.stopped_at.is_some()
    }

    /// How long it ran, when both ends are known.
    pub fn ran(&self) -> Option<Millis> {
        Some(self.stopped_at? - self.started_at?)
    }
}

/// The job's attempts, newest first: each of the API's `attempts` (its missing times filled in
/// from the matching preempted attempt), then the preempted attempts the API's list does not
/// hold. An attempt with no time at all (not started yet) is the newest.
pub fn job_attempts(attempts: &[Attempt], preempted: &[PreemptedAttempt]) -> Vec<AttemptRow> {
    let mut out: Vec<AttemptRow> = attempts
        .iter()
        .map(|a| {
            let p = preempted.iter().find(|p| p.resource_id == a.resource_id);
            let reason = a
                .status_reason
                .clone()
                .or_else(|| p.map(|p| p.status_reason.clone()))
                .filter(|r| !r.is_empty());
            let says_preempted = a.stopped_at.is_some()
                && quotatop_model::attempt_stop(reason.as_deref(), p.is_some(), false)
                    == quotatop_model::AttemptStop::Preempted;
            AttemptRow {
                resource_id: a.resource_id.clone(),
                started_at: a.started_at.or(p.and_then(|p| p.started_at)),
                stopped_at: a.stopped_at.or(p.map(|p| p.stopped_at)),
                reason,
                preempted: p.is_some() || says_preempted,
            }
        })
        .collect();
    for p in preempted {
        if !attempts.iter().any(|a| a.resource_id == p.resource_id) {
            out.push(AttemptRow {
                resource_id: p.resource_id.clone(),
                started_at: p.started_at,
                stopped_at: Some(p.stopped_at),
                reason: Some(p.status_reason.clone()).filter(|r| !r.is_empty()),
                preempted: true,
            });
        }
    }
    // Stable: attempts with equal times keep the API's order.
    out.sort_by_key(|a| std::cmp::Reverse(a.started_at.or(a.stopped_at).unwrap_or(Millis::MAX)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attempt(id: &str, start: Option<Millis>, stop: Option<Millis>, reason: &str) -> Attempt {
        Attempt {
            resource_id: id.into(),
            started_at: start,
            stopped_at: stop,
            status_reason: Some(reason.to_string()).filter(|r| !r.is_empty()),
        }
    }

    fn pre(id: &str, start: Millis, stop: Millis) -> PreemptedAttempt {
        PreemptedAttempt {
            resource_id: id.into(),
            started_at: Some(start),
            stopped_at: stop,
            status_reason: "Cross-share preemption".into(),
        }
    }

    #[test]
    fn merges_by_resource_id_fills_missing_times_and_orders_newest_first() {
        let api = [
            attempt("a1", Some(10), Some(20), "Cross-share preemption triggered"),
            attempt("a2", None, Some(40), "Cross-share preemption triggered"),
            attempt("a3", None, None, ""),
        ];
        // The API's window of preempted attempts holds a2 only, with its start; the journal
        // knows a0, older than the API's attempts list.
        let rows = job_attempts(&api, &[pre("a2", 30, 40), pre("a0", 1, 5)]);
        let ids: Vec<&str> = rows.iter().map(|r| r.resource_id.as_str()).collect();
        assert_eq!(ids, ["a3", "a2", "a1", "a0"]);
        assert_eq!(rows[1].started_at, Some(30), "the start the window knows");
        assert_eq!(rows[1].ran(), Some(10));
        let preempted: Vec<bool> = rows.iter().map(|r| r.preempted).collect();
        assert_eq!(preempted, [false, true, true, true]);
        assert_eq!(rows[0].ran(), None);
    }

    #[test]
    fn a_stopped_attempt_without_preemption_in_its_reason_is_not_preempted() {
        let rows = job_attempts(&[attempt("a", Some(1), Some(2), "AlgorithmError")], &[]);
        assert!(!rows[0].preempted);
    }
}
