//! The training jobs behind a queue's jobs, measured a little each refresh: for jobs whose
//! payload names a `CheckpointConfig.S3Uri`, ListObjectsV2 of that prefix (paginated, at most
//! `max_objects`), and for their attempts two reads of the training job's log: when the
//! preemption signal was logged ([`SIGNAL_PATTERN`]) and whether a re-run restored a checkpoint
//! ([`RESTORE_PATTERN`] in its first lines). At most `calls` calls per queue per refresh, through
//! the client's read path (paced, retried and counted with the Batch calls). The snapshot
//! carries what was read; the journal keeps it.

use std::collections::{HashMap, HashSet};

use tokio::time::Instant;

use crate::batch::{BatchClient, BatchError, ErrorKind, LogQuery, split_s3_uri};
use quotatop_model::{
    AttemptMark, CheckpointListingSeen, CheckpointObjectSeen, JobStatus, RESTORE_PATTERN,
    SIGNAL_PATTERN, ServiceJob, TrainingEvidence, stream_prefix,
};

/// How much one refresh may read of one queue's training jobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrainingBounds {
    /// Calls (listing pages and log reads) per refresh; 0 turns the reads off.
    pub calls: usize,
    /// Objects one listing reads at most (more: the listing says it was cut).
    pub max_objects: usize,
}

impl Default for TrainingBounds {
    fn default() -> Self {
        Self {
            calls: 6,
            max_objects: 1000,
        }
    }
}

/// Lines read from the head of a re-run's log to find its restore line.
const HEAD_LINES: usize = 3;

/// What was read so far, per job, across refreshes.
#[derive(Debug, Clone, Default)]
pub struct TrainingState {
    /// Job id → its `CheckpointConfig.S3Uri`.
    uris: HashMap<String, String>,
    /// Job id → (refresh it was last listed in, its status then).
    listed: HashMap<String, (u64, JobStatus)>,
    /// Attempts whose log was read for the signal, and for the restore.
    signal_read: HashSet<String>,
    restore_read: HashSet<String>,
    refresh: u64,
    /// Checkpoint locations that answered access denied or not found: not listed again (the
    /// error is reported once, not at every refresh).
    refused: HashSet<String>,
    /// The log group answered access denied or not found: no more log reads.
    logs_refused: bool,
}

enum Read<'a> {
    List {
        job: &'a ServiceJob,
        uri: &'a str,
    },
    Signal {
        job: &'a ServiceJob,
        attempt: &'a str,
    },
    Restore {
        job: &'a ServiceJob,
        attempt: &'a str,
    },
}

impl TrainingState {
    /// A described job's checkpoint location (`None`: it names none).
    pub fn set_uri(&mut self, job_id: &str, uri: Option<String>) {
        match uri {
            Some(u) => {
                self.uris.insert(job_id.to_string(), u);
            }
            None => {
                self.uris.remove(job_id);
            }
        }
    }

    /// The reads due, most useful first: log marks (each read once), then listings, least
    /// recently listed first. A job is listed while it holds capacity, and once more after each
    /// change of status otherwise.
    fn due<'a>(&'a self, jobs: &'a [&'a ServiceJob]) -> Vec<Read<'a>> {
        let mut marks = Vec::new();
        let mut lists: Vec<(u64, Read<'a>)> = Vec::new();
        for &job in jobs {
            let Some(uri) = self.uris.get(&job.id) else {
                continue;
            };
            if self.refused.contains(uri) {
                continue;
            }
            let preempted: HashSet<&str> = job
                .preemption
                .iter()
                .flat_map(|p| &p.recent_preempted_attempts)
                .map(|a| a.resource_id.as_str())
                .collect();
            for (i, a) in job.attempts.iter().enumerate() {
                if self.logs_refused {
                    break;
                }
                let id = a.resource_id.as_str();
                if preempted.contains(id) && !self.signal_read.contains(id) {
                    marks.push(Read::Signal { job, attempt: id });
                }
                let after_preemption = i
                    .checked_sub(1)
                    .and_then(|p| job.attempts.get(p))
                    .is_some_and(|p| preempted.contains(p.resource_id.as_str()));
                if after_preemption && a.started_at.is_some() && !self.restore_read.contains(id) {
                    marks.push(Read::Restore { job, attempt: id });
                }
            }
            let holding = matches!(
                job.status,
                JobStatus::Scheduled | JobStatus::Starting | JobStatus::Running
            );
            match self.listed.get(&job.id) {
                Some(&(_, status)) if !holding && status == job.status => {}
                Some(&(at, _)) => lists.push((at, Read::List { job, uri })),
                None => lists.push((0, Read::List { job, uri })),
            }
        }
        lists.sort_by_key(|(at, _)| *at);
        marks.extend(lists.into_iter().map(|(_, r)| r));
        marks
    }
}

/// One refresh's reads for `jobs` (the queue's tracked jobs): the evidence read, the calls made
/// and the errors. Stops at `bounds.calls` calls or at `deadline`.
pub async fn measure(
    client: &BatchClient,
    state: &mut TrainingState,
    jobs: &[&ServiceJob],
    bounds: TrainingBounds,
    deadline: Instant,
) -> (Vec<TrainingEvidence>, usize, Vec<BatchError>) {
    state.refresh += 1;
    let refresh = state.refresh;
    let mut out: Vec<TrainingEvidence> = Vec::new();
    let mut errors = Vec::new();
    let mut calls = 0;
    let reads = state.due(jobs);
    let mut done = Vec::new();
    for read in reads {
        if calls >= bounds.calls || Instant::now() >= deadline {
            break;
        }
        calls += 1;
        let (job, got) = match read {
            Read::List { job, uri } => {
                done.push(Done::Listed(job.id.clone(), job.status));
                let got = list(client, uri, bounds.max_objects).await;
                if got.as_ref().is_err_and(refusal) {
                    done.push(Done::Refused(Some(uri.to_string())));
                }
                (job, got.map(|l| (Some(l), None)))
            }
            Read::Signal { job, attempt } => {
                let got = signal(client, attempt).await;
                if got.as_ref().is_err_and(refusal) {
                    done.push(Done::Refused(None));
                }
                if got.is_ok() {
                    done.push(Done::Signal(attempt.to_string()));
                }
                (job, got.map(|m| (None, m)))
            }
            Read::Restore { job, attempt } => {
                let got = restore(client, attempt).await;
                if got.as_ref().is_err_and(refusal) {
                    done.push(Done::Refused(None));
                }
                if matches!(got, Ok(Some(_))) {
                    done.push(Done::Restore(attempt.to_string()));
                }
                (job, got.map(|m| (None, m)))
            }
        };
        match got {
            Ok((listing, mark)) => {
                let i = match out.iter().position(|e| e.job_id == job.id) {
                    Some(i) => i,
                    None => {
                        out.push(TrainingEvidence {
                            job_id: job.id.clone(),
                            ..TrainingEvidence::default()
                        });
                        out.len() - 1
                    }
                };
                if let Some(e) = out.get_mut(i) {
                    e.listing = listing.or(e.listing.take());
                    e.marks.extend(mark);
                }
            }
            Err(e) => errors.push(e),
        }
    }
    state.record(done, refresh);
    out.retain(|e| e.listing.is_some() || !e.marks.is_empty());
    (out, calls, errors)
}

impl TrainingState {
    /// What this refresh's reads found out, kept for the next ones: jobs listed, marks read,
    /// locations refused for good.
    fn record(&mut self, done: Vec<Done>, refresh: u64) {
        for d in done {
            match d {
                Done::Listed(id, status) => {
                    self.listed.insert(id, (refresh, status));
                }
                Done::Signal(a) => {
                    self.signal_read.insert(a);
                }
                Done::Restore(a) => {
                    self.restore_read.insert(a);
                }
                Done::Refused(Some(uri)) => {
                    self.refused.insert(uri);
                }
                Done::Refused(None) => self.logs_refused = true,
            }
        }
    }
}

enum Done {
    Listed(String, JobStatus),
    Signal(String),
    Restore(String),
    /// A checkpoint location (`None`: the log group) refused for good.
    Refused(Option<String>),
}

/// An answer that will not change by asking again: access denied, or no such bucket or group.
fn refusal(e: &BatchError) -> bool {
    matches!(e.kind(), ErrorKind::Denied | ErrorKind::NotFound)
}

async fn list(
    client: &BatchClient,
    uri: &str,
    max: usize,
) -> Result<CheckpointListingSeen, BatchError> {
    let prefix = split_s3_uri(uri).map(|(_, p)| p).unwrap_or_default();
    let l = client.list_checkpoints(uri, max).await?;
    Ok(CheckpointListingSeen {
        uri: uri.to_string(),
        objects: l
            .objects
            .into_iter()
            .map(|o| CheckpointObjectSeen {
                key: o
                    .key
                    .strip_prefix(&prefix)
                    .map_or_else(|| o.key.clone(), str::to_string),
                last_modified: o.last_modified,
                size: o.size,
            })
            .collect(),
        truncated: l.truncated,
    })
}

/// When the preempted attempt's log shows the signal (`None` mark: it does not).
async fn signal(client: &BatchClient, attempt: &str) -> Result<Option<AttemptMark>, BatchError> {
    let page = client
        .log_events(&LogQuery {
            stream_prefix: Some(stream_prefix(attempt)),
            pattern: Some(format!("\"{SIGNAL_PATTERN}\"")),
            max_events: 1,
            ..LogQuery::default()
        })
        .await?;
    Ok(page.lines.first().map(|l| AttemptMark {
        attempt: attempt.to_string(),
        signal_at: Some(l.time),
        restored: None,
        restored_at: None,
    }))
}

/// Whether the re-run's first lines say it restored a checkpoint, and when that line was logged
/// (how long the restore took is measured from it); `None` while its log holds fewer than two
/// lines (not far enough to tell).
async fn restore(client: &BatchClient, attempt: &str) -> Result<Option<AttemptMark>, BatchError> {
    let page = client
        .log_events(&LogQuery {
            stream_prefix: Some(stream_prefix(attempt)),
            max_events: HEAD_LINES,
            ..LogQuery::default()
        })
        .await?;
    if page.lines.len() < 2 {
        return Ok(None);
    }
    let line = page
        .lines
        .iter()
        .find(|l| l.message.contains(RESTORE_PATTERN));
    Ok(Some(AttemptMark {
        attempt: attempt.to_string(),
        signal_at: None,
        restored: Some(line.is_some()),
        restored_at: line.map(|l| l.time),
    }))
}
