//! Which of several recorders of one source writes a store: the one holding a PostgreSQL
//! session advisory lock, on a connection of its own, and the lease that goes with it.
//!
//! [`Lead::spawn`] starts a thread that tries the lock once a second (standby) until it holds
//! it (a store that refuses the recorder or cannot be reached is [`Role::Refused`], tried again
//! with a [`backoff`]), then claims the source's lease: `record_lease` gets a new *epoch* (one more than the
//! last leader's) and the lock connection's backend pid, and `record_heartbeat` the time. The
//! leader ([`Role::Leader`], with its [`Fence`]) renews the heartbeat every
//! [`LEASE_RENEW`] on the lock's connection.
//!
//! - A leader that dies (kill -9 included) ends its session: the server releases the lock
//!   and a standby takes it within a second.
//! - A leader that is frozen (SIGSTOP, a hung machine whose TCP stays up) keeps its session
//!   and so the lock; but it stops renewing. A standby that finds the heartbeat older than
//!   [`LEASE`] ends the holder's session (`pg_terminate_backend` of the pid in the lease),
//!   which releases the lock, takes it and claims the lease with the next epoch.
//! - Fencing: every journal and live-snapshot write of a leader ends with [`Fence::check`] in
//!   its transaction: it reads the lease's epoch `FOR SHARE` (a new leader's claim waits for
//!   that write's commit, and a write checked after the claim sees the new epoch and is
//!   rolled back). A
//!   frozen leader that thaws writes nothing more; its renewal fails (its session was ended,
//!   or the epoch moved on) and it is told ([`Role::Lost`]), and steps down.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::db::{DbError, Exec, Pg, StmtCache, vals};
use crate::pg::{PgError, StoreUrl, error_text};

/// How often a standby tries the lock.
pub const LEAD_CHECK: Duration = Duration::from_secs(1);
/// How often a leader renews its lease's heartbeat.
pub const LEASE_RENEW: Duration = Duration::from_secs(2);
/// A heartbeat older than this is a frozen (or cut off) leader's: a standby ends its session
/// and leads. Three renewals missed.
pub const LEASE: Duration = Duration::from_secs(6);
/// The longest wait between two tries of a store that refused this recorder.
pub const REFUSED_BACKOFF_MAX: Duration = Duration::from_secs(30);
/// The lock's first key: every quotatop recorder lock, whatever the source.
const NAMESPACE: &str = "quotatop-record";
/// How long a write transaction of a leader may sit idle (its process frozen) before the
/// server ends it, so that it cannot hold the lease row from the next leader's claim.
const IDLE_IN_WRITE: &str = "5s";

/// The lease's tables, versioned in `quotatop_schema` as `record-lease`.
const LEASE_COMPONENT: &str = "record-lease";
const LEASE_MIGRATIONS: &[&str] = &["
    -- Who leads each recorded source: the epoch grows by one with each new leader, and every
    -- write of the journal checks it (fencing); backend_pid is the leader's lock session.
    CREATE TABLE record_lease (
        source TEXT PRIMARY KEY,
        epoch BIGINT NOT NULL,
        backend_pid INTEGER NOT NULL,
        taken_at TIMESTAMPTZ NOT NULL
    );
    -- The leader's heartbeat, apart from the lease so renewing never waits for a write.
    CREATE TABLE record_heartbeat (
        source TEXT PRIMARY KEY,
        renewed_at TIMESTAMPTZ NOT NULL
    );
    "];

/// Makes the lease's tables when the store has none yet (a role that may create tables).
pub(crate) fn migrate(x: &mut dyn Exec) -> Result<(), DbError> {
    crate::journal::migrate_pg_component(x, LEASE_COMPONENT, LEASE_MIGRATIONS).map(|_| ())
}

/// A recorder's part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// The lock not tried yet.
    Starting,
    /// Another recorder leads: this one waits its turn.
    Standby,
    /// The store refused this recorder or could not be reached (a wrong password, a closed
    /// port, a missing grant): an error, not a standby. `failures` tries in a row failed; the
    /// next is in `retry_in` ([`backoff`]).
    Refused {
        why: String,
        failures: u64,
        retry_in: Duration,
    },
    /// This recorder leads; its writes carry the fence.
    Leader(Fence),
    /// Led, and lost the lead (the reason): stop recording.
    Lost(String),
}

/// A leader's claim on its source's writes: the epoch of the lease it took. See the module
/// doc.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fence {
    source: String,
    epoch: i64,
}

impl Fence {
    /// The lease's epoch this leader took.
    pub fn epoch(&self) -> i64 {
        self.epoch
    }

    /// The last statement of a write's transaction: refuses it (the caller rolls back)
    /// unless the lease still has this epoch. Holds the lease row (`FOR SHARE`) until the
    /// commit, so a claim waits for it, and bounds how long the transaction may then sit
    /// idle (a process frozen between this check and its commit). Last rather than first: a
    /// long write (10,000 jobs) neither holds the row nor runs under that bound.
    pub(crate) fn check(&self, x: &mut dyn Exec) -> Result<(), DbError> {
        x.batch(&format!(
            "SET LOCAL idle_in_transaction_session_timeout = '{IDLE_IN_WRITE}'"
        ))?;
        let now = x
            .row(
                "SELECT epoch FROM record_lease WHERE source = ?1 FOR SHARE",
                &vals![&self.source],
            )?
            .map(|r| r.int(0))
            .transpose()?;
        if now == Some(self.epoch) {
            return Ok(());
        }
        Err(DbError::Fenced(match now {
            Some(n) => format!(
                "another recorder leads this source now (lease epoch {n}; this recorder's was {}): nothing written",
                self.epoch
            ),
            None => "the source's lease is gone from the store: nothing written".to_string(),
        }))
    }
}

/// The leadership thread's state, read by the recorder.
pub struct Lead {
    role: Arc<Mutex<Role>>,
    stop: Arc<AtomicBool>,
}

impl Lead {
    /// Starts contending for the lead of `source` (any text naming what is recorded) on the
    /// store at `url`.
    pub fn spawn(url: StoreUrl, source: String) -> std::io::Result<Self> {
        let role = Arc::new(Mutex::new(Role::Starting));
        let stop = Arc::new(AtomicBool::new(false));
        let (r, s) = (role.clone(), stop.clone());
        std::thread::Builder::new()
            .name("record-lead".into())
            .spawn(move || run(&url, &source, &r, &s))?;
        Ok(Self { role, stop })
    }

    pub fn role(&self) -> Role {
        self.role.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl Drop for Lead {
    /// Stops the thread, which closes the lock's session (releasing it) within a second.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn set(role: &Mutex<Role>, r: Role) {
    *role.lock().unwrap_or_else(|p| p.into_inner()) = r;
}

/// The wait after `failures` tries in a row the store refused: [`LEAD_CHECK`], doubled with
/// each failure, at most [`REFUSED_BACKOFF_MAX`].
pub fn backoff(failures: u64) -> Duration {
    let doublings = u32::try_from(failures.saturating_sub(1))
        .unwrap_or(u32::MAX)
        .min(16);
    (LEAD_CHECK * 2u32.pow(doublings)).min(REFUSED_BACKOFF_MAX)
}

fn run(url: &StoreUrl, source: &str, role: &Mutex<Role>, stop: &AtomicBool) {
    let mut client: Option<postgres::Client> = None;
    let mut fence: Option<Fence> = None;
    let mut renewed = Instant::now();
    let mut failures = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let mut wait = LEAD_CHECK;
        if let Some(f) = &fence {
            if renewed.elapsed() >= LEASE_RENEW {
                match renew(url, client.as_mut(), f) {
                    Ok(()) => renewed = Instant::now(),
                    Err(why) => {
                        tracing::error!(store = %url, %why, "lost the recorder's lead");
                        set(role, Role::Lost(why.to_string()));
                        return;
                    }
                }
            }
        } else {
            match contend(url, source, &mut client) {
                Ok(Some(f)) => {
                    tracing::info!(store = %url, epoch = f.epoch, "leading: this recorder writes the store");
                    renewed = Instant::now();
                    set(role, Role::Leader(f.clone()));
                    fence = Some(f);
                    failures = 0;
                }
                Ok(None) => {
                    failures = 0;
                    set(role, Role::Standby);
                }
                Err(e) => {
                    client = None;
                    failures += 1;
                    wait = backoff(failures);
                    set(
                        role,
                        Role::Refused {
                            why: e.to_string(),
                            failures,
                            retry_in: wait,
                        },
                    );
                }
            }
        }
        // Waits in steps of at most LEAD_CHECK, so a dropped lead ends its thread promptly.
        let until = Instant::now() + wait;
        while !stop.load(Ordering::Relaxed) && Instant::now() < until {
            std::thread::sleep(LEAD_CHECK.min(until.saturating_duration_since(Instant::now())));
        }
    }
}

fn query_err(url: &StoreUrl, e: &postgres::Error) -> PgError {
    PgError::Query {
        store: url.to_string(),
        message: error_text(e),
    }
}

fn db_err(url: &StoreUrl, e: &DbError) -> PgError {
    PgError::Query {
        store: url.to_string(),
        message: e.to_string(),
    }
}

/// Why a leader's renewal failed: it no longer leads.
#[derive(Debug)]
enum LeadLost {
    /// The lock's connection was dropped earlier.
    ConnectionGone { store: String },
    /// The renewal's statement failed (the connection was ended, or the server is gone).
    RenewalFailed { store: String, message: String },
    /// The lease moved on: another recorder leads with a newer epoch.
    TakenOver { store: String, epoch: i64 },
}

impl std::fmt::Display for LeadLost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::ConnectionGone { store } => write!(f, "the lock's connection to {store} is gone"),
            Self::RenewalFailed { store, message } => write!(
                f,
                "the lock's connection to {store} failed (a standby ends it when this recorder's lease of {} s lapses): {message}",
                LEASE.as_secs()
            ),
            Self::TakenOver { store, epoch } => write!(
                f,
                "another recorder took the lead on {store} (this recorder's lease, epoch {epoch}, lapsed)"
            ),
        }
    }
}

/// A leader's renewal: the heartbeat, while the lease still has its epoch.
fn renew(url: &StoreUrl, client: Option<&mut postgres::Client>, f: &Fence) -> Result<(), LeadLost> {
    let store = url.to_string();
    let Some(c) = client else {
        return Err(LeadLost::ConnectionGone { store });
    };
    let n = c
        .execute(
            "UPDATE record_heartbeat SET renewed_at = clock_timestamp()
             WHERE source = $1
               AND EXISTS (SELECT 1 FROM record_lease WHERE source = $1 AND epoch = $2)",
            &[&f.source, &f.epoch],
        )
        .map_err(|e| LeadLost::RenewalFailed {
            store: store.clone(),
            message: error_text(&e),
        })?;
    if n == 1 {
        Ok(())
    } else {
        Err(LeadLost::TakenOver {
            store,
            epoch: f.epoch,
        })
    }
}

/// One try of the lock on `client` (connected first when `None`): the fence when it is
/// taken. A lock held under a lapsed lease is taken from its holder first.
fn contend(
    url: &StoreUrl,
    source: &str,
    client: &mut Option<postgres::Client>,
) -> Result<Option<Fence>, PgError> {
    if client.is_none() {
        let mut c = url.connect()?;
        migrate(&mut Pg {
            client: &mut c,
            stmts: &mut StmtCache::new(),
        })
        .map_err(|e| db_err(url, &e))?;
        *client = Some(c);
    }
    let Some(c) = client.as_mut() else {
        return Ok(None);
    };
    if try_lock(c, source).map_err(|e| query_err(url, &e))? {
        return claim(url, c, source).map(Some);
    }
    let Some(pid) = lapsed_holder(c, source).map_err(|e| query_err(url, &e))? else {
        return Ok(None);
    };
    let ended = c
        .query(
            "SELECT pg_terminate_backend(pid) FROM pg_locks
             WHERE locktype = 'advisory' AND granted AND pid = $1",
            &[&pid],
        )
        .map_err(|e| PgError::Query {
            store: url.to_string(),
            message: format!(
                "the leading recorder's lease lapsed, and its session (pid {pid}) could not be ended: {}; the recorders' role needs to be the same role as the leader's, or a member of pg_signal_backend",
                error_text(&e)
            ),
        })?;
    tracing::warn!(store = %url, pid, ended = ended.len(), "the leader's lease lapsed ({} s without renewal): ended its session", LEASE.as_secs());
    // The server releases the lock as the ended session goes: try it for a few seconds.
    let deadline = Instant::now() + LEAD_CHECK * 3;
    while Instant::now() < deadline {
        if try_lock(c, source).map_err(|e| query_err(url, &e))? {
            return claim(url, c, source).map(Some);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(None)
}

fn try_lock(c: &mut postgres::Client, source: &str) -> Result<bool, postgres::Error> {
    c.query_one(
        "SELECT pg_try_advisory_lock(hashtext($1), hashtext($2))",
        &[&NAMESPACE, &source],
    )?
    .try_get::<_, bool>(0)
}

/// The lock session's pid of the source's leader when its heartbeat is older than [`LEASE`].
fn lapsed_holder(c: &mut postgres::Client, source: &str) -> Result<Option<i32>, postgres::Error> {
    let row = c.query_opt(
        "SELECT l.backend_pid FROM record_lease l JOIN record_heartbeat h USING (source)
         WHERE l.source = $1 AND clock_timestamp() - h.renewed_at > make_interval(secs => $2)",
        &[&source, &LEASE.as_secs_f64()],
    )?;
    row.map(|r| r.try_get::<_, i32>(0)).transpose()
}

/// Claims the lease of `source` with the next epoch, on the lock's session (which holds the
/// lock). Waits for a write of the previous leader in flight (it holds the lease row), at
/// most 15 s.
fn claim(url: &StoreUrl, c: &mut postgres::Client, source: &str) -> Result<Fence, PgError> {
    let mut tx = c.transaction().map_err(|e| query_err(url, &e))?;
    tx.batch_execute("SET LOCAL lock_timeout = '15s'")
        .map_err(|e| query_err(url, &e))?;
    let epoch: i64 = tx
        .query_one(
            "INSERT INTO record_lease (source, epoch, backend_pid, taken_at)
             VALUES ($1, 1, pg_backend_pid(), clock_timestamp())
             ON CONFLICT (source) DO UPDATE SET epoch = record_lease.epoch + 1,
               backend_pid = excluded.backend_pid, taken_at = excluded.taken_at
             RETURNING epoch",
            &[&source],
        )
        .and_then(|r| r.try_get(0))
        .map_err(|e| query_err(url, &e))?;
    tx.execute(
        "INSERT INTO record_heartbeat (source, renewed_at) VALUES ($1, clock_timestamp())
         ON CONFLICT (source) DO UPDATE SET renewed_at = excluded.renewed_at",
        &[&source],
    )
    .map_err(|e| query_err(url, &e))?;
    tx.commit().map_err(|e| query_err(url, &e))?;
    Ok(Fence {
        source: source.to_string(),
        epoch,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusing_store_is_tried_again_ever_later_up_to_the_bound() {
        let waits: Vec<u64> = (1..=7).map(|n| backoff(n).as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 30, 30]);
        assert_eq!(backoff(u64::MAX), REFUSED_BACKOFF_MAX);
    }
}
