//! `quotatop audit` command-line definitions (clap) only; the work is in `commands/audit/`.

use clap::Subcommand;

use super::{AuditLogArg, AwsArgs};

#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// List priority changes, newest last; intents without an outcome are shown as such.
    List(AuditListArgs),
    /// Check the hash chain byte for byte and print the record count and head hash; exits
    /// non-zero at the first edited, removed, reordered or rewritten record, on a torn last
    /// line, and when the head does not match --expect-head/--expect-count.
    Verify(AuditVerifyArgs),
    /// Export every change (intent and outcome merged) as CSV or JSON.
    Export(AuditExportArgs),
    /// Print the verified head of the log (record count, hash, time, path) to paste into a
    /// ticket: only such an outside copy shows a log later cut or rewritten.
    Anchor(AuditLogArg),
    /// Move a torn last line (an interrupted write) into `audit.jsonl.torn-<time>` next to the
    /// log and record the repair, so appends work again.
    Repair(AuditRepairArgs),
    /// Decide the changes whose outcome was never written (a process killed between intent and
    /// outcome): read each job's priority now and append what it shows (landed, did not land,
    /// undecidable, job gone). Writes only the local log, so it works in read-only mode too.
    Reconcile(AuditReconcileArgs),
}

#[derive(Debug, clap::Args)]
pub struct AuditReconcileArgs {
    #[command(flatten)]
    pub log: AuditLogArg,
    #[command(flatten)]
    pub aws: AwsArgs,
}

#[derive(Debug, clap::Args)]
pub struct AuditVerifyArgs {
    #[command(flatten)]
    pub log: AuditLogArg,
    /// Fail unless a record of the log has this hash (a head printed by `audit anchor` or
    /// `audit verify` earlier): a cut or rewritten log does not have it.
    #[arg(long, value_name = "HASH")]
    pub expect_head: Option<String>,
    /// Fail unless the log has at least this many records (with --expect-head: record N must
    /// have that hash).
    #[arg(long, value_name = "N")]
    pub expect_count: Option<usize>,
}

#[derive(Debug, clap::Args)]
pub struct AuditRepairArgs {
    #[command(flatten)]
    pub log: AuditLogArg,
    /// Why, kept in the repair record.
    #[arg(
        long,
        default_value = "torn last line moved aside by quotatop audit repair"
    )]
    pub reason: String,
}

#[derive(Debug, clap::Args)]
pub struct AuditListArgs {
    #[command(flatten)]
    pub log: AuditLogArg,
    /// Only changes of this job (id, name or ARN).
    #[arg(long)]
    pub job: Option<String>,
    /// Only changes since: a duration back from now (30m, 24h, 7d) or an RFC 3339 time.
    #[arg(long)]
    pub since: Option<String>,
    /// Count changes per operator and share instead of listing them.
    #[arg(long)]
    pub by_operator: bool,
    /// The journal whose CloudTrail calls (kept by `record --events-queue`) and snapshots show
    /// the changes made outside quotatop (default: the default journal, when it exists).
    #[arg(long, value_name = "FILE")]
    pub journal: Option<std::path::PathBuf>,
    /// Also read Batch's calls from CloudTrail's event history (LookupEvents, the last 90
    /// days, no trail needed) over --since (default 24h), for when no trail delivers them.
    #[arg(long)]
    pub lookup_events: bool,
    #[command(flatten)]
    pub aws: AwsArgs,
}

#[derive(Debug, clap::Args)]
pub struct AuditExportArgs {
    #[command(flatten)]
    pub log: AuditLogArg,
    #[arg(long, value_enum, default_value = "json")]
    pub format: ExportFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    Csv,
    Json,
}
