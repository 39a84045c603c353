//! A job's loop history joined with what Batch's preemption events said: each preemption's
//! event lists the job's recent preempted attempts with their true start and stop, and the
//! journal keeps every one it was given, after the API's window dropped the early ones. An
//! attempt the poller also saw (same resource id, else same stop) takes the events' times; one
//! it missed is added.

use quotatop_model::PreemptedAttempt;

use crate::{PreemptionFacts, RecordedPreemptions};

/// Where a job's loop history comes from, as every screen and `report` say it: "from events"
/// when Batch's preemption events gave any of its attempts' times, else "from the API window"
/// (the API's recent attempts, widened by what the poller saw).
pub fn history_source(f: &PreemptionFacts) -> &'static str {
    if f.from_events > 0 {
        "from events"
    } else {
        "from the API window"
    }
}

/// Joins `named` (the attempts the events named for `r`'s job) into `r.attempts`, newest first,
/// and counts in `r.from_events` the attempts whose times are the events'.
pub fn with_event_attempts(r: &mut RecordedPreemptions, named: &[PreemptedAttempt]) {
    for e in named {
        let seen = r.attempts.iter_mut().find(|a| {
            (!e.resource_id.is_empty() && a.resource_id == e.resource_id)
                || (a.resource_id.is_empty() && a.stopped_at == e.stopped_at)
        });
        match seen {
            Some(a) => {
                a.resource_id.clone_from(&e.resource_id);
                a.started_at = e.started_at.or(a.started_at);
                a.stopped_at = e.stopped_at;
                if !e.status_reason.is_empty() {
                    a.status_reason.clone_from(&e.status_reason);
                }
            }
            None => r.attempts.push(e.clone()),
        }
    }
    r.attempts.sort_by_key(|a| std::cmp::Reverse(a.stopped_at));
    r.from_events = r
        .attempts
        .iter()
        .filter(|a| {
            named
                .iter()
                .any(|e| e.resource_id == a.resource_id && e.stopped_at == a.stopped_at)
        })
        .count() as u32;
}

#[cfg(test)]
mod tests {
    use super::*;
    use quotatop_model::JobStatus;

    fn attempt(id: &str, start: Option<i64>, stop: i64) -> PreemptedAttempt {
        PreemptedAttempt {
            resource_id: id.into(),
            started_at: start,
            stopped_at: stop,
            status_reason: String::new(),
        }
    }

    #[test]
    fn the_events_times_replace_the_observed_ones_and_missed_attempts_are_added() {
        // The poller saw tj-2 a poll late (stop 260, start unknown) and never saw tj-1; an
        // attempt without resource id is matched by its stop.
        let mut r = RecordedPreemptions {
            job_id: "j".into(),
            name: "j".into(),
            share: "a".into(),
            status: JobStatus::Runnable,
            instance_type: "ml.m5.large".into(),
            instance_count: 1,
            priority: 1,
            attempts: vec![
                attempt("tj-3", Some(300), 350),
                attempt("tj-2", None, 260),
                attempt("", None, 50),
            ],
            from_events: 0,
        };
        let named = [
            attempt("tj-2", Some(200), 250),
            attempt("tj-1", Some(100), 150),
            attempt("tj-0", Some(0), 50),
        ];
        with_event_attempts(&mut r, &named);
        let got: Vec<_> = r
            .attempts
            .iter()
            .map(|a| (a.resource_id.as_str(), a.started_at, a.stopped_at))
            .collect();
        assert_eq!(
            got,
            [
                ("tj-3", Some(300), 350),
                ("tj-2", Some(200), 250),
                ("tj-1", Some(100), 150),
                ("tj-0", Some(0), 50)
            ]
        );
        assert_eq!(r.from_events, 3);
    }
}
