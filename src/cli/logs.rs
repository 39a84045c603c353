//! `quotatop logs` command-line definitions (clap) only; the work is in `commands/logs.rs`.

use super::AwsArgs;

#[derive(Debug, clap::Args)]
pub struct LogsArgs {
    /// The job: id, ARN or name.
    pub job: String,
    /// This attempt only (1 is the first); default: the latest.
    #[arg(long, value_name = "N", conflicts_with = "all")]
    pub attempt: Option<usize>,
    /// Every attempt, oldest first.
    #[arg(long)]
    pub all: bool,
    /// Keep printing new lines (of the newest attempt, then of the next one when the job runs
    /// again) until the job ends or Ctrl-C.
    #[arg(long, short = 'f')]
    pub follow: bool,
    /// Lines from this on: a duration back from the service's clock (30m, 2h, 1d) or an
    /// RFC 3339 time.
    #[arg(long, value_name = "WHEN")]
    pub since: Option<String>,
    /// At most this many lines per attempt (the first ones).
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    pub max_lines: usize,
    /// Queue(s) to look for the job in (default: every quota-managed queue).
    #[arg(long = "queue", value_name = "NAME|ARN")]
    pub queues: Vec<String>,
    #[command(flatten)]
    pub aws: AwsArgs,
}
