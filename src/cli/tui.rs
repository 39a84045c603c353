//! `quotatop tui` command-line definitions (clap) only; the work is in `commands/tui.rs`.

use super::{ConsoleArgs, TargetArgs};

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
