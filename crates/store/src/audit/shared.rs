//! The audit log in a team's PostgreSQL store: the same records, hash chain and scheme as the
//! file, one row per record holding the record's exact line.
//!
//! - An append runs in one transaction that first takes an advisory lock for the log
//!   (`pg_advisory_xact_lock`), reads the last record, chains the new one to it and inserts
//!   it: writers on any machine are serialised, and the lock goes with the transaction.
//! - Append-only twice over: the writer role needs INSERT and SELECT only (docs/team.md's grants),
//!   and a trigger refuses UPDATE, DELETE and TRUNCATE for everyone, the owner included.
//! - Each row keeps the operator's identity from the record (OS user@host, STS principal) in
//!   columns of its own: the database role is not the operator.
//! - Reading gives the lines in order as the file would hold them, so `verify` and `list` run
//!   the file's own code over the same bytes.

use super::log::{canonical_line, parse_line};
use super::{AuditError, AuditRecord, RecordKind, SCHEME};
use crate::db::{Conn, DbError, PgConn, vals};
use crate::pg::{Pool, StoreUrl};

/// The component name of the audit log's schema in `quotatop_schema`.
const COMPONENT: &str = "audit";

const MIGRATIONS: &[&str] = &["
    CREATE TABLE audit_log (
        log TEXT NOT NULL,
        seq BIGINT NOT NULL,
        line TEXT NOT NULL,
        hash TEXT NOT NULL,
        operator TEXT NOT NULL,
        aws_principal TEXT,
        written_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        PRIMARY KEY (log, seq)
    );
    CREATE FUNCTION quotatop_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        RAISE EXCEPTION 'the audit log is append-only: % refused', TG_OP;
    END $$;
    CREATE TRIGGER audit_log_no_update_or_delete BEFORE UPDATE OR DELETE ON audit_log
        FOR EACH ROW EXECUTE FUNCTION quotatop_audit_append_only();
    CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
        FOR EACH STATEMENT EXECUTE FUNCTION quotatop_audit_append_only();
    "];

/// A condition on a change's outcome records, checked under the log's lock before an append.
type OutcomeCheck<'a> = Box<dyn FnOnce(&[AuditRecord]) -> bool + Send + 'a>;

/// The outcome records of `change_id` in the log `name` (inside the append's transaction).
fn outcomes_of(
    x: &mut dyn crate::db::Exec,
    name: &str,
    change_id: &str,
) -> Result<Vec<AuditRecord>, DbError> {
    // `strpos` narrows the rows read; each is then parsed and matched exactly.
    let rows = x.rows(
        "SELECT line FROM audit_log WHERE log = ?1 AND strpos(line, ?2) > 0 ORDER BY seq",
        &vals![name, change_id],
    )?;
    let mut out = Vec::new();
    for r in rows {
        let rec = parse_line(r.text(0)?.as_bytes()).map_err(|e| DbError::Codec(e.to_string()))?;
        if rec.kind == RecordKind::Outcome && rec.change_id == change_id {
            out.push(rec);
        }
    }
    Ok(out)
}

/// The default log's name in the store (one store can hold several logs).
pub const DEFAULT_LOG: &str = "default";

/// A session advisory lock held on a connection of its own until dropped (the server releases
/// it when the process dies): a queue's `shares apply` lock ([`StoreAuditLog::lock_queue`]) or
/// a change's in-flight mark ([`StoreAuditLog::begin_change`]).
pub struct SessionLock {
    client: Option<postgres::Client>,
}

impl std::fmt::Debug for SessionLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionLock")
    }
}

impl Drop for SessionLock {
    /// Closes the session (releasing the lock), off any async runtime.
    fn drop(&mut self) {
        let client = self.client.take();
        crate::db::off_runtime(move || drop(client));
    }
}

/// An audit log in a PostgreSQL store.
#[derive(Clone)]
pub struct StoreAuditLog {
    url: StoreUrl,
    name: String,
    /// How long an append waits for another writer's transaction (the log's advisory lock).
    lock_timeout: std::time::Duration,
}

impl std::fmt::Display for StoreAuditLog {
    /// `postgresql://user@host:port/db#log` (no password).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}#{}", self.url, self.name)
    }
}

impl std::fmt::Debug for StoreAuditLog {
    /// As `Display`: the URL without its password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StoreAuditLog({self})")
    }
}

impl StoreAuditLog {
    /// The log `name` in the store at `url`; its table is created on first use when `create`
    /// (a role that may create tables), else it must exist.
    pub fn open(url: &StoreUrl, name: &str, create: bool) -> Result<Self, AuditError> {
        let log = Self {
            url: url.clone(),
            name: name.to_string(),
            lock_timeout: super::lock_timeout_from_env(),
        };
        let found = log.with(|x| {
            if create {
                crate::journal::migrate_pg_component(x, COMPONENT, MIGRATIONS)
            } else {
                crate::journal::version_pg(x, COMPONENT)
            }
        })?;
        match found {
            Some(v) if v <= MIGRATIONS.len() as i64 => Ok(log),
            Some(v) => Err(log.error(format!(
                "its audit schema is version {v}; this quotatop knows up to {}",
                MIGRATIONS.len()
            ))),
            None => Err(log.error(
                "it has no audit log yet (the first change or `journal migrate` made with a role that may create tables makes it)".into(),
            )),
        }
    }

    /// The log `name` in the store at `url` for reading, with no round trip now: a read fails,
    /// saying why, when the store has no audit log yet or the role may not read it.
    pub fn reader(url: &StoreUrl, name: &str) -> Self {
        Self {
            url: url.clone(),
            name: name.to_string(),
            lock_timeout: super::lock_timeout_from_env(),
        }
    }

    /// How long an append waits for the log's lock (held by another writer's transaction)
    /// before failing with [`AuditError::LockTimeout`]; default `QUOTATOP_AUDIT_LOCK_TIMEOUT`
    /// or 30 s. Zero waits not at all.
    pub fn with_lock_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.lock_timeout = timeout;
        self
    }

    fn error(&self, message: String) -> AuditError {
        AuditError::Store {
            store: self.to_string(),
            message,
        }
    }

    fn with<R: Send>(
        &self,
        f: impl FnOnce(&mut dyn crate::db::Exec) -> Result<R, DbError> + Send,
    ) -> Result<R, AuditError> {
        let (client, stmts) =
            Pool::get(&self.url).map_err(|e| self.error(quotatop_model::error_chain(&e)))?;
        let mut conn = Conn::Postgres(Box::new(PgConn {
            client: Some(client),
            stmts,
            url: self.url.clone(),
        }));
        conn.with(f).map_err(|e| self.error(e.to_string()))
    }

    /// Appends `record`, chained to the last one (see the module doc). Returns it as written.
    pub fn append(&self, record: AuditRecord) -> Result<AuditRecord, AuditError> {
        self.append_if(record, None)?
            .ok_or_else(|| self.error("the append was refused".into()))
    }

    /// Appends `record` (an outcome) unless the log holds an outcome for its change id,
    /// deciding under the log's lock in the append's transaction, so that two writers on any
    /// machines cannot both append one. `None` when one was there.
    pub fn append_outcome_once(
        &self,
        record: AuditRecord,
    ) -> Result<Option<AuditRecord>, AuditError> {
        self.append_outcome_if(record, |outcomes| outcomes.is_empty())
    }

    /// Appends `record` (an outcome) when `still` holds of the outcome records the log has for
    /// its change id, decided under the log's lock in the append's transaction. `None` when it
    /// did not hold.
    pub fn append_outcome_if(
        &self,
        record: AuditRecord,
        still: impl FnOnce(&[AuditRecord]) -> bool + Send,
    ) -> Result<Option<AuditRecord>, AuditError> {
        self.append_if(record, Some(Box::new(still)))
    }

    /// The append of [`Self::append`], made only when `still` (given the change's outcome
    /// records, read under the lock) holds.
    fn append_if(
        &self,
        mut record: AuditRecord,
        still: Option<OutcomeCheck<'_>>,
    ) -> Result<Option<AuditRecord>, AuditError> {
        let name = self.name.clone();
        // PostgreSQL's lock_timeout: 0 means "wait for ever", so zero is 1 ms here.
        let wait_ms = self.lock_timeout.as_millis().clamp(1, i32::MAX as u128);
        let written = self.with(move |x| {
            x.batch("BEGIN")?;
            let r = (|| {
                x.batch(&format!("SET LOCAL lock_timeout = {wait_ms}"))?;
                x.exec(
                    "SELECT pg_advisory_xact_lock(hashtext('quotatop-audit'), hashtext(?1))",
                    &vals![&name],
                )?;
                if let Some(still) = still
                    && !still(&outcomes_of(x, &name, &record.change_id)?)
                {
                    return Ok(None);
                }
                let last = x.row(
                    "SELECT line FROM audit_log WHERE log = ?1 ORDER BY seq DESC LIMIT 1",
                    &vals![&name],
                )?;
                let (seq, prev) = match last {
                    None => (0, String::new()),
                    Some(r) => {
                        let line = r.text(0)?;
                        let last = parse_line(line.as_bytes())
                            .map_err(|e| DbError::Codec(e.to_string()))?;
                        (last.seq, last.hash)
                    }
                };
                record.v = SCHEME;
                record.seq = seq + 1;
                record.prev_hash = prev;
                let (line, hash) =
                    canonical_line(&record).map_err(|e| DbError::Codec(e.to_string()))?;
                record.hash = hash;
                let operator = format!("{}@{}", record.operator.user, record.operator.host);
                x.exec(
                    "INSERT INTO audit_log (log, seq, line, hash, operator, aws_principal)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    &vals![
                        &name,
                        record.seq as i64,
                        &line,
                        &record.hash,
                        &operator,
                        record.operator.aws_principal.as_deref()
                    ],
                )?;
                Ok(Some(record))
            })();
            match r {
                Ok(rec) => {
                    x.batch("COMMIT")?;
                    Ok(rec)
                }
                Err(e) => {
                    let _ = x.batch("ROLLBACK");
                    Err(e)
                }
            }
        });
        match written {
            Err(AuditError::Store { message, .. }) if message.contains("lock timeout") => {
                Err(AuditError::LockTimeout {
                    path: self.to_string(),
                    secs: self.lock_timeout.as_secs_f64(),
                    holder: "another writer's transaction in the store".into(),
                })
            }
            other => other,
        }
    }

    /// Copies the audit log file at `path` into this log, line for line (the same bytes, so
    /// the same chain and head), `chunk` lines per transaction: a copy interrupted goes on
    /// after the lines already in the store. The file's chain is verified first; the store's
    /// lines must be the file's first ones (else nothing is written). Returns (lines already
    /// there, lines copied now).
    pub fn copy_from_file(
        &self,
        path: &std::path::Path,
        chunk: usize,
    ) -> Result<(usize, usize), AuditError> {
        super::verify(path).map_err(|e| {
            self.error(format!(
                "{} does not verify ({e}); nothing was copied",
                path.display()
            ))
        })?;
        let text = std::fs::read_to_string(path).map_err(|source| AuditError::Io {
            path: path.display().to_string(),
            source,
        })?;
        let lines: Vec<&str> = text.lines().collect();
        let have = String::from_utf8_lossy(&self.data()?).into_owned();
        let have: Vec<&str> = have.lines().collect();
        if let Some(i) = (0..have.len()).find(|&i| lines.get(i) != Some(&have[i])) {
            return Err(self.error(format!(
                "its record {} differs from line {} of {}: it is not a copy of that file; nothing was copied",
                i + 1,
                i + 1,
                path.display()
            )));
        }
        let start = have.len();
        for part in lines[start..].chunks(chunk.max(1)) {
            let (name, part): (String, Vec<String>) = (
                self.name.clone(),
                part.iter().map(|l| l.to_string()).collect(),
            );
            self.with(move |x| {
                x.batch("BEGIN")?;
                let r = (|| {
                    x.exec(
                        "SELECT pg_advisory_xact_lock(hashtext('quotatop-audit'), hashtext(?1))",
                        &vals![&name],
                    )?;
                    for line in &part {
                        let r = parse_line(line.as_bytes())
                            .map_err(|e| DbError::Codec(e.to_string()))?;
                        let operator = format!("{}@{}", r.operator.user, r.operator.host);
                        x.exec(
                            "INSERT INTO audit_log (log, seq, line, hash, operator, aws_principal)
                             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                            &vals![
                                &name,
                                r.seq as i64,
                                line,
                                &r.hash,
                                &operator,
                                r.operator.aws_principal.as_deref()
                            ],
                        )?;
                    }
                    Ok(())
                })();
                match r {
                    Ok(()) => x.batch("COMMIT"),
                    Err(e) => {
                        let _ = x.batch("ROLLBACK");
                        Err(e)
                    }
                }
            })?;
        }
        Ok((start, lines.len() - start))
    }

    /// Marks the change `change_id` as being made by this process until the mark is dropped
    /// (a session advisory lock on a connection of its own; the server releases it when the
    /// process dies): `audit reconcile` on any machine leaves the change to its writer
    /// meanwhile ([`Self::in_flight`]).
    pub fn begin_change(&self, change_id: &str) -> Result<SessionLock, AuditError> {
        let mut client = self
            .url
            .connect()
            .map_err(|e| self.error(quotatop_model::error_chain(&e)))?;
        let key = format!("quotatop-change:{}", self.name);
        crate::db::off_runtime(|| {
            client.execute(
                "SELECT pg_advisory_lock(hashtext($1), hashtext($2))",
                &[&key, &change_id],
            )
        })
        .map_err(|e| self.error(crate::pg::error_text(&e)))?;
        Ok(SessionLock {
            client: Some(client),
        })
    }

    /// Whether a live process (on any machine) holds the change's mark of
    /// [`Self::begin_change`]: its writer is still making it.
    pub fn in_flight(&self, change_id: &str) -> Result<bool, AuditError> {
        let mut client = self
            .url
            .connect()
            .map_err(|e| self.error(quotatop_model::error_chain(&e)))?;
        let key = format!("quotatop-change:{}", self.name);
        let free = crate::db::off_runtime(move || {
            let free = client
                .query_one(
                    "SELECT pg_try_advisory_lock(hashtext($1), hashtext($2))",
                    &[&key, &change_id],
                )
                .and_then(|r| r.try_get::<_, bool>(0));
            // Closing the session releases the lock just taken.
            drop(client);
            free
        })
        .map_err(|e| self.error(crate::pg::error_text(&e)))?;
        Ok(!free)
    }

    /// Takes the lock of changes to `queue`'s shares in this store (a session advisory lock on
    /// a connection of its own, held until the guard is dropped; the server releases it when
    /// the process dies): `shares apply` from any machine keeping this log never plans from
    /// the same state as another. Refused at once when held.
    pub fn lock_queue(&self, queue: &str) -> Result<SessionLock, AuditError> {
        let mut client = self
            .url
            .connect()
            .map_err(|e| self.error(quotatop_model::error_chain(&e)))?;
        let key = format!("quotatop-shares:{}", self.name);
        let got = crate::db::off_runtime(|| {
            client
                .query_one(
                    "SELECT pg_try_advisory_lock(hashtext($1), hashtext($2))",
                    &[&key, &queue],
                )
                .and_then(|r| r.try_get::<_, bool>(0))
        })
        .map_err(|e| self.error(crate::pg::error_text(&e)))?;
        if !got {
            return Err(AuditError::QueueLocked {
                queue: queue.to_string(),
                path: self.to_string(),
                holder: "a session of the store".into(),
            });
        }
        Ok(SessionLock {
            client: Some(client),
        })
    }

    /// Tries the lock of changes to the job `job_id` (a session advisory lock, seen from any
    /// machine; see [`super::AuditLog::try_lock_job`]). `Ok(None)` while another holds it.
    pub fn try_lock_job(&self, job_id: &str) -> Result<Option<SessionLock>, AuditError> {
        let mut client = self
            .url
            .connect()
            .map_err(|e| self.error(quotatop_model::error_chain(&e)))?;
        let key = format!("quotatop-job:{}", self.name);
        let got = crate::db::off_runtime(|| {
            client
                .query_one(
                    "SELECT pg_try_advisory_lock(hashtext($1), hashtext($2))",
                    &[&key, &job_id],
                )
                .and_then(|r| r.try_get::<_, bool>(0))
        })
        .map_err(|e| self.error(crate::pg::error_text(&e)))?;
        Ok(got.then_some(SessionLock {
            client: Some(client),
        }))
    }

    /// How long an append waits for the log's lock before failing.
    pub fn lock_timeout(&self) -> std::time::Duration {
        self.lock_timeout
    }

    /// The log's lines in order, each ending in a newline: the bytes the file would hold.
    pub fn data(&self) -> Result<Vec<u8>, AuditError> {
        let name = self.name.clone();
        let lines = self.with(move |x| {
            x.rows(
                "SELECT line FROM audit_log WHERE log = ?1 ORDER BY seq",
                &vals![&name],
            )?
            .iter()
            .map(|r| r.text(0))
            .collect::<Result<Vec<_>, _>>()
        })?;
        let mut out = Vec::new();
        for l in lines {
            out.extend_from_slice(l.as_bytes());
            out.push(b'\n');
        }
        Ok(out)
    }

    /// Every record with its position (1-based), as [`super::read_records`] gives a file's.
    pub fn read_records(&self) -> Result<Vec<(usize, AuditRecord)>, AuditError> {
        Ok(super::read_log_data(&self.data()?, &self.to_string())?.records)
    }

    /// The chain checked as a file's is ([`super::verify`]).
    pub fn verify(&self) -> Result<super::Head, super::VerifyError> {
        let data = self.data().map_err(|e| super::VerifyError {
            line: 0,
            message: quotatop_model::error_chain(&e),
        })?;
        super::verify_data(&data, &self.to_string())
    }
}
