//! The adapters the console runs its effects with: storage (the journal), the audit log and the
//! Batch API, behind the traits the console defines (`quotatop_tui::effects`). The console itself
//! never opens a database, writes the audit log or calls the API.

pub mod changes;
pub mod history;
pub mod job_actions;
pub mod logs;
pub mod policy;
pub mod scorecard;
pub mod share_changes;

pub use changes::ApiRunner;
pub use history::JournalReader;
pub use scorecard::{ScorecardSettings, compute as compute_scorecard, journal_scorecard};
