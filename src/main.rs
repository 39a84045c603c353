use clap::Parser;

use quotatop::cli::{Cli, Command};

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Simulate(args) => quotatop::commands::simulate::run(&args),
        Command::Emulator(args) => quotatop::commands::emulator::run(&args),
        Command::Replay(args) => quotatop::commands::replay::run(&args),
        Command::Audit(cmd) => quotatop::commands::audit::run(&cmd),
    }
}
