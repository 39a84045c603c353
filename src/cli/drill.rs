//! `quotatop drill` command-line definitions (clap) only; the work is in `commands/drill/`.

use clap::Subcommand;

use super::{AuditLogArg, AwsArgs};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DrillFormat {
    Md,
    Json,
}

#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct DrillArgs {
    #[command(subcommand)]
    pub command: Option<DrillCommand>,
    #[command(flatten)]
    pub run: DrillRunArgs,
}

#[derive(Debug, Subcommand)]
pub enum DrillCommand {
    /// Terminate every job a drill submitted that is still alive (after a drill was killed
    /// with SIGKILL or lost its connection): found by the audit log's submissions and by the
    /// drill's job names.
    Cleanup(DrillCleanupArgs),
}

#[derive(Debug, clap::Args)]
pub struct DrillCleanupArgs {
    /// The drill's run id (printed when it started, kept in the audit log and the report).
    #[arg(long = "run", value_name = "ID")]
    pub run_id: String,
    /// The job queue (default: the one the audit log names for the run).
    #[arg(long)]
    pub queue: Option<String>,
    /// Refuse every change (also QUOTATOP_READ_ONLY, or read_only in the config file).
    #[arg(long)]
    pub read_only: bool,
    /// Config file whose `read_only` applies.
    #[arg(long, value_name = "FILE")]
    pub config: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub aws: AwsArgs,
    #[command(flatten)]
    pub log: AuditLogArg,
}

#[derive(Debug, clap::Args)]
pub struct DrillRunArgs {
    /// The job queue (name or ARN).
    #[arg(long, required = true)]
    pub queue: Option<String>,
    /// The share that lends its idle capacity and then submits the priority job.
    #[arg(long, required = true)]
    pub lender: Option<String>,
    /// The share that borrows the lender's idle capacity and is preempted.
    #[arg(long, required = true)]
    pub borrower: Option<String>,
    /// SubmitServiceJob template (JSON): a SageMaker CreateTrainingJob request, or an object
    /// with `serviceRequestPayload` (and optional `tags`); its StoppingCondition is kept.
    #[arg(long, required = true, value_name = "FILE")]
    pub template: Option<std::path::PathBuf>,
    /// Instance type to drill (repeatable; default: every type the lender has a limit for).
    #[arg(long = "instance-type", value_name = "TYPE")]
    pub instance_types: Vec<String>,
    /// How long the borrower jobs work, comma-separated (e.g. 10m,1h): one set of repetitions
    /// per length. They are preempted halfway.
    #[arg(long, default_value = "10m")]
    pub lengths: String,
    /// Repetitions per instance type and length.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeat: u32,
    /// Also run once per instance type with nothing borrowing (the priority job submitted to
    /// the lender while its capacity is idle), to compare against.
    #[arg(long)]
    pub baseline: bool,
    /// How long the lender's priority job works.
    #[arg(long, default_value = "5m")]
    pub priority_length: String,
    /// The lender's priority job's scheduling priority.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(0..=9999))]
    pub priority: u32,
    /// preemptionRetriesBeforeTermination of every drill job (finite by construction).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(0..=100))]
    pub preemption_retries: u32,
    /// Command run for each restarted borrower job, with QUOTATOP_DRILL_JOB_ID,
    /// QUOTATOP_DRILL_ATTEMPT and QUOTATOP_DRILL_RUN in its environment: exit 0 = resumed from a
    /// valid checkpoint. It overrides the measured verdict (without it: from the job's
    /// checkpoints under the template's CheckpointConfig.S3Uri and its restarted attempt's log;
    /// "unknown" when they do not say).
    #[arg(long, value_name = "CMD")]
    pub checkpoint_check: Option<String>,
    /// Run even when the lender or borrower share holds RUNNABLE work of others.
    #[arg(long)]
    pub allow_busy: bool,
    /// Print the plan and submit nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Do not ask for confirmation (required when not on a terminal).
    #[arg(long)]
    pub yes: bool,
    /// Refuse to run (also QUOTATOP_READ_ONLY, or read_only in the config file).
    #[arg(long)]
    pub read_only: bool,
    /// Stop, terminating every drill job, after this much wall time (default: three times the
    /// plan's expected duration plus 10m).
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<String>,
    #[arg(long, value_enum, default_value = "md")]
    pub format: DrillFormat,
    /// Config file, for `read_only`, `[prices]`, `[gpus]` and `[scorecard.checkpoint_minutes]`
    /// (default: config.toml in the user's config directory, or QUOTATOP_CONFIG).
    #[arg(long, value_name = "FILE")]
    pub config: Option<std::path::PathBuf>,
    /// Journal database the report is kept in, for `report` (default: journal.sqlite3 in the
    /// user's data directory).
    #[arg(long, value_name = "PATH", conflicts_with = "no_journal")]
    pub journal: Option<std::path::PathBuf>,
    /// Keep the report nowhere but the output: no journal is created or written (`report`
    /// will not list the drill).
    #[arg(long)]
    pub no_journal: bool,
    /// Seconds between looks at the drill's jobs (wall time). The measured times are the
    /// API's whatever this is; against an emulator on a fast clock, keep it well under the
    /// jobs' lengths in real seconds.
    #[arg(long, value_name = "SECS", default_value_t = 1.0)]
    pub poll_interval: f64,
    #[command(flatten)]
    pub aws: AwsArgs,
    #[command(flatten)]
    pub log: AuditLogArg,
}
