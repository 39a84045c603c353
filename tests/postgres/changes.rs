//! Changes audited into the store: `set-priority --store` through the emulator writes its
//! intent and outcome to the store's audit log (with the operator's own identity), not to the
//! audit file of the operator's machine; two at once keep the chain and their pairs.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use quotatop_store::audit::{ChangeLog, RecordKind, StoreAuditLog};
use quotatop_store::pg::StoreUrl;

use crate::store_audit::text;

use crate::Test;
use crate::cluster::Cluster;
use crate::emulator_support::spawn_emulator_binary;
use crate::metrics_support::Kill;

pub fn tests() -> Vec<Test> {
    vec![
        (
            "changes::set_priority_with_a_store_audits_there_and_two_at_once_keep_the_chain".into(),
            Box::new(set_priority_with_a_store_audits_there_and_two_at_once_keep_the_chain),
        ),
        (
            "changes::a_queue_s_shares_lock_in_the_store_is_one_holder_at_a_time".into(),
            Box::new(a_queue_s_shares_lock_in_the_store_is_one_holder_at_a_time),
        ),
    ]
}

/// `shares apply --store`'s per-queue lock: a second holder (any machine) is refused at once
/// with who to wait for; another queue is free; dropping the guard releases it.
fn a_queue_s_shares_lock_in_the_store_is_one_holder_at_a_time(c: &Cluster) {
    let db = c.database("queue_lock");
    let url = StoreUrl::parse(&c.admin_url(&db)).unwrap();
    let log: ChangeLog = StoreAuditLog::open(&url, "default", true).unwrap().into();
    let held = log.lock_queue("ml-training").unwrap();
    let refused = log.lock_queue("ml-training").unwrap_err().to_string();
    assert!(
        refused.contains("another `shares apply` on queue ml-training is running")
            && refused.contains("nothing changed")
            && !refused.contains(&c.password),
        "{refused}"
    );
    let other = log.lock_queue("ml-inference").unwrap();
    drop(held);
    let again = log.lock_queue("ml-training").unwrap();
    drop((other, again));
}

/// The demo's job that waits for ever (asks its share for more than its limit).
const JOB: &str = "oversized-finetune";

/// `quotatop set-priority` of [`JOB`] against the emulator, with `home` as the operator's
/// home and data directory (where the audit file would go) and `store` in QUOTATOP_STORE.
fn set_priority(endpoint: &str, store: &str, home: &Path, priority: &str) -> Command {
    crate::store_audit::quotatop(
        endpoint,
        store,
        home,
        &[
            "set-priority",
            JOB,
            "--priority",
            priority,
            "--reason",
            "incident 7, paper deadline",
            "--yes",
            "--queue",
            "ml-training",
        ],
    )
}

/// Every file under `dir`, recursively.
fn files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(files(&p));
            } else {
                out.push(p.display().to_string());
            }
        }
    }
    out
}

fn set_priority_with_a_store_audits_there_and_two_at_once_keep_the_chain(c: &Cluster) {
    let db = c.database("changes");
    let url = c.admin_url(&db);
    let home = tempfile::TempDir::new().unwrap();
    let (emulator, endpoint) = spawn_emulator_binary(&["--speed", "60"]);
    let _emulator = Kill(emulator);
    // The demo submits the job at its start: until the emulator has it, set-priority says
    // there is no such job.
    let deadline = Instant::now() + Duration::from_secs(60);
    let first = loop {
        let out = set_priority(&endpoint, &url, home.path(), "5003")
            .output()
            .unwrap();
        if !text(&out).contains("no job") || Instant::now() > deadline {
            break out;
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    let t = text(&first);
    assert!(first.status.success(), "{t}");
    // Said where it was recorded: the store's log, its URL without the password.
    assert!(t.contains(&format!("#{}", "default")), "{t}");
    assert!(!t.contains(&c.password), "{t}");
    let log = StoreAuditLog::open(&StoreUrl::parse(&url).unwrap(), "default", false).unwrap();
    let records = log.read_records().unwrap();
    assert_eq!(records.len(), 2, "{records:#?}");
    let (intent, outcome) = (&records[0].1, &records[1].1);
    assert_eq!(intent.kind, RecordKind::Intent);
    assert_eq!(outcome.kind, RecordKind::Outcome);
    assert_eq!(intent.change_id, outcome.change_id);
    assert_eq!(intent.new_priority, 5003);
    assert_eq!(intent.job.name, JOB);
    // The operator's own identity (not the database role): the OS user and the principal
    // the emulator's STS gives.
    let me = quotatop_store::audit::Operator::current();
    assert_eq!(intent.operator.user, me.user);
    assert!(intent.operator.aws_principal.is_some(), "{intent:#?}");
    let mut admin = c.admin(&db);
    let row = admin
        .query_one(
            "SELECT operator, aws_principal FROM audit_log WHERE seq = 1",
            &[],
        )
        .unwrap();
    assert_eq!(row.get::<_, String>(0), format!("{}@{}", me.user, me.host));
    assert_eq!(
        row.get::<_, Option<String>>(1),
        intent.operator.aws_principal
    );
    // Nothing went to the operator's machine: no audit file (nor lock, nor in-flight mark).
    let local = files(home.path());
    assert!(
        local.iter().all(|f| !f.contains("audit")),
        "written locally: {local:?}"
    );
    let verify = Command::new(env!("CARGO_BIN_EXE_quotatop"))
        .args(["audit", "verify", "--store", &url])
        .env_remove("QUOTATOP_AUDIT_LOG")
        .output()
        .unwrap();
    assert!(verify.status.success(), "{}", text(&verify));
    assert!(text(&verify).contains("2 records"), "{}", text(&verify));

    // Two at once, from two "machines" (homes): the chain holds and each intent has its
    // outcome right after or later, never an outcome without its intent.
    let other = tempfile::TempDir::new().unwrap();
    let a = set_priority(&endpoint, &url, home.path(), "5004")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let b = set_priority(&endpoint, &url, other.path(), "5005")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    for child in [a, b] {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", text(&out));
    }
    let head = log.verify().unwrap();
    assert_eq!(head.count, 6);
    let records = log.read_records().unwrap();
    let mut open: Vec<&str> = Vec::new();
    for (_, r) in &records {
        match r.kind {
            RecordKind::Intent => open.push(&r.change_id),
            RecordKind::Outcome => {
                let i = open.iter().position(|id| *id == r.change_id);
                assert!(i.is_some(), "an outcome without its intent: {records:#?}");
                let intent = records
                    .iter()
                    .find(|(_, x)| x.change_id == r.change_id && x.kind == RecordKind::Intent)
                    .unwrap();
                assert_eq!(intent.1.new_priority, r.new_priority);
                open.remove(i.unwrap());
            }
            _ => panic!("unexpected record {r:#?}"),
        }
    }
    assert!(open.is_empty(), "intents without an outcome: {open:?}");
    let mut set: Vec<u32> = records.iter().map(|(_, r)| r.new_priority).collect();
    set.sort();
    assert_eq!(set, [5003, 5003, 5004, 5004, 5005, 5005]);
    assert!(files(other.path()).iter().all(|f| !f.contains("audit")));

    // A held lock (another writer's transaction that does not end): the change gives up
    // after the lock timeout, says so, and is not made (no intent, so no call).
    let mut holder = c.admin(&db);
    let mut tx = holder.transaction().unwrap();
    tx.execute(
        "SELECT pg_advisory_xact_lock(hashtext('quotatop-audit'), hashtext('default'))",
        &[],
    )
    .unwrap();
    let started = Instant::now();
    let out = set_priority(&endpoint, &url, home.path(), "5006")
        .env("QUOTATOP_AUDIT_LOCK_TIMEOUT", "1")
        .output()
        .unwrap();
    let t = text(&out);
    assert!(!out.status.success(), "{t}");
    assert!(
        t.contains("could not write the audit intent, so the change was not made")
            && t.contains("gave up after 1 s waiting for the audit log lock")
            && t.contains("another writer's transaction in the store")
            && !t.contains(&c.password),
        "{t}"
    );
    assert!(started.elapsed() < Duration::from_secs(30), "{t}");
    tx.rollback().unwrap();
    assert_eq!(log.verify().unwrap().count, 6);
}
