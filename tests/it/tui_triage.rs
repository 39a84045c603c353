//! The Overview triages: the "needs attention" panel, per-share badges, bars on a common scale
//! per instance type and the legend, at three sizes; Enter on a panel line opens its job or
//! share.

use crate::tui_support::{options, run, run_with, screen_text, snapshot, typed};
use insta::assert_snapshot;
use quotatop_model::{JobStatus, Snapshot};
use quotatop_tui::screen::Kind;

/// Bar cells (`█▓▒░`) in the Overview row of `share` × `ty`.
fn bar_cells(screen: &str, share: &str, ty: &str) -> usize {
    let line = screen
        .lines()
        .find(|l| {
            let words: Vec<&str> = l.trim_start_matches('│').split_whitespace().collect();
            words.first() == Some(&share) && words.contains(&ty)
        })
        .unwrap_or_else(|| panic!("no row for {share} {ty} in\n{screen}"));
    line.chars().filter(|c| "█▓▒░".contains(*c)).count()
}

fn check_triage(screen: &str) {
    // The counts by kind, the most urgent first.
    assert!(
        screen.contains("Needs attention 2: 1 LOOP · 1 MISCONFIG"),
        "{screen}"
    );
    // The loop and the misconfigured job, in words.
    assert!(
        screen.contains("LOOP      video-pretrain (vision) preempted 4×"),
        "{screen}"
    );
    assert!(screen.contains("needs 6 ml.g5.12xlarge; share"), "{screen}");
    // Badges: vision loops and borrows from nlp; regulated's misconfigured job.
    assert!(screen.contains("LOOP 1"), "{screen}");
    assert!(screen.contains("MISCONFIG"), "{screen}");
    assert!(screen.contains("→ vision 2"), "{screen}");
    // The legend in words.
    assert!(
        screen.contains("▓borrowed") || screen.contains("▓ borrowed"),
        "{screen}"
    );
    assert!(screen.contains("ISP"), "{screen}");
    // regulated (limit 2) draws a shorter bar than nlp (limit 4) of the same type.
    let small = bar_cells(screen, "regulated", "g5.12xlarge");
    let big = bar_cells(screen, "nlp", "g5.12xlarge");
    assert!(
        small * 2 <= big + 1 && small > 0,
        "{small} vs {big}\n{screen}"
    );
}

#[tokio::test]
async fn overview_triage_at_80x24() {
    let (t, _) = run(80, 24, options(), vec![]).await;
    check_triage(&screen_text(&t));
}

#[tokio::test]
async fn overview_triage_at_120x40() {
    let (t, _) = run(120, 40, options(), vec![]).await;
    check_triage(&screen_text(&t));
}

/// A loop's line names the key that requeues it as the keymap binds it: rebound, the hint
/// follows (and the key it names opens the requeue dialog).
#[tokio::test]
async fn a_loops_remedy_names_the_requeue_key_in_force() {
    let (t, _) = run(200, 60, options(), vec![]).await;
    let screen = screen_text(&t);
    assert!(
        screen.contains("press R to requeue it with a retry cap"),
        "{screen}"
    );
    let mut keys = std::collections::BTreeMap::new();
    keys.insert("requeue".to_string(), vec!["ctrl-r".to_string()]);
    let mut opts = options();
    opts.keymap = quotatop_tui::keymap::KeyMap::with_overrides(&keys).0;
    let (t, _) = run(200, 60, opts, vec![]).await;
    let screen = screen_text(&t);
    assert!(
        screen.contains("press ctrl-r to requeue it with a retry cap"),
        "{screen}"
    );
    assert!(!screen.contains("press R to requeue"), "{screen}");
}

#[tokio::test]
async fn overview_triage_at_200x60() {
    let (t, _) = run(200, 60, options(), vec![]).await;
    check_triage(&screen_text(&t));
    assert_snapshot!(t.backend());
}

#[tokio::test]
async fn enter_on_an_attention_line_opens_its_job() {
    let (t, app) = run(120, 40, options(), typed("\t\n")).await;
    assert_eq!(app.screen_kind(), Kind::JobDetail);
    assert!(screen_text(&t).contains("video-pretrain"));
    let (t, app) = run(120, 40, options(), typed("\tj\n")).await;
    assert_eq!(app.screen_kind(), Kind::JobDetail);
    assert!(screen_text(&t).contains("oversized-finetune"));
    // Tab again: back to the table, where Enter opens the selected share.
    let (_, app) = run(120, 40, options(), typed("\t\tj\n")).await;
    assert_eq!(app.screen_kind(), Kind::Share);
}

/// regulated full (2/2 g5) with a job waiting while nlp lends 2 g5 to vision; regulated may
/// borrow here (LEND_AND_BORROW 100%): a share that cannot borrow is not "at its limit while
/// others lend" (issue 29 §2.10).
fn regulated_at_limit() -> Snapshot {
    let mut s = snapshot();
    let q = &mut s.queues[0];
    for share in q.shares.iter_mut().filter(|s| s.name == "regulated") {
        share.sharing = quotatop_model::SharingConfig::lend_and_borrow(100);
    }
    let template = q
        .jobs
        .iter()
        .find(|j| j.job.name == "regulated-review")
        .cloned()
        .expect("fixture job");
    for (name, status, n) in [
        ("regulated-full", JobStatus::Running, 2),
        ("regulated-next", JobStatus::Runnable, 1),
    ] {
        let mut j = template.clone();
        std::sync::Arc::make_mut(&mut j.job).id = format!("{name}-id");
        j.arn = format!("arn:aws:batch:us-east-1:123456789012:service-job/{name}-id");
        std::sync::Arc::make_mut(&mut j.job).name = name.to_string();
        std::sync::Arc::make_mut(&mut j.job).status = status;
        std::sync::Arc::make_mut(&mut j.job).instance_count = n;
        std::sync::Arc::make_mut(&mut j.job).stopped_at = None;
        q.jobs.push(j);
    }
    s
}

#[tokio::test]
async fn enter_on_a_share_at_its_limit_opens_the_share() {
    let (t, app) = run_with(
        120,
        40,
        options(),
        vec![regulated_at_limit()],
        // The loop, then the share at its limit (before the misconfigured job).
        typed("\tj\n"),
    )
    .await;
    assert_eq!(app.screen_kind(), Kind::Share, "{}", screen_text(&t));
    let s = screen_text(&t);
    assert!(s.contains("Share regulated"), "{s}");
    // The Share header carries the share's badges.
    assert!(s.contains("MISCONFIG 1"), "{s}");
    let (t, _) = run_with(120, 40, options(), vec![regulated_at_limit()], vec![]).await;
    let s = screen_text(&t);
    assert!(
        s.contains("LIMIT     regulated at its limit 2/2 g5.12xlarge with 1 job waiting while nlp lends 2 to vision"),
        "{s}"
    );
}

#[tokio::test]
async fn help_explains_the_overview() {
    let (t, _) = run(120, 120, options(), typed("?")).await;
    let s = screen_text(&t);
    for term in [
        "▓  borrowed",
        "░  idle",
        "ISP",
        "WAIT",
        "PRE",
        "LOOP n",
        "MISCONFIG n",
        "← prod 2",
    ] {
        assert!(s.contains(term), "{term} missing in\n{s}");
    }
}

/// A 2-instance share's full bar is half as long as a 4-instance share's of the same type.
#[tokio::test]
async fn bars_share_a_scale_per_instance_type() {
    for (w, h) in [(80, 24), (120, 40), (200, 60)] {
        let (t, _) = run(w, h, options(), vec![]).await;
        let s = screen_text(&t);
        let small = bar_cells(&s, "regulated", "g5.12xlarge");
        let big = bar_cells(&s, "nlp", "g5.12xlarge");
        assert!(
            small > 0 && small * 2 <= big + 1,
            "{small} vs {big} at {w}x{h}\n{s}"
        );
    }
}
