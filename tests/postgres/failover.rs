//! Failover: two `record --store` of one source; one leads (a session advisory lock), the
//! other stands by; kill -9 of the leader, and the standby records within 10 s. `/metrics`
//! says which is which. Checked after: the journal has every job of the last snapshot, and
//! the snapshots kept coming.

use std::time::{Duration, Instant};

use quotatop_store::journal::JournalHandle;
use quotatop_store::pg::StoreUrl;
use quotatop_store::{Lead, Role, StoreLocation};

use crate::Test;
use crate::cluster::Cluster;
use crate::emulator_support::spawn_emulator_binary;
use crate::metrics_support::{Kill, scrape};
use crate::record::{recorder, wait_for_count};

pub fn tests() -> Vec<Test> {
    vec![
        (
            "failover::a_standby_records_within_10_s_of_the_leader_s_kill_9".into(),
            Box::new(a_standby_records_within_10_s_of_the_leader_s_kill_9),
        ),
        (
            "failover::a_leader_whose_lease_moved_on_writes_nothing".into(),
            Box::new(a_leader_whose_lease_moved_on_writes_nothing),
        ),
        (
            "failover::a_frozen_leader_is_replaced_then_steps_down".into(),
            Box::new(a_frozen_leader_is_replaced_then_steps_down),
        ),
    ]
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

/// The role of `lead` once `settled` says so, within `within`.
pub fn role_within(lead: &Lead, within: Duration, settled: impl Fn(&Role) -> bool) -> Role {
    let deadline = Instant::now() + within;
    loop {
        let r = lead.role();
        if settled(&r) {
            return r;
        }
        assert!(
            Instant::now() < deadline,
            "role still {r:?} after {within:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Fencing, in one process: a leader's journal writes while the lease has its epoch; once
/// another recorder claimed the lease (its epoch bumped, as a takeover does), neither the
/// history nor the live snapshot takes another write from it, its status says why, and its
/// lead thread reports the lead lost at its next renewal.
fn a_leader_whose_lease_moved_on_writes_nothing(c: &Cluster) {
    let db = c.database("fence");
    let url = StoreUrl::parse(&c.admin_url(&db)).unwrap();
    let source = "fence \u{1b}[31m test";
    let lead = Lead::spawn(url.clone(), source.into()).unwrap();
    let Role::Leader(fence) = role_within(&lead, Duration::from_secs(20), |r| {
        matches!(r, Role::Leader(_) | Role::Lost(_))
    }) else {
        panic!("not leading: {:?}", lead.role());
    };
    assert_eq!(fence.epoch(), 1);
    let location = StoreLocation::Postgres(url.clone());
    let journal = JournalHandle::start_fenced(&location, Default::default(), Some(fence));
    let snap = |t: i64| quotatop_model::Snapshot {
        taken_at: t,
        sequence: t as u64,
        queues: vec![quotatop_analysis::fixture::queue(&[])],
        ..Default::default()
    };
    let mut admin = c.admin(&db);
    let count = |admin: &mut postgres::Client, sql: &str| -> i64 {
        admin.query_one(sql, &[]).unwrap().get(0)
    };
    let live = |admin: &mut postgres::Client| -> Option<i64> {
        admin
            .query_opt("SELECT taken_at FROM live_snapshot", &[])
            .unwrap()
            .map(|r| r.get(0))
    };
    journal.record(snap(1_000));
    journal.flush();
    assert_eq!(
        journal.status().snapshots_written,
        1,
        "{:?}",
        journal.status()
    );
    assert_eq!(count(&mut admin, "SELECT COUNT(*) FROM snapshots"), 1);
    let deadline = Instant::now() + Duration::from_secs(10);
    while live(&mut admin) != Some(1_000) {
        assert!(Instant::now() < deadline, "the live row was never written");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Another recorder claims the lease, as a takeover does.
    admin
        .execute(
            "UPDATE record_lease SET epoch = epoch + 1 WHERE source = $1",
            &[&source],
        )
        .unwrap();
    journal.record(snap(2_000));
    journal.flush();
    let st = journal.status();
    assert_eq!(st.snapshots_written, 1, "{st:?}");
    let why = st.unavailable.clone().unwrap_or_default();
    assert!(
        why.contains("another recorder leads this source now") && why.contains("epoch 2"),
        "{st:?}"
    );
    assert!(!why.contains(&c.password), "{why}");
    assert!(!why.contains('\u{1b}'), "{why}");
    assert_eq!(count(&mut admin, "SELECT COUNT(*) FROM snapshots"), 1);
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        live(&mut admin),
        Some(1_000),
        "the fenced live write went through"
    );
    let Role::Lost(why) = role_within(&lead, Duration::from_secs(10), |r| {
        matches!(r, Role::Lost(_))
    }) else {
        unreachable!()
    };
    assert!(why.contains("another recorder took the lead"), "{why}");
    assert!(!why.contains(&c.password), "{why}");
    journal.shutdown();
}

/// A leader frozen with SIGSTOP keeps its session (and the lock) but stops renewing its
/// lease: the standby ends its session and leads within 10 s, and snapshots keep coming.
/// Thawed with SIGCONT, the old leader writes nothing (fenced) and stands by: `/metrics` shows
/// one leader. No journal row is written twice, and every job of the newest snapshot is there.
fn a_frozen_leader_is_replaced_then_steps_down(c: &Cluster) {
    let db = c.database("frozen");
    let (dir_a, dir_b) = (
        tempfile::TempDir::new().unwrap(),
        tempfile::TempDir::new().unwrap(),
    );
    let (emulator, endpoint) = spawn_emulator_binary(&["--speed", "60"]);
    let _emulator = Kill(emulator);
    let url = c.admin_url(&db);
    let flags = ["--metrics-addr", "127.0.0.1:0"];
    let (a, lines_a) = recorder(&endpoint, &url, dir_a.path(), &flags);
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
    std::thread::sleep(Duration::from_secs(3));
    seen_b.extend(lines_b.try_iter());
    assert!(seen_b.iter().all(|l| !l.contains("leading")), "{seen_b:#?}");

    let pid = a.0.id().to_string();
    let signal = |sig: &str| {
        assert!(
            std::process::Command::new("kill")
                .args([sig, &pid])
                .status()
                .unwrap()
                .success()
        );
    };
    signal("-STOP");
    let stopped = Instant::now();
    let stopped_ms = quotatop_model::wall_clock_ms();
    let mut admin = c.admin(&db);
    // What the frozen leader stored (a commit in flight lands now or never).
    std::thread::sleep(Duration::from_millis(300));
    let max_seq_a: i64 = admin
        .query_one("SELECT MAX(sequence) FROM snapshots", &[])
        .unwrap()
        .get(0);
    wait_line(&lines_b, "leading", Duration::from_secs(10), &mut seen_b);
    let leads_after = stopped.elapsed();
    let newer = "SELECT COUNT(*) FROM snapshots WHERE taken_at > $1";
    let recording_after = loop {
        let n: i64 = admin.query_one(newer, &[&stopped_ms]).unwrap().get(0);
        if n > 0 {
            break stopped.elapsed();
        }
        // The lead is taken within the 10 s above (the lease's 6 s and a second's try); the
        // first snapshot also waits for a refresh, which CI's load (8 and more, with the other
        // suites building) has stretched past 15 s. The figure printed below is the measure.
        assert!(
            stopped.elapsed() < Duration::from_secs(45),
            "no snapshot from the standby within 45 s of the SIGSTOP: {seen_b:#?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    println!(
        "  frozen leader: the standby leads {:.2} s and its first snapshot is stored {:.2} s after SIGSTOP",
        leads_after.as_secs_f64(),
        recording_after.as_secs_f64()
    );
    std::thread::sleep(Duration::from_secs(2));
    signal("-CONT");
    let thawed = Instant::now();
    let line = wait_line(
        &lines_a,
        "stepped down",
        Duration::from_secs(15),
        &mut seen_a,
    );
    println!(
        "  thawed leader stepped down {:.2} s after SIGCONT: {line}",
        thawed.elapsed().as_secs_f64()
    );
    assert!(
        line.contains("another recorder took the lead") || line.contains("failed"),
        "{line}"
    );
    wait_line(
        &lines_a,
        "standing by",
        Duration::from_secs(15),
        &mut seen_a,
    );
    std::thread::sleep(Duration::from_secs(3));
    seen_a.extend(lines_a.try_iter());
    let after_step: Vec<_> = seen_a
        .iter()
        .skip_while(|l| !l.contains("stepped down"))
        .filter(|l| l.contains("leading"))
        .collect();
    assert!(after_step.is_empty(), "{seen_a:#?}");
    assert_eq!(leader_gauge(&addr_a), "quotatop_record_leader 0");
    assert_eq!(leader_gauge(&addr_b), "quotatop_record_leader 1");
    // Only the leader exports the source's series: the old one dropped its snapshot.
    let queue_lines = |addr: &str| {
        let (_, body) = scrape(addr, None);
        body.lines()
            .filter(|l| !l.starts_with('#') && l.contains("queue=\"ml-training\""))
            .count()
    };
    assert_eq!(queue_lines(&addr_a), 0);
    assert!(queue_lines(&addr_b) > 0);
    let epoch: i64 = admin
        .query_one("SELECT MAX(epoch) FROM record_lease", &[])
        .unwrap()
        .get(0);
    assert_eq!(epoch, 2);
    drop(b); // SIGTERM: what is queued is written
    drop(a);
    // The snapshots stored since the freeze are the new leader's: its sequence counts up
    // from 1; one of the old leader's (after max_seq_a) among them would break the order.
    let seqs: Vec<i64> = admin
        .query(
            "SELECT sequence FROM snapshots WHERE taken_at > $1 ORDER BY taken_at",
            &[&stopped_ms],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(
        seqs.windows(2).all(|w| w[0] < w[1]) && seqs.first().is_some_and(|&s| s <= max_seq_a),
        "the old leader (last sequence {max_seq_a}) stored after the new one took over: {seqs:?}"
    );
    assert_journal_whole(c, &db, &url);
}

/// Every job of the newest stored snapshot is in the journal, and no transition is there twice.
fn assert_journal_whole(c: &Cluster, db: &str, url: &str) {
    let mut admin = c.admin(db);
    let j = quotatop_store::journal::Journal::open_existing_at(
        &StoreLocation::parse(url).unwrap(),
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
    let dup: i64 = admin
        .query_one(
            "SELECT COUNT(*) FROM (SELECT job_id, kind, attempt FROM transitions
               GROUP BY 1, 2, 3 HAVING COUNT(*) > 1) d",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(dup, 0);
}
