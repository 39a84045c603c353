//! `quotatop terminate` command-line definitions (clap) only; the work is in
//! `commands/terminate.rs`.

use super::{AuditLogArg, AwsArgs};

#[derive(Debug, clap::Args)]
pub struct TerminateArgs {
    /// The job(s): id, ARN or name (a name must be unique among unfinished jobs).
    #[arg(required = true, value_name = "JOB")]
    pub jobs: Vec<String>,
    /// Why (required; kept in the audit log, and in AWS's record of the job as
    /// `quotatop: user@host: REASON`).
    #[arg(long)]
    pub reason: String,
    /// Change-record id, where the policy asks for one.
    #[arg(long)]
    pub change_record: Option<String>,
    /// Show the validation and the preview, change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Do not ask for confirmation (required when not on a terminal).
    #[arg(long)]
    pub yes: bool,
    /// Refuse every change (also `QUOTATOP_READ_ONLY=1`/`true`/`yes`/`on`, or `read_only = true`
    /// in the config file).
    #[arg(long)]
    pub read_only: bool,
    /// Config file whose `[priority]` policy and `read_only` apply (default: config.toml in the
    /// user's config directory, or QUOTATOP_CONFIG).
    #[arg(long, value_name = "FILE")]
    pub config: Option<std::path::PathBuf>,
    /// Queue(s) to look for the jobs in (default: every quota-managed queue).
    #[arg(long = "queue", value_name = "NAME|ARN")]
    pub queues: Vec<String>,
    #[command(flatten)]
    pub aws: AwsArgs,
    #[command(flatten)]
    pub log: AuditLogArg,
}
