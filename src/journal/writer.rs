//! Writes off the UI path: a thread owns the journal and is fed snapshots through a bounded
//! channel; everything queued when it wakes is written in one transaction.
//!
//! [`JournalHandle::start`] never fails: when the journal cannot be opened (corrupt, locked,
//! no directory) the handle is *unavailable*, [`JournalHandle::record`] does nothing and
//! [`JournalHandle::status`] says why, so the console keeps running without history.

use std::path::Path;
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::model::Snapshot;

use super::{Journal, JournalConfig, JournalError};

/// Snapshots that may wait for the writer; more are dropped (and counted).
const QUEUE_DEPTH: usize = 64;

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
}

fn lock(s: &Mutex<JournalStatus>) -> std::sync::MutexGuard<'_, JournalStatus> {
    // A panic while holding this lock cannot leave the counters inconsistent in a way that
    // matters; keep using them.
    s.lock().unwrap_or_else(|p| p.into_inner())
}

impl JournalHandle {
    /// Opens the journal at `path` and starts its writer thread; see the module doc.
    pub fn start(path: &Path, config: JournalConfig) -> Self {
        match Journal::open(path, config) {
            Ok(j) => Self::with_journal(j),
            Err(e) => Self::unavailable(&e),
        }
    }

    /// A handle that records nothing, with the reason.
    pub fn unavailable(reason: &JournalError) -> Self {
        Self {
            tx: None,
            status: Arc::new(Mutex::new(JournalStatus {
                unavailable: Some(reason.to_string()),
                last_error: Some(reason.to_string()),
                ..Default::default()
            })),
            thread: None,
        }
    }

    /// Starts the writer thread on an open journal.
    pub fn with_journal(journal: Journal) -> Self {
        let (tx, rx) = mpsc::sync_channel(QUEUE_DEPTH);
        let status = Arc::new(Mutex::new(JournalStatus::default()));
        let st = status.clone();
        let thread = std::thread::Builder::new()
            .name("journal-writer".into())
            .spawn(move || run(journal, rx, st));
        match thread {
            Ok(t) => Self {
                tx: Some(tx),
                status,
                thread: Some(t),
            },
            Err(e) => Self::unavailable(&JournalError::Sql(format!(
                "cannot start the writer thread: {e}"
            ))),
        }
    }

    /// Queues a snapshot for writing; never blocks. Returns whether it was queued.
    pub fn record(&self, snapshot: Snapshot) -> bool {
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

fn run(mut journal: Journal, rx: Receiver<Msg>, status: Arc<Mutex<JournalStatus>>) {
    let mut dead = false;
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
        if dead {
            lock(&status).dropped += batch.len() as u64;
        } else if !batch.is_empty() {
            let result = journal.record_all(&batch);
            let mut st = lock(&status);
            match result {
                Ok(stats) => {
                    st.snapshots_written += batch.len() as u64;
                    st.transitions_written += stats.transitions as u64;
                    st.unavailable = None;
                }
                Err(e) => {
                    st.dropped += batch.len() as u64;
                    st.last_error = Some(e.to_string());
                    if e.is_fatal() {
                        dead = true;
                        st.unavailable = Some(e.to_string());
                    }
                }
            }
        }
        for w in waiters {
            let _ = w.send(());
        }
    }
}
