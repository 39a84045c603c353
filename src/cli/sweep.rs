//! `quotatop sweep` command-line definitions (clap) only; the work is in `commands/sweep.rs`.

use super::JournalWindowArgs;

#[derive(Debug, clap::Args)]
pub struct SweepArgs {
    /// Trace files, as `replay --trace` takes them (quotatop's CSV, Philly files or a directory
    /// of them such as traces/philly-vc).
    #[arg(long, required_unless_present = "journal", conflicts_with = "journal", num_args = 1..)]
    pub trace: Vec<std::path::PathBuf>,
    /// Sweep a queue's own history instead (as `replay --journal`): the trace `journal
    /// export-trace` writes, and the queue's shares as the journal last saw them as the
    /// configuration held fixed. Needs --queue.
    #[arg(long, value_name = "PATH", num_args = 0..=1, requires = "queue")]
    pub journal: Option<Option<std::path::PathBuf>>,
    #[command(flatten)]
    pub window: JournalWindowArgs,
    /// The configuration held fixed (TOML, as `replay --config`; default: the journal's, else
    /// the Philly capacities as isolated shares).
    #[arg(long, value_name = "FILE")]
    pub config: Option<std::path::PathBuf>,
    /// The class policy (docs/policy.md): its classes are swept, and each is judged by its
    /// promise and interruption budget (default: the priority bands as submitted).
    #[arg(long, value_name = "FILE")]
    pub policy: Option<std::path::PathBuf>,
    /// Sweep only this class (a policy class's name, or a band: low, normal, high, critical);
    /// repeat for several.
    #[arg(long = "class", value_name = "NAME")]
    pub classes: Vec<String>,
    /// The checkpoint intervals to try, comma-separated durations or `none`.
    #[arg(long, value_delimiter = ',', default_value = "5m,15m,30m,1h,2h,none")]
    pub checkpoint_interval: Vec<String>,
    /// The retry limits to try (`preemptionRetriesBeforeTermination`), comma-separated whole
    /// numbers or `unlimited`.
    #[arg(long, value_delimiter = ',', default_value = "0,1,2,3,unlimited")]
    pub retry_limit: Vec<String>,
    /// The model's time to write one checkpoint, a duration (nothing measures checkpoint
    /// writes: the journal records checkpoint objects and restores, not how long a write took).
    #[arg(long, value_name = "DURATION", default_value = "30s")]
    pub checkpoint_write: String,
    /// The model's checkpoint size: GB per GPU of the job, per checkpoint written.
    #[arg(long, value_name = "GB", default_value_t = 2.0)]
    pub checkpoint_gb_per_gpu: f64,
    /// Deadlines, interruption budgets and prices (TOML, as `replay --rules`; default: those of
    /// --config). `[prices] s3_gb_month` prices the checkpoint storage.
    #[arg(long, value_name = "FILE")]
    pub rules: Option<std::path::PathBuf>,
    /// Node count for a Philly VC without one (as `replay --default-nodes`).
    #[arg(long, value_name = "N", value_parser = super::replay::parse_default_nodes, allow_hyphen_values = true)]
    pub default_nodes: Option<u32>,
    /// Multiply every capacity by F (> 0), as `replay --capacity-scale`.
    #[arg(long, value_name = "F", value_parser = super::replay::parse_capacity_scale, allow_hyphen_values = true)]
    pub capacity_scale: Option<f64>,
    /// Replays run at once (default: the machine's cores); the output does not depend on it.
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    #[arg(long, value_enum, default_value = "md")]
    pub format: SweepFormat,
    /// Show the result in the terminal instead of printing it: waste + overhead against the
    /// checkpoint interval per class as a chart (the report's figures), left/right to change
    /// the class, q to quit.
    #[arg(long, conflicts_with = "format")]
    pub chart: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SweepFormat {
    Md,
    Json,
}
