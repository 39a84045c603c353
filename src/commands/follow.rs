//! `tui --store URL`: the console's snapshots come from the shared store a `record --store`
//! writes (LISTEN/NOTIFY, `quotatop_store::journal::follow`), never from polling AWS. Changes
//! still go to AWS with the operator's own credentials.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use tokio::sync::mpsc;

use quotatop_model::Snapshot;
use quotatop_store::journal::{FollowState, follow};
use quotatop_store::pg::StoreUrl;
use quotatop_tui::effects::JournalStateFn;

use super::console::Refresh;

/// Snapshots queued for the console; the follower waits (and then reads the newest) when the
/// console is behind.
const QUEUE: usize = 2;

/// A follower thread feeding a channel of snapshots; stopped when dropped.
pub struct Following {
    pub snapshots: mpsc::Receiver<Snapshot>,
    state: Arc<FollowState>,
}

/// Starts following the store at `url` on a thread of its own.
pub fn spawn(url: StoreUrl) -> anyhow::Result<Following> {
    let (tx, rx) = mpsc::channel(QUEUE);
    let state = FollowState::new();
    let st = state.clone();
    std::thread::Builder::new()
        .name("store-follow".into())
        .spawn(move || {
            // A plain thread (no runtime): blocking_send waits for room in the channel, and
            // fails once the console is gone, which ends the follower.
            follow(&url, &st, &mut |f| tx.blocking_send(f.snapshot).is_ok());
        })?;
    Ok(Following {
        snapshots: rx,
        state,
    })
}

impl Following {
    /// The console's refresh key: read the store's live snapshot now.
    pub fn refresher(&self) -> Refresh {
        let s = self.state.clone();
        Box::new(move || s.refresh.store(true, Ordering::Relaxed))
    }

    /// Why the store cannot be followed now, for the status bar (`None` while it can).
    pub fn problem_fn(&self) -> JournalStateFn {
        let s = self.state.clone();
        Arc::new(move || s.problem())
    }

    /// The channel of snapshots (the follower keeps running until this is dropped).
    pub fn take_snapshots(&mut self) -> mpsc::Receiver<Snapshot> {
        std::mem::replace(&mut self.snapshots, mpsc::channel(1).1)
    }
}

impl Drop for Following {
    fn drop(&mut self) {
        // The thread sees it within one wait (200 ms) and ends; nothing to join.
        self.state.stop.store(true, Ordering::Relaxed);
    }
}
