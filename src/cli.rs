//! Command-line definitions (clap) only; the work is in `commands/`.
//!
//! One home per command: this file holds the top-level [`Cli`], the [`Command`] enum and the
//! option groups several commands flatten ([`TargetArgs`], [`AwsArgs`], [`AuditLogArg`],
//! [`JournalWindowArgs`], [`ConsoleArgs`] with its [`ThemeName`], and [`ReportFormat`]). Each
//! command's own flags (its `Args` struct, its sub-command enum, their value enums and
//! parsers) live in `cli/NAME.rs`, NAME being the module of `commands/` that does its work:
//! `cli/set_priority.rs` for `set-priority`, `cli/audit.rs` for `audit list|verify|…`,
//! `cli/shell.rs` for `completions` and `man`. Everything is re-exported here, so a command
//! names its flags `crate::cli::X`.

use clap::{Parser, Subcommand};

mod audit;
mod demo;
mod drill;
mod emulator;
mod events;
mod journal;
mod logs;
mod policy;
mod record;
mod replay;
mod report;
mod requeue;
mod set_priority;
mod shares;
mod shell;
mod simulate;
mod snapshot;
mod sweep;
mod terminate;
mod tui;

pub use audit::{
    AuditCommand, AuditExportArgs, AuditListArgs, AuditReconcileArgs, AuditRepairArgs,
    AuditVerifyArgs, ExportFormat,
};
pub use demo::DemoArgs;
pub use drill::{DrillArgs, DrillCleanupArgs, DrillCommand, DrillFormat, DrillRunArgs};
pub use emulator::EmulatorArgs;
pub use events::{EventsChangeArgs, EventsCommand, EventsStatusArgs, EventsTarget};
pub use journal::{ExportTraceArgs, JournalCommand, MigrateArgs};
pub use logs::LogsArgs;
pub use policy::{
    PolicyApplyArgs, PolicyCheckArgs, PolicyCommand, PolicyFileArgs, PolicyInitArgs,
    PolicyLintArgs, PolicyPlanArgs,
};
pub use record::{LogLevel, RecordArgs};
pub use replay::{FlagValueError, ReplayArgs};
pub use report::ReportArgs;
pub use requeue::RequeueArgs;
pub use set_priority::SetPriorityArgs;
pub use shares::{SharesApplyArgs, SharesCommand, SharesExportArgs, SharesPlanArgs};
pub use shell::{CompletionsArgs, ManArgs};
pub use simulate::SimulateArgs;
pub use snapshot::{SnapshotArgs, SnapshotFormat};
pub use sweep::{SweepArgs, SweepFormat};
pub use terminate::TerminateArgs;
pub use tui::TuiArgs;

#[derive(Debug, Parser)]
#[command(
    name = "quotatop",
    version,
    about = "Operations console for AWS Batch quota-share job queues"
)]
pub struct Cli {
    /// Without a subcommand: the console against AWS (`quotatop tui` with its defaults).
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// The live console on a local emulator with the demo world: shares borrowing and lending,
    /// preemptions, a preemption loop. No AWS account needed.
    Demo(DemoArgs),
    /// The live console against AWS Batch (the default command). With a team's store set
    /// (`[store] url` in the config, --store or QUOTATOP_STORE) it follows the store: the
    /// snapshots of the store's recorder, no AWS polling of its own; --local polls instead.
    Tui(TuiArgs),
    /// Run a built-in quota-share scenario through the scheduling engine and print what
    /// happened: lending, cross-share and in-share preemption, a preemption loop, a
    /// misconfigured job.
    Simulate(SimulateArgs),
    /// Run the embedded AWS Batch emulator alone (loopback only), for other clients and tests:
    /// the scenario's queue, quota shares and workload behind the real Batch API.
    Emulator(EmulatorArgs),
    /// What-if: replay a job trace under several share configurations and compare the results
    /// side by side.
    Replay(ReplayArgs),
    /// Benchmark checkpoint intervals and retry limits per workload class: a replay for every
    /// combination, a table per class and a recommendation by a stated rule.
    Sweep(SweepArgs),
    /// Read and verify the audit log of priority changes.
    #[command(subcommand)]
    Audit(AuditCommand),
    /// What the journal recorded, in other forms (e.g. a replayable trace).
    #[command(subcommand)]
    Journal(JournalCommand),
    /// One complete refresh of quota-managed queues, printed (for scripts and shift hand-off):
    /// use per share and instance type, runnable jobs in dispatch order, preemptions.
    Snapshot(SnapshotArgs),
    /// The five-metric scorecard of a queue from the journal (what the console or
    /// `quotatop record` observed), per share and priority band, with its methods.
    Report(ReportArgs),
    /// The poller and the journal without a screen (a server or a systemd unit), so history
    /// does not depend on a console being open. Logs to the state directory; stops cleanly on
    /// SIGTERM/SIGINT.
    Record(RecordArgs),
    /// Change a job's scheduling priority with a justification: validated, previewed,
    /// confirmed, and written to the audit log before and after the API call.
    SetPriority(SetPriorityArgs),
    /// Terminate jobs with a justification (TerminateServiceJob): validated against the policy,
    /// previewed (work since the last checkpoint, jobs that would start), confirmed, audited.
    Terminate(TerminateArgs),
    /// Requeue a job with a retry cap: submit a copy with preemptionRetriesBeforeTermination =
    /// N (tagged quotatop:replaces), then terminate the original; one audited change.
    Requeue(RequeueArgs),
    /// The log of the SageMaker training job behind a job's attempts (CloudWatch Logs,
    /// /aws/sagemaker/TrainingJobs), each attempt's end marked: the latest attempt, one
    /// (--attempt N) or all (--all); --follow keeps reading until the job ends.
    Logs(LogsArgs),
    /// Quota shares as a file: export the live ones, plan (diff, lint, impact) and apply a
    /// change with an audit record per call.
    #[command(subcommand)]
    Shares(SharesCommand),
    /// Preemption drill: fill a lender's idle capacity from a borrower share, submit a priority
    /// job to the lender, and measure the reclaim, the preemptions and the restarts; every drill
    /// job is tagged, audited and terminated at the end (`drill cleanup --run ID` after a kill).
    Drill(Box<DrillArgs>),
    /// Policy as code: the organisation's classes of work, their promises and budgets, and
    /// who may use them (docs/policy.md).
    #[command(subcommand)]
    Policy(PolicyCommand),
    /// Batch's event stream (EventBridge into SQS) for `record --events-queue`: setup,
    /// status, teardown (docs/events.md).
    #[command(subcommand)]
    Events(EventsCommand),
    /// Print a shell completion script: `quotatop completions bash > ~/.local/share/bash-completion/completions/quotatop`.
    Completions(CompletionsArgs),
    /// Print the manual page (roff): `quotatop man > quotatop.1; man ./quotatop.1`; with
    /// `--dir DIR`, write every page (quotatop.1, quotatop-tui.1, quotatop-audit-list.1, …) there.
    Man(ManArgs),
}

/// What `snapshot`, `record` and the console poll: which queues, of which `[[sources]]`, where
/// (one declaration of the flags the three commands share).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct TargetArgs {
    /// Job queue name or ARN (repeat for several); without it, every quota-managed queue (a
    /// SAGEMAKER_TRAINING queue with a quota-share scheduling policy).
    #[arg(long = "queue", value_name = "NAME|ARN")]
    pub queues: Vec<String>,
    /// A `[[sources]]` entry of the config to poll (repeat for several); without it, every
    /// one (none configured: the one source of --profile/--region/--endpoint-url).
    #[arg(long = "source", value_name = "NAME")]
    pub sources: Vec<String>,
    #[command(flatten)]
    pub aws: AwsArgs,
}

/// Where AWS Batch is and who we are (shared by every command that calls AWS).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct AwsArgs {
    /// Named AWS profile (default: AWS_PROFILE, else the default profile).
    #[arg(long)]
    pub profile: Option<String>,
    /// AWS region (default: AWS_REGION, else the profile's region).
    #[arg(long)]
    pub region: Option<String>,
    /// Batch endpoint URL, e.g. an emulator's http://127.0.0.1:5566 (default: AWS_ENDPOINT_URL,
    /// else the regional endpoint).
    #[arg(long, value_name = "URL")]
    pub endpoint_url: Option<String>,
}

impl AwsArgs {
    /// Whether the command line names a profile, region or endpoint (then `[[sources]]` apply
    /// only when `--source` picks some).
    pub fn explicit(&self) -> bool {
        self.profile.is_some() || self.region.is_some() || self.endpoint_url.is_some()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    Md,
    Json,
    Csv,
}

/// A queue's window of journaled history (`journal export-trace`, `replay --journal`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct JournalWindowArgs {
    /// The job queue (name as the journal recorded it).
    #[arg(long)]
    pub queue: Option<String>,
    /// How far back from --until (e.g. 12h, 7d), or an RFC 3339 time.
    #[arg(long, default_value = "7d")]
    pub since: String,
    /// End of the window: how far back from the newest observation (e.g. 1d), or an RFC 3339
    /// time (default: the newest observation).
    #[arg(long)]
    pub until: Option<String>,
    #[command(flatten)]
    pub store: crate::commands::store::StoreArgs,
}

#[derive(Debug, clap::Args)]
pub struct AuditLogArg {
    /// The audit log (default: audit.jsonl in quotatop's data directory; env
    /// QUOTATOP_AUDIT_LOG).
    #[arg(long, env = "QUOTATOP_AUDIT_LOG")]
    pub log: Option<std::path::PathBuf>,
    /// The audit log in a team's PostgreSQL store (list, verify, anchor, export, reconcile,
    /// repair; where set-priority and a console following the store write their changes);
    /// --log wins.
    #[command(flatten)]
    pub store: crate::commands::store::StoreArgs,
    /// Which log of the store (one store can hold several).
    #[arg(long, value_name = "NAME", default_value = quotatop_store::audit::DEFAULT_STORE_LOG)]
    pub store_log: String,
    /// Seconds to wait for another process's lock on the audit log before giving up.
    #[arg(
        long,
        env = "QUOTATOP_AUDIT_LOCK_TIMEOUT",
        default_value_t = 30.0,
        value_name = "SECS"
    )]
    pub lock_timeout: f64,
}

/// Console settings shared by `quotatop demo` and `quotatop tui` (they override the config
/// file and the environment; see docs/running.md, "The config file").
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ConsoleArgs {
    /// Colour theme: dark, light, high-contrast, colorblind, a theme in the config directory's
    /// themes/, or a .toml path.
    #[arg(long, value_parser = ThemeName)]
    pub theme: Option<String>,
    /// No colours (also: a non-empty NO_COLOR environment variable).
    #[arg(long)]
    pub no_color: bool,
    /// Never change anything; shown as a badge.
    #[arg(long)]
    pub read_only: bool,
    /// Config file (default: config.toml in the user's config directory, or QUOTATOP_CONFIG).
    #[arg(long, value_name = "FILE")]
    pub config: Option<std::path::PathBuf>,
    /// Seconds between refreshes.
    #[arg(long, value_name = "SECONDS")]
    pub refresh: Option<f64>,
    /// Journal database the console records its snapshots into (default: journal.sqlite3 in
    /// the user's data directory; for `demo`, a file in a temporary directory).
    #[arg(long, value_name = "PATH", conflicts_with = "no_journal")]
    pub journal: Option<std::path::PathBuf>,
    /// Record no history (the status bar then says "history off").
    #[arg(long)]
    pub no_journal: bool,
    /// Also tag each job whose priority the console changes with the justification, so other
    /// operators see it in AWS (also `tag_justification = true` in the config file).
    #[arg(long)]
    pub tag_justification: bool,
}

/// `--theme`: any name or path is taken (a theme in the config directory's themes/, a .toml
/// file), and the built-in themes are its known values, so shell completion offers them
/// instead of file names.
#[derive(Debug, Clone, Copy)]
pub struct ThemeName;

impl clap::builder::TypedValueParser for ThemeName {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        clap::builder::StringValueParser::new().parse_ref(cmd, arg, value)
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            quotatop_tui::theme::BUILT_IN
                .iter()
                .map(|(name, _)| clap::builder::PossibleValue::new(*name)),
        ))
    }
}
