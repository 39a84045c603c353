//! The journal's schema, versioned with `PRAGMA user_version`. Each migration moves the
//! database from version `i` to `i + 1`; they run in order, in one transaction each, on open.
//! Never edit a released migration: add a new one.

use rusqlite::Connection;

use crate::db::{DbError, Exec, vals};

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
    // 5: the training job behind each job (issue 34): the checkpoint objects every listing of
    // its CheckpointConfig.S3Uri showed (each version: a key written again keeps both times),
    // the last listing, and what attempts' logs said (the preemption signal, the restore).
    "
    CREATE TABLE checkpoints (
        job_id TEXT NOT NULL,
        key TEXT NOT NULL,
        written_at INTEGER NOT NULL,
        size INTEGER NOT NULL,
        observed_at INTEGER NOT NULL,
        PRIMARY KEY (job_id, key, written_at)
    ) WITHOUT ROWID;
    CREATE TABLE checkpoint_listings (
        job_id TEXT PRIMARY KEY,
        uri TEXT NOT NULL,
        last_listed_at INTEGER NOT NULL,
        truncated INTEGER NOT NULL
    );
    CREATE TABLE attempt_marks (
        job_id TEXT NOT NULL,
        attempt TEXT NOT NULL,
        signal_at INTEGER,
        restored INTEGER,
        observed_at INTEGER NOT NULL,
        PRIMARY KEY (job_id, attempt)
    ) WITHOUT ROWID;
    ",
    // 6: each job's class tag (`quotatop:class`), the policy's first source of membership;
    // NULL = none seen (every job recorded before).
    "ALTER TABLE jobs ADD COLUMN class_tag TEXT;",
    // 7: when a re-run's log said it restored a checkpoint (how long the restore took is
    // measured from it); NULL = not read, or it did not restore.
    "ALTER TABLE attempt_marks ADD COLUMN restored_at INTEGER;",
    // 8: an attempt that failed and was retried is not a preemption (issue 44): older builds
    // recorded it as `preempted`, with its reason. A reason that is not a preemption's is the
    // failed attempt it was (the rule of `quotatop_model::says_preempted`, which
    // `tests/it/journal_migrate.rs` checks this against).
    "UPDATE transitions SET kind = 'attempt_failed'
     WHERE kind = 'preempted' AND reason <> ''
       AND lower(reason) NOT LIKE '%preempt%'
       AND lower(reason) NOT LIKE '%capacity limit reduced below current usage%';",
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

/// The journal's name in a PostgreSQL store's `quotatop_schema` table (the audit log has its
/// own row).
pub const PG_COMPONENT: &str = "journal";

/// The PostgreSQL journal's migrations: the same tables as SQLite's (version 4 in the first,
/// and the drills table; then the live snapshot; the training tables as SQLite's 5; the class
/// tag as SQLite's 6; the restore's time as SQLite's 7; failed attempts apart as SQLite's 8), with PostgreSQL's types. Versioned in `quotatop_schema`, applied under an
/// advisory lock so two recorders starting at once do not both run them.
const PG_MIGRATIONS: &[&str] = &[
    "
    CREATE TABLE jobs (
        job_id TEXT PRIMARY KEY,
        queue TEXT NOT NULL,
        name TEXT NOT NULL,
        share TEXT NOT NULL,
        priority BIGINT NOT NULL,
        instance_type TEXT NOT NULL,
        instance_count BIGINT NOT NULL,
        created_at BIGINT NOT NULL,
        status TEXT NOT NULL,
        first_seen_at BIGINT NOT NULL,
        last_seen_at BIGINT NOT NULL,
        preemption_retries BIGINT,
        checkpoint_ms BIGINT,
        source TEXT NOT NULL DEFAULT ''
    );
    CREATE INDEX jobs_queue ON jobs(source, queue, last_seen_at);
    CREATE TABLE transitions (
        job_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        attempt TEXT NOT NULL,
        at BIGINT NOT NULL,
        exact BOOLEAN NOT NULL,
        observed_at BIGINT NOT NULL,
        reason TEXT NOT NULL DEFAULT '',
        PRIMARY KEY (job_id, kind, attempt)
    );
    CREATE INDEX transitions_at ON transitions(at);
    CREATE TABLE priority_changes (
        job_id TEXT NOT NULL,
        observed_at BIGINT NOT NULL,
        old BIGINT NOT NULL,
        new BIGINT NOT NULL,
        PRIMARY KEY (job_id, observed_at)
    );
    CREATE TABLE usage_samples (
        source TEXT NOT NULL DEFAULT '',
        queue TEXT NOT NULL,
        share TEXT NOT NULL,
        instance_type TEXT NOT NULL,
        at BIGINT NOT NULL,
        used BIGINT NOT NULL,
        share_limit BIGINT NOT NULL,
        borrowed BIGINT NOT NULL,
        lent BIGINT NOT NULL,
        PRIMARY KEY (source, queue, share, instance_type, at)
    );
    CREATE TABLE snapshots (
        taken_at BIGINT PRIMARY KEY,
        sequence BIGINT NOT NULL,
        data BYTEA NOT NULL
    );
    CREATE TABLE queues (
        source TEXT NOT NULL DEFAULT '',
        name TEXT NOT NULL,
        environment TEXT NOT NULL,
        shares TEXT NOT NULL,
        last_observed_at BIGINT NOT NULL,
        PRIMARY KEY (source, name)
    );
    CREATE TABLE share_configs (
        source TEXT NOT NULL DEFAULT '',
        queue TEXT NOT NULL,
        observed_at BIGINT NOT NULL,
        environment TEXT NOT NULL,
        shares TEXT NOT NULL,
        PRIMARY KEY (source, queue, observed_at)
    );
    CREATE TABLE drills (
        run_id TEXT PRIMARY KEY,
        queue TEXT NOT NULL,
        started_at BIGINT NOT NULL,
        finished_at BIGINT NOT NULL,
        report TEXT NOT NULL
    );
    ",
    "
    -- The recorder's newest snapshot, replaced on every write and announced with NOTIFY
    -- quotatop_snapshot: what consoles following the store show live (`snapshots` keeps the
    -- history at its interval). One row; written_at is the recorder's clock at the write.
    CREATE TABLE live_snapshot (
        id SMALLINT PRIMARY KEY CHECK (id = 1),
        taken_at BIGINT NOT NULL,
        sequence BIGINT NOT NULL,
        written_at BIGINT NOT NULL,
        data BYTEA NOT NULL
    );
    ",
    // 3: the training job behind each job, as SQLite's migration 5.
    "
    CREATE TABLE checkpoints (
        job_id TEXT NOT NULL,
        key TEXT NOT NULL,
        written_at BIGINT NOT NULL,
        size BIGINT NOT NULL,
        observed_at BIGINT NOT NULL,
        PRIMARY KEY (job_id, key, written_at)
    );
    CREATE TABLE checkpoint_listings (
        job_id TEXT PRIMARY KEY,
        uri TEXT NOT NULL,
        last_listed_at BIGINT NOT NULL,
        truncated BIGINT NOT NULL
    );
    CREATE TABLE attempt_marks (
        job_id TEXT NOT NULL,
        attempt TEXT NOT NULL,
        signal_at BIGINT,
        restored BIGINT,
        observed_at BIGINT NOT NULL,
        PRIMARY KEY (job_id, attempt)
    );
    ",
    // 4: each job's class tag, as SQLite's version 6.
    "ALTER TABLE jobs ADD COLUMN class_tag TEXT;",
    // 5: when a re-run's log said it restored, as SQLite's version 7.
    "ALTER TABLE attempt_marks ADD COLUMN restored_at BIGINT;",
    // 6: a failed attempt recorded as `preempted` by older builds, as SQLite's version 8.
    "UPDATE transitions SET kind = 'attempt_failed'
     WHERE kind = 'preempted' AND reason <> ''
       AND lower(reason) NOT LIKE '%preempt%'
       AND lower(reason) NOT LIKE '%capacity limit reduced below current usage%';",
];

/// The PostgreSQL journal's schema version this build writes.
pub const PG_VERSION: i64 = PG_MIGRATIONS.len() as i64;

/// The version of `component` in a PostgreSQL store; `None` when it has none (no
/// `quotatop_schema` table, or no row). Reads only.
pub(crate) fn version_pg(x: &mut dyn Exec, component: &str) -> Result<Option<i64>, DbError> {
    let table = x
        .row("SELECT to_regclass('quotatop_schema') IS NOT NULL", &[])?
        .map(|r| r.boolean(0))
        .transpose()?
        .unwrap_or(false);
    if !table {
        return Ok(None);
    }
    x.row(
        "SELECT version FROM quotatop_schema WHERE component = ?1",
        &vals![component],
    )?
    .map(|r| r.int(0))
    .transpose()
}

/// Applies `migrations` of `component` not yet applied, in one transaction holding an
/// advisory lock (two processes opening a fresh store at once: the second waits, then finds
/// nothing to do). Returns the version found before (`Some`, newer than known: untouched).
pub(crate) fn migrate_pg_component(
    x: &mut dyn Exec,
    component: &str,
    migrations: &[&str],
) -> Result<Option<i64>, DbError> {
    let known = migrations.len() as i64;
    if version_pg(x, component)? == Some(known) {
        return Ok(Some(known));
    }
    x.batch("BEGIN")?;
    let r = (|| {
        x.row(
            "SELECT pg_advisory_xact_lock(hashtext('quotatop-schema'))::text",
            &[],
        )?;
        x.batch(
            "CREATE TABLE IF NOT EXISTS quotatop_schema (
                 component TEXT PRIMARY KEY, version BIGINT NOT NULL)",
        )?;
        let found = version_pg(x, component)?.unwrap_or(0);
        if found >= known {
            return Ok(Some(found));
        }
        for sql in migrations.iter().skip(found.max(0) as usize) {
            x.batch(sql)?;
        }
        x.exec(
            "INSERT INTO quotatop_schema (component, version) VALUES (?1, ?2)
             ON CONFLICT (component) DO UPDATE SET version = excluded.version",
            &vals![component, known],
        )?;
        Ok(Some(known))
    })();
    match r {
        Ok(v) => {
            x.batch("COMMIT")?;
            Ok(v)
        }
        Err(e) => {
            let _ = x.batch("ROLLBACK");
            Err(e)
        }
    }
}

/// The journal's migrations on a PostgreSQL store (see [`migrate_pg_component`]), and the
/// recorders' lease tables (`crate::lead`) with them, so the owner's first writable open
/// (`journal migrate --to`) makes those too.
pub(crate) fn migrate_pg(x: &mut dyn Exec) -> Result<Option<i64>, DbError> {
    let found = migrate_pg_component(x, PG_COMPONENT, PG_MIGRATIONS)?;
    crate::lead::migrate(x)?;
    Ok(found)
}
