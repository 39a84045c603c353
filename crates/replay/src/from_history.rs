//! A trace from observed history: each job the scorecard input holds, as a [`TraceJob`] whose
//! work is its productive running time in the ledger (docs/architecture.md), so replaying the trace asks
//! the engine for exactly the work that got done. Used by `journal export-trace` and
//! `replay --journal`; written out by [`write_csv`] in quotatop's trace CSV.

use std::collections::BTreeMap;
use std::sync::Arc;

use quotatop_analysis::scorecard::ledger::checkpoint_ms;
use quotatop_analysis::scorecard::{
    Outcome, PriorityChange, ScorecardInput, ScorecardOptions, job_ledger,
};
use quotatop_model::Millis;

use super::{JobExtras, JobName, Origin, TraceJob};

/// Why an observed job is not in the trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LeftOut {
    /// Submitted before the window: its earlier running time was not observed in it.
    SubmittedBefore,
    /// Not finished by the window's end.
    StillOpen,
    /// Ended FAILED for a reason other than a preemption the trace could replay.
    Failed,
    /// Succeeded, but the journal saw no productive running time.
    NoRunningTime,
}

impl LeftOut {
    pub fn reason(self) -> &'static str {
        match self {
            Self::SubmittedBefore => "submitted before the window",
            Self::StillOpen => "still open at the window's end",
            Self::Failed => "failed",
            Self::NoRunningTime => "succeeded with no observed running time",
        }
    }
}

/// The trace and how many jobs were left out, by reason.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HistoryTrace {
    pub jobs: Vec<TraceJob>,
    /// Epoch ms of the trace's time 0 (the first included submission).
    pub start_ms: Millis,
    pub left_out: BTreeMap<LeftOut, usize>,
}

/// The trace of `input`'s jobs (submitted in its window and SUCCEEDED in it): submission time
/// from the first such job, share, instance type and count, the priority as submitted with the
/// `changes` seen later, work = the ledger's productive time (the final attempt plus the
/// checkpointed progress of interrupted ones), the checkpoint interval where known.
pub fn trace_from_history(
    input: &ScorecardInput,
    opts: &ScorecardOptions,
    changes: &[PriorityChange],
) -> HistoryTrace {
    let mut by_job: BTreeMap<&str, Vec<&PriorityChange>> = BTreeMap::new();
    for c in changes {
        by_job.entry(c.job_id.as_str()).or_default().push(c);
    }
    let mut out = HistoryTrace::default();
    let mut kept = Vec::new();
    for job in &input.jobs {
        let why = if job.submitted_at < input.window.start {
            Some(LeftOut::SubmittedBefore)
        } else {
            match job.outcome {
                Outcome::Open => Some(LeftOut::StillOpen),
                Outcome::Succeeded(t) if t >= input.window.end => Some(LeftOut::StillOpen),
                Outcome::Failed(_) => Some(LeftOut::Failed),
                Outcome::Succeeded(_) => None,
            }
        };
        let work = job_ledger(job, input.window, opts).productive;
        let why = why.or((work <= 0).then_some(LeftOut::NoRunningTime));
        match why {
            Some(w) => *out.left_out.entry(w).or_default() += 1,
            None => kept.push((job, work)),
        }
    }
    out.start_ms = kept
        .iter()
        .map(|(j, _)| j.submitted_at)
        .min()
        .unwrap_or(input.window.start);
    let file: Arc<str> = format!("journal:{}", input.queue).into();
    let mut names: Vec<Arc<str>> = Vec::new();
    kept.sort_by_key(|(j, _)| (j.submitted_at, j.job_id.clone()));
    for (n, (job, work)) in kept.into_iter().enumerate() {
        let mut seen = by_job.get(job.job_id.as_str()).cloned().unwrap_or_default();
        seen.sort_by_key(|c| c.at);
        let priority = submitted_priority(job.priority, &seen);
        out.jobs.push(TraceJob {
            name: JobName::from(job.name.as_str()),
            origin: Origin::at(&file, n as u64 + 1),
            share: super::interned(&mut names, &job.share),
            submit_ms: job.submitted_at - out.start_ms,
            instance_type: super::interned(&mut names, &job.instance_type),
            instance_count: job.instance_count.max(1),
            work_ms: work as u64,
            priority: i64::from(priority),
            checkpoint_interval_ms: checkpoint_ms(job, opts).map(|c| c as u64),
            // As DescribeServiceJob last showed it (`None`: requeued forever, or never described).
            preemption_retries: job.preemption_retries,
            extras: JobExtras::new(
                None,
                seen.iter()
                    .map(|c| ((c.at - out.start_ms).max(0), i64::from(c.new)))
                    .collect(),
            ),
        });
    }
    out
}

/// The priority a job was submitted at: the first of its `changes` (sorted by time) changed it
/// from that, else it never changed from `now`.
pub(crate) fn submitted_priority(now: u32, changes: &[&PriorityChange]) -> u32 {
    changes.first().map_or(now, |c| c.old)
}

/// `ms` as seconds, exact to the millisecond (`12`, `12.5`, `0.001`).
fn seconds(ms: Millis) -> String {
    let (s, frac) = (ms / 1000, ms % 1000);
    if frac == 0 {
        s.to_string()
    } else {
        format!("{s}.{frac:03}").trim_end_matches('0').to_string()
    }
}

/// `jobs` in quotatop's trace CSV (see [`super::trace_csv`]); reading it back gives the same
/// jobs (their origins aside).
pub fn write_csv(jobs: &[TraceJob]) -> Result<String, csv::Error> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(super::trace_csv::COLUMNS)?;
    for j in jobs {
        let changes: Vec<String> = j
            .extras
            .priority_changes()
            .iter()
            .map(|&(t, p)| format!("{}:{p}", seconds(t)))
            .collect();
        // Names come from the API: control characters (ESC, BEL, CSI…) are written as a
        // visible `\u00XX`, as every other export does, so `cat trace.csv` cannot drive the
        // terminal.
        let esc = quotatop_model::escape_controls;
        w.write_record([
            seconds(j.submit_ms),
            esc(&j.share),
            esc(&j.instance_type),
            j.instance_count.to_string(),
            seconds(Millis::try_from(j.work_ms).unwrap_or(Millis::MAX)),
            j.priority.to_string(),
            j.checkpoint_interval_ms
                .map_or_else(String::new, |c| seconds(c as Millis)),
            j.preemption_retries
                .map_or_else(String::new, |r| r.to_string()),
            esc(&j.name.to_string()),
            j.extras
                .deadline_ms()
                .map_or_else(String::new, |d| seconds(d as Millis)),
            changes.join(";"),
        ])?;
    }
    let bytes = w.into_inner().map_err(|e| e.into_error())?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use quotatop_analysis::scorecard::{AttemptEnd, AttemptHistory, JobHistory, Window};

    fn attempt(start: Millis, stop: Millis, end: AttemptEnd) -> AttemptHistory {
        AttemptHistory {
            scheduled_at: Some(start),
            started_at: Some(start),
            stopped_at: Some(stop),
            end,
            preempting_from: None,
            restored: None,
            restored_at: None,
        }
    }

    fn job(
        id: &str,
        submitted: Millis,
        attempts: Vec<AttemptHistory>,
        outcome: Outcome,
    ) -> JobHistory {
        JobHistory {
            job_id: id.into(),
            name: format!("n-{id}"),
            share: "research".into(),
            priority: 50,
            instance_type: "ml.p4d.24xlarge".into(),
            instance_count: 2,
            submitted_at: submitted,
            runnable_at: vec![submitted],
            attempts,
            outcome,
            checkpoint_interval_ms: None,
            restart_overhead_ms: None,
            preemption_retries: None,
            training: None,
        }
    }

    /// Work is the ledger's productive time (the checkpointed part of a preempted attempt plus
    /// the final one); open, failed and earlier jobs are counted out by reason; the priority is
    /// the one submitted, its changes follow; the CSV reads back as the same jobs.
    #[test]
    fn work_is_productive_time_and_the_csv_round_trips() {
        let m = 60_000;
        let input = ScorecardInput {
            queue: "q".into(),
            window: Window::new(1_000 * m, 2_000 * m),
            capacity: Vec::new(),
            entitlements: Vec::new(),
            jobs: vec![
                job(
                    "a",
                    1_010 * m,
                    vec![
                        attempt(1_020 * m, 1_045 * m, AttemptEnd::Preempted),
                        attempt(1_100 * m, 1_130 * m, AttemptEnd::Completed),
                    ],
                    Outcome::Succeeded(1_130 * m),
                ),
                job(
                    "b",
                    1_005 * m,
                    vec![attempt(1_006 * m, 1_016 * m, AttemptEnd::Completed)],
                    Outcome::Succeeded(1_016 * m),
                ),
                job("open", 1_200 * m, vec![], Outcome::Open),
                job(
                    "failed",
                    1_200 * m,
                    vec![attempt(1_201 * m, 1_202 * m, AttemptEnd::Failed)],
                    Outcome::Failed(1_202 * m),
                ),
                job("early", 900 * m, vec![], Outcome::Succeeded(1_100 * m)),
            ],
        };
        let mut opts = ScorecardOptions::default();
        opts.checkpoint_by_share
            .insert("research".into(), 10 * m as u64);
        let changes = vec![PriorityChange {
            at: 1_050 * m,
            job_id: "a".into(),
            share: "research".into(),
            operator: None,
            old: 10,
            new: 50,
            change_record: None,
        }];
        let t = trace_from_history(&input, &opts, &changes);
        assert_eq!(t.start_ms, 1_005 * m);
        assert_eq!(t.jobs.len(), 2);
        let (b, a) = (&t.jobs[0], &t.jobs[1]);
        assert_eq!(
            (b.name.to_string(), b.submit_ms, b.work_ms),
            ("n-b".into(), 0, 10 * m as u64)
        );
        // 25 min run with 10 min checkpoints: 20 saved, then 30 to finish.
        assert_eq!((a.submit_ms, a.work_ms), (5 * m, 50 * m as u64));
        assert_eq!(a.priority, 10);
        assert_eq!(a.extras.priority_changes(), [(45 * m, 50)]);
        assert_eq!(a.checkpoint_interval_ms, Some(10 * m as u64));
        assert_eq!(a.instance_count, 2);
        let left: Vec<(&str, usize)> = t.left_out.iter().map(|(k, v)| (k.reason(), *v)).collect();
        assert_eq!(
            left,
            vec![
                ("submitted before the window", 1),
                ("still open at the window's end", 1),
                ("failed", 1),
            ]
        );
        let text = write_csv(&t.jobs).unwrap();
        let back = super::super::trace_csv::parse(&text, "t.csv").unwrap();
        assert_eq!(back.len(), 2);
        for (x, y) in back.iter().zip(&t.jobs) {
            assert_eq!(
                TraceJob {
                    origin: y.origin.clone(),
                    ..x.clone()
                },
                *y,
                "{text}"
            );
        }
    }

    #[test]
    fn exported_names_carry_no_control_characters() {
        let j = TraceJob {
            name: JobName::from("job\u{9b}31m\u{1b}]0;pwned\u{7}"),
            origin: Origin::at(&std::sync::Arc::from("t"), 1),
            share: "r\u{1b}[2Jesearch".into(),
            submit_ms: 0,
            instance_type: "ml.g5.xlarge\u{7}".into(),
            instance_count: 1,
            work_ms: 60_000,
            priority: 1,
            checkpoint_interval_ms: None,
            preemption_retries: None,
            extras: JobExtras::default(),
        };
        let text = write_csv(&[j]).unwrap();
        assert!(
            !text.chars().any(|c| c.is_control() && c != '\n'),
            "{text:?}"
        );
        assert!(text.contains("r\\u001b[2Jesearch"), "{text}");
        assert!(text.contains("ml.g5.xlarge\\u0007"), "{text}");
        assert!(
            text.contains("job\\u009b31m\\u001b]0;pwned\\u0007"),
            "{text}"
        );
    }

    #[test]
    fn seconds_are_exact_to_the_millisecond() {
        assert_eq!(seconds(12_000), "12");
        assert_eq!(seconds(12_500), "12.5");
        assert_eq!(seconds(1), "0.001");
    }
}
