//! Jobs: every job of the current queue, sortable and filterable; its rows (the jobs
//! filtered and sorted, with their widths) in [`rows`].

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Span;
use ratatui::widgets::Cell;

use super::data::{Data, SharedJobs};
use super::effects::{Effect, EffectResult, ScreenWork};
use super::list::{ListState, RowsKey};
use super::registry::{Opens, ScreenCommand, ScreenEntry, ScreenKey, fresh};
use super::screen::{self, Ctx, DrawCtx, Kind, Open, Screen};
use super::text::{clean, elide, short_id};
use super::theme::{Role, Theme};
use quotatop_analysis as analysis;
use quotatop_model::{JobStatus, QueueSnapshot, TrackedJob};

mod rows;
#[cfg(test)]
mod tests;

pub use rows::JobRows;
pub(crate) use rows::{SORT_AT_ONCE, first_rows_key};

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

/// The marking keys Jobs and Preemptions offer (their footer hints show only there).
pub const MARK_ACTIONS: &[crate::keymap::Action] = &[
    crate::keymap::Action::Mark,
    crate::keymap::Action::MarkAll,
    crate::keymap::Action::ClearMarks,
];

/// A title with the count of marked jobs, when there are (the count is never dropped).
pub fn with_marks(title: String, marked: usize) -> String {
    if marked == 0 {
        title
    } else {
        format!("{title} · {marked} marked")
    }
}

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
    /// The title: the queue, "sorting…" while its rows are made off the UI thread (the rows
    /// shown are the ones before), and the count of marked jobs.
    fn title(&self, q: &QueueSnapshot, width: u16, marks: usize) -> String {
        let sorting = if self.sorting { " · sorting…" } else { "" };
        let title = crate::text::first_fitting(
            &[
                format!("Jobs · {}{sorting}", clean(&q.key())),
                format!("Jobs{sorting}"),
                "Jobs".to_string(),
            ],
            screen::title_room(width, Some(&self.list), COLUMNS),
        );
        with_marks(title, marks)
    }

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

    fn own_actions(&self) -> &'static [crate::keymap::Action] {
        MARK_ACTIONS
    }

    fn shown_jobs(&self, data: &Data) -> Vec<String> {
        let Some((q, _)) = data.queue(self.queue.as_deref()) else {
            return Vec::new();
        };
        self.list
            .rows
            .iter()
            .filter_map(|&r| q.jobs.get(r).map(|t| t.job.id.clone()))
            .collect()
    }

    fn draw(&self, frame: &mut Frame, area: Rect, ctx: &DrawCtx) {
        let theme = ctx.theme;
        let Some((q, _)) = ctx.data.queue(self.queue.as_deref()) else {
            frame.render_widget(screen::block("Jobs".into(), None, COLUMNS, theme), area);
            return;
        };
        let now = analysis::now_of(q);
        let title = self.title(q, area.width, ctx.marks.count(&q.key()));
        let block = screen::block(title, Some(&self.list), COLUMNS, theme);
        let queue = q.key();
        let marked = |r: usize| {
            q.jobs
                .get(r)
                .is_some_and(|t| ctx.marks.contains(&queue, &t.job.id))
        };
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
                marked: Some(&marked),
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
