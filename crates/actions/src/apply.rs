//! Carrying out a confirmed change: intent record (fsynced, or committed in a store), API
//! call, outcome record — to a file or a store's audit log, by the same code.

use std::future::Future;

use quotatop_store::audit::{
    AuditRecord, AwsContext, ChangeLog, ChangeOrigin, JobRef, Operator, Outcome,
};

use super::{ActionError, Preview};

/// How the API call failed, as the operator should read it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ApiFailure(pub String);

/// The one API call a priority change needs; implemented by the Batch client (and by fakes in
/// tests).
pub trait PriorityApi {
    /// Sets the job's `schedulingPriority`; returns the request id when the service gave one.
    fn update_priority(
        &self,
        job_id: &str,
        priority: u32,
    ) -> impl Future<Output = Result<Option<String>, ApiFailure>> + Send;

    /// The job's scheduling priority as the service has it now, read just before the change so
    /// that concurrent changes each record what they replaced; `Ok(None)` when not known (the
    /// preview's priority is recorded then).
    fn current_priority(
        &self,
        _job_id: &str,
    ) -> impl Future<Output = Result<Option<u32>, ApiFailure>> + Send {
        std::future::ready(Ok(None))
    }

    /// The AWS principal the change is made as (STS GetCallerIdentity's ARN); `Ok(None)` when
    /// this API has no notion of one, `Err(reason)` when it could not be asked.
    fn caller_identity(&self) -> impl Future<Output = Result<Option<String>, ApiFailure>> + Send {
        std::future::ready(Ok(None))
    }
}

/// Everything the audit record needs besides the preview.
#[derive(Debug, Clone)]
pub struct ChangeContext {
    pub operator: Operator,
    pub aws: AwsContext,
    pub queue: String,
    pub justification: String,
    pub change_record: Option<String>,
    pub read_only: bool,
    /// The change-record policy checked, and where it came from (kept in the intent).
    pub policy: Option<String>,
    /// The class policy checked: its hash and the job's class before and after (kept in the
    /// intent).
    pub class_policy: Option<quotatop_store::audit::ClassPolicy>,
    /// Set when the change is one of several made as one action (a priority change of every
    /// marked job, `set-priority JOB JOB…`): its id links their intents.
    pub batch: Option<Batch>,
}

/// One change of several made as one action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    /// The id every intent of the action records ([`AuditRecord::batch_id`]).
    pub id: String,
    /// What this change's intent records as its preview instead of the job's own: its move
    /// and the combined effect of the whole action (the engine placing every change at once).
    pub preview: String,
}

/// The AWS principal the API names, or why it is unknown (an unknown principal is no reason to
/// refuse a change: the record says why).
pub(crate) fn principal_or_why<E: std::fmt::Display>(
    asked: Result<Option<String>, E>,
) -> Option<String> {
    match asked {
        Ok(p) => p,
        Err(why) => Some(format!("unknown ({why})")),
    }
}

impl ChangeContext {
    /// Where a change in this context comes from, made by `operator` (this context's operator
    /// with the AWS principal found): what its intent records besides the change itself.
    pub(crate) fn origin(&self, operator: Operator) -> ChangeOrigin {
        ChangeOrigin {
            operator,
            aws: self.aws.clone(),
            queue: self.queue.clone(),
            justification: self.justification.clone(),
            change_record: self.change_record.clone(),
            policy: self.policy.clone(),
            class_policy: self.class_policy.clone(),
            batch_id: self.batch.as_ref().map(|b| b.id.clone()),
        }
    }
}

/// Applies a validated, previewed and confirmed change. The job's current priority is read
/// first (the intent's `old_priority`); the intent, with a random change id, is on disk before
/// the API is called; the outcome (same change id; success with request id, or the API's
/// error) is written after. An API failure is an `Ok(Outcome::Failed)`: the change was handled
/// and recorded.
pub async fn apply_change<A: PriorityApi>(
    api: &A,
    log: &ChangeLog,
    ctx: &ChangeContext,
    preview: &Preview,
) -> Result<Outcome, ActionError> {
    apply_confirmed_change(api, log, ctx, preview, preview).await
}

/// [`apply_change`] where the preview the operator confirmed (`confirmed`) and the one computed
/// again just before the call (`at_call`) may differ in figures that do not change the decision
/// (the queue's length behind the job, hours at risk growing while the preview was read). The
/// intent records exactly what was confirmed; the outcome record, what was true at the call,
/// marked `at the call:` when it differs.
pub async fn apply_confirmed_change<A: PriorityApi>(
    api: &A,
    log: &ChangeLog,
    ctx: &ChangeContext,
    confirmed: &Preview,
    at_call: &Preview,
) -> Result<Outcome, ActionError> {
    let preview = at_call;
    if ctx.read_only {
        return Err(ActionError::ReadOnly);
    }
    // Held from before the live priority is read until the outcome is written: changes to one
    // job are made, and logged, one at a time, so the log read in order is the job's history.
    let _job = lock_job(log, &preview.job_id)
        .await
        .map_err(ActionError::AuditBeforeCall)?;
    // A failed read is not a reason to refuse the change: the preview's priority stands in.
    let observed = api.current_priority(&preview.job_id).await.ok().flatten();
    // Nor is an unknown principal: the record says why it is unknown.
    let mut operator = ctx.operator.clone();
    if operator.aws_principal.is_none() {
        operator.aws_principal = principal_or_why(api.caller_identity().await);
    }
    let change_id = quotatop_store::audit::new_change_id();
    // Held from before the intent until after the outcome: `audit reconcile` leaves a change
    // alone while its writer lives.
    let _in_flight = log
        .begin_change(&change_id)
        .map_err(ActionError::AuditBeforeCall)?;
    let record = AuditRecord::priority_intent(
        ctx.origin(operator),
        change_id,
        preview.share.clone(),
        JobRef {
            id: preview.job_id.clone(),
            name: preview.job_name.clone(),
            arn: preview.job_arn.clone(),
        },
        observed.unwrap_or(preview.old_priority),
        preview.new_priority,
        ctx.batch
            .as_ref()
            .map_or_else(|| confirmed.summary(), |b| b.preview.clone()),
    );
    append(log, record.clone())
        .await
        .map_err(ActionError::AuditBeforeCall)?;
    let outcome = match api
        .update_priority(&preview.job_id, preview.new_priority)
        .await
    {
        Ok(request_id) => Outcome::Succeeded { request_id },
        Err(ApiFailure(error)) => Outcome::Failed { error },
    };
    let mut record = AuditRecord::outcome_of(record, outcome.clone());
    // A batch's preview is of the whole action; the job's own at the call would not compare.
    let now = at_call.summary();
    if ctx.batch.is_none() && now != record.preview {
        record.preview = format!("at the call: {now}");
    }
    append(log, record)
        .await
        .map_err(ActionError::AuditAfterCall)?;
    Ok(outcome)
}

/// [`ChangeLog::append`] on the blocking pool: an append may wait up to the lock timeout (30 s
/// by default) for another writer's lock, which must not hold up a runtime worker (the
/// console's other work, a poller sharing the runtime).
async fn append(
    log: &ChangeLog,
    record: AuditRecord,
) -> Result<AuditRecord, quotatop_store::audit::AuditError> {
    let log = log.clone();
    let name = log.to_string();
    tokio::task::spawn_blocking(move || log.append(record))
        .await
        .unwrap_or_else(|e| {
            Err(quotatop_store::audit::AuditError::Io {
                path: name,
                source: std::io::Error::other(format!("the append did not finish: {e}")),
            })
        })
}

/// How often a change waiting for its job's lock tries it again.
const JOB_LOCK_RETRY: std::time::Duration = std::time::Duration::from_millis(20);

/// Takes the lock of priority changes to `job_id` ([`ChangeLog::try_lock_job`]), waiting
/// (without blocking the runtime) up to the log's lock timeout.
async fn lock_job(
    log: &ChangeLog,
    job_id: &str,
) -> Result<quotatop_store::audit::QueueGuard, quotatop_store::audit::AuditError> {
    let start = std::time::Instant::now();
    loop {
        if let Some(guard) = log.try_lock_job(job_id)? {
            return Ok(guard);
        }
        if start.elapsed() >= log.lock_timeout() {
            return Err(quotatop_store::audit::AuditError::LockTimeout {
                path: format!("{log} (job {job_id})"),
                secs: log.lock_timeout().as_secs_f64(),
                holder: "another change to the job".to_string(),
            });
        }
        tokio::time::sleep(JOB_LOCK_RETRY).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Prediction;
    use quotatop_store::audit::{AuditLog, RecordKind, read_records};
    use std::sync::Mutex;

    struct Fake {
        result: Result<Option<String>, ApiFailure>,
        calls: Mutex<Vec<(String, u32)>>,
        log_path: std::path::PathBuf,
    }

    impl Fake {
        fn new(result: Result<Option<String>, ApiFailure>, log_path: &std::path::Path) -> Self {
            Self {
                result,
                calls: Mutex::new(Vec::new()),
                log_path: log_path.to_path_buf(),
            }
        }
    }

    impl PriorityApi for Fake {
        fn update_priority(
            &self,
            job_id: &str,
            priority: u32,
        ) -> impl Future<Output = Result<Option<String>, ApiFailure>> + Send {
            // The intent must already be on disk when the API is called.
            let intents = read_records(&self.log_path).map(|r| r.len()).unwrap_or(0);
            if let Ok(mut c) = self.calls.lock() {
                c.push((format!("{job_id}@{intents}"), priority));
            }
            let r = self.result.clone();
            async move { r }
        }

        fn caller_identity(
            &self,
        ) -> impl Future<Output = Result<Option<String>, ApiFailure>> + Send {
            // STS unreachable: the change must still go ahead, saying why the principal is
            // unknown.
            std::future::ready(Err(ApiFailure("no answer from STS".to_string())))
        }
    }

    fn preview() -> Preview {
        Preview {
            job_id: "job-1".into(),
            job_name: "train".into(),
            job_arn: "arn:job-1".into(),
            share: "s".into(),
            old_priority: 1,
            new_priority: 50,
            old_position: Some(3),
            new_position: Some(1),
            queue_length: 3,
            in_share_preemption: false,
            prediction: Prediction::WaitsForCapacity,
            preemptions: Default::default(),
            awaits_release: false,
            class_tag: None,
        }
    }

    fn ctx(read_only: bool) -> ChangeContext {
        ChangeContext {
            operator: Operator {
                user: "u".into(),
                host: "h".into(),
                ..Default::default()
            },
            aws: AwsContext::default(),
            queue: "q".into(),
            justification: "incident 42".into(),
            change_record: None,
            read_only,
            policy: Some("large_change=1000 protected_from=9000 (test)".into()),
            class_policy: None,
            batch: None,
        }
    }

    fn temp() -> (tempfile::TempDir, std::path::PathBuf) {
        // Removed when the test ends: the directory is held beside the path.
        let dir = tempfile::Builder::new()
            .prefix("quotatop-apply-")
            .tempdir()
            .unwrap();
        let path = dir.path().join("audit.jsonl");
        (dir, path)
    }

    fn block<F: Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
            .block_on(f)
    }

    #[test]
    fn success_writes_intent_before_the_call_and_outcome_after() {
        let (_dir, path) = temp();
        let api = Fake::new(Ok(Some("req-1".into())), &path);
        let out = block(apply_change(
            &api,
            &AuditLog::new(&path).into(),
            &ctx(false),
            &preview(),
        ))
        .unwrap();
        assert_eq!(
            out,
            Outcome::Succeeded {
                request_id: Some("req-1".into())
            }
        );
        assert_eq!(
            api.calls.lock().unwrap().as_slice(),
            &[("job-1@1".to_string(), 50)]
        );
        let recs = read_records(&path).unwrap();
        assert_eq!(recs.len(), 2);
        assert_eq!(recs[0].1.kind, RecordKind::Intent);
        assert_eq!(recs[1].1.kind, RecordKind::Outcome);
        assert_eq!(recs[1].1.change_id, recs[0].1.change_id);
        assert_eq!(recs[0].1.justification, "incident 42");
        assert!(recs[0].1.preview.contains("position 3 -> 1"));
        assert_eq!(
            recs[0].1.operator.aws_principal.as_deref(),
            Some("unknown (no answer from STS)")
        );
        assert_eq!(
            recs[0].1.policy.as_deref(),
            Some("large_change=1000 protected_from=9000 (test)")
        );
    }

    #[test]
    fn the_intent_records_the_preview_confirmed_and_the_outcome_the_one_at_the_call() {
        let (_dir, path) = temp();
        let api = Fake::new(Ok(Some("req-1".into())), &path);
        let confirmed = preview();
        // Read a while later: a job arrived behind it; the decision is the same.
        let mut at_call = preview();
        at_call.queue_length = 4;
        assert_ne!(confirmed.summary(), at_call.summary());
        block(apply_confirmed_change(
            &api,
            &AuditLog::new(&path).into(),
            &ctx(false),
            &confirmed,
            &at_call,
        ))
        .unwrap();
        let recs = read_records(&path).unwrap();
        assert_eq!(recs[0].1.preview, confirmed.summary());
        assert_eq!(
            recs[1].1.preview,
            format!("at the call: {}", at_call.summary())
        );
        // The same preview: both records say it, unmarked.
        let (_dir, path) = temp();
        let api = Fake::new(Ok(None), &path);
        block(apply_change(
            &api,
            &AuditLog::new(&path).into(),
            &ctx(false),
            &confirmed,
        ))
        .unwrap();
        let recs = read_records(&path).unwrap();
        assert_eq!(recs[0].1.preview, confirmed.summary());
        assert_eq!(recs[1].1.preview, confirmed.summary());
    }

    /// A change waiting for the audit log's lock (held 600 ms by another writer) leaves the
    /// runtime free: on a one-thread runtime a ticker keeps ticking meanwhile (a blocking wait
    /// on the worker starved it to no tick at all).
    #[test]
    fn waiting_for_the_audit_lock_does_not_block_the_runtime() {
        let (_dir, path) = temp();
        let log = AuditLog::new(&path);
        let held = log.lock().unwrap();
        let release = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(600));
            drop(held);
        });
        let api = Fake::new(Ok(None), &path);
        let ticks = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let out = rt.block_on(async {
            let t = ticks.clone();
            let ticker = tokio::spawn(async move {
                loop {
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                    t.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            });
            let log: ChangeLog = log.into();
            let out = apply_change(&api, &log, &ctx(false), &preview()).await;
            ticker.abort();
            out
        });
        release.join().unwrap();
        assert!(out.is_ok(), "{out:?}");
        let n = ticks.load(std::sync::atomic::Ordering::Relaxed);
        assert!(n >= 20, "the runtime ticked {n} times in 600 ms of waiting");
    }

    #[test]
    fn api_failure_is_recorded_as_the_outcome() {
        let (_dir, path) = temp();
        let api = Fake::new(
            Err(ApiFailure("ClientException: job already finished".into())),
            &path,
        );
        let out = block(apply_change(
            &api,
            &AuditLog::new(&path).into(),
            &ctx(false),
            &preview(),
        ))
        .unwrap();
        assert!(matches!(out, Outcome::Failed { ref error } if error.contains("already finished")));
        let recs = read_records(&path).unwrap();
        assert_eq!(recs[1].1.outcome, Some(out));
    }

    #[test]
    fn read_only_refuses_without_touching_log_or_api() {
        let (_dir, path) = temp();
        let api = Fake::new(Ok(None), &path);
        let err = block(apply_change(
            &api,
            &AuditLog::new(&path).into(),
            &ctx(true),
            &preview(),
        ))
        .unwrap_err();
        assert!(matches!(err, ActionError::ReadOnly));
        assert!(api.calls.lock().unwrap().is_empty());
        assert!(!path.exists());
    }

    #[test]
    fn no_api_call_when_the_intent_cannot_be_written() {
        let (_dir, path) = temp();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "{garbage\n").unwrap();
        let api = Fake::new(Ok(None), &path);
        let err = block(apply_change(
            &api,
            &AuditLog::new(&path).into(),
            &ctx(false),
            &preview(),
        ))
        .unwrap_err();
        assert!(matches!(err, ActionError::AuditBeforeCall(_)));
        assert!(api.calls.lock().unwrap().is_empty());
    }
}
