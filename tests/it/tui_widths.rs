//! Screens at the edges of the supported terminal sizes (79×24, one column short of the usual
//! 80; 80×24; 200×60) with long job and share names (the fixture's names with long suffixes,
//! as real sweeps and team shares are named): nothing panics, every screen fits, below 80×24
//! the console says the terminal is too small, and the snapshots show how names are cut.

use crate::tui_support::{options, run_with, screen_text, snapshot, typed};
use insta::assert_snapshot;
use quotatop::model::Snapshot;

const SHARE_SUFFIX: &str = "-computer-vision-foundation-models-team";
const JOB_SUFFIX: &str = "-sweep-lr3e-4-bs2048-warmup500-seed17-ablation-no-dropout";

/// The fixture with every share and job name made long.
fn long_names() -> Snapshot {
    let mut s = snapshot();
    for q in &mut s.queues {
        for share in &mut q.shares {
            share.name.push_str(SHARE_SUFFIX);
        }
        for j in &mut q.jobs {
            j.job.share.push_str(SHARE_SUFFIX);
            j.job.name.push_str(JOB_SUFFIX);
        }
    }
    s
}

async fn screens(width: u16, height: u16) {
    // The overview, a share's queue, the jobs table.
    for (screen, keys) in [("overview", ""), ("share", "j\n"), ("jobs", ":jobs\n")] {
        let (t, _) = run_with(width, height, options(), vec![long_names()], typed(keys)).await;
        let text = screen_text(&t);
        assert_eq!(text.lines().count(), height as usize, "{screen}");
        if width < 80 {
            // Below the minimum the console says so instead of drawing a broken layout.
            assert!(
                text.contains("terminal too small") && text.contains("need 80×24"),
                "{screen} at {width}x{height}:\n{text}"
            );
        } else {
            assert!(
                text.contains("research"),
                "{screen} at {width}x{height}:\n{text}"
            );
        }
        assert_snapshot!(
            format!("tui_widths_long_names_{screen}_{width}x{height}"),
            t.backend()
        );
    }
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
async fn long_names_at_200x60() {
    screens(200, 60).await;
}
