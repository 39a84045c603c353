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
