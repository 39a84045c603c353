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

/// A role with SELECT only (README's `quotatop_reader`) reads the journal; opening it to
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
