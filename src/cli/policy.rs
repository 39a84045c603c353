//! `quotatop policy` command-line definitions (clap) only; the work is in
//! `commands/policy/`.

use clap::Subcommand;

use super::{AuditLogArg, AwsArgs};

#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Check a policy file: every problem at once (overlapping ranges in a share, a protected
    /// class in a lending share, a budget that can never be spent, a class with no share, a
    /// promise that cannot hold at the stated limits); exits non-zero on an error.
    Lint(PolicyLintArgs),
    /// Write a first policy on stdout from today's configuration: one class per live share,
    /// with the config file's [deadlines] and [budgets] as promises and budgets.
    Init(PolicyInitArgs),
    /// Whether what the journal recorded matches the policy: per class, jobs, P95 wait against
    /// its promise, missed deadlines, budget breaches, jobs outside its shares or range, and
    /// priority changes per operator, each "holds" or "breached", naming the jobs. Exits
    /// non-zero when anything is breached.
    Check(PolicyCheckArgs),
    /// The quota shares the policy asks for (sharing and in-share preemption; limits stay),
    /// compared with the live shares through `shares plan`. Changes nothing.
    Plan(PolicyPlanArgs),
    /// `policy plan`, then `shares apply` of the derived shares: confirmed, each call audited
    /// with the policy's hash.
    Apply(PolicyApplyArgs),
}

/// Where the policy is: `--policy`, else `policy.toml` beside the config file.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct PolicyFileArgs {
    /// The policy file (default: policy.toml beside the config file).
    #[arg(long, value_name = "FILE")]
    pub policy: Option<std::path::PathBuf>,
    /// quotatop's config file (default: config.toml in the user's config directory, or
    /// QUOTATOP_CONFIG).
    #[arg(long, value_name = "FILE")]
    pub config: Option<std::path::PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct PolicyLintArgs {
    #[command(flatten)]
    pub file: PolicyFileArgs,
    /// Also check the policy against this queue's live shares (name or ARN).
    #[arg(long, value_name = "NAME|ARN", conflicts_with = "shares")]
    pub queue: Option<String>,
    /// Also check the policy against the shares in this shares file (as `shares export`
    /// writes it).
    #[arg(long, value_name = "FILE")]
    pub shares: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub aws: AwsArgs,
}

#[derive(Debug, clap::Args)]
pub struct PolicyInitArgs {
    /// The job queue whose live shares become the classes (name or ARN).
    #[arg(long, value_name = "NAME|ARN")]
    pub queue: String,
    /// quotatop's config file, for [deadlines] and [budgets] (default: config.toml in the
    /// user's config directory, or QUOTATOP_CONFIG).
    #[arg(long, value_name = "FILE")]
    pub config: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub aws: AwsArgs,
}

#[derive(Debug, clap::Args)]
pub struct PolicyCheckArgs {
    #[command(flatten)]
    pub file: PolicyFileArgs,
    /// The job queue (name as the journal recorded it).
    #[arg(long)]
    pub queue: String,
    /// How far back from the newest observation: e.g. 12h, 7d, 2w (default: the configured
    /// window, `[scorecard] window_hours`, 24h unless set: what the console and /metrics judge).
    #[arg(long)]
    pub since: Option<String>,
    /// Journal database (default: the user's data directory).
    #[arg(long)]
    pub journal: Option<std::path::PathBuf>,
    /// Audit log naming the operator and change record of each priority change (default:
    /// audit.jsonl in the user's data directory, when it exists).
    #[arg(long, value_name = "PATH")]
    pub audit_log: Option<std::path::PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct PolicyPlanArgs {
    #[command(flatten)]
    pub file: PolicyFileArgs,
    /// The job queue (name or ARN).
    #[arg(long, value_name = "NAME|ARN")]
    pub queue: String,
    #[command(flatten)]
    pub aws: AwsArgs,
}

#[derive(Debug, clap::Args)]
pub struct PolicyApplyArgs {
    #[command(flatten)]
    pub plan: PolicyPlanArgs,
    /// Why (required; kept in the audit log with every call).
    #[arg(long)]
    pub reason: String,
    /// Change-record id; required by the `[shares]` policy for a limit change.
    #[arg(long)]
    pub change_record: Option<String>,
    /// Do not ask for confirmation (required when not on a terminal).
    #[arg(long)]
    pub yes: bool,
    /// Refuse every change (also `QUOTATOP_READ_ONLY`, or `read_only = true` in the config).
    #[arg(long)]
    pub read_only: bool,
    #[command(flatten)]
    pub log: AuditLogArg,
}
