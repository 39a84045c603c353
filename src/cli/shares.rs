//! `quotatop shares` command-line definitions (clap) only; the work is in
//! `commands/shares/`.

use clap::Subcommand;

use super::{AuditLogArg, AwsArgs};

#[derive(Debug, Subcommand)]
pub enum SharesCommand {
    /// Write a queue's live quota shares (and its service environment's capacity) as a shares
    /// file on stdout: the TOML shape of replay configurations and emulator scenarios.
    Export(SharesExportArgs),
    /// Compare a shares file with the live shares, field by field (create / update / disable /
    /// delete), and lint it; exits non-zero on a lint error. Changes nothing.
    Plan(SharesPlanArgs),
    /// The plan, a confirmation, then the calls (CreateQuotaShare, UpdateQuotaShare,
    /// DeleteQuotaShare), each written to the audit log before and after; stops at the first
    /// failure and says what was applied and what was not.
    Apply(SharesApplyArgs),
}

#[derive(Debug, clap::Args)]
pub struct SharesExportArgs {
    /// The job queue (name or ARN).
    #[arg(long, value_name = "NAME|ARN")]
    pub queue: String,
    #[command(flatten)]
    pub aws: AwsArgs,
}

#[derive(Debug, clap::Args)]
pub struct SharesPlanArgs {
    /// The job queue (name or ARN).
    #[arg(long, value_name = "NAME|ARN")]
    pub queue: String,
    /// The proposed shares (TOML, as `shares export` writes it).
    #[arg(short = 'f', long = "file", value_name = "FILE")]
    pub file: std::path::PathBuf,
    /// Also replay the journal's last N (e.g. 7d) under the live and the proposed shares and
    /// print the decision summary side by side. The same window is the lint's for RESERVE
    /// shares no job used (default 7d).
    #[arg(long, value_name = "DURATION")]
    pub impact: Option<String>,
    /// Journal database (default: journal.sqlite3 in the user's data directory).
    #[arg(long, value_name = "PATH")]
    pub journal: Option<std::path::PathBuf>,
    /// quotatop's config file: its `[shares]` policy, `read_only`, and the rules and options
    /// `--impact` reads (default: config.toml in the user's config directory, or
    /// QUOTATOP_CONFIG).
    #[arg(long, value_name = "FILE")]
    pub config: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub aws: AwsArgs,
}

#[derive(Debug, clap::Args)]
pub struct SharesApplyArgs {
    #[command(flatten)]
    pub plan: SharesPlanArgs,
    /// Why (required; kept in the audit log with every call).
    #[arg(long)]
    pub reason: String,
    /// Change-record id; required by the `[shares]` policy for any limit change.
    #[arg(long)]
    pub change_record: Option<String>,
    /// The share owner approving a change of its limits, as the policy's `[owners]` name them
    /// (required for a share with owners; recorded in the audit log).
    #[arg(long, value_name = "NAME")]
    pub approved_by: Option<String>,
    /// Do not ask for confirmation (required when not on a terminal).
    #[arg(long)]
    pub yes: bool,
    /// Allow deleting the shares the file no longer has (disable, then delete: their jobs are
    /// terminated).
    #[arg(long)]
    pub allow_delete: bool,
    /// Refuse every change (also `QUOTATOP_READ_ONLY`, or `read_only = true` in the config).
    #[arg(long)]
    pub read_only: bool,
    #[command(flatten)]
    pub log: AuditLogArg,
}
