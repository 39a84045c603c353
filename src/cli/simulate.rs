//! `quotatop simulate` command-line definitions (clap) only; the work is in `commands/simulate.rs`.

#[derive(Debug, clap::Args)]
pub struct SimulateArgs {
    /// Seed of the simulation (same seed, same output).
    #[arg(long, default_value_t = 7)]
    pub seed: u64,
    /// Print every job state change, not only the summary.
    #[arg(long)]
    pub events: bool,
}
