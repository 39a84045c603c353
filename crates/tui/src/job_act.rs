//! What the dialogs acting on jobs share — terminate ([`super::terminate`]), requeue with a
//! retry cap ([`super::requeue`]) and a priority change of every marked job
//! ([`super::bulk_priority`]): the jobs (the marked ones, else the selected one), the fields
//! (justification, change record, and the dialog's own value), the one check
//! ([`Door::judge`]) of every job before the preview, one preview, one confirmation, and a
//! result per job (a failure named, nothing skipped in silence). It consumes every key while
//! open; when confirmed it emits effects; it never calls anything itself.

use crossterm::event::KeyEvent;
use ratatui::Frame;
use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};
use std::sync::Arc;

use super::data::Data;
use super::effects::{ActJob, ChangeOutcome, ChangeResult, Effect, JobResult};
use super::field::{self, Edit, Text as Input};
use super::keymap::{Action, KeyMap, Mode};
use super::text::clean;
use super::theme::{Role, Theme};
use quotatop_analysis::gate::{Act, Door, Subject};
use quotatop_model::QueueSnapshot;

/// Longest text accepted in a field.
const MAX_FIELD: usize = 200;

/// Which dialog it is: what it does with the jobs once confirmed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum What {
    Terminate,
    Requeue,
    Priority,
}

impl What {
    fn title(self) -> &'static str {
        match self {
            What::Terminate => " Terminate ",
            What::Requeue => " Requeue with a retry cap ",
            What::Priority => " Change priority of the marked jobs ",
        }
    }

    /// The dialog's own value (the first field), with its label, default and hint.
    fn value_field(self) -> Option<(&'static str, &'static str, &'static str)> {
        match self {
            What::Terminate => None,
            What::Requeue => Some(("retry limit  ", "2", "preemptions before it ends")),
            What::Priority => Some(("new priority ", "", "0–9999, for every job")),
        }
    }
}

/// A dialog's step.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Edit,
    /// The preview's lines (the act it was judged for, to confirm).
    Preview {
        act: Act,
        lines: Vec<String>,
    },
    /// Confirmed; waiting for the results.
    Sent {
        act: Act,
    },
    /// Every job's result.
    Done(Vec<JobResult>),
}

/// What the dialog wants after a key.
#[derive(Debug)]
pub enum Reply {
    Stay,
    Close,
    Submit(Vec<Effect>),
}

/// The preview a dialog computes for its act on the jobs of `q` (its lines), or why it cannot.
pub type PreviewFn = fn(&QueueSnapshot, &[ActJob], Act) -> Result<Vec<String>, String>;

/// The effects a dialog's confirmed act makes.
pub type SubmitFn = fn(&JobAct, &QueueSnapshot, Act) -> Result<Vec<Effect>, String>;

#[derive(Debug, Clone)]
pub struct JobAct {
    pub what: What,
    pub queue: String,
    /// The jobs acted on, as the data showed them when the dialog opened.
    pub jobs: Vec<ActJob>,
    /// Marked jobs no longer in the data: listed, not acted on.
    pub missing: Vec<String>,
    door: Arc<Door>,
    preview: PreviewFn,
    submit: SubmitFn,
    /// 0: the value (when the dialog has one), then justification, change record.
    field: usize,
    pub value: Input,
    pub justification: Input,
    pub change_record: Input,
    error: Option<String>,
    pub step: Step,
}

/// How a dialog is built.
pub struct Setup {
    pub what: What,
    pub queue: String,
    pub jobs: Vec<ActJob>,
    pub missing: Vec<String>,
    pub door: Arc<Door>,
    pub preview: PreviewFn,
    pub submit: SubmitFn,
}

impl JobAct {
    pub fn new(s: Setup) -> Self {
        let value = s.what.value_field().map_or("", |(_, d, _)| d);
        Self {
            what: s.what,
            queue: s.queue,
            jobs: s.jobs,
            missing: s.missing,
            door: s.door,
            preview: s.preview,
            submit: s.submit,
            field: usize::from(s.what.value_field().is_none()),
            value: field::text(value),
            justification: Input::default(),
            change_record: Input::default(),
            error: None,
            step: Step::Edit,
        }
    }

    pub fn justification_text(&self) -> String {
        self.justification.value().trim().to_string()
    }

    pub fn change_record_text(&self) -> Option<String> {
        Some(self.change_record.value().trim().to_string()).filter(|c| !c.is_empty())
    }

    pub fn on_key(&mut self, action: Option<Action>, key: &KeyEvent, data: &Data) -> Reply {
        match &self.step {
            Step::Edit => self.on_edit_key(action, key, data),
            Step::Preview { act, .. } => match action {
                Some(Action::Confirm) => {
                    let act = *act;
                    self.confirm(act, data)
                }
                Some(Action::Cancel) => {
                    self.step = Step::Edit;
                    Reply::Stay
                }
                _ => Reply::Stay,
            },
            // The results still arrive (the footer shows them).
            Step::Sent { .. } => match action {
                Some(Action::Cancel) => Reply::Close,
                _ => Reply::Stay,
            },
            Step::Done(_) => match action {
                Some(Action::Confirm | Action::Cancel) => Reply::Close,
                _ => Reply::Stay,
            },
        }
    }

    /// Judged again on the data of now, then sent.
    fn confirm(&mut self, act: Act, data: &Data) -> Reply {
        if let Err(e) = self.judge_all(act) {
            self.error = Some(e);
            self.step = Step::Edit;
            return Reply::Stay;
        }
        let Some(q) = self.queue_of(data) else {
            self.error = Some(format!(
                "queue {} is no longer in the data",
                clean(&self.queue)
            ));
            self.step = Step::Edit;
            return Reply::Stay;
        };
        match (self.submit)(self, q, act) {
            Ok(effects) => {
                self.step = Step::Sent { act };
                Reply::Submit(effects)
            }
            Err(e) => {
                self.error = Some(e);
                self.step = Step::Edit;
                Reply::Stay
            }
        }
    }

    fn fields(&self) -> usize {
        2 + usize::from(self.what.value_field().is_some())
    }

    fn on_edit_key(&mut self, action: Option<Action>, key: &KeyEvent, data: &Data) -> Reply {
        let first = usize::from(self.what.value_field().is_none());
        let n = self.fields();
        match action {
            Some(Action::Cancel) => return Reply::Close,
            Some(Action::NextField) => {
                self.field = first + (self.field - first + 1) % n;
                return Reply::Stay;
            }
            Some(Action::PrevField) => {
                self.field = first + (self.field - first + n - 1) % n;
                return Reply::Stay;
            }
            Some(Action::Confirm) => {
                self.open_preview(data);
                return Reply::Stay;
            }
            _ => {}
        }
        let text = match self.field {
            0 => &mut self.value,
            1 => &mut self.justification,
            _ => &mut self.change_record,
        };
        if field::edit(text, key, MAX_FIELD) == Edit::Changed {
            self.error = None;
        }
        Reply::Stay
    }

    /// The act the fields ask for, or what is wrong with the value typed.
    fn act(&self) -> Result<Act, String> {
        let v = self.value.value().trim();
        match self.what {
            What::Terminate => Ok(Act::Terminate),
            What::Requeue => v
                .parse::<u32>()
                .map(|retry_limit| Act::Requeue { retry_limit })
                .map_err(|_| format!("the retry limit {v:?} is not a whole number (0 or more)")),
            What::Priority => quotatop_analysis::preview::parse_priority(v)
                .map(|new| Act::Priority { new })
                .map_err(|e| e.to_string()),
        }
    }

    /// The one check every door calls, for every job: the first refusal, naming the job.
    fn judge_all(&self, act: Act) -> Result<(), String> {
        for j in &self.jobs {
            let judged = self.door.judge(
                act,
                Subject {
                    share: &j.share,
                    class_tag: j.class_tag.as_deref(),
                    priority: j.priority,
                },
                self.justification.value(),
                Some(self.change_record.value()),
            );
            if let Err(e) = judged {
                // A rule of the job's class names the job; the others read the same for all.
                let of_job = matches!(e, quotatop_analysis::gate::Refusal::Policy { .. });
                return Err(if of_job && self.jobs.len() > 1 {
                    format!("{} ({}): {e}", clean(&j.name), clean(&j.id))
                } else {
                    e.to_string()
                });
            }
        }
        Ok(())
    }

    fn queue_of<'d>(&self, data: &'d Data) -> Option<&'d QueueSnapshot> {
        data.queue(Some(&self.queue))
            .map(|(q, _)| q)
            .filter(|q| q.key() == self.queue)
    }

    /// Validates and judges the whole act, then computes the preview (else `error` says why).
    fn open_preview(&mut self, data: &Data) -> bool {
        let checked = self.act().and_then(|act| self.judge_all(act).map(|()| act));
        let act = match checked {
            Ok(a) => a,
            Err(e) => {
                self.error = Some(e);
                return false;
            }
        };
        let Some(q) = self.queue_of(data) else {
            self.error = Some(format!(
                "queue {} is no longer in the data",
                clean(&self.queue)
            ));
            return false;
        };
        match (self.preview)(q, &self.jobs, act) {
            Ok(lines) => {
                self.error = None;
                self.step = Step::Preview { act, lines };
                true
            }
            Err(e) => {
                self.error = Some(e);
                false
            }
        }
    }

    /// Results of its jobs (an act's, or one job's priority change): kept until every job
    /// has answered.
    pub fn finished(&mut self, results: &[JobResult]) {
        let mine: Vec<&JobResult> = results
            .iter()
            .filter(|r| self.jobs.iter().any(|j| j.id == r.job_id))
            .collect();
        if mine.is_empty() {
            return;
        }
        let mut done = match std::mem::replace(&mut self.step, Step::Edit) {
            Step::Done(done) => done,
            Step::Sent { .. } => Vec::new(),
            other => {
                self.step = other;
                return;
            }
        };
        for r in mine {
            done.retain(|d| d.job_id != r.job_id);
            done.push(r.clone());
        }
        self.step = Step::Done(done);
    }

    /// A priority change's answer, as one job's result.
    pub fn finished_change(&mut self, r: &ChangeResult) {
        let (text, _) = super::priority::result_text(r);
        let result = JobResult {
            job_id: r.job_id.clone(),
            job_name: r.job_name.clone(),
            result: r.result.clone(),
            detail: Some(text),
        };
        self.finished(std::slice::from_ref(&result));
    }

    /// Every job has its result.
    pub fn all_answered(&self) -> bool {
        matches!(&self.step, Step::Done(d) if d.len() >= self.jobs.len())
    }

    /// Something typed and not sent, or sent and not all answered.
    pub fn half_typed(&self) -> bool {
        match self.step {
            Step::Edit | Step::Preview { .. } => !self.justification.value().trim().is_empty(),
            Step::Sent { .. } => true,
            Step::Done(_) => !self.all_answered(),
        }
    }

    pub fn draw(&self, frame: &mut Frame, area: Rect, keymap: &KeyMap, theme: &Theme) {
        let width = area.width.saturating_sub(4).min(96);
        let lines = self.lines(keymap, theme);
        let inner = usize::from(width.saturating_sub(2).max(1));
        let rows: usize = lines
            .iter()
            .map(|l| super::priority::wrapped_rows(&line_text(l), inner))
            .sum();
        let height = u16::try_from(rows)
            .unwrap_or(u16::MAX)
            .saturating_add(2)
            .min(area.height);
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
            .title(Span::styled(self.what.title(), theme.style(Role::Title)));
        frame.render_widget(
            Paragraph::new(lines)
                .block(block)
                .wrap(Wrap { trim: false }),
            popup,
        );
    }

    fn lines(&self, keymap: &KeyMap, theme: &Theme) -> Vec<Line<'static>> {
        let muted = theme.style(Role::Muted);
        let key = |a: Action| keymap.first_key_in(Mode::Dialog, a);
        let mut out = super::job_act_view::head(self, theme);
        match &self.step {
            Step::Edit => super::job_act_view::edit(self, &mut out, keymap, theme),
            Step::Preview { lines, .. } => {
                for l in lines {
                    out.push(Line::from(clean(l).into_owned()));
                }
                out.push(Line::from(""));
                let n = self.jobs.len();
                out.push(Line::from(vec![
                    Span::styled(
                        format!(
                            "{} {} ({} job{}, one audit intent each{})",
                            key(Action::Confirm),
                            self.verb(),
                            n,
                            if n == 1 { "" } else { "s" },
                            if n > 1 && self.what == What::Terminate {
                                ", linked by one run id"
                            } else {
                                ""
                            }
                        ),
                        theme.style(Role::Warning),
                    ),
                    Span::styled(format!(" · {} back to edit", key(Action::Cancel)), muted),
                ]));
            }
            Step::Sent { .. } => out.push(Line::from(Span::styled(
                "applying… (an audit intent is written before each API call)",
                theme.style(Role::Accent),
            ))),
            Step::Done(done) => super::job_act_view::done(self, done, &mut out, keymap, theme),
        }
        out
    }

    fn verb(&self) -> &'static str {
        match self.what {
            What::Terminate => "terminate",
            What::Requeue => "requeue",
            What::Priority => "apply",
        }
    }

    /// The edit step's focused field (0: the value, 1: justification, 2: change record).
    pub fn focused(&self) -> usize {
        self.field
    }

    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }
}

/// A result in words, and whether it is a failure.
pub fn result_words(r: &JobResult) -> (String, bool) {
    match &r.result {
        Ok(ChangeOutcome::Succeeded { .. }) => (
            r.detail.clone().unwrap_or_else(|| "succeeded".to_string()),
            false,
        ),
        Ok(ChangeOutcome::Failed { error }) => (format!("failed: {error}"), true),
        Ok(ChangeOutcome::Reconciled { verdict }) => (format!("reconciled: {verdict}"), false),
        Err(e) => (format!("not made: {e}"), true),
    }
}

fn line_text(l: &Line) -> String {
    l.spans.iter().map(|s| s.content.as_ref()).collect()
}
