//! Terminate and requeue against a fake API: refusals before any intent, the read-back of a
//! lost answer, the copy found by its tags.

use std::collections::BTreeMap;
use std::sync::Mutex;

use quotatop_analysis::gate::{Door, Rules};
use quotatop_aws::batch::{JobSpec, SubmitRequest, SubmittedJob};
use quotatop_model::JobStatus;
use quotatop_store::audit::{AuditLog, AwsContext, Operator, Outcome, Verdict, read_records};

use crate::{ActContext, ActError, ApiFailure, Ended, JobApi, JobLookup, JobTarget};

#[derive(Default)]
struct Fake {
    /// Whether TerminateServiceJob lands, and whether its answer is lost.
    terminate_lands: bool,
    terminate_answer_lost: bool,
    payload: Option<String>,
    submitted: Mutex<Vec<SubmitRequest>>,
    terminated: Mutex<Vec<String>>,
}

impl JobLookup for Fake {
    async fn job_priority(&self, _: &str) -> Result<Option<u32>, ApiFailure> {
        Ok(Some(1))
    }
    async fn job_state(&self, id: &str) -> Result<Option<(JobStatus, bool)>, ApiFailure> {
        let done = self.terminated.lock().unwrap().iter().any(|t| t == id);
        Ok(Some(if done {
            (JobStatus::Failed, true)
        } else {
            (JobStatus::Running, false)
        }))
    }
    async fn jobs_named(&self, _: &str, _: &str) -> Result<Vec<String>, ApiFailure> {
        let n = self.submitted.lock().unwrap().len();
        Ok((0..n).map(|i| format!("copy-{i}")).collect())
    }
    async fn job_tags(&self, id: &str) -> Result<Option<BTreeMap<String, String>>, ApiFailure> {
        let i: usize = id.trim_start_matches("copy-").parse().unwrap_or(usize::MAX);
        Ok(self
            .submitted
            .lock()
            .unwrap()
            .get(i)
            .map(|r| r.tags.clone()))
    }
}

impl JobApi for Fake {
    async fn terminate_job(&self, id: &str, _: &str) -> Result<Option<String>, ApiFailure> {
        if self.terminate_lands {
            self.terminated.lock().unwrap().push(id.to_string());
        }
        if self.terminate_answer_lost {
            return Err(ApiFailure("connection closed".into()));
        }
        Ok(Some("req".into()))
    }
    async fn job_spec(&self, id: &str) -> Result<Option<JobSpec>, ApiFailure> {
        Ok(Some(JobSpec {
            id: id.to_string(),
            arn: format!("arn:{id}"),
            name: "train".into(),
            queue: "arn:queue".into(),
            share: Some("s".into()),
            priority: Some(1),
            payload: self.payload.clone(),
            job_type: Some("SAGEMAKER_TRAINING".into()),
            retry_strategy: None,
            timeout_s: Some(3600),
            tags: BTreeMap::from([("team".into(), "vision".into())]),
            preemption_retries: None,
            status: Some(JobStatus::Running),
            status_reason: None,
            is_terminated: false,
        }))
    }
    async fn submit_job(&self, req: &SubmitRequest) -> Result<SubmittedJob, ApiFailure> {
        let mut s = self.submitted.lock().unwrap();
        s.push(req.clone());
        // Every submission's answer is lost.
        Err(ApiFailure("connection closed".into()))
    }
}

fn target() -> JobTarget {
    JobTarget {
        id: "job-1".into(),
        name: "train".into(),
        arn: "arn:job-1".into(),
        queue: "q".into(),
        share: "s".into(),
        class_tag: None,
        priority: 1,
        preview: "p".into(),
    }
}

fn ctx(read_only: bool) -> ActContext {
    ActContext {
        operator: Operator {
            user: "u".into(),
            host: "h".into(),
            ..Default::default()
        },
        aws: AwsContext::default(),
        justification: "a long enough justification".into(),
        change_record: None,
        door: Door {
            rules: Rules {
                read_only: read_only.then(|| "read-only (test)".to_string()),
                ..Rules::default()
            },
            who: vec!["u".into()],
        },
        policy: None,
    }
}

fn temp() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    (dir, path)
}

fn block<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(f)
}

#[test]
fn a_lost_terminate_answer_is_read_back_landed() {
    let (_d, path) = temp();
    let api = Fake {
        terminate_lands: true,
        terminate_answer_lost: true,
        ..Fake::default()
    };
    let log = AuditLog::new(&path).into();
    let r = block(crate::terminate(&api, &log, &ctx(false), &[target()])).unwrap();
    assert!(r[0].result.took_effect(), "{:?}", r[0].result);
    let recs = read_records(&path).unwrap();
    assert_eq!(recs.len(), 2);
    assert!(matches!(
        recs[1].1.outcome,
        Some(Outcome::Reconciled {
            verdict: Verdict::Landed,
            ..
        })
    ));
}

#[test]
fn a_lost_answer_of_a_call_that_did_not_land_is_a_failure() {
    let (_d, path) = temp();
    let api = Fake {
        terminate_lands: false,
        terminate_answer_lost: true,
        ..Fake::default()
    };
    let log = AuditLog::new(&path).into();
    let r = block(crate::terminate(&api, &log, &ctx(false), &[target()])).unwrap();
    assert!(!r[0].result.took_effect());
    assert!(matches!(
        r[0].result,
        Ended::Recorded(Outcome::Failed { .. })
    ));
}

#[test]
fn several_jobs_share_one_run_id_and_the_gate_refuses_before_any_intent() {
    let (_d, path) = temp();
    let api = Fake {
        terminate_lands: true,
        ..Fake::default()
    };
    let log = AuditLog::new(&path).into();
    let mut two = target();
    two.id = "job-2".into();
    let r = block(crate::terminate(
        &api,
        &log,
        &ctx(false),
        &[target(), two.clone()],
    ))
    .unwrap();
    assert_eq!(r.len(), 2);
    let recs = read_records(&path).unwrap();
    let runs: Vec<_> = recs
        .iter()
        .map(|(_, r)| r.action.as_ref().unwrap().run_id.clone().unwrap())
        .collect();
    assert_eq!(recs.len(), 4);
    assert!(runs.iter().all(|r| *r == runs[0]));
    // Read-only: refused, nothing written, nothing called.
    let (_d, path) = temp();
    let log = AuditLog::new(&path).into();
    let err = block(crate::terminate(&api, &log, &ctx(true), &[target()])).unwrap_err();
    assert!(matches!(err, ActError::Refused(_)), "{err}");
    assert!(!path.exists());
}

#[test]
fn a_job_whose_payload_cannot_be_read_is_refused_before_any_intent() {
    let (_d, path) = temp();
    let api = Fake::default();
    let log = AuditLog::new(&path).into();
    let err = block(crate::requeue(&api, &log, &ctx(false), &target(), 2)).unwrap_err();
    assert!(
        matches!(err, ActError::CannotRequeue(ref w) if w.contains("serviceRequestPayload")),
        "{err}"
    );
    assert!(!path.exists());
    assert!(api.submitted.lock().unwrap().is_empty());
}

#[test]
fn a_lost_submit_answer_finds_the_copy_by_its_tags_and_terminates_the_original() {
    let (_d, path) = temp();
    let api = Fake {
        terminate_lands: true,
        payload: Some("{\"TrainingJobName\":\"t\"}".into()),
        ..Fake::default()
    };
    let log = AuditLog::new(&path).into();
    let done = block(crate::requeue(&api, &log, &ctx(false), &target(), 2)).unwrap();
    assert!(done.result.took_effect(), "{:?}", done.result);
    assert_eq!(done.copy.as_deref(), Some("copy-0"));
    let sub = api.submitted.lock().unwrap();
    assert_eq!(sub.len(), 1);
    assert_eq!(sub[0].preemption_retries, Some(2));
    assert_eq!(
        sub[0].tags.get(crate::REPLACES_TAG).map(String::as_str),
        Some("job-1")
    );
    assert_eq!(sub[0].tags.get("team").map(String::as_str), Some("vision"));
    assert_eq!(
        sub[0].client_token,
        Some(crate::client_token(&done.change_id))
    );
    assert_eq!(sub[0].timeout_s, Some(3600));
    assert_eq!(api.terminated.lock().unwrap().as_slice(), ["job-1"]);
}
