//! Which of Batch's API calls (as CloudTrail recorded them) quotatop made, and which were made
//! outside it: the one rule `audit list`, `policy check` and `/metrics` share.
//!
//! A call is quotatop's own when
//! - its `requestID` is a request id the audit log recorded as a change's answer (the id AWS
//!   answered quotatop's own call with: nobody else's call carries it), or
//! - the log holds a change whose answer was never recorded (its process died, or the answer
//!   was lost) that the call carries out: the same call on the same job or share with the same
//!   value (a priority's new value; a termination's reason in quotatop's form; a submission's
//!   `clientToken` derived from the change id), made by the principal the intent names (when
//!   it names one), from 5 minutes before the intent to a day after it. Each such change
//!   accounts for one call.
//!
//! Anything else among [`quotatop_model::JUDGED_CALLS`] was made outside quotatop: another
//! tool, the console, the CLI, or quotatop writing another audit log.

use std::collections::BTreeSet;

use quotatop_model::{ApiCall, Millis};

use super::{Change, Outcome};

/// How far before its intent a call may be timed and still be the intent's (clock skew
/// between the machine and AWS).
const BEFORE_INTENT_MS: Millis = 5 * 60 * 1000;
/// How long after its intent a call may still be the intent's (as `audit reconcile` looks).
const AFTER_INTENT_MS: Millis = 24 * 3600 * 1000;

/// The request ids a change's answer recorded (a requeue records two: `submit A, terminate B`).
fn answered_ids(c: &Change) -> Vec<String> {
    let Some(Outcome::Succeeded {
        request_id: Some(ids),
    }) = c.outcome.as_ref().and_then(|o| o.outcome.as_ref())
    else {
        return Vec::new();
    };
    ids.split([',', ' ', '(', ')'])
        .filter(|t| t.len() >= 8)
        .map(str::to_string)
        .collect()
}

fn ms(rfc3339: &str) -> Option<Millis> {
    chrono::DateTime::parse_from_rfc3339(rfc3339)
        .ok()
        .map(|t| t.timestamp_millis())
}

/// Whether `call` carries out `c`, a change whose answer the log does not hold.
fn carries_out(call: &ApiCall, c: &Change) -> bool {
    let i = &c.intent;
    let Some(at) = ms(&i.time) else {
        return false;
    };
    if call.time < at - BEFORE_INTENT_MS || call.time > at + AFTER_INTENT_MS {
        return false;
    }
    if let Some(p) = i
        .operator
        .aws_principal
        .as_deref()
        .filter(|p| p.starts_with("arn:"))
        && p != call.principal
    {
        return false;
    }
    let job = call.param("jobId");
    let on_job = job.as_deref() == Some(i.job.id.as_str());
    match (call.name.as_str(), &i.action) {
        ("UpdateServiceJob", None) => {
            on_job && call.new_priority() == Some(i64::from(i.new_priority))
        }
        ("TerminateServiceJob", Some(a)) => {
            (on_job || job.as_deref() == Some(a.target.as_str()))
                && a.call.contains("ServiceJob")
                && call
                    .param("reason")
                    .is_some_and(|r| r.starts_with("quotatop: "))
        }
        ("SubmitServiceJob", Some(_)) => call
            .param("clientToken")
            .is_some_and(|t| t == crate::audit::client_token(&i.change_id)),
        (name, Some(a)) if name == a.call => {
            let target = call.target();
            !target.is_empty()
                && (target == a.target || target.ends_with(&format!("/{}", a.target)))
        }
        _ => false,
    }
}

/// For each of `calls`, whether quotatop made it (by the rule of this module's doc), given the
/// changes of its audit log.
pub fn own_calls(calls: &[ApiCall], changes: &[Change]) -> Vec<bool> {
    let answered: BTreeSet<String> = changes.iter().flat_map(answered_ids).collect();
    // Changes with no recorded answer: each may account for one call.
    let mut open: Vec<&Change> = changes
        .iter()
        .filter(|c| answered_ids(c).is_empty())
        .collect();
    calls
        .iter()
        .map(|call| {
            if call
                .request_id
                .as_ref()
                .is_some_and(|r| answered.contains(r))
            {
                return true;
            }
            match open.iter().position(|c| carries_out(call, c)) {
                Some(k) => {
                    open.remove(k);
                    true
                }
                None => false,
            }
        })
        .collect()
}

/// The calls of `calls` that change a priority, end a job or change a queue or a share
/// ([`ApiCall::is_judged`]) and that quotatop did not make, in their order.
pub fn outside_calls<'a>(calls: &'a [ApiCall], changes: &[Change]) -> Vec<&'a ApiCall> {
    calls
        .iter()
        .zip(own_calls(calls, changes))
        .filter(|(c, own)| !own && c.is_judged())
        .map(|(c, _)| c)
        .collect()
}

#[cfg(test)]
mod tests;
