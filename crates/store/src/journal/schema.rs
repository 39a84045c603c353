//! The journal's schema, versioned with `PRAGMA user_version`. Each migration moves the
//! database from version `i` to `i + 1`; they run in order, in one transaction each, on open.
//! Never edit a released migration: add a new one.

use rusqlite::Connection;

const MIGRATIONS: &[&str] = &[
    // 1: jobs, observed transitions, per-share usage samples, snapshots, queue configurations.
    "
    CREATE TABLE jobs (
        job_id TEXT PRIMARY KEY,
        queue TEXT NOT NULL,
        name TEXT NOT NULL,
        share TEXT NOT NULL,
        priority INTEGER NOT NULL,
        instance_type TEXT NOT NULL,
        instance_count INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        status TEXT NOT NULL,
        first_seen_at INTEGER NOT NULL,
        last_seen_at INTEGER NOT NULL
    );
    CREATE INDEX jobs_queue ON jobs(queue, last_seen_at);
    CREATE TABLE transitions (
        job_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        attempt TEXT NOT NULL,
        at INTEGER NOT NULL,
        exact INTEGER NOT NULL,
        observed_at INTEGER NOT NULL,
        PRIMARY KEY (job_id, kind, attempt)
    ) WITHOUT ROWID;
    CREATE INDEX transitions_at ON transitions(at);
    CREATE TABLE priority_changes (
        job_id TEXT NOT NULL,
        observed_at INTEGER NOT NULL,
        old INTEGER NOT NULL,
        new INTEGER NOT NULL,
        PRIMARY KEY (job_id, observed_at)
    ) WITHOUT ROWID;
    CREATE TABLE usage_samples (
        queue TEXT NOT NULL,
        share TEXT NOT NULL,
        instance_type TEXT NOT NULL,
        at INTEGER NOT NULL,
        used INTEGER NOT NULL,
        share_limit INTEGER NOT NULL,
        borrowed INTEGER NOT NULL,
        lent INTEGER NOT NULL,
        PRIMARY KEY (queue, share, instance_type, at)
    ) WITHOUT ROWID;
    CREATE TABLE snapshots (
        taken_at INTEGER PRIMARY KEY,
        sequence INTEGER NOT NULL,
        data BLOB NOT NULL
    );
    CREATE TABLE queues (
        name TEXT PRIMARY KEY,
        environment TEXT NOT NULL,
        shares TEXT NOT NULL,
        last_observed_at INTEGER NOT NULL
    );
    ",
    // 2: why a preempted attempt ended (the API's statusReason), kept once the API's window of
    // recent attempts no longer shows it.
    "ALTER TABLE transitions ADD COLUMN reason TEXT NOT NULL DEFAULT '';",
    // 3: facts a replay of the journal needs that the first schema did not keep: each job's
    // retry cap and checkpoint interval (from DescribeServiceJob; NULL = not known), and every
    // share configuration the queue had (not only the last), so a replay can start from the
    // configuration in force at the start of its window.
    "ALTER TABLE jobs ADD COLUMN preemption_retries INTEGER;
     ALTER TABLE jobs ADD COLUMN checkpoint_ms INTEGER;
     CREATE TABLE share_configs (
         queue TEXT NOT NULL,
         observed_at INTEGER NOT NULL,
         environment TEXT NOT NULL,
         shares TEXT NOT NULL,
         PRIMARY KEY (queue, observed_at)
     ) WITHOUT ROWID;
     INSERT INTO share_configs (queue, observed_at, environment, shares)
         SELECT name, last_observed_at, environment, shares FROM queues;",
    // 4: queues keyed by their source (`[[sources]]`) as well as their name: two regions may
    // both have `ml-training`. Rows written before are the implicit source's ('').
    "
    ALTER TABLE jobs ADD COLUMN source TEXT NOT NULL DEFAULT '';
    DROP INDEX jobs_queue;
    CREATE INDEX jobs_queue ON jobs(source, queue, last_seen_at);
    CREATE TABLE usage_samples_new (
        source TEXT NOT NULL DEFAULT '',
        queue TEXT NOT NULL,
        share TEXT NOT NULL,
        instance_type TEXT NOT NULL,
        at INTEGER NOT NULL,
        used INTEGER NOT NULL,
        share_limit INTEGER NOT NULL,
        borrowed INTEGER NOT NULL,
        lent INTEGER NOT NULL,
        PRIMARY KEY (source, queue, share, instance_type, at)
    ) WITHOUT ROWID;
    INSERT INTO usage_samples_new
        SELECT '', queue, share, instance_type, at, used, share_limit, borrowed, lent
        FROM usage_samples;
    DROP TABLE usage_samples;
    ALTER TABLE usage_samples_new RENAME TO usage_samples;
    CREATE TABLE queues_new (
        source TEXT NOT NULL DEFAULT '',
        name TEXT NOT NULL,
        environment TEXT NOT NULL,
        shares TEXT NOT NULL,
        last_observed_at INTEGER NOT NULL,
        PRIMARY KEY (source, name)
    );
    INSERT INTO queues_new SELECT '', name, environment, shares, last_observed_at FROM queues;
    DROP TABLE queues;
    ALTER TABLE queues_new RENAME TO queues;
    CREATE TABLE share_configs_new (
        source TEXT NOT NULL DEFAULT '',
        queue TEXT NOT NULL,
        observed_at INTEGER NOT NULL,
        environment TEXT NOT NULL,
        shares TEXT NOT NULL,
        PRIMARY KEY (source, queue, observed_at)
    ) WITHOUT ROWID;
    INSERT INTO share_configs_new
        SELECT '', queue, observed_at, environment, shares FROM share_configs;
    DROP TABLE share_configs;
    ALTER TABLE share_configs_new RENAME TO share_configs;
    ",
];

/// The schema version this build writes.
pub const VERSION: i64 = MIGRATIONS.len() as i64;

/// The database's version before and after: `Err(found)` when it is newer than [`VERSION`].
///
/// The version is read and every pending migration applied inside one exclusive transaction:
/// a second process opening a fresh journal at the same moment waits for the lock (the
/// connection's busy timeout), then reads the new version and has nothing to do, instead of
/// running the first migration again on tables that now exist.
pub fn migrate(conn: &mut Connection) -> Result<Result<(i64, i64), i64>, rusqlite::Error> {
    // Most opens find the schema current: check without taking the write lock first.
    let seen: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if seen == VERSION {
        return Ok(Ok((seen, VERSION)));
    }
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Exclusive)?;
    let found: i64 = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if found > VERSION {
        return Ok(Err(found));
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(found.max(0) as usize) {
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", (i + 1) as i64)?;
    }
    tx.commit()?;
    Ok(Ok((found, VERSION)))
}
