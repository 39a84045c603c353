//! Job detail: everything DescribeServiceJob returned for one job, its attempts, and its
//! preemption history. Scrolls with the movement keys.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use std::cell::RefCell;

use super::data::Data;
use super::jobs::status_style;
use super::list::ListState;
use super::registry::{Opens, ScreenEntry};
use super::screen::{self, DrawCtx, Kind, Screen};
use super::text::{clean, date_time, duration, hours};
use super::theme::{Role, Theme};
use super::data::QueueView;
use quotatop_model::{Millis, QueueSnapshot, ServiceJob, TrackedJob};

/// Its entry in the screen registry (the `screens!` list in `lib.rs`).
pub const ENTRY: ScreenEntry = ScreenEntry {
    kind: Kind::JobDetail,
    opens: Opens::FromAnother,
    key: None,
    command: None,
};

#[derive(Debug)]
pub struct JobDetail {
    queue: String,
    id: String,
    /// Rows are the text lines; the selection is the top line shown.
    scroll: ListState,
    /// "Why it waits" of the snapshot it was worked out for (`taken_at`, `sequence`): the
    /// engine's pass over the whole queue, run once per snapshot, not on every redraw.
    why: RefCell<Option<WhyCache>>,
}

/// The lines of `analysis::why` for one snapshot.
#[derive(Debug)]
struct WhyCache {
    snapshot: (Millis, u64),
    lines: Option<Vec<String>>,
    /// Where the job is in the view's `dispatch` (a function of the snapshot alone), so a
    /// frame does not search tens of thousands of queued jobs.
    dispatch: Option<usize>,
}

impl JobDetail {
    pub fn new(queue: String, id: String) -> Self {
        Self {
            queue,
            id,
            scroll: ListState::text_pane(0),
            why: RefCell::new(None),
        }
    }

    fn lines(&self, data: &Data, theme: &Theme) -> Vec<Line<'static>> {
        let Some((q, v)) = data
            .queue(Some(&self.queue))
            .filter(|(q, _)| q.key() == self.queue)
        else {
            return vec![Line::from(format!("queue {} is gone", clean(&self.queue)))];
        };
        let Some(t) = v
            .job_index
            .get(&q.jobs, &self.id)
            .and_then(|i| q.jobs.get(i))
        else {
            return vec![Line::from(Span::styled(
                format!(
                    "job {} is not in the data shown (finished and gone, or, in the past, not yet submitted)",
                    clean(&self.id)
                ),
                theme.style(Role::Warning),
            ))];
        };
        let j = &t.job;
        let mut out = fields(q, t, theme);
        out.extend(
            extras(t)
                .into_iter()
                .map(|(k, v)| field_line(k, Span::raw(v), theme)),
        );
        // Where what AWS sent disagrees with itself, and what the console used instead.
        for n in &j.extras.notes {
            out.push(field_line(
                "AWS data disagrees",
                Span::styled(clean(n).into_owned(), theme.style(Role::Warning)),
                theme,
            ));
        }
        // Known once its CheckpointConfig.S3Uri was listed while the console ran.
        if let Some(s) = data.checkpoint_storage(&self.queue, &j.id) {
            out.push(field_line("checkpoint storage", Span::raw(s), theme));
        }
        self.why_and_position(&mut out, data, q, v, theme, j);
        out.push(Line::from(""));
        let facts = v.preemptions.iter().find(|f| f.job_id == j.id);
        let count = facts.map_or(j.preemption_count(), |f| f.count) as usize;
        out.push(preemptions_head(count, facts, theme));
        attempts(&mut out, data, v, j, facts, count, theme);
        out
    }

    /// "Why is this job not running?" first, under its name (worked out once per snapshot),
    /// and its place in the dispatch order.
    fn why_and_position(
        &self,
        out: &mut Vec<Line<'static>>,
        data: &Data,
        q: &QueueSnapshot,
        v: &QueueView,
        theme: &Theme,
        j: &ServiceJob,
    ) {
        let text = |k: &str, v: String| field_line(k, Span::raw(v), theme);
        let key = data
            .snapshot
            .as_ref()
            .map_or((0, 0), |s| (s.taken_at, s.sequence));
        let mut cache = self.why.borrow_mut();
        if cache.as_ref().is_none_or(|c| c.snapshot != key) {
            *cache = Some(WhyCache {
                snapshot: key,
                lines: quotatop_analysis::why(q, &j.id).map(|w| w.lines()),
                dispatch: v.dispatch.iter().position(|d| d.job_id == j.id),
            });
        }
        let why = cache.as_ref().and_then(|c| c.lines.as_deref());
        out.splice(1..1, why_it_waits(why, theme));
        let position = cache
            .as_ref()
            .and_then(|c| c.dispatch)
            .and_then(|i| v.dispatch.get(i))
            .filter(|d| d.job_id == j.id);
        drop(cache);
        if let Some(pos) = position {
            out.push(text(
                "queue position",
                format!(
                    "{} in queue, {} in share, waiting {}",
                    pos.queue_position,
                    pos.share_position,
                    duration(pos.waiting_ms)
                ),
            ));
        }
    }
}

/// The retry cap and what is left of it (AWS's definition, [`quotatop_model::retries_left`]).
fn retries_text(cap: Option<u32>, preemptions: u32) -> String {
    match (cap, quotatop_model::retries_left(cap, preemptions)) {
        (Some(n), Some(0)) => {
            format!("{n} (0 left: the next preemption terminates it)")
        }
        (Some(n), Some(left)) => format!("{n} ({left} left)"),
        _ => "unbounded (requeued forever)".to_string(),
    }
}

/// One `name   value` line.
fn field_line(k: &str, v: Span<'static>, theme: &Theme) -> Line<'static> {
    Line::from(vec![Span::styled(format!("{k:<22}"), theme.style(Role::Muted)), v])
}

/// What DescribeServiceJob said of the job, and when the console listed and described it.
fn fields(q: &QueueSnapshot, t: &TrackedJob, theme: &Theme) -> Vec<Line<'static>> {
    let j = &t.job;
    let field = |k: &str, v: Span<'static>| field_line(k, v, theme);
    let text = |k: &str, v: String| field(k, Span::raw(v));
    let time = |k: &str, at: Option<Millis>| text(k, date_time(at));
    // The service's clock minus this machine's, at the last refresh.
    let to_data_clock = match (q.server_time, q.refreshed_at) {
        (Some(s), Some(l)) => s - l,
        _ => 0,
    };
    vec![
        text("name", clean(&j.name).into_owned()),
        text("job id", clean(&j.id).into_owned()),
        text("job arn", clean(&t.arn).into_owned()),
        text("queue", clean(&q.key()).into_owned()),
        text("quota share", clean(&j.share).into_owned()),
        field(
            "status",
            Span::styled(j.status.as_str(), status_style(j.status, theme)),
        ),
        field(
            "status reason",
            Span::styled(
                clean(j.status_reason.as_deref().unwrap_or("-")).into_owned(),
                theme.style(Role::Warning),
            ),
        ),
        text(
            "scheduling priority",
            if t.described_at.is_some() {
                j.priority.to_string()
            } else {
                "not described yet".into()
            },
        ),
        text(
            "instances",
            format!("{} × {}", j.instance_count, j.instance_type),
        ),
        time("created", Some(j.created_at)),
        time("scheduled", j.scheduled_at),
        time("started", j.started_at),
        time("stopped", j.stopped_at),
        text(
            "preemption retries",
            retries_text(j.preemption_retries, j.preemption_count()),
        ),
        text(
            "terminated by user",
            if j.is_terminated { "yes" } else { "no" }.to_string(),
        ),
        // One clock per screen: this machine's times moved onto the service's.
        time("described", t.described_at.map(|l| l + to_data_clock)),
        time("listed", Some(t.listed_at + to_data_clock)),
        text("times", "UTC, on the service's clock".to_string()),
    ]
}

/// What else DescribeServiceJob said of the job (its retry strategy, attempt timeout, tags and
/// `capacityUsage` as sent), as (field, text); a job not described yet says so.
fn extras(t: &TrackedJob) -> Vec<(&'static str, String)> {
    let keys = ["retry strategy", "attempt timeout", "tags", "capacity usage"];
    if t.described_at.is_none() {
        return keys.map(|k| (k, "not described yet".to_string())).into();
    }
    let e = &t.job.extras;
    let retry = e.retry.as_ref().map_or_else(
        || "none".to_string(),
        |r| {
            let mut parts = vec![r.attempts.map_or_else(
                || "attempts not given".to_string(),
                |n| format!("{n} attempts"),
            )];
            parts.extend(r.evaluate_on_exit.iter().map(|x| {
                format!(
                    "{} on {:?}",
                    clean(x.action.as_deref().unwrap_or("?")),
                    clean(x.on_status_reason.as_deref().unwrap_or("*"))
                )
            }));
            parts.join("; ")
        },
    );
    let timeout = e
        .timeout_seconds
        .map_or_else(|| "none".to_string(), |s| duration(Some(s.saturating_mul(1000))));
    let tags = if e.tags.is_empty() {
        "none".to_string()
    } else {
        e.tags
            .iter()
            .map(|(k, v)| format!("{}={}", clean(k), clean(v)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let usage = if e.capacity_usage.is_empty() {
        "none sent".to_string()
    } else {
        e.capacity_usage
            .iter()
            .map(|u| format!("{} {}", clean(&u.unit), u.quantity))
            .collect::<Vec<_>>()
            .join(", ")
    };
    keys.into_iter()
        .zip([retry, timeout, tags, usage])
        .collect()
}

/// `Preemptions (n)`, with the time lost and the flags of the job's preemption facts.
fn preemptions_head(
    count: usize,
    facts: Option<&quotatop_analysis::PreemptionFacts>,
    theme: &Theme,
) -> Line<'static> {
    let mut head = vec![Span::styled(
        format!("Preemptions ({count})"),
        theme.style(Role::Header),
    )];
    if let Some(f) = facts {
        head.push(Span::raw(format!(
            "  lost {:.1} instance-h, {} GPU-h{}",
            f.instance_hours_lost,
            hours(f.gpu_hours_lost),
            loss_note(f)
        )));
        for (flag, role) in super::preemptions::flags(f) {
            head.push(Span::raw("  "));
            head.push(Span::styled(flag, theme.style(role)));
        }
    }
    Line::from(head)
}

/// The attempts, newest first, with each one's restore time and reason, and how many older
/// preempted ones the API no longer lists.
fn attempts(
    out: &mut Vec<Line<'static>>,
    data: &Data,
    v: &QueueView,
    j: &ServiceJob,
    facts: Option<&quotatop_analysis::PreemptionFacts>,
    count: usize,
    theme: &Theme,
) {
    let muted = theme.style(Role::Muted);
    // One list of attempts, the same the Preemptions screen shows (its preempted ones).
    let attempts = attempts_of(j, facts);
    let preempted = attempts.iter().filter(|a| a.preempted).count();
    let source = source_note(facts);
    out.push(Line::from(Span::styled(
        format!(
            "Attempts ({}, {preempted} preempted, newest first{source})",
            attempts.len()
        ),
        theme.style(Role::Header),
    )));
    if attempts.is_empty() {
        out.push(Line::from(Span::styled("  none", muted)));
    }
    for (i, a) in attempts.iter().enumerate() {
        out.push(Line::from(vec![
            Span::raw(if a.start_unknown() {
                format!(
                    "  {:>2}  {:<20}  →  {}  ran {:<7} ",
                    attempts.len() - i,
                    "start unknown",
                    date_time(a.stopped_at),
                    "unknown",
                )
            } else {
                format!(
                    "  {:>2}  {}  →  {}  ran {:<7} ",
                    attempts.len() - i,
                    date_time(a.started_at),
                    date_time(a.stopped_at),
                    duration(a.ran()),
                )
            }),
            // The training job's name (the ARN's tail; the rest is the same for each).
            Span::styled(
                clean(a.resource_id.rsplit('/').next().unwrap_or(&a.resource_id)).into_owned(),
                muted,
            ),
        ]));
        if let Some(ms) = a
            .started_at
            .and_then(|s| data.measured_restore(&a.resource_id, s))
        {
            out.push(Line::from(Span::styled(
                format!(
                    "      restored a checkpoint in {} (measured: from its start to its log's \"{}\" line)",
                    duration(Some(ms)),
                    quotatop_model::RESTORE_PATTERN
                ),
                muted,
            )));
        }
        let reason = match &a.reason {
            Some(r) => clean(r).into_owned(),
            None if a.preempted => super::preemptions::NO_REASON.to_string(),
            None => continue,
        };
        let role = if a.preempted {
            Role::Preempted
        } else {
            Role::Muted
        };
        out.push(Line::from(Span::styled(
            format!("      {reason}"),
            theme.style(role),
        )));
    }
    if preempted < count {
        out.push(Line::from(Span::styled(
            format!(
                "  … {} older preempted attempt(s) not listed: the API keeps only the most recent{}",
                count - preempted,
                if v.with_history {
                    ", and the journal did not see them"
                } else {
                    ""
                }
            ),
            muted,
        )));
    }
}

/// Why the loss shown is a lower bound, if it is: older attempts not kept, or attempts whose
/// start was never seen (their time is unknown, not counted as zero).
fn loss_note(f: &quotatop_analysis::PreemptionFacts) -> String {
    let mut why = Vec::new();
    if f.loss_is_partial {
        why.push("older attempts not kept".to_string());
    }
    if f.starts_unknown > 0 {
        why.push(format!(
            "{} attempt{} with start unknown not counted",
            f.starts_unknown,
            if f.starts_unknown == 1 { "" } else { "s" }
        ));
    }
    if why.is_empty() {
        String::new()
    } else {
        format!(" (at least: {})", why.join(", "))
    }
}

/// `, from events` when Batch's events gave times to the job's loop history; nothing otherwise
/// (the API's window is what the console always had).
fn source_note(facts: Option<&quotatop_analysis::PreemptionFacts>) -> String {
    facts
        .filter(|f| f.from_events > 0)
        .map(|f| format!(", {}", quotatop_analysis::history_source(f)))
        .unwrap_or_default()
}

/// The job's attempts: the API's list merged with the preempted attempts its preemption facts
/// know (the API's window widened by the journal), as the Preemptions screen lists them.
pub fn attempts_of(
    j: &quotatop_model::ServiceJob,
    facts: Option<&quotatop_analysis::PreemptionFacts>,
) -> Vec<quotatop_analysis::AttemptRow> {
    let api = j
        .preemption
        .as_ref()
        .map_or(&[][..], |p| p.recent_preempted_attempts.as_slice());
    quotatop_analysis::job_attempts(&j.attempts, facts.map_or(api, |f| f.recent.as_slice()))
}

impl Screen for JobDetail {
    fn kind(&self) -> Kind {
        Kind::JobDetail
    }

    fn selected_job(&self, _data: &Data, _queue: Option<&str>) -> Option<(String, String)> {
        Some((self.queue.clone(), self.id.clone()))
    }

    fn refresh(&mut self, data: &Data, _queue: Option<&str>) {
        let n = self.lines(data, &super::theme::Theme::plain("count")).len();
        self.scroll.set_rows((0..n).collect(), |_| false);
    }

    fn draw(&self, frame: &mut Frame, area: Rect, ctx: &DrawCtx) {
        let lines = self.lines(ctx.data, ctx.theme);
        let title = format!("Job {}", clean(&self.id));
        let block = screen::block(title, None, &[], ctx.theme);
        screen::draw_text(frame, area, block, lines, &self.scroll, ctx.theme);
    }

    fn list(&mut self) -> Option<&mut ListState> {
        Some(&mut self.scroll)
    }

    fn list_ref(&self) -> Option<&ListState> {
        None
    }
}

/// Columns the "Why it waits" text is wrapped to: an 80-column terminal's pane.
const WHY_WIDTH: usize = 76;

/// The "Why it waits" section of a waiting job (`analysis::why`), wrapped to [`WHY_WIDTH`]
/// columns, followed by a blank line; nothing for a job that is not waiting.
fn why_it_waits(why: Option<&[String]>, theme: &Theme) -> Vec<Line<'static>> {
    let Some(why) = why else {
        return Vec::new();
    };
    let mut out = vec![Line::from(Span::styled(
        "Why it waits",
        theme.style(Role::Header),
    ))];
    for (i, line) in why.iter().enumerate() {
        let role = if i == 0 {
            Role::Warning
        } else if line.starts_with("What would change it") {
            Role::Header
        } else {
            Role::Text
        };
        let indent = if line.starts_with('·') { "    " } else { "  " };
        for (k, part) in wrap(&clean(line), WHY_WIDTH - 2).into_iter().enumerate() {
            let lead = if k == 0 { "  " } else { indent };
            out.push(Line::from(Span::styled(
                format!("{lead}{part}"),
                theme.style(role),
            )));
        }
    }
    out.push(Line::from(""));
    out
}

/// Words of `text` in lines of at most `width` columns (a longer word is cut).
fn wrap(text: &str, width: usize) -> Vec<String> {
    use unicode_width::UnicodeWidthStr;
    let mut lines = Vec::new();
    let mut cur = String::new();
    for word in text.split(' ') {
        let w = cur.width() + usize::from(!cur.is_empty()) + word.width();
        if !cur.is_empty() && w > width {
            lines.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(word);
    }
    lines.push(cur);
    lines
}

#[cfg(test)]
mod retries_tests {
    use super::retries_text;

    #[test]
    fn retries_left_follow_aws_definition_at_the_boundaries() {
        assert_eq!(retries_text(Some(3), 1), "3 (2 left)");
        assert_eq!(
            retries_text(Some(1), 1),
            "1 (0 left: the next preemption terminates it)"
        );
        assert_eq!(retries_text(Some(1), 0), "1 (1 left)");
        assert_eq!(retries_text(None, 4), "unbounded (requeued forever)");
    }
}

#[cfg(test)]
mod extras_tests {
    use super::extras;
    use quotatop_model::{CapacityUsed, ExitRule, JobStatus, RetryStrategy};

    #[test]
    fn what_describe_service_job_sent_is_shown_or_said_absent() {
        let mut t = quotatop_analysis::fixture::job("a", "s", "ml.m5.large", 1, JobStatus::Running, 1, 0);
        t.described_at = None;
        assert_eq!(extras(&t)[0].1, "not described yet");
        t.described_at = Some(1);
        assert_eq!(
            extras(&t).into_iter().map(|(_, v)| v).collect::<Vec<_>>(),
            ["none", "none", "none", "none sent"]
        );
        let j = std::sync::Arc::make_mut(&mut t.job);
        j.extras.retry = Some(RetryStrategy {
            attempts: Some(3),
            evaluate_on_exit: vec![ExitRule {
                action: Some("RETRY".into()),
                on_status_reason: Some("Spot*\u{1b}[2J".into()),
            }],
        });
        j.extras.timeout_seconds = Some(7_200);
        j.extras.tags.insert("team".into(), "vision".into());
        j.extras.capacity_usage.push(CapacityUsed {
            unit: "NUM_INSTANCES".into(),
            quantity: 1.0,
        });
        let got = extras(&t);
        assert_eq!(got[0], ("retry strategy", "3 attempts; RETRY on \"Spot*�[2J\"".to_string()));
        assert_eq!(got[1], ("attempt timeout", "2h00m".to_string()));
        assert_eq!(got[2], ("tags", "team=vision".to_string()));
        assert_eq!(got[3], ("capacity usage", "NUM_INSTANCES 1".to_string()));
    }
}
