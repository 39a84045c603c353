//! The console's priority changes: [`actions::apply_change`] through the Batch API, with the
//! audit log, and the justification tag when asked for.

use std::sync::Arc;

use quotatop_actions::{self as actions, ChangeContext, JobTagger, PriorityApi};
use quotatop_analysis::gate::{Act, Refusal, Rules, Subject};
use quotatop_store::audit::{AwsContext, ChangeLog, Operator, Outcome};
use quotatop_tui::effects::{
    BoxFuture, ChangeError, ChangeOutcome, ChangeRequest, ChangeResult, ChangeRunner,
};

/// The audit log's outcome as the console shows it.
pub fn outcome(o: Outcome) -> ChangeOutcome {
    match o {
        Outcome::Succeeded { request_id } => ChangeOutcome::Succeeded { request_id },
        Outcome::Failed { error } => ChangeOutcome::Failed { error },
        Outcome::Reconciled { verdict, .. } => ChangeOutcome::Reconciled {
            verdict: verdict.as_str().to_string(),
        },
    }
}

/// The real runner: [`actions::apply_change`] with an API and the audit log (the file, or the
/// store's log for a console following a store).
pub struct ApiRunner<A> {
    pub api: Arc<A>,
    pub log: ChangeLog,
    pub operator: Operator,
    pub aws: AwsContext,
    pub read_only: bool,
    /// The change-record policy the dialog checks, as the intent records it.
    pub policy: Option<String>,
    /// Tags each changed job with the justification (`--tag-justification`).
    pub tagger: Option<Arc<dyn JobTagger>>,
    /// The rules every door judges a change by (`quotatop_analysis::gate::judge`): checked
    /// again here, with the operator's AWS principal, just before the intent is written; the
    /// class stamp goes into the intent.
    pub rules: Rules,
}

impl<A: PriorityApi + Send + Sync + 'static> ChangeRunner for ApiRunner<A> {
    fn apply(&self, req: ChangeRequest) -> BoxFuture<ChangeResult> {
        let api = Arc::clone(&self.api);
        let log = self.log.clone();
        let mut ctx = ChangeContext {
            operator: self.operator.clone(),
            aws: self.aws.clone(),
            queue: req.queue.clone(),
            justification: req.justification.clone(),
            change_record: req.change_record.clone(),
            read_only: self.read_only,
            policy: self.policy.clone(),
            class_policy: None,
            batch: req.batch.as_ref().map(|b| actions::Batch {
                id: b.id.clone(),
                preview: b.preview.clone(),
            }),
        };
        let tagger = self.tagger.clone();
        let rules = self.rules.clone();
        Box::pin(async move {
            let checked = judge(api.as_ref(), &rules, &mut ctx, &req).await;
            let result = match checked {
                Ok(stamp) => {
                    ctx.class_policy = stamp;
                    actions::apply_confirmed_change(
                        api.as_ref(),
                        &log,
                        &ctx,
                        &req.confirmed,
                        &req.preview,
                    )
                    .await
                    .map(outcome)
                    .map_err(|e| ChangeError::Refused(quotatop_model::error_chain(&e)))
                }
                Err(refusal) => Err(ChangeError::Refused(refusal.to_string())),
            };
            // Only a change that was made is tagged; a failed tag does not undo it.
            let mut warning = None;
            if let (Some(t), Ok(ChangeOutcome::Succeeded { .. })) = (&tagger, &result) {
                let (tags, head_warning) = actions::change_tags(
                    &req.preview,
                    &ctx.operator.user,
                    &ctx.justification,
                    &log,
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
                // A change refused before the intent was written is not in the log.
                audit_log: result.is_ok().then(|| log.to_string()),
                result,
                warning,
            }
        })
    }
}

/// The one check's answer to a console change (the refusal, or the audit's class stamp). The
/// operator's AWS principal is read first when not known yet and a class policy may name
/// operators by it.
async fn judge<A: PriorityApi>(
    api: &A,
    rules: &Rules,
    ctx: &mut ChangeContext,
    req: &ChangeRequest,
) -> Result<Option<quotatop_store::audit::ClassPolicy>, Refusal> {
    if ctx.operator.aws_principal.is_none() && crate::commands::policy::gate::needs_principal(rules)
    {
        ctx.operator.aws_principal = match api.caller_identity().await {
            Ok(p) => p,
            Err(why) => Some(format!("unknown ({why})")),
        };
    }
    let door = crate::commands::policy::gate::door(rules.clone(), &ctx.operator);
    let stamp = door.judge(
        Act::Priority {
            new: req.preview.new_priority,
        },
        Subject {
            share: &req.preview.share,
            class_tag: req.preview.class_tag.as_deref(),
            priority: req.preview.old_priority,
        },
        &ctx.justification,
        ctx.change_record.as_deref(),
    )?;
    Ok(stamp.map(crate::commands::policy::gate::stamp))
}

/// The console's changes with several sources: each goes to the runner of its queue's source
/// (the request's queue is a [`quotatop_model::queue_key`]), which gets the plain queue name and
/// records its source in the audit log.
pub struct BySource {
    pub runners: Vec<(String, Arc<dyn ChangeRunner>)>,
}

impl ChangeRunner for BySource {
    fn apply(&self, mut req: ChangeRequest) -> BoxFuture<ChangeResult> {
        let (source, name) = quotatop_model::split_queue_key(&req.queue);
        let (source, name) = (source.map(str::to_string), name.to_string());
        let runner = self
            .runners
            .iter()
            .find(|(n, _)| Some(n) == source.as_ref())
            .map(|(_, r)| Arc::clone(r));
        match runner {
            Some(r) => {
                req.queue = name;
                r.apply(req)
            }
            None => {
                let result = ChangeResult {
                    job_id: req.preview.job_id.clone(),
                    job_name: req.preview.job_name.clone(),
                    new_priority: req.preview.new_priority,
                    result: Err(ChangeError::Refused(format!(
                        "queue {} belongs to no source of this console",
                        quotatop_model::clean_text(&req.queue)
                    ))),
                    warning: None,
                    audit_log: None,
                };
                Box::pin(async move { result })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Remembers the queue of each request it is given.
    struct Seen(Mutex<Vec<String>>, &'static str);

    impl ChangeRunner for Seen {
        fn apply(&self, req: ChangeRequest) -> BoxFuture<ChangeResult> {
            if let Ok(mut seen) = self.0.lock() {
                seen.push(format!("{}:{}", self.1, req.queue));
            }
            let result = ChangeResult {
                job_id: req.preview.job_id.clone(),
                job_name: req.preview.job_name.clone(),
                new_priority: req.preview.new_priority,
                result: Ok(ChangeOutcome::Succeeded { request_id: None }),
                warning: None,
                audit_log: None,
            };
            Box::pin(async move { result })
        }
    }

    fn request(queue: &str) -> ChangeRequest {
        let mut q = quotatop_analysis::fixture::queue(&[(
            "a",
            "ml.g5.12xlarge",
            2,
            quotatop_model::SharingConfig::lend(),
        )]);
        q.jobs = vec![quotatop_analysis::fixture::job(
            "x",
            "a",
            "ml.g5.12xlarge",
            1,
            quotatop_model::JobStatus::Runnable,
            10,
            1_000,
        )];
        let preview = quotatop_analysis::preview::preview(&q, "id-x", 20).unwrap();
        ChangeRequest {
            queue: queue.to_string(),
            justification: "test".into(),
            change_record: None,
            confirmed: preview.clone(),
            preview,
            batch: None,
        }
    }

    /// A change goes to its queue's source with the plain queue name; a queue of no source of
    /// this console is refused, never sent to another source.
    #[tokio::test]
    async fn each_change_goes_to_its_queues_source() {
        let seen = Arc::new(Seen(Mutex::new(Vec::new()), "eu"));
        let us = Arc::new(Seen(Mutex::new(Vec::new()), "us"));
        let router = BySource {
            runners: vec![
                ("us".into(), us.clone() as Arc<dyn ChangeRunner>),
                ("eu".into(), seen.clone() as Arc<dyn ChangeRunner>),
            ],
        };
        let done = router.apply(request("ml-training@eu")).await;
        assert!(done.result.is_ok());
        assert_eq!(*seen.0.lock().unwrap(), ["eu:ml-training"]);
        assert!(us.0.lock().unwrap().is_empty());
        let refused = router.apply(request("ml-training@ap")).await;
        assert!(
            matches!(&refused.result, Err(ChangeError::Refused(why)) if why.contains("no source")),
            "{refused:?}"
        );
        let refused = router.apply(request("ml-training")).await;
        assert!(refused.result.is_err());
    }
}
