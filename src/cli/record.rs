//! `quotatop record` command-line definitions (clap) only; the work is in `commands/record.rs`.

use super::TargetArgs;

#[derive(Debug, clap::Args)]
pub struct RecordArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Seconds between refreshes.
    #[arg(long, default_value_t = 15, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub interval: u64,
    /// Journal database (default: journal.sqlite3 in the user's data directory).
    #[arg(long, conflicts_with = "no_journal")]
    pub journal: Option<std::path::PathBuf>,
    /// Keep no history: poll and serve --metrics-addr only (no journal file is created or
    /// opened; /metrics then has no quotatop_journal_* families).
    #[arg(long, requires = "metrics_addr")]
    pub no_journal: bool,
    #[command(flatten)]
    pub store: crate::commands::store::StoreArgs,
    /// Directory for record.log (default: the user's state directory).
    #[arg(long)]
    pub log_dir: Option<std::path::PathBuf>,
    /// record.log is rotated while record runs, before a line would take it past this many
    /// bytes: record.log becomes record.log.1, .1 becomes .2, and so on.
    #[arg(long, value_name = "BYTES", default_value_t = 10 * 1024 * 1024,
          value_parser = clap::value_parser!(u64).range(1024..))]
    pub log_max_bytes: u64,
    /// Rotated files kept (record.log.1 to record.log.N); the oldest is dropped.
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub log_keep: u32,
    /// The least severe events record.log gets (debug includes the AWS SDK's).
    #[arg(long, value_enum, default_value_t = LogLevel::Info)]
    pub log_level: LogLevel,
    /// Config file whose `[journal]` section sets retention and sampling (default: the
    /// console's config.toml, or QUOTATOP_CONFIG).
    #[arg(long)]
    pub config: Option<std::path::PathBuf>,
    /// Stop with a non-zero exit when this many snapshots in a row could not be journaled
    /// (0: keep trying forever; the exit is non-zero anyway if nothing was journaled at all,
    /// a shared store that refused this recorder until it stopped included; a recorder that
    /// stood by while another led exits 0).
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub max_unjournaled: u64,
    /// Serve Prometheus metrics of the latest snapshot on http://ADDR/metrics (e.g.
    /// 127.0.0.1:9464); loopback only unless --metrics-allow-remote.
    #[arg(long, value_name = "ADDR")]
    pub metrics_addr: Option<std::net::SocketAddr>,
    /// Also take Batch's events from this SQS queue (URL or name; made by `quotatop events
    /// setup`): long-polled (20 s), each event kept in the journal once by its id, in event-time
    /// order, its message deleted only after the journal committed it (a message not deleted,
    /// after a kill, comes back 10 s later). The jobs the events name are described at once
    /// and their snapshot journaled; the full listing becomes a reconciliation every
    /// --reconcile-every.
    #[arg(long, value_name = "URL|NAME", conflicts_with = "no_journal")]
    pub events_queue: Option<String>,
    /// With --events-queue: how often the full listing runs, as a reconciliation; what it
    /// finds that no event told is counted (quotatop_events_missed_total) and logged in
    /// record.log. A duration: 90s, 5m, 1h.
    #[arg(long, value_name = "DURATION", default_value = "5m", requires = "events_queue",
          value_parser = parse_reconcile)]
    pub reconcile_every: std::time::Duration,
    /// Allow --metrics-addr to bind a non-loopback address.
    #[arg(long, requires = "metrics_addr")]
    pub metrics_allow_remote: bool,
}

/// A log's least severe level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogLevel {
    Error,
    Warn,
    Info,
    Debug,
}

impl From<LogLevel> for tracing::Level {
    fn from(l: LogLevel) -> Self {
        match l {
            LogLevel::Error => tracing::Level::ERROR,
            LogLevel::Warn => tracing::Level::WARN,
            LogLevel::Info => tracing::Level::INFO,
            LogLevel::Debug => tracing::Level::DEBUG,
        }
    }
}

/// `--reconcile-every`: a duration of 1 s to 1 day.
fn parse_reconcile(text: &str) -> Result<std::time::Duration, String> {
    let ms = quotatop_model::parse_duration(text).map_err(|e| e.to_string())?;
    if !(1_000..=86_400_000).contains(&ms) {
        return Err(format!("{text:?} is not between 1s and 1d"));
    }
    Ok(std::time::Duration::from_millis(ms.unsigned_abs()))
}
