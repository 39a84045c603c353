//! The Share screen's tables: its running jobs and its queue in dispatch order, with their
//! columns.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Span;
use ratatui::widgets::Cell;

use super::super::jobs::status_style;
use super::super::screen::{self, Col};
use super::super::text::{clean, duration, elide};
use super::super::theme::{Role, Theme};
use super::{Pane, ShareScreen};
use quotatop_analysis as analysis;

/// The last steps of [`ShareScreen`]'s `draw`: the running jobs and the queue.
impl ShareScreen {
    /// The share's running jobs.
    pub(super) fn draw_running(
        &self,
        frame: &mut Frame,
        running_area: Rect,
        q: &quotatop_model::QueueSnapshot,
        theme: &Theme,
    ) {
        let now = analysis::now_of(q);
        let running_block = screen::block("Running".into(), Some(&self.running), &[], theme);
        let header = ["NAME", "STATUS", "PRI", "TYPE×N", "RUNNING", "PRE"].map(String::from);
        // Running jobs are bounded by the share's capacity: measured here, per frame.
        let longest = self
            .running
            .rows
            .iter()
            .filter_map(|&r| q.jobs.get(r))
            .map(|t| clean(&t.job.name).chars().count())
            .max()
            .unwrap_or(0);
        let widths = screen::layout(&running_columns(longest), running_area.width);
        let name_w = usize::from(widths[0]);
        screen::draw_table(
            frame,
            running_area,
            screen::TableView {
                block: running_block,
                header: &header,
                widths: &widths,
                list: &self.running,
                focused: self.focus == Pane::Running,
                marked: None,
            },
            theme,
            |r| {
                let Some(t) = q.jobs.get(r) else {
                    return Vec::new();
                };
                let j = &t.job;
                vec![
                    Cell::from(elide(&clean(&j.name), name_w)),
                    Cell::from(Span::styled(
                        j.status.as_str(),
                        status_style(j.status, theme),
                    )),
                    Cell::from(j.priority.to_string()),
                    Cell::from(format!(
                        "{}×{}",
                        screen::short_type(&j.instance_type),
                        j.instance_count
                    )),
                    Cell::from(screen::since(now, j.started_at.or(j.scheduled_at))),
                    Cell::from(Span::styled(
                        match j.preemption_count() {
                            0 => String::new(),
                            n => n.to_string(),
                        },
                        theme.style(Role::Preempted),
                    )),
                ]
            },
        );
    }

    /// The share's queued jobs in dispatch order.
    pub(super) fn draw_queued(
        &self,
        frame: &mut Frame,
        queued_area: Rect,
        v: &crate::data::QueueView,
        theme: &Theme,
    ) {
        let muted = theme.style(Role::Muted);
        let queued_block = screen::block(
            "Queue (dispatch order)".into(),
            Some(&self.queued),
            &[],
            theme,
        );
        let header =
            ["POS", "#", "NAME", "PRI", "TYPE×N", "WAITING", "REASON"].map(String::from);
        let widths = screen::layout(&queued_columns(self.queued_longest), queued_area.width);
        let queued_name_w = usize::from(widths[2]);
        screen::draw_table(
            frame,
            queued_area,
            screen::TableView {
                block: queued_block,
                header: &header,
                widths: &widths,
                list: &self.queued,
                focused: self.focus == Pane::Queued,
                marked: None,
            },
            theme,
            |r| {
                let Some(j) = v.dispatch.get(r) else {
                    return Vec::new();
                };
                let reason_style = if j.misconfigured {
                    theme.style(Role::Critical)
                } else {
                    muted
                };
                vec![
                    Cell::from(j.queue_position.to_string()),
                    Cell::from(j.share_position.to_string()),
                    Cell::from(elide(&clean(&j.name), queued_name_w)),
                    Cell::from(
                        j.priority
                            .map_or_else(|| "…".to_string(), |p| p.to_string()),
                    ),
                    Cell::from(format!(
                        "{}×{}",
                        screen::short_type(&j.instance_type),
                        j.instance_count
                    )),
                    Cell::from(duration(j.waiting_ms)),
                    Cell::from(Span::styled(
                        clean(j.reason.as_deref().unwrap_or("")).into_owned(),
                        reason_style,
                    )),
                ]
            },
        );
    }
}

/// The running table's columns for [`screen::layout`]: the name whole when it can be (at least
/// 16) and growing, the status always.
fn running_columns(longest: usize) -> [Col; 6] {
    [
        Col {
            grow: 1,
            ..Col::text(16, longest, 0)
        },
        Col::fixed(9, 0),
        Col::fixed(4, 2),
        Col::fixed(15, 1),
        Col::fixed(8, 3),
        Col::fixed(3, 4),
    ]
}

/// The queue table's columns: the name whole when it can be (at least 16), then the reason
/// takes the rest; `longest`: the longest name and reason.
fn queued_columns(longest: (usize, usize)) -> [Col; 7] {
    [
        Col::fixed(4, 0),
        Col::fixed(3, 4),
        Col::text(16, longest.0, 0),
        Col::fixed(4, 3),
        Col::fixed(15, 1),
        Col::fixed(8, 2),
        Col {
            grow: 1,
            ..Col::text(12, longest.1, 5)
        },
    ]
}
