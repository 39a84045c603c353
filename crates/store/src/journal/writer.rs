//! Writes off the UI path: a thread owns the journal and is fed snapshots through a bounded
//! channel; everything queued when it wakes is written in one transaction.
//!
//! [`JournalHandle::start`] never fails: when the journal cannot be opened or written (locked,
//! no directory, read-only) the handle is *unavailable*, its snapshots are dropped and counted,
//! and [`JournalHandle::status`] says why, so the console keeps running without history. The
//! writer then tries again, with back-off (1 s doubling to 1 min), when the next snapshots
//! arrive, and writes again once the journal is usable. A journal that can never work
//! (corrupt, or a newer schema) is given up at once.

use std::path::Path;
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use quotatop_model::{Snapshot, error_chain};

use super::live::LivePublisher;
use super::{Journal, JournalConfig, JournalError};
use crate::{Fence, StoreLocation};

/// Snapshots that may wait for the writer; more are dropped (and counted).
const QUEUE_DEPTH: usize = 64;
/// The first wait before opening the journal again after a failure; doubled after each
/// failed try up to [`RETRY_MAX`].
const RETRY_FIRST: Duration = Duration::from_secs(1);
const RETRY_MAX: Duration = Duration::from_secs(60);

/// How the journal is doing (for the status bar and `record`'s log).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JournalStatus {
    /// `None` while writing works; otherwise why there is no (more) history.
    pub unavailable: Option<String>,
    /// The last write error, even if later writes succeeded.
    pub last_error: Option<String>,
    pub snapshots_written: u64,
    pub transitions_written: u64,
    /// Snapshots not journaled: queue full or journal unavailable.
    pub dropped: u64,
    /// Times the writer opened the journal again after it had failed.
    pub reopened: u64,
    /// Tries to reach a shared store that failed (refused, unreachable): kept by `record`
    /// while it cannot take part in its store's lead; the writer leaves it 0.
    pub store_errors: u64,
}

enum Msg {
    Snapshot(Box<Snapshot>),
    Flush(mpsc::Sender<()>),
}

/// The console's side of the journal writer.
pub struct JournalHandle {
    tx: Option<SyncSender<Msg>>,
    status: Arc<Mutex<JournalStatus>>,
    thread: Option<JoinHandle<()>>,
    /// A PostgreSQL store's live snapshot, published apart from the history (`live.rs`).
    live: Option<LivePublisher>,
}

fn lock(s: &Mutex<JournalStatus>) -> std::sync::MutexGuard<'_, JournalStatus> {
    // A panic while holding this lock cannot leave the counters inconsistent in a way that
    // matters; keep using them.
    s.lock().unwrap_or_else(|p| p.into_inner())
}

impl JournalHandle {
    /// Opens the journal at `path` and starts its writer thread; see the module doc.
    pub fn start(path: &Path, config: JournalConfig) -> Self {
        Self::start_at(&StoreLocation::File(path.to_path_buf()), config)
    }

    /// [`JournalHandle::start`] for a file or a PostgreSQL store.
    pub fn start_at(location: &StoreLocation, config: JournalConfig) -> Self {
        Self::start_fenced(location, config, None)
    }

    /// [`JournalHandle::start_at`] for a leading recorder: every write (history and live
    /// snapshot) checks `fence` in its transaction, and once another recorder leads, nothing
    /// more is written (the handle says why in its status).
    pub fn start_fenced(
        location: &StoreLocation,
        config: JournalConfig,
        fence: Option<Fence>,
    ) -> Self {
        let mut handle = Self::start_history(location, config, fence.clone());
        if let StoreLocation::Postgres(url) = location {
            handle.live = LivePublisher::start(url.clone(), fence);
        }
        handle
    }

    fn start_history(
        location: &StoreLocation,
        config: JournalConfig,
        fence: Option<Fence>,
    ) -> Self {
        match Journal::open_at(location, config) {
            Ok(j) => Self::spawn_on(j, fence),
            Err(e) if e.is_fatal() => Self::unavailable(&e),
            Err(e) => {
                tracing::warn!(error = %e, "journal unavailable; will try again");
                Self::spawn(
                    Writer {
                        journal: None,
                        location: location.clone(),
                        config,
                        retry_at: Instant::now() + RETRY_FIRST,
                        backoff: RETRY_FIRST,
                        dead: false,
                        written_here: 0,
                        fence,
                    },
                    JournalStatus {
                        unavailable: Some(error_chain(&e)),
                        last_error: Some(error_chain(&e)),
                        ..Default::default()
                    },
                )
            }
        }
    }

    /// A handle that records nothing, with the reason.
    pub fn unavailable(reason: &JournalError) -> Self {
        Self {
            tx: None,
            status: Arc::new(Mutex::new(JournalStatus {
                unavailable: Some(error_chain(reason)),
                last_error: Some(error_chain(reason)),
                ..Default::default()
            })),
            thread: None,
            live: None,
        }
    }

    fn spawn_on(journal: Journal, fence: Option<Fence>) -> Self {
        let (location, config) = (journal.location().clone(), *journal.config());
        Self::spawn(
            Writer {
                journal: Some(journal),
                location,
                config,
                retry_at: Instant::now(),
                backoff: RETRY_FIRST,
                dead: false,
                written_here: 0,
                fence,
            },
            JournalStatus::default(),
        )
    }

    fn spawn(writer: Writer, initial: JournalStatus) -> Self {
        let (tx, rx) = mpsc::sync_channel(QUEUE_DEPTH);
        let status = Arc::new(Mutex::new(initial));
        let st = status.clone();
        let thread = std::thread::Builder::new()
            .name("journal-writer".into())
            .spawn(move || run(writer, rx, st));
        match thread {
            Ok(t) => Self {
                tx: Some(tx),
                status,
                thread: Some(t),
                live: None,
            },
            Err(e) => Self::unavailable(&JournalError::Thread(e.to_string())),
        }
    }

    /// Queues a snapshot for writing; never blocks. Returns whether it was queued. A
    /// PostgreSQL store's live snapshot is replaced by it too (unless it came from history).
    pub fn record(&self, snapshot: Snapshot) -> bool {
        if let Some(live) = &self.live
            && !snapshot.health.from_history
        {
            live.publish(snapshot.clone());
        }
        let queued = match &self.tx {
            Some(tx) => match tx.try_send(Msg::Snapshot(Box::new(snapshot))) {
                Ok(()) => true,
                Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => false,
            },
            None => false,
        };
        if !queued {
            lock(&self.status).dropped += 1;
        }
        queued
    }

    /// Waits until everything queued so far is written (tests, shutdown).
    pub fn flush(&self) {
        if let Some(tx) = &self.tx {
            let (done_tx, done_rx) = mpsc::channel();
            if tx.send(Msg::Flush(done_tx)).is_ok() {
                let _ = done_rx.recv();
            }
        }
    }

    pub fn status(&self) -> JournalStatus {
        lock(&self.status).clone()
    }

    /// Writes what is queued and stops the writer.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        if let Some(mut live) = self.live.take() {
            live.stop();
        }
        self.tx = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for JournalHandle {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The writer thread's journal: open, or waiting to be opened again.
struct Writer {
    journal: Option<Journal>,
    location: StoreLocation,
    config: JournalConfig,
    /// When to try opening again.
    retry_at: Instant,
    backoff: Duration,
    /// Given up: the journal can never work (corrupt, newer schema).
    dead: bool,
    /// Snapshots written to the file now open (lost, and taken back from the count, if that
    /// file turns out to have been deleted or replaced).
    written_here: u64,
    /// A leading recorder's fence, checked in every write's transaction.
    fence: Option<Fence>,
}

impl Writer {
    /// The open journal, opening it again if it failed and its back-off has passed.
    fn journal(&mut self, status: &Mutex<JournalStatus>) -> Option<&mut Journal> {
        if self.journal.is_none() && !self.dead && Instant::now() >= self.retry_at {
            match Journal::open_at(&self.location, self.config) {
                Ok(j) => {
                    tracing::info!(journal = %self.location, "journal open again");
                    self.journal = Some(j);
                    self.written_here = 0;
                    self.backoff = RETRY_FIRST;
                    let mut st = lock(status);
                    st.unavailable = None;
                    st.reopened += 1;
                }
                Err(e) => self.failed(&e, status),
            }
        }
        self.journal.as_mut()
    }

    /// Drops the journal after `e`; tries again after the back-off unless it cannot help.
    fn failed(&mut self, e: &JournalError, status: &Mutex<JournalStatus>) {
        self.journal = None;
        let mut st = lock(status);
        if matches!(e, JournalError::Replaced(_)) {
            // What went into the unlinked file is gone: count it as not journaled.
            st.snapshots_written = st.snapshots_written.saturating_sub(self.written_here);
            st.dropped += self.written_here;
            self.written_here = 0;
        }
        st.last_error = Some(error_chain(e));
        st.unavailable = Some(error_chain(e));
        if e.is_fatal() {
            self.dead = true;
            tracing::error!(error = %e, "journal unusable; recording nothing more");
        } else {
            tracing::warn!(error = %e, retry_in = ?self.backoff, "journal write failed; will try again");
            self.retry_at = Instant::now() + self.backoff;
            self.backoff = (self.backoff * 2).min(RETRY_MAX);
        }
    }
}

fn run(mut writer: Writer, rx: Receiver<Msg>, status: Arc<Mutex<JournalStatus>>) {
    while let Ok(first) = rx.recv() {
        let mut batch = Vec::new();
        let mut waiters = Vec::new();
        let mut next = Some(first);
        while let Some(msg) = next {
            match msg {
                Msg::Snapshot(s) => batch.push(*s),
                Msg::Flush(w) => waiters.push(w),
            }
            next = rx.try_recv().ok();
        }
        if !batch.is_empty() {
            let fence = writer.fence.clone();
            let result = writer.journal(&status).map(|j| {
                if j.still_at_path() {
                    j.record_all_fenced(&batch, fence.as_ref())
                } else {
                    Err(JournalError::Replaced(j.location().to_string().into()))
                }
            });
            match result {
                None => lock(&status).dropped += batch.len() as u64,
                Some(Ok(stats)) => {
                    writer.written_here += batch.len() as u64;
                    let mut st = lock(&status);
                    st.snapshots_written += batch.len() as u64;
                    st.transitions_written += stats.transitions as u64;
                    st.unavailable = None;
                }
                Some(Err(e)) => {
                    lock(&status).dropped += batch.len() as u64;
                    writer.failed(&e, &status);
                }
            }
        }
        for w in waiters {
            let _ = w.send(());
        }
    }
}
