//! The audit log in PostgreSQL: append-only by privilege and by trigger, the chain intact
//! with writers in several processes at once (each a different operator), and `audit
//! verify|list|anchor --store` over it.

use std::process::Command;

use quotatop_store::audit::{
    AuditRecord, AwsContext, JobRef, Operator, Outcome, RecordKind, StoreAuditLog,
};
use quotatop_store::pg::StoreUrl;

use crate::Test;
use crate::cluster::Cluster;

pub fn tests() -> Vec<Test> {
    vec![
        (
            "audit::a_writer_role_cannot_alter_records_and_the_trigger_stops_the_owner".into(),
            Box::new(a_writer_role_cannot_alter_records_and_the_trigger_stops_the_owner),
        ),
        (
            "audit::writers_in_several_processes_keep_the_chain_and_their_pairs".into(),
            Box::new(writers_in_several_processes_keep_the_chain_and_their_pairs),
        ),
        (
            "audit::journal_migrate_copies_an_audit_file_with_its_head".into(),
            Box::new(journal_migrate_copies_an_audit_file_with_its_head),
        ),
    ]
}

/// A priority change record of `operator` (user@host as `who`).
fn record(change: &str, kind: RecordKind, who: &str) -> AuditRecord {
    let (user, host) = who.split_once('@').unwrap();
    AuditRecord {
        v: 2,
        seq: 0,
        time: "2026-12-01T16:00:00.000Z".into(),
        kind,
        change_id: change.into(),
        operator: Operator {
            user: user.into(),
            host: host.into(),
            local_user: Some(format!("{user} (uid 1000)")),
            aws_principal: Some(format!("arn:aws:sts::1:assumed-role/oncall/{user}")),
        },
        aws: AwsContext::default(),
        queue: "ml-training".into(),
        share: "research".into(),
        // Each change on a job of its own: changes to one job must follow on from each other
        // (`audit verify` checks it), and these writers' changes are independent.
        job: JobRef {
            id: format!("j-{change}"),
            name: "train".into(),
            arn: format!("arn:aws:batch:us-east-1:1:service-job/j-{change}"),
        },
        old_priority: 1,
        new_priority: 50,
        justification: "deadline".into(),
        change_record: None,
        preview: "position 3 -> 1".into(),
        outcome: (kind == RecordKind::Outcome).then(|| Outcome::Succeeded {
            request_id: Some("req".into()),
        }),
        policy: None,
        class_policy: None,
        batch_id: None,
        repair: None,
        action: None,
        prev_hash: String::new(),
        hash: String::new(),
    }
}

/// The writer process's part: `PGTEST_AUDIT_WRITER=url|log|who|n` appends `n` intent/outcome
/// pairs as `who` and exits (run by [`writers_in_several_processes_keep_the_chain_and_their_pairs`]
/// through this same test binary).
pub fn writer_process(spec: &str) {
    let mut parts = spec.splitn(4, '|');
    let (url, log, who, n) = (
        parts.next().unwrap(),
        parts.next().unwrap(),
        parts.next().unwrap(),
        parts.next().unwrap().parse::<usize>().unwrap(),
    );
    let log = StoreAuditLog::open(&StoreUrl::parse(url).unwrap(), log, false).unwrap();
    for i in 0..n {
        let change = format!("{who}-{i}");
        log.append(record(&change, RecordKind::Intent, who))
            .unwrap();
        log.append(record(&change, RecordKind::Outcome, who))
            .unwrap();
    }
}

fn writers_in_several_processes_keep_the_chain_and_their_pairs(c: &Cluster) {
    let db = c.database("audit_writers");
    let url = c.admin_url(&db);
    let store = StoreUrl::parse(&url).unwrap();
    let log = StoreAuditLog::open(&store, "team", true).unwrap();
    let (writers, pairs) = (6, 15);
    let children: Vec<_> = (0..writers)
        .map(|w| {
            Command::new(std::env::current_exe().unwrap())
                .env(
                    "PGTEST_AUDIT_WRITER",
                    format!("{url}|team|op{w}@host-{w}|{pairs}"),
                )
                .spawn()
                .unwrap()
        })
        .collect();
    for mut ch in children {
        assert!(ch.wait().unwrap().success());
    }
    let head = log.verify().unwrap();
    assert_eq!(head.count, writers * pairs * 2);
    let records = log.read_records().unwrap();
    // Every change has its intent and its outcome, both by the operator who made it, and the
    // writers really interleaved (not one after another).
    let mut by_change: std::collections::BTreeMap<String, Vec<&AuditRecord>> = Default::default();
    for (_, r) in &records {
        by_change.entry(r.change_id.clone()).or_default().push(r);
    }
    assert_eq!(by_change.len(), writers * pairs);
    for (change, rs) in &by_change {
        let who = change.rsplit_once('-').unwrap().0;
        assert_eq!(rs.len(), 2, "{change}");
        assert_eq!(rs[0].kind, RecordKind::Intent, "{change}");
        assert_eq!(rs[1].kind, RecordKind::Outcome, "{change}");
        for r in rs {
            assert_eq!(format!("{}@{}", r.operator.user, r.operator.host), who);
        }
    }
    let switches = records
        .windows(2)
        .filter(|w| w[0].1.operator.user != w[1].1.operator.user)
        .count();
    assert!(
        switches >= writers,
        "writers did not overlap: {switches} switches"
    );
    // The operator's identity per row, apart from the database role (postgres here).
    let mut admin = c.admin(&db);
    let ops: i64 = admin
        .query_one(
            "SELECT COUNT(DISTINCT operator) FROM audit_log WHERE aws_principal LIKE 'arn:aws:sts::1:%'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(ops as usize, writers);
    // The CLI over the same store.
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_quotatop"))
            .args(args)
            .env_remove("QUOTATOP_STORE")
            .env_remove("QUOTATOP_AUDIT_LOG")
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (ok, out, err) = run(&["audit", "verify", "--store", &url, "--store-log", "team"]);
    assert!(ok, "{err}");
    assert!(
        out.contains(&format!("{} records", writers * pairs * 2)),
        "{out}"
    );
    assert!(out.contains(&head.hash), "{out}");
    let (ok, out, err) = run(&["audit", "anchor", "--store", &url, "--store-log", "team"]);
    assert!(ok, "{err}");
    assert!(
        out.contains(&head.hash) && !out.contains(&c.password),
        "{out}"
    );
    let (ok, out, err) = run(&["audit", "list", "--store", &url, "--store-log", "team"]);
    assert!(ok, "{err}");
    assert!(out.contains("op3@host-3"), "{out}");
    // --expect-head catches a log cut at its end: the anchor of the full log against a store
    // whose last records are gone is what verify reports (here: one more record appended,
    // then the head taken before it must still be found in the chain).
    log.append(record("late", RecordKind::Intent, "op9@host-9"))
        .unwrap();
    let (ok, _, err) = run(&[
        "audit",
        "verify",
        "--store",
        &url,
        "--store-log",
        "team",
        "--expect-head",
        &head.hash,
    ]);
    assert!(ok, "{err}");
}

fn a_writer_role_cannot_alter_records_and_the_trigger_stops_the_owner(c: &Cluster) {
    let db = c.database("audit_roles");
    let url = c.admin_url(&db);
    let log = StoreAuditLog::open(&StoreUrl::parse(&url).unwrap(), "team", true).unwrap();
    log.append(record("a", RecordKind::Intent, "ann@ops-1"))
        .unwrap();
    let mut admin = c.admin(&db);
    admin
        .batch_execute(
            "CREATE ROLE auditor_w LOGIN PASSWORD 'writer-pw';
             GRANT SELECT, INSERT ON audit_log TO auditor_w;
             GRANT SELECT ON quotatop_schema TO auditor_w;",
        )
        .unwrap();
    let writer_url = format!("postgresql://auditor_w:writer-pw@127.0.0.1:{}/{db}", c.port);
    // The writer role appends (opening without creating anything)...
    let as_writer =
        StoreAuditLog::open(&StoreUrl::parse(&writer_url).unwrap(), "team", false).unwrap();
    as_writer
        .append(record("a", RecordKind::Outcome, "ann@ops-1"))
        .unwrap();
    // ...and cannot change or remove a record.
    let mut writer = postgres::Client::connect(&writer_url, postgres::NoTls).unwrap();
    for sql in [
        "UPDATE audit_log SET line = 'forged' WHERE seq = 1",
        "DELETE FROM audit_log WHERE seq = 2",
        "TRUNCATE audit_log",
    ] {
        let e = writer.batch_execute(sql).unwrap_err();
        let db_err = e.as_db_error().unwrap().message().to_string();
        assert!(db_err.contains("permission denied"), "{sql}: {db_err}");
    }
    // The owner has the privilege; the trigger refuses anyway.
    for sql in [
        "UPDATE audit_log SET line = 'forged' WHERE seq = 1",
        "DELETE FROM audit_log WHERE seq = 2",
        "TRUNCATE audit_log",
    ] {
        let e = admin.batch_execute(sql).unwrap_err();
        let db_err = e.as_db_error().unwrap().message().to_string();
        assert!(db_err.contains("append-only"), "{sql}: {db_err}");
    }
    let head = log.verify().unwrap();
    assert_eq!(head.count, 2);
}

/// `journal migrate --audit-log FILE`: the file's records line for line, the store's head the
/// file's; run again it copies only what the file gained; a store log that is not a copy of
/// the file is refused.
fn journal_migrate_copies_an_audit_file_with_its_head(c: &Cluster) {
    let dir = tempfile::TempDir::new().unwrap();
    let journal = dir.path().join("journal.sqlite3");
    drop(quotatop_store::journal::Journal::open(&journal, Default::default()).unwrap());
    let file = dir.path().join("audit.jsonl");
    let local = quotatop_store::audit::AuditLog::new(&file);
    for i in 0..5 {
        local
            .append(record(&format!("c{i}"), RecordKind::Intent, "ann@ops-1"))
            .unwrap();
    }
    let db = c.database("audit_migrate");
    let url = c.admin_url(&db);
    let migrate = || {
        let out = Command::new(env!("CARGO_BIN_EXE_quotatop"))
            .args(["journal", "migrate", "--to", &url, "--journal"])
            .arg(&journal)
            .arg("--audit-log")
            .arg(&file)
            .args(["--store-log", "imported", "--chunk", "2"])
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (ok, err) = migrate();
    assert!(ok, "{err}");
    assert!(err.contains("5 records copied (0 were there)"), "{err}");
    let head = quotatop_store::audit::verify(&file).unwrap();
    assert!(err.contains(&head.hash), "{err}");
    local
        .append(record("c5", RecordKind::Outcome, "ann@ops-1"))
        .unwrap();
    let (ok, err) = migrate();
    assert!(ok, "{err}");
    assert!(err.contains("1 records copied (5 were there)"), "{err}");
    let store = StoreAuditLog::open(&StoreUrl::parse(&url).unwrap(), "imported", false).unwrap();
    assert_eq!(
        store.verify().unwrap().hash,
        quotatop_store::audit::verify(&file).unwrap().hash
    );
    // Another file with other records: the store's log is no copy of it.
    std::fs::remove_file(&file).unwrap();
    quotatop_store::audit::AuditLog::new(&file)
        .append(record("other", RecordKind::Intent, "bob@ops-2"))
        .unwrap();
    let (ok, err) = migrate();
    assert!(!ok);
    assert!(err.contains("not a copy of that file"), "{err}");
}
