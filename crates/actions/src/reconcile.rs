//! Deciding the changes whose outcome was never written: a process killed between its intent
//! and its outcome leaves "OUTCOME UNKNOWN". `reconcile` reads each such job's priority now and
//! appends an outcome record saying what that shows (landed, did not land, undecidable, job
//! gone), so reports attribute the change to the operator who made it instead of to "someone
//! outside quotatop". It writes only the local audit log, so it runs in read-only mode too.

use std::future::Future;

use quotatop_model::{JobStatus, QuotaShare};

use super::ApiFailure;
use quotatop_store::audit::{
    self, AuditError, AuditLog, AuditRecord, Operator, Outcome, RecordKind, Verdict,
};

/// Reads what reconcile judges by: a job's scheduling priority (`Ok(None)` when the job does
/// not exist any more), and for the other kinds of change a quota share, the jobs of a name, a
/// job's state. A lookup that cannot read one of these leaves such changes unknown, saying so.
pub trait JobLookup {
    fn job_priority(
        &self,
        job_id: &str,
    ) -> impl Future<Output = Result<Option<u32>, ApiFailure>> + Send;

    /// The queue's quota share `name` now (`Ok(None)`: no such share).
    fn share(
        &self,
        queue: &str,
        name: &str,
    ) -> impl Future<Output = Result<Option<QuotaShare>, ApiFailure>> + Send {
        let _ = (queue, name);
        std::future::ready(Err(ApiFailure(
            "this lookup cannot read quota shares".to_string(),
        )))
    }

    /// The ids of the queue's jobs named `name`, in every status.
    fn jobs_named(
        &self,
        queue: &str,
        name: &str,
    ) -> impl Future<Output = Result<Vec<String>, ApiFailure>> + Send {
        let _ = (queue, name);
        std::future::ready(Err(ApiFailure("this lookup cannot list jobs".to_string())))
    }

    /// A job's status and whether it was terminated (`Ok(None)`: the job is gone).
    fn job_state(
        &self,
        job_id: &str,
    ) -> impl Future<Output = Result<Option<(JobStatus, bool)>, ApiFailure>> + Send {
        let _ = job_id;
        std::future::ready(Err(ApiFailure("this lookup cannot read jobs".to_string())))
    }
}

/// The kind of a change, as reconcile counts them: `priority` or the API call.
pub fn kind_of(intent: &AuditRecord) -> String {
    match &intent.action {
        Some(a) => a.call.clone(),
        None => "priority".to_string(),
    }
}

/// Why a change that is not a job's priority cannot be read back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum CannotReadBack {
    #[error(transparent)]
    Api(#[from] ApiFailure),
    #[error("the intent names no job")]
    NoJob,
    #[error("no way to read back {0}")]
    UnknownCall(String),
}

/// What a change that is not a job's priority shows now: the verdict and what it rests on.
/// `later` says whether a later change in the log acted on the same target.
async fn judge_action<L: JobLookup>(
    lookup: &L,
    intent: &AuditRecord,
    action: &quotatop_store::audit::Action,
    later: bool,
) -> Result<(Verdict, String), CannotReadBack> {
    match action.call.as_str() {
        "CreateQuotaShare" | "UpdateQuotaShare" | "DeleteQuotaShare" => {
            let live = lookup.share(&intent.queue, &action.target).await?;
            let observed = live
                .as_ref()
                .map(quotatop_analysis::shares_plan::describe)
                .unwrap_or_else(|| "absent".to_string());
            let verdict = if later {
                Verdict::Undecidable
            } else {
                crate::shares::judge(&action.call, &action.detail, live.as_ref())
            };
            Ok((verdict, observed))
        }
        "SubmitServiceJob" => {
            let ids = lookup.jobs_named(&intent.queue, &action.target).await?;
            Ok(if ids.is_empty() {
                (
                    Verdict::DidNotLand,
                    format!("no job named {} in {}", action.target, intent.queue),
                )
            } else {
                (Verdict::Landed, format!("job {}", ids.join(", ")))
            })
        }
        "TerminateServiceJobs" => {
            let ids: Vec<&str> = action
                .detail
                .rsplit_once(": ")
                .map(|(_, ids)| ids.split(", ").filter(|i| !i.is_empty()).collect())
                .unwrap_or_default();
            if ids.is_empty() {
                return Err(CannotReadBack::NoJob);
            }
            let (mut ended, mut alive, mut seen) = (0, 0, Vec::new());
            for id in &ids {
                match lookup.job_state(id).await? {
                    None => {
                        ended += 1;
                        seen.push(format!("{id} gone"));
                    }
                    Some((status, terminated)) => {
                        if terminated {
                            ended += 1;
                        } else if !status.is_terminal() {
                            alive += 1;
                        }
                        seen.push(format!(
                            "{id} {}{}",
                            status.as_str(),
                            if terminated { " (terminated)" } else { "" }
                        ));
                    }
                }
            }
            let verdict = if ended == ids.len() {
                Verdict::Landed
            } else if alive > 0 {
                Verdict::DidNotLand
            } else {
                Verdict::Undecidable
            };
            Ok((verdict, seen.join(", ")))
        }
        other => Err(CannotReadBack::UnknownCall(other.to_string())),
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
    log: &AuditLog,
    operator: &Operator,
    target: &Target,
) -> Result<Vec<Reconciled>, AuditError> {
    log.check_tail()?;
    let changes = audit::changes(&audit::read_records(log.path())?);
    let now = chrono::Utc::now();
    let mut done = Vec::new();
    for (i, c) in changes.iter().enumerate() {
        let revisit = c.did_not_land() && recent(&c.intent, now);
        if !c.outcome_unknown() && !revisit {
            continue;
        }
        let intent = &c.intent;
        let later = later_change(&changes[i + 1..], intent);
        let mut entry = Reconciled {
            kind: kind_of(intent),
            target: intent.action.as_ref().map(|a| a.target.clone()),
            observed: None,
            change_id: intent.change_id.clone(),
            job_id: intent.job.id.clone(),
            job_name: intent.job.name.clone(),
            old_priority: intent.old_priority,
            new_priority: intent.new_priority,
            result: Decision::InFlight,
        };
        if log.in_flight(&intent.change_id) {
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
            let mut r = outcome_record(intent, operator, Verdict::LandedLate, priority, observed);
            r.justification = format!(
                "reconciled by quotatop audit reconcile: landed after all (found not landed at {decided}, seen landed at {})",
                r.time
            );
            match log.append_outcome_if(r, still_did_not_land)? {
                Some(_) => Decision::Decided(Verdict::LandedLate, priority),
                None => Decision::AlreadyDecided,
            }
        } else {
            let r = outcome_record(intent, operator, verdict, priority, observed);
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

/// Why reconcile could not read what a change shows now.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum NotRead {
    #[error("cannot read it back: {0}")]
    Action(CannotReadBack),
    #[error("cannot read the job (no reason given)")]
    NoReason,
    #[error("cannot read the job: {0}")]
    Job(ApiFailure),
}

/// What the change shows now: the verdict, the job's priority (a priority change) and what a
/// change of another kind was judged by.
async fn read_back<L: JobLookup>(
    lookup: &L,
    intent: &AuditRecord,
    later: bool,
) -> Result<(Verdict, Option<u32>, Option<String>), NotRead> {
    if let Some(action) = &intent.action {
        return judge_action(lookup, intent, action, later)
            .await
            .map(|(verdict, observed)| (verdict, None, Some(observed)))
            .map_err(NotRead::Action);
    }
    match lookup.job_priority(&intent.job.id).await {
        Err(ApiFailure(e)) if e.trim().is_empty() => Err(NotRead::NoReason),
        Err(e) => Err(NotRead::Job(e)),
        Ok(current) => Ok((
            Verdict::judge(current, later, intent.new_priority),
            current,
            None,
        )),
    }
}

/// Why the change was made against another AWS than `target` looks at, if it was.
fn elsewhere(intent: &AuditRecord, target: &Target) -> Option<String> {
    let differs = |a: &Option<String>, b: &Option<String>| a != b;
    let show = |v: &Option<String>| v.clone().unwrap_or_else(|| "the default".to_string());
    if differs(&intent.aws.region, &target.region) {
        return Some(format!(
            "made in region {}, this client looks at {}; reconcile with --region {}",
            show(&intent.aws.region),
            show(&target.region),
            show(&intent.aws.region)
        ));
    }
    if differs(&intent.aws.endpoint, &target.endpoint) {
        return Some(format!(
            "made against endpoint {}, this client uses {}; reconcile with that endpoint",
            show(&intent.aws.endpoint),
            show(&target.endpoint)
        ));
    }
    // arn:aws:batch:REGION:ACCOUNT:service-job/ID
    let job_account = intent.job.arn.split(':').nth(4).filter(|a| !a.is_empty());
    if let (Some(job), Some(mine)) = (job_account, target.account.as_deref())
        && job != mine
    {
        return Some(format!(
            "the job is in account {job}, this client's credentials are for {mine}"
        ));
    }
    None
}

fn outcome_record(
    intent: &AuditRecord,
    operator: &Operator,
    verdict: Verdict,
    observed_priority: Option<u32>,
    observed: Option<String>,
) -> AuditRecord {
    let mut r = intent.clone();
    r.v = audit::SCHEME;
    r.kind = RecordKind::Outcome;
    r.time = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    r.operator = operator.clone();
    r.justification = format!(
        "reconciled by quotatop audit reconcile: {}",
        verdict.as_str()
    );
    r.outcome = Some(Outcome::Reconciled {
        verdict,
        observed_priority,
        observed,
        call_error: None,
    });
    r.policy = None;
    r.repair = None;
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use quotatop_store::audit::{AwsContext, JobRef};
    use std::collections::HashMap;

    struct Jobs(HashMap<String, Result<Option<u32>, ApiFailure>>);

    impl JobLookup for Jobs {
        fn job_priority(
            &self,
            job_id: &str,
        ) -> impl Future<Output = Result<Option<u32>, ApiFailure>> + Send {
            let r = self.0.get(job_id).cloned().unwrap_or(Ok(None));
            async move { r }
        }
    }

    fn intent(job: &str, old: u32, new: u32) -> AuditRecord {
        AuditRecord {
            v: audit::SCHEME,
            seq: 0,
            time: "2026-11-30T10:00:00.000Z".into(),
            kind: RecordKind::Intent,
            change_id: audit::new_change_id(),
            operator: Operator {
                user: "alice".into(),
                host: "ops-1".into(),
                ..Default::default()
            },
            aws: AwsContext::default(),
            queue: "q".into(),
            share: "s".into(),
            job: JobRef {
                id: job.into(),
                name: format!("{job}-name"),
                arn: format!("arn:{job}"),
            },
            old_priority: old,
            new_priority: new,
            justification: "why".into(),
            change_record: None,
            preview: String::new(),
            outcome: None,
            policy: None,
            repair: None,
            action: None,
            class_policy: None,
            prev_hash: String::new(),
            hash: String::new(),
        }
    }

    /// A lookup of shares, jobs by name and job states.
    struct World {
        shares: Vec<QuotaShare>,
        named: HashMap<String, Vec<String>>,
        states: HashMap<String, (JobStatus, bool)>,
    }

    impl JobLookup for World {
        async fn job_priority(&self, _job_id: &str) -> Result<Option<u32>, ApiFailure> {
            Err(ApiFailure("no priorities here".to_string()))
        }

        fn share(
            &self,
            _queue: &str,
            name: &str,
        ) -> impl Future<Output = Result<Option<QuotaShare>, ApiFailure>> + Send {
            let r = self.shares.iter().find(|s| s.name == name).cloned();
            async move { Ok(r) }
        }

        fn jobs_named(
            &self,
            _queue: &str,
            name: &str,
        ) -> impl Future<Output = Result<Vec<String>, ApiFailure>> + Send {
            let r = self.named.get(name).cloned().unwrap_or_default();
            async move { Ok(r) }
        }

        fn job_state(
            &self,
            job_id: &str,
        ) -> impl Future<Output = Result<Option<(JobStatus, bool)>, ApiFailure>> + Send {
            let r = self.states.get(job_id).copied();
            async move { Ok(r) }
        }
    }

    fn action_intent(call: &str, target: &str, detail: &str) -> AuditRecord {
        let mut r = intent("", 0, 0);
        r.job = JobRef {
            id: String::new(),
            name: String::new(),
            arn: String::new(),
        };
        r.action = Some(quotatop_store::audit::Action {
            call: call.into(),
            target: target.into(),
            detail: detail.into(),
            run_id: Some("run".into()),
        });
        r
    }

    #[tokio::test]
    async fn share_and_drill_intents_are_reconciled_and_counted_by_kind() {
        use quotatop_analysis::shares_plan::plan;
        use quotatop_model::{CapacityLimit, SharingConfig};
        let share = |name: &str, n: u32| {
            QuotaShare::new(
                name,
                vec![CapacityLimit::new("ml.p4d.24xlarge", n)],
                SharingConfig::lend(),
            )
        };
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::new(dir.path().join("audit.jsonl"));
        // Killed between intent and outcome: a create that landed, an update that did not,
        // a delete that landed, a submission that landed, one that did not, a termination
        // whose jobs are terminated.
        let create = plan(&[], &[share("new", 2)]).remove(0);
        let update = plan(&[share("a", 1)], &[share("a", 3)]).remove(0);
        let delete = plan(&[share("old", 1)], &[]).remove(1);
        for step in [&create, &update, &delete] {
            log.append(action_intent(step.call(), step.share(), &step.detail()))
                .unwrap();
        }
        log.append(action_intent("SubmitServiceJob", "drill-1", "p4d x1"))
            .unwrap();
        log.append(action_intent("SubmitServiceJob", "drill-2", "p4d x1"))
            .unwrap();
        log.append(action_intent(
            "TerminateServiceJobs",
            "2 drill jobs",
            "drill over: j1, j2",
        ))
        .unwrap();
        let world = World {
            shares: vec![share("new", 2), share("a", 1)],
            named: HashMap::from([("drill-1".to_string(), vec!["j1".to_string()])]),
            states: HashMap::from([("j1".to_string(), (JobStatus::Failed, true))]),
        };
        let done = reconcile(&world, &log, &Operator::default(), &Target::default())
            .await
            .unwrap();
        let got: Vec<(String, Decision)> = done
            .iter()
            .map(|r| (r.kind.clone(), r.result.clone()))
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    "CreateQuotaShare".into(),
                    Decision::Decided(Verdict::Landed, None)
                ),
                (
                    "UpdateQuotaShare".into(),
                    Decision::Decided(Verdict::DidNotLand, None)
                ),
                (
                    "DeleteQuotaShare".into(),
                    Decision::Decided(Verdict::Landed, None)
                ),
                (
                    "SubmitServiceJob".into(),
                    Decision::Decided(Verdict::Landed, None)
                ),
                (
                    "SubmitServiceJob".into(),
                    Decision::Decided(Verdict::DidNotLand, None)
                ),
                (
                    "TerminateServiceJobs".into(),
                    Decision::Decided(Verdict::Landed, None)
                ),
            ]
        );
        assert_eq!(
            tally_by_kind(&done),
            vec![
                ("CreateQuotaShare".to_string(), 1, 0),
                ("DeleteQuotaShare".to_string(), 1, 0),
                ("SubmitServiceJob".to_string(), 2, 0),
                ("TerminateServiceJobs".to_string(), 1, 0),
                ("UpdateQuotaShare".to_string(), 1, 0),
            ]
        );
        assert!(
            done[1].line().contains(
                "UpdateQuotaShare a: did not land (read: capacityLimits ml.p4d.24xlarge 1"
            ),
            "{}",
            done[1].line()
        );
        // Each has its outcome now; a second run has nothing to do.
        let changes = audit::changes(&audit::read_records(log.path()).unwrap());
        assert!(changes.iter().all(|c| !c.outcome_unknown()));
        assert!(changes[0].took_effect() && !changes[1].took_effect());
        let again = reconcile(&world, &log, &Operator::default(), &Target::default())
            .await
            .unwrap();
        assert!(again.is_empty());
    }

    /// A held call lands after reconcile said it had not: the next reconcile appends "landed
    /// after all" (the first decision stays), the change takes effect, and a third reconcile
    /// writes nothing; a "did not land" older than the window is not read again.
    #[tokio::test]
    async fn a_did_not_land_that_lands_later_is_corrected_by_an_appended_record() {
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::new(dir.path().join("audit.jsonl"));
        let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        let mut held = intent("held", 1, 50);
        held.time.clone_from(&now);
        let mut old = intent("old", 1, 60);
        old.time = "2026-01-01T00:00:00.000Z".into();
        log.append(held.clone()).unwrap();
        log.append(old).unwrap();
        let op = Operator {
            user: "bob".into(),
            ..Default::default()
        };
        let before = Jobs(HashMap::from([
            ("held".to_string(), Ok(Some(1))),
            ("old".to_string(), Ok(Some(1))),
        ]));
        let first = reconcile(&before, &log, &op, &Target::default())
            .await
            .unwrap();
        let results: Vec<_> = first.iter().map(|r| r.result.clone()).collect();
        assert_eq!(
            results,
            [
                Decision::Decided(Verdict::DidNotLand, Some(1)),
                Decision::Decided(Verdict::DidNotLand, Some(1))
            ]
        );
        // Both calls land now.
        let after = Jobs(HashMap::from([
            ("held".to_string(), Ok(Some(50))),
            ("old".to_string(), Ok(Some(60))),
        ]));
        let second = reconcile(&after, &log, &op, &Target::default())
            .await
            .unwrap();
        assert_eq!(second.len(), 1, "{second:?}");
        assert_eq!(second[0].job_id, "held");
        assert_eq!(
            second[0].result,
            Decision::Decided(Verdict::LandedLate, Some(50))
        );
        assert!(
            second[0].line().contains("landed after all"),
            "{}",
            second[0].line()
        );
        let records = audit::read_records(log.path()).unwrap();
        assert_eq!(
            records.len(),
            5,
            "two intents, two decisions, one correction"
        );
        let correction = &records[4].1;
        assert!(
            correction
                .justification
                .contains("landed after all (found not landed at "),
            "{}",
            correction.justification
        );
        let changes = audit::changes(&records);
        assert!(changes[0].took_effect());
        assert!(
            !changes[1].took_effect(),
            "outside the window: not read again"
        );
        assert_eq!(audit::verify(log.path()).map(|h| h.count), Ok(5));
        let third = reconcile(&after, &log, &op, &Target::default())
            .await
            .unwrap();
        assert!(third.is_empty(), "{third:?}");
        assert_eq!(audit::read_records(log.path()).unwrap().len(), 5);
    }

    /// Two reconciles at once (two threads, two opens of the log) that both find the change
    /// landed after all write one correction between them.
    #[test]
    fn two_reconciles_at_once_write_one_correction() {
        fn block<F: Future>(f: F) -> F::Output {
            tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap()
                .block_on(f)
        }
        for round in 0..20 {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("audit.jsonl");
            let mut held = intent("held", 1, 50);
            held.time = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
            AuditLog::new(&path).append(held).unwrap();
            let before = Jobs(HashMap::from([("held".to_string(), Ok(Some(1)))]));
            let op = Operator::default();
            block(reconcile(
                &before,
                &AuditLog::new(&path),
                &op,
                &Target::default(),
            ))
            .unwrap();
            let results: Vec<Vec<Reconciled>> = std::thread::scope(|s| {
                let runs: Vec<_> = (0..2)
                    .map(|_| {
                        s.spawn(|| {
                            let after = Jobs(HashMap::from([("held".to_string(), Ok(Some(50)))]));
                            let log = AuditLog::new(&path);
                            block(reconcile(
                                &after,
                                &log,
                                &Operator::default(),
                                &Target::default(),
                            ))
                            .unwrap()
                        })
                    })
                    .collect();
                runs.into_iter().map(|r| r.join().unwrap()).collect()
            });
            let corrections = results
                .iter()
                .flatten()
                .filter(|r| r.result == Decision::Decided(Verdict::LandedLate, Some(50)))
                .count();
            assert_eq!(corrections, 1, "round {round}: {results:?}");
            let records = audit::read_records(&path).unwrap();
            assert_eq!(
                records.len(),
                3,
                "intent, did not land, one landed after all"
            );
        }
    }

    #[test]
    fn verdicts() {
        assert_eq!(Verdict::judge(Some(7), false, 7), Verdict::Landed);
        assert_eq!(Verdict::judge(Some(3), false, 7), Verdict::DidNotLand);
        assert_eq!(Verdict::judge(Some(7), true, 7), Verdict::Undecidable);
        assert_eq!(Verdict::judge(None, false, 7), Verdict::JobGone);
        assert_eq!(Verdict::judge(None, true, 7), Verdict::JobGone);
    }

    #[tokio::test]
    async fn each_unknown_change_gets_one_outcome_and_landed_ones_take_effect() {
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::new(dir.path().join("audit.jsonl"));
        // a: killed after its intent, landed. b: killed, did not land. c: killed, then a later
        // audited change d to the same job. e: killed, job gone. f: a change with an outcome.
        let a = log.append(intent("a", 1, 50)).unwrap();
        log.append(intent("b", 1, 60)).unwrap();
        log.append(intent("c", 1, 70)).unwrap();
        let d = log.append(intent("c", 70, 80)).unwrap();
        let mut d_out = d.clone();
        d_out.kind = RecordKind::Outcome;
        d_out.outcome = Some(Outcome::Succeeded { request_id: None });
        log.append(d_out).unwrap();
        log.append(intent("e", 1, 90)).unwrap();
        let jobs = Jobs(HashMap::from([
            ("a".to_string(), Ok(Some(50))),
            ("b".to_string(), Ok(Some(1))),
            ("c".to_string(), Ok(Some(80))),
            ("e".to_string(), Ok(None)),
        ]));
        let reconciler = Operator {
            user: "bob".into(),
            host: "ops-2".into(),
            ..Default::default()
        };
        let done = reconcile(&jobs, &log, &reconciler, &Target::default())
            .await
            .unwrap();
        let verdicts: Vec<_> = done
            .iter()
            .map(|r| (r.job_id.as_str(), r.result.clone()))
            .collect();
        assert_eq!(
            verdicts,
            [
                ("a", Decision::Decided(Verdict::Landed, Some(50))),
                ("b", Decision::Decided(Verdict::DidNotLand, Some(1))),
                ("c", Decision::Decided(Verdict::Undecidable, Some(80))),
                ("e", Decision::Decided(Verdict::JobGone, None)),
            ]
        );
        // The log still verifies, every change now has an outcome, and a's counts as made by
        // its intent's operator.
        audit::verify(log.path()).unwrap();
        let changes = audit::changes(&audit::read_records(log.path()).unwrap());
        assert!(changes.iter().all(|c| !c.outcome_unknown()));
        let took: Vec<_> = changes
            .iter()
            .filter(|c| c.took_effect())
            .map(|c| c.intent.change_id.clone())
            .collect();
        assert_eq!(took, [a.change_id.clone(), d.change_id.clone()]);
        let pcs = audit::priority_changes(&changes, "q");
        assert_eq!(pcs.len(), 2);
        assert_eq!(pcs[0].operator.as_deref(), Some("alice@ops-1"));
        // Nothing left to do the second time.
        assert!(
            reconcile(&jobs, &log, &reconciler, &Target::default())
                .await
                .unwrap()
                .is_empty()
        );
    }

    /// A change whose writer still holds its in-flight mark is left to it; once the writer is
    /// gone, it is decided; an outcome written meanwhile wins.
    #[tokio::test]
    async fn in_flight_changes_are_left_alone_and_outcomes_never_doubled() {
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::new(dir.path().join("audit.jsonl"));
        let mut rec = intent("a", 1, 50);
        let mark = log.begin_change(&rec.change_id).unwrap();
        rec = log.append(rec).unwrap();
        let jobs = Jobs(HashMap::from([("a".to_string(), Ok(Some(1)))]));
        let who = Operator::default();
        let done = reconcile(&jobs, &log, &who, &Target::default())
            .await
            .unwrap();
        assert_eq!(done[0].result, Decision::InFlight);
        // The writer finishes: its own outcome, then the mark goes.
        let mut out = rec.clone();
        out.kind = RecordKind::Outcome;
        out.outcome = Some(Outcome::Succeeded {
            request_id: Some("r-1".into()),
        });
        log.append(out.clone()).unwrap();
        drop(mark);
        assert!(
            reconcile(&jobs, &log, &who, &Target::default())
                .await
                .unwrap()
                .is_empty()
        );
        // A second outcome for the same change is refused under the lock.
        assert!(log.append_outcome_once(out).unwrap().is_none());
        // A writer that died without an outcome: its mark is released, the change decided.
        let rec2 = intent("a", 50, 60);
        {
            let _mark = log.begin_change(&rec2.change_id).unwrap();
            log.append(rec2).unwrap();
        }
        let done = reconcile(&jobs, &log, &who, &Target::default())
            .await
            .unwrap();
        assert_eq!(
            done[0].result,
            Decision::Decided(Verdict::DidNotLand, Some(1))
        );
    }

    /// A change made against another region, endpoint or account is left unknown, not
    /// recorded as "job gone" by a client looking elsewhere.
    #[tokio::test]
    async fn changes_made_elsewhere_are_left_unknown() {
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::new(dir.path().join("audit.jsonl"));
        let mut rec = intent("a", 1, 50);
        rec.aws.region = Some("us-east-1".into());
        rec.aws.endpoint = Some("http://127.0.0.1:5566".into());
        rec.job.arn = "arn:aws:batch:us-east-1:123456789012:service-job/a".into();
        log.append(rec).unwrap();
        let jobs = Jobs(HashMap::new());
        let who = Operator::default();
        for (target, want) in [
            (
                Target {
                    region: Some("eu-west-1".into()),
                    endpoint: Some("http://127.0.0.1:5566".into()),
                    account: None,
                },
                "region us-east-1",
            ),
            (
                Target {
                    region: Some("us-east-1".into()),
                    endpoint: Some("http://127.0.0.1:7777".into()),
                    account: None,
                },
                "endpoint http://127.0.0.1:5566",
            ),
            (
                Target {
                    region: Some("us-east-1".into()),
                    endpoint: Some("http://127.0.0.1:5566".into()),
                    account: Some("999999999999".into()),
                },
                "account 123456789012",
            ),
        ] {
            let done = reconcile(&jobs, &log, &who, &target).await.unwrap();
            match &done[0].result {
                Decision::LeftUnknown(why) => assert!(why.contains(want), "{why}"),
                other => panic!("{other:?}"),
            }
        }
        let changes = audit::changes(&audit::read_records(log.path()).unwrap());
        assert!(changes[0].outcome_unknown());
    }

    #[test]
    fn the_writers_own_outcome_wins_over_a_reconciled_one() {
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::new(dir.path().join("audit.jsonl"));
        let rec = log.append(intent("a", 1, 50)).unwrap();
        let mut reconciled = rec.clone();
        reconciled.kind = RecordKind::Outcome;
        reconciled.outcome = Some(Outcome::Reconciled {
            verdict: Verdict::DidNotLand,
            observed_priority: Some(1),
            observed: None,
            call_error: None,
        });
        log.append(reconciled).unwrap();
        let mut own = rec.clone();
        own.kind = RecordKind::Outcome;
        own.outcome = Some(Outcome::Succeeded {
            request_id: Some("r-9".into()),
        });
        log.append(own).unwrap();
        let changes = audit::changes(&audit::read_records(log.path()).unwrap());
        assert_eq!(changes.len(), 1);
        assert!(changes[0].took_effect());
    }

    #[tokio::test]
    async fn an_unreadable_job_is_left_unknown() {
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::new(dir.path().join("audit.jsonl"));
        log.append(intent("a", 1, 50)).unwrap();
        let jobs = Jobs(HashMap::from([(
            "a".to_string(),
            Err(ApiFailure("throttled".to_string())),
        )]));
        let done = reconcile(&jobs, &log, &Operator::default(), &Target::default())
            .await
            .unwrap();
        assert_eq!(
            done[0].result,
            Decision::LeftUnknown("cannot read the job: throttled".to_string())
        );
        assert!(done[0].line().contains("left unknown"));
        let changes = audit::changes(&audit::read_records(log.path()).unwrap());
        assert!(changes[0].outcome_unknown());
    }
}
