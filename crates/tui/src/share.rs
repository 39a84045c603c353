//! Share: one quota share's capacity, whom it borrows from and lends to, its running jobs, and
//! its queue in dispatch order with priority and waiting time. The screen's state and keys are
//! here; its head pane in [`head`], its two tables in [`tables`].

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::Paragraph;

use std::sync::Arc;

use super::data::Data;
use super::effects::{
    Effect, EffectResult, LastShareChange, ScreenWork, ShareChangeError, ShareChangeReader,
};
use super::keymap::Action;
use super::list::ListState;
use super::overview::badge_spans;
use super::registry::{Opens, ScreenEntry};
use super::screen::{self, Ctx, DrawCtx, Kind, Load, Open, Screen};
use super::text::clean;
use quotatop_analysis::{self as analysis, ShareUsage};

mod head;
mod tables;

pub use head::last_change_text;

/// Its entry in the screen registry (the `screens!` list in `lib.rs`).
pub const ENTRY: ScreenEntry = ScreenEntry {
    kind: Kind::Share,
    opens: Opens::FromAnother,
    key: None,
    command: None,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pane {
    Running,
    Queued,
}

#[derive(Debug)]
pub struct ShareScreen {
    queue: String,
    share: String,
    running: ListState,
    queued: ListState,
    focus: Pane,
    remembered: (Option<String>, Option<String>),
    /// The longest cleaned name and reason among the queued rows (in characters), computed
    /// with the rows, not per frame.
    queued_longest: (usize, usize),
    /// The last audited change of the share's configuration, once loaded (`None`: not asked,
    /// or no audit log).
    last_change: Option<Option<LastShareChange>>,
}

impl ShareScreen {
    pub fn new(queue: String, share: String) -> Self {
        Self {
            queue,
            share,
            running: ListState::default(),
            queued: ListState::default(),
            focus: Pane::Queued,
            remembered: (None, None),
            queued_longest: (0, 0),
            last_change: None,
        }
    }
}

/// The share's last audited configuration change, read from the audit log (`Ok(None)`: the log
/// has none).
#[derive(Debug, Clone, PartialEq, Eq)]
struct LastChangeAnswer {
    queue: String,
    share: String,
    result: Result<Option<LastShareChange>, ShareChangeError>,
}

/// The Share screen's own work: reading the audit log for the share's last change.
fn last_change_work(queue: &str, share: &str) -> Effect {
    let (queue, share) = (queue.to_string(), share.to_string());
    Effect::Screen(ScreenWork::new(
        Kind::Share,
        move |reader: Option<&Arc<dyn ShareChangeReader>>| LastChangeAnswer {
            queue: queue.clone(),
            share: share.clone(),
            result: match reader {
                Some(r) => r.last_change(&queue, &share),
                None => Err(ShareChangeError::NoLog),
            },
        },
    ))
}

impl Screen for ShareScreen {
    fn kind(&self) -> Kind {
        Kind::Share
    }

    fn load(&mut self, why: Load, _ctx: &Ctx) -> Vec<Effect> {
        if why == Load::Moved {
            return Vec::new();
        }
        vec![last_change_work(&self.queue, &self.share)]
    }

    fn on_result(&mut self, result: &EffectResult, _ctx: &Ctx) -> Vec<Effect> {
        if let Some(r) = result.answer::<LastChangeAnswer>(Kind::Share)
            && r.queue == self.queue
            && r.share == self.share
        {
            // Without an audit log (or when it cannot be read) the line is left out.
            self.last_change = r.result.clone().ok();
        }
        Vec::new()
    }

    fn remember(&mut self, data: &Data) {
        let Some((q, v)) = data.queue(Some(&self.queue)) else {
            return;
        };
        self.remembered = (
            self.running
                .selected_row()
                .and_then(|r| q.jobs.get(r))
                .map(|j| j.job.id.clone()),
            self.queued
                .selected_row()
                .and_then(|r| v.dispatch.get(r))
                .map(|j| j.job_id.clone()),
        );
    }

    fn refresh(&mut self, data: &Data, _queue: Option<&str>) {
        let (run_prev, queue_prev) = std::mem::take(&mut self.remembered);
        let Some((q, v)) = data
            .queue(Some(&self.queue))
            .filter(|(q, _)| q.key() == self.queue)
        else {
            self.running.set_rows(Vec::new(), |_| false);
            self.queued.set_rows(Vec::new(), |_| false);
            self.queued_longest = (0, 0);
            return;
        };
        let running: Vec<usize> = analysis::running_jobs(q, Some(&self.share))
            .into_iter()
            .filter_map(|t| v.job_index.get(&q.jobs, &t.job.id))
            .filter(|&i| {
                let j = &q.jobs[i].job;
                self.running
                    .filter
                    .matches([j.name.as_str(), j.id.as_str(), j.status.as_str()])
            })
            .collect();
        self.running.set_rows(running, |r| {
            run_prev.as_deref() == q.jobs.get(r).map(|j| j.job.id.as_str())
        });
        let queued: Vec<usize> = v
            .dispatch
            .iter()
            .enumerate()
            .filter(|(_, j)| j.share == self.share)
            .filter(|(_, j)| {
                self.queued.filter.matches([
                    j.name.as_str(),
                    j.job_id.as_str(),
                    j.reason.as_deref().unwrap_or(""),
                ])
            })
            .map(|(i, _)| i)
            .collect();
        self.queued_longest = screen::longest_name_and_reason(
            queued
                .iter()
                .filter_map(|&r| v.dispatch.get(r))
                .map(|j| (j.name.as_str(), j.reason.as_deref())),
        );
        self.queued.set_rows(queued, |r| {
            queue_prev.as_deref() == v.dispatch.get(r).map(|j| j.job_id.as_str())
        });
    }

    fn draw(&self, frame: &mut Frame, area: Rect, ctx: &DrawCtx) {
        let theme = ctx.theme;
        let Some((q, v)) = ctx
            .data
            .queue(Some(&self.queue))
            .filter(|(q, _)| q.key() == self.queue)
        else {
            frame.render_widget(
                Paragraph::new(format!("queue {} is gone", clean(&self.queue))),
                area,
            );
            return;
        };
        let usage: Vec<&ShareUsage> = v.usage.iter().filter(|u| u.share == self.share).collect();
        let badges = badge_spans(
            v.badges.get(&self.share),
            area.width.saturating_sub(2) as usize,
            theme,
        );
        let header_h = (usage.len() as u16
            + 4
            + u16::from(!badges.is_empty())
            // "last change …", and its reason on a line of its own when there is one.
            + match &self.last_change {
                Some(Some(_)) => 2,
                Some(None) => 1,
                None => 0,
            })
        .min(area.height / 2);
        let [head, running_area, queued_area] = Layout::vertical([
            Constraint::Length(header_h),
            Constraint::Percentage(40),
            Constraint::Fill(1),
        ])
        .areas(area);
        let mut lines = Vec::new();
        if !badges.is_empty() {
            lines.push(Line::from(badges));
        }
        lines.extend(self.head_lines(q, v, &usage, head.width, theme));
        self.draw_head(frame, head, lines, &q.key(), theme);
        self.draw_running(frame, running_area, q, theme);
        self.draw_queued(frame, queued_area, v, theme);
    }

    fn list(&mut self) -> Option<&mut ListState> {
        Some(match self.focus {
            Pane::Running => &mut self.running,
            Pane::Queued => &mut self.queued,
        })
    }

    fn list_ref(&self) -> Option<&ListState> {
        Some(match self.focus {
            Pane::Running => &self.running,
            Pane::Queued => &self.queued,
        })
    }

    fn has_panes(&self) -> bool {
        true
    }

    fn on_action(&mut self, action: Action, _ctx: &Ctx) -> Vec<Effect> {
        if action == Action::NextPane {
            self.focus = match self.focus {
                Pane::Running => Pane::Queued,
                Pane::Queued => Pane::Running,
            };
        }
        Vec::new()
    }

    fn enter(&self, data: &Data, _queue: Option<&str>) -> Option<Open> {
        let (q, v) = data.queue(Some(&self.queue))?;
        let id = match self.focus {
            Pane::Running => q.jobs.get(self.running.selected_row()?)?.job.id.clone(),
            Pane::Queued => v.dispatch.get(self.queued.selected_row()?)?.job_id.clone(),
        };
        Some(Open::Job {
            queue: self.queue.clone(),
            id,
        })
    }
}
