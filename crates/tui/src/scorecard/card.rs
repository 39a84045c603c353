//! Drawing a computed scorecard: the queue's summary lines, the table of shares with their
//! sparklines (its columns fitted to the room), the audit view under it, and the words and
//! sparkline they are written in.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Cell, Paragraph, Row, Table, Wrap};

use super::{SERIES_BUCKETS, ScorecardView};
use crate::text::clean;
use crate::theme::{Role, Theme};
use quotatop_analysis::scorecard::{AuditView, COLUMNS, Column, Scope, Scorecard, format as fmt};
use quotatop_model::Millis;

/// The line on deadlines and interruption budgets: breaches first, in words. Without the
/// config's, it says where a policy's are judged instead (never "none set" while the Policy
/// screen judges them).
fn budget_line(view: &ScorecardView, theme: &Theme) -> Line<'static> {
    let e = &view.evaluation;
    if !view.rules_set {
        return Line::from(Span::styled(
            " no deadlines or interruption budgets in the config ([deadlines.SHARE], [budgets.SHARE]); \
             a policy's deadlines and budgets are judged on the Policy screen (:policy)",
            theme.style(Role::Muted),
        ));
    }
    let breaches = e.budget_breaches();
    let over: Vec<String> = e
        .budgets
        .iter()
        .filter(|b| b.jobs_over_preemptions + b.days_over_lost > 0)
        .map(|b| {
            let mut parts = Vec::new();
            if b.jobs_over_preemptions > 0 {
                parts.push(format!(
                    "{} job(s) over its preemption budget",
                    b.jobs_over_preemptions
                ));
            }
            if b.days_over_lost > 0 {
                parts.push(format!(
                    "{} day(s) over its lost GPU-h budget",
                    b.days_over_lost
                ));
            }
            format!(
                "{} {}",
                quotatop_model::clean_text(&b.share),
                parts.join(", ")
            )
        })
        .collect();
    let budgets = if !e.budgets_defined {
        Span::raw(" interruption not judged: no budget defined".to_string())
    } else if breaches == 0 {
        Span::raw(" budgets: no breach".to_string())
    } else {
        Span::styled(
            format!(" BUDGET BREACHED: {}", over.join("; ")),
            theme.style(Role::Critical),
        )
    };
    Line::from(vec![
        budgets,
        Span::raw(format!(
            " · deadlines missed {}/{} (important {}/{}) · important P95 wait {}",
            e.all.deadlines.missed,
            e.all.deadlines.with_deadline,
            e.important.deadlines.missed,
            e.important.deadlines.with_deadline,
            fmt::duration(e.important.wait.p95_ms),
        )),
    ])
}

/// A span for people: the one duration format ([`quotatop_model::format_duration`]).
pub fn span(ms: Millis) -> String {
    quotatop_model::format_duration(ms)
}

/// Which window the figures cover: `last 24 h`, or `12 min of history` when the journal holds
/// less than the window asked for.
pub fn window_label(view: &ScorecardView) -> String {
    let len = view.card.window.len_ms();
    if len < view.asked_ms {
        format!("{} of history", span(len))
    } else {
        format!("last {}", span(len))
    }
}

const LEVELS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// `values` scaled to `max` (all shares share one scale, so heights compare).
pub fn spark(values: &[f64], max: f64) -> String {
    let max = if max > 0.0 { max } else { 1.0 };
    values
        .iter()
        .map(|v| {
            let level = ((v.max(0.0) / max) * (LEVELS.len() - 1) as f64).round() as usize;
            LEVELS[level.min(LEVELS.len() - 1)]
        })
        .collect()
}
/// The table's head: the share, every figure of the scorecard's column list, the sparkline.
fn header() -> Vec<&'static str> {
    std::iter::once("share")
        .chain(COLUMNS.iter().map(|c| c.header))
        .chain(std::iter::once("held"))
        .collect()
}

/// The audit view under the table: who changed priorities in which share, and jobs raised
/// repeatedly (at most three of each; `report` lists them all).
fn exception_lines(x: &AuditView, theme: &Theme) -> Vec<Line<'static>> {
    let muted = theme.style(Role::Muted);
    let mut out = vec![Line::from(Span::styled(
        " priority changes (operator · share · changes / raises / without change record)",
        theme.style(Role::Header),
    ))];
    if x.per_operator.is_empty() {
        out.push(Line::from(Span::styled(" none in the window", muted)));
    }
    for o in x.per_operator.iter().take(3) {
        let role = if o.without_change_record > 0 {
            Role::Warning
        } else {
            Role::Text
        };
        out.push(Line::from(vec![
            Span::raw(format!(" {} · {} · ", clean(&o.operator), clean(&o.share))),
            Span::styled(
                format!("{} / {} / {}", o.changes, o.raises, o.without_change_record),
                theme.style(role),
            ),
        ]));
    }
    if x.per_operator.len() > 3 {
        out.push(Line::from(Span::styled(
            format!(
                " … {} more (quotatop report lists all)",
                x.per_operator.len() - 3
            ),
            muted,
        )));
    }
    for j in x.raised_repeatedly.iter().take(3) {
        out.push(Line::from(Span::styled(
            format!(
                " raised {}× · job {} ({}) · {} → {}",
                j.raises,
                clean(&j.job_id),
                clean(&j.share),
                j.from,
                j.to
            ),
            theme.style(Role::Warning),
        )));
    }
    out
}

pub(super) fn draw_card(frame: &mut Frame, area: Rect, block: Block, view: &ScorecardView, theme: &Theme) {
    let card = &view.card;
    let q = &card.queue_row;
    // The window is named next to the figures: the Preemptions screen's GPU-hours cover
    // another span (every preempted attempt recorded) and another quantity.
    // Completed-work utilisation counts only finished work: early in a window, with capacity
    // busy and little finished, it is low. The share of capacity held and the GPU-hours still
    // in unfinished jobs say so beside it (from the same ledger), never inside it.
    let held = (q.utilisation.allocated_gpu_hours > 0.0)
        .then(|| q.ledger.held_gpu_hours() / q.utilisation.allocated_gpu_hours);
    let summary = vec![
        Line::from(vec![
            Span::styled(
                format!(" queue, {}: ", window_label(view)),
                theme.style(Role::Muted),
            ),
            Span::raw(format!(
                "util {} (finished work) · capacity held {} · {:.1} GPU-h in unfinished jobs",
                fmt::percent(q.utilisation.ratio),
                fmt::percent(held),
                q.ledger.unfinished_gpu_hours,
            )),
        ]),
        Line::from(Span::raw(format!(
            " wait P50 {} P95 {} · waste {:.1} GPU-h (lost {:.1} + overhead {:.1}) · recovery {} · {} jobs",
            fmt::duration(q.wait.p50_ms),
            fmt::duration(q.wait.p95_ms),
            q.waste.total_gpu_hours,
            q.waste.lost_gpu_hours,
            q.waste.overhead_gpu_hours,
            fmt::percent(q.recovery.ratio),
            q.jobs
        ))),
        Line::from(Span::raw(format!(
            " lost work: {}",
            q.ledger.lost_basis_text()
        ))),
        // Its own line: the restore's figures are read apart from the lost work's basis.
        Line::from(Span::raw(format!(" {}", q.recovery.restores.label()))),
        budget_line(view, theme),
    ];
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let exceptions = exception_lines(&view.exceptions, theme);
    let [top, table_area, bottom] = ratatui::layout::Layout::vertical([
        // Each summary line wraps rather than losing its end on a narrow terminal.
        Constraint::Length(
            summary
                .iter()
                .map(|l| l.width().max(1).div_ceil(usize::from(inner.width.max(1))) as u16)
                .sum(),
        ),
        Constraint::Fill(1),
        Constraint::Length(exceptions.len() as u16),
    ])
    .areas(inner);
    frame.render_widget(Paragraph::new(summary).wrap(Wrap { trim: false }), top);
    frame.render_widget(Paragraph::new(exceptions), bottom);
    // Names whole, then the figures, the held sparkline taking the rest; the figures least
    // read go first on a narrow screen.
    let widths = card_widths(card, table_area.width);
    let rows = card_rows(view, &widths, theme);
    let header = Row::new(crate::screen::shown_cells(
        header().into_iter().map(Cell::from).collect(),
        &widths,
    ))
    .style(theme.style(Role::Header));
    let len = rows.len();
    frame.render_widget(
        Table::new(rows, crate::screen::shown_constraints(&widths))
            .header(header)
            .column_spacing(1),
        table_area,
    );
    // More shares than rows: a scrollbar on the border beside them says so.
    let beside = Rect {
        x: area.x,
        width: area.width,
        y: table_area.y,
        height: table_area.height.saturating_add(1),
    };
    let shown = usize::from(table_area.height.saturating_sub(1));
    crate::screen::scrollbar(frame, beside, len, 0, shown, theme);
}

/// The table's widths in `room`: the sparkline whole (a cell per bucket) and the figures that
/// fit beside it; when that would leave out one of the five metrics, only the five and a
/// shorter sparkline.
fn card_widths(card: &Scorecard, room: u16) -> Vec<u16> {
    let buckets = u16::try_from(SERIES_BUCKETS).unwrap_or(u16::MAX);
    let whole = crate::screen::layout_in(&card_columns(card, buckets, true), room);
    let metrics_kept = COLUMNS
        .iter()
        .zip(whole.iter().skip(1))
        .all(|(c, w)| !c.is_metric() || *w > 0);
    if metrics_kept {
        whole
    } else {
        crate::screen::layout_in(&card_columns(card, 4, false), room)
    }
}

/// The table's columns: share names whole (the longest), every figure as wide as its header
/// and dropped in the column list's order when short (with `others` false, only the five
/// metrics), the held sparkline at least `spark` wide, growing.
fn card_columns(card: &Scorecard, spark: u16, others: bool) -> Vec<crate::screen::Col> {
    use crate::screen::Col;
    let names = card
        .shares
        .iter()
        .filter_map(|r| match &r.scope {
            Scope::Share(name) => Some(clean(name.as_str()).chars().count()),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    let width = |h: &str| u16::try_from(h.chars().count()).unwrap_or(u16::MAX);
    let names = u16::try_from(names).unwrap_or(u16::MAX).max(width("share"));
    // A figure as wide as its header, and a space of air when there is room; a column of
    // width 0 is never shown.
    let figure = |c: &Column| {
        let w = if others || c.is_metric() {
            width(c.header).max(6)
        } else {
            0
        };
        Col::text(w, usize::from(w) + 1, c.drop)
    };
    std::iter::once(Col::text(names, usize::from(names) + 1, 0))
        .chain(COLUMNS.iter().map(figure))
        .chain(std::iter::once(Col::graphic(spark, 1, 2)))
        .collect()
}

/// How a figure is shown: waste in the preempted colour, a share held 10 pp or more below its
/// entitlement as a warning.
fn figure_role(c: &Column, value: Option<f64>) -> Role {
    match (c.key, value) {
        ("waste_gpu_hours", Some(v)) if v > 0.0 => Role::Preempted,
        ("drift_pp", Some(v)) if v <= -10.0 => Role::Warning,
        _ => Role::Text,
    }
}

/// One row per share of the scorecard, in the columns `widths` keeps.
fn card_rows<'a>(view: &ScorecardView, widths: &[u16], theme: &Theme) -> Vec<Row<'a>> {
    let card = &view.card;
    // One scale for every share's sparkline.
    let max = view
        .series
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .fold(0.0_f64, f64::max);
    card.shares
        .iter()
        .filter_map(|r| match &r.scope {
            Scope::Share(name) => Some((name, r)),
            _ => None,
        })
        .map(|(name, r)| {
            let series = view
                .series
                .iter()
                .find(|(n, _)| n == name)
                .map_or_else(String::new, |(_, v)| spark(v, max));
            let figures = COLUMNS.iter().map(|c| {
                let value = (c.of)(card, r);
                Cell::from(Span::styled(
                    c.unit.text(value),
                    theme.style(figure_role(c, value)),
                ))
            });
            let cells = std::iter::once(Cell::from(clean(name).into_owned()))
                .chain(figures)
                .chain(std::iter::once(Cell::from(Span::styled(
                    series,
                    theme.style(Role::Spark),
                ))))
                .collect();
            Row::new(crate::screen::shown_cells(cells, widths)).style(theme.style(Role::Text))
        })
        .collect()
}

