//! Jobs: every job of the current queue, sortable and filterable.

use std::cmp::Reverse;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Span;
use ratatui::widgets::Cell;

use super::data::Data;
use super::list::ListState;
use super::registry::{Opens, ScreenCommand, ScreenEntry, ScreenKey, fresh};
use super::screen::{self, DrawCtx, Kind, Open, Screen};
use super::text::{clean, elide, short_id};
use super::theme::{Role, Theme};
use quotatop_analysis as analysis;
use quotatop_model::{JobStatus, TrackedJob};

/// Its entry in the screen registry (the `screens!` list in `lib.rs`).
pub const ENTRY: ScreenEntry = ScreenEntry {
    kind: Kind::Jobs,
    opens: Opens::Fresh(fresh::<Jobs>),
    key: Some(ScreenKey {
        name: "jobs",
        keys: &["2"],
        description: "every job of the queue",
        hint: Some("screens"),
    }),
    command: Some(ScreenCommand {
        names: &["jobs", "j", "2"],
        help: "every job of the queue",
    }),
};

pub const COLUMNS: &[&str] = &["status", "name", "share", "priority", "preemptions", "age"];

/// Each sort column's header (index into the table's header) and whether its natural order is
/// descending (highest priority, most preempted, oldest first), for the ▲/▼ there.
const SORTED: &[(usize, bool)] = &[
    (3, false),
    (0, false),
    (2, false),
    (4, true),
    (6, true),
    (7, true),
];

#[derive(Debug)]
pub struct Jobs {
    list: ListState,
    /// The queue the rows index into.
    queue: Option<String>,
    remembered: Option<String>,
    /// The longest cleaned name and reason among `list.rows` (in characters): computed with
    /// the rows (once per snapshot, sort or filter), not per frame, which would walk every job.
    longest: (usize, usize),
}

impl Jobs {
    pub fn new() -> Self {
        Self {
            list: ListState::with_sort(0, false),
            queue: None,
            remembered: None,
            longest: (0, 0),
        }
    }
}

impl Default for Jobs {
    fn default() -> Self {
        Self::new()
    }
}

pub fn status_style(s: JobStatus, theme: &Theme) -> ratatui::style::Style {
    match s {
        JobStatus::Running => theme.style(Role::Healthy),
        JobStatus::Failed => theme.style(Role::Critical),
        JobStatus::Runnable => theme.style(Role::Warning),
        JobStatus::Succeeded => theme.style(Role::Muted),
        _ => theme.style(Role::Text),
    }
}

fn sort_rows(rows: &mut [usize], jobs: &[TrackedJob], column: usize, descending: bool) {
    let key = |i: usize| &jobs[i].job;
    match column {
        1 => rows.sort_by(|&a, &b| key(a).name.cmp(&key(b).name)),
        2 => rows.sort_by(|&a, &b| {
            key(a)
                .share
                .cmp(&key(b).share)
                .then(key(a).name.cmp(&key(b).name))
        }),
        3 => rows.sort_by_key(|&i| (Reverse(key(i).priority), key(i).created_at)),
        4 => rows.sort_by_key(|&i| (Reverse(key(i).preemption_count()), key(i).created_at)),
        5 => rows.sort_by_key(|&i| key(i).created_at),
        _ => rows.sort_by_key(|&i| (key(i).status, Reverse(key(i).priority), key(i).created_at)),
    }
    if descending {
        rows.reverse();
    }
}

impl Jobs {
    /// The columns for [`screen::layout`]: the name whole when it can be (at least 24), the
    /// status always; the id, the reason and the age go first on a narrow screen.
    fn columns(&self, q: &quotatop_model::QueueSnapshot) -> [screen::Col; 9] {
        use screen::Col;
        let shares = q.shares.iter().map(|s| clean(&s.name).chars().count()).max();
        [
            Col::text(24, self.longest.0, 0),
            Col::fixed(6, 7),
            Col::text(10, shares.unwrap_or(0), 1),
            Col::fixed(9, 0),
            Col::fixed(4, 3),
            Col::fixed(15, 2),
            Col::fixed(4, 4),
            Col::fixed(6, 5),
            Col {
                grow: 1,
                ..Col::text(12, self.longest.1, 6)
            },
        ]
    }
}

impl Screen for Jobs {
    fn kind(&self) -> Kind {
        Kind::Jobs
    }

    /// New live data keeps the row, not the job (as k9s does): a job that changes status
    /// moves in the list, and the cursor following it made the view jump.
    fn remember_before_data(&mut self, _data: &Data) {
        self.remembered = None;
    }

    fn remember(&mut self, data: &Data) {
        self.remembered = data
            .queue(self.queue.as_deref())
            .and_then(|(q, _)| q.jobs.get(self.list.selected_row()?))
            .map(|j| j.job.id.clone());
    }

    fn refresh(&mut self, data: &Data, queue: Option<&str>) {
        let Some((q, _)) = data.queue(queue) else {
            self.list.set_rows(Vec::new(), |_| false);
            self.longest = (0, 0);
            return;
        };
        let previous = self.remembered.take();
        let mut rows: Vec<usize> = q
            .jobs
            .iter()
            .enumerate()
            .filter(|(_, j)| {
                let j = &j.job;
                self.list.filter.matches([
                    j.name.as_str(),
                    j.id.as_str(),
                    j.share.as_str(),
                    j.status.as_str(),
                    j.instance_type.as_str(),
                    j.status_reason.as_deref().unwrap_or(""),
                ])
            })
            .map(|(i, _)| i)
            .collect();
        sort_rows(
            &mut rows,
            &q.jobs,
            self.list.sort.column,
            self.list.sort.descending,
        );
        self.queue = Some(q.key());
        self.longest = screen::longest_name_and_reason(
            rows.iter()
                .filter_map(|&r| q.jobs.get(r))
                .map(|t| (t.job.name.as_str(), t.job.status_reason.as_deref())),
        );
        self.list.set_rows(rows, |r| {
            previous.as_deref() == q.jobs.get(r).map(|j| j.job.id.as_str())
        });
    }

    fn draw(&self, frame: &mut Frame, area: Rect, ctx: &DrawCtx) {
        let theme = ctx.theme;
        let Some((q, _)) = ctx.data.queue(self.queue.as_deref()) else {
            frame.render_widget(screen::block("Jobs".into(), None, COLUMNS, theme), area);
            return;
        };
        let now = analysis::now_of(q);
        let title = crate::text::first_fitting(
            &[format!("Jobs · {}", clean(&q.key())), "Jobs".to_string()],
            screen::title_room(area.width, Some(&self.list), COLUMNS),
        );
        let block = screen::block(title, Some(&self.list), COLUMNS, theme);
        let header = [
            "NAME", "ID", "SHARE", "STATUS", "PRI", "TYPE×N", "PRE", "AGE", "REASON",
        ];
        let widths = screen::layout(&self.columns(q), area.width);
        let w = |i: usize| usize::from(widths[i]);
        // Without the reason column, a job the service refuses to place is still told apart
        // from one that waits its turn (Enter shows the reason).
        let no_reason = widths[8] == 0;
        screen::draw_table(
            frame,
            area,
            screen::TableView {
                block,
                header: &screen::sorted_header(&header, &self.list, SORTED),
                widths: &widths,
                list: &self.list,
                focused: true,
            },
            theme,
            |r| {
                let Some(t) = q.jobs.get(r) else {
                    return Vec::new();
                };
                let j = &t.job;
                let pre = j.preemption_count();
                let pri = if t.described_at.is_some() {
                    j.priority.to_string()
                } else {
                    "…".to_string()
                };
                vec![
                    Cell::from(elide(&clean(&j.name), w(0))),
                    Cell::from(Span::styled(
                        short_id(&j.id, 6).to_string(),
                        theme.style(Role::Muted),
                    )),
                    Cell::from(elide(&clean(&j.share), w(2))),
                    Cell::from(if no_reason && j.misconfiguration().is_some() {
                        Span::styled("MISCONFIG", theme.style(Role::Critical))
                    } else {
                        Span::styled(j.status.as_str(), status_style(j.status, theme))
                    }),
                    Cell::from(pri),
                    Cell::from(format!(
                        "{}×{}",
                        screen::short_type(&j.instance_type),
                        j.instance_count
                    )),
                    Cell::from(if pre > 0 {
                        Span::styled(pre.to_string(), theme.style(Role::Preempted))
                    } else {
                        Span::raw("")
                    }),
                    Cell::from(screen::since(now, Some(j.created_at))),
                    Cell::from(Span::styled(
                        clean(j.status_reason.as_deref().unwrap_or("")).into_owned(),
                        theme.style(Role::Muted),
                    )),
                ]
            },
        );
    }

    fn list(&mut self) -> Option<&mut ListState> {
        Some(&mut self.list)
    }

    fn list_ref(&self) -> Option<&ListState> {
        Some(&self.list)
    }

    fn sort_columns(&self) -> &'static [&'static str] {
        COLUMNS
    }

    fn enter(&self, data: &Data, _queue: Option<&str>) -> Option<Open> {
        let (q, _) = data.queue(self.queue.as_deref())?;
        let job = q.jobs.get(self.list.selected_row()?)?;
        Some(Open::Job {
            queue: q.key(),
            id: job.job.id.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keymap::KeyMap;
    use crate::theme::Theme;
    use crate::{App, AppOptions, Msg, StatusInfo};
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    use quotatop_analysis::{LoopRule, fixture};
    use quotatop_model::{SharingConfig, Snapshot};
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    fn key(code: KeyCode) -> Msg {
        Msg::Key(KeyEvent::new(code, KeyModifiers::NONE))
    }

    /// A console showing one queue of 50 RUNNABLE jobs in share `a`, one with a reason.
    fn app() -> (App, Terminal<TestBackend>) {
        let mut q = fixture::queue(&[("a", "ml.g5.12xlarge", 4, SharingConfig::lend())]);
        q.jobs = (0..50)
            .map(|i| {
                let mut j = fixture::job(
                    &format!("job-{i:02}"),
                    "a",
                    "ml.g5.12xlarge",
                    1,
                    JobStatus::Runnable,
                    1,
                    i,
                );
                std::sync::Arc::make_mut(&mut j.job).status_reason =
                    (i == 7).then(|| "a reason".to_string());
                j
            })
            .collect();
        let mut app = App::new(AppOptions {
            theme: Theme::dark(),
            no_color: false,
            theme_dir: None,
            keymap: KeyMap::default(),
            status: StatusInfo::default(),
            queue: None,
            loop_rule: LoopRule::default(),
            clock: Box::new(|| 1_000_000),
            warnings: Vec::new(),
            priority_policy: Default::default(),
            storage_price: Default::default(),
        });
        app.update(Msg::Snapshot(Box::new(Snapshot {
            queues: vec![q],
            ..Snapshot::default()
        })));
        let Ok(terminal) = Terminal::new(TestBackend::new(160, 30)) else {
            panic!("test backend");
        };
        (app, terminal)
    }

    /// Three frames walk no row; then the screen shows `text`.
    fn frames_walk_no_row(app: &mut App, terminal: &mut Terminal<TestBackend>, text: &str) {
        let before = screen::walks();
        for _ in 0..3 {
            let _ = terminal.draw(|f| app.draw(f));
        }
        assert_eq!(screen::walks(), before, "a frame walked every row");
        let shown: String = terminal
            .backend()
            .buffer()
            .content()
            .iter()
            .map(|c| c.symbol())
            .collect();
        assert!(shown.contains(text), "{shown}");
    }

    /// Drawing the Jobs screen does not walk every job (at 50,000 jobs that walk cost 17 ms a
    /// frame): the column widths are computed with the rows, once per snapshot, sort or filter.
    #[test]
    fn jobs_frames_do_not_walk_every_job() {
        let (mut app, mut terminal) = app();
        app.update(key(KeyCode::Char('2')));
        assert_eq!(app.screen_kind(), Kind::Jobs);
        frames_walk_no_row(&mut app, &mut terminal, "a reason");
        // A new sort walks them once.
        let before = screen::walks();
        app.update(key(KeyCode::Char('s')));
        assert_eq!(screen::walks(), before + 1);
        frames_walk_no_row(&mut app, &mut terminal, "a reason");
    }

    /// The same for a share's queued jobs.
    #[test]
    fn share_frames_do_not_walk_every_queued_job() {
        let (mut app, mut terminal) = app();
        for _ in 0..3 {
            app.update(key(KeyCode::Enter));
            if app.screen_kind() == Kind::Share {
                break;
            }
            app.update(key(KeyCode::Char('1')));
            app.update(key(KeyCode::Down));
        }
        assert_eq!(app.screen_kind(), Kind::Share);
        frames_walk_no_row(&mut app, &mut terminal, "a reason");
    }

    /// Analyses derived off the UI thread may finish out of order: one older than the snapshot
    /// applied last is dropped, so the screen never goes back to older data.
    #[test]
    fn an_older_prepared_snapshot_arriving_late_is_dropped() {
        let (mut app, _) = app();
        let with_jobs = |n: usize| {
            let mut q = fixture::queue(&[("a", "ml.g5.12xlarge", 4, SharingConfig::lend())]);
            q.jobs = (0..n)
                .map(|i| {
                    let name = format!("late-{i}");
                    fixture::job(&name, "a", "ml.g5.12xlarge", 1, JobStatus::Runnable, 1, 0)
                })
                .collect();
            Snapshot {
                queues: vec![q],
                ..Snapshot::default()
            }
        };
        let older = crate::data::Prepared::new(with_jobs(1), &app.derive_inputs(), 1);
        let newer = crate::data::Prepared::new(with_jobs(3), &app.derive_inputs(), 2);
        app.update(Msg::Prepared(Box::new(newer)));
        app.update(Msg::Prepared(Box::new(older)));
        assert_eq!(app.live_data().queues()[0].jobs.len(), 3);
    }
}
