//! `quotatop set-priority` command-line definitions (clap) only; the work is in
//! `commands/set_priority.rs`.

use super::{AuditLogArg, AwsArgs};

#[derive(Debug, clap::Args)]
pub struct SetPriorityArgs {
    /// The job(s): id, ARN or name. Several are changed to the same priority with one
    /// justification: every one is checked and previewed first, then one confirmation.
    #[arg(required = true, value_name = "JOB")]
    pub jobs: Vec<String>,
    /// New scheduling priority, 0-9999 (higher runs first).
    #[arg(long, allow_hyphen_values = true)]
    pub priority: String,
    /// Why (required; kept in the audit log).
    #[arg(long)]
    pub reason: String,
    /// Change-record id; required for large changes and for the protected band.
    #[arg(long)]
    pub change_record: Option<String>,
    /// Show the validation and the preview, change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Do not ask for confirmation (required when not on a terminal).
    #[arg(long)]
    pub yes: bool,
    /// Also tag the job with a short form of the change, so other operators see it in AWS.
    #[arg(long)]
    pub tag_justification: bool,
    /// Refuse every change (also `QUOTATOP_READ_ONLY=1`/`true`/`yes`/`on`, or `read_only = true`
    /// in the config file).
    #[arg(long)]
    pub read_only: bool,
    /// Config file whose `[priority]` policy and `read_only` apply (default: config.toml in the
    /// user's config directory, or QUOTATOP_CONFIG).
    #[arg(long, value_name = "FILE")]
    pub config: Option<std::path::PathBuf>,
    /// Queue(s) to look for the job in (default: every quota-managed queue).
    #[arg(long = "queue", value_name = "NAME|ARN")]
    pub queues: Vec<String>,
    #[command(flatten)]
    pub aws: AwsArgs,
    #[command(flatten)]
    pub log: AuditLogArg,
}
