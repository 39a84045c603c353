//! The console's terminations and requeues: [`actions::terminate`] and [`actions::requeue`]
//! through the Batch API with the audit log — the one check again just before each intent,
//! one intent per job (several jobs linked by one id), read-back when an answer is lost.

use std::sync::Arc;

use quotatop_actions::{self as actions, ActContext, Ended, JobApi, JobTarget};
use quotatop_analysis::gate::{Act, Rules};
use quotatop_store::audit::{AwsContext, ChangeLog, Operator};
use quotatop_tui::effects::{
    ActJob, ActRequest, ActResult, BoxFuture, ChangeError, ChangeOutcome, JobActions, JobResult,
};

/// The real service: the actions crate with an API and the audit log.
pub struct ApiActions<A> {
    pub api: Arc<A>,
    pub log: ChangeLog,
    pub operator: Operator,
    pub aws: AwsContext,
    /// The change-record policy checked, as the intent records it.
    pub policy: Option<String>,
    /// The rules every door judges a change by (read-only, `[priority]`, the class policy).
    pub rules: Rules,
}

/// What became of a job, as the console shows it (the words are the actions crate's).
fn job_result(r: actions::JobResult, copy: Option<String>) -> JobResult {
    let words = r.result.describe();
    let detail = match copy {
        Some(c) => format!("{words}; the copy is job {c}"),
        None => words.clone(),
    };
    let result = match r.result {
        Ended::Recorded(o) => Ok(super::changes::outcome(o)),
        Ended::NotMade(_) => Err(ChangeError::Refused(words)),
        // The change may or may not have happened: not a success, and the words say what to do.
        Ended::Unknown(_) | Ended::AuditAfterCall(_) => Ok(ChangeOutcome::Failed { error: words }),
    };
    JobResult {
        job_id: r.job_id,
        job_name: r.job_name,
        result,
        detail: Some(detail),
    }
}

/// Every job of `req`, not made, for `why`.
fn not_made(req: &ActRequest, why: &str) -> Vec<JobResult> {
    req.jobs
        .iter()
        .map(|j| JobResult {
            job_id: j.id.clone(),
            job_name: j.name.clone(),
            result: Err(ChangeError::Refused(why.to_string())),
            detail: None,
        })
        .collect()
}

fn target(queue: &str, j: &ActJob) -> JobTarget {
    JobTarget {
        id: j.id.clone(),
        name: j.name.clone(),
        arn: j.arn.clone(),
        queue: queue.to_string(),
        share: j.share.clone(),
        class_tag: j.class_tag.clone(),
        priority: j.priority,
        preview: j.preview.clone(),
    }
}

impl<A: JobApi + Send + Sync + 'static> JobActions for ApiActions<A> {
    fn run(&self, req: ActRequest) -> BoxFuture<ActResult> {
        let api = Arc::clone(&self.api);
        let log = self.log.clone();
        let ctx = ActContext {
            operator: self.operator.clone(),
            aws: self.aws.clone(),
            justification: req.justification.clone(),
            change_record: req.change_record.clone(),
            door: crate::commands::policy::gate::door(self.rules.clone(), &self.operator),
            policy: self.policy.clone(),
        };
        Box::pin(async move {
            let targets: Vec<JobTarget> = req.jobs.iter().map(|j| target(&req.queue, j)).collect();
            let jobs = match req.act {
                Act::Requeue { retry_limit } => {
                    let mut out = Vec::with_capacity(targets.len());
                    for (t, j) in targets.iter().zip(&req.jobs) {
                        out.push(
                            match actions::requeue(api.as_ref(), &log, &ctx, t, retry_limit).await {
                                Ok(r) => job_result(
                                    actions::JobResult {
                                        job_id: j.id.clone(),
                                        job_name: j.name.clone(),
                                        change_id: Some(r.change_id),
                                        result: r.result,
                                    },
                                    r.copy,
                                ),
                                Err(e) => JobResult {
                                    job_id: j.id.clone(),
                                    job_name: j.name.clone(),
                                    result: Err(ChangeError::Refused(e.to_string())),
                                    detail: None,
                                },
                            },
                        );
                    }
                    out
                }
                Act::Terminate => {
                    match actions::terminate(api.as_ref(), &log, &ctx, &targets).await {
                        Ok(results) => results.into_iter().map(|r| job_result(r, None)).collect(),
                        Err(e) => not_made(&req, &e.to_string()),
                    }
                }
                Act::Priority { .. } => not_made(&req, "a priority change goes through `p`"),
            };
            let recorded = jobs.iter().any(|j| j.result.is_ok());
            ActResult {
                act: req.act,
                jobs,
                audit_log: recorded.then(|| log.to_string()),
            }
        })
    }
}

/// Terminations and requeues with several sources: each goes to the service of its queue's
/// source (the request's queue is a [`quotatop_model::queue_key`]), with the plain queue name.
pub struct ActionsBySource {
    pub services: Vec<(String, Arc<dyn JobActions>)>,
}

impl JobActions for ActionsBySource {
    fn run(&self, mut req: ActRequest) -> BoxFuture<ActResult> {
        let (source, name) = quotatop_model::split_queue_key(&req.queue);
        let (source, name) = (source.map(str::to_string), name.to_string());
        let service = self
            .services
            .iter()
            .find(|(n, _)| Some(n) == source.as_ref())
            .map(|(_, s)| Arc::clone(s));
        match service {
            Some(s) => {
                req.queue = name;
                s.run(req)
            }
            None => {
                let why = format!(
                    "queue {} belongs to no source of this console",
                    quotatop_model::clean_text(&req.queue)
                );
                let result = ActResult {
                    act: req.act,
                    jobs: not_made(&req, &why),
                    audit_log: None,
                };
                Box::pin(async move { result })
            }
        }
    }
}
