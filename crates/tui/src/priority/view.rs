//! What the priority dialog draws of a preview and of a change's result: the preview's lines
//! (the console twin of `set-priority`'s `render_preview`), each victim on one line that never
//! wraps, what changed since the operator last read it, and the result naming the audit log.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

use super::super::effects::{ChangeOutcome, ChangeResult};
use super::super::screen::short_type;
use super::super::text::{clean, elide};
use super::super::theme::{Role, Theme};
use quotatop_analysis::preview::{Candidate, Changed, Preview};
use quotatop_model::display_width;

/// The fewest columns a victim's name is elided to before the line's tail is cut instead.
const MIN_NAME: usize = 9;

/// Rows `text` takes wrapped at words in `width` columns (a word wider than the line is
/// broken): at least what wrapping by columns alone takes, never less than one.
pub fn wrapped_rows(text: &str, width: usize) -> usize {
    let width = width.max(1);
    let mut rows = 1;
    let mut used = 0;
    for word in text.split_inclusive(' ') {
        let w = display_width(word);
        let visible = display_width(word.trim_end_matches(' '));
        if used > 0 && used + visible > width {
            rows += 1;
            used = 0;
        }
        used += w;
        while used > width {
            rows += 1;
            used -= width;
        }
    }
    rows.max(display_width(text).div_ceil(width))
}

/// `s` cut at the end to `width` columns, with `…` when cut.
fn cut_end(s: &str, width: usize) -> String {
    if display_width(s) <= width {
        return s.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars() {
        let w = c.width().unwrap_or(0);
        if used + w + 1 > width {
            break;
        }
        used += w;
        out.push(c);
    }
    if width > 0 {
        out.push('…');
    }
    out
}

/// One victim on one line of at most `width` columns, never wrapped onto a second line: the
/// least telling details are dropped first (instance type, time running), then the name is
/// elided in the middle, then the line is cut. In-share victims are in the job's own share;
/// a cross-share victim names its share.
pub fn victim_line(v: &Candidate, width: usize, added: bool) -> String {
    let lead = if added { "       + " } else { "       - " };
    // (text, rank: dropped from the highest when the line does not fit)
    let mut parts: Vec<(String, u8)> = Vec::new();
    if v.is_cross_share() {
        parts.push((format!("cross-share, share {}", clean(&v.share)), 0));
    }
    parts.push((format!("priority {}", v.priority), 0));
    parts.push((
        format!("{}× {}", v.instance_count, short_type(&v.instance_type)),
        2,
    ));
    parts.push((
        format!("running {}", crate::text::duration(Some(v.running_ms))),
        1,
    ));
    parts.push((format!("{:.2} inst-h", v.instance_hours_at_risk), 0));
    let name = clean(&v.name);
    let name_w = display_width(&name);
    let wanted = name_w.min(24);
    let tail = |parts: &[(String, u8)]| -> String {
        parts
            .iter()
            .map(|(t, _)| format!(" · {t}"))
            .collect::<String>()
    };
    for rank in [2, 1] {
        if display_width(lead) + wanted + display_width(&tail(&parts)) <= width {
            break;
        }
        parts.retain(|(_, r)| *r != rank);
    }
    let tail = tail(&parts);
    let name_room = width
        .saturating_sub(display_width(lead) + display_width(&tail))
        .max(MIN_NAME);
    cut_end(&format!("{lead}{}{tail}", elide(&name, name_room)), width)
}

/// Style of a label whose line changed since the operator last read the preview.
fn label(text: &'static str, changed: bool, theme: &Theme) -> Span<'static> {
    if changed {
        Span::styled(text, theme.style(Role::Warning))
    } else {
        Span::styled(text, theme.style(Role::Muted))
    }
}

fn position(p: (Option<usize>, Option<usize>)) -> String {
    match p {
        (Some(a), Some(b)) => format!("{a} → {b}"),
        _ => "not queued".to_string(),
    }
}

/// What the preview shows, travelling together: the prediction, the operator's justification
/// (and change record), what differs from the preview the operator read before, the note on
/// how far it can be trusted, the width and how many lines the victims may take.
pub struct PreviewView<'a> {
    pub preview: &'a Preview,
    pub justification: &'a str,
    pub change_record: Option<&'a str>,
    pub changed: &'a [Changed],
    pub note: Option<&'a str>,
    pub width: usize,
    pub victim_rows: usize,
}

/// What the preview shows: what changed since it was read (highlighted), the change, the
/// justification (and change record), the position, the effect, one line per victim (at most
/// `victim_rows` lines, the last saying how many more when they do not fit), and the note.
pub fn preview_lines(v: &PreviewView, theme: &Theme) -> Vec<Line<'static>> {
    let p = v.preview;
    let changed = v.changed;
    let muted = theme.style(Role::Muted);
    let mut out = changed_lines(p, changed, theme);
    let is = |f: fn(&Changed) -> bool| changed.iter().any(f);
    out.push(Line::from(vec![
        label(
            "priority ",
            is(|c| matches!(c, Changed::Priority { .. })),
            theme,
        ),
        Span::raw(format!("{} → {}", p.old_priority, p.new_priority)),
    ]));
    out.push(Line::from(vec![
        Span::styled("why      ", muted),
        Span::raw(clean(v.justification).into_owned()),
    ]));
    if let Some(r) = v.change_record {
        out.push(Line::from(vec![
            Span::styled("record   ", muted),
            Span::raw(clean(r).into_owned()),
        ]));
    }
    if let (Some(a), Some(b)) = (p.old_position, p.new_position) {
        out.push(Line::from(vec![
            label(
                "position ",
                is(|c| matches!(c, Changed::Position { .. })),
                theme,
            ),
            Span::raw(format!(
                "{a} → {b} of {} waiting in {}",
                p.queue_length,
                clean(&p.share)
            )),
        ]));
    }
    out.extend(effect_lines(v, theme));
    if let Some(n) = v.note {
        out.push(Line::from(Span::styled(format!("note     {n}"), muted)));
    }
    out
}

/// What differs from the preview the operator read before, one line each, under a warning;
/// nothing when nothing does.
fn changed_lines(p: &Preview, changed: &[Changed], theme: &Theme) -> Vec<Line<'static>> {
    let warn = theme.style(Role::Warning);
    let mut out = Vec::new();
    if changed.is_empty() {
        return out;
    }
    out.push(Line::from(Span::styled(
        "the prediction changed since you read it (marked below): read it again",
        warn,
    )));
    for c in changed {
        let text = match c {
            Changed::Priority { was } => format!(
                "  current priority was {was}, now {} (changed meanwhile)",
                p.old_priority
            ),
            Changed::Position { was } => format!(
                "  position was {}, now {}",
                position(*was),
                position((p.old_position, p.new_position))
            ),
            Changed::Effect { was } => format!("  effect was: {}", clean(was)),
            Changed::Victims { added, removed } => {
                let list = |v: &[String]| {
                    v.iter()
                        .map(|n| clean(n).into_owned())
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                match (added.is_empty(), removed.is_empty()) {
                    (false, false) => format!(
                        "  victims: now also {}; no longer {}",
                        list(added),
                        list(removed)
                    ),
                    (false, true) => format!("  victims: now also {}", list(added)),
                    _ => format!("  victims: no longer {}", list(removed)),
                }
            }
        };
        out.push(Line::from(Span::styled(text, warn)));
    }
    out
}

/// The effect in the analysis's own words ("up to N of" only for ties the snapshot cannot
/// settle), then the victims one per line (new ones highlighted) and how many more.
fn effect_lines(v: &PreviewView, theme: &Theme) -> Vec<Line<'static>> {
    let (p, changed, width) = (v.preview, v.changed, v.width);
    let muted = theme.style(Role::Muted);
    let warn = theme.style(Role::Warning);
    let mut out = Vec::new();
    let style = if p.preemptions.is_empty() {
        Style::default()
    } else {
        theme.style(Role::Preempted)
    };
    let mut effect = clean(&p.effect_headline()).into_owned();
    if !p.preemptions.is_empty() {
        effect.push(':');
    }
    out.push(Line::from(vec![
        label(
            "effect   ",
            changed.iter().any(|c| matches!(c, Changed::Effect { .. })),
            theme,
        ),
        Span::styled(effect, style),
    ]));
    let added: Vec<&str> = changed
        .iter()
        .flat_map(|c| match c {
            Changed::Victims { added, .. } => added.as_slice(),
            _ => &[],
        })
        .map(String::as_str)
        .collect();
    let all = &p.preemptions.candidates;
    let shown = if all.len() <= v.victim_rows {
        all.len()
    } else {
        v.victim_rows.saturating_sub(1)
    };
    for victim in &all[..shown] {
        let new = added.contains(&victim.name.as_str());
        out.push(Line::from(Span::styled(
            victim_line(victim, width, new),
            if new { warn } else { Style::default() },
        )));
    }
    if shown < all.len() {
        out.push(Line::from(Span::styled(
            cut_end(
                &format!(
                    "       + {} more (the audit log and `set-priority --dry-run` list them all)",
                    all.len() - shown
                ),
                width,
            ),
            muted,
        )));
    }
    out
}

/// The result as one line for the dialog and the footer, naming where it was recorded.
pub fn result_text(r: &ChangeResult) -> (String, bool) {
    let name = clean(&r.job_name).into_owned();
    let log = match &r.audit_log {
        Some(path) => format!("recorded in the audit log {}", clean(path)),
        None => "recorded in the audit log".to_string(),
    };
    match &r.result {
        Ok(ChangeOutcome::Succeeded { request_id }) => match &r.warning {
            None => (
                format!(
                    "priority of {name} set to {} (request {}); {log}",
                    r.new_priority,
                    request_id.as_deref().unwrap_or("-")
                ),
                false,
            ),
            Some(w) => (
                format!(
                    "priority of {name} set to {} and {log}, but {}",
                    r.new_priority,
                    clean(w)
                ),
                true,
            ),
        },
        Ok(ChangeOutcome::Failed { error }) => (
            format!(
                "the API refused the change to {name}: {} ({log})",
                clean(error)
            ),
            true,
        ),
        // A change just made is never a reconciled one; shown plainly all the same.
        Ok(ChangeOutcome::Reconciled { verdict }) => (format!("change to {name}: {verdict}"), true),
        Err(e) => (format!("priority of {name} not changed: {e}"), true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quotatop_model::display_width;

    /// Ten running jobs the API cannot order, two of which a raised job preempts.
    fn ten_tied() -> Preview {
        use quotatop_analysis::fixture::{job, queue};
        use quotatop_model::{JobStatus, SharingConfig};
        const P4: &str = "ml.p4d.24xlarge";
        let mut q = queue(&[("s", P4, 10, SharingConfig::reserve())]);
        q.shares[0] = q.shares[0].clone().with_in_share_preemption(true);
        q.jobs = (0..10)
            .map(|i| {
                let name = format!("research-sweep-with-a-long-name-{i:04}");
                let mut j = job(&name, "s", P4, 1, JobStatus::Running, 1, 0);
                std::sync::Arc::make_mut(&mut j.job).started_at = Some(500_000);
                j
            })
            .collect();
        q.jobs
            .push(job("target", "s", P4, 2, JobStatus::Runnable, 0, 10));
        quotatop_analysis::preview::preview(&q, "id-target", 5).unwrap()
    }

    /// Ten tied candidates in three rows: two victims, then how many more; every line fits.
    #[test]
    fn victims_that_do_not_fit_say_how_many_more() {
        let p = ten_tied();
        let theme = Theme::dark();
        let view = PreviewView {
            preview: &p,
            justification: "why",
            change_record: None,
            changed: &[],
            note: None,
            width: 50,
            victim_rows: 3,
        };
        let lines = preview_lines(&view, &theme);
        let text: Vec<String> = lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect();
        let victims: Vec<&String> = text.iter().filter(|l| l.starts_with("       ")).collect();
        assert_eq!(victims.len(), 3, "{text:#?}");
        assert!(
            victims[0].contains("…"),
            "elided in the middle: {}",
            victims[0]
        );
        assert!(victims[2].starts_with("       + 8 more"), "{text:#?}");
        for l in &victims {
            assert!(display_width(l) <= 50, "{l}");
        }
        assert!(
            text.iter()
                .any(|l| l.contains("up to 2 of 10 running jobs")),
            "{text:#?}"
        );
    }

    #[test]
    fn rows_count_wrapping_at_words() {
        assert_eq!(wrapped_rows("", 10), 1);
        assert_eq!(wrapped_rows("abc def", 10), 1);
        // Fits by columns in two rows, takes three wrapped at words.
        assert_eq!(wrapped_rows("aaaaaa bbbbbb cccccc", 10), 3);
        assert_eq!(wrapped_rows("aaaaaaaaaaaaaaaaaaaaaaaaa", 10), 3);
    }

    #[test]
    fn names_are_elided_in_the_middle_and_lines_fit() {
        assert_eq!(elide("research-sweep-0024", 10), "resea…0024");
        assert_eq!(elide("short", 10), "short");
        assert!(display_width(&elide("日本語の長いジョブ名", 7)) <= 7);
        // A victim as the preview makes it (in-share), renamed.
        let mut v = ten_tied().preemptions.candidates[0].clone();
        v.name = "a-very-long-training-job-name-for-the-paper-deadline-0042".into();
        v.instance_count = 2;
        v.running_ms = 3_600_000;
        v.instance_hours_at_risk = 2.0;
        for width in [30, 60, 78, 120] {
            let l = victim_line(&v, width, false);
            assert!(display_width(&l) <= width, "{width}: {l}");
        }
        // Details go before the name is cut short; what stays is whole.
        let l = victim_line(&v, 78, false);
        assert!(
            l.contains("a-very-long-training-…0042 · priority 1 · running 1h00m · 2.00 inst-h"),
            "{l}"
        );
        assert!(display_width(&l) <= 78, "{l}");
        let l = victim_line(&v, 140, false);
        assert!(l.contains("- a-very-long-training-job-name-for-the-paper-deadline-0042 · priority 1 · 2× p4d.24xlarge · running 1h00m · 2.00 inst-h"), "{l}");
    }
}
