//! Jobs: every job of the current queue, sortable and filterable.

use std::cmp::Reverse;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Span;
use ratatui::widgets::Cell;

use std::sync::Arc;

use super::data::{Data, SharedJobs};
use super::effects::{Effect, EffectResult, ScreenWork};
use super::list::{ListState, RowsKey};
use super::registry::{Opens, ScreenCommand, ScreenEntry, ScreenKey, fresh};
use super::screen::{self, Ctx, DrawCtx, Kind, Open, Screen};
use super::text::{clean, elide, short_id};
use super::theme::{Role, Theme};
use quotatop_analysis as analysis;
use quotatop_model::{JobStatus, QueueSnapshot, ServiceJob, TrackedJob};

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
    /// What `list.rows` were made for (`None`: no rows yet).
    shown: Option<Shown>,
    /// Rows for the list's filter and sort are being made off the UI thread: the title says
    /// so, and the rows on screen stay (keys act on them) until they come.
    sorting: bool,
    /// That work, for the app to start ([`Screen::take_work`]).
    work: Option<ScreenWork>,
}

impl Jobs {
    pub fn new() -> Self {
        let list = ListState::with_sort(0, false);
        debug_assert_eq!(list.rows_key(), first_rows_key());
        Self {
            list,
            queue: None,
            remembered: None,
            longest: (0, 0),
            shown: None,
            sorting: false,
            work: None,
        }
    }

    /// Shows `rows` (made for the data of generation `generation`), keeping the selection on
    /// the job `previous` when it is still there.
    fn show(&mut self, rows: JobRows, generation: u64, previous: Option<&str>, jobs: &[TrackedJob]) {
        self.queue = Some(rows.queue.clone());
        self.longest = rows.longest;
        self.shown = Some(Shown {
            generation,
            queue: rows.queue,
            key: rows.key,
        });
        self.list.set_rows(rows.rows, |r| {
            previous.is_some() && previous == jobs.get(r).map(|j| j.job.id.as_str())
        });
    }

    /// The rows on screen are for `generation`'s snapshot of queue `queue` (their indexes
    /// valid in it).
    fn shows(&self, generation: u64, queue: &str) -> bool {
        self.shown
            .as_ref()
            .is_some_and(|s| s.generation == generation && s.queue == queue)
    }

    /// Asks for the rows of `key` off the UI thread; meanwhile the rows on screen stay when
    /// they index into this snapshot, else the ones derived with it (in the order shown
    /// before when there are, else another), else none.
    fn ask(&mut self, data: &Data, q: &QueueSnapshot, jobs: SharedJobs, key: RowsKey) {
        let queue = q.key();
        let generation = data.generation;
        if !self.shows(generation, &queue) {
            let before = self.shown.as_ref().map(|s| s.key.clone());
            let derived = before
                .and_then(|k| data.job_rows(&queue, &k))
                .or_else(|| data.any_job_rows(&queue));
            match derived {
                Some(rows) => self.show(rows.clone(), generation, None, &q.jobs),
                None => {
                    self.list.set_rows(Vec::new(), |_| false);
                    self.longest = (0, 0);
                    self.shown = None;
                    self.queue = Some(queue.clone());
                }
            }
        }
        self.sorting = true;
        self.work = Some(ScreenWork::new(Kind::Jobs, move |_: Option<&()>| {
            RowsAnswer {
                generation,
                rows: JobRows::of(queue.clone(), &jobs, key.clone()),
            }
        }));
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

/// A job as the rows read it: a snapshot's tracked job (on the UI thread), or the job alone
/// (the rows' work off it holds only the jobs, shared).
pub(crate) trait AsJob {
    fn as_job(&self) -> &ServiceJob;
}

impl AsJob for TrackedJob {
    fn as_job(&self) -> &ServiceJob {
        &self.job
    }
}

impl AsJob for Arc<ServiceJob> {
    fn as_job(&self) -> &ServiceJob {
        self
    }
}

fn sort_rows<J: AsJob>(rows: &mut [usize], jobs: &[J], column: usize, descending: bool) {
    let key = |i: usize| jobs[i].as_job();
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

/// Up to this many jobs a new sort or filter is applied at once on the UI thread (a few ms in
/// a dev build); above, off it ([`Jobs`]' work), the rows on screen staying until it is done.
pub(crate) const SORT_AT_ONCE: usize = 1_000;

/// The Jobs screen's rows of one queue: its jobs filtered and sorted as `key` says, with the
/// widths they need. Derived with each snapshot off the UI thread ([`crate::data::Prepared`])
/// or by the screen's own work; one function either way ([`JobRows::of`]).
#[derive(Debug, Clone)]
pub struct JobRows {
    /// The queue's key.
    pub(crate) queue: String,
    pub(crate) key: RowsKey,
    /// Indexes into the queue's `jobs`.
    pub(crate) rows: Vec<usize>,
    /// The longest cleaned name and reason among the rows (in characters).
    pub(crate) longest: (usize, usize),
}

impl JobRows {
    /// The rows of `jobs` (the queue `queue`'s, in the snapshot's order) for `key`.
    pub(crate) fn of<J: AsJob>(queue: String, jobs: &[J], key: RowsKey) -> Self {
        let mut rows: Vec<usize> = jobs
            .iter()
            .enumerate()
            .filter(|(_, j)| {
                let j = j.as_job();
                key.filter.matches([
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
        sort_rows(&mut rows, jobs, key.sort.column, key.sort.descending);
        let longest = screen::longest_name_and_reason(
            rows.iter()
                .filter_map(|&r| jobs.get(r))
                .map(|t| (t.as_job().name.as_str(), t.as_job().status_reason.as_deref())),
        );
        Self {
            queue,
            key,
            rows,
            longest,
        }
    }
}

/// The rows a fresh Jobs screen shows (by status, unfiltered): derived with every snapshot,
/// so opening the screen sorts nothing on the UI thread.
pub(crate) fn first_rows_key() -> RowsKey {
    ListState::with_sort(0, false).rows_key()
}

/// The answer of the screen's work: `rows` for the data of generation `generation`.
struct RowsAnswer {
    generation: u64,
    rows: JobRows,
}

/// What the rows on screen were made for.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Shown {
    /// [`Data::generation`] of the snapshot they index into.
    generation: u64,
    queue: String,
    key: RowsKey,
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

    /// The rows come, in this order: those on screen when they are still right; those derived
    /// with the snapshot off the UI thread; made here when the queue is small
    /// ([`SORT_AT_ONCE`]); else asked for off the UI thread ([`Jobs::ask`]).
    fn refresh(&mut self, data: &Data, queue: Option<&str>) {
        let Some((q, v)) = data.queue(queue) else {
            self.list.set_rows(Vec::new(), |_| false);
            self.longest = (0, 0);
            self.shown = None;
            self.sorting = false;
            self.work = None;
            return;
        };
        let previous = self.remembered.take();
        let key = self.list.rows_key();
        let queue = q.key();
        let wanted = Shown {
            generation: data.generation,
            queue: queue.clone(),
            key: key.clone(),
        };
        self.sorting = false;
        self.work = None;
        if self.shown.as_ref() == Some(&wanted) {
            return;
        }
        if let Some(rows) = data.job_rows(&queue, &key) {
            self.show(rows.clone(), data.generation, previous.as_deref(), &q.jobs);
        } else if q.jobs.len() <= SORT_AT_ONCE {
            let rows = JobRows::of(queue, &q.jobs, key);
            self.show(rows, data.generation, previous.as_deref(), &q.jobs);
        } else {
            self.ask(data, q, v.jobs.clone(), key);
        }
    }

    /// The rows asked for off the UI thread, taken when they are still the ones wanted (the
    /// same snapshot, queue, filter and sort): the selection stays on its job.
    fn on_result(&mut self, result: &EffectResult, ctx: &Ctx) -> Vec<Effect> {
        let Some(answer) = result.answer::<RowsAnswer>(Kind::Jobs) else {
            return Vec::new();
        };
        let Some((q, _)) = ctx.data.queue(ctx.queue) else {
            return Vec::new();
        };
        let fits = answer.generation == ctx.data.generation
            && answer.rows.queue == q.key()
            && answer.rows.key == self.list.rows_key();
        if fits {
            let previous = self
                .shows(answer.generation, &answer.rows.queue)
                .then(|| self.list.selected_row())
                .flatten()
                .and_then(|r| q.jobs.get(r))
                .map(|j| j.job.id.clone());
            self.show(
                answer.rows.clone(),
                answer.generation,
                previous.as_deref(),
                &q.jobs,
            );
            self.sorting = false;
        }
        Vec::new()
    }

    fn take_work(&mut self) -> Vec<Effect> {
        self.work.take().map(Effect::Screen).into_iter().collect()
    }

    fn derived_rows(&self) -> Option<RowsKey> {
        Some(self.list.rows_key())
    }

    fn draw(&self, frame: &mut Frame, area: Rect, ctx: &DrawCtx) {
        let theme = ctx.theme;
        let Some((q, _)) = ctx.data.queue(self.queue.as_deref()) else {
            frame.render_widget(screen::block("Jobs".into(), None, COLUMNS, theme), area);
            return;
        };
        let now = analysis::now_of(q);
        // While its rows are made off the UI thread, the title says so (the rows shown are
        // the ones before).
        let sorting = if self.sorting { " · sorting…" } else { "" };
        let title = crate::text::first_fitting(
            &[
                format!("Jobs · {}{sorting}", clean(&q.key())),
                format!("Jobs{sorting}"),
                "Jobs".to_string(),
            ],
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

    /// A console on the Jobs screen of one queue of `n` jobs whose names, priorities and
    /// creation times run in different orders, applied as the loop applies a snapshot: its
    /// analysis and rows derived beforehand ([`crate::data::Prepared`]).
    fn large(n: usize, order: u64) -> (App, Terminal<TestBackend>) {
        let (mut app, terminal) = app();
        app.update(key(KeyCode::Char('2')));
        let prepared = crate::data::Prepared::new(snapshot(n, 0), &app.derive_inputs(), order);
        app.update(Msg::Prepared(Box::new(prepared)));
        (app, terminal)
    }

    /// `n` jobs; `shift` changes every job's priority (another refresh of the same queue).
    fn snapshot(n: usize, shift: usize) -> Snapshot {
        let mut q = fixture::queue(&[("a", "ml.g5.12xlarge", 4, SharingConfig::lend())]);
        q.jobs = (0..n)
            .map(|i| {
                let name = format!("big-{:05}", (i * 7919) % n);
                let priority = ((i + shift) * 31 % 97) as u32;
                fixture::job(&name, "a", "ml.g5.12xlarge", 1, JobStatus::Runnable, priority, i as i64)
            })
            .collect();
        Snapshot {
            queues: vec![q],
            ..Snapshot::default()
        }
    }

    fn rows(app: &App) -> Vec<usize> {
        app.current_list().map(|l| l.rows.clone()).unwrap_or_default()
    }

    /// The rows `key` gives on the live data, made directly.
    fn expected(app: &App, key: RowsKey) -> Vec<usize> {
        let q = &app.live_data().queues()[0];
        JobRows::of(q.key(), &q.jobs, key).rows
    }

    fn shown(app: &mut App, terminal: &mut Terminal<TestBackend>) -> String {
        let _ = terminal.draw(|f| app.draw(f));
        terminal.backend().buffer().content().iter().map(|c| c.symbol()).collect()
    }

    /// The Jobs screen's work the last updates asked for: the newest (the runner cancels
    /// older ones).
    fn jobs_work(app: &mut App) -> Option<ScreenWork> {
        app.take_effects()
            .into_iter()
            .filter_map(|e| match e {
                Effect::Screen(w) if w.screen == Kind::Jobs => Some(w),
                _ => None,
            })
            .last()
    }

    /// A refresh's Jobs rows come made off the UI thread with its snapshot: applying it walks
    /// no row here, and they are the rows the screen's filter and sort give.
    #[test]
    fn a_refresh_brings_its_jobs_rows_made_off_the_ui_thread() {
        let n = SORT_AT_ONCE * 3;
        let (mut app, _) = large(n, 1);
        // A sort of the user's own, made off the UI thread once.
        app.update(key(KeyCode::Char('s')));
        let work = jobs_work(&mut app).expect("the new sort is asked for off the UI thread");
        app.update(Msg::Done(work.run(&crate::effects::ScreenServices::default())));
        let wanted = app.current_list().map(ListState::rows_key).unwrap_or_default();
        assert_eq!(wanted.sort.column, 1);
        let prepared = crate::data::Prepared::new(snapshot(n, 5), &app.derive_inputs(), 2);
        let before = screen::walks();
        app.update(Msg::Prepared(Box::new(prepared)));
        assert_eq!(screen::walks(), before, "the rows were made on the UI thread");
        assert!(jobs_work(&mut app).is_none());
        assert_eq!(rows(&app), expected(&app, wanted));
        assert_eq!(rows(&app).len(), n);
    }

    /// A new sort of a large queue is made off the UI thread: until it comes, the rows on
    /// screen stay (a key acts on them at once) and the title says "sorting…"; then the
    /// sorted rows show from the top.
    #[test]
    fn a_new_sort_of_a_large_queue_is_made_off_the_ui_thread() {
        let (mut app, mut terminal) = large(SORT_AT_ONCE * 3, 1);
        let before_rows = rows(&app);
        assert_eq!(before_rows, expected(&app, first_rows_key()));
        assert!(!shown(&mut app, &mut terminal).contains("sorting…"));
        let walks = screen::walks();
        app.update(key(KeyCode::Char('s')));
        assert_eq!(screen::walks(), walks, "sorted on the UI thread");
        assert_eq!(rows(&app), before_rows);
        assert!(shown(&mut app, &mut terminal).contains("sorting…"));
        let work = jobs_work(&mut app).expect("the sort asked for off the UI thread");
        app.update(key(KeyCode::Down));
        assert_eq!(app.current_list().map(|l| l.selected), Some(1));
        app.update(Msg::Done(work.run(&crate::effects::ScreenServices::default())));
        let key = app.current_list().map(ListState::rows_key).unwrap_or_default();
        assert_eq!(key.sort.column, 1);
        assert_eq!(rows(&app), expected(&app, key));
        assert_ne!(rows(&app), before_rows);
        assert_eq!(app.current_list().map(|l| l.selected), Some(0));
        assert!(!shown(&mut app, &mut terminal).contains("sorting…"));
    }

    /// Rows made for a snapshot replaced meanwhile index into jobs no longer shown: they are
    /// not taken; the ones asked for the new snapshot are.
    #[test]
    fn rows_made_for_a_replaced_snapshot_are_not_taken() {
        let n = SORT_AT_ONCE * 3;
        let (mut app, _) = large(n, 1);
        let older_inputs = app.derive_inputs();
        app.update(key(KeyCode::Char('s')));
        let stale = jobs_work(&mut app).expect("the sort asked for");
        // A refresh derived before the sort key: its rows are by status.
        let prepared = crate::data::Prepared::new(snapshot(n / 2, 3), &older_inputs, 2);
        app.update(Msg::Prepared(Box::new(prepared)));
        let interim = rows(&app);
        assert_eq!(interim, expected(&app, first_rows_key()));
        let fresh = jobs_work(&mut app).expect("asked again for the new snapshot");
        app.update(Msg::Done(stale.run(&crate::effects::ScreenServices::default())));
        assert_eq!(rows(&app), interim, "rows of the replaced snapshot taken");
        app.update(Msg::Done(fresh.run(&crate::effects::ScreenServices::default())));
        let key = app.current_list().map(ListState::rows_key).unwrap_or_default();
        assert_eq!(rows(&app), expected(&app, key));
        assert_eq!(rows(&app).len(), n / 2);
    }

    /// A sort pressed while a refresh is derived: the refresh's rows come in the order shown
    /// before (not another), titled "sorting…", until the new sort is made for it.
    #[test]
    fn a_sort_pressed_during_a_refresh_keeps_the_order_shown_until_it_is_made() {
        let n = SORT_AT_ONCE * 3;
        let (mut app, mut terminal) = large(n, 1);
        app.update(key(KeyCode::Char('s')));
        let work = jobs_work(&mut app).expect("the first sort asked for");
        app.update(Msg::Done(work.run(&crate::effects::ScreenServices::default())));
        let by_name = app.current_list().map(ListState::rows_key).unwrap_or_default();
        // The refresh is derived with the sort by name; then the user sorts again.
        let inputs = app.derive_inputs();
        app.update(key(KeyCode::Char('s')));
        let _ = jobs_work(&mut app);
        let prepared = crate::data::Prepared::new(snapshot(n, 9), &inputs, 2);
        app.update(Msg::Prepared(Box::new(prepared)));
        assert_eq!(rows(&app), expected(&app, by_name));
        assert!(shown(&mut app, &mut terminal).contains("sorting…"));
        let work = jobs_work(&mut app).expect("the new sort asked for the new snapshot");
        app.update(Msg::Done(work.run(&crate::effects::ScreenServices::default())));
        let by_share = app.current_list().map(ListState::rows_key).unwrap_or_default();
        assert_eq!(by_share.sort.column, 2);
        assert_eq!(rows(&app), expected(&app, by_share));
        assert!(!shown(&mut app, &mut terminal).contains("sorting…"));
    }

    /// A filter typed on a large queue is applied off the UI thread the same way.
    #[test]
    fn a_filter_on_a_large_queue_is_applied_off_the_ui_thread() {
        let (mut app, _) = large(SORT_AT_ONCE * 3, 1);
        app.update(key(KeyCode::Char('/')));
        for c in "big-0001".chars() {
            app.update(key(KeyCode::Char(c)));
        }
        app.update(key(KeyCode::Enter));
        let work = jobs_work(&mut app).expect("the filter asked for off the UI thread");
        app.update(Msg::Done(work.run(&crate::effects::ScreenServices::default())));
        let key = app.current_list().map(ListState::rows_key).unwrap_or_default();
        assert_eq!(key.filter.text, "big-0001");
        assert_eq!(rows(&app), expected(&app, key));
        assert_eq!(rows(&app).len(), 10);
    }

}
