//! Preemptions: jobs by preemption count with loop and unbounded-retry flags, the instance- and
//! GPU-hours their preempted attempts held, and the selected job's preempted attempts with their
//! times.
//!
//! With a journal, the rows are the API's facts widened by the journal's whole record
//! ([`quotatop_analysis::with_history`]): attempts the API's window dropped, and jobs it no longer
//! lists (flagged `journal`). The title says which sources the rows come from.

use std::cmp::Ordering;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};

use super::data::Data;
use super::effects::{Effect, EffectResult};
use super::keymap::Action;
use super::list::ListState;
use super::registry::{Opens, ScreenCommand, ScreenEntry, ScreenKey, fresh};
use super::screen::{self, Ctx, DrawCtx, Kind, Load, Open, Screen};
use super::text::clean;
use super::theme::{Role, Theme};
use quotatop_analysis::{AttemptRow, PreemptionFacts};

mod rows;
#[cfg(test)]
mod tests;

use rows::{attempt_row, attempts_title, job_row, top_columns};

/// Its entry in the screen registry (the `screens!` list in `lib.rs`).
pub const ENTRY: ScreenEntry = ScreenEntry {
    kind: Kind::Preemptions,
    opens: Opens::Fresh(fresh::<Preemptions>),
    key: Some(ScreenKey {
        name: "preemptions",
        keys: &["3"],
        description: "preempted jobs and loops",
        hint: Some("screens"),
    }),
    command: Some(ScreenCommand {
        names: &["preemptions", "pre", "p", "3"],
        help: "preempted jobs",
    }),
};

pub const COLUMNS: &[&str] = &["count", "gpu-hours", "name", "share", "last"];

/// Each sort column's header index and whether its natural order is descending (the worst
/// first: most preempted, most lost, latest; names and shares alphabetically), for ▲/▼.
const SORTED: &[(usize, bool)] = &[(3, true), (6, true), (0, false), (1, false), (7, true)];

/// Shown for an attempt without a reason: one the journal recorded before it kept reasons.
pub const NO_REASON: &str = "(no reason: recorded by the journal before it kept them)";

#[derive(Debug)]
pub struct Preemptions {
    list: ListState,
    /// The selected job's preempted attempts (Tab moves the focus there to scroll them).
    attempts: ListState,
    on_attempts: bool,
    queue: Option<String>,
    remembered: Option<String>,
    /// The queue whose journal history is being read (the rows show the API's window until it
    /// comes, and the title says so).
    loading: Option<String>,
}

impl Preemptions {
    pub fn new() -> Self {
        Self {
            list: ListState::with_sort(0, false),
            attempts: ListState::default(),
            on_attempts: false,
            queue: None,
            remembered: None,
            loading: None,
        }
    }

    /// Points the attempts pane at the selected job's attempts (from its first when `reset`).
    fn follow_selection(&mut self, data: &Data, reset: bool) {
        let n = data
            .queue(self.queue.as_deref())
            .and_then(|(q, v)| {
                Some(preempted_attempts(
                    data,
                    &q.key(),
                    v.preemptions.get(self.list.selected_row()?)?,
                ))
            })
            .map_or(0, |a| a.len());
        if reset {
            self.attempts = ListState::default();
        }
        self.attempts.set_rows((0..n).collect(), |_| false);
    }
}

impl Default for Preemptions {
    fn default() -> Self {
        Self::new()
    }
}

/// A job's preempted attempts: those of the one list Job detail shows
/// ([`super::job_detail::attempts_of`]), so both screens show the same attempts and times.
pub fn preempted_attempts(data: &Data, queue: &str, f: &PreemptionFacts) -> Vec<AttemptRow> {
    let rows = match data.job(Some(queue), &f.job_id) {
        Some(t) => super::job_detail::attempts_of(&t.job, Some(f)),
        None => quotatop_analysis::job_attempts(&[], &f.recent),
    };
    rows.into_iter().filter(|a| a.preempted).collect()
}

fn last_stop(f: &PreemptionFacts) -> i64 {
    f.recent.iter().map(|a| a.stopped_at).max().unwrap_or(0)
}

fn cmp(a: &PreemptionFacts, b: &PreemptionFacts, column: usize) -> Ordering {
    match column {
        1 => a
            .gpu_hours_lost
            .unwrap_or(0.0)
            .total_cmp(&b.gpu_hours_lost.unwrap_or(0.0)),
        2 => b.name.cmp(&a.name),
        3 => b.share.cmp(&a.share).then(a.count.cmp(&b.count)),
        4 => last_stop(a).cmp(&last_stop(b)),
        _ => a
            .count
            .cmp(&b.count)
            .then(a.instance_hours_lost.total_cmp(&b.instance_hours_lost)),
    }
    .then_with(|| b.job_id.cmp(&a.job_id))
}

/// `LOOP ∞` style flags: looping, unbounded retries or retries left.
pub fn flags(f: &PreemptionFacts) -> Vec<(&'static str, Role)> {
    let mut out = Vec::new();
    if f.over_budget.is_some() {
        out.push(("OVER BUDGET", Role::Critical));
    }
    if f.looping {
        out.push(("LOOP", Role::Looping));
    }
    if f.unbounded_retries {
        out.push(("∞retry", Role::Warning));
    }
    if f.journal_only {
        out.push(("journal", Role::Muted));
    }
    if f.from_events > 0 {
        // Its loop history's times are the events' ([`quotatop_analysis::history_source`]).
        out.push(("events", Role::Muted));
    }
    out
}

impl Screen for Preemptions {
    fn kind(&self) -> Kind {
        Kind::Preemptions
    }

    /// Asks for the journal's preemption history of the current queue (the data keeps it, for
    /// every screen and the past).
    fn load(&mut self, why: Load, ctx: &Ctx) -> Vec<Effect> {
        if why == Load::Moved || !ctx.history || self.loading.is_some() {
            return Vec::new();
        }
        let Some(queue) = ctx.data.queue(ctx.queue).map(|(q, _)| q.key()) else {
            return Vec::new();
        };
        self.loading = Some(queue.clone());
        vec![Effect::LoadPreemptions { queue }]
    }

    fn on_result(&mut self, result: &EffectResult, _ctx: &Ctx) -> Vec<Effect> {
        if let EffectResult::Preemptions(r) = result
            && self.loading.as_ref() == Some(&r.queue)
        {
            self.loading = None;
        }
        Vec::new()
    }

    fn remember(&mut self, data: &Data) {
        self.remembered = data
            .queue(self.queue.as_deref())
            .and_then(|(_, v)| v.preemptions.get(self.list.selected_row()?))
            .map(|f| f.job_id.clone());
    }

    fn refresh(&mut self, data: &Data, queue: Option<&str>) {
        let previous = self.remembered.take();
        let Some((q, v)) = data.queue(queue) else {
            self.list.set_rows(Vec::new(), |_| false);
            return;
        };
        let mut rows: Vec<usize> = v
            .preemptions
            .iter()
            .enumerate()
            .filter(|(_, f)| {
                let flag_text: Vec<&str> = flags(f).iter().map(|(t, _)| *t).collect();
                self.list.filter.matches(
                    [
                        f.name.as_str(),
                        f.job_id.as_str(),
                        f.share.as_str(),
                        f.status.as_str(),
                    ]
                    .into_iter()
                    .chain(flag_text),
                )
            })
            .map(|(i, _)| i)
            .collect();
        let column = self.list.sort.column;
        // Each column's natural order puts the worst first (most preempted, most lost, latest).
        rows.sort_by(|&a, &b| cmp(&v.preemptions[b], &v.preemptions[a], column));
        if self.list.sort.descending {
            rows.reverse();
        }
        self.queue = Some(q.key());
        let same_job = previous.clone();
        self.list.set_rows(rows, |r| {
            previous.as_deref() == v.preemptions.get(r).map(|f| f.job_id.as_str())
        });
        let still = self
            .list
            .selected_row()
            .and_then(|r| v.preemptions.get(r))
            .is_some_and(|f| Some(&f.job_id) == same_job.as_ref());
        self.follow_selection(data, !still);
    }

    fn has_panes(&self) -> bool {
        true
    }

    fn own_actions(&self) -> &'static [Action] {
        crate::jobs::MARK_ACTIONS
    }

    fn shown_jobs(&self, data: &Data) -> Vec<String> {
        let Some((_, v)) = data.queue(self.queue.as_deref()) else {
            return Vec::new();
        };
        self.list
            .rows
            .iter()
            .filter_map(|&r| v.preemptions.get(r).map(|f| f.job_id.clone()))
            .collect()
    }

    fn on_action(&mut self, action: Action, _ctx: &Ctx) -> Vec<Effect> {
        if action == Action::NextPane {
            self.on_attempts = !self.on_attempts;
        }
        Vec::new()
    }

    fn nav_list(&mut self) -> Option<&mut ListState> {
        Some(if self.on_attempts {
            &mut self.attempts
        } else {
            &mut self.list
        })
    }

    fn after_nav(&mut self, data: &Data) {
        if !self.on_attempts {
            self.follow_selection(data, true);
        }
    }

    fn draw(&self, frame: &mut Frame, area: Rect, ctx: &DrawCtx) {
        let theme = ctx.theme;
        let Some((q, v)) = ctx.data.queue(self.queue.as_deref()) else {
            frame.render_widget(
                screen::block("Preemptions".into(), None, COLUMNS, theme),
                area,
            );
            return;
        };
        let [top, bottom] =
            Layout::vertical([Constraint::Percentage(60), Constraint::Fill(1)]).areas(area);
        let title = self.jobs_title(q, v, area.width);
        let title = crate::jobs::with_marks(title, ctx.marks.count(&q.key()));
        self.draw_jobs(frame, top, title, (q, v), ctx);
        let selected = self.list.selected_row().and_then(|r| v.preemptions.get(r));
        let attempts =
            selected.map_or_else(Vec::new, |f| preempted_attempts(ctx.data, &q.key(), f));
        self.draw_attempts(frame, bottom, selected, &attempts, v.with_history, theme);
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
        let (q, v) = data.queue(self.queue.as_deref())?;
        let f = v.preemptions.get(self.list.selected_row()?)?;
        // A job only the journal knows has no description to open; its attempts are shown here.
        if f.journal_only && data.job(Some(&q.key()), &f.job_id).is_none() {
            return None;
        }
        Some(Open::Job {
            queue: q.key(),
            id: f.job_id.clone(),
        })
    }
}

/// The steps of [`Preemptions`]'s `draw`: the jobs table and its title, then the
/// selected job's preempted attempts.
impl Preemptions {
    /// The jobs table's title: the queue, where the figures come from, the looping jobs and
    /// the GPU-hours held by preempted attempts, shortened by dropping parts (the status bar
    /// names the queue), never mid-word.
    fn jobs_title(
        &self,
        q: &quotatop_model::QueueSnapshot,
        v: &crate::data::QueueView,
        width: u16,
    ) -> String {
        // A fold from +0.0: an empty f64 sum is -0.0, which would print as "-0.0".
        let total_gpu = v
            .preemptions
            .iter()
            .filter_map(|f| f.gpu_hours_lost)
            .fold(0.0, |a, b| a + b);
        let looping = v.preemptions.iter().filter(|f| f.looping).count();
        let over = v
            .preemptions
            .iter()
            .filter(|f| f.over_budget.is_some())
            .count();
        let over = if over > 0 {
            format!(" · {over} over budget")
        } else {
            String::new()
        };
        let source = if v.preemptions.iter().any(|f| f.from_events > 0) {
            "API + journal history, from events"
        } else if v.with_history {
            "API + journal history"
        } else {
            "API window only"
        };
        // The whole held time of the preempted attempts (an upper bound of the work lost: the
        // API shows no checkpoints), over every attempt the source holds. It is not the
        // Scorecard's waste, which is the ledger's lost + restart overhead over its window.
        let gpu = format!("{total_gpu:.1} GPU-h");
        let loops = format!("{looping} looping{over}");
        let key = q.key();
        let queue = clean(&key);
        crate::text::first_fitting(
            &[
                format!(
                    "Preemptions · {queue} · {source} · {loops} · {gpu} held by preempted attempts"
                ),
                format!("Preemptions · {queue} · {source} · {loops} · {gpu} held"),
                format!("Preemptions · {queue} · {loops} · {gpu} held"),
                format!("Preemptions · {loops} · {gpu} held"),
                format!("Preemptions · {loops}"),
                "Preemptions".to_string(),
            ],
            screen::title_room(width, Some(&self.list), COLUMNS),
        )
    }

    /// The preempted jobs, sorted as the list is.
    fn draw_jobs(
        &self,
        frame: &mut Frame,
        top: Rect,
        title: String,
        (q, v): (&quotatop_model::QueueSnapshot, &crate::data::QueueView),
        ctx: &DrawCtx,
    ) {
        let theme = ctx.theme;
        let queue = q.key();
        let marked = |r: usize| {
            v.preemptions
                .get(r)
                .is_some_and(|f| ctx.marks.contains(&queue, &f.job_id))
        };
        let block = screen::block(title, Some(&self.list), COLUMNS, theme);
        let widths = screen::layout(&top_columns(q, v), top.width);
        let w: Vec<usize> = widths.iter().map(|&x| usize::from(x)).collect();
        // The date with the time when there is room, else the time of day only.
        let dated = w.get(7).is_some_and(|&d| d >= 20);
        let header = [
            "NAME",
            "SHARE",
            "STATUS",
            "PRE",
            "FLAGS",
            "INST-H",
            "GPU-H",
            if dated { "LAST PREEMPTED" } else { "LAST" },
        ];
        screen::draw_table(
            frame,
            top,
            screen::TableView {
                block,
                header: &screen::sorted_header(&header, &self.list, SORTED),
                widths: &widths,
                list: &self.list,
                focused: !self.on_attempts,
                marked: Some(&marked),
            },
            theme,
            |r| {
                v.preemptions
                    .get(r)
                    .map_or_else(Vec::new, |f| job_row(f, &w, dated, theme))
            },
        );
    }

    /// The selected job's preempted attempts, newest first, in the pane's own list (scrolled
    /// with Tab then Up/Down).
    fn draw_attempts(
        &self,
        frame: &mut Frame,
        bottom: Rect,
        selected: Option<&PreemptionFacts>,
        attempts: &[AttemptRow],
        with_history: bool,
        theme: &Theme,
    ) {
        // Rows match the selected job's attempts after every move and refresh, and are
        // clamped here in case they do not.
        let fresh;
        let detail: &ListState = if self.attempts.rows.len() == attempts.len() {
            &self.attempts
        } else {
            let mut d = ListState::default();
            d.set_rows((0..attempts.len()).collect(), |_| false);
            fresh = d;
            &fresh
        };
        let block = screen::block(
            attempts_title(selected, attempts.len(), with_history, bottom.width),
            None,
            &[],
            theme,
        );
        let header = ["STARTED", "STOPPED", "RAN", "REASON"].map(String::from);
        let widths = screen::layout(
            &[
                screen::Col::fixed(20, 0),
                screen::Col::fixed(20, 0),
                screen::Col::fixed(7, 0),
                screen::Col::graphic(10, 1, 1),
            ],
            bottom.width,
        );
        screen::draw_table(
            frame,
            bottom,
            screen::TableView {
                block,
                header: &header,
                widths: &widths,
                list: detail,
                focused: self.on_attempts,
                marked: None,
            },
            theme,
            |r| {
                attempts
                    .get(r)
                    .map_or_else(Vec::new, |a| attempt_row(a, theme))
            },
        );
    }
}

