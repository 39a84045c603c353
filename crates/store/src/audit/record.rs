use serde::{Deserialize, Serialize};

mod kinds;

pub use kinds::ChangeOrigin;

/// Who made the change.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Operator {
    /// The local account's name, from the process's real uid (before scheme 2: `$USER`).
    pub user: String,
    pub host: String,
    /// `name (uid N)`: the local account as the password database gives the real uid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_user: Option<String>,
    /// The AWS principal the change was made as (STS GetCallerIdentity's ARN), or `unknown
    /// (reason)` when STS could not answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aws_principal: Option<String>,
}

impl Operator {
    /// This process's local account (from its uid, never only `$USER`) and host name; the AWS
    /// principal is added when the change is applied.
    pub fn current() -> Self {
        let local = super::LocalUser::current();
        let user = local.name.clone();
        let host = std::fs::read_to_string("/etc/hostname")
            .map(|h| h.trim().to_string())
            .ok()
            .filter(|h| !h.is_empty())
            .or_else(|| std::env::var("HOSTNAME").ok())
            .unwrap_or_else(|| "unknown".to_string());
        Self {
            user,
            host,
            local_user: Some(local.describe()),
            aws_principal: None,
        }
    }

    /// `user@host`, with the AWS principal when known: how listings name the operator.
    pub fn describe(&self) -> String {
        match &self.aws_principal {
            Some(p) => format!("{}@{} as {p}", self.user, self.host),
            None => format!("{}@{}", self.user, self.host),
        }
    }
}

/// Which AWS the change went to (never credentials).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct AwsContext {
    pub profile: Option<String>,
    pub region: Option<String>,
    pub endpoint: Option<String>,
    /// The `[[sources]]` name the change went through: with `queue`, what the record's queue
    /// is known by (two regions may both have `ml-training`). Left out for the one implicit
    /// source, so records written before sources existed keep their bytes and hashes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

impl AwsContext {
    /// The context of a change made through a client connected to `source`, under the
    /// `[[sources]]` name `name` (`None`: the one implicit source).
    pub fn of(source: &quotatop_model::Source, name: Option<&str>) -> Self {
        Self {
            profile: source.profile.clone(),
            region: source.region.clone(),
            endpoint: source.endpoint.clone(),
            source: name.map(str::to_string),
        }
    }
}

/// The job changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobRef {
    pub id: String,
    pub name: String,
    pub arn: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordKind {
    /// Written (and fsynced) before the API call.
    Intent,
    /// Written after the API call returned.
    Outcome,
    /// Written by `quotatop audit repair` after it moved a torn last line aside.
    Repair,
}

/// What `quotatop audit repair` cut from the end of the log, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Repair {
    /// Bytes cut from the end of the log.
    pub cut_bytes: u64,
    /// SHA-256 (hex) of the cut bytes.
    pub cut_sha256: String,
    /// 1-based line number the cut bytes started on.
    pub line: usize,
    /// The file the cut bytes were moved to.
    pub moved_to: String,
    pub reason: String,
}

/// The hash scheme of records without a `v` field (written before scheme 2).
fn scheme_1() -> u32 {
    1
}

/// How the API call ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum Outcome {
    Succeeded {
        request_id: Option<String>,
    },
    Failed {
        error: String,
    },
    /// Written by `audit reconcile` for a change whose outcome was never recorded (the process
    /// died between the intent and the outcome), and by `shares apply` for a call that answered
    /// with an error: what the resource showed afterwards.
    Reconciled {
        verdict: Verdict,
        /// The job's priority when it was read (`None` when the job was gone, or the change is
        /// not a job's priority).
        observed_priority: Option<u32>,
        /// A quota share's configuration as read back (`absent` when there was no such share),
        /// or why it could not be read: what the verdict of a share change rests on.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        observed: Option<String>,
        /// The call's own error, when the call answered with one and the resource was read back
        /// to see what is true (a retry of a call whose answer was lost meets the change
        /// already made: "already exists", "does not exist").
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call_error: Option<String>,
    },
}

/// What `audit reconcile` concluded about a change whose outcome is unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The job has the intent's new priority and no later audited change explains it.
    Landed,
    /// The job's priority is not the intent's new one, and no later audited change followed.
    DidNotLand,
    /// A later audited change to the job followed, so its priority cannot tell.
    Undecidable,
    /// The job no longer exists.
    JobGone,
    /// Written by a later `audit reconcile` after an earlier one found the change had not
    /// landed: it has landed since (a call held in flight, or answered late, took effect after
    /// that decision). A second outcome record of the change; the first stays in the log, and
    /// this one is the change's outcome from then on.
    LandedLate,
}

impl Verdict {
    /// From what reconcile can see: the job's priority now (`None`: the job is gone), whether
    /// a later audited change to the same job followed, and the intent's new priority.
    pub fn judge(current: Option<u32>, later_change: bool, intended: u32) -> Self {
        match current {
            None => Verdict::JobGone,
            Some(_) if later_change => Verdict::Undecidable,
            Some(p) if p == intended => Verdict::Landed,
            Some(_) => Verdict::DidNotLand,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Landed => "landed",
            Verdict::DidNotLand => "did not land",
            Verdict::Undecidable => "undecidable",
            Verdict::JobGone => "job gone",
            Verdict::LandedLate => "landed after all",
        }
    }
}

/// A change other than a job's priority: the API call made, on what, and with which values.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Action {
    /// The AWS Batch API operation, e.g. `CreateQuotaShare`, `UpdateQuotaShare`,
    /// `DeleteQuotaShare`, `SubmitServiceJob`, `TerminateServiceJobs`.
    pub call: String,
    /// What it acts on: a quota share's name, a job's name or id.
    pub target: String,
    /// The values that matter, in words (e.g. `capacityLimits: ml.p4d.24xlarge 4 -> 6`).
    pub detail: String,
    /// Groups the calls of one run (`shares apply`, a drill) so a listing can show them together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
}

/// The class policy a change was made under (see [`AuditRecord::class_policy`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClassPolicy {
    /// SHA-256 (hex) of the policy file.
    pub hash: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class_before: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class_after: Option<String>,
    /// The share owner who approved a change of its limits (`--approved-by`), when the
    /// policy's `[owners]` asked for one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_by: Option<String>,
}

/// One line of the audit log.
///
/// Written once, in quotatop's canonical form (see `log::canonical_body`): compact JSON, keys in
/// the order of the fields below, control characters (C0, DEL, C1) escaped, `hash` last. A
/// field added later must be an `Option` left out when `None` (`serde(default,
/// skip_serializing_if)`), placed before `prev_hash`, so records written before it keep their
/// canonical form; anything else needs a new `v`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditRecord {
    /// Hash scheme: 1 = hash over the re-serialised record (logs written before scheme 2, no
    /// `v` field); 2 = hash over the record's exact canonical bytes.
    #[serde(default = "scheme_1")]
    pub v: u32,
    /// 1-based position in the log.
    pub seq: u64,
    /// RFC 3339, UTC.
    pub time: String,
    pub kind: RecordKind,
    /// Identifies the change (a random UUID v4 since scheme 2); the outcome repeats its intent's
    /// id.
    pub change_id: String,
    pub operator: Operator,
    pub aws: AwsContext,
    pub queue: String,
    pub share: String,
    pub job: JobRef,
    /// The job's priority as read from the API just before the change (the preview's when that
    /// read failed).
    pub old_priority: u32,
    pub new_priority: u32,
    pub justification: String,
    pub change_record: Option<String>,
    /// What the preview predicted (new position, preemption candidates).
    pub preview: String,
    pub outcome: Option<Outcome>,
    /// The change-record policy the change was checked against and where it came from (intents
    /// since scheme 2, e.g. `large_change=1000 protected_from=9000 (config /path/config.toml)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    /// Only in `repair` records: what was cut.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repair: Option<Repair>,
    /// Set on records of a change that is not a job's priority (a quota share's configuration,
    /// a drill's job submission or termination): which API call, on what. Such a record's
    /// `job` and priorities are empty (zero) unless `call` acts on a job; priority listings,
    /// the scorecard and `audit reconcile` leave these records out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<Action>,
    /// The class policy (`policy.toml`) the change was checked against: its SHA-256 and, for a
    /// job's priority, the job's class before and after. Left out when no policy applied, so
    /// records written before policies existed keep their bytes and hashes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class_policy: Option<ClassPolicy>,
    /// Links the intents of one action on several jobs (a priority change of every marked
    /// job, `set-priority JOB JOB…`): the same random id on each job's intent, so a listing
    /// shows which changes were one action. Left out of a change of one job, and of records
    /// written before it existed, which keep their bytes and hashes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_id: Option<String>,
    /// Hash of the previous record ("" for the first).
    pub prev_hash: String,
    /// Scheme 2: SHA-256 (hex) of this line's bytes up to `hash` (the canonical record without
    /// `hash`, closed with `}`), which include `prev_hash`. Always the last field.
    #[serde(default)]
    pub hash: String,
}
