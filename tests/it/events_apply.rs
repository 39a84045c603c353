//! Batch's events applied to the poller's state (`record --events-queue`): a job an event
//! names is described at once and journaled without a listing, and a change whose event was
//! dropped (the emulator's `deliver-drop` fault) is caught by the reconciliation and counted in
//! `quotatop_events_missed_total`.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::emulator_support::*;
use crate::events_cli::{cmd, run, text};
use crate::metrics_support::{Kill, samples, scrape};
use aws_sdk_batch::types::QuotaShareResourceSharingStrategy as Strategy;
use quotatop_emulator::EmulatorHandle;
use quotatop_store::journal::{Journal, JournalConfig};

/// `record --events-queue ev --reconcile-every EVERY` with `/metrics`: the process and its
/// metrics address (read from record.log).
fn recorder(emu: &EmulatorHandle, dir: &Path, every: &str) -> (Kill, String) {
    let config = dir.join("config.toml");
    std::fs::write(&config, "[journal]\nsnapshot_interval_secs = 1\n").unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_quotatop"))
        .args(["record", "--queue", QUEUE, "--interval", "1"])
        .args(["--events-queue", "ev", "--reconcile-every", every])
        .args(["--metrics-addr", "127.0.0.1:0", "--endpoint-url"])
        .arg(emu.endpoint_url())
        .arg("--journal")
        .arg(dir.join("journal.sqlite3"))
        .arg("--log-dir")
        .arg(dir)
        .env("AWS_ACCESS_KEY_ID", "AKIDTEST")
        .env("AWS_SECRET_ACCESS_KEY", "secret")
        .env("AWS_REGION", "us-east-1")
        .env("QUOTATOP_CONFIG", &config)
        .env("XDG_DATA_HOME", dir.join("data"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let kill = Kill(child);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let log = std::fs::read_to_string(dir.join("record.log")).unwrap_or_default();
        if let Some(at) = log.find("bound=") {
            let addr: String = log[at + 6..]
                .chars()
                .take_while(|c| !c.is_whitespace())
                .collect();
            return (kill, addr);
        }
        assert!(
            Instant::now() < deadline,
            "no metrics address in record.log"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn journal(dir: &Path) -> Option<Journal> {
    Journal::open(&dir.join("journal.sqlite3"), JournalConfig::default()).ok()
}

/// Waits until the journal has a snapshot (the first full listing is done).
async fn first_snapshot(dir: &Path) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while journal(dir)
        .and_then(|j| j.newest_snapshot().ok().flatten())
        .is_none()
    {
        assert!(Instant::now() < deadline, "no snapshot journaled");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Whether the journal saw job `id` start.
fn started(dir: &Path, id: &str) -> bool {
    journal(dir)
        .and_then(|j| j.transitions(id).ok())
        .is_some_and(|t| t.iter().any(|t| format!("{:?}", t.kind) == "Started"))
}

async fn world(faults: &str, dir: &Path) -> (EmulatorHandle, aws_sdk_batch::Client) {
    let emu = start(&[(M5, 2)], faults).await;
    let c = client(&emu, 1);
    create_share(&c, "QS1", &[(M5, 2)], Strategy::Reserve, None, false).await;
    let o = run(cmd(&emu, dir, "setup", "ev", &["--yes"])).await;
    assert!(o.status.success(), "{}", text(&o));
    (emu, c)
}

/// Submits a job and runs the clock until it has run a while.
async fn run_a_job(emu: &EmulatorHandle, c: &aws_sdk_batch::Client, name: &str) -> String {
    let id = submit(c, name, "QS1", M5, 1, 1).await;
    for _ in 0..4 {
        emu.advance(30_000).unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    id
}

fn missed(addr: &str) -> f64 {
    let (_, body) = scrape(addr, None);
    samples(&body, "quotatop_events_missed_total")
        .values()
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_an_event_names_is_journaled_without_a_listing() {
    let dir = crate::temp_support::dir_path("events-apply");
    let d = dir.as_path();
    let (emu, c) = world("", d).await;
    let (_rec, addr) = recorder(&emu, d, "1h");
    first_snapshot(d).await;
    let lists = emu.calls("listservicejobs");
    let id = run_a_job(&emu, &c, "named").await;
    let deadline = Instant::now() + Duration::from_secs(20);
    while !started(d, &id) {
        assert!(
            Instant::now() < deadline,
            "the job's start never reached the journal"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // No full listing since the first: the events' describes brought it.
    assert_eq!(emu.calls("listservicejobs"), lists);
    assert_eq!(missed(&addr), 0.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_event_is_caught_by_the_reconciliation_and_counted() {
    let (dropping, telling) = (
        crate::temp_support::dir_path("events-drop"),
        crate::temp_support::dir_path("events-told"),
    );
    let (emu_drop, c_drop) = world("deliver-drop=1", dropping.as_path()).await;
    let (emu, c) = world("", telling.as_path()).await;
    let (_r1, addr_drop) = recorder(&emu_drop, dropping.as_path(), "2s");
    let (_r2, addr) = recorder(&emu, telling.as_path(), "2s");
    first_snapshot(dropping.as_path()).await;
    first_snapshot(telling.as_path()).await;
    let lost = run_a_job(&emu_drop, &c_drop, "lost").await;
    run_a_job(&emu, &c, "told").await;
    // The dropped job's change is found at a reconciliation, and counted once no event told
    // it within the excuse window (20 s).
    let deadline = Instant::now() + Duration::from_secs(60);
    while missed(&addr_drop) < 1.0 {
        assert!(Instant::now() < deadline, "no event counted missed");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(started(dropping.as_path(), &lost));
    let log = std::fs::read_to_string(dropping.as_path().join("record.log")).unwrap();
    assert!(
        log.lines()
            .any(|l| l.contains("an event missed") && l.contains(&lost)),
        "{log}"
    );
    // Where every event arrived, the reconciliations found nothing missed.
    assert_eq!(missed(&addr), 0.0);
}
