//! Deciding the changes whose outcome was never written: a process killed between its intent
//! and its outcome leaves "OUTCOME UNKNOWN". `reconcile` reads each such job's priority now and
//! appends an outcome record saying what that shows (landed, did not land, undecidable, job
//! gone), so reports attribute the change to the operator who made it instead of to "someone
//! outside quotatop". It writes only the local audit log, so it runs in read-only mode too.

use std::future::Future;

use crate::audit::{
    self, AuditError, AuditLog, AuditRecord, Operator, Outcome, RecordKind, Verdict,
};

/// Reads a job's scheduling priority: `Ok(None)` when the job does not exist (any more).
pub trait JobLookup {
    fn job_priority(
        &self,
        job_id: &str,
    ) -> impl Future<Output = Result<Option<u32>, String>> + Send;
}

/// What reconcile did for one change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reconciled {
    pub change_id: String,
    pub job_id: String,
    pub job_name: String,
    pub old_priority: u32,
    pub new_priority: u32,
    /// The verdict appended, or why the change was left unknown (the job could not be read).
    pub result: Result<(Verdict, Option<u32>), String>,
}

impl Reconciled {
    /// One line for the terminal (names cleaned).
    pub fn line(&self) -> String {
        let what = match &self.result {
            Ok((v, Some(p))) => format!("{} (priority now {p})", v.as_str()),
            Ok((v, None)) => v.as_str().to_string(),
            Err(e) => format!("left unknown: cannot read the job: {e}"),
        };
        crate::model::clean_text(&format!(
            "{} {} ({}) {} -> {}: {what}",
            self.change_id, self.job_name, self.job_id, self.old_priority, self.new_priority
        ))
    }
}

/// Decides every change of `log` with no outcome, appending one outcome record per decided
/// change (kind `outcome`, the change's id, `result = reconciled`, the reconciling operator).
/// A torn last line stops it (repair first). Two reconcilers at once may both append an
/// outcome for one change: the first one written is the one that counts.
pub async fn reconcile<L: JobLookup>(
    lookup: &L,
    log: &AuditLog,
    operator: &Operator,
) -> Result<Vec<Reconciled>, AuditError> {
    log.check_tail()?;
    let changes = audit::changes(&audit::read_records(log.path())?);
    let mut done = Vec::new();
    for (i, c) in changes.iter().enumerate() {
        if !c.outcome_unknown() {
            continue;
        }
        let intent = &c.intent;
        let later = changes[i + 1..]
            .iter()
            .any(|l| l.intent.job.id == intent.job.id);
        let mut entry = Reconciled {
            change_id: intent.change_id.clone(),
            job_id: intent.job.id.clone(),
            job_name: intent.job.name.clone(),
            old_priority: intent.old_priority,
            new_priority: intent.new_priority,
            result: Err(String::new()),
        };
        match lookup.job_priority(&intent.job.id).await {
            Err(e) => entry.result = Err(e),
            Ok(current) => {
                let verdict = Verdict::judge(current, later, intent.new_priority);
                log.append(outcome_record(intent, operator, verdict, current))?;
                entry.result = Ok((verdict, current));
            }
        }
        done.push(entry);
    }
    Ok(done)
}

fn outcome_record(
    intent: &AuditRecord,
    operator: &Operator,
    verdict: Verdict,
    observed: Option<u32>,
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
        observed_priority: observed,
    });
    r.policy = None;
    r.repair = None;
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::{AwsContext, JobRef};
    use std::collections::HashMap;

    struct Jobs(HashMap<String, Result<Option<u32>, String>>);

    impl JobLookup for Jobs {
        fn job_priority(
            &self,
            job_id: &str,
        ) -> impl Future<Output = Result<Option<u32>, String>> + Send {
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
            prev_hash: String::new(),
            hash: String::new(),
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
        let done = reconcile(&jobs, &log, &reconciler).await.unwrap();
        let verdicts: Vec<_> = done
            .iter()
            .map(|r| (r.job_id.as_str(), r.result.clone().map(|(v, _)| v)))
            .collect();
        assert_eq!(
            verdicts,
            [
                ("a", Ok(Verdict::Landed)),
                ("b", Ok(Verdict::DidNotLand)),
                ("c", Ok(Verdict::Undecidable)),
                ("e", Ok(Verdict::JobGone)),
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
            reconcile(&jobs, &log, &reconciler)
                .await
                .unwrap()
                .is_empty()
        );
    }

    #[tokio::test]
    async fn an_unreadable_job_is_left_unknown() {
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::new(dir.path().join("audit.jsonl"));
        log.append(intent("a", 1, 50)).unwrap();
        let jobs = Jobs(HashMap::from([(
            "a".to_string(),
            Err("throttled".to_string()),
        )]));
        let done = reconcile(&jobs, &log, &Operator::default()).await.unwrap();
        assert_eq!(done[0].result, Err("throttled".to_string()));
        assert!(done[0].line().contains("left unknown"));
        let changes = audit::changes(&audit::read_records(log.path()).unwrap());
        assert!(changes[0].outcome_unknown());
    }
}
