//! The records a change writes, one constructor per kind: the intent of a job's priority
//! change, of a quota share's change, of a drill's call; the outcome of any of them; the
//! outcome `audit reconcile` decides; the template of a repair record.

use super::{Action, AuditRecord, AwsContext, ClassPolicy, JobRef, Operator, Outcome};
use super::{RecordKind, Verdict};
use crate::audit::SCHEME;

/// Who makes a change, on which AWS and queue, why, and under which policies: what every
/// intent records alike, whatever it changes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChangeOrigin {
    pub operator: Operator,
    pub aws: AwsContext,
    pub queue: String,
    pub justification: String,
    pub change_record: Option<String>,
    /// The change-record policy checked, and where it came from.
    pub policy: Option<String>,
    /// The class policy checked (see [`AuditRecord::class_policy`]).
    pub class_policy: Option<ClassPolicy>,
    /// The batch the change is one of (see [`AuditRecord::batch_id`]).
    pub batch_id: Option<String>,
}

/// An audit record's time: now, RFC 3339 to the millisecond.
fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// No job: the `job` of a record whose change acts on none (or on one not known yet).
fn no_job() -> JobRef {
    JobRef {
        id: String::new(),
        name: String::new(),
        arn: String::new(),
    }
}

impl AuditRecord {
    /// The intent record of change `change_id` from `origin`, timed now, about nothing yet:
    /// what every intent records alike.
    fn intent(origin: ChangeOrigin, change_id: String) -> Self {
        Self {
            v: SCHEME,
            seq: 0,
            time: now_rfc3339(),
            kind: RecordKind::Intent,
            change_id,
            operator: origin.operator,
            aws: origin.aws,
            queue: origin.queue,
            share: String::new(),
            job: no_job(),
            old_priority: 0,
            new_priority: 0,
            justification: origin.justification,
            change_record: origin.change_record,
            preview: String::new(),
            outcome: None,
            policy: origin.policy,
            repair: None,
            action: None,
            class_policy: origin.class_policy,
            batch_id: origin.batch_id,
            prev_hash: String::new(),
            hash: String::new(),
        }
    }

    /// The intent of changing `job`'s priority (in `share`) from `old_priority` to
    /// `new_priority`, with what the preview predicted.
    pub fn priority_intent(
        origin: ChangeOrigin,
        change_id: String,
        share: String,
        job: JobRef,
        old_priority: u32,
        new_priority: u32,
        preview: String,
    ) -> Self {
        Self {
            share,
            job,
            old_priority,
            new_priority,
            preview,
            ..Self::intent(origin, change_id)
        }
    }

    /// The intent of a quota share's change: `action` on share `share`, with the step's
    /// `preview`.
    pub fn share_intent(
        origin: ChangeOrigin,
        change_id: String,
        share: String,
        preview: String,
        action: Action,
    ) -> Self {
        Self {
            share,
            preview,
            action: Some(action),
            ..Self::intent(origin, change_id)
        }
    }

    /// The intent of a call that acts on no job and no share (`events setup`'s queue and
    /// rule): `action`, with the plan it carries out as `preview`.
    pub fn call_intent(
        origin: ChangeOrigin,
        change_id: String,
        preview: String,
        action: Action,
    ) -> Self {
        Self {
            preview,
            action: Some(action),
            ..Self::intent(origin, change_id)
        }
    }

    /// The intent of a drill's call (`action`) on `job` of `share` (`""`: of no one share).
    pub fn drill_intent(
        origin: ChangeOrigin,
        change_id: String,
        share: String,
        job: JobRef,
        action: Action,
    ) -> Self {
        Self {
            share,
            job,
            action: Some(action),
            ..Self::intent(origin, change_id)
        }
    }

    /// The outcome record of `intent`: the same change, timed now, ended as `outcome`.
    pub fn outcome_of(intent: Self, outcome: Outcome) -> Self {
        let mut r = intent;
        r.kind = RecordKind::Outcome;
        r.time = now_rfc3339();
        r.outcome = Some(outcome);
        r
    }

    /// The outcome `audit reconcile` (run by `operator`) appends for `intent`, whose outcome
    /// was never written: its `verdict`, and what it rests on (the job's priority, or what a
    /// share read back showed).
    pub fn reconciled(
        intent: &Self,
        operator: &Operator,
        verdict: Verdict,
        observed_priority: Option<u32>,
        observed: Option<String>,
    ) -> Self {
        let mut r = intent.clone();
        r.v = SCHEME;
        r.kind = RecordKind::Outcome;
        r.time = now_rfc3339();
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

    /// The template of `audit repair`'s record, by `operator` for `reason`: the log fills in
    /// what it cut.
    pub fn repair_template(change_id: String, operator: Operator, reason: String) -> Self {
        let origin = ChangeOrigin {
            operator,
            justification: reason,
            ..ChangeOrigin::default()
        };
        Self {
            kind: RecordKind::Repair,
            ..Self::intent(origin, change_id)
        }
    }
}
