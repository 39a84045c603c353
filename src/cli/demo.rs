//! `quotatop demo` command-line definitions (clap) only; the work is in `commands/demo.rs`.

use super::ConsoleArgs;

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
