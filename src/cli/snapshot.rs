//! `quotatop snapshot` command-line definitions (clap) only; the work is in `commands/snapshot/`.

use super::TargetArgs;

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
