//! Carrying out a confirmed quota-share plan (`quotatop shares apply`): per call, an intent
//! record (fsynced) in the audit log, the API call, an outcome record; the first failure stops
//! the run, and the report says what was applied, what failed and what was not attempted.
//!
//! The read-back's judgements (is a share as planned, did a call land) are in `verdict.rs`;
//! the Batch client's side of [`SharesApi`] in `live.rs`.

mod live;
mod verdict;

use std::future::Future;

use quotatop_analysis::shares_plan::Step;
use quotatop_model::QuotaShare;
use quotatop_store::audit::{Action, AuditRecord, ChangeLog, Operator, Outcome};

use super::{ActionError, ApiFailure};
use crate::apply::principal_or_why;
pub use live::LiveShares;
use verdict::read_back;
pub use verdict::{changed_since_plan, judge, landed, verdict_words};

/// The calls a share plan needs; implemented by the Batch client ([`LiveShares`]) and by fakes.
pub trait SharesApi {
    /// Makes the step's call; returns the request id when the service gave one.
    fn run_step(
        &self,
        step: &Step,
    ) -> impl Future<Output = Result<Option<String>, ApiFailure>> + Send;

    /// The AWS principal the change is made as; `Ok(None)` when not known here.
    fn caller_identity(&self) -> impl Future<Output = Result<Option<String>, ApiFailure>> + Send {
        std::future::ready(Ok(None))
    }

    /// The queue's share `name` as it is now (`None`: no such share), read to see what a
    /// failed call did and whether a share changed since the plan.
    fn read_share(
        &self,
        name: &str,
    ) -> impl Future<Output = Result<Option<QuotaShare>, ApiFailure>> + Send;
}

/// Everything the audit records need besides the steps: the one change context of every
/// audited change, and the run that groups this plan's records.
#[derive(Debug, Clone)]
pub struct SharesContext {
    pub change: crate::ChangeContext,
    /// Groups this run's records (`audit list` shows it).
    pub run_id: String,
}

/// What happened to each step.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ApplyReport {
    /// The steps called, with what happened, in order (only the last can have failed): the
    /// API's answer, or, when it answered with an error, what the share read back showed.
    pub done: Vec<(Step, Outcome)>,
    /// The steps not attempted because an earlier one failed (or its intent could not be
    /// written).
    pub not_attempted: Vec<Step>,
    /// Why the run stopped before calling a step: the audit log refused its intent, or refused
    /// an outcome after the call.
    pub audit_error: Option<String>,
    /// The step not called because its share changed since the plan (or could not be read
    /// just before the call), and what changed; it is also in `not_attempted`.
    pub changed: Option<(Step, String)>,
}

impl ApplyReport {
    /// This report, the run stopped before `rest` (not attempted).
    fn stopped(mut self, rest: &[Step]) -> Self {
        self.not_attempted = rest.to_vec();
        self
    }

    /// Whether every step was called and succeeded.
    pub fn complete(&self) -> bool {
        self.not_attempted.is_empty()
            && self.audit_error.is_none()
            && self.changed.is_none()
            && self.done.iter().all(|(_, o)| landed(o))
    }
}

/// The intent record of step `i` of `steps`, with a new change id.
fn step_intent(ctx: &SharesContext, operator: &Operator, steps: &[Step], i: usize) -> AuditRecord {
    let step = &steps[i];
    AuditRecord::share_intent(
        ctx.change.origin(operator.clone()),
        quotatop_store::audit::new_change_id(),
        step.share().to_string(),
        format!(
            "step {} of {}: {} {}",
            i + 1,
            steps.len(),
            step.verb(),
            step.share()
        ),
        Action {
            call: step.call().to_string(),
            target: step.share().to_string(),
            detail: step.detail(),
            run_id: Some(ctx.run_id.clone()),
        },
    )
}

/// Applies the steps in order, each with an intent before and an outcome after its call;
/// stops at the first failure. Refuses in read-only mode before anything is written.
pub async fn apply_plan<A: SharesApi>(
    api: &A,
    log: &ChangeLog,
    ctx: &SharesContext,
    steps: &[Step],
) -> Result<ApplyReport, ActionError> {
    if ctx.change.read_only {
        return Err(ActionError::ReadOnly);
    }
    let mut operator = ctx.change.operator.clone();
    if operator.aws_principal.is_none() {
        operator.aws_principal = principal_or_why(api.caller_identity().await);
    }
    let mut report = ApplyReport::default();
    for (i, step) in steps.iter().enumerate() {
        let record = step_intent(ctx, &operator, steps, i);
        let change_id = record.change_id.clone();
        // Held from before the intent until after the outcome (`audit reconcile` leaves the
        // change alone while this writer lives).
        let in_flight = match log.begin_change(&change_id) {
            Ok(g) => g,
            Err(e) => {
                report.audit_error = Some(quotatop_model::error_chain(&e));
                return Ok(report.stopped(&steps[i..]));
            }
        };
        if let Err(e) = log.append(record.clone()) {
            report.audit_error = Some(format!(
                "could not write the intent, so {} {} was not called: {}",
                step.call(),
                step.share(),
                quotatop_model::error_chain(&e)
            ));
            return Ok(report.stopped(&steps[i..]));
        }
        // Compare, then swap: the share is read again just before its call, and the call is
        // made only if it is still as planned (another operator, or a second `shares apply`
        // from another host, may have changed it since). The refusal is the intent's outcome.
        let changed = match api.read_share(step.share()).await {
            Ok(live) => changed_since_plan(step, live.as_ref()),
            Err(why) => Some(format!("it could not be read just before the call ({why})")),
        };
        if let Some(what) = changed {
            let what = format!("{} changed since the plan: {what}", step.share());
            let written = log.append(AuditRecord::outcome_of(
                record,
                Outcome::Failed {
                    error: format!("not called: {what}"),
                },
            ));
            drop(in_flight);
            if let Err(e) = written {
                report.audit_error = Some(format!(
                    "{} {} was not called, and its outcome could not be written to the audit log: {}",
                    step.call(),
                    step.share(),
                    quotatop_model::error_chain(&e)
                ));
            }
            report.changed = Some((step.clone(), what));
            return Ok(report.stopped(&steps[i..]));
        }
        let outcome = match api.run_step(step).await {
            Ok(request_id) => Outcome::Succeeded { request_id },
            // An error is not proof that nothing happened: a call whose answer was lost is
            // retried and meets its own change ("already exists"). Read back what is true.
            Err(ApiFailure(error)) => read_back(api, step, error).await,
        };
        let written = log.append(AuditRecord::outcome_of(record, outcome.clone()));
        drop(in_flight);
        let failed = !landed(&outcome);
        report.done.push((step.clone(), outcome));
        if let Err(e) = written {
            report.audit_error = Some(format!(
                "{} {} was called, but its outcome could not be written to the audit log: {}",
                step.call(),
                step.share(),
                quotatop_model::error_chain(&e)
            ));
            return Ok(report.stopped(&steps[i + 1..]));
        }
        if failed {
            return Ok(report.stopped(&steps[i + 1..]));
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests;
