//! `quotatop journal` command-line definitions (clap) only; the work is in `commands/journal.rs`.

use clap::Subcommand;

use super::JournalWindowArgs;

#[derive(Debug, Subcommand)]
pub enum JournalCommand {
    /// Write a queue's observed jobs as quotatop's trace CSV (stdout), for `replay --trace`:
    /// the jobs submitted in the window that succeeded in it, their work being their productive
    /// running time; the jobs left out are counted on stderr, by reason.
    ExportTrace(ExportTraceArgs),
    /// Copy a journal (the SQLite file) into a team's PostgreSQL store, in chunks, resumable
    /// (run it again after an interruption: it goes on where it stopped), then check every
    /// row arrived unchanged; exits non-zero when one did not.
    Migrate(MigrateArgs),
}

#[derive(Debug, clap::Args)]
pub struct MigrateArgs {
    /// The store to copy into: postgresql://USER@HOST:PORT/DB (password from PGPASSWORD or
    /// PGPASSFILE). Its role must be allowed to create tables (the journal's, on first use).
    #[arg(long, value_name = "URL")]
    pub to: String,
    /// The journal to copy (default: journal.sqlite3 in the user's data directory).
    #[arg(long, value_name = "PATH")]
    pub journal: Option<std::path::PathBuf>,
    /// Rows per transaction.
    #[arg(long, value_name = "N", default_value_t = 2000, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub chunk: u32,
    /// Copy this audit log file too, line for line (its chain verified before and after:
    /// the store's head must be the file's).
    #[arg(long, value_name = "PATH")]
    pub audit_log: Option<std::path::PathBuf>,
    /// The store's audit log to copy it into.
    #[arg(long, value_name = "NAME", default_value = quotatop_store::audit::DEFAULT_STORE_LOG)]
    pub store_log: String,
}

#[derive(Debug, clap::Args)]
pub struct ExportTraceArgs {
    #[command(flatten)]
    pub window: JournalWindowArgs,
    /// Journal database (default: journal.sqlite3 in the user's data directory).
    #[arg(long, value_name = "PATH")]
    pub journal: Option<std::path::PathBuf>,
    /// quotatop's config file, for `[scorecard.checkpoint_minutes]` (a share's checkpoint
    /// interval) and `[gpus]` (default: the user's config file, when it exists).
    #[arg(long, value_name = "PATH")]
    pub config: Option<std::path::PathBuf>,
}
