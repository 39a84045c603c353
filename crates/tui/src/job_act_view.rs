//! The lines of the dialogs acting on jobs ([`super::job_act`]): the jobs, the fields, and
//! every job's result.

use ratatui::text::{Line, Span};

use super::effects::JobResult;
use super::field;
use super::job_act::{JobAct, What, result_words};
use super::keymap::{Action, KeyMap, Mode};
use super::text::clean;
use super::theme::{Role, Theme};

/// Jobs listed by name before "and N more".
const LISTED: usize = 8;

/// The jobs the dialog acts on (and the marked ones no longer in the data).
pub fn head(d: &JobAct, theme: &Theme) -> Vec<Line<'static>> {
    let muted = theme.style(Role::Muted);
    let n = d.jobs.len();
    let mut out = vec![Line::from(vec![
        Span::styled("jobs     ", muted),
        Span::styled(
            format!("{n} job{}", if n == 1 { "" } else { "s" }),
            theme.style(Role::Accent),
        ),
        Span::styled(format!(" in {}", clean(&d.queue)), muted),
    ])];
    for j in d.jobs.iter().take(LISTED) {
        out.push(Line::from(vec![
            Span::raw(format!("  {}", clean(&j.name))),
            Span::styled(
                format!(
                    " ({}) · share {} · priority {}",
                    clean(&j.id),
                    clean(&j.share),
                    j.priority
                ),
                muted,
            ),
        ]));
    }
    if n > LISTED {
        out.push(Line::from(Span::styled(
            format!("  and {} more", n - LISTED),
            muted,
        )));
    }
    if !d.missing.is_empty() {
        out.push(Line::from(Span::styled(
            format!(
                "  marked but no longer in the data, not acted on: {}",
                d.missing
                    .iter()
                    .map(|m| clean(m).into_owned())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            theme.style(Role::Warning),
        )));
    }
    out.push(Line::from(""));
    out
}

/// The edit step: the fields, the cursor in the focused one, then the first problem or the
/// keys.
pub fn edit(d: &JobAct, out: &mut Vec<Line<'static>>, keymap: &KeyMap, theme: &Theme) {
    let muted = theme.style(Role::Muted);
    let key = |a: Action| keymap.first_key_in(Mode::Dialog, a);
    let value = match d.what {
        What::Terminate => None,
        What::Requeue => Some((
            "retry limit  ",
            "preemptions before it ends (0: at the next)",
        )),
        What::Priority => Some(("new priority ", "0–9999, for every job")),
    };
    let mut fields = Vec::new();
    if let Some((label, note)) = value {
        fields.push((0, label, &d.value, note));
    }
    fields.push((1, "why          ", &d.justification, "required"));
    fields.push((2, "change record", &d.change_record, "when the policy asks"));
    for (i, label, text, note) in fields {
        out.push(field::line(label, text, note, i == d.focused(), theme));
    }
    out.push(Line::from(""));
    out.push(match d.error() {
        Some(e) => Line::from(Span::styled(
            clean(e).into_owned(),
            theme.style(Role::Critical),
        )),
        None => Line::from(Span::styled(
            format!(
                "{} next field · {} preview · {} cancel",
                key(Action::NextField),
                key(Action::Confirm),
                key(Action::Cancel)
            ),
            muted,
        )),
    });
}

/// Every job's result, failures in the critical role, and who has not answered yet.
pub fn done(
    d: &JobAct,
    done: &[JobResult],
    out: &mut Vec<Line<'static>>,
    keymap: &KeyMap,
    theme: &Theme,
) {
    let failed = done.iter().filter(|r| result_words(r).1).count();
    out.push(Line::from(Span::styled(
        format!(
            "{} of {} answered · {} succeeded · {failed} failed",
            done.len(),
            d.jobs.len(),
            done.len() - failed
        ),
        theme.style(if failed > 0 {
            Role::Critical
        } else {
            Role::Healthy
        }),
    )));
    for j in &d.jobs {
        let line = match done.iter().find(|r| r.job_id == j.id) {
            Some(r) => {
                let (words, error) = result_words(r);
                Line::from(vec![
                    Span::styled(
                        if error { "  ✗ " } else { "  ✓ " },
                        theme.style(if error { Role::Critical } else { Role::Healthy }),
                    ),
                    Span::raw(format!("{}: ", clean(&j.name))),
                    Span::styled(
                        clean(&words).into_owned(),
                        theme.style(if error { Role::Critical } else { Role::Text }),
                    ),
                ])
            }
            None => Line::from(Span::styled(
                format!("  … {}: waiting for its answer", clean(&j.name)),
                theme.style(Role::Muted),
            )),
        };
        out.push(line);
    }
    out.push(Line::from(Span::styled(
        format!(
            "{} close",
            keymap.first_key_in(Mode::Dialog, Action::Cancel)
        ),
        theme.style(Role::Muted),
    )));
}
