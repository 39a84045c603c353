//! `quotatop report` command-line definitions (clap) only; the work is in `commands/report.rs`.

use super::ReportFormat;

#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// The job queue (name as the journal recorded it).
    #[arg(long)]
    pub queue: String,
    /// How far back from the newest observation: e.g. 12h, 7d, 2w.
    #[arg(long, default_value = "7d")]
    pub since: String,
    #[arg(long, value_enum, default_value_t = ReportFormat::Md)]
    pub format: ReportFormat,
    /// Journal database (default: the user's data directory).
    #[arg(long)]
    pub journal: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub store: crate::commands::store::StoreArgs,
    /// Known checkpoint interval of a share's jobs, e.g. research=5m (repeatable).
    #[arg(long, value_name = "SHARE=DURATION")]
    pub checkpoint: Vec<String>,
    /// GPUs per instance for a type the built-in table lacks or gets wrong (repeatable).
    #[arg(long, value_name = "TYPE=N")]
    pub gpus: Vec<String>,
    /// Fixed restart cost added to each interrupted attempt's waste.
    #[arg(long, default_value = "0s")]
    pub restart_cost: String,
    /// An interrupted job counts as recovered if it succeeds within this long.
    #[arg(long, default_value = "24h")]
    pub recovery_window: String,
    /// Audit log whose records name the operator and change record of each priority change
    /// (default: audit.jsonl in the user's data directory, when it exists).
    #[arg(long, value_name = "PATH")]
    pub audit_log: Option<std::path::PathBuf>,
    /// quotatop's config file, for `[deadlines]`, `[budgets]`, `[prices]` and `[decision]`
    /// (default: the user's config file, when it exists).
    #[arg(long, value_name = "PATH")]
    pub config: Option<std::path::PathBuf>,
    /// The policy whose conformance the report includes (default: policy.toml beside the
    /// config file, when it exists).
    #[arg(long, value_name = "FILE")]
    pub policy: Option<std::path::PathBuf>,
}
