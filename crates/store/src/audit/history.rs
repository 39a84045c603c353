//! Whether the log, read in order, tells each job's true history: every priority change's
//! intent replaced the priority the job's previous change in the log set. Changes to one job
//! are made one at a time under its lock (`ChangeLog::try_lock_job`), so a break means
//! changes logged out of the order AWS applied them, or a change made outside quotatop
//! (another tool, or a process keeping another log) in between.

use super::{Change, Outcome, Verdict};

/// One break of a job's logged history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryBreak {
    pub job_id: String,
    /// The record of the intent that does not follow on (its position in the log).
    pub seq: u64,
    /// The priority that intent says it replaced.
    pub replaced: u32,
    /// The priority the job's previous change in the log set, and its intent's position.
    pub previous: u32,
    pub previous_seq: u64,
}

impl std::fmt::Display for HistoryBreak {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "job {}: the change at record {} replaced priority {}, but the job's previous change (record {}) set {}",
            self.job_id, self.seq, self.replaced, self.previous_seq, self.previous
        )
    }
}

/// The breaks of every job's history in `changes` (in log order, as [`super::changes`]
/// gives them). A change that failed leaves the priority as it was; one whose outcome is
/// unknown or undecidable leaves it unknown, so the next change is not judged against it.
pub fn history_breaks(changes: &[Change]) -> Vec<HistoryBreak> {
    let mut last: std::collections::HashMap<&str, (u32, u64)> = Default::default();
    let mut breaks = Vec::new();
    for c in changes.iter().filter(|c| c.is_priority()) {
        let i = &c.intent;
        if i.job.id.is_empty() {
            continue;
        }
        if let Some(&(previous, previous_seq)) = last.get(i.job.id.as_str())
            && previous != i.old_priority
        {
            breaks.push(HistoryBreak {
                job_id: i.job.id.clone(),
                seq: i.seq,
                replaced: i.old_priority,
                previous,
                previous_seq,
            });
        }
        let outcome = c.outcome.as_ref().and_then(|o| o.outcome.as_ref());
        if c.took_effect() {
            last.insert(&i.job.id, (i.new_priority, i.seq));
        } else if !matches!(
            outcome,
            Some(Outcome::Failed { .. })
                | Some(Outcome::Reconciled {
                    verdict: Verdict::DidNotLand,
                    ..
                })
        ) {
            last.remove(i.job.id.as_str());
        }
    }
    breaks
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::{AuditRecord, ChangeOrigin, JobRef};

    fn change(seq: u64, job: &str, old: u32, new: u32, outcome: Option<Outcome>) -> Change {
        let mut intent = AuditRecord::priority_intent(
            ChangeOrigin::default(),
            format!("c-{seq}"),
            "s".into(),
            JobRef {
                id: job.into(),
                name: job.into(),
                arn: job.into(),
            },
            old,
            new,
            String::new(),
        );
        intent.seq = seq;
        let outcome = outcome.map(|o| AuditRecord::outcome_of(intent.clone(), o));
        Change { intent, outcome }
    }

    #[test]
    fn each_intent_replaces_what_the_job_s_previous_change_set() {
        let ok = || {
            Some(Outcome::Succeeded {
                request_id: Some("r".into()),
            })
        };
        let failed = Some(Outcome::Failed {
            error: "500".into(),
        });
        // a: 0 -> 5 -> (failed 5 -> 9) -> 7 follows on; b's second change replaced 3, but
        // its first set 4 (logged out of order); after an unknown outcome nothing is judged.
        let log = [
            change(1, "a", 0, 5, ok()),
            change(3, "b", 0, 4, ok()),
            change(5, "a", 5, 9, failed),
            change(7, "b", 3, 8, ok()),
            change(9, "a", 5, 7, None),
            change(10, "a", 1, 2, ok()),
        ];
        assert_eq!(
            history_breaks(&log),
            vec![HistoryBreak {
                job_id: "b".into(),
                seq: 7,
                replaced: 3,
                previous: 4,
                previous_seq: 3,
            }]
        );
    }
}
