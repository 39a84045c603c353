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
    /// The five-metric scorecard of a queue from the journal (what the console or
    /// `quotatop record` observed), per share and priority band, with its methods.
    Report(ReportArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    Md,
    Json,
    Csv,
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
