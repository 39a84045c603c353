//! What-if replay: a job trace run through the engine under several share configurations.
// Functions over 80 lines (clippy.toml) are denied workspace-wide (Cargo.toml); tests may be
// longer.
#![cfg_attr(test, allow(clippy::too_many_lines))]

mod class_workload;
mod config;
pub mod from_history;
pub mod philly;
pub mod presets;
pub mod report;
mod run;
pub mod shares_file;
pub mod sweep;
pub mod trace_csv;

#[cfg(test)]
mod tests;

pub use class_workload::{ClassMembers, ClassWorkload, class_workload};
pub use config::{ReplayConfig, Workload, load_rules, summed_limits};
pub use run::{
    Comparison, DEFAULT_HORIZON_TAIL_MS, JobRow, NeverRun, ReplayOutcome, checkpoints_written,
    replay, replay_lean, replay_to,
};

use std::sync::Arc;

use quotatop_engine::{Engine, EngineError, JobId, JobSpec};
use quotatop_model::Millis;

/// The one copy of `name` in `pool` (a trace's few share names and instance types), added when
/// new.
pub(crate) fn interned(pool: &mut Vec<Arc<str>>, name: &str) -> Arc<str> {
    if let Some(a) = pool.iter().find(|a| &***a == name) {
        return a.clone();
    }
    let a: Arc<str> = name.into();
    pool.push(a.clone());
    a
}

/// Where a trace job came from: `file:line`, shown as such. The file's name is shared by all the
/// jobs of the file rather than copied into each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    file: Arc<str>,
    /// 0: the origin is `file` alone.
    line: u64,
}

impl Origin {
    /// Line `line` (from 1) of `file`.
    pub fn at(file: &Arc<str>, line: u64) -> Self {
        Self {
            file: file.clone(),
            line,
        }
    }
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            0 => f.write_str(&self.file),
            n => write!(f, "{}:{n}", self.file),
        }
    }
}

/// An origin given whole (no line of its own).
impl From<&str> for Origin {
    fn from(s: &str) -> Self {
        Self {
            file: s.into(),
            line: 0,
        }
    }
}

/// Whether `x` is shown as exactly `s` (compared as it is written, without building it).
fn displays_as(x: &impl std::fmt::Display, s: &str) -> bool {
    struct Rest<'a>(&'a str);
    impl std::fmt::Write for Rest<'_> {
        fn write_str(&mut self, part: &str) -> std::fmt::Result {
            self.0 = self.0.strip_prefix(part).ok_or(std::fmt::Error)?;
            Ok(())
        }
    }
    let mut rest = Rest(s);
    std::fmt::write(&mut rest, format_args!("{x}")).is_ok() && rest.0.is_empty()
}

/// A trace job's name: given whole, or a prefix shared by many jobs and a number
/// (`6214e9-17`, as Philly's are made), shown as such.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobName {
    Given(Box<str>),
    Numbered(Arc<str>, u32),
}

impl JobName {
    /// `{prefix}-{id}`: numbered when `id` is a number written as such (no sign, no leading
    /// zero), else given whole.
    pub fn numbered(prefix: &Arc<str>, id: &str) -> Self {
        match id.parse::<u32>() {
            Ok(n) if n.to_string() == id => Self::Numbered(prefix.clone(), n),
            _ => Self::Given(format!("{prefix}-{id}").into()),
        }
    }
}

impl std::fmt::Display for JobName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Given(s) => f.write_str(s),
            Self::Numbered(p, n) => write!(f, "{p}-{n}"),
        }
    }
}

impl From<&str> for JobName {
    fn from(s: &str) -> Self {
        Self::Given(s.into())
    }
}

impl From<String> for JobName {
    fn from(s: String) -> Self {
        Self::Given(s.into())
    }
}

impl PartialEq<&str> for JobName {
    fn eq(&self, other: &&str) -> bool {
        displays_as(self, other)
    }
}

impl From<String> for Origin {
    fn from(s: String) -> Self {
        s.as_str().into()
    }
}

impl PartialEq<&str> for Origin {
    fn eq(&self, other: &&str) -> bool {
        displays_as(self, other)
    }
}

/// One job of a trace, in engine terms.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceJob {
    pub name: JobName,
    /// `file:line` it came from, for error messages.
    pub origin: Origin,
    /// Shared by the jobs of a share (a trace holds few names, many jobs).
    pub share: Arc<str>,
    /// Submission time relative to the trace start.
    pub submit_ms: Millis,
    /// Shared by the jobs of a type.
    pub instance_type: Arc<str>,
    pub instance_count: u32,
    pub work_ms: u64,
    pub priority: i64,
    pub checkpoint_interval_ms: Option<u64>,
    pub preemption_retries: Option<u32>,
    /// Its deadline and later priority changes, when it has either.
    pub extras: JobExtras,
}

/// What few trace jobs have, behind one thin pointer so the many without cost 8 bytes: a
/// deadline (trace column `deadline_s`) and priority changes after submission (column
/// `priority_changes`). A Philly-sized trace holds tens of thousands of jobs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JobExtras(Option<Box<Extras>>);

#[derive(Debug, Clone, PartialEq)]
struct Extras {
    deadline_ms: Option<u64>,
    priority_changes: Vec<(Millis, i64)>,
}

impl JobExtras {
    /// `changes` are `(ms from the trace start, new priority)`; they are kept in time order.
    pub fn new(deadline_ms: Option<u64>, mut changes: Vec<(Millis, i64)>) -> Self {
        changes.sort_by_key(|&(t, _)| t);
        if deadline_ms.is_none() && changes.is_empty() {
            return Self(None);
        }
        Self(Some(Box::new(Extras {
            deadline_ms,
            priority_changes: changes,
        })))
    }

    /// The job must succeed within this long of its submission.
    pub fn deadline_ms(&self) -> Option<u64> {
        self.0.as_ref().and_then(|e| e.deadline_ms)
    }

    /// Priority changes after submission, in time order, replayed at those times.
    pub fn priority_changes(&self) -> &[(Millis, i64)] {
        self.0
            .as_ref()
            .map_or(&[], |e| e.priority_changes.as_slice())
    }
}

/// A trace job the engine parked RUNNABLE with a `MISCONFIGURATION` reason: it can never run
/// under the configuration (larger than its share may ever use, or than the environment).
#[derive(Debug, Clone, PartialEq)]
pub struct StuckJob<'a> {
    pub job: &'a TraceJob,
    /// Its place in submission order (the engine's job id).
    pub index: usize,
    pub reason: String,
}

/// The jobs of `trace` that `engine` (after [`replay`] of that trace) left stuck, in
/// submission order. The engine lists jobs in submission order, which is the trace sorted by
/// submission time (stable), as [`replay`] submits them.
pub fn never_run<'a>(trace: &'a [TraceJob], engine: &Engine) -> Vec<StuckJob<'a>> {
    let stuck: Vec<(usize, String)> = engine
        .jobs()
        .enumerate()
        .filter(|(_, e)| e.status == quotatop_model::JobStatus::Runnable)
        .filter_map(|(k, e)| {
            let reason = quotatop_model::misconfiguration(e.status_reason.as_deref())?;
            Some((k, reason.text.to_string()))
        })
        .collect();
    if stuck.is_empty() {
        // Usually: no table of the whole trace for nothing.
        return Vec::new();
    }
    let mut order: Vec<&TraceJob> = trace.iter().collect();
    order.sort_by_key(|j| j.submit_ms);
    stuck
        .into_iter()
        .filter_map(|(k, reason)| {
            Some(StuckJob {
                job: order.get(k)?,
                index: k,
                reason,
            })
        })
        .collect()
}

/// The 1-based line of a record starting at a byte offset in `text`. The csv crate's own line
/// numbers skip blank lines; its byte offsets are exact, but a record's offset is where the
/// blank lines before it begin, so those are stepped over.
pub(crate) fn line_index(text: &str) -> impl Fn(u64) -> u64 + '_ {
    let starts: Vec<u64> = text
        .bytes()
        .enumerate()
        .filter(|&(_, b)| b == b'\n')
        .map(|(i, _)| i as u64 + 1)
        .collect();
    move |byte| {
        let skipped = text.as_bytes().get(byte as usize..).map_or(0, |rest| {
            rest.iter()
                .take_while(|b| matches!(b, b'\n' | b'\r'))
                .count()
        });
        let at = byte + skipped as u64;
        starts.partition_point(|&s| s <= at) as u64 + 1
    }
}

/// Why a replay could not run.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("{origin}: {message}")]
    Trace { origin: String, message: String },
    #[error("{origin}: {message}")]
    Config { origin: String, message: String },
    #[error(transparent)]
    Philly(#[from] philly::TraceError),
    #[error(transparent)]
    Engine(#[from] EngineError),
}

impl TraceJob {
    /// The job as the engine takes it, with no workload assumptions applied.
    pub fn spec(&self) -> JobSpec {
        JobSpec {
            name: self.name.to_string(),
            share: self.share.to_string(),
            priority: self.priority,
            instance_type: self.instance_type.to_string(),
            instance_count: self.instance_count,
            work_ms: self.work_ms,
            checkpoint_interval_ms: self.checkpoint_interval_ms,
            preemption_retries: self.preemption_retries,
            restart_overhead_ms: 0,
            failures: None,
        }
    }
}

/// Submits every job at its time (stable by submission time), then runs the engine until
/// nothing is left to do. Returns the ids in submission order.
pub fn run_trace(engine: &mut Engine, jobs: &[TraceJob]) -> Result<Vec<JobId>, EngineError> {
    run::submit_all(engine, jobs, |j| j.spec(), &mut |_, _| {}, &mut |_| {}).map_err(|(_, e)| e)
}

/// Fixes glibc malloc's mmap threshold at its default (128 KiB). Left alone, glibc raises the
/// threshold to the size of each large block freed (up to 32 MiB): once a scenario's engine
/// (a job table of about 20 MB on the 8-VC Philly traces) is dropped, the next large tables come
/// from the heap instead of their own mappings and stay resident after they are freed, which
/// cost `replay --preset` about 13 MB of peak RSS. With the threshold fixed, large tables are
/// always mapped and given back when freed. Does nothing on other platforms.
///
/// The crate's only `unsafe` (the `[lints]` table denies it everywhere else).
#[allow(unsafe_code)]
pub fn fix_mmap_threshold() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a tunable of the C allocator; M_MMAP_THRESHOLD takes any value
    // up to 32 MiB, and a failure leaves the allocator as it was.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
    }
}
