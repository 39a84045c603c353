//! The journal's suite (`quotatop_store::journal::suite`) on PostgreSQL, and what only a
//! shared store has: concurrent first opens, a read-only role, credentials kept out of view.

use quotatop_store::StoreLocation;
use quotatop_store::journal::{Journal, JournalConfig, suite};
use quotatop_store::pg::StoreUrl;

use crate::Test;
use crate::cluster::Cluster;

/// The store of a fresh database of `cluster`.
pub fn fresh(cluster: &Cluster, hint: &str) -> StoreLocation {
    let db = cluster.database(hint);
    StoreLocation::Postgres(StoreUrl::parse(&cluster.admin_url(&db)).unwrap())
}

pub fn tests() -> Vec<Test> {
    let mut out: Vec<Test> = suite::TESTS
        .iter()
        .map(|&(name, test)| {
            let body: Box<dyn Fn(&Cluster)> = Box::new(move |c: &Cluster| test(&fresh(c, name)));
            (format!("journal::suite::{name}"), body)
        })
        .collect();
    out.push((
        "journal::concurrent_first_opens_migrate_once".into(),
        Box::new(concurrent_first_opens_migrate_once),
    ));
    out.push((
        "journal::read_only_role_reads_and_cannot_write".into(),
        Box::new(read_only_role_reads_and_cannot_write),
    ));
    out.push((
        "journal::the_readmes_roles_and_grants_work".into(),
        Box::new(the_readmes_roles_and_grants_work),
    ));
    out
}

/// Eight processes' worth of first opens at once on an empty database: the advisory lock
/// lets one migrate; all get a working journal.
fn concurrent_first_opens_migrate_once(c: &Cluster) {
    let store = fresh(c, "concurrent");
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(8));
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let (store, barrier) = (store.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                Journal::open_at(&store, JournalConfig::default()).map(|_| ())
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap().unwrap();
    }
    let StoreLocation::Postgres(url) = &store else {
        unreachable!()
    };
    let db = url.to_string().rsplit('/').next().unwrap().to_string();
    let v: i64 = c
        .admin(&db)
        .query_one(
            "SELECT version FROM quotatop_schema WHERE component = 'journal'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(v, quotatop_store::journal::PG_SCHEMA_VERSION);
}

/// A role with SELECT only (docs/team.md's `quotatop_reader`) reads the journal; opening it to
/// write fails with the server's permission error, not a panic or a silent success.
fn read_only_role_reads_and_cannot_write(c: &Cluster) {
    let store = fresh(c, "readonly");
    let StoreLocation::Postgres(url) = &store else {
        unreachable!()
    };
    let db = url.to_string().rsplit('/').next().unwrap().to_string();
    drop(Journal::open_at(&store, JournalConfig::default()).unwrap());
    let mut admin = c.admin(&db);
    admin
        .batch_execute(
            "CREATE ROLE reader LOGIN PASSWORD 'reader-pw';
             GRANT SELECT ON ALL TABLES IN SCHEMA public TO reader;",
        )
        .unwrap();
    let reader = StoreLocation::parse(&format!(
        "postgresql://reader:reader-pw@127.0.0.1:{}/{db}",
        c.port
    ))
    .unwrap();
    let j = Journal::open_existing_at(&reader, JournalConfig::default()).unwrap();
    assert!(j.queues().unwrap().is_empty());
    drop(j);
    let mut w = Journal::open_at(&reader, JournalConfig::default()).unwrap();
    let err = w
        .record(&quotatop_model::Snapshot {
            taken_at: 1,
            queues: vec![quotatop_analysis::fixture::queue(&[])],
            ..Default::default()
        })
        .unwrap_err();
    assert!(err.to_string().contains("permission denied"), "{err}");
    assert!(!err.to_string().contains("reader-pw"), "{err}");
}

/// docs/team.md's "Roles and grants", run as written: the owner makes the tables, the recorder
/// journals and prunes, the reader reads and cannot write, the auditor appends.
fn the_readmes_roles_and_grants_work(c: &Cluster) {
    let readme = std::fs::read_to_string("docs/team.md").unwrap();
    let from = readme.find("**Roles and grants**").unwrap();
    let block = &readme[from..];
    let block = &block[block.find("```sql").unwrap() + 6..];
    let block = &block[..block.find("```").unwrap()];
    let (before, after) = block.split_once("-- after the owner's first").unwrap();
    let strip = |sql: &str| -> String {
        sql.lines()
            .filter(|l| !l.starts_with("CREATE DATABASE") && !l.starts_with("\\c"))
            .map(|l| l.split("--").next().unwrap())
            .collect::<Vec<_>>()
            .join("\n")
    };
    let db = c.database("grants");
    let mut admin = c.admin(&db);
    admin.batch_execute(&strip(before)).unwrap();
    for role in ["owner", "recorder", "reader", "auditor"] {
        admin
            .batch_execute(&format!("ALTER ROLE quotatop_{role} PASSWORD 'pw-{role}'"))
            .unwrap();
    }
    let url = |role: &str| {
        StoreLocation::parse(&format!(
            "postgresql://quotatop_{role}:pw-{role}@127.0.0.1:{}/{db}",
            c.port
        ))
        .unwrap()
    };
    let StoreLocation::Postgres(owner) = url("owner") else {
        unreachable!()
    };
    drop(Journal::open_at(&url("owner"), JournalConfig::default()).unwrap());
    quotatop_store::audit::StoreAuditLog::open(&owner, "default", true).unwrap();
    // The second part, from its first line on (the comment line's rest is dropped).
    let after = after.split_once('\n').unwrap().1;
    admin.batch_execute(&strip(after)).unwrap();
    let snap = |t: i64| quotatop_model::Snapshot {
        taken_at: t,
        queues: vec![{
            let mut q = quotatop_analysis::fixture::queue(&[]);
            q.server_time = Some(t);
            q
        }],
        ..Default::default()
    };
    let mut rec = Journal::open_at(&url("recorder"), JournalConfig::default()).unwrap();
    rec.record(&snap(1_000)).unwrap();
    rec.prune().unwrap();
    let reader = Journal::open_existing_at(&url("reader"), JournalConfig::default()).unwrap();
    assert_eq!(reader.queues().unwrap().len(), 1);
    let mut w = Journal::open_at(&url("reader"), JournalConfig::default()).unwrap();
    assert!(w.record(&snap(2_000)).is_err());
    let StoreLocation::Postgres(auditor) = url("auditor") else {
        unreachable!()
    };
    let log = quotatop_store::audit::StoreAuditLog::open(&auditor, "default", false).unwrap();
    assert_eq!(log.verify().unwrap().count, 0);
    let StoreLocation::Postgres(recorder) = url("recorder") else {
        unreachable!()
    };
    two_recorders_on_the_recorder_role(c, &db, &recorder);
}

/// Two recorders on docs/team.md's recorder role: one leads (the lease tables are granted);
/// when its lease lapses (its heartbeat made old and its renewal held, as a frozen leader's
/// would be), the other ends its session without a superuser (same role) and leads.
fn two_recorders_on_the_recorder_role(c: &Cluster, db: &str, url: &quotatop_store::pg::StoreUrl) {
    use crate::failover::role_within;
    use quotatop_store::{Lead, Role};
    use std::time::{Duration, Instant};
    let leads = |r: &Role| matches!(r, Role::Leader(_) | Role::Lost(_));
    let a = Lead::spawn(url.clone(), "grants".into()).unwrap();
    assert!(
        matches!(
            role_within(&a, Duration::from_secs(20), leads),
            Role::Leader(_)
        ),
        "{:?}",
        a.role()
    );
    let b = Lead::spawn(url.clone(), "grants".into()).unwrap();
    let r = role_within(&b, Duration::from_secs(20), |r| {
        !matches!(r, Role::Starting)
    });
    assert_eq!(r, Role::Standby);
    let mut admin = c.admin(db);
    let pid_a: i32 = admin
        .query_one(
            "SELECT backend_pid FROM record_lease WHERE source = 'grants'",
            &[],
        )
        .unwrap()
        .get(0);
    admin
        .execute(
            "UPDATE record_heartbeat SET renewed_at = now() - interval '1 hour'
             WHERE source = 'grants'",
            &[],
        )
        .unwrap();
    let mut hold = c.admin(db);
    let mut tx = hold.transaction().unwrap();
    tx.query(
        "SELECT 1 FROM record_heartbeat WHERE source = 'grants' FOR UPDATE",
        &[],
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let alive: i64 = admin
            .query_one(
                "SELECT COUNT(*) FROM pg_stat_activity WHERE pid = $1",
                &[&pid_a],
            )
            .unwrap()
            .get(0);
        if alive == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the lapsed leader's session was not ended: {:?}",
            b.role()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    tx.rollback().unwrap();
    let Role::Leader(f) = role_within(&b, Duration::from_secs(20), leads) else {
        panic!("{:?}", b.role());
    };
    assert_eq!(f.epoch(), 2);
    assert!(matches!(
        role_within(&a, Duration::from_secs(10), |r| matches!(r, Role::Lost(_))),
        Role::Lost(_)
    ));
}
