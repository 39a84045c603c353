//! The training job behind each attempt and its log, as `quotatop logs` prints it and the
//! console's log pane shows it: which stream holds an attempt's log, and the lines with the
//! attempt's preemption marked at its moment. One place for both.

use quotatop_model::{Millis, clean_text, format_utc};

use crate::AttemptRow;

pub use quotatop_model::{stream_prefix, training_job_name};

/// A job's attempts, oldest first, numbered from 1 (its recent preempted attempts marked):
/// what `quotatop logs` and the console's log pane choose from.
pub fn attempts_of(job: &quotatop_model::ServiceJob) -> Vec<NumberedAttempt> {
    let preempted = job
        .preemption
        .as_ref()
        .map(|p| p.recent_preempted_attempts.as_slice())
        .unwrap_or_default();
    numbered(&crate::job_attempts(&job.attempts, preempted))
}

/// An attempt numbered as the user counts them: 1 is the first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NumberedAttempt {
    pub number: usize,
    pub row: AttemptRow,
}

/// The job's attempts oldest first, numbered from 1 ([`crate::job_attempts`] lists them newest
/// first).
pub fn numbered(rows: &[AttemptRow]) -> Vec<NumberedAttempt> {
    rows.iter()
        .rev()
        .enumerate()
        .map(|(i, row)| NumberedAttempt {
            number: i + 1,
            row: row.clone(),
        })
        .collect()
}

/// One row of a training log as shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogRow {
    /// A log event (one line of its message; `continued` for the lines after its first,
    /// marked so that a message cannot pass a line of its own off as another event).
    Line {
        time: Millis,
        attempt: usize,
        text: String,
        continued: bool,
    },
    /// The attempt's end as the API shows it: preempted (with the reason) or otherwise stopped.
    Mark {
        time: Millis,
        attempt: usize,
        preempted: bool,
        text: String,
    },
}

impl LogRow {
    pub fn time(&self) -> Millis {
        match self {
            LogRow::Line { time, .. } | LogRow::Mark { time, .. } => *time,
        }
    }

    /// The row as printed: time, attempt, text; untrusted text cleaned of control characters.
    pub fn render(&self) -> String {
        match self {
            LogRow::Line {
                time,
                attempt,
                text,
                continued,
            } => format!(
                "{} #{attempt} {}{}",
                format_utc(*time),
                if *continued { CONTINUED } else { "" },
                clean_text(text)
            ),
            LogRow::Mark {
                time,
                attempt,
                text,
                ..
            } => format!(
                "{} #{attempt} ── {} ──",
                format_utc(*time),
                clean_text(text)
            ),
        }
    }
}

/// What starts a row that continues an event's message on a line of its own.
pub const CONTINUED: &str = "↳ ";

/// The attempt's log events (`(time, message)`, in time order) as rows: a message of several
/// lines becomes several rows, and the attempt's end is marked at its `stoppedAt` (a
/// preemption says so, with its reason).
pub fn rows(attempt: &NumberedAttempt, events: &[(Millis, String)]) -> Vec<LogRow> {
    let mut out: Vec<LogRow> = events
        .iter()
        .flat_map(|(t, m)| {
            m.trim_end_matches(['\n', '\r'])
                .split('\n')
                .enumerate()
                .map(move |(i, part)| LogRow::Line {
                    time: *t,
                    attempt: attempt.number,
                    text: part.trim_end_matches('\r').to_string(),
                    continued: i > 0,
                })
        })
        .collect();
    if let Some(stop) = attempt.row.stopped_at {
        let reason = attempt.row.reason.as_deref().unwrap_or("stopped");
        let text = if attempt.row.preempted {
            format!("attempt {} preempted: {reason}", attempt.number)
        } else {
            format!("attempt {} ended: {reason}", attempt.number)
        };
        // After every line at or before the stop (the preemption signal comes first).
        let at = out.partition_point(|r| r.time() <= stop);
        out.insert(
            at,
            LogRow::Mark {
                time: stop,
                attempt: attempt.number,
                preempted: attempt.row.preempted,
                text,
            },
        );
    }
    out
}

/// What a log read says when some of CloudWatch Logs' answers were not all UTF-8 (a training
/// script printed such bytes): they are shown, with U+FFFD in place of each invalid sequence.
pub fn not_utf8_note(attempt: usize, answers: usize) -> Option<String> {
    (answers > 0).then(|| {
        format!(
            "… attempt {attempt}: {answers} answer(s) of CloudWatch Logs held bytes that are not \
             UTF-8; each invalid sequence is shown as \u{fffd}"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attempt(preempted: bool) -> NumberedAttempt {
        NumberedAttempt {
            number: 2,
            row: AttemptRow {
                resource_id: "arn:aws:sagemaker:us-east-1:1:training-job/AWSBatchjobabc".into(),
                started_at: Some(1_000),
                stopped_at: Some(5_000),
                reason: Some("Cross-share preemption triggered".into()),
                preempted,
            },
        }
    }

    #[test]
    fn the_preemption_is_marked_after_the_signal_and_hostile_text_is_cleaned() {
        let a = attempt(true);
        assert_eq!(stream_prefix(&a.row.resource_id), "AWSBatchjobabc/");
        let events = vec![
            (1_000, "start".to_string()),
            (4_000, "received SIGTERM\n".to_string()),
            (6_000, "late\x1b[2Jline\nsecond".to_string()),
        ];
        let rows = rows(&a, &events);
        assert_eq!(rows.len(), 5);
        assert!(matches!(
            &rows[2],
            LogRow::Mark {
                preempted: true,
                time: 5_000,
                ..
            }
        ));
        assert!(
            rows[2]
                .render()
                .contains("── attempt 2 preempted: Cross-share")
        );
        let hostile = rows[3].render();
        assert!(!hostile.contains('\x1b') && hostile.contains("late\u{fffd}[2Jline"));
        assert!(
            rows[4].render().ends_with("#2 ↳ second"),
            "{}",
            rows[4].render()
        );
        // A message that carries a line shaped as another event's cannot pass it off as one.
        let forged = super::rows(
            &a,
            &[(
                1_000,
                "ok\n2026-02-02 02:40:00Z #1 checkpoint saved".to_string(),
            )],
        );
        let shown: Vec<String> = forged.iter().map(LogRow::render).collect();
        assert!(
            shown[1].contains(" #2 ↳ 2026-02-02 02:40:00Z #1 checkpoint saved"),
            "{shown:?}"
        );
        assert!(!shown[0].contains('↳'), "{shown:?}");
        assert!(!matches!(
            super::rows(&attempt(false), &events)[2],
            LogRow::Mark {
                preempted: true,
                ..
            }
        ));
    }

    #[test]
    fn attempts_are_numbered_oldest_first() {
        let a = attempt(true).row;
        let mut b = a.clone();
        b.started_at = Some(9_000);
        let n = numbered(&[b.clone(), a.clone()]);
        assert_eq!((n[0].number, n[0].row.started_at), (1, Some(1_000)));
        assert_eq!((n[1].number, n[1].row.started_at), (2, Some(9_000)));
    }
}
