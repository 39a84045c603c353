//! Domain types shared by every layer: queues, quota shares, service jobs.
//!
//! Nothing here knows about the AWS SDK; `batch/` converts SDK types into these and the engine
//! produces them directly.
// Functions over 80 lines (clippy.toml) are denied workspace-wide (Cargo.toml); tests may be
// longer.
#![cfg_attr(test, allow(clippy::too_many_lines))]

mod api_call;
mod attempt;
mod clock;
mod duration;
mod error;
mod event;
mod files;
mod job;
mod job_extra;
mod share;
mod snapshot;
mod sources;
mod text;

pub use api_call::{ApiCall, JUDGED_CALLS};
pub use attempt::{AttemptStop, attempt_start, attempt_stop, held_from, says_preempted};
pub use clock::{format_utc, wall_clock_ms};
pub use duration::{
    DurationError, MAX_INPUT_MS, SecondsError, float_seconds_to_millis, format_duration,
    format_duration_opt, parse_duration, parse_since, seconds_to_millis, whole_seconds_to_millis,
};
pub use error::error_chain;
pub use event::BatchEvent;
pub use files::{MAX_SMALL_FILE, MAX_TRACE_FILE, check_regular_input, read_small_text};
pub use job::{
    Attempt, CHECKPOINT_TAG, CLASS_TAG, JobStatus, MAX_PRIORITY, Misconfigured, PreemptedAttempt,
    PreemptionSummary, RESTORE_PATTERN, SIGNAL_PATTERN, ServiceJob, checkpoint_from_tags,
    checkpoint_uri_of_payload, class_from_tags, misconfiguration, retries_left, stream_prefix,
    training_job_name,
};
pub use job_extra::{CapacityUsed, ExitRule, JobExtras, RetryStrategy, is_instance_type};
pub use share::{
    CapacityLimit, InSharePreemption, MAX_CAPACITY_LIMITS, MAX_SHARES_PER_QUEUE, QuotaShare,
    ServiceEnvironment, ShareSpecError, ShareState, SharingConfig, SharingStrategy,
    UNLIMITED_BORROW, is_training_instance_type,
};
pub use snapshot::{
    AttemptMark, CheckpointListingSeen, CheckpointObjectSeen, FrontEntry, HealthState,
    ListingProgress, PollHealth, QueueSnapshot, Snapshot, Source, TrackedJob, TrainingEvidence,
};
pub use sources::{Fleet, SourceStatus, SourceVerdict, queue_key, split_queue_key};
pub use text::{
    clean, clean_text, csv_field, display_width, escape_c1_in_json, escape_controls,
    is_unsafe_char, pad_right, without_userinfo,
};

/// Milliseconds since the Unix epoch: the unit AWS uses on the wire and the engine's clock.
pub type Millis = i64;

/// A job queue that divides a service environment's capacity into quota shares.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Queue {
    pub name: String,
    pub arn: String,
    pub environment: ServiceEnvironment,
    pub shares: Vec<QuotaShare>,
}
