//! Whole-console snapshot tests: the real app loop on ratatui's `TestBackend`, fed the fixture
//! snapshot and scripted keys, screen compared with `insta` (tests/snapshots/).

use crate::tui_support::{options, run, typed};
use insta::assert_snapshot;
use quotatop_tui::screen::Kind;

#[tokio::test]
async fn overview_at_80x24() {
    let (t, app) = run(80, 24, options(), vec![]).await;
    assert_eq!(app.screen_kind(), Kind::Overview);
    assert_snapshot!(t.backend());
}

#[tokio::test]
async fn overview_at_120x40() {
    let (t, _) = run(120, 40, options(), vec![]).await;
    assert_snapshot!(t.backend());
}

#[tokio::test]
async fn drill_down_to_a_share() {
    // Row 0 is the queue heading; row 1 is research's p4d row.
    let (t, app) = run(100, 30, options(), typed("j\n")).await;
    assert_eq!(app.screen_kind(), Kind::Share);
    assert_snapshot!(t.backend());
}

#[tokio::test]
async fn drill_down_to_a_job_from_the_share_queue() {
    let (t, app) = run(100, 40, options(), typed("j\n\n")).await;
    assert_eq!(app.screen_kind(), Kind::JobDetail);
    assert_snapshot!(t.backend());
}

#[tokio::test]
async fn esc_goes_back_up_the_stack() {
    let (t, app) = run(80, 24, options(), typed("j\n\n\x1b\x1b")).await;
    assert_eq!(app.screen_kind(), Kind::Overview);
    let (t2, _) = run(80, 24, options(), typed("j")).await;
    assert_eq!(
        t.backend().buffer(),
        t2.backend().buffer(),
        "back where we started, selection kept"
    );
}

#[tokio::test]
async fn jobs_screen_via_command_mode() {
    let (t, app) = run(100, 24, options(), typed(":jobs\n")).await;
    assert_eq!(app.screen_kind(), Kind::Jobs);
    assert_snapshot!(t.backend());
}

#[tokio::test]
async fn jobs_sorted_by_priority() {
    // s: status → name → share → priority.
    let (t, _) = run(100, 24, options(), typed("2sss")).await;
    assert_snapshot!(t.backend());
}

#[tokio::test]
async fn jobs_sort_reversed() {
    let (t, _) = run(100, 24, options(), typed("2sS")).await;
    assert_snapshot!(t.backend());
}

#[tokio::test]
async fn jobs_filtered() {
    let (t, _) = run(100, 24, options(), typed("2/vision\n")).await;
    assert_snapshot!(t.backend());
}

#[tokio::test]
async fn jobs_filter_inverted_while_typing() {
    let (t, _) = run(100, 24, options(), typed("2/!research")).await;
    assert_snapshot!(t.backend());
}

#[tokio::test]
async fn preemptions_screen() {
    let (t, app) = run(100, 30, options(), typed(":preemptions\n")).await;
    assert_eq!(app.screen_kind(), Kind::Preemptions);
    assert_snapshot!(t.backend());
}

#[tokio::test]
async fn job_detail_by_command() {
    let (t, app) = run(100, 40, options(), typed(":job video-pretrain\n")).await;
    assert_eq!(app.screen_kind(), Kind::JobDetail);
    assert_snapshot!(t.backend());
}

#[tokio::test]
async fn switch_queue_by_command() {
    let (t, _) = run(80, 24, options(), typed(":queue inference\n2")).await;
    assert_snapshot!(t.backend());
}

#[tokio::test]
async fn unknown_command_is_reported() {
    let (t, app) = run(80, 24, options(), typed(":frobnicate\n")).await;
    assert_eq!(app.screen_kind(), Kind::Overview);
    assert_snapshot!(t.backend());
}

#[tokio::test]
async fn command_prompt_while_typing() {
    let (t, _) = run(80, 24, options(), typed(":sha")).await;
    assert_snapshot!(t.backend());
}

#[tokio::test]
async fn help_overlay() {
    let (t, app) = run(100, 40, options(), typed("?")).await;
    assert!(app.help_open());
    assert_snapshot!(t.backend());
}

#[tokio::test]
async fn help_closes_with_esc() {
    let (_, app) = run(100, 40, options(), typed("?\x1b")).await;
    assert!(!app.help_open());
}

#[tokio::test]
async fn theme_switch() {
    let (t, app) = run(80, 24, options(), typed("t")).await;
    assert_eq!(app.theme().name, "high-contrast");
    assert_snapshot!(t.backend());
}

/// Issue 16: `t` goes dark → high-contrast → colorblind → light → dark.
#[tokio::test]
async fn theme_key_order() {
    let mut seen = Vec::new();
    for n in 1..=4 {
        let (_, app) = run(80, 24, options(), typed(&"t".repeat(n))).await;
        seen.push(app.theme().name.clone());
    }
    assert_eq!(seen, ["high-contrast", "colorblind", "light", "dark"]);
}

#[tokio::test]
async fn tiny_terminal() {
    let (t, _) = run(60, 16, options(), vec![]).await;
    assert_snapshot!(t.backend());
}

#[tokio::test]
async fn resize_from_tiny_to_normal() {
    let (mut t, mut app) = run(60, 16, options(), vec![]).await;
    t.backend_mut().resize(80, 24);
    t.draw(|f| app.draw(f)).unwrap();
    let (fresh, _) = run(80, 24, options(), vec![]).await;
    assert_eq!(t.backend().buffer(), fresh.backend().buffer());
}

#[tokio::test]
async fn quit_key_stops_the_loop_before_the_script_ends() {
    let (_, app) = run(80, 24, options(), typed("q2")).await;
    assert!(app.should_quit());
    assert_eq!(
        app.screen_kind(),
        Kind::Overview,
        "keys after q are not read"
    );
}

/// A job preempted more often than its share's interruption budget is flagged in words on the
/// Preemptions screen, and the title counts such jobs.
#[tokio::test]
async fn preemptions_over_an_interruption_budget_are_flagged() {
    let mut opts = options();
    opts.loop_rule.preemption_budgets = [("*".to_string(), 0)].into();
    let (t, _) = run(140, 30, opts, typed(":preemptions\n")).await;
    let s = crate::tui_support::screen_text(&t);
    assert!(s.contains("OVER BUDGET LOOP"), "{s}");
    assert!(s.contains("over budget ·"), "{s}");
    // Without budgets, nothing is flagged.
    let (t, _) = run(140, 30, options(), typed(":preemptions\n")).await;
    let s = crate::tui_support::screen_text(&t);
    assert!(
        !s.contains("OVER BUDGET") && !s.contains("over budget"),
        "{s}"
    );
}

/// The `:` prompt edits anywhere: a typo fixed with ←/Home and a character inserted there runs
/// the corrected command.
#[tokio::test]
async fn the_prompt_edits_with_a_cursor() {
    use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
    let key = |code| Event::Key(KeyEvent::new(code, KeyModifiers::NONE));
    let mut keys = typed(":jb video-pretrainX");
    keys.push(key(KeyCode::Backspace));
    keys.push(key(KeyCode::Home));
    keys.push(key(KeyCode::Right));
    keys.extend(typed("o"));
    keys.push(key(KeyCode::End));
    keys.extend(typed("\n"));
    let (_, app) = run(100, 40, options(), keys).await;
    assert_eq!(app.screen_kind(), Kind::JobDetail);
}

/// The loop derives each snapshot's analysis off the UI thread, one at a time: snapshots that
/// arrive while one is being derived wait their turn, so every one is applied in order (each
/// adds its sparkline sample) and the newest is on screen, never an older one that finished
/// late.
#[tokio::test]
async fn snapshots_derived_off_the_ui_thread_are_applied_in_order_none_lost() {
    let sized = |jobs: usize, at: i64| {
        let mut s = crate::tui_support::snapshot();
        s.taken_at = at;
        s.queues[0].jobs.truncate(jobs);
        s
    };
    let full = crate::tui_support::snapshot().queues[0].jobs.len();
    assert!(full >= 3, "the fixture has jobs to drop");
    let snapshots = vec![
        sized(full, 1_000),
        sized(1, 2_000),
        sized(full - 1, 3_000),
        sized(2, 4_000),
    ];
    let (_, app) = crate::tui_support::run_with(120, 40, options(), snapshots, vec![]).await;
    let data = app.live_data();
    assert_eq!(data.snapshot.as_ref().map(|s| s.taken_at), Some(4_000));
    assert_eq!(data.queues()[0].jobs.len(), 2, "the newest snapshot's jobs");
    let key = data.queues()[0].key();
    let samples = data
        .history
        .iter()
        .filter(|((q, _, _), _)| *q == key)
        .map(|(_, h)| h.len())
        .max();
    assert_eq!(samples, Some(4), "one sparkline sample per snapshot");
}

/// Job detail shows the checkpoint storage of a job whose prefix was listed (the current
/// objects at `[prices] s3_gb_month`, `scorecard::checkpoint_storage`) and, per attempt, how
/// long a restore its log said took (measured from the attempt's start).
#[tokio::test]
async fn job_detail_shows_checkpoint_storage_and_a_measured_restore() {
    use quotatop_model::{
        AttemptMark, CheckpointListingSeen, CheckpointObjectSeen, TrainingEvidence,
    };
    const MIN: i64 = 60_000;
    let mut snap = crate::tui_support::snapshot();
    let q = &mut snap.queues[0];
    let job = q
        .jobs
        .iter()
        .find(|t| t.job.name == "video-pretrain")
        .unwrap();
    let (id, now) = (job.job.id.clone(), snap.taken_at + 2_000);
    let second = job
        .job
        .preemption
        .as_ref()
        .unwrap()
        .recent_preempted_attempts[1]
        .clone();
    assert_eq!(second.started_at, Some(now - 70 * MIN));
    let object = |key: &str, size: u64| CheckpointObjectSeen {
        key: key.to_string(),
        last_modified: now - 100 * MIN,
        size,
    };
    q.training.push(TrainingEvidence {
        job_id: id,
        listing: Some(CheckpointListingSeen {
            uri: "s3://b/video/".into(),
            objects: vec![
                object("step-00001800/manifest.json", 212),
                object("step-00001800/model.pt", 1_468_006_400),
                object("step-00003600/manifest.json", 212),
                object("step-00003600/model.pt", 1_468_006_400),
            ],
            truncated: false,
        }),
        marks: vec![AttemptMark {
            attempt: second.resource_id.clone(),
            signal_at: None,
            restored: Some(true),
            restored_at: Some(now - 70 * MIN + 95_000),
        }],
    });
    let mut opts = options();
    opts.storage_price = quotatop_tui::StoragePrice {
        gb_month: Some(0.023),
        currency: Some("USD\x1b[2J".into()),
    };
    let (t, _) =
        crate::tui_support::run_with(200, 70, opts, vec![snap], typed(":job video-pretrain\n"))
            .await;
    let screen = crate::tui_support::screen_text(&t);
    // 2 × (1,468,006,400 + 212) = 2,936,013,224 bytes = 2.7344 GB × 0.023 = 0.0629 USD.
    assert!(
        screen.contains(
            "checkpoint storage    4 objects, 2.73 GB (2,936,013,224 bytes) · 0.06 USD�[2J/month (current objects × s3_gb_month per GB-month)"
        ),
        "{screen}"
    );
    assert!(
        screen.contains(
            "restored a checkpoint in 1m35s (measured: from its start to its log's \"restored from checkpoint\" line)"
        ),
        "{screen}"
    );
    // Only the attempt whose log said so.
    assert_eq!(
        screen.matches("restored a checkpoint in").count(),
        1,
        "{screen}"
    );
}
