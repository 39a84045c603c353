use std::process::ExitCode;

use clap::Parser;

use quotatop::cli::{Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let Some(command) = cli.command else {
        return report(quotatop::commands::tui::run(
            &quotatop::cli::TuiArgs::default(),
        ));
    };
    let result = match command {
        Command::Demo(args) => quotatop::commands::demo::run(&args),
        Command::Tui(args) => quotatop::commands::tui::run(&args),
        Command::Simulate(args) => quotatop::commands::simulate::run(&args),
        Command::Emulator(args) => quotatop::commands::emulator::run(&args),
        Command::Replay(args) => quotatop::commands::replay::run(&args),
        Command::Sweep(args) => quotatop::commands::sweep::run(&args),
        Command::Audit(cmd) => quotatop::commands::audit::run(&cmd),
        Command::Journal(cmd) => quotatop::commands::journal::run(&cmd),
        Command::Snapshot(args) => quotatop::commands::snapshot::run(&args),
        Command::Report(args) => quotatop::commands::report::run(&args),
        Command::Record(args) => quotatop::commands::record::run(&args),
        Command::SetPriority(args) => quotatop::commands::set_priority::run(&args),
        Command::Terminate(args) => quotatop::commands::terminate::run(&args),
        Command::Requeue(args) => quotatop::commands::requeue::run(&args),
        Command::Logs(args) => quotatop::commands::logs::run(&args),
        Command::Shares(cmd) => quotatop::commands::shares::run(&cmd),
        Command::Drill(args) => quotatop::commands::drill::run(&args),
        Command::Policy(cmd) => quotatop::commands::policy::run(&cmd),
        Command::Events(cmd) => quotatop::commands::events::run(&cmd),
        Command::Completions(args) => quotatop::commands::shell::completions(args.shell),
        Command::Man(a) => quotatop::commands::shell::man(a.dir.as_deref()),
    };
    report(result)
}

/// The exit status of a command, with its error printed.
fn report(result: anyhow::Result<()>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // The message and each cause once (`cannot read config file X: No such file…`),
            // cleaned of control characters: messages quote input.
            eprintln!("Error: {}", quotatop::commands::error_text(&e));
            ExitCode::FAILURE
        }
    }
}
