use clap::Parser;

use quotatop::cli::{Cli, Command};

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let Some(command) = cli.command else {
        return quotatop::commands::tui::run(&quotatop::cli::TuiArgs::default());
    };
    match command {
        Command::Demo(args) => quotatop::commands::demo::run(&args),
        Command::Tui(args) => quotatop::commands::tui::run(&args),
        Command::Simulate(args) => quotatop::commands::simulate::run(&args),
        Command::Emulator(args) => quotatop::commands::emulator::run(&args),
        Command::Replay(args) => quotatop::commands::replay::run(&args),
        Command::Audit(cmd) => quotatop::commands::audit::run(&cmd),
        Command::Snapshot(args) => quotatop::commands::snapshot::run(&args),
        Command::Report(args) => quotatop::commands::report::run(&args),
        Command::Record(args) => quotatop::commands::record::run(&args),
        Command::SetPriority(args) => quotatop::commands::set_priority::run(&args),
    }
}
