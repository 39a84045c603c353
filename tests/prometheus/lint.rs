//! `promtool check metrics` (Prometheus's linter) on `record`'s classic exposition, once it
//! holds the demo's shares with some capacity borrowed.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::metrics_support::{Kill, recorder_with_metrics, samples, scrape};

/// `promtool check metrics` on a classic exposition; a missing `promtool` fails the test.
fn promtool_check_metrics(text: &str) {
    let child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        panic!(
            "`promtool` is not installed: this test lints the exposition with it \
             (Debian/Ubuntu: apt-get install prometheus)"
        );
    };
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool check metrics: {}{}\n{text}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn promtool_accepts_the_classic_exposition() {
    let (emu, url) = crate::emulator_support::spawn_emulator_binary(&["--speed", "60"]);
    let _emu = Kill(emu);
    let dir = tempfile::tempdir().unwrap();
    let (_rec, addr, _err) = recorder_with_metrics(&url, dir.path(), &[]);
    let deadline = Instant::now() + Duration::from_secs(60);
    let classic = loop {
        let (ty, text) = scrape(&addr, None);
        assert!(ty.starts_with("text/plain; version=0.0.4"), "{ty}");
        let borrowed = samples(&text, "quotatop_capacity_borrowed_instances");
        if borrowed.values().any(|&v| v > 0.0) {
            break text;
        }
        assert!(
            Instant::now() < deadline,
            "no share borrowed within 60 s; last exposition:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(
        classic.contains("# TYPE quotatop_preemptions_total counter"),
        "{classic}"
    );
    promtool_check_metrics(&classic);
}

/// Share and queue names that try to break out of their label value: `promtool` accepts the
/// page, and no injected sample appears.
#[test]
fn promtool_accepts_hostile_names() {
    use quotatop_analysis::fixture::{job, queue};
    use quotatop_model::{JobStatus, SharingConfig, Snapshot};
    let hostile = "research\"} 0\nquotatop_injected{x=\"1\"} 1\n# HELP a \\ b";
    let mut q = queue(&[
        (
            hostile,
            "ml.g5.12xlarge",
            1,
            SharingConfig::lend_and_borrow(-1),
        ),
        ("lender", "ml.g5.12xlarge", 4, SharingConfig::lend()),
    ]);
    q.name = "q\"\n\\".into();
    q.jobs = vec![
        job(
            "b1",
            hostile,
            "ml.g5.12xlarge",
            3,
            JobStatus::Running,
            10,
            100,
        ),
        job(
            "w1",
            hostile,
            "ml.g5.12xlarge",
            1,
            JobStatus::Runnable,
            20,
            400,
        ),
    ];
    q.refreshed_at = Some(10_000);
    let snap = Snapshot {
        taken_at: 10_000,
        sequence: 1,
        queues: vec![q],
        ..Default::default()
    };
    let (classic, _) = quotatop::metrics::exposition(
        Some(&snap),
        Some(&quotatop_store::journal::JournalStatus::default()),
        &quotatop::metrics::Context::default(),
        20_000,
        false,
    );
    assert!(
        !classic.contains("\nquotatop_injected"),
        "an injected sample:\n{classic}"
    );
    assert!(
        classic.contains("quotatop_capacity_borrowed_instances{"),
        "{classic}"
    );
    promtool_check_metrics(&classic);
}
