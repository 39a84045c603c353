//! Every screen (Overview, Share, Jobs, Preemptions, Job detail, help, Scorecard) at the edges
//! of the supported terminal sizes (79×24, one column short of the usual 80; 80×24; 120×40;
//! 200×60) with long job and share names (long team share names; sweep names whose distinct
//! part, the index, comes last): nothing panics, every screen fits, below 80×24 the console
//! says the terminal is too small, names cut in the middle stay distinct, and the snapshots
//! show how names and titles are cut.

use crate::tui_support::{options, run_with, screen_text, snapshot, typed};
use insta::assert_snapshot;
use quotatop_model::Snapshot;

const SHARE_SUFFIX: &str = "-computer-vision-foundation-models-team";
const JOB_INFIX: &str = "-lr3e-4-bs2048-warmup500-seed17-ablation-no-dropout";

/// The fixture with every share and job name made long.
fn long_names() -> Snapshot {
    let mut s = snapshot();
    for q in &mut s.queues {
        for share in &mut q.shares {
            share.name.push_str(SHARE_SUFFIX);
        }
        for j in &mut q.jobs {
            std::sync::Arc::make_mut(&mut j.job)
                .share
                .push_str(SHARE_SUFFIX);
            // Before the last part: `research-sweep-01` → `research-sweep-lr3e…-01`.
            let at = j.job.name.rfind('-').unwrap_or(0);
            std::sync::Arc::make_mut(&mut j.job)
                .name
                .insert_str(at, JOB_INFIX);
        }
    }
    s
}

/// The screens and the keys that open them.
const SCREENS: &[(&str, &str)] = &[
    ("overview", ""),
    ("share", "j\n"),
    ("jobs", ":jobs\n"),
    ("preemptions", "3"),
    ("job_detail", "3\n"),
    ("help", "?"),
    ("scorecard", "4"),
];

async fn screens(width: u16, height: u16) {
    for &(screen, keys) in SCREENS {
        let (t, _) = run_with(width, height, options(), vec![long_names()], typed(keys)).await;
        let text = screen_text(&t);
        assert_eq!(text.lines().count(), height as usize, "{screen}");
        if width < 80 {
            // Below the minimum the console says so instead of drawing a broken layout.
            assert!(
                text.contains("terminal too small") && text.contains("need 80×24"),
                "{screen} at {width}x{height}:\n{text}"
            );
        } else if ["overview", "share", "jobs", "preemptions"].contains(&screen) {
            assert!(
                text.contains("research"),
                "{screen} at {width}x{height}:\n{text}"
            );
        }
        if width >= 80 && ["share", "jobs", "preemptions"].contains(&screen) {
            assert_names_distinct(&text, screen);
        }
        assert_snapshot!(
            format!("tui_widths_long_names_{screen}_{width}x{height}"),
            t.backend()
        );
    }
}

/// The research sweep's rows (each a different job) show different names.
fn assert_names_distinct(text: &str, screen: &str) {
    let names: Vec<&str> = text
        .lines()
        .filter_map(|l| {
            let at = l.find("research-sw")?;
            l[at..].split_whitespace().next()
        })
        .filter(|n| !n.contains("old-run"))
        .collect();
    let mut unique = names.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(
        unique.len(),
        names.len(),
        "{screen}: names cut alike:\n{text}"
    );
}

#[tokio::test]
async fn long_names_at_79x24() {
    screens(79, 24).await;
}

#[tokio::test]
async fn long_names_at_80x24() {
    screens(80, 24).await;
}

#[tokio::test]
async fn long_names_at_120x40() {
    screens(120, 40).await;
}

#[tokio::test]
async fn long_names_at_200x60() {
    screens(200, 60).await;
}

/// Issue 29 §2.15: the data clock is shown whole or not at all: at 80 columns it was cut to
/// "data clock 10:1", which reads as a wrong time.
#[tokio::test]
async fn the_data_clock_is_never_cut() {
    let mut s = crate::tui_support::snapshot();
    for q in &mut s.queues {
        q.refreshed_at = q.server_time.map(|t| t - 18 * 60_000 - 30_000);
    }
    let mut shown_whole = 0;
    for width in 60..=140u16 {
        let (t, _) = crate::tui_support::run_with(
            width,
            24,
            crate::tui_support::options(),
            vec![s.clone()],
            Vec::new(),
        )
        .await;
        let text = crate::tui_support::screen_text(&t);
        let Some(line) = text.lines().find(|l| l.contains("data clock")) else {
            continue;
        };
        let after = line.split("data clock ").nth(1).unwrap_or("");
        let time: String = after.chars().take(9).collect();
        let whole = time.len() == 9
            && time.ends_with('Z')
            && time.chars().filter(|c| *c == ':').count() == 2;
        assert!(whole, "cut at {width} columns: {line:?}");
        shown_whole += 1;
    }
    assert!(shown_whole > 0, "the skew is shown at some width");
}
