//! `quotatop events` command-line definitions (clap) only; the work is in
//! `commands/events/`.

use clap::Subcommand;

use super::{AuditLogArg, AwsArgs};

#[derive(Debug, Subcommand)]
pub enum EventsCommand {
    /// Batch's event stream into an SQS queue: the queue, an EventBridge rule on source
    /// aws.batch (job state changes, preemptions, API calls via CloudTrail) targeting it, and
    /// the queue policy letting events.amazonaws.com send. Idempotent: prints the plan (only
    /// what is missing or different), asks, makes the calls, writes an audit record.
    Setup(EventsChangeArgs),
    /// What `events setup` made: the rule and its target, the queue's depth, the newest
    /// waiting event's age, and whether CloudTrail's API-call events can arrive. Changes
    /// nothing; exits non-zero when the stream is not (completely) set up.
    Status(EventsStatusArgs),
    /// Removes what `events setup` made, by its names and markers only: the rule's target
    /// and the rule (when setup made it), and the queue (when its policy is setup's).
    Teardown(EventsChangeArgs),
}

#[derive(Debug, Clone, clap::Args)]
pub struct EventsTarget {
    /// The SQS queue's name (letters, digits, '-' and '_'; at most 55 characters, since the
    /// rule is named quotatop-NAME).
    #[arg(long = "queue", value_name = "NAME")]
    pub queue: String,
    #[command(flatten)]
    pub aws: AwsArgs,
}

#[derive(Debug, clap::Args)]
pub struct EventsStatusArgs {
    #[command(flatten)]
    pub target: EventsTarget,
}

#[derive(Debug, clap::Args)]
pub struct EventsChangeArgs {
    #[command(flatten)]
    pub target: EventsTarget,
    /// Print the plan and change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Do not ask for confirmation (required when not on a terminal).
    #[arg(long)]
    pub yes: bool,
    /// Why (kept in the audit log; default: the command and the queue).
    #[arg(long)]
    pub reason: Option<String>,
    /// Refuse every change (also `QUOTATOP_READ_ONLY`, or `read_only = true` in the config).
    #[arg(long)]
    pub read_only: bool,
    /// quotatop's config file (its `read_only`, its store; default: config.toml in the user's
    /// config directory, or QUOTATOP_CONFIG).
    #[arg(long, value_name = "FILE")]
    pub config: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub log: AuditLogArg,
}
