//! Shell integration: completion scripts (clap_complete) and the manual page (clap_mangen),
//! both generated from the one command-line definition in `cli.rs`.

use std::io::Write as _;

use anyhow::Context as _;
use clap::CommandFactory as _;

use crate::cli::Cli;

/// Writes the completion script for `shell` to stdout.
pub fn completions(shell: clap_complete::Shell) -> anyhow::Result<()> {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "quotatop", &mut out);
    write_stdout(&out)
}

/// Writes the manual page (roff) to stdout.
pub fn man() -> anyhow::Result<()> {
    let mut out = Vec::new();
    clap_mangen::Man::new(Cli::command())
        .render(&mut out)
        .context("cannot render the manual page")?;
    write_stdout(&out)
}

fn write_stdout(bytes: &[u8]) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(bytes)
        .and_then(|()| stdout.flush())
        .context("cannot write to standard output")
}
