//! Command-line definitions (clap) only; the work is in `commands/`.

use clap::{Parser, Subcommand};

#[path = "cli_shares.rs"]
mod shares;
pub use shares::{SharesApplyArgs, SharesCommand, SharesExportArgs, SharesPlanArgs};
#[path = "cli_policy.rs"]
mod policy;
pub use policy::{
    PolicyApplyArgs, PolicyCheckArgs, PolicyCommand, PolicyFileArgs, PolicyInitArgs,
    PolicyLintArgs, PolicyPlanArgs,
};
mod drill;
pub use drill::{DrillArgs, DrillCleanupArgs, DrillCommand, DrillFormat, DrillRunArgs};

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
    /// Print a shell completion script: `quotatop completions bash > ~/.local/share/bash-completion/completions/quotatop`.
    Completions(CompletionsArgs),
    /// Print the manual page (roff): `quotatop man > quotatop.1; man ./quotatop.1`; with
    /// `--dir DIR`, write every page (quotatop.1, quotatop-tui.1, quotatop-audit-list.1, …) there.
    Man(ManArgs),
}

#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// Write quotatop.1 and one page per subcommand into this directory (created if missing),
    /// instead of printing the top page.
    #[arg(long, value_name = "DIR", value_hint = clap::ValueHint::DirPath)]
    pub dir: Option<std::path::PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to complete in.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, clap::Args)]
pub struct SetPriorityArgs {
    /// The job: id, ARN or name.
    pub job: String,
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

#[derive(Debug, clap::Args)]
pub struct LogsArgs {
    /// The job: id, ARN or name.
    pub job: String,
    /// This attempt only (1 is the first); default: the latest.
    #[arg(long, value_name = "N", conflicts_with = "all")]
    pub attempt: Option<usize>,
    /// Every attempt, oldest first.
    #[arg(long)]
    pub all: bool,
    /// Keep printing new lines (of the newest attempt, then of the next one when the job runs
    /// again) until the job ends or Ctrl-C.
    #[arg(long, short = 'f')]
    pub follow: bool,
    /// Lines from this on: a duration back from the service's clock (30m, 2h, 1d) or an
    /// RFC 3339 time.
    #[arg(long, value_name = "WHEN")]
    pub since: Option<String>,
    /// At most this many lines per attempt (the first ones).
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    pub max_lines: usize,
    /// Queue(s) to look for the job in (default: every quota-managed queue).
    #[arg(long = "queue", value_name = "NAME|ARN")]
    pub queues: Vec<String>,
    #[command(flatten)]
    pub aws: AwsArgs,
}

#[derive(Debug, clap::Args)]
pub struct RecordArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Seconds between refreshes.
    #[arg(long, default_value_t = 15, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub interval: u64,
    /// Journal database (default: journal.sqlite3 in the user's data directory).
    #[arg(long, conflicts_with = "no_journal")]
    pub journal: Option<std::path::PathBuf>,
    /// Keep no history: poll and serve --metrics-addr only (no journal file is created or
    /// opened; /metrics then has no quotatop_journal_* families).
    #[arg(long, requires = "metrics_addr")]
    pub no_journal: bool,
    #[command(flatten)]
    pub store: crate::commands::store::StoreArgs,
    /// Directory for record.log (default: the user's state directory).
    #[arg(long)]
    pub log_dir: Option<std::path::PathBuf>,
    /// record.log is rotated while record runs, before a line would take it past this many
    /// bytes: record.log becomes record.log.1, .1 becomes .2, and so on.
    #[arg(long, value_name = "BYTES", default_value_t = 10 * 1024 * 1024,
          value_parser = clap::value_parser!(u64).range(1024..))]
    pub log_max_bytes: u64,
    /// Rotated files kept (record.log.1 to record.log.N); the oldest is dropped.
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub log_keep: u32,
    /// The least severe events record.log gets (debug includes the AWS SDK's).
    #[arg(long, value_enum, default_value_t = LogLevel::Info)]
    pub log_level: LogLevel,
    /// Config file whose `[journal]` section sets retention and sampling (default: the
    /// console's config.toml, or QUOTATOP_CONFIG).
    #[arg(long)]
    pub config: Option<std::path::PathBuf>,
    /// Stop with a non-zero exit when this many snapshots in a row could not be journaled
    /// (0: keep trying forever; the exit is non-zero anyway if nothing was journaled at all).
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub max_unjournaled: u64,
    /// Serve Prometheus metrics of the latest snapshot on http://ADDR/metrics (e.g.
    /// 127.0.0.1:9464); loopback only unless --metrics-allow-remote.
    #[arg(long, value_name = "ADDR")]
    pub metrics_addr: Option<std::net::SocketAddr>,
    /// Allow --metrics-addr to bind a non-loopback address.
    #[arg(long, requires = "metrics_addr")]
    pub metrics_allow_remote: bool,
}

/// A log's least severe level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogLevel {
    Error,
    Warn,
    Info,
    Debug,
}

impl From<LogLevel> for tracing::Level {
    fn from(l: LogLevel) -> Self {
        match l {
            LogLevel::Error => tracing::Level::ERROR,
            LogLevel::Warn => tracing::Level::WARN,
            LogLevel::Info => tracing::Level::INFO,
            LogLevel::Debug => tracing::Level::DEBUG,
        }
    }
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
pub enum SnapshotFormat {
    Table,
    Json,
}

#[derive(Debug, clap::Args)]
pub struct SnapshotArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Output format; the JSON shape is documented in docs/operator.md, section "snapshot".
    #[arg(long, value_enum, default_value = "table")]
    pub format: SnapshotFormat,
    /// API calls in flight at once.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub concurrency: u16,
}

#[derive(Debug, clap::Args)]
pub struct ReplayArgs {
    /// Trace files: quotatop's CSV, or Philly `trace_<vc>.csv` (or `.csv.gz`) files, or a directory
    /// of them such as traces/philly-vc (capacity from its `philly_vc_nodes.csv`).
    #[arg(long, required_unless_present = "journal", conflicts_with = "journal", num_args = 1..)]
    pub trace: Vec<std::path::PathBuf>,
    /// Replay a queue's own history instead: the trace `journal export-trace` writes, built
    /// from this journal (default: journal.sqlite3 in the user's data directory), with the
    /// queue's share configuration as the journal last saw it as the baseline (the first
    /// configuration; --preset derives from it). Needs --queue.
    #[arg(long, value_name = "PATH", num_args = 0..=1, requires = "queue")]
    pub journal: Option<Option<std::path::PathBuf>>,
    #[command(flatten)]
    pub window: JournalWindowArgs,
    /// With --journal: the baseline is the share configuration in force at --since (the newest
    /// the journal observed at or before it) instead of the last one seen; an error when the
    /// journal has none that old.
    #[arg(long, requires = "journal")]
    pub baseline_at_since: bool,
    /// Configurations to compare (TOML: shares, capacity, workload assumptions).
    #[arg(long, num_args = 1..)]
    pub config: Vec<std::path::PathBuf>,
    /// Also compare the three built-in scenarios (isolated, lending, lending with a protected
    /// share), derived from the first --config or from the Philly capacities.
    #[arg(long)]
    pub preset: bool,
    /// The share the third preset protects (default: the largest capacity, ties broken by the
    /// most GPU-hours of demand in the trace, then by name).
    #[arg(long)]
    pub protect: Option<String>,
    /// Goodput counts the work finished this long after the first submission (e.g. 30d, 12h;
    /// default: the last submission + 24 h).
    #[arg(long)]
    pub horizon: Option<String>,
    /// Deadlines, interruption budgets, prices and the decision rule (TOML), for every scenario
    /// (default: those of the first --config).
    #[arg(long)]
    pub rules: Option<std::path::PathBuf>,
    /// The class policy (docs/policy.md): important work is its classes with a promise or
    /// protected, replacing the band heuristic, and its classes' interruption budgets apply.
    #[arg(long, value_name = "FILE")]
    pub policy: Option<std::path::PathBuf>,
    /// Write one CSV row per job and configuration here.
    #[arg(long)]
    pub jobs_out: Option<std::path::PathBuf>,
    /// Node count for a Philly VC that `philly_vc_nodes.csv` does not list, or for a single
    /// Philly trace without that file next to it (without this, either is an error).
    #[arg(long, value_name = "N", value_parser = parse_default_nodes, allow_hyphen_values = true)]
    pub default_nodes: Option<u32>,
    /// Multiply every share's capacity limits and the environment's capacity by F (> 0),
    /// rounded to whole instances, at least 1: for Philly traces and --config files alike,
    /// before the presets are derived.
    #[arg(long, value_name = "F", value_parser = parse_capacity_scale, allow_hyphen_values = true)]
    pub capacity_scale: Option<f64>,
    /// Also judge every scenario at 0.75× and 1.25× the capacity (of --capacity-scale, else
    /// of the given), in the same run: one line says whether each verdict holds (three times
    /// the replay work).
    #[arg(long)]
    pub sensitivity: bool,
    #[arg(long, value_enum, default_value = "md")]
    pub format: ReportFormat,
}

/// A flag value clap's own parsers cannot check.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FlagValueError {
    #[error("{text:?} is not a whole number of nodes from 1 to {max}")]
    Nodes { text: String, max: u32 },
    #[error("{0:?} is not a finite number > 0 (e.g. 0.5 halves every capacity)")]
    CapacityScale(String),
}

fn parse_default_nodes(s: &str) -> Result<u32, FlagValueError> {
    let max = u32::MAX / quotatop_replay::philly::GPUS_PER_NODE;
    s.trim()
        .parse::<u32>()
        .ok()
        .filter(|n| (1..=max).contains(n))
        .ok_or_else(|| FlagValueError::Nodes {
            text: s.to_string(),
            max,
        })
}

fn parse_capacity_scale(s: &str) -> Result<f64, FlagValueError> {
    s.trim()
        .parse::<f64>()
        .ok()
        .filter(|f| f.is_finite() && *f > 0.0)
        .ok_or_else(|| FlagValueError::CapacityScale(s.to_string()))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    Md,
    Json,
    Csv,
}

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

#[derive(Debug, clap::Args)]
pub struct SimulateArgs {
    /// Seed of the simulation (same seed, same output).
    #[arg(long, default_value_t = 7)]
    pub seed: u64,
    /// Print every job state change, not only the summary.
    #[arg(long)]
    pub events: bool,
}

#[derive(Debug, clap::Args)]
pub struct EmulatorArgs {
    /// Scenario file (TOML): queue, capacity, quota shares, workload generators, seed, speed
    /// [default: the built-in demo world, scenarios/demo.toml as shipped].
    #[arg(long)]
    pub scenario: Option<std::path::PathBuf>,
    /// Address to listen on. Only loopback addresses unless --allow-remote is given.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1")]
    pub bind: std::net::IpAddr,
    /// Permit a --bind address that is not loopback. The emulator checks no secret: anyone
    /// who can reach it can submit, change and terminate jobs.
    #[arg(long)]
    pub allow_remote: bool,
    /// Port (0 picks a free one).
    #[arg(long, default_value_t = 5566)]
    pub port: u16,
    /// Simulated seconds per real second (default: the scenario's `speed`); 0 freezes the clock.
    #[arg(long)]
    pub speed: Option<f64>,
    /// Fault injection, e.g. "latency=20ms+30ms,throttle=5%;submitservicejob:error=0.1", or
    /// rate limits "rate=describeservicejob:10/s,burst=20" (default: the scenario's `faults`).
    /// See docs/emulator.md.
    #[arg(long)]
    pub faults: Option<String>,
    /// Connections served at once; more clients wait in the listen backlog.
    #[arg(long, value_name = "N", default_value_t = 128, value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub max_connections: u32,
    /// Seconds a client has to send a request's headers.
    #[arg(long, value_name = "SECONDS", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub header_timeout: u64,
    /// Seconds a client has to send a request's body once its headers arrived.
    #[arg(long, value_name = "SECONDS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub body_timeout: u64,
    /// Seconds a connection may sit idle (no request, no bytes) before it is closed.
    #[arg(long, value_name = "SECONDS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=86400))]
    pub idle_timeout: u64,
    /// The same job ids, training-job names and request ids on every run with the same seed
    /// (for tests). By default ids are new each run, so a journal kept across two runs never
    /// mixes up different jobs; the seeded schedule is the same either way.
    #[arg(long)]
    pub deterministic: bool,
    /// Start with an empty account (no environment, policy, queue or shares), for clients that
    /// create their own with the setup operations; the scenario still gives the delays and seed.
    #[arg(long)]
    pub empty: bool,
    /// The home region: the scenario's world lives there; requests signed for another region
    /// see that region's own (initially empty) world.
    #[arg(long, default_value = "us-east-1")]
    pub region: String,
    /// The account id in every ARN and in STS answers (12 digits).
    #[arg(long, default_value = "123456789012")]
    pub account: String,
    /// Serve requests without a SigV4 signature (for tools that send none). By default an
    /// unsigned request gets 403 MissingAuthenticationToken and one signed for another service
    /// is refused, as AWS does; the secret is never checked.
    #[arg(long)]
    pub no_auth_check: bool,
}

#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// The job queue (name as the journal recorded it).
    #[arg(long)]
    pub queue: String,
    /// How far back from the newest observation: e.g. 12h, 7d, 2w.
    #[arg(long, default_value = "7d")]
    pub since: String,
    #[arg(long, value_enum, default_value_t = ReportFormat::Md)]
    pub format: ReportFormat,
    /// Journal database (default: the user's data directory).
    #[arg(long)]
    pub journal: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub store: crate::commands::store::StoreArgs,
    /// Known checkpoint interval of a share's jobs, e.g. research=5m (repeatable).
    #[arg(long, value_name = "SHARE=DURATION")]
    pub checkpoint: Vec<String>,
    /// GPUs per instance for a type the built-in table lacks or gets wrong (repeatable).
    #[arg(long, value_name = "TYPE=N")]
    pub gpus: Vec<String>,
    /// Fixed restart cost added to each interrupted attempt's waste.
    #[arg(long, default_value = "0s")]
    pub restart_cost: String,
    /// An interrupted job counts as recovered if it succeeds within this long.
    #[arg(long, default_value = "24h")]
    pub recovery_window: String,
    /// Audit log whose records name the operator and change record of each priority change
    /// (default: audit.jsonl in the user's data directory, when it exists).
    #[arg(long, value_name = "PATH")]
    pub audit_log: Option<std::path::PathBuf>,
    /// quotatop's config file, for `[deadlines]`, `[budgets]`, `[prices]` and `[decision]`
    /// (default: the user's config file, when it exists).
    #[arg(long, value_name = "PATH")]
    pub config: Option<std::path::PathBuf>,
    /// The policy whose conformance the report includes (default: policy.toml beside the
    /// config file, when it exists).
    #[arg(long, value_name = "FILE")]
    pub policy: Option<std::path::PathBuf>,
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

#[derive(Debug, clap::Args)]
pub struct DemoArgs {
    /// Scenario file (default: the built-in demo world, scenarios/demo.toml).
    #[arg(long, value_name = "FILE")]
    pub scenario: Option<std::path::PathBuf>,
    /// Simulated seconds per real second (default: the scenario's, 60 for the demo).
    #[arg(long)]
    pub speed: Option<f64>,
    /// Keep the demo's temporary directory (its journal and audit log) after exit; its path
    /// is printed either way.
    #[arg(long)]
    pub keep: bool,
    #[command(flatten)]
    pub console: ConsoleArgs,
}

#[derive(Debug, Clone, Default, clap::Args)]
pub struct TuiArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub console: ConsoleArgs,
    /// Follow the team's store instead of polling AWS: the snapshots its `record --store`
    /// writes, shown within a second; changes still go to AWS with your own credentials.
    /// `[store] url` in the config does the same.
    #[command(flatten)]
    pub store: crate::commands::store::StoreArgs,
    /// Poll AWS from this console with its own journal file, even when a store is set (by
    /// `[store] url`, --store or QUOTATOP_STORE): e.g. while the store or its recorder is
    /// down. Changes are then audited in the audit file of this machine.
    #[arg(long)]
    pub local: bool,
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
