//! Command-line definitions (clap) only; the work is in `commands/`.

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "quotatop",
    version,
    about = "Operations console for AWS Batch quota-share job queues"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
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
}

#[derive(Debug, clap::Args)]
pub struct ReplayArgs {
    /// Trace files: quotatop's CSV, or Philly `trace_<vc>.csv` files, or a directory of them
    /// (capacity from its `philly_vc_nodes.csv`).
    #[arg(long, required = true, num_args = 1..)]
    pub trace: Vec<std::path::PathBuf>,
    /// Configurations to compare (TOML: shares, capacity, workload assumptions).
    #[arg(long, num_args = 1..)]
    pub config: Vec<std::path::PathBuf>,
    /// Also compare the three built-in scenarios (isolated, lending, lending with a protected
    /// share), derived from the first --config or from the Philly capacities.
    #[arg(long)]
    pub preset: bool,
    /// The share the third preset protects (default: the one with the largest limits).
    #[arg(long)]
    pub protect: Option<String>,
    #[arg(long, value_enum, default_value = "md")]
    pub format: ReportFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    Md,
    Json,
    Csv,
}

#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// List priority changes, newest last; intents without an outcome are shown as such.
    List(AuditListArgs),
    /// Check the hash chain; exits non-zero at the first edited, removed or reordered record.
    Verify(AuditLogArg),
    /// Export every change (intent and outcome merged) as CSV or JSON.
    Export(AuditExportArgs),
}

#[derive(Debug, clap::Args)]
pub struct AuditLogArg {
    /// The audit log (default: audit.jsonl in quotatop's data directory; env
    /// QUOTATOP_AUDIT_LOG).
    #[arg(long, env = "QUOTATOP_AUDIT_LOG")]
    pub log: Option<std::path::PathBuf>,
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
    /// Scenario file (TOML): queue, capacity, quota shares, workload generators, seed, speed.
    #[arg(long, default_value = "scenarios/demo.toml")]
    pub scenario: std::path::PathBuf,
    /// Port on 127.0.0.1 (0 picks a free one).
    #[arg(long, default_value_t = 5566)]
    pub port: u16,
    /// Simulated seconds per real second (default: the scenario's `speed`); 0 freezes the clock.
    #[arg(long)]
    pub speed: Option<f64>,
    /// Fault injection, e.g. "latency=20ms+30ms,throttle=5%;submitservicejob:error=0.1"
    /// (default: the scenario's `faults`). See README, section "Emulator".
    #[arg(long)]
    pub faults: Option<String>,
}

/// Console settings shared by `quotatop demo` and `quotatop tui` (they override the config
/// file and the environment; see README, section "Configuration").
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ConsoleArgs {
    /// Colour theme: dark, light, high-contrast, colorblind, a theme in the config directory's
    /// themes/, or a .toml path.
    #[arg(long)]
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
}

#[derive(Debug, clap::Args)]
pub struct DemoArgs {
    /// Scenario file (default: the built-in demo world, scenarios/demo.toml).
    #[arg(long, value_name = "FILE")]
    pub scenario: Option<std::path::PathBuf>,
    /// Simulated seconds per real second (default: the scenario's, 60 for the demo).
    #[arg(long)]
    pub speed: Option<f64>,
    #[command(flatten)]
    pub console: ConsoleArgs,
}
