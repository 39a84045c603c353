//! Marks and the dialogs acting on jobs (terminate, requeue, a priority change of the marked
//! jobs): the keys that open them, the keys while one is open, and their results.

use crossterm::event::KeyEvent;

use super::App;
use crate::effects::{ActJob, EffectResult};
use crate::job_act::{JobAct, Reply, What};
use crate::keymap::{Action, Mode};
use crate::marks::Marks;
use crate::text::clean;

impl App {
    /// The dialog acting on jobs, while open. Only tests read it: public for the
    /// integration tests (`tui_marks.rs`), which check its step and results.
    pub fn job_act(&self) -> Option<&JobAct> {
        self.acting.as_ref()
    }

    /// The marked jobs. Only tests read it: public for the integration tests.
    pub fn marks(&self) -> &Marks {
        &self.marks
    }

    /// The current queue's key (the first queue's when none is chosen).
    fn queue_key(&self) -> Option<String> {
        self.shown()
            .queue(self.queue.as_deref())
            .map(|(q, _)| q.key())
    }

    /// `space`, `ctrl-space`, `U` on a screen that marks (Jobs, Preemptions).
    pub(super) fn on_mark(&mut self, action: Action) {
        if !self.current().own_actions().contains(&action) {
            return self.flash_error("marks are made on Jobs and Preemptions");
        }
        let Some(queue) = self.queue_key() else {
            return self.flash_error("no queue yet");
        };
        match action {
            Action::Mark => {
                let Some((q, id)) = self
                    .current()
                    .selected_job(self.shown(), self.queue.as_deref())
                else {
                    return self.flash_error("no job under the cursor to mark");
                };
                self.marks.toggle(&q, &id);
                self.with_nav(|l| l.move_by(1));
            }
            Action::MarkAll => {
                let shown = self.current().shown_jobs(self.shown());
                let n = self
                    .marks
                    .mark_all(shown.iter().map(|id| (queue.as_str(), id.as_str())));
                self.flash_info(format!("{n} more marked"));
            }
            _ => {
                let n = self.marks.clear(Some(&queue));
                self.flash_info(format!("{n} unmarked"));
            }
        }
    }

    /// Why a change cannot be made from here now (read-only, a broken config, the past).
    fn change_refused(&self, what: &str) -> Option<String> {
        if self.status.read_only {
            return Some(format!(
                "read-only mode: {what} is disabled (read-only is set by {})",
                self.status
                    .read_only_from
                    .as_deref()
                    .unwrap_or("--read-only or read_only = true")
            ));
        }
        if let Some(why) = &self.status.config_broken {
            return Some(format!(
                "changes are refused until the config file is fixed (a broken file never \
                 loosens policy): {why}"
            ));
        }
        self.travel.past().is_some().then(|| {
            format!(
                "you are looking at the past: {} returns to live data, where jobs can change",
                self.keymap.first_key(Action::Live)
            )
        })
    }

    /// The jobs an action applies to: the marked ones of the current queue, else the one
    /// under the cursor; and the marked ones no longer in the data.
    fn targets(&self) -> Option<(String, Vec<ActJob>, Vec<String>)> {
        let queue = self.queue_key()?;
        let marked: Vec<String> = self.marks.of_queue(&queue).map(str::to_string).collect();
        let ids = if marked.is_empty() {
            let (_, id) = self
                .current()
                .selected_job(&self.data, self.queue.as_deref())?;
            vec![id]
        } else {
            marked
        };
        let (mut jobs, mut missing) = (Vec::new(), Vec::new());
        for id in ids {
            match self.data.job(Some(&queue), &id) {
                Some(t) => jobs.push(ActJob {
                    id: t.job.id.clone(),
                    name: t.job.name.clone(),
                    arn: t.arn.clone(),
                    share: t.job.share.clone(),
                    class_tag: t.job.class_tag.clone(),
                    priority: t.job.priority,
                    preview: String::new(),
                }),
                None => missing.push(id),
            }
        }
        Some((queue, jobs, missing))
    }

    /// `ctrl-k`, `R`, and `p` when jobs are marked: the dialog on the marked jobs (else the
    /// selected one). `false`: nothing marked and `p` is the one-job dialog's.
    pub(super) fn open_job_act(&mut self, what: What) -> bool {
        let marked = self.queue_key().is_some_and(|q| self.marks.count(&q) > 0);
        if what == What::Priority && !marked {
            return false;
        }
        let words = match what {
            What::Terminate => "terminating jobs",
            What::Requeue => "requeueing jobs",
            What::Priority => "priority changes",
        };
        if let Some(why) = self.change_refused(words) {
            self.flash_error(why);
            return true;
        }
        let Some((queue, jobs, missing)) = self.targets() else {
            self.flash_error("select or mark a job first (Jobs, Preemptions or a job)");
            return true;
        };
        if jobs.is_empty() {
            self.flash_error(format!(
                "the marked jobs are no longer in the data ({}): {} unmarks them",
                missing.join(", "),
                self.keymap.first_key(Action::ClearMarks)
            ));
            return true;
        }
        let door = std::sync::Arc::clone(&self.door);
        self.acting = Some(match what {
            What::Terminate => crate::terminate::dialog(queue, jobs, missing, door),
            What::Requeue => crate::requeue::dialog(queue, jobs, missing, door),
            What::Priority => crate::bulk_priority::dialog(queue, jobs, missing, door),
        });
        true
    }

    /// A key while the dialog is open (it takes every key; Ctrl-C, handled before, cancels
    /// it, not the console); `false` when none is open.
    pub(super) fn job_act_key(&mut self, key: &KeyEvent) -> bool {
        let Some(dialog) = &mut self.acting else {
            return false;
        };
        let action = self.keymap.action(Mode::Dialog, key);
        match dialog.on_key(action, key, &self.data) {
            Reply::Stay => {}
            Reply::Close => self.acting = None,
            Reply::Submit(effects) => self.effects.extend(effects),
        }
        true
    }

    /// Results of terminations, requeues and priority changes: to the dialog, and the jobs
    /// that succeeded are unmarked.
    pub(super) fn job_act_done(&mut self, result: &EffectResult) {
        let (queue, results) = match result {
            EffectResult::Act(r) => {
                let failed = r.jobs.iter().filter(|j| j.result.is_err()).count();
                let words = format!(
                    "{} {} job{}: {} done, {failed} not made{}",
                    r.act.verb(),
                    r.jobs.len(),
                    if r.jobs.len() == 1 { "" } else { "s" },
                    r.jobs.len() - failed,
                    r.audit_log
                        .as_deref()
                        .map_or_else(String::new, |l| format!(" (audit log {})", clean(l)))
                );
                self.flash = Some(crate::footer::Flash {
                    text: words,
                    error: failed > 0,
                });
                if let Some(d) = &mut self.acting {
                    d.finished(&r.jobs);
                }
                (
                    self.acting.as_ref().map(|d| d.queue.clone()),
                    r.jobs.clone(),
                )
            }
            EffectResult::Change(r) => {
                if let Some(d) = &mut self.acting {
                    d.finished_change(r);
                }
                let one = crate::effects::JobResult {
                    job_id: r.job_id.clone(),
                    job_name: r.job_name.clone(),
                    result: r.result.clone(),
                    detail: None,
                };
                (self.acting.as_ref().map(|d| d.queue.clone()), vec![one])
            }
            _ => return,
        };
        let Some(queue) = queue.or_else(|| self.queue_key()) else {
            return;
        };
        for r in results {
            if matches!(
                r.result,
                Ok(crate::effects::ChangeOutcome::Succeeded { .. })
            ) {
                self.marks.unmark(&queue, &r.job_id);
            }
        }
    }
}
