//! The drill's two writing calls, each between an intent record (on disk before the call) and
//! an outcome record in the audit log, with the operator: SubmitServiceJob and
//! TerminateServiceJobs.

use anyhow::Context;

use quotatop_aws::batch::{BatchClient, SubmitRequest, SubmittedJob, TerminateResult};
use quotatop_store::audit::{
    Action, AuditLog, AuditRecord, AwsContext, ChangeOrigin, JobRef, Operator, Outcome,
};

/// Who runs the drill, on which AWS, which run: what every record of it carries.
#[derive(Debug, Clone)]
pub struct DrillAudit {
    pub log: AuditLog,
    pub operator: Operator,
    pub aws: AwsContext,
    pub queue: String,
    pub run_id: String,
    /// Per share, the class policy the drill's jobs there were checked against (the policy's
    /// hash, the class before and after), stamped on each of its records.
    pub class_policy: std::collections::BTreeMap<String, quotatop_store::audit::ClassPolicy>,
}

impl DrillAudit {
    /// The operator with the AWS principal the calls are made as (or why it is unknown).
    pub async fn new(
        log: AuditLog,
        client: &BatchClient,
        queue: &str,
        run_id: &str,
    ) -> anyhow::Result<Self> {
        let mut operator = Operator::current();
        operator.aws_principal = Some(match client.caller_identity().await {
            Ok(arn) => arn,
            Err(why) => format!("unknown ({why})"),
        });
        let source = client.source().clone();
        Ok(Self {
            log,
            operator,
            aws: AwsContext::of(&source, None),
            queue: queue.to_string(),
            run_id: run_id.to_string(),
            class_policy: std::collections::BTreeMap::new(),
        })
    }

    /// These records stamped, per share, with the class policy the drill was checked against.
    pub fn stamped(
        mut self,
        class_policy: std::collections::BTreeMap<String, quotatop_store::audit::ClassPolicy>,
    ) -> Self {
        self.class_policy = class_policy;
        self
    }

    /// The stamp of a record of `share`: its jobs' classes; a record of no one share (a
    /// termination of several jobs) carries the policy's hash alone.
    fn class_stamp(&self, share: &str) -> Option<quotatop_store::audit::ClassPolicy> {
        self.class_policy.get(share).cloned().or_else(|| {
            self.class_policy
                .values()
                .next()
                .map(|s| quotatop_store::audit::ClassPolicy {
                    hash: s.hash.clone(),
                    class_before: None,
                    class_after: None,
                    approved_by: None,
                })
        })
    }

    fn record(&self, change_id: &str, share: &str, job: JobRef, action: Action) -> AuditRecord {
        let origin = ChangeOrigin {
            operator: self.operator.clone(),
            aws: self.aws.clone(),
            queue: self.queue.clone(),
            justification: format!("preemption drill {}", self.run_id),
            change_record: None,
            policy: None,
            class_policy: self.class_stamp(share),
            batch_id: None,
        };
        AuditRecord::drill_intent(
            origin,
            change_id.to_string(),
            share.to_string(),
            job,
            action,
        )
    }

    /// SubmitServiceJob, audited. The intent names the job and what it asks for; the outcome
    /// adds the job id the service gave it.
    pub async fn submit(
        &self,
        client: &BatchClient,
        req: &SubmitRequest,
        detail: String,
    ) -> anyhow::Result<SubmittedJob> {
        let change_id = quotatop_store::audit::new_change_id();
        let _in_flight = self
            .log
            .begin_change(&change_id)
            .context("audit log, before SubmitServiceJob")?;
        let action = Action {
            call: "SubmitServiceJob".into(),
            target: req.job_name.clone(),
            detail,
            run_id: Some(self.run_id.clone()),
        };
        let job = JobRef {
            id: String::new(),
            name: req.job_name.clone(),
            arn: String::new(),
        };
        let mut record = self.record(&change_id, &req.share, job, action);
        self.log
            .append(record.clone())
            .context("audit log, before SubmitServiceJob")?;
        let result = client.submit_service_job(req).await;
        let outcome = match &result {
            Ok(j) => {
                record.job.id = j.id.clone();
                record.job.arn = j.arn.clone();
                Outcome::Succeeded {
                    request_id: Some(j.request_id.clone()).filter(|r| !r.is_empty()),
                }
            }
            Err(e) => Outcome::Failed {
                error: quotatop_model::clean_text(&e.to_string()),
            },
        };
        self.log
            .append(AuditRecord::outcome_of(record, outcome))
            .context("audit log, after SubmitServiceJob")?;
        Ok(result?)
    }

    /// TerminateServiceJobs of `ids`, audited as one change: the intent lists the jobs, the
    /// outcome the ones the service could not terminate.
    pub async fn terminate(
        &self,
        client: &BatchClient,
        ids: &[String],
        reason: &str,
    ) -> anyhow::Result<TerminateResult> {
        let change_id = quotatop_store::audit::new_change_id();
        let _in_flight = self
            .log
            .begin_change(&change_id)
            .context("audit log, before TerminateServiceJobs")?;
        let action = Action {
            call: "TerminateServiceJobs".into(),
            target: format!(
                "{} drill job{}",
                ids.len(),
                if ids.len() == 1 { "" } else { "s" }
            ),
            detail: format!("{reason}: {}", ids.join(", ")),
            run_id: Some(self.run_id.clone()),
        };
        let job = JobRef {
            id: String::new(),
            name: String::new(),
            arn: String::new(),
        };
        let record = self.record(&change_id, "", job, action);
        self.log
            .append(record.clone())
            .context("audit log, before TerminateServiceJobs")?;
        let result = client.terminate_service_jobs(ids, reason).await;
        let outcome = match &result {
            Ok(r) if r.errors.is_empty() => Outcome::Succeeded {
                request_id: r.request_ids.first().cloned().filter(|s| !s.is_empty()),
            },
            Ok(r) => Outcome::Failed {
                error: r
                    .errors
                    .iter()
                    .map(|e| format!("{}: {} {}", e.job, e.code, e.message))
                    .collect::<Vec<_>>()
                    .join("; "),
            },
            Err(e) => Outcome::Failed {
                error: quotatop_model::clean_text(&e.to_string()),
            },
        };
        self.log
            .append(AuditRecord::outcome_of(record, outcome))
            .context("audit log, after TerminateServiceJobs")?;
        Ok(result?)
    }
}
