//! The rows the log pane draws, each with its colour role: the attempt's log rows cleaned, the
//! preemption signal and the attempt's end marked, or the pane's message; and how many of them
//! match the search.

use super::super::text::clean;
use super::super::theme::Role;
use super::{MAX_LINES, State};
use quotatop_analysis::{LogRow, NumberedAttempt, log_rows, not_utf8_note};

/// The width the pane's messages (an error, its next step) are wrapped to.
const WRAP: usize = 100;

/// The marker of the preemption signal in a training log.
pub const SIGNAL: &str = "received SIGTERM";

/// How many of `lines` contain `search`, ignoring case (0 for an empty search).
pub(super) fn count_matches(lines: &[(String, Role)], search: &str) -> usize {
    let needle = search.to_lowercase();
    if needle.is_empty() {
        return 0;
    }
    lines
        .iter()
        .filter(|(t, _)| t.to_lowercase().contains(&needle))
        .count()
}

/// The pane's lines for `attempt` in `state`, with their colour roles: the log rows cleaned
/// (through [`LogRow::render`]), the preemption signal critical, the attempt's end a warning.
pub(super) fn lines(
    attempt: Option<&NumberedAttempt>,
    state: &State,
    name: &str,
    status: &str,
) -> Vec<(String, Role)> {
    let Some(a) = attempt else {
        return vec![(
            format!(
                "job {} has no attempt yet ({status}): no training job has started, so there is \
                 no log",
                clean(name)
            ),
            Role::Muted,
        )];
    };
    match state {
        State::Loading => vec![(
            format!(
                "reading the log of attempt {} (training job {})…",
                a.number,
                clean(quotatop_analysis::training_job_name(&a.row.resource_id))
            ),
            Role::Muted,
        )],
        // Words, not a log: wrapped to the pane (the reason and the next step both shown).
        State::Failed(e) => super::super::policy::wrap(&clean(&e.to_string()), WRAP, 2)
            .into_iter()
            .map(|l| (l, Role::Critical))
            .collect(),
        State::Ready(t) => {
            let mut out: Vec<(String, Role)> =
                log_rows(a, &t.events).iter().map(row_line).collect();
            if t.events.is_empty() {
                out.insert(
                    0,
                    (
                        format!(
                            "no log lines for attempt {} yet: SageMaker writes them once the \
                             training job runs (f follows)",
                            a.number
                        ),
                        Role::Muted,
                    ),
                );
            }
            if let Some(note) = not_utf8_note(a.number, t.not_utf8) {
                out.push((note, Role::Muted));
            }
            if t.truncated {
                out.push((
                    format!(
                        "… more than {MAX_LINES} lines; the first {MAX_LINES} shown \
                         (`quotatop logs JOB --since …` reads later ones)"
                    ),
                    Role::Muted,
                ));
            }
            out
        }
    }
}

fn row_line(r: &LogRow) -> (String, Role) {
    // `render` cleans the untrusted text, as `quotatop logs` prints it.
    let text = r.render();
    let role = match r {
        LogRow::Mark {
            preempted: true, ..
        } => Role::Warning,
        LogRow::Mark { .. } => Role::Muted,
        LogRow::Line { text: t, .. } if t.contains(SIGNAL) => Role::Critical,
        LogRow::Line { .. } => Role::Text,
    };
    (text, role)
}
