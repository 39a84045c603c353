//! Issue 16, "honest states" and the small ones, driven by keys: `:queue` and `Q` keep the
//! screen, `Q` with one queue says so, config warnings stay in `:messages`, footer hints per
//! screen.

use crate::tui_support::{options, run, run_with, screen_text, snapshot, typed};
use quotatop_tui::screen::Kind;

#[tokio::test]
async fn queue_command_keeps_the_current_screen() {
    let (t, app) = run(100, 24, options(), typed("2:queue inference\n")).await;
    assert_eq!(app.screen_kind(), Kind::Jobs, "{}", screen_text(&t));
    assert!(screen_text(&t).contains("inference"), "{}", screen_text(&t));
    let (_, app) = run(100, 24, options(), typed("3Q")).await;
    assert_eq!(app.screen_kind(), Kind::Preemptions);
}

#[tokio::test]
async fn next_queue_with_one_queue_says_so() {
    let mut s = snapshot();
    s.queues.truncate(1);
    let (t, _) = run_with(100, 24, options(), vec![s], typed("Q")).await;
    let text = screen_text(&t);
    assert!(text.contains("only one queue: ml-training"), "{text}");
}

/// Issue 16: config warnings do not vanish at the next key: the status bar counts them and
/// `:messages` lists them (with later errors).
#[tokio::test]
async fn config_warnings_stay_in_messages() {
    let mut opts = options();
    opts.warnings = vec!["config file /x/config.toml: unknown key `bogus` ignored".into()];
    let (t, app) = run(100, 24, opts, typed("jj:frobnicate\n")).await;
    let text = screen_text(&t);
    assert!(!app.messages_open());
    assert!(text.contains("1 warning (:messages)"), "{text}");
    let mut opts = options();
    opts.warnings = vec!["config file /x/config.toml: unknown key `bogus` ignored".into()];
    let (t, app) = run(100, 24, opts, typed("jj:frobnicate\n:messages\n")).await;
    let text = screen_text(&t);
    assert!(app.messages_open());
    assert!(text.contains("unknown key `bogus` ignored"), "{text}");
    assert!(text.contains("unknown command :frobnicate"), "{text}");
    let mut opts = options();
    opts.warnings = vec!["w".into()];
    let (_, app) = run(100, 24, opts, typed(":messages\n\x1b")).await;
    assert!(!app.messages_open());
}

/// Issue 16: with a config file that cannot be used, viewing goes on but priority changes are
/// refused (a broken file never loosens policy), and the status bar says so.
#[tokio::test]
async fn a_broken_config_refuses_priority_changes() {
    let mut opts = options();
    opts.status.config_broken = Some("bad config file /x/config.toml: expected `]`".into());
    let (t, app) = run(100, 30, opts, typed(":job research-sweep-04\np")).await;
    assert!(app.dialog().is_none());
    let text = screen_text(&t);
    assert!(text.contains("CONFIG BROKEN"), "{text}");
    assert!(text.contains("priority changes are refused"), "{text}");
}

/// The footer line of a screen reached by `keys` at `width` columns.
async fn footer(width: u16, keys: &str) -> String {
    let (t, _) = run(width, 30, options(), typed(keys)).await;
    screen_text(&t)
        .lines()
        .last()
        .unwrap_or_default()
        .trim_end()
        .to_string()
}

/// Issue 16: the footer offers, per screen, only what works there (generated from the key
/// table): no `/` or `s` on the Overview, `p` where a job is selected, `1`–`4` as one hint,
/// `tab` where there are panes.
#[tokio::test]
async fn footer_hints_per_screen() {
    let mut all = String::new();
    for (name, keys) in [
        ("overview", ""),
        ("share", "j\n"),
        ("jobs", "2"),
        ("job detail", "2\n"),
        ("preemptions", "3"),
        ("scorecard", "4"),
        ("policy", "5"),
    ] {
        let line = footer(160, keys).await;
        all.push_str(&format!("{name:<12}{line}\n"));
    }
    insta::assert_snapshot!(all);
    let overview = footer(160, "").await;
    // Issue 45 item 7: the Overview sorts (by contention first), so it offers `s`.
    assert!(overview.contains("<s>sort"), "{overview}");
    assert!(!overview.contains("<p>"), "{overview}");
    assert!(overview.contains("<1-5>screens"), "{overview}");
    let jobs = footer(160, "2").await;
    assert!(
        jobs.contains("<s>sort") && jobs.contains("</>filter"),
        "{jobs}"
    );
    assert!(jobs.contains("<p>priority"), "{jobs}");
}

/// Issue 16: stale live data (its refresh failed) is marked like the past: a STALE badge first
/// on the status bar and the screen's borders in the warning colour.
#[tokio::test]
async fn stale_data_is_marked_on_the_badge_and_the_border() {
    use quotatop_tui::theme::{Role, Theme};
    let mut s = snapshot();
    s.queues[0].stale_reason = Some("DescribeServiceJob: access denied".into());
    let (t, _) = run_with(100, 24, options(), vec![s], vec![]).await;
    let text = screen_text(&t);
    assert!(text.starts_with(" STALE  quotatop"), "{text}");
    assert!(text.contains("stale: DescribeServiceJob"), "{text}");
    let warn = Theme::dark().style(Role::Warning).fg;
    assert_eq!(t.backend().buffer()[(0, 2)].fg, warn.unwrap());
    // Fresh data: neither.
    let (t, _) = run(100, 24, options(), vec![]).await;
    assert!(!screen_text(&t).contains("STALE"));
    assert_ne!(t.backend().buffer()[(0, 2)].fg, warn.unwrap());
}

/// Issue 16: when the data's clock differs from this machine's by more than a minute the
/// status bar shows it; Job detail shows every time on that one clock (no local times mixed
/// in) and says which.
#[tokio::test]
async fn the_data_clock_is_shown_and_job_detail_uses_one_clock() {
    const HOUR: i64 = 3_600_000;
    let mut s = snapshot();
    for q in &mut s.queues {
        q.server_time = q.server_time.map(|t| t + 5 * HOUR);
    }
    let (t, _) = run_with(
        160,
        40,
        options(),
        vec![s.clone()],
        typed(":job research-sweep-04\n"),
    )
    .await;
    let text = screen_text(&t);
    // The clock says NOW + 1 s (02:40:01Z); the service was 5 h 2 s ahead at the refresh.
    assert!(text.contains("data clock 07:40:03Z (5h00m ahead"), "{text}");
    assert!(!text.contains("(local)"), "{text}");
    // Described at NOW - 3 s local: 07:39:59 on the service's clock (5 h 2 s ahead).
    assert!(
        text.contains("described             2026-02-02 07:39:59Z"),
        "{text}"
    );
    assert!(text.contains("UTC, on the service's clock"), "{text}");
    // In step: no data clock.
    let (t, _) = run(160, 40, options(), vec![]).await;
    assert!(!screen_text(&t).contains("data clock"));
}

/// Issue 29 §2.3: while every call fails and nothing has arrived, the status bar never says
/// "updated N ago" nor calls data "stale" that does not exist: "no data yet", failing.
#[tokio::test]
async fn no_data_yet_is_never_shown_as_updated() {
    let mut s = snapshot();
    s.queues.clear();
    s.health.state = quotatop_model::HealthState::Degraded;
    s.health.errors_last_minute = 3;
    s.health.last_error = Some("DescribeJobQueues: HTTP 404 with an empty body".into());
    let (t, _) = run_with(160, 24, options(), vec![s], Vec::new()).await;
    let text = screen_text(&t);
    assert!(!text.contains("updated"), "{text}");
    assert!(!text.contains("stale"), "{text}");
    assert!(text.contains("no data yet"), "{text}");
    assert!(text.contains("failing"), "{text}");
    // With data, "updated" as before.
    let (t, _) = run_with(160, 24, options(), vec![snapshot()], Vec::new()).await;
    assert!(screen_text(&t).contains("updated"), "{}", screen_text(&t));
}

fn ctrl_c() -> crossterm::event::Event {
    use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
    Event::Key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL))
}

fn then_ctrl_c(keys: &str, presses: usize) -> Vec<crossterm::event::Event> {
    let mut script = typed(keys);
    script.extend(std::iter::repeat_with(ctrl_c).take(presses));
    script
}

/// Issue 29 §2.8: Ctrl-C quits from everywhere but a dialog (help, `:messages`, the command
/// and filter prompts), not only closes the overlay; in a dialog (issue 45 item 5) it closes
/// the dialog and the console runs on, and a second Ctrl-C then quits.
#[tokio::test]
async fn ctrl_c_quits_from_every_overlay_and_prompt() {
    for keys in ["", "?", ":messages\n", ":que", "2/vis", "2\n"] {
        let (t, app) = run(100, 30, options(), then_ctrl_c(keys, 1)).await;
        assert!(app.should_quit(), "after {keys:?}:\n{}", screen_text(&t));
    }
    let dialog = ":job research-sweep-04\np";
    let (t, app) = run(100, 30, options(), then_ctrl_c(dialog, 1)).await;
    assert!(!app.should_quit(), "{}", screen_text(&t));
    assert!(app.dialog().is_none(), "{}", screen_text(&t));
    let (_, app) = run(100, 30, options(), then_ctrl_c(dialog, 2)).await;
    assert!(app.should_quit());
}

/// Issue 29 §2.8, issue 45 item 5: over a half-typed change, the first Ctrl-C asks; a second
/// closes the dialog (the console runs on), any other key goes back to the change.
#[tokio::test]
async fn ctrl_c_over_a_half_typed_change_asks_first() {
    let open = ":job research-sweep-04\np5";
    let (t, app) = run(100, 30, options(), then_ctrl_c(open, 1)).await;
    let text = screen_text(&t);
    assert!(!app.should_quit(), "{text}");
    assert!(app.dialog().is_some(), "{text}");
    assert!(text.contains("ctrl-c again closes the dialog"), "{text}");
    let (t, app) = run(100, 30, options(), then_ctrl_c(open, 2)).await;
    assert!(!app.should_quit(), "{}", screen_text(&t));
    assert!(app.dialog().is_none(), "{}", screen_text(&t));
    // Another key goes back to the change: the next Ctrl-C asks again.
    let mut script = then_ctrl_c(open, 1);
    script.extend(typed("0"));
    script.push(ctrl_c());
    let (t, app) = run(100, 30, options(), script).await;
    assert!(!app.should_quit(), "{}", screen_text(&t));
    assert_eq!(
        app.dialog()
            .map(|d| d.priority.value().to_string())
            .as_deref(),
        Some("50")
    );
}

/// The rows of the attention panel's box: from its title line to its bottom border.
fn panel_rows(text: &str) -> usize {
    let ls: Vec<&str> = text.lines().collect();
    let top = ls
        .iter()
        .position(|l| l.contains("Needs attention"))
        .unwrap_or_else(|| panic!("no panel:\n{text}"));
    let bottom = ls[top + 1..]
        .iter()
        .position(|l| l.trim_start().starts_with('└'))
        .unwrap_or_else(|| panic!("no bottom border:\n{text}"));
    bottom + 2
}

/// Issue 29 §2.10: at 120×40 an empty attention panel is three lines (its "nothing" line in a
/// box), not half the screen; one with items is as tall as they need.
#[tokio::test]
async fn the_attention_panel_is_as_tall_as_its_items() {
    let mut s = snapshot();
    s.queues.truncate(1);
    s.queues[0].jobs.clear();
    let (t, _) = run_with(120, 40, options(), vec![s], Vec::new()).await;
    let text = screen_text(&t);
    assert!(text.contains("nothing: no loops"), "{text}");
    assert_eq!(panel_rows(&text), 3, "{text}");
    // With items: every item is shown (its kind tag starts a line), and the box ends soon
    // after the last one (two lines per item when one wraps).
    let (t, _) = run(120, 40, options(), Vec::new()).await;
    let text = screen_text(&t);
    let ls: Vec<&str> = text.lines().collect();
    let top = ls
        .iter()
        .position(|l| l.contains("Needs attention"))
        .unwrap();
    // "Needs attention 2: 1 LOOP · 1 MISCONFIG": the count, then the counts by kind.
    let n: usize = ls[top]
        .split_once("Needs attention ")
        .and_then(|(_, r)| r.split_once(':'))
        .and_then(|(n, _)| n.parse().ok())
        .unwrap();
    let rows = panel_rows(&text);
    let tagged = ls[top + 1..top + rows - 1]
        .iter()
        .filter(|l| l.chars().nth(3).is_some_and(|c| c.is_ascii_uppercase()))
        .count();
    assert!(n > 0 && tagged == n, "{n} items, {tagged} shown:\n{text}");
    assert!(rows <= (2 * n + 2).max(5), "{text}");
}
