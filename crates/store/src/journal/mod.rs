//! History: what the console observed, kept in SQLite (rusqlite, bundled) in the user's data
//! directory, or in a PostgreSQL store a team shares (`[store] url`), so the scorecard, the
//! Preemptions screen and time travel can look back further than the API's window.
//!
//! Both stores run the same statements through `crate::db` (SQL both engines accept); each
//! has its migrations (`schema.rs`: SQLite's `user_version`, PostgreSQL's `quotatop_schema`).
//!
//! - [`Journal`] (`store.rs`): open (`store/open.rs`: file mode 0600, WAL, versioned
//!   migrations in `schema.rs`), [`Journal::record`] a [`quotatop_model::Snapshot`]
//!   (`store/record.rs`: job facts, transitions derived by difference in `diff.rs`, usage
//!   samples; `store/blob.rs`: a compressed snapshot at an interval), retention.
//! - A PostgreSQL store also keeps the newest snapshot in `live_snapshot`, published apart
//!   from the history (`live.rs`) and announced with `NOTIFY` on `LIVE_CHANNEL`; [`follow`]
//!   (`follow.rs`) is the console's side of it.
//! - [`JournalHandle`] (`writer.rs`): the writer thread the console and `record` feed without
//!   blocking; an unusable database makes an *unavailable* handle instead of an error.
//! - Reading (`read.rs`): queues, jobs, transitions, snapshot times, the snapshot at a time,
//!   usage series, observed priority changes; [`scorecard_input`] (`history.rs`) builds the
//!   scorecard's input from the observed transitions, over a [`history_window`] that never starts
//!   before the queue's first observation.

mod api_calls;
pub mod copy;
mod diff;
mod drills;
mod error;
mod events;
mod follow;
mod history;
mod live;
mod paths;
mod read;
mod schema;
mod store;
mod training;
mod writer;

pub use api_calls::KeptCall;
pub use diff::{Transition, TransitionKind, derived, transitions};
pub use error::JournalError;
pub use events::EventAttempts;
pub use follow::{FollowState, Followed, follow};
pub use history::{HistoryWindow, history_window, job_history, scorecard_input};
pub use paths::{default_journal_path, state_dir};
pub use read::{JobRecord, QueueRecord, UsageSample};
pub use schema::{PG_VERSION as PG_SCHEMA_VERSION, VERSION as SCHEMA_VERSION};
pub(crate) use schema::{migrate_pg_component, version_pg};
pub use store::{Journal, JournalConfig, PruneStats, RecordStats};
pub use training::{CheckpointRow, JobTraining, MarkRow};
pub use writer::{JournalHandle, JournalStatus};

#[cfg(any(test, feature = "suite"))]
pub mod suite;
#[cfg(test)]
mod tests;
