//! Following a PostgreSQL store: what a console does instead of polling AWS when a recorder
//! writes the store. [`follow`] `LISTEN`s on [`LIVE_CHANNEL`], reads the store's live
//! snapshot at start and after each notification, and hands every newer one to its sink.
//!
//! It runs on a thread of its own (the client blocks) until told to stop or the sink refuses
//! a snapshot. A lost connection is reported through [`FollowState`] and opened again with
//! back-off (1 s doubling to 30 s); the live row is also read every [`RECHECK`] without a
//! notification, so one lost between a read and `LISTEN` is made up for within that time.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use quotatop_model::{Millis, Snapshot};

use super::store::{LIVE_CHANNEL, decode};
use super::{Journal, JournalConfig, JournalError};
use crate::StoreLocation;
use crate::pg::{StoreUrl, error_text};

/// How long one wait for a notification lasts (the stop and refresh flags are looked at in
/// between).
const WAIT: Duration = Duration::from_millis(200);
/// The live row is read at least this often, notification or not.
pub const RECHECK: Duration = Duration::from_secs(5);
const RETRY_FIRST: Duration = Duration::from_secs(1);
const RETRY_MAX: Duration = Duration::from_secs(30);

/// A snapshot read from the store.
#[derive(Debug, Clone)]
pub struct Followed {
    pub snapshot: Snapshot,
    /// The recorder's clock when it wrote the snapshot (`None`: read from the history table of
    /// a store with no live snapshot yet).
    pub written_at: Option<Millis>,
    /// This machine's clock when the row had arrived, before it was decoded.
    pub fetched_at: Millis,
}

/// Flags and state shared between a follower and its owner.
#[derive(Debug, Default)]
pub struct FollowState {
    /// Set to end [`follow`].
    pub stop: AtomicBool,
    /// Set to read the live snapshot now (the console's refresh key).
    pub refresh: AtomicBool,
    /// Why the store cannot be followed now (`None` while it is).
    pub problem: Mutex<Option<String>>,
}

impl FollowState {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    pub fn problem(&self) -> Option<String> {
        self.problem
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn set_problem(&self, p: Option<String>) {
        *self.problem.lock().unwrap_or_else(|p| p.into_inner()) = p;
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// Why a session with the store ended.
enum Ended {
    /// Told to stop, or the sink refused a snapshot.
    Stop,
    /// The connection or a read failed: try again after the back-off.
    Failed(String),
}

/// Follows the store at `url` until `state.stop` is set or `sink` returns false; see the
/// module doc. Blocking: run it on a thread of its own.
pub fn follow(url: &StoreUrl, state: &FollowState, sink: &mut dyn FnMut(Followed) -> bool) {
    let mut last: Option<Millis> = None;
    let mut backoff = RETRY_FIRST;
    loop {
        match session(url, state, &mut last, sink) {
            Ended::Stop => return,
            Ended::Failed(why) => {
                tracing::warn!(store = %url, %why, retry_in = ?backoff, "cannot follow the store");
                state.set_problem(Some(format!(
                    "store {url}: {why}; trying again in {}",
                    quotatop_model::format_duration(backoff.as_millis() as Millis)
                )));
            }
        }
        let until = Instant::now() + backoff;
        while Instant::now() < until {
            if state.stopped() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        backoff = (backoff * 2).min(RETRY_MAX);
    }
}

/// One connection's worth of following.
fn session(
    url: &StoreUrl,
    state: &FollowState,
    last: &mut Option<Millis>,
    sink: &mut dyn FnMut(Followed) -> bool,
) -> Ended {
    // The schema first: an older or newer store is named as such, not as a missing table.
    if let Err(e) = Journal::open_existing_at(
        &StoreLocation::Postgres(url.clone()),
        JournalConfig::default(),
    ) {
        return Ended::Failed(quotatop_model::error_chain(&e));
    }
    let mut client = match url.connect() {
        Ok(c) => c,
        Err(e) => return Ended::Failed(e.to_string()),
    };
    if let Err(e) = client.batch_execute(&format!("LISTEN {LIVE_CHANNEL}")) {
        return Ended::Failed(error_text(&e));
    }
    let mut read_now = true;
    let mut read_at = Instant::now();
    loop {
        if state.stopped() {
            return Ended::Stop;
        }
        if read_now || state.refresh.swap(false, Ordering::Relaxed) || read_at.elapsed() >= RECHECK
        {
            read_at = Instant::now();
            match read_live(&mut client, *last) {
                Ok(Some(f)) => {
                    state.set_problem(None);
                    *last = Some(f.snapshot.taken_at);
                    if !sink(f) {
                        return Ended::Stop;
                    }
                }
                Ok(None) => state.set_problem(None),
                Err(e) => return Ended::Failed(e.to_string()),
            }
        }
        read_now = match wait(&mut client) {
            Ok(n) => n,
            Err(e) => return Ended::Failed(error_text(&e)),
        };
    }
}

/// Waits up to [`WAIT`] for notifications; whether any came (all pending ones are taken: one
/// read answers them all).
fn wait(client: &mut postgres::Client) -> Result<bool, postgres::Error> {
    use postgres::fallible_iterator::FallibleIterator as _;
    let got = {
        let mut n = client.notifications();
        let mut got = n.timeout_iter(WAIT).next()?.is_some();
        while n.iter().next()?.is_some() {
            got = true;
        }
        got
    };
    if client.is_closed() {
        // The server went away while waiting: the next statement would say so less clearly.
        return client.batch_execute("SELECT 1").map(|()| got);
    }
    Ok(got)
}

/// The store's live snapshot if newer than `after`; a store with no live row yet gives its
/// newest stored snapshot once.
fn read_live(
    client: &mut postgres::Client,
    after: Option<Millis>,
) -> Result<Option<Followed>, JournalError> {
    let q = |e: postgres::Error| JournalError::Store(error_text(&e));
    let after = after.unwrap_or(Millis::MIN);
    let row = client
        .query_opt(
            "SELECT taken_at, written_at, data FROM live_snapshot WHERE id = 1 AND taken_at > $1",
            &[&after],
        )
        .map_err(q)?;
    if let Some(r) = row {
        let fetched_at = quotatop_model::wall_clock_ms();
        let data: Vec<u8> = r.try_get(2).map_err(q)?;
        return Ok(Some(Followed {
            snapshot: decode(&data)?,
            written_at: Some(r.try_get(1).map_err(q)?),
            fetched_at,
        }));
    }
    if after != Millis::MIN {
        return Ok(None);
    }
    let row = client
        .query_opt(
            "SELECT data FROM snapshots ORDER BY taken_at DESC LIMIT 1",
            &[],
        )
        .map_err(q)?;
    match row {
        Some(r) => {
            let fetched_at = quotatop_model::wall_clock_ms();
            let data: Vec<u8> = r.try_get(0).map_err(q)?;
            Ok(Some(Followed {
                snapshot: decode(&data)?,
                written_at: None,
                fetched_at,
            }))
        }
        None => Ok(None),
    }
}
