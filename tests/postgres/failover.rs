//! Failover: two `record --store` of one source; one leads (a session advisory lock), the
//! other stands by; kill -9 of the leader, and the standby records within 10 s. `/metrics`
//! says which is which. Checked after: the journal has every job of the last snapshot, and
//! the snapshots kept coming.

use std::time::{Duration, Instant};

use crate::Test;
use crate::cluster::Cluster;
use crate::emulator_support::spawn_emulator_binary;
use crate::metrics_support::{Kill, scrape};
use crate::record::{recorder, wait_for_count};

pub fn tests() -> Vec<Test> {
    vec![(
        "failover::a_standby_records_within_10_s_of_the_leader_s_kill_9".into(),
        Box::new(a_standby_records_within_10_s_of_the_leader_s_kill_9),
    )]
}

/// Waits for a line of `lines` containing `text`; returns it, with the lines before it.
pub fn wait_line(
    lines: &std::sync::mpsc::Receiver<String>,
    text: &str,
    within: Duration,
    seen: &mut Vec<String>,
) -> String {
    let deadline = Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok(l) if l.contains(text) => return l,
            Ok(l) => seen.push(l),
            Err(_) => panic!("no line with {text:?} within {within:?}: {seen:#?}"),
        }
    }
}

pub fn metrics_addr(lines: &std::sync::mpsc::Receiver<String>, seen: &mut Vec<String>) -> String {
    let l = wait_line(lines, "metrics on http://", Duration::from_secs(60), seen);
    l.split("http://")
        .nth(1)
        .and_then(|r| r.strip_suffix("/metrics"))
        .unwrap()
        .to_string()
}

fn leader_gauge(addr: &str) -> String {
    let (_, body) = scrape(addr, None);
    body.lines()
        .find(|l| l.starts_with("quotatop_record_leader "))
        .unwrap_or("none")
        .to_string()
}

fn a_standby_records_within_10_s_of_the_leader_s_kill_9(c: &Cluster) {
    let db = c.database("failover");
    let (dir_a, dir_b) = (
        tempfile::TempDir::new().unwrap(),
        tempfile::TempDir::new().unwrap(),
    );
    let (emulator, endpoint) = spawn_emulator_binary(&["--speed", "60"]);
    let _emulator = Kill(emulator);
    let url = c.admin_url(&db);
    let flags = ["--metrics-addr", "127.0.0.1:0"];
    let (mut a, lines_a) = recorder(&endpoint, &url, dir_a.path(), &flags);
    let (mut seen_a, mut seen_b) = (Vec::new(), Vec::new());
    let addr_a = metrics_addr(&lines_a, &mut seen_a);
    wait_line(&lines_a, "leading", Duration::from_secs(60), &mut seen_a);
    wait_for_count(
        c,
        &db,
        "SELECT COUNT(*) FROM snapshots",
        2,
        Duration::from_secs(90),
    );
    let (b, lines_b) = recorder(&endpoint, &url, dir_b.path(), &flags);
    let addr_b = metrics_addr(&lines_b, &mut seen_b);
    wait_line(
        &lines_b,
        "standing by",
        Duration::from_secs(60),
        &mut seen_b,
    );
    // The standby stays one: it records nothing while the leader lives.
    std::thread::sleep(Duration::from_secs(3));
    seen_b.extend(lines_b.try_iter());
    assert!(seen_b.iter().all(|l| !l.contains("leading")), "{seen_b:#?}");
    assert_eq!(leader_gauge(&addr_a), "quotatop_record_leader 1");
    assert_eq!(leader_gauge(&addr_b), "quotatop_record_leader 0");

    a.0.kill().unwrap(); // SIGKILL
    a.0.wait().unwrap();
    std::mem::forget(a); // reaped: nothing left to stop
    let killed = Instant::now();
    let killed_ms = quotatop_model::wall_clock_ms();
    wait_line(&lines_b, "leading", Duration::from_secs(10), &mut seen_b);
    let leads_after = killed.elapsed();
    let mut admin = c.admin(&db);
    let newer = "SELECT COUNT(*) FROM snapshots WHERE taken_at > $1";
    let recording_after = loop {
        let n: i64 = admin.query_one(newer, &[&killed_ms]).unwrap().get(0);
        if n > 0 {
            break killed.elapsed();
        }
        assert!(
            killed.elapsed() < Duration::from_secs(10),
            "no snapshot from the standby within 10 s of the kill: {seen_b:#?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(leader_gauge(&addr_b), "quotatop_record_leader 1");
    println!(
        "  failover: standby leads {:.2} s and its first snapshot is stored {:.2} s after kill -9",
        leads_after.as_secs_f64(),
        recording_after.as_secs_f64()
    );
    std::thread::sleep(Duration::from_secs(5));
    drop(b); // SIGTERM: what is queued is written
    // Every job of the newest stored snapshot is in the journal, with its status there.
    let j = quotatop_store::journal::Journal::open_existing_at(
        &quotatop_store::StoreLocation::parse(&url).unwrap(),
        Default::default(),
    )
    .unwrap();
    let snap = j.newest_snapshot().unwrap().unwrap();
    let mut checked = 0;
    for q in &snap.queues {
        for tj in q.jobs.iter().filter(|tj| tj.described_at.is_some()) {
            let row = admin
                .query_opt("SELECT status FROM jobs WHERE job_id = $1", &[&tj.job.id])
                .unwrap();
            assert!(
                row.is_some(),
                "job {} of the last snapshot is not journaled",
                tj.job.id
            );
            checked += 1;
        }
    }
    assert!(checked > 0);
    // One row per transition, whoever recorded it.
    let dup: i64 = admin
        .query_one(
            "SELECT COUNT(*) FROM (SELECT job_id, kind, attempt FROM transitions
               GROUP BY 1, 2, 3 HAVING COUNT(*) > 1) d",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(dup, 0);
    // The gaps between stored snapshots: none longer than the failover allows.
    let times: Vec<i64> = admin
        .query("SELECT taken_at FROM snapshots ORDER BY taken_at", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let gap = times.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
    println!(
        "  {} snapshots stored, longest gap {gap} ms, {checked} jobs checked",
        times.len()
    );
    assert!(gap < 10_000, "a gap of {gap} ms between snapshots");
}
