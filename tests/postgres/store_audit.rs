//! The store's audit log as the file's is: `audit reconcile --store` decides lost answers
//! (intent written, the call landed, the process killed before its outcome) against the
//! emulator and appends each decision in the chain, once however many reconcilers run; a change
//! still being made on another machine is left to its writer; `audit repair --store` finds
//! nothing to cut; and a console following the store names operators in its scorecard's
//! exceptions from the store's log, not from the audit file of the machine it runs on.

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use aws_sdk_batch::types::QuotaShareResourceSharingStrategy as Strategy;
use quotatop_emulator::{EmulatorHandle, FaultSpec};
use quotatop_store::StoreLocation;
use quotatop_store::audit::{self, Outcome, RecordKind, StoreAuditLog, Verdict};
use quotatop_store::pg::StoreUrl;

use crate::Test;
use crate::cluster::Cluster;
use crate::emulator_support::{M5, QUEUE, client, create_share, start, submit};

pub fn tests() -> Vec<Test> {
    vec![
        (
            "store_audit::lost_answers_in_the_store_are_reconciled_once_by_two_reconcilers".into(),
            Box::new(lost_answers_in_the_store_are_reconciled_once_by_two_reconcilers),
        ),
        (
            "store_audit::a_following_console_s_scorecard_names_operators_from_the_store".into(),
            Box::new(a_following_console_s_scorecard_names_operators_from_the_store),
        ),
    ]
}

/// `quotatop ARGS…` against the emulator at `endpoint`, with `home` as the operator's home and
/// data directory and `store` in QUOTATOP_STORE.
pub(crate) fn quotatop(endpoint: &str, store: &str, home: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_quotatop"));
    c.args(args)
        .args(["--endpoint-url", endpoint])
        .env("QUOTATOP_STORE", store)
        .env_remove("QUOTATOP_AUDIT_LOG")
        .env_remove("QUOTATOP_CONFIG")
        .env_remove("QUOTATOP_READ_ONLY")
        .env("HOME", home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("AWS_ACCESS_KEY_ID", "AKIDTEST")
        .env("AWS_SECRET_ACCESS_KEY", "secret")
        .env("AWS_REGION", "us-east-1")
        .stdin(Stdio::null());
    c
}

/// `quotatop ARGS…` (no AWS), with `home` as the operator's home and `store` in
/// QUOTATOP_STORE.
fn offline(store: &str, home: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_quotatop"));
    c.args(args)
        .env("QUOTATOP_STORE", store)
        .env_remove("QUOTATOP_AUDIT_LOG")
        .env_remove("QUOTATOP_CONFIG")
        .env("HOME", home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .stdin(Stdio::null());
    c
}

/// `set-priority JOB --priority P --yes` audited in the store.
fn set_priority(endpoint: &str, store: &str, home: &Path, job: &str, priority: u32) -> Command {
    let p = priority.to_string();
    let mut c = quotatop(
        endpoint,
        store,
        home,
        &["set-priority", job, "--priority", &p, "--yes"],
    );
    c.args(["--reason", "incident 7, paper deadline", "--queue", QUEUE]);
    c
}

pub(crate) fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// One share (2 × M5 of 4, in-share preemption on) with two jobs running at priority 9, and
/// `waiting` jobs waiting at priority 0; their ids. On a manual clock, or with `wall` on the
/// wall clock (a journal's times are the emulator's, an audit record's the wall clock's).
fn world(
    rt: &tokio::runtime::Runtime,
    waiting: usize,
    wall: bool,
) -> (EmulatorHandle, Vec<String>) {
    rt.block_on(async {
        let h = if wall {
            let scenario = quotatop_emulator::Scenario::empty(
                QUEUE,
                vec![quotatop_model::CapacityLimit::new(M5, 4)],
            );
            let mut config = quotatop_emulator::EmulatorConfig::from_scenario(scenario).unwrap();
            config.clock = quotatop_emulator::ClockMode::Scaled(1.0);
            config.start_ms = Some(quotatop_model::wall_clock_ms());
            quotatop_emulator::start(config).await.unwrap()
        } else {
            start(&[(M5, 4)], "").await
        };
        let step = |ms| {
            if !wall {
                h.advance(ms).unwrap();
            }
        };
        let c = client(&h, 3);
        create_share(&c, "team", &[(M5, 2)], Strategy::Reserve, None, true).await;
        for name in ["run-a", "run-b"] {
            submit(&c, name, "team", M5, 1, 9).await;
            step(10_000);
        }
        let mut ids = Vec::new();
        for i in 0..waiting {
            ids.push(submit(&c, &format!("wait-{i}"), "team", M5, 1, 0).await);
            step(1_000);
        }
        (h, ids)
    })
}

fn priority(h: &EmulatorHandle, id: &str) -> u32 {
    h.with_engine(|e| e.job(e.find(id).unwrap()).unwrap().priority)
        .unwrap()
}

/// Runs `set-priority` of `job` to `p` while the emulator holds UpdateServiceJob, and returns
/// the running process once the call is held (received in full).
fn held_change(h: &EmulatorHandle, url: &str, home: &Path, job: &str, p: u32) -> Child {
    let held = h.fault_stats().held;
    let child = set_priority(&h.endpoint_url(), url, home, job, p)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while h.fault_stats().held <= held {
        assert!(
            Instant::now() < deadline,
            "the call of {job} was never held"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

/// Lost answers: each `set-priority --store` is killed (SIGKILL) while the emulator holds its
/// UpdateServiceJob, which then lands; the store holds their intents only. Two `audit reconcile
/// --store` at once decide each once (landed, the priority read back), appended in the chain;
/// `audit verify --store` passes; a third finds nothing. A change being made meanwhile by a
/// live process on another "machine" is left to it and ends with its own outcome only.
fn lost_answers_in_the_store_are_reconciled_once_by_two_reconcilers(c: &Cluster) {
    const LOST: usize = 6;
    let db = c.database("reconcile");
    let url = c.admin_url(&db);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (h, ids) = world(&rt, LOST + 1, false);
    let home = tempfile::TempDir::new().unwrap();
    // The store's log is made by the first change; a change with no hold makes it now.
    let first = set_priority(&h.endpoint_url(), &url, home.path(), &ids[LOST], 1)
        .output()
        .unwrap();
    assert!(first.status.success(), "{}", text(&first));
    h.set_faults(FaultSpec::parse("updateservicejob:hold=2s").unwrap());
    for (i, id) in ids.iter().take(LOST).enumerate() {
        let mut child = held_change(&h, &url, home.path(), id, 2 + i as u32);
        child.kill().unwrap();
        child.wait().unwrap();
    }
    // Each held call lands after its client is gone: the answer is lost, the change made.
    let deadline = Instant::now() + Duration::from_secs(60);
    for (i, id) in ids.iter().take(LOST).enumerate() {
        while priority(&h, id) != 2 + i as u32 {
            assert!(
                Instant::now() < deadline,
                "the held call of {id} never landed"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    h.set_faults(FaultSpec::default());
    let store = StoreUrl::parse(&url).unwrap();
    let log = StoreAuditLog::open(&store, audit::DEFAULT_STORE_LOG, false).unwrap();
    let changes = audit::changes(&log.read_records().unwrap());
    assert_eq!(changes.len(), LOST + 1);
    assert_eq!(
        changes.iter().filter(|c| c.outcome_unknown()).count(),
        LOST,
        "{changes:#?}"
    );

    // The log's lock held by another session: reconcile gives up after --lock-timeout with the
    // reason, and writes nothing.
    let mut holder = c.admin(&db);
    holder
        .execute(
            "SELECT pg_advisory_lock(hashtext('quotatop-audit'), hashtext('default'))",
            &[],
        )
        .unwrap();
    let held = quotatop(
        &h.endpoint_url(),
        &url,
        home.path(),
        &["audit", "reconcile", "--lock-timeout", "1"],
    )
    .output()
    .unwrap();
    let t = text(&held);
    assert!(!held.status.success(), "{t}");
    assert!(
        t.contains("gave up after 1 s waiting for the audit log lock") && !t.contains(&c.password),
        "{t}"
    );
    assert_eq!(log.read_records().unwrap().len(), 2 + LOST);
    drop(holder);

    let reconcile = |home: &Path| {
        quotatop(&h.endpoint_url(), &url, home, &["audit", "reconcile"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let other = tempfile::TempDir::new().unwrap();
    let runs = [reconcile(home.path()), reconcile(other.path())];
    let outs: Vec<Output> = runs
        .into_iter()
        .map(|r| r.wait_with_output().unwrap())
        .collect();
    let all: String = outs.iter().map(text).collect();
    for o in &outs {
        assert!(o.status.success(), "{all}");
    }
    assert!(!all.contains(&c.password), "{all}");
    let records = log.read_records().unwrap();
    let changes = audit::changes(&records);
    // The first change (not held) had its own outcome; the lost ones follow it.
    for (i, ch) in changes.iter().skip(1).take(LOST).enumerate() {
        let outcomes: Vec<_> = records
            .iter()
            .filter(|(_, r)| r.kind == RecordKind::Outcome && r.change_id == ch.intent.change_id)
            .collect();
        assert_eq!(outcomes.len(), 1, "change {i}: {all}\n{outcomes:#?}");
        match &outcomes[0].1.outcome {
            Some(Outcome::Reconciled {
                verdict: Verdict::Landed,
                observed_priority,
                ..
            }) => assert_eq!(*observed_priority, Some(2 + i as u32)),
            other => panic!("change {i}: {other:?}\n{all}"),
        }
        assert!(ch.took_effect());
    }
    assert_eq!(records.len(), 2 + 2 * LOST, "{all}");
    assert_eq!(
        all.matches("landed (priority now").count(),
        LOST,
        "each decided by one reconciler: {all}"
    );
    let verify = offline(&url, home.path(), &["audit", "verify"])
        .output()
        .unwrap();
    assert!(verify.status.success(), "{}", text(&verify));
    assert!(
        text(&verify).contains(&format!("{} records, chain intact", 2 + 2 * LOST)),
        "{}",
        text(&verify)
    );
    let third = quotatop(
        &h.endpoint_url(),
        &url,
        home.path(),
        &["audit", "reconcile"],
    )
    .output()
    .unwrap();
    assert!(
        third.status.success() && text(&third).contains("nothing to reconcile"),
        "{}",
        text(&third)
    );

    // In flight on another machine: held, its process alive. Reconcile leaves it to it.
    h.set_faults(FaultSpec::parse("updateservicejob:hold=3s").unwrap());
    let live = held_change(&h, &url, other.path(), &ids[0], 8);
    let during = quotatop(
        &h.endpoint_url(),
        &url,
        home.path(),
        &["audit", "reconcile"],
    )
    .output()
    .unwrap();
    let t = text(&during);
    assert!(during.status.success(), "{t}");
    assert!(
        t.contains("still being made by a live process: left to it"),
        "{t}"
    );
    let done = live.wait_with_output().unwrap();
    assert!(done.status.success(), "{}", text(&done));
    let records = log.read_records().unwrap();
    let last = audit::changes(&records).pop().unwrap();
    assert!(
        matches!(
            last.outcome.as_ref().and_then(|o| o.outcome.as_ref()),
            Some(Outcome::Succeeded { .. })
        ),
        "{last:#?}"
    );
    assert_eq!(
        records.len(),
        4 + 2 * LOST,
        "its intent and own outcome only"
    );
    assert_eq!(log.verify().unwrap().count, 4 + 2 * LOST);

    // Repair: a store's records are written whole; nothing to cut, nothing written.
    let repair = offline(
        &url,
        home.path(),
        &["audit", "repair", "--reason", "checking"],
    )
    .output()
    .unwrap();
    let t = text(&repair);
    assert!(repair.status.success(), "{t}");
    assert!(
        t.contains("nothing to repair") && !t.contains(&c.password),
        "{t}"
    );
    assert_eq!(log.read_records().unwrap().len(), 4 + 2 * LOST);

    // A listing of a store's log that was edited behind quotatop's back (the owner lifting the
    // trigger) warns about that log, at the edited record: not about a file on this machine.
    let mut admin = c.admin(&db);
    admin
        .batch_execute(
            "ALTER TABLE audit_log DISABLE TRIGGER audit_log_no_update_or_delete;
             UPDATE audit_log SET line = replace(line, 'incident 7', 'incident 8') WHERE seq = 3;",
        )
        .unwrap();
    let list = offline(&url, home.path(), &["audit", "list"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&list.stderr);
    assert!(
        err.contains("does not verify at line 3")
            && err.contains("#default")
            && err.contains("--store-log default")
            && !err.contains(&c.password),
        "{err}"
    );
    drop(rt);
}

/// A console following the store (`tui --store`) computes its scorecard from the store's
/// journal, and its exceptions (who raised which job, jobs raised repeatedly) from the store's
/// audit log: two raises of one job by `set-priority --store` are this operator's, counted
/// twice, with no audit file on the console's machine.
fn a_following_console_s_scorecard_names_operators_from_the_store(c: &Cluster) {
    let db = c.database("scorecard");
    let url = c.admin_url(&db);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (h, ids) = world(&rt, 1, true);
    let dir = tempfile::TempDir::new().unwrap();
    let (_rec, lines) = crate::record::recorder_of(
        &h.endpoint_url(),
        &url,
        dir.path(),
        &["--queue", QUEUE, "--interval", "1"],
    );
    let home = tempfile::TempDir::new().unwrap();
    let location = StoreLocation::Postgres(StoreUrl::parse(&url).unwrap());
    // The recorder has seen the queue before the changes, so they fall in its history.
    crate::record::wait_for_count(
        c,
        &db,
        "SELECT count(*) FROM live_snapshot",
        1,
        Duration::from_secs(60),
    );
    for p in [3, 5] {
        let out = set_priority(&h.endpoint_url(), &url, home.path(), &ids[0], p)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
        std::thread::sleep(Duration::from_millis(1500));
    }
    let changed_at = quotatop_model::wall_clock_ms();
    let journal = quotatop::commands::console::Journal {
        path: None,
        handle: None,
        shared: Some(location.clone()),
    };
    // The file this machine would hold: absent (nothing was audited here).
    let local = home.path().join("data/quotatop/audit.jsonl");
    assert!(!local.exists());
    let settings = quotatop::services::ScorecardSettings {
        audit_log: quotatop::commands::console::scorecard_audit(&journal, Some(local)),
        ..Default::default()
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    let view = loop {
        let seen = quotatop_store::journal::Journal::open_existing_at(
            &location,
            quotatop_store::journal::JournalConfig::default(),
        )
        .unwrap()
        .queue(QUEUE)
        .unwrap()
        .map_or(0, |q| q.last_observed_at);
        if seen > changed_at {
            break quotatop::services::compute_scorecard(&location, QUEUE, &settings, None)
                .unwrap();
        }
        assert!(
            Instant::now() < deadline,
            "the recorder observed nothing after the changes: {:?}; {}",
            lines.try_iter().collect::<Vec<_>>(),
            crate::record::dump(c, &db)
        );
        std::thread::sleep(Duration::from_millis(300));
    };
    let me = audit::Operator::current();
    let who = format!("{}@{}", me.user, me.host);
    let mine: Vec<_> = view
        .exceptions
        .per_operator
        .iter()
        .filter(|o| o.operator == who)
        .collect();
    assert_eq!(mine.len(), 1, "{:#?}", view.exceptions);
    assert_eq!((mine[0].changes, mine[0].raises), (2, 2));
    let raised: Vec<_> = view
        .exceptions
        .raised_repeatedly
        .iter()
        .map(|j| (j.job_id.as_str(), j.raises, j.to))
        .collect();
    assert_eq!(raised, [(ids[0].as_str(), 2, 5)], "{:#?}", view.exceptions);
    drop(rt);
}
