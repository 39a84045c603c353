//! The priority dialog: new value (validated as typed), justification, change record when the
//! policy asks for one, a preview computed on the current snapshot, then explicit confirmation.
//! It consumes every key while open and, when confirmed, emits a [`ChangeRequest`]; it never
//! calls anything itself.

use crossterm::event::KeyEvent;
use ratatui::Frame;
use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

mod view;

pub use view::{result_text, wrapped_rows};

use super::data::Data;
use super::effects::{ChangeOutcome, ChangeRequest, ChangeResult};
use super::field::{self, Edit, Text as Input};
use super::keymap::{Action, KeyMap};
use super::text::clean;
use super::theme::{Role, Theme};
use quotatop_analysis::gate::{Act, Door, Subject};
use quotatop_analysis::preview::{self, Changed, Preview, change_record_reason, parse_priority};
use quotatop_model::{JobStatus, TrackedJob};
use std::sync::Arc;

/// Longest text accepted in a field.
const MAX_FIELD: usize = 200;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Priority,
    Justification,
    ChangeRecord,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Edit,
    Preview(Box<Preview>),
    /// Confirmed; waiting for the background task.
    Sent,
    Done {
        text: String,
        error: bool,
    },
}

/// What the dialog wants after a key.
#[derive(Debug)]
pub enum Reply {
    Stay,
    Close,
    Submit(Box<ChangeRequest>),
}

#[derive(Debug, Clone)]
pub struct PriorityDialog {
    pub queue: String,
    pub job_id: String,
    job_name: String,
    share: String,
    status: JobStatus,
    current: u32,
    /// The job's `quotatop:class` tag: what the class policy reads its class from.
    class_tag: Option<String>,
    /// The rules every door checks a change against, with this console's operator.
    door: Arc<Door>,
    pub field: Field,
    /// The three fields, each with its own cursor (tui-input: moving and deleting by
    /// character, word and line, by the width characters take on screen).
    pub priority: Input,
    pub justification: Input,
    pub change_record: Input,
    /// Shown after Enter when the change is not acceptable.
    error: Option<String>,
    /// The preview on screen was recomputed on newer data and its prediction changed: how
    /// (highlighted until the operator confirms or goes back).
    changed: Vec<Changed>,
    /// How far the preview can be trusted where the data comes from (against AWS: as
    /// modelled); `None` on the emulator.
    note: Option<&'static str>,
    pub step: Step,
}

impl PriorityDialog {
    pub fn new(queue: &str, job: &TrackedJob, door: Arc<Door>) -> Self {
        Self {
            queue: queue.to_string(),
            job_id: job.job.id.clone(),
            job_name: job.job.name.clone(),
            share: job.job.share.clone(),
            status: job.job.status,
            current: job.job.priority,
            class_tag: job.job.class_tag.clone(),
            door,
            field: Field::Priority,
            priority: Input::default(),
            justification: Input::default(),
            change_record: Input::default(),
            error: None,
            changed: Vec::new(),
            note: None,
            step: Step::Edit,
        }
    }

    /// A change is under way that quitting would drop: something typed and not yet sent, or
    /// sent and its result not back yet.
    pub fn half_typed(&self) -> bool {
        match self.step {
            Step::Edit | Step::Preview(_) => {
                [&self.priority, &self.justification, &self.change_record]
                    .iter()
                    .any(|f| !f.value().trim().is_empty())
            }
            Step::Sent => true,
            Step::Done { .. } => false,
        }
    }

    /// The priority field's problem as typed (`None` when it reads as a valid number).
    pub fn priority_error(&self) -> Option<String> {
        parse_priority(self.priority.value())
            .err()
            .map(|e| e.to_string())
    }

    /// Why the typed change needs a change record, if it does.
    pub fn record_needed(&self) -> Option<String> {
        let new = parse_priority(self.priority.value()).ok()?;
        change_record_reason(self.current, new, &self.door.rules.priority)
    }

    pub fn on_key(&mut self, action: Option<Action>, key: &KeyEvent, data: &Data) -> Reply {
        match &self.step {
            Step::Edit => self.on_edit_key(action, key, data),
            Step::Preview(p) => match action {
                Some(Action::Confirm) => {
                    // The data may have moved on while the preview was read: confirm only
                    // what it still predicts, else show the new prediction first.
                    let shown = (**p).clone();
                    if !self.open_preview(data) {
                        // The job finished or left the data: the edit step says why.
                        self.step = Step::Edit;
                        self.changed.clear();
                        return Reply::Stay;
                    }
                    let Step::Preview(fresh) = &self.step else {
                        // The job finished or left the data: the edit step says why.
                        return Reply::Stay;
                    };
                    // Only what the operator decided on counts: the job's priority, position,
                    // effect and victims (not jobs arriving behind it, nor times running).
                    // Unchanged, it is applied with today's figures (times running and hours
                    // at risk grow while the preview is read), which the audit keeps.
                    self.changed = fresh.changes_since(&shown);
                    if !self.changed.is_empty() {
                        return Reply::Stay;
                    }
                    let Step::Preview(p) = &self.step else {
                        return Reply::Stay;
                    };
                    let req = ChangeRequest {
                        queue: self.queue.clone(),
                        justification: self.justification.value().trim().to_string(),
                        change_record: Some(self.change_record.value().trim().to_string())
                            .filter(|c| !c.is_empty()),
                        preview: (**p).clone(),
                        confirmed: shown,
                        batch: None,
                    };
                    self.step = Step::Sent;
                    Reply::Submit(Box::new(req))
                }
                Some(Action::Cancel) => {
                    self.step = Step::Edit;
                    self.changed.clear();
                    Reply::Stay
                }
                _ => Reply::Stay,
            },
            Step::Sent => match action {
                // The result still arrives (and is shown in the footer).
                Some(Action::Cancel) => Reply::Close,
                _ => Reply::Stay,
            },
            Step::Done { .. } => match action {
                Some(Action::Confirm | Action::Cancel) => Reply::Close,
                _ => Reply::Stay,
            },
        }
    }

    fn on_edit_key(&mut self, action: Option<Action>, key: &KeyEvent, data: &Data) -> Reply {
        match action {
            Some(Action::Cancel) => return Reply::Close,
            Some(Action::NextField) => {
                self.field = match self.field {
                    Field::Priority => Field::Justification,
                    Field::Justification => Field::ChangeRecord,
                    Field::ChangeRecord => Field::Priority,
                };
                return Reply::Stay;
            }
            Some(Action::PrevField) => {
                self.field = match self.field {
                    Field::Priority => Field::ChangeRecord,
                    Field::Justification => Field::Priority,
                    Field::ChangeRecord => Field::Justification,
                };
                return Reply::Stay;
            }
            Some(Action::Confirm) => {
                self.open_preview(data);
                return Reply::Stay;
            }
            _ => {}
        }
        let text = match self.field {
            Field::Priority => &mut self.priority,
            Field::Justification => &mut self.justification,
            Field::ChangeRecord => &mut self.change_record,
        };
        if field::edit(text, key, MAX_FIELD) == Edit::Changed {
            self.error = None;
        }
        Reply::Stay
    }

    /// New live data: the header's status follows the job (a change applied and the job
    /// started: not still "RUNNABLE"); the priority it was opened at stays what the change
    /// is judged against.
    pub fn follow(&mut self, data: &Data) {
        if let Some(t) = data.job(Some(&self.queue), &self.job_id) {
            self.status = t.job.status;
        }
    }

    /// Validates the whole change and computes the preview on the current snapshot; whether
    /// it could (else `error` says why).
    fn open_preview(&mut self, data: &Data) -> bool {
        // The header and the change-record rule follow the job as the data now shows it.
        if let Some(t) = data.job(Some(&self.queue), &self.job_id) {
            self.status = t.job.status;
            self.current = t.job.priority;
        }
        self.note = data
            .snapshot
            .as_ref()
            .and_then(|s| preview::model_note(s.source.endpoint.as_deref()));
        // The one check every door calls (the CLI's, the runner's): read-only mode, the change
        // as typed, and the class policy, refused here in the same words before any preview.
        let checked = parse_priority(self.priority.value())
            .map_err(|e| e.to_string())
            .and_then(|new| {
                self.door
                    .judge(
                        Act::Priority { new },
                        Subject {
                            share: &self.share,
                            class_tag: self.class_tag.as_deref(),
                            priority: self.current,
                        },
                        self.justification.value(),
                        Some(self.change_record.value()),
                    )
                    .map(|_| new)
                    .map_err(|e| e.to_string())
            });
        let new = match checked {
            Ok(n) => n,
            Err(e) => {
                self.error = Some(e);
                return false;
            }
        };
        let Some((q, _)) = data
            .queue(Some(&self.queue))
            .filter(|(q, _)| q.key() == self.queue)
        else {
            self.error = Some(format!("queue {} is no longer in the data", self.queue));
            return false;
        };
        match preview::preview(q, &self.job_id, new) {
            Ok(p) => {
                self.error = None;
                self.step = Step::Preview(Box::new(p));
                true
            }
            Err(e) => {
                self.error = Some(e.to_string());
                false
            }
        }
    }

    /// The background task's answer.
    pub fn finished(&mut self, r: &ChangeResult) {
        if r.job_id == self.job_id && self.step == Step::Sent {
            let (text, error) = result_text(r);
            if matches!(r.result, Ok(ChangeOutcome::Succeeded { .. })) {
                self.current = r.new_priority;
            }
            self.step = Step::Done { text, error };
        }
    }

    pub fn draw(&self, frame: &mut Frame, area: Rect, keymap: &KeyMap, theme: &Theme) {
        let width = area.width.saturating_sub(4).min(84);
        let inner = width.saturating_sub(2).max(1) as usize;
        let rows_of = |lines: &[Line]| -> usize {
            lines
                .iter()
                .map(|l| {
                    let text: String = l.spans.iter().map(|s| s.content.as_ref()).collect();
                    view::wrapped_rows(&text, inner)
                })
                .sum()
        };
        let max_rows = area.height.saturating_sub(2) as usize;
        // Victims take the rows the rest leaves (one line each, never wrapped); the last
        // says how many more when they do not all fit.
        let without = rows_of(&self.lines(keymap, theme, inner, 0));
        let victims = self.victim_count();
        let room = max_rows.saturating_sub(without);
        let lines = self.lines(keymap, theme, inner, room.max(1).min(victims.max(1)));
        // Rows after wrapping at words, so the last line (the confirmation) is never cut off.
        let rows = rows_of(&lines);
        let height = (rows as u16).saturating_add(2).min(area.height);
        let [row] = Layout::vertical([Constraint::Length(height)])
            .flex(Flex::Center)
            .areas(area);
        let [popup] = Layout::horizontal([Constraint::Length(width)])
            .flex(Flex::Center)
            .areas(row);
        frame.render_widget(Clear, popup);
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(theme.style(Role::Border))
            .title(Span::styled(" Change priority ", theme.style(Role::Title)));
        frame.render_widget(
            Paragraph::new(lines)
                .block(block)
                .wrap(Wrap { trim: false }),
            popup,
        );
    }

    /// Victims of the preview on screen.
    fn victim_count(&self) -> usize {
        match &self.step {
            Step::Preview(p) => p.preemptions.candidates.len(),
            _ => 0,
        }
    }

    /// The dialog's lines for `inner` columns, with at most `victim_rows` victim lines.
    fn lines(
        &self,
        keymap: &KeyMap,
        theme: &Theme,
        inner: usize,
        victim_rows: usize,
    ) -> Vec<Line<'static>> {
        let muted = theme.style(Role::Muted);
        let key = |a: Action| keymap.first_key_in(super::keymap::Mode::Dialog, a);
        let mut out = vec![
            Line::from(vec![
                Span::styled("job      ", muted),
                Span::raw(clean(&self.job_name).into_owned()),
                Span::styled(format!(" ({})", clean(&self.job_id)), muted),
            ]),
            Line::from(vec![
                Span::styled("share    ", muted),
                Span::raw(clean(&self.share).into_owned()),
                Span::styled(" · status ", muted),
                Span::raw(self.status.as_str()),
                Span::styled(" · current priority ", muted),
                Span::styled(self.current.to_string(), theme.style(Role::Accent)),
            ]),
            Line::from(""),
        ];
        match &self.step {
            Step::Edit => self.edit_lines(&mut out, keymap, theme),
            Step::Preview(p) => {
                let shown = view::PreviewView {
                    preview: p,
                    justification: self.justification.value().trim(),
                    change_record: Some(self.change_record.value().trim())
                        .filter(|c| !c.is_empty()),
                    changed: &self.changed,
                    note: self.note,
                    width: inner,
                    victim_rows,
                };
                out.extend(view::preview_lines(&shown, theme));
                out.push(Line::from(""));
                out.push(Line::from(vec![
                    Span::styled(
                        format!("{} apply this change", key(Action::Confirm)),
                        theme.style(Role::Warning),
                    ),
                    Span::styled(format!(" · {} back to edit", key(Action::Cancel)), muted),
                ]));
            }
            Step::Sent => {
                out.push(Line::from(Span::styled(
                    "applying… (audit intent written before the API call)",
                    theme.style(Role::Accent),
                )));
            }
            Step::Done { text, error } => {
                out.push(Line::from(Span::styled(
                    clean(text).into_owned(),
                    theme.style(if *error {
                        Role::Critical
                    } else {
                        Role::Healthy
                    }),
                )));
                out.push(Line::from(Span::styled(
                    format!("{} close", key(Action::Cancel)),
                    muted,
                )));
            }
        }
        out
    }

    /// The edit step: the three fields, the cursor in the focused one, then the first problem
    /// or the keys.
    fn edit_lines(&self, out: &mut Vec<Line<'static>>, keymap: &KeyMap, theme: &Theme) {
        let muted = theme.style(Role::Muted);
        let key = |a: Action| keymap.first_key_in(super::keymap::Mode::Dialog, a);
        let record_label = match self.record_needed() {
            Some(why) => format!("required: {why}"),
            None => "optional".to_string(),
        };
        for (field, label, text, note) in [
            (
                Field::Priority,
                "new priority ",
                &self.priority,
                "0–9999".to_string(),
            ),
            (
                Field::Justification,
                "why          ",
                &self.justification,
                "required".to_string(),
            ),
            (
                Field::ChangeRecord,
                "change record",
                &self.change_record,
                record_label,
            ),
        ] {
            out.push(field::line(label, text, note, field == self.field, theme));
        }
        out.push(Line::from(""));
        let problem = self.error.clone().or_else(|| {
            (!self.priority.value().is_empty())
                .then(|| self.priority_error())
                .flatten()
        });
        out.push(match problem {
            Some(e) => Line::from(Span::styled(
                clean(&e).into_owned(),
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::{KeyCode, KeyModifiers};

    fn key(code: KeyCode, m: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, m)
    }

    /// The fields edit anywhere, not only at the end: ←/→, Home/End, Delete, Ctrl-W and
    /// Ctrl-U, one character at a time whatever its width.
    #[test]
    fn fields_have_a_cursor() {
        let job =
            quotatop_analysis::fixture::job("a", "s", "ml.g5.xlarge", 1, JobStatus::Runnable, 1, 0);
        let mut d = PriorityDialog::new("q", &job, Arc::default());
        let data = Data::default();
        let none = KeyModifiers::NONE;
        let press = |d: &mut PriorityDialog, code: KeyCode, m: KeyModifiers| {
            d.on_key(None, &key(code, m), &data);
        };
        for c in "12".chars() {
            press(&mut d, KeyCode::Char(c), none);
        }
        press(&mut d, KeyCode::Left, none);
        press(&mut d, KeyCode::Char('3'), none);
        assert_eq!(d.priority.value(), "132");
        press(&mut d, KeyCode::Home, none);
        press(&mut d, KeyCode::Delete, none);
        assert_eq!(d.priority.value(), "32");
        press(&mut d, KeyCode::End, none);
        press(&mut d, KeyCode::Backspace, none);
        assert_eq!(d.priority.value(), "3");
        d.field = Field::Justification;
        for c in "paper déadline 日本".chars() {
            press(&mut d, KeyCode::Char(c), none);
        }
        press(&mut d, KeyCode::Char('w'), KeyModifiers::CONTROL);
        assert_eq!(d.justification.value(), "paper déadline ");
        press(&mut d, KeyCode::Left, none);
        press(&mut d, KeyCode::Left, none);
        press(&mut d, KeyCode::Char('X'), KeyModifiers::SHIFT);
        assert_eq!(d.justification.value(), "paper déadlinXe ");
        press(&mut d, KeyCode::Char('u'), KeyModifiers::CONTROL);
        assert_eq!(d.justification.value(), "");
        // The other fields kept their text.
        assert_eq!(d.priority.value(), "3");
    }
}
