//! Pure functions over a [`QueueSnapshot`]: capacity use and who borrows from whom, the queue in
//! dispatch order with waiting times, and preemption facts. No I/O, no clocks: "now" is the
//! snapshot's `server_time`.
//!
//! Indexing that may panic is denied: slices are read with `get`, iterators and patterns.
#![deny(clippy::indexing_slicing)]
// Functions over 80 lines (clippy.toml) are denied workspace-wide (Cargo.toml); tests may be
// longer.
#![cfg_attr(test, allow(clippy::too_many_lines))]
#![cfg_attr(test, allow(clippy::indexing_slicing))]

mod attempts;
mod attention;
pub mod drill;
mod event_history;
pub mod gate;
mod gpus;
mod looping;
mod preemption;
pub mod preview;
mod queue;
pub mod scorecard;
pub mod shares_lint;
pub mod shares_plan;
mod training_log;
mod usage;
mod why;

pub use attempts::{AttemptRow, job_attempts};
pub use attention::{
    Attention, AttentionKind, AttentionTarget, BadgeKind, ShareBadges, attention,
    misconfiguration_in_words, requeue_hint, share_badges,
};
pub use event_history::{history_source, with_event_attempts};
pub use gpus::{GpuTable, gpus_per_instance};
pub use looping::is_looping;
pub use preemption::{
    LoopRule, OverOwnLimit, PreemptionFacts, RecordedPreemptions, SharePreemptions, over_own_limit,
    preemptions, share_preemptions, with_history,
};
pub use preview::{Candidate, Prediction, Preemptions, Preview};
pub use queue::{QueuedJob, dispatch_order, running_jobs, share_queue};
pub use training_log::{
    LogRow, NumberedAttempt, attempts_of, not_utf8_note, numbered, rows as log_rows, stream_prefix,
    training_job_name,
};
pub use usage::{ShareTotals, ShareUsage, gpu_weight, share_totals, share_usage};
pub use why::{Verdict, Why, why};

use quotatop_model::{Millis, QueueSnapshot};

/// The instant analysis measures against: the service's clock when known, else the local time
/// the queue was refreshed.
pub fn now_of(q: &QueueSnapshot) -> Option<Millis> {
    q.server_time.or(q.refreshed_at)
}

/// Small queues and jobs for tests, here and in the crates above (feature `fixture`).
#[cfg(any(test, feature = "fixture"))]
pub mod fixture;
