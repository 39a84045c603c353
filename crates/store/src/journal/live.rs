//! The live snapshot of a PostgreSQL store: the newest snapshot a recorder has, published for
//! the consoles that follow the store (`follow.rs`), apart from the history.
//!
//! The history writer (`writer.rs`) keeps every snapshot's rows and may fall behind at 10,000
//! jobs (a statement per job); the live row must not wait for it. So a thread of its own
//! publishes the newest snapshot only: each one given replaces the one waiting (latest wins),
//! and is written in a small transaction of its own ([`super::store::write_live`]: one row and
//! a `NOTIFY`). A failed write is logged and tried again on a new connection after a
//! back-off (1 s doubling to 30 s), with the newest snapshot by then.

use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use quotatop_model::Snapshot;

use super::JournalError;
use crate::Fence;
use crate::db::{Conn, PgConn};
use crate::pg::{Pool, StoreUrl};

const RETRY_FIRST: Duration = Duration::from_secs(1);
const RETRY_MAX: Duration = Duration::from_secs(30);

#[derive(Default)]
struct Slot {
    next: Option<Snapshot>,
    closed: bool,
}

type Shared = Arc<(Mutex<Slot>, Condvar)>;

/// The publisher thread of a store's live snapshot.
pub(super) struct LivePublisher {
    shared: Shared,
    thread: Option<JoinHandle<()>>,
}

impl LivePublisher {
    /// Starts publishing to `url`; `None` when the thread cannot be started (then there is no
    /// live row, and consoles read the history's newest snapshot instead).
    /// With `fence`, each write checks it in its transaction (a recorder that no longer
    /// leads publishes nothing).
    pub(super) fn start(url: StoreUrl, fence: Option<Fence>) -> Option<Self> {
        let shared: Shared = Arc::default();
        let sh = shared.clone();
        let thread = std::thread::Builder::new()
            .name("journal-live".into())
            .spawn(move || run(&url, fence.as_ref(), &sh))
            .ok()?;
        Some(Self {
            shared,
            thread: Some(thread),
        })
    }

    /// Replaces the snapshot waiting to be published.
    pub(super) fn publish(&self, snapshot: Snapshot) {
        let (slot, cv) = &*self.shared;
        slot.lock().unwrap_or_else(|p| p.into_inner()).next = Some(snapshot);
        cv.notify_one();
    }

    /// Publishes what is waiting and stops the thread.
    pub(super) fn stop(&mut self) {
        let (slot, cv) = &*self.shared;
        slot.lock().unwrap_or_else(|p| p.into_inner()).closed = true;
        cv.notify_one();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for LivePublisher {
    fn drop(&mut self) {
        self.stop();
    }
}

fn run(url: &StoreUrl, fence: Option<&Fence>, shared: &Shared) {
    let (slot, cv) = &**shared;
    let mut conn: Option<Conn> = None;
    let mut backoff = RETRY_FIRST;
    loop {
        let next = {
            let mut s = slot.lock().unwrap_or_else(|p| p.into_inner());
            while s.next.is_none() && !s.closed {
                s = cv.wait(s).unwrap_or_else(|p| p.into_inner());
            }
            match s.next.take() {
                Some(n) => n,
                None => return,
            }
        };
        match publish(url, fence, &mut conn, &next) {
            Ok(()) => backoff = RETRY_FIRST,
            Err(e) if e.is_fatal() => {
                tracing::warn!(store = %url, error = %e, "live snapshot not published; publishing nothing more");
                return;
            }
            Err(e) => {
                tracing::warn!(store = %url, error = %e, retry_in = ?backoff, "live snapshot not published");
                conn = None;
                // Tried again after the back-off, unless a newer one came meanwhile.
                let mut s = slot.lock().unwrap_or_else(|p| p.into_inner());
                if s.closed {
                    return;
                }
                s.next.get_or_insert(next);
                let _ = cv.wait_timeout(s, backoff);
                backoff = (backoff * 2).min(RETRY_MAX);
            }
        }
    }
}

/// Writes `snap` as the live row, connecting first when `conn` is `None`.
fn publish(
    url: &StoreUrl,
    fence: Option<&Fence>,
    conn: &mut Option<Conn>,
    snap: &Snapshot,
) -> Result<(), JournalError> {
    if conn.is_none() {
        let (client, stmts) = Pool::get(url).map_err(|e| JournalError::Store(e.to_string()))?;
        *conn = Some(Conn::Postgres(Box::new(PgConn {
            client: Some(client),
            stmts,
            url: url.clone(),
        })));
    }
    match conn.as_mut() {
        Some(c) => c
            .transaction(|tx| {
                super::store::write_live(tx, snap)?;
                // Last: rolled back (its NOTIFY with it) when another recorder leads now.
                match fence {
                    Some(f) => f.check(tx),
                    None => Ok(()),
                }
            })
            .map_err(|e| JournalError::from_db(&url.to_string(), e)),
        None => Ok(()),
    }
}
