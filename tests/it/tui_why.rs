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

/// The section is worked out once per snapshot, and a new snapshot works it out again: the
/// waiting job, once it runs, has no section (a stale cache would keep showing it).
#[tokio::test]
async fn the_why_section_follows_new_data() {
    use crate::tui_support::{Step, drive_steps, snapshot};
    let first = snapshot();
    let mut running = first.clone();
    running.sequence += 1;
    running.taken_at += 60_000;
    for q in &mut running.queues {
        q.server_time = q.server_time.map(|t| t + 60_000);
        for j in &mut q.jobs {
            if j.job.name == "video-pretrain" {
                std::sync::Arc::make_mut(&mut j.job).status = quotatop_model::JobStatus::Running;
                std::sync::Arc::make_mut(&mut j.job).started_at = q.server_time;
            }
        }
    }
    let (t, _) = drive_steps(
        120,
        40,
        options(),
        Default::default(),
        first,
        vec![
            Step::Keys(":job video-pretrain\n"),
            Step::Keys("j"),
            Step::Live(running),
            Step::Keys("k"),
        ],
    )
    .await;
    let s = screen_text(&t);
    assert!(s.contains("video-pretrain"), "{s}");
    assert!(!s.contains("Why it waits"), "{s}");
}
