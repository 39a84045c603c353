//! Lists and text panes: a new sort starts at the top, and Home/End/Page keys reach both ends
//! of every list and text pane (help, Job detail), with a scrollbar when content does not fit.

use crate::tui_support::{options, run, run_with, screen_text, snapshot, typed};
use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use quotatop_model::Snapshot;

fn key(code: KeyCode) -> Event {
    Event::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

/// The screen's lines.
fn lines(text: &str) -> Vec<&str> {
    text.lines().collect()
}

/// Index of the line holding the table's header (`NAME`).
fn header_line(text: &str) -> usize {
    lines(text)
        .iter()
        .position(|l| l.contains("NAME"))
        .unwrap_or_else(|| panic!("no header:\n{text}"))
}

/// The fixture with each ml-training job three times over (48 jobs: more than a screen).
fn many_jobs() -> Snapshot {
    let mut s = snapshot();
    let q = &mut s.queues[0];
    let extra: Vec<_> = (1..3)
        .flat_map(|k| {
            q.jobs.iter().map(move |j| {
                let mut j = j.clone();
                std::sync::Arc::make_mut(&mut j.job).id = format!("{}-{k}", j.job.id);
                std::sync::Arc::make_mut(&mut j.job).name = format!("{}-copy{k}", j.job.name);
                j.arn = format!("{}-{k}", j.arn);
                j
            })
        })
        .collect();
    q.jobs.extend(extra);
    s
}

#[tokio::test]
async fn a_new_sort_goes_to_the_top() {
    // Jobs at the bottom (G), then sorted six times (back to status): the first row is shown
    // and selected, not the old scroll offset with the RUNNABLE rows hidden above it.
    let jobs = |keys: &str| run_with(80, 24, options(), vec![many_jobs()], typed(keys));
    let (t, _) = jobs("2Gssssss").await;
    let text = screen_text(&t);
    let first = lines(&text)[header_line(&text) + 1];
    assert!(first.contains("▶"), "first row selected:\n{text}");
    let (t2, _) = jobs("2").await;
    assert_eq!(
        lines(&screen_text(&t2))[header_line(&text) + 1],
        first,
        "the same first row as a fresh Jobs screen"
    );
    // Reversed: the top too.
    let (t, _) = jobs("2GS").await;
    let text = screen_text(&t);
    assert!(lines(&text)[header_line(&text) + 1].contains("▶"), "{text}");
}

#[tokio::test]
async fn the_sorted_column_has_an_arrow() {
    let (t, _) = run(100, 24, options(), typed("2")).await;
    let text = screen_text(&t);
    let header = lines(&text)[header_line(&text)];
    assert!(header.contains("STATUS▲"), "{header}");
    // s: status → name; S reverses.
    let (t, _) = run(100, 24, options(), typed("2sS")).await;
    let text = screen_text(&t);
    assert!(lines(&text)[header_line(&text)].contains("NAME▼"), "{text}");
    let (t, _) = run(100, 24, options(), typed("3")).await;
    let text = screen_text(&t);
    assert!(lines(&text)[header_line(&text)].contains("PRE▼"), "{text}");
}

#[tokio::test]
async fn end_in_help_shows_its_last_line_and_a_scrollbar() {
    let (t, app) = run(80, 24, options(), typed("?")).await;
    assert!(app.help_open());
    let text = screen_text(&t);
    assert!(
        !text.contains("Keys can be rebound"),
        "the end is below:\n{text}"
    );
    assert!(
        text.contains('█'),
        "a scrollbar says there is more:\n{text}"
    );
    for end in [typed("?G"), vec![typed("?")[0].clone(), key(KeyCode::End)]] {
        let (t, _) = run(80, 24, options(), end).await;
        let text = screen_text(&t);
        assert!(text.contains("Keys can be rebound"), "{text}");
    }
    // Home goes back to the first line; PgDn twice then PgUp is one page down.
    let (t, _) = run(80, 24, options(), typed("?Gg")).await;
    assert!(screen_text(&t).contains("Keys"), "top again");
    assert!(!screen_text(&t).contains("Keys can be rebound"));
}

/// The rows inside the body pane's border (between its top and bottom border lines).
fn pane_rows(text: &str) -> Vec<&str> {
    let ls = lines(text);
    let top = ls.iter().position(|l| l.starts_with('┌')).unwrap_or(0);
    let bottom = ls
        .iter()
        .rposition(|l| l.starts_with('└'))
        .unwrap_or(ls.len());
    ls[top + 1..bottom].to_vec()
}

#[tokio::test]
async fn end_in_job_detail_puts_the_last_line_at_the_bottom() {
    // The looping job (its preempted attempts make the detail longer than 24 lines).
    let open = ":job video-pretrain\n";
    let (t, app) = run(80, 24, options(), typed(open)).await;
    assert_eq!(app.screen_kind(), quotatop_tui::screen::Kind::JobDetail);
    let text = screen_text(&t);
    assert!(text.contains('█'), "a scrollbar: more below\n{text}");
    for end in [
        "G",
        "GG",
        "jjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjj",
    ] {
        let (t, _) = run(80, 24, options(), typed(&format!("{open}{end}"))).await;
        let text = screen_text(&t);
        let rows = pane_rows(&text);
        let last = rows.last().copied().unwrap_or_default();
        assert!(
            last.trim_matches(|c| c == '│' || c == ' ' || c == '█')
                .len()
                > 2,
            "{end}: the last line at the bottom, not blank rows:\n{text}"
        );
    }
    // After End, one Up shows one line more at the top (no dead keys past the end).
    let (t1, _) = run(80, 24, options(), typed(&format!("{open}G"))).await;
    let (t2, _) = run(80, 24, options(), typed(&format!("{open}Gk"))).await;
    assert_ne!(
        screen_text(&t1),
        screen_text(&t2),
        "Up after End scrolls at once"
    );
}

/// The looping job with the API's `attempts` listing all four preempted attempts (one without
/// its start time) and a fifth not started, while the API's window of preempted attempts holds
/// only the newest two.
fn looping_job_with_attempts() -> Snapshot {
    let mut s = snapshot();
    let q = &mut s.queues[0];
    let j = q
        .jobs
        .iter_mut()
        .find(|j| j.job.name == "video-pretrain")
        .unwrap();
    let job = std::sync::Arc::make_mut(&mut j.job);
    let p = job.preemption.as_mut().unwrap();
    let mut attempts: Vec<quotatop_model::Attempt> = p
        .recent_preempted_attempts
        .iter()
        .rev()
        .map(|a| quotatop_model::Attempt {
            resource_id: a.resource_id.clone(),
            started_at: a.started_at,
            stopped_at: Some(a.stopped_at),
            status_reason: Some(a.status_reason.clone()),
        })
        .collect();
    attempts[2].started_at = None;
    attempts.push(quotatop_model::Attempt {
        resource_id: "arn:aws:sagemaker:us-east-1:123456789012:training-job/video-pretrain-5"
            .into(),
        started_at: None,
        stopped_at: None,
        status_reason: None,
    });
    job.attempts = attempts;
    let p = job.preemption.as_mut().unwrap();
    p.recent_preempted_attempts.truncate(2);
    s
}

/// Every `(start, stop)` pair of `YYYY-MM-DD HH:MM:SSZ` times on the lines, in order.
fn time_pairs(lines: &[&str]) -> Vec<(String, String)> {
    lines
        .iter()
        .filter_map(|l| {
            let times: Vec<String> = l
                .match_indices("2026-")
                .map(|(i, _)| l[i..].chars().take(20).collect())
                .collect();
            (times.len() >= 2).then(|| (times[0].clone(), times[1].clone()))
        })
        .collect()
}

#[tokio::test]
async fn job_detail_and_preemptions_list_the_same_attempts() {
    let snap = looping_job_with_attempts;
    let (t, _) = run_with(
        200,
        60,
        options(),
        vec![snap()],
        typed(":job video-pretrain\n"),
    )
    .await;
    let detail = screen_text(&t);
    assert!(
        !detail.contains("not listed"),
        "all four are listed:\n{detail}"
    );
    assert!(detail.contains("Attempts (5, 4 preempted"), "{detail}");
    let ls = lines(&detail);
    let attempts_at = ls.iter().position(|l| l.contains("Attempts (")).unwrap();
    let detail_pairs = time_pairs(&ls[attempts_at..]);

    let (t, _) = run_with(200, 60, options(), vec![snap()], typed("3")).await;
    let pre = screen_text(&t);
    let ls = lines(&pre);
    let pane_at = ls.iter().position(|l| l.contains("STARTED")).unwrap();
    assert!(pre.contains("video-pretrain · 4 (newest first)"), "{pre}");
    let pane_pairs = time_pairs(&ls[pane_at..]);
    assert_eq!(pane_pairs.len(), 4, "{pre}");
    assert_eq!(
        detail_pairs, pane_pairs,
        "detail:\n{detail}\npreemptions:\n{pre}"
    );
}

/// An attempt whose start was never seen (not in the attempts list, gone from the API's
/// window) reads "start unknown" and ran "unknown" on both screens, not a made-up start.
#[tokio::test]
async fn an_attempt_never_seen_starting_reads_start_unknown() {
    let snap = || {
        let mut s = looping_job_with_attempts();
        let j = s.queues[0]
            .jobs
            .iter_mut()
            .find(|j| j.job.name == "video-pretrain")
            .unwrap();
        std::sync::Arc::make_mut(&mut j.job).attempts[0].started_at = None;
        s
    };
    let (t, _) = run_with(
        200,
        60,
        options(),
        vec![snap()],
        typed(":job video-pretrain\n"),
    )
    .await;
    let detail = screen_text(&t);
    // The attempts list shows it once, and the preemptions line says its loss is not counted.
    let unknown: Vec<&str> = lines(&detail)
        .into_iter()
        .filter(|l| l.contains("start unknown") && l.contains('→'))
        .collect();
    assert_eq!(unknown.len(), 1, "{detail}");
    assert!(
        detail.contains("(at least: 1 attempt with start unknown not counted)"),
        "{detail}"
    );
    assert!(unknown[0].contains("ran unknown"), "{detail}");
    let (t, _) = run_with(200, 60, options(), vec![snap()], typed("3")).await;
    let pre = screen_text(&t);
    let unknown: Vec<&str> = lines(&pre)
        .into_iter()
        .filter(|l| l.contains("start unknown"))
        .collect();
    assert_eq!(unknown.len(), 1, "{pre}");
    assert!(
        unknown[0].contains("unknown") && !unknown[0].contains(" 0s"),
        "{pre}"
    );
}

/// Issue 29 §2.2: a new filter starts at its first match. Jobs, `G` to the last row, then
/// `/vision`: every match is shown from the top, the first one selected; none is scrolled off
/// above the view.
#[tokio::test]
async fn a_new_filter_starts_at_its_first_match() {
    let (t, _) = run_with(120, 30, options(), vec![many_jobs()], typed("2G/vision\n")).await;
    let text = screen_text(&t);
    let ls = lines(&text);
    let h = header_line(&text);
    let first = ls[h + 1];
    assert!(first.contains('▶') && first.contains("vision"), "{text}");
    let shown = ls[h + 1..]
        .iter()
        .take_while(|l| l.contains("vision"))
        .count();
    let matches = many_jobs().queues[0]
        .jobs
        .iter()
        .filter(|j| j.job.name.contains("vision") || j.job.share.contains("vision"))
        .count();
    assert!(matches > 1, "the fixture has several matches");
    assert_eq!(shown, matches, "{text}");
}

/// Issue 29 §2.9: new live data keeps the Jobs cursor on its row (as k9s does), not on the job:
/// the selected job finishing moves it down the status sort, and the view stays still.
#[tokio::test]
async fn new_data_keeps_the_jobs_row_not_the_job() {
    use crate::tui_support::{Step, drive_steps};
    let selected = |text: &str| -> (usize, String) {
        let ls = lines(text);
        let at = ls.iter().position(|l| l.contains('▶')).unwrap();
        let name = ls[at]
            .split('▶')
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .unwrap()
            .to_string();
        (at, name)
    };
    let (t, _) = run(120, 30, options(), typed("2jjj")).await;
    let (row, name) = selected(&screen_text(&t));
    let mut changed = snapshot();
    for j in changed.queues[0]
        .jobs
        .iter_mut()
        .filter(|j| j.job.name == name)
    {
        let job = std::sync::Arc::make_mut(&mut j.job);
        job.status = quotatop_model::JobStatus::Succeeded;
        job.stopped_at = Some(crate::tui_support::NOW - 1_000);
    }
    let (t, _) = drive_steps(
        120,
        30,
        options(),
        quotatop_tui::effects::Services::default(),
        snapshot(),
        vec![Step::Keys("2jjj"), Step::Live(changed)],
    )
    .await;
    let text = screen_text(&t);
    let (row_after, name_after) = selected(&text);
    assert_eq!(row_after, row, "the cursor stays on its row:\n{text}");
    assert_ne!(name_after, name, "{name} moved away under it:\n{text}");
    assert!(text.contains(&name), "{name} is still listed:\n{text}");
}
