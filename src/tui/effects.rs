//! What the app asks the outside world to do, and the services that do it. The app never calls
//! the network or the disk from a key handler: it queues an [`Effect`]; the event loop hands it
//! to a service in a spawned task, and the result comes back as a message.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use super::scorecard::{ScorecardResult, ScorecardSettings};
use crate::actions::{self, ChangeContext, JobTagger, Preview, PriorityApi};
use crate::analysis::RecordedPreemptions;
use crate::audit::{AuditLog, AwsContext, Operator, Outcome};
use crate::journal::{Journal, JournalConfig};
use crate::model::{Millis, Snapshot};

/// A confirmed priority change, as the dialog emits it.
#[derive(Debug, Clone)]
pub struct ChangeRequest {
    pub queue: String,
    pub justification: String,
    pub change_record: Option<String>,
    pub preview: Preview,
}

/// How a change ended: the API's outcome (success or its error, both audited), or why it could
/// not be made at all.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangeResult {
    pub job_id: String,
    pub job_name: String,
    pub new_priority: u32,
    pub result: Result<Outcome, String>,
    /// Something went wrong after the change was made (tagging the job failed).
    pub warning: Option<String>,
}

/// Something for the event loop to start.
#[derive(Debug, Clone)]
pub enum Effect {
    ApplyChange(Box<ChangeRequest>),
    /// Ask the poller for a refresh now.
    RefreshNow,
    /// Compute the scorecard of this queue from the journal; `as_of`: the window ends at this
    /// service time (time travel) instead of the last observation.
    ComputeScorecard {
        queue: String,
        as_of: Option<Millis>,
    },
    /// Load a recorded snapshot (time travel).
    Travel(TravelTo),
    /// Load the journal's preemption history of this queue.
    LoadPreemptions {
        queue: String,
    },
}

/// Where time travel goes, by the local clock the snapshots were stored under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TravelTo {
    /// The newest stored snapshot taken before this time.
    Older(Millis),
    /// The oldest stored snapshot taken after this time.
    Newer(Millis),
    /// The snapshot in force at this local time (else the oldest one kept).
    At(Millis),
    /// The snapshot whose data is as of this service time, the clock the data's own timestamps
    /// and the PAST badge use (else the oldest one kept).
    AtData(Millis),
}

/// A recorded snapshot, where it stands among the stored ones, and the usage samples before
/// it (a past view's sparklines: (queue, share, instance type) → instances used, oldest first).
#[derive(Debug, Clone, PartialEq)]
pub struct PastFrame {
    pub snapshot: Snapshot,
    /// 1-based position among the stored snapshots, and how many there are.
    pub position: usize,
    pub total: usize,
    pub usage: BTreeMap<(String, String, String), Vec<u32>>,
}

/// The answer of a [`TravelTo`]: a frame, `None` when there is nothing further that way.
#[derive(Debug, Clone, PartialEq)]
pub struct TravelResult {
    pub to: TravelTo,
    pub result: Result<Option<Box<PastFrame>>, String>,
}

/// The journal's preemption history of a queue.
#[derive(Debug, Clone, PartialEq)]
pub struct PreemptionHistory {
    pub queue: String,
    pub result: Result<Vec<RecordedPreemptions>, String>,
}

/// Reads history: time travel's snapshots and the Preemptions screen's record. Blocking
/// (SQLite), so the event loop calls it in `spawn_blocking`.
pub trait HistoryReader: Send + Sync {
    fn travel(&self, to: TravelTo) -> TravelResult;
    fn preemptions(&self, queue: &str) -> PreemptionHistory;
}

/// The real reader: the journal the console writes (opened read-side per call, so a journal
/// that goes bad later is reported per request, never fatal).
pub struct JournalReader {
    pub path: PathBuf,
    /// Samples per sparkline series of a past view.
    pub spark_len: usize,
}

impl JournalReader {
    fn open(&self) -> Result<Journal, String> {
        Journal::open_existing(&self.path, JournalConfig::default()).map_err(|e| e.to_string())
    }

    fn frame(&self, to: TravelTo) -> Result<Option<Box<PastFrame>>, String> {
        let j = self.open()?;
        let e = |e: crate::journal::JournalError| e.to_string();
        let at = match to {
            TravelTo::Older(t) => j.snapshot_neighbour(t, true).map_err(e)?,
            TravelTo::Newer(t) => j.snapshot_neighbour(t, false).map_err(e)?,
            TravelTo::At(t) => match j.snapshot_neighbour(t.saturating_add(1), true).map_err(e)? {
                Some(at) => Some(at),
                None => j.snapshot_neighbour(t, false).map_err(e)?,
            },
            TravelTo::AtData(t) => at_data_time(&j, t)?,
        };
        let Some(at) = at else {
            return Ok(None);
        };
        // Retention may delete it between the two reads: then there is nothing to show.
        let Some(snapshot) = j.snapshot_at(at).map_err(e)? else {
            return Ok(None);
        };
        let (position, total) = j.snapshot_position(snapshot.taken_at).map_err(e)?;
        let mut usage = BTreeMap::new();
        for q in &snapshot.queues {
            let Some(until) = crate::analysis::now_of(q) else {
                continue;
            };
            for ((share, ty), used) in j.usage_until(&q.name, until, self.spark_len).map_err(e)? {
                usage.insert((q.name.clone(), share, ty), used);
            }
        }
        Ok(Some(Box::new(PastFrame {
            snapshot,
            position,
            total,
            usage,
        })))
    }
}

/// The stored snapshot (its local `taken_at`) whose data is the newest as of service time `t`,
/// else the oldest: a binary search, as both clocks only move forward. Decodes about log2(n)
/// snapshots.
fn at_data_time(j: &Journal, t: Millis) -> Result<Option<Millis>, String> {
    let times = j
        .snapshot_times(Millis::MIN, Millis::MAX)
        .map_err(|e| e.to_string())?;
    let data_time = |taken: Millis| -> Result<Millis, String> {
        let s = j.snapshot_at(taken).map_err(|e| e.to_string())?;
        Ok(s.as_ref()
            .and_then(|s| s.queues.iter().filter_map(crate::analysis::now_of).max())
            .unwrap_or(taken))
    };
    // First index whose data is after `t`.
    let (mut lo, mut hi) = (0, times.len());
    while lo < hi {
        let mid = (lo + hi) / 2;
        if data_time(times[mid])? <= t {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    Ok(match lo {
        0 => times.first().copied(),
        n => times.get(n - 1).copied(),
    })
}

impl HistoryReader for JournalReader {
    fn travel(&self, to: TravelTo) -> TravelResult {
        TravelResult {
            to,
            result: self.frame(to),
        }
    }

    fn preemptions(&self, queue: &str) -> PreemptionHistory {
        PreemptionHistory {
            queue: queue.to_string(),
            // Everything the journal kept (its retention bounds it).
            result: self
                .open()
                .and_then(|j| j.preempted_jobs(queue, 0).map_err(|e| e.to_string())),
        }
    }
}

pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// Runs confirmed priority changes (the Batch client in the console, a fake in tests).
pub trait ChangeRunner: Send + Sync {
    fn apply(&self, req: ChangeRequest) -> BoxFuture<ChangeResult>;
}

/// The real runner: [`actions::apply_change`] with an API and the audit log.
pub struct ApiRunner<A> {
    pub api: Arc<A>,
    pub log: AuditLog,
    pub operator: Operator,
    pub aws: AwsContext,
    pub read_only: bool,
    /// The change-record policy the dialog checks, as the intent records it.
    pub policy: Option<String>,
    /// Tags each changed job with the justification (`--tag-justification`).
    pub tagger: Option<Arc<dyn JobTagger>>,
}

impl<A: PriorityApi + Send + Sync + 'static> ChangeRunner for ApiRunner<A> {
    fn apply(&self, req: ChangeRequest) -> BoxFuture<ChangeResult> {
        let api = Arc::clone(&self.api);
        let log = self.log.clone();
        let ctx = ChangeContext {
            operator: self.operator.clone(),
            aws: self.aws.clone(),
            queue: req.queue.clone(),
            justification: req.justification.clone(),
            change_record: req.change_record.clone(),
            read_only: self.read_only,
            policy: self.policy.clone(),
        };
        let tagger = self.tagger.clone();
        Box::pin(async move {
            let result = actions::apply_change(api.as_ref(), &log, &ctx, &req.preview)
                .await
                .map_err(|e| e.to_string());
            // Only a change that was made is tagged; a failed tag does not undo it.
            let mut warning = None;
            if let (Some(t), Ok(Outcome::Succeeded { .. })) = (&tagger, &result) {
                let (tags, head_warning) = actions::change_tags(
                    &req.preview,
                    &ctx.operator.user,
                    &ctx.justification,
                    log.path(),
                );
                warning = head_warning;
                if let Err(e) = t.tag_job(req.preview.job_arn.clone(), tags).await {
                    warning = Some(format!("tagging the job failed: {e}"));
                }
            }
            ChangeResult {
                job_id: req.preview.job_id.clone(),
                job_name: req.preview.job_name.clone(),
                new_priority: req.preview.new_priority,
                result,
                warning,
            }
        })
    }
}

/// The services the event loop runs effects with; `None`: not available (the app says so).
#[derive(Default)]
pub struct Services {
    pub changes: Option<Arc<dyn ChangeRunner>>,
    /// Asks the poller to refresh now.
    pub refresh: Option<Box<dyn Fn() + Send>>,
    /// Computes a queue's scorecard; blocking (it reads the journal), so the event loop runs it
    /// in `spawn_blocking`. `None`: no history (the screen says so).
    pub scorecard: Option<ScorecardFn>,
    /// Time travel and the Preemptions screen's history; `None`: no history.
    pub history: Option<Arc<dyn HistoryReader>>,
    /// Why the journal stopped recording, if it did (asked after each snapshot and tick, so
    /// the status bar follows a journal that breaks mid-session).
    pub journal_state: Option<JournalStateFn>,
}

/// See [`Services::journal_state`].
pub type JournalStateFn = Arc<dyn Fn() -> Option<String> + Send + Sync>;

/// See [`Services::scorecard`]: the queue, and the service time the window ends at (`None`:
/// the queue's last observation).
pub type ScorecardFn = Arc<dyn Fn(&str, Option<Millis>) -> ScorecardResult + Send + Sync>;

/// The real scorecard service: [`super::scorecard::compute`] on the journal at `path`.
pub fn journal_scorecard(path: PathBuf, settings: ScorecardSettings) -> ScorecardFn {
    Arc::new(move |queue: &str, as_of: Option<Millis>| ScorecardResult {
        queue: queue.to_string(),
        result: super::scorecard::compute(&path, queue, &settings, as_of).map(Box::new),
    })
}
