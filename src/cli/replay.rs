//! `quotatop replay` command-line definitions (clap) only; the work is in `commands/replay.rs`.

use super::{JournalWindowArgs, ReportFormat};

#[derive(Debug, clap::Args)]
pub struct ReplayArgs {
    /// Trace files: quotatop's CSV, or Philly `trace_<vc>.csv` (or `.csv.gz`) files, or a directory
    /// of them such as traces/philly-vc (capacity from its `philly_vc_nodes.csv`).
    #[arg(long, required_unless_present = "journal", conflicts_with = "journal", num_args = 1..)]
    pub trace: Vec<std::path::PathBuf>,
    /// Replay a queue's own history instead: the trace `journal export-trace` writes, built
    /// from this journal (default: journal.sqlite3 in the user's data directory), with the
    /// queue's share configuration as the journal last saw it as the baseline (the first
    /// configuration; --preset derives from it). Needs --queue.
    #[arg(long, value_name = "PATH", num_args = 0..=1, requires = "queue")]
    pub journal: Option<Option<std::path::PathBuf>>,
    #[command(flatten)]
    pub window: JournalWindowArgs,
    /// With --journal: the baseline is the share configuration in force at --since (the newest
    /// the journal observed at or before it) instead of the last one seen; an error when the
    /// journal has none that old.
    #[arg(long, requires = "journal")]
    pub baseline_at_since: bool,
    /// Configurations to compare (TOML: shares, capacity, workload assumptions).
    #[arg(long, num_args = 1..)]
    pub config: Vec<std::path::PathBuf>,
    /// Also compare the three built-in scenarios (isolated, lending, lending with a protected
    /// share), derived from the first --config or from the Philly capacities.
    #[arg(long)]
    pub preset: bool,
    /// The share the third preset protects (default: the largest capacity, ties broken by the
    /// most GPU-hours of demand in the trace, then by name).
    #[arg(long)]
    pub protect: Option<String>,
    /// Goodput counts the work finished this long after the first submission (e.g. 30d, 12h;
    /// default: the last submission + 24 h).
    #[arg(long)]
    pub horizon: Option<String>,
    /// Deadlines, interruption budgets, prices and the decision rule (TOML), for every scenario
    /// (default: those of the first --config).
    #[arg(long)]
    pub rules: Option<std::path::PathBuf>,
    /// The class policy (docs/policy.md): important work is its classes with a promise or
    /// protected, replacing the band heuristic, and its classes' interruption budgets apply.
    #[arg(long, value_name = "FILE")]
    pub policy: Option<std::path::PathBuf>,
    /// Write one CSV row per job and configuration here.
    #[arg(long)]
    pub jobs_out: Option<std::path::PathBuf>,
    /// Node count for a Philly VC that `philly_vc_nodes.csv` does not list, or for a single
    /// Philly trace without that file next to it (without this, either is an error).
    #[arg(long, value_name = "N", value_parser = parse_default_nodes, allow_hyphen_values = true)]
    pub default_nodes: Option<u32>,
    /// Multiply every share's capacity limits and the environment's capacity by F (> 0),
    /// rounded to whole instances, at least 1: for Philly traces and --config files alike,
    /// before the presets are derived.
    #[arg(long, value_name = "F", value_parser = parse_capacity_scale, allow_hyphen_values = true)]
    pub capacity_scale: Option<f64>,
    /// Also judge every scenario at 0.75× and 1.25× the capacity (of --capacity-scale, else
    /// of the given), in the same run: one line says whether each verdict holds (three times
    /// the replay work).
    #[arg(long)]
    pub sensitivity: bool,
    #[arg(long, value_enum, default_value = "md")]
    pub format: ReportFormat,
}

/// A flag value clap's own parsers cannot check.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FlagValueError {
    #[error("{text:?} is not a whole number of nodes from 1 to {max}")]
    Nodes { text: String, max: u32 },
    #[error("{0:?} is not a finite number > 0 (e.g. 0.5 halves every capacity)")]
    CapacityScale(String),
}

pub(super) fn parse_default_nodes(s: &str) -> Result<u32, FlagValueError> {
    let max = u32::MAX / quotatop_replay::philly::GPUS_PER_NODE;
    s.trim()
        .parse::<u32>()
        .ok()
        .filter(|n| (1..=max).contains(n))
        .ok_or_else(|| FlagValueError::Nodes {
            text: s.to_string(),
            max,
        })
}

pub(super) fn parse_capacity_scale(s: &str) -> Result<f64, FlagValueError> {
    s.trim()
        .parse::<f64>()
        .ok()
        .filter(|f| f.is_finite() && *f > 0.0)
        .ok_or_else(|| FlagValueError::CapacityScale(s.to_string()))
}
