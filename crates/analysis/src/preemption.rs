//! Preemption facts per job and per share, and preemption-loop flags.
//!
//! Lost capacity is counted per preempted attempt as its whole duration (stop − start) times the
//! job's instances: the API does not know checkpoints, so this is an upper bound of the work
//! lost. The API keeps only a window of recent attempts; when a job was preempted more often
//! than the window shows, its loss is marked partial.

use std::collections::BTreeMap;

use quotatop_model::{JobStatus, Millis, PreemptedAttempt, QueueSnapshot};

use super::gpus_per_instance;
use super::looping::is_looping;

const HOUR_MS: f64 = 3_600_000.0;

/// When a job counts as caught in a preemption loop, and when it is over its share's
/// interruption budget.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LoopRule {
    /// Flag a job preempted at least this many times in all.
    pub min_preemptions: u32,
    /// Or at least `.0` times within the last `.1` ms (by the recent attempts' stop times).
    pub within: Option<(u32, Millis)>,
    /// Per share (or `*`): a job preempted more often than this is over its interruption
    /// budget (config `[budgets.SHARE] max_preemptions_per_job`).
    #[serde(default)]
    pub preemption_budgets: BTreeMap<String, u32>,
}

impl Default for LoopRule {
    fn default() -> Self {
        Self {
            min_preemptions: 3,
            within: Some((2, 3_600_000)),
            preemption_budgets: BTreeMap::new(),
        }
    }
}

impl LoopRule {
    /// The preemption budget of a job of `share`, if any.
    pub fn budget_of(&self, share: &str) -> Option<u32> {
        self.preemption_budgets
            .get(share)
            .or_else(|| self.preemption_budgets.get("*"))
            .copied()
    }
}

/// Sets each job's `over_budget` from its count and its share's budget.
fn flag_budgets(out: &mut [PreemptionFacts], rule: &LoopRule) {
    for f in out {
        f.over_budget = rule.budget_of(&f.share).filter(|&b| f.count > b);
    }
}

/// What is known about one preempted job.
#[derive(Debug, Clone, PartialEq)]
pub struct PreemptionFacts {
    pub job_id: String,
    pub name: String,
    pub share: String,
    pub status: JobStatus,
    pub instance_type: String,
    pub instance_count: u32,
    pub priority: u32,
    /// `preemptedAttemptCount`.
    pub count: u32,
    /// The recent preempted attempts, newest first.
    pub recent: Vec<PreemptedAttempt>,
    /// Instance-hours of the recent preempted attempts.
    pub instance_hours_lost: f64,
    /// GPU-hours of the same, when the instance type's GPU count is known.
    pub gpu_hours_lost: Option<f64>,
    /// More preemptions happened than the recent window shows.
    pub loss_is_partial: bool,
    /// Preempted attempts whose start was never seen: their time is not in the loss above
    /// (unknown, not zero), which is then a lower bound.
    pub starts_unknown: u32,
    /// No `preemptionRetriesBeforeTermination`: requeued forever.
    pub unbounded_retries: bool,
    /// Preemptions left before the job fails, when bounded.
    pub retries_left: Option<u32>,
    /// Caught in a preemption loop ([`crate::is_looping`], the one definition).
    pub looping: bool,
    /// Known only from the journal: the API's current job list no longer shows the job (it
    /// finished and aged out, or was never described since the console restarted).
    pub journal_only: bool,
    /// Preempted more often than its share's interruption budget (this budget).
    pub over_budget: Option<u32>,
    /// How many of `recent` have the times Batch's preemption events gave: the history is
    /// "from events" when any has, else "from the API window" (widened by what the poller saw).
    pub from_events: u32,
}

/// A job's preempted attempts as the journal recorded them: every one the poller saw over the
/// journal's retention, not only the API's window of recent attempts.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedPreemptions {
    pub job_id: String,
    pub name: String,
    pub share: String,
    pub status: JobStatus,
    pub instance_type: String,
    pub instance_count: u32,
    pub priority: u32,
    /// Newest first. `status_reason` is empty when the journal predates keeping it.
    pub attempts: Vec<PreemptedAttempt>,
    /// How many of `attempts` have the times Batch's preemption events gave (the others: the
    /// times the poller observed). See [`crate::with_event_attempts`].
    pub from_events: u32,
}

/// Instance-hours of the attempts whose start is known (see [`starts_unknown`]).
fn hours_of(attempts: &[PreemptedAttempt], instances: u32) -> f64 {
    attempts
        .iter()
        .filter_map(|a| {
            a.started_at
                .map(|s| (a.stopped_at - s).max(0) as f64 / HOUR_MS)
        })
        // From +0.0: an empty f64 sum is -0.0, which prints as "-0.0".
        .fold(0.0, |a, b| a + b)
        * instances as f64
}

/// The job's preempted attempts, newest first: the summary's window of recent ones, and the
/// attempts of the job's own list that ended by preemption (by their stop reason) outside it,
/// so an attempt the job lists is never called "not kept".
fn preempted_attempts(
    j: &quotatop_model::ServiceJob,
    summary: &quotatop_model::PreemptionSummary,
) -> Vec<PreemptedAttempt> {
    let mut out = summary.recent_preempted_attempts.clone();
    for a in &j.attempts {
        let Some(stopped_at) = a.stopped_at else {
            continue;
        };
        let reason = a.status_reason.as_deref().filter(|r| !r.is_empty());
        let preempted = quotatop_model::attempt_stop(reason, false, false)
            == quotatop_model::AttemptStop::Preempted;
        if preempted && !out.iter().any(|p| p.resource_id == a.resource_id) {
            out.push(PreemptedAttempt {
                resource_id: a.resource_id.clone(),
                started_at: a.started_at,
                stopped_at,
                status_reason: reason.unwrap_or_default().to_string(),
            });
        }
    }
    out.sort_by_key(|a| std::cmp::Reverse(a.stopped_at));
    out
}

/// How many of the attempts have no known start: left out of [`hours_of`].
fn starts_unknown(attempts: &[PreemptedAttempt]) -> u32 {
    attempts.iter().filter(|a| a.started_at.is_none()).count() as u32
}

fn by_worst(out: &mut [PreemptionFacts]) {
    out.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then(b.instance_hours_lost.total_cmp(&a.instance_hours_lost))
            .then(a.job_id.cmp(&b.job_id))
    });
}

/// The API's facts widened by the journal's record. A job in both keeps the API's status and
/// retry facts; its attempts are the union of both (the same attempt matched by resource id or
/// stop time), its count the larger of `preemptedAttemptCount` and the attempts known, and its
/// loss and loop flag are recomputed over the union. A job only the journal knows is added,
/// marked [`PreemptionFacts::journal_only`], with unknown retry facts. Attempts that stopped
/// after `now` are ignored, so a past snapshot is not widened with its own future.
pub fn with_history(
    live: &[PreemptionFacts],
    recorded: &[RecordedPreemptions],
    rule: &LoopRule,
    now: Option<Millis>,
) -> Vec<PreemptionFacts> {
    let by_id: BTreeMap<&str, &RecordedPreemptions> =
        recorded.iter().map(|r| (r.job_id.as_str(), r)).collect();
    let before_now = |a: &&PreemptedAttempt| now.is_none_or(|n| a.stopped_at <= n);
    let mut out: Vec<PreemptionFacts> = Vec::with_capacity(live.len() + recorded.len());
    for f in live {
        let mut f = f.clone();
        if let Some(r) = by_id.get(f.job_id.as_str()) {
            let mut attempts = f.recent.clone();
            for a in r.attempts.iter().filter(before_now) {
                let known = attempts.iter_mut().find(|b| {
                    (!a.resource_id.is_empty() && a.resource_id == b.resource_id)
                        || a.stopped_at == b.stopped_at
                });
                match known {
                    // The API's window without the start the journal kept.
                    Some(b) => b.started_at = b.started_at.or(a.started_at),
                    None => attempts.push(a.clone()),
                }
            }
            attempts.sort_by_key(|a| std::cmp::Reverse(a.stopped_at));
            f.count = f.count.max(attempts.len() as u32);
            f.instance_hours_lost = hours_of(&attempts, f.instance_count);
            f.gpu_hours_lost =
                gpus_per_instance(&f.instance_type).map(|g| f.instance_hours_lost * g as f64);
            f.loss_is_partial = f.count as usize > attempts.len();
            f.starts_unknown = starts_unknown(&attempts);
            // Retries left stay the API's: its count is what the retry budget is spent by.
            f.looping = is_looping(f.status, f.count, &attempts, now, rule);
            f.recent = attempts;
            f.from_events = r.from_events;
        }
        out.push(f);
    }
    for r in recorded {
        if live.iter().any(|f| f.job_id == r.job_id) {
            continue;
        }
        let attempts: Vec<PreemptedAttempt> =
            r.attempts.iter().filter(before_now).cloned().collect();
        if attempts.is_empty() {
            continue;
        }
        let count = attempts.len() as u32;
        let instance_hours = hours_of(&attempts, r.instance_count);
        let unknown = starts_unknown(&attempts);
        out.push(PreemptionFacts {
            job_id: r.job_id.clone(),
            name: r.name.clone(),
            share: r.share.clone(),
            status: r.status,
            instance_type: r.instance_type.clone(),
            instance_count: r.instance_count,
            priority: r.priority,
            count,
            looping: is_looping(r.status, count, &attempts, now, rule),
            recent: attempts,
            instance_hours_lost: instance_hours,
            gpu_hours_lost: gpus_per_instance(&r.instance_type).map(|g| instance_hours * g as f64),
            loss_is_partial: false,
            starts_unknown: unknown,
            unbounded_retries: false,
            retries_left: None,
            journal_only: true,
            over_budget: None,
            from_events: r.from_events,
        });
    }
    flag_budgets(&mut out, rule);
    by_worst(&mut out);
    out
}

/// Every described job with at least one preemption, most preempted first.
pub fn preemptions(q: &QueueSnapshot, rule: &LoopRule) -> Vec<PreemptionFacts> {
    let now = super::now_of(q);
    let mut out: Vec<PreemptionFacts> = q
        .jobs
        .iter()
        .filter_map(|t| {
            let j = &t.job;
            let summary = j.preemption.as_ref()?;
            if summary.preempted_attempt_count == 0 {
                return None;
            }
            let recent = preempted_attempts(j, summary);
            // The attempts the job lists count too: the summary's count is never below them.
            let count = summary.preempted_attempt_count.max(recent.len() as u32);
            let instance_hours = hours_of(&recent, j.instance_count);
            let looping = is_looping(j.status, count, &recent, now, rule);
            Some(PreemptionFacts {
                job_id: j.id.clone(),
                name: j.name.clone(),
                share: j.share.clone(),
                status: j.status,
                instance_type: j.instance_type.clone(),
                instance_count: j.instance_count,
                priority: j.priority,
                count,
                instance_hours_lost: instance_hours,
                gpu_hours_lost: gpus_per_instance(&j.instance_type)
                    .map(|g| instance_hours * g as f64),
                loss_is_partial: count as usize > recent.len(),
                starts_unknown: starts_unknown(&recent),
                recent,
                unbounded_retries: j.preemption_retries.is_none(),
                retries_left: quotatop_model::retries_left(j.preemption_retries, count),
                looping,
                journal_only: false,
                from_events: 0,
                over_budget: None,
            })
        })
        .collect();
    flag_budgets(&mut out, rule);
    by_worst(&mut out);
    out
}

/// Preemption totals of one share.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SharePreemptions {
    /// Jobs preempted at least once.
    pub jobs: u32,
    /// Sum of their `preemptedAttemptCount`.
    pub preemptions: u32,
    pub looping: u32,
    pub instance_hours_lost: f64,
}

/// Per share (every share of the queue, zero when none were preempted).
pub fn share_preemptions(q: &QueueSnapshot, rule: &LoopRule) -> BTreeMap<String, SharePreemptions> {
    let mut out: BTreeMap<String, SharePreemptions> = q
        .shares
        .iter()
        .map(|s| (s.name.clone(), SharePreemptions::default()))
        .collect();
    for f in preemptions(q, rule) {
        let e = out.entry(f.share.clone()).or_default();
        e.jobs += 1;
        e.preemptions += f.count;
        e.looping += u32::from(f.looping);
        e.instance_hours_lost += f.instance_hours_lost;
    }
    out
}

#[cfg(test)]
mod tests;

/// A job larger than its share's own limit of its instance type in a share that borrows: it can
/// only ever run partly on borrowed capacity, which lenders reclaim, so it is preempted again and
/// again whatever its priority. The one statement of that cause, for the attention panel and
/// "what would change it".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OverOwnLimit {
    pub share: String,
    pub instance_type: String,
    pub needs: u32,
    /// The share's own limit of the type (0 when the type is not among its limits).
    pub own: u32,
}

impl OverOwnLimit {
    /// The cause, in words.
    pub fn cause(&self) -> String {
        format!(
            "needs {} × {} but share {}'s own limit is {}: it always runs partly on borrowed capacity, which lenders reclaim",
            self.needs, self.instance_type, self.share, self.own
        )
    }

    /// What ends the loop, in words.
    pub fn remedies(&self) -> Vec<String> {
        vec![
            format!(
                "run it within the share's own limit ({} or fewer {}), so nothing it holds is borrowed",
                self.own, self.instance_type
            ),
            format!(
                "raise share {}'s own limit of {} to {} or more (`quotatop shares plan`)",
                self.share, self.instance_type, self.needs
            ),
            "resubmit it with a preemption retry limit (preemptionRetriesBeforeTermination), so a loop ends instead of burning capacity".to_string(),
        ]
    }
}

/// [`OverOwnLimit`] for `job` in `q`, when it applies.
pub fn over_own_limit(
    q: &quotatop_model::QueueSnapshot,
    job: &quotatop_model::ServiceJob,
) -> Option<OverOwnLimit> {
    let share = q.shares.iter().find(|s| s.name == job.share)?;
    if !share.sharing.strategy.borrows() {
        return None;
    }
    let own = share
        .capacity_limits
        .iter()
        .find(|l| l.instance_type == job.instance_type)
        .map_or(0, |l| l.max_capacity);
    (job.instance_count > own).then(|| OverOwnLimit {
        share: share.name.clone(),
        instance_type: job.instance_type.clone(),
        needs: job.instance_count,
        own,
    })
}
