//! Deciding the changes whose outcome was never written: a process killed between its intent
//! and its outcome leaves "OUTCOME UNKNOWN". `reconcile` reads each such job's priority now and
//! appends an outcome record saying what that shows (landed, did not land, undecidable, job
//! gone), so reports attribute the change to the operator who made it instead of to "someone
//! outside quotatop". It writes only the audit log (a file, or a team's store), so it runs in
//! read-only mode too.
//!
//! `read_back.rs` reads what a change shows now; this file decides and appends.

mod job_changes;
mod read_back;

pub use read_back::JobLookup;
use read_back::{elsewhere, read_back};

use quotatop_store::audit::{self, AuditError, AuditRecord, ChangeLog, Operator, Outcome, Verdict};

/// The kind of a change, as reconcile counts them: `priority` or the API call.
pub fn kind_of(intent: &AuditRecord) -> String {
    match &intent.action {
        Some(a) => a.call.clone(),
        None => "priority".to_string(),
    }
}

/// Where the reconciling client looks: a change is only decided by a client pointed at the
/// AWS it was made against.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Target {
    pub region: Option<String>,
    pub endpoint: Option<String>,
    /// The account of the client's principal, when STS said.
    pub account: Option<String>,
}

/// What reconcile did for one change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// An outcome record was appended.
    Decided(Verdict, Option<u32>),
    /// Its writer is still alive and making it: left to that process.
    InFlight,
    /// Left unknown, and why (the job could not be read; another region, endpoint or account).
    LeftUnknown(String),
    /// Another process wrote an outcome meanwhile.
    AlreadyDecided,
}

/// What reconcile did for one change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reconciled {
    /// `priority`, or the API call of another kind of change (see [`kind_of`]).
    pub kind: String,
    /// For a change other than a job's priority: what it acted on, and what was read.
    pub target: Option<String>,
    pub observed: Option<String>,
    pub change_id: String,
    pub job_id: String,
    pub job_name: String,
    pub old_priority: u32,
    pub new_priority: u32,
    pub result: Decision,
}

impl Reconciled {
    /// The entry of `intent`, its result not decided yet (in flight until it is).
    fn of(intent: &AuditRecord) -> Self {
        Reconciled {
            kind: kind_of(intent),
            target: intent.action.as_ref().map(|a| a.target.clone()),
            observed: None,
            change_id: intent.change_id.clone(),
            job_id: intent.job.id.clone(),
            job_name: intent.job.name.clone(),
            old_priority: intent.old_priority,
            new_priority: intent.new_priority,
            result: Decision::InFlight,
        }
    }

    /// One line for the terminal (names cleaned).
    pub fn line(&self) -> String {
        let what = match &self.result {
            Decision::Decided(v, Some(p)) => format!("{} (priority now {p})", v.as_str()),
            Decision::Decided(v, None) => v.as_str().to_string(),
            Decision::InFlight => "still being made by a live process: left to it".to_string(),
            Decision::LeftUnknown(why) => format!("left unknown: {why}"),
            Decision::AlreadyDecided => "decided meanwhile by another process".to_string(),
        };
        if let Some(target) = &self.target {
            return quotatop_model::clean_text(&format!(
                "{} {} {target}: {what}{}",
                self.change_id,
                self.kind,
                self.observed
                    .as_deref()
                    .map(|o| format!(" (read: {o})"))
                    .unwrap_or_default()
            ));
        }
        quotatop_model::clean_text(&format!(
            "{} {} ({}) {} -> {}: {what}",
            self.change_id, self.job_name, self.job_id, self.old_priority, self.new_priority
        ))
    }
}

/// How many changes were decided, and how many left unknown (in-flight and already-decided
/// ones are neither).
pub fn tally(done: &[Reconciled]) -> (usize, usize) {
    done.iter()
        .fold((0, 0), |(decided, left), r| match r.result {
            Decision::Decided(..) => (decided + 1, left),
            Decision::LeftUnknown(_) => (decided, left + 1),
            Decision::InFlight | Decision::AlreadyDecided => (decided, left),
        })
}

/// [`tally`] per kind of change (see [`kind_of`]), in name order: (kind, decided, left).
pub fn tally_by_kind(done: &[Reconciled]) -> Vec<(String, usize, usize)> {
    let mut kinds: std::collections::BTreeMap<&str, Vec<Reconciled>> = Default::default();
    for r in done {
        kinds.entry(r.kind.as_str()).or_default().push(r.clone());
    }
    kinds
        .into_iter()
        .map(|(k, rs)| {
            let (d, l) = tally(&rs);
            (k.to_string(), d, l)
        })
        .collect()
}

/// How long after its intent a change reconcile found "did not land" is read again by later
/// reconciles: a call held in flight or answered late takes effect within its timeouts and
/// retries (seen: 1.5 s after reconcile decided), far within a day.
pub const REVISIT_WINDOW_MS: i64 = 24 * 3600 * 1000;

/// Decides every change of `log` with no outcome, appending one outcome record per decided
/// change (kind `outcome`, the change's id, `result = reconciled`, the reconciling operator).
/// A torn last line stops it (repair first). A change whose writer is still alive is left to
/// it; a change made against another region, endpoint or account than `target` is left
/// unknown (saying which); the outcome is appended only if none was written meanwhile (checked
/// under the log's lock).
///
/// A change an earlier reconcile found "did not land" (intent within [`REVISIT_WINDOW_MS`]) is
/// read again: when it shows landed now, a second outcome record says "landed after all"
/// (verdict `landed_late`, its time when it was seen, the earlier decision's time in its
/// justification), and the log stays append-only. Still not landed: nothing is written.
pub async fn reconcile<L: JobLookup>(
    lookup: &L,
    log: &ChangeLog,
    operator: &Operator,
    target: &Target,
) -> Result<Vec<Reconciled>, AuditError> {
    log.check_tail()?;
    let changes = audit::changes(&log.read_records()?);
    let now = chrono::Utc::now();
    let mut done = Vec::new();
    for (i, c) in changes.iter().enumerate() {
        let revisit = c.did_not_land() && recent(&c.intent, now);
        if !c.outcome_unknown() && !revisit {
            continue;
        }
        let intent = &c.intent;
        let mut entry = Reconciled::of(intent);
        if log.in_flight(&intent.change_id)? {
            if !revisit {
                done.push(entry);
            }
            continue;
        }
        if let Some(why) = elsewhere(intent, target) {
            if !revisit {
                entry.result = Decision::LeftUnknown(why);
                done.push(entry);
            }
            continue;
        }
        let later = later_change(&changes[i + 1..], intent);
        let (verdict, priority, observed) = match read_back(lookup, intent, later).await {
            Ok(read) => read,
            // A revisit that cannot read leaves the earlier decision as it is.
            Err(_) if revisit => continue,
            Err(why) => {
                entry.result = Decision::LeftUnknown(why.to_string());
                done.push(entry);
                continue;
            }
        };
        entry.observed.clone_from(&observed);
        entry.result = if revisit {
            if verdict != Verdict::Landed {
                continue;
            }
            let decided = c.outcome.as_ref().map_or("", |o| o.time.as_str());
            let mut r =
                AuditRecord::reconciled(intent, operator, Verdict::LandedLate, priority, observed);
            r.justification = format!(
                "reconciled by quotatop audit reconcile: landed after all (found not landed at {decided}, seen landed at {})",
                r.time
            );
            match log.append_outcome_if(r, still_did_not_land)? {
                Some(_) => Decision::Decided(Verdict::LandedLate, priority),
                None => Decision::AlreadyDecided,
            }
        } else {
            let r = AuditRecord::reconciled(intent, operator, verdict, priority, observed);
            match log.append_outcome_once(r)? {
                Some(_) => Decision::Decided(verdict, priority),
                None => Decision::AlreadyDecided,
            }
        };
        done.push(entry);
    }
    Ok(done)
}

/// Whether `intent` was made within [`REVISIT_WINDOW_MS`] of `now`.
fn recent(intent: &AuditRecord, now: chrono::DateTime<chrono::Utc>) -> bool {
    chrono::DateTime::parse_from_rfc3339(&intent.time).is_ok_and(|t| {
        (now - t.with_timezone(&chrono::Utc)).num_milliseconds() <= REVISIT_WINDOW_MS
    })
}

/// Whether a change's outcome records still say only reconcile's "did not land": no answer of
/// the API and no "landed after all" was written meanwhile.
fn still_did_not_land(outcomes: &[AuditRecord]) -> bool {
    let mut did_not_land = false;
    for o in outcomes {
        match &o.outcome {
            Some(Outcome::Reconciled {
                verdict: Verdict::DidNotLand,
                ..
            }) => did_not_land = true,
            Some(Outcome::Reconciled {
                verdict: Verdict::LandedLate,
                ..
            })
            | Some(Outcome::Succeeded { .. })
            | Some(Outcome::Failed { .. }) => return false,
            _ => {}
        }
    }
    did_not_land
}

/// Whether a change after `intent` in the log acted on the same job (a priority) or target.
fn later_change(after: &[audit::Change], intent: &AuditRecord) -> bool {
    match &intent.action {
        None => after
            .iter()
            .any(|l| l.intent.action.is_none() && l.intent.job.id == intent.job.id),
        Some(a) => after.iter().any(|l| {
            l.intent
                .action
                .as_ref()
                .is_some_and(|b| b.target == a.target && l.intent.queue == intent.queue)
        }),
    }
}

#[cfg(test)]
mod tests;
