//! Job detail answers "why is this job not running?" for a waiting job, at the narrowest
//! supported size and a common one.

use insta::assert_snapshot;

use crate::tui_support::{options, run, screen_text};

async fn waiting_job(width: u16, height: u16, name: &str) -> String {
    let (t, _) = run(
        width,
        height,
        options(),
        crate::tui_support::typed(&format!(":job {name}\n")),
    )
    .await;
    screen_text(&t)
}

#[tokio::test]
async fn why_it_waits_80x24() {
    let s = waiting_job(80, 24, "video-pretrain").await;
    assert!(s.contains("Why it waits"), "{s}");
    assert_snapshot!(s);
}

#[tokio::test]
async fn why_it_waits_120x40() {
    let s = waiting_job(120, 40, "video-pretrain").await;
    assert!(s.contains("What would change it"), "{s}");
    assert_snapshot!(s);
}

#[tokio::test]
async fn why_a_misconfigured_job_cannot_run_120x40() {
    let s = waiting_job(120, 40, "oversized-finetune").await;
    assert!(s.contains("It cannot run as configured"), "{s}");
    assert_snapshot!(s);
}

/// A running job has nothing to explain: no section.
#[tokio::test]
async fn a_running_job_has_no_why_section() {
    let s = waiting_job(120, 40, "research-sweep-01").await;
    assert!(!s.contains("Why it waits"), "{s}");
}
