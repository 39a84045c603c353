//! `quotatop completions` and `quotatop man` command-line definitions (clap) only; the work is
//! in `commands/shell.rs`.

#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// Write quotatop.1 and one page per subcommand into this directory (created if missing),
    /// instead of printing the top page.
    #[arg(long, value_name = "DIR", value_hint = clap::ValueHint::DirPath)]
    pub dir: Option<std::path::PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to complete in.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}
