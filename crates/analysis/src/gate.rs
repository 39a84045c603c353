//! One check for every door: whether an operator may make a change to a job — a priority
//! change, a termination, a requeue with a retry cap — decided by [`judge`], which the console's
//! dialogs and bulk actions, `set-priority`, `terminate` and `requeue` all call, before the
//! preview is shown and again just before the intent is written. A refusal reads the same
//! through each door because it is this function's words.
//!
//! In order: read-only mode, the change as typed (priority in range and different, a
//! justification long enough, a change record where `[priority]` asks for one), then the class
//! policy (`policy.toml`: class ranges, who may move a job into a class or end its jobs, change
//! records), which the policy crate implements as [`ClassRules`].

use std::sync::Arc;

use crate::preview::{PriorityPolicy, ValidationError, check_change};

/// What an operator asks to do to one job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Act {
    /// Set its scheduling priority to `new`.
    Priority { new: u32 },
    /// End it (TerminateServiceJob).
    Terminate,
    /// Submit a copy with `preemptionRetriesBeforeTermination = retry_limit`, then end it.
    Requeue { retry_limit: u32 },
}

impl Act {
    /// The verb as refusals say it: "terminate", "requeue", "change the priority of".
    pub fn verb(self) -> &'static str {
        match self {
            Act::Priority { .. } => "change the priority of",
            Act::Terminate => "terminate",
            Act::Requeue { .. } => "requeue",
        }
    }
}

/// The most preemption retries a requeue may set: AWS documents no bound, but a cap meant to
/// end a loop that is itself unbounded in practice is a typo.
pub const MAX_RETRY_LIMIT: u32 = 100;

/// The job a change is about: what its class is read from.
#[derive(Debug, Clone, Copy)]
pub struct Subject<'a> {
    pub share: &'a str,
    /// Its `quotatop:class` tag, when it has one.
    pub class_tag: Option<&'a str>,
    /// Its priority now.
    pub priority: u32,
}

/// One change to one job, as the door has it.
#[derive(Debug, Clone, Copy)]
pub struct Ask<'a> {
    pub act: Act,
    pub job: Subject<'a>,
    pub justification: &'a str,
    /// Blank counts as none.
    pub change_record: Option<&'a str>,
    /// The names the operator is known by: the OS user, `user@host` and, when known, the AWS
    /// principal's ARN.
    pub who: &'a [&'a str],
}

/// What the class policy says of an allowed change, for the intent record.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Stamp {
    /// SHA-256 of the policy checked.
    pub policy_hash: String,
    /// `unclassified` when no class claims the job.
    pub class_before: String,
    pub class_after: String,
}

/// A class policy, as [`judge`] asks it (implemented by `quotatop_policy::Policy`).
pub trait ClassRules: Send + Sync + std::fmt::Debug {
    /// The rule that refuses `ask`, in words, or the classes it is made under.
    fn judge(&self, ask: &Ask<'_>) -> Result<Stamp, String>;
    /// Where the policy was read from, for refusals.
    fn origin(&self) -> &str;
    /// The first 12 hex digits of its hash, for refusals.
    fn short_hash(&self) -> &str;
}

/// The class policy in force, if any.
#[derive(Debug, Clone, Default)]
pub enum Classes {
    /// No policy file: only the `[priority]` rules apply.
    #[default]
    None,
    Policy(Arc<dyn ClassRules>),
    /// A policy file exists but cannot be read: every change is refused until it is fixed.
    Unreadable(String),
}

/// The rules every door checks a change against.
#[derive(Debug, Clone, Default)]
pub struct Rules {
    /// Read-only mode, with the words that say how it was set; `None` when changes are allowed.
    pub read_only: Option<String>,
    pub priority: PriorityPolicy,
    pub classes: Classes,
}

/// Why a change may not be made. Its text is the same through every door.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("{0}")]
    ReadOnly(String),
    #[error(transparent)]
    Invalid(#[from] ValidationError),
    #[error("refused by the policy {origin} (sha256 {hash}): {rule}; nothing changed")]
    Policy {
        origin: String,
        hash: String,
        rule: String,
    },
    #[error("changes are refused while the policy cannot be read: {0}")]
    PolicyUnreadable(String),
    #[error(
        "a retry limit of {0} is more than {MAX_RETRY_LIMIT}: a cap meant to end a loop is a few \
         retries (0 ends the job at its next preemption)"
    )]
    RetryLimit(u32),
}

/// Whether `ask` may be made under `rules`: the class stamp for the intent (`None` without a
/// class policy), or the refusal.
pub fn judge(rules: &Rules, ask: &Ask<'_>) -> Result<Option<Stamp>, Refusal> {
    if let Some(words) = &rules.read_only {
        return Err(Refusal::ReadOnly(words.clone()));
    }
    match ask.act {
        Act::Priority { new } => check_change(
            ask.job.priority,
            new,
            ask.justification,
            ask.change_record.filter(|c| !c.trim().is_empty()),
            &rules.priority,
        )?,
        Act::Terminate | Act::Requeue { .. } => {
            check_justification(ask.justification, &rules.priority)?;
        }
    }
    if let Act::Requeue { retry_limit } = ask.act
        && retry_limit > MAX_RETRY_LIMIT
    {
        return Err(Refusal::RetryLimit(retry_limit));
    }
    match &rules.classes {
        Classes::None => Ok(None),
        Classes::Unreadable(why) => Err(Refusal::PolicyUnreadable(why.clone())),
        Classes::Policy(p) => p.judge(ask).map(Some).map_err(|rule| Refusal::Policy {
            origin: p.origin().to_string(),
            hash: p.short_hash().to_string(),
            rule,
        }),
    }
}

/// The rules with the operator they judge: what a console holds for its dialogs and bulk
/// actions.
#[derive(Debug, Clone, Default)]
pub struct Door {
    pub rules: Rules,
    /// The names the operator is known by (see [`Ask::who`]).
    pub who: Vec<String>,
}

impl Door {
    /// [`judge`] of `act` on `job` by this door's operator.
    pub fn judge(
        &self,
        act: Act,
        job: Subject<'_>,
        justification: &str,
        change_record: Option<&str>,
    ) -> Result<Option<Stamp>, Refusal> {
        let who: Vec<&str> = self.who.iter().map(String::as_str).collect();
        judge(
            &self.rules,
            &Ask {
                act,
                job,
                justification,
                change_record,
                who: &who,
            },
        )
    }
}

/// A justification is given and long enough (`[priority] min_justification_chars`): the same
/// rule as a priority change's.
fn check_justification(justification: &str, policy: &PriorityPolicy) -> Result<(), Refusal> {
    let j = justification.trim();
    if j.is_empty() {
        return Err(ValidationError::NoJustification.into());
    }
    let have = j.chars().count();
    if have < policy.min_justification_chars as usize {
        return Err(ValidationError::ShortJustification {
            have,
            min: policy.min_justification_chars,
        }
        .into());
    }
    Ok(())
}

impl Ask<'_> {
    /// Whether a change record was given (blank is none): for class rules.
    pub fn change_record_given(&self) -> bool {
        self.change_record.is_some_and(|c| !c.trim().is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Refuses;
    impl ClassRules for Refuses {
        fn judge(&self, ask: &Ask<'_>) -> Result<Stamp, String> {
            Err(format!("no {} here", ask.act.verb()))
        }
        fn origin(&self) -> &str {
            "p.toml"
        }
        fn short_hash(&self) -> &str {
            "abc"
        }
    }

    fn ask(act: Act) -> Ask<'static> {
        Ask {
            act,
            job: Subject {
                share: "s",
                class_tag: None,
                priority: 10,
            },
            justification: "a long enough justification",
            change_record: None,
            who: &["alice"],
        }
    }

    #[test]
    fn read_only_first_then_the_input_then_the_class_policy() {
        let mut rules = Rules {
            read_only: Some("read-only (QUOTATOP_READ_ONLY)".into()),
            classes: Classes::Policy(Arc::new(Refuses)),
            ..Rules::default()
        };
        let short = Ask {
            justification: "x",
            ..ask(Act::Terminate)
        };
        assert_eq!(
            judge(&rules, &short),
            Err(Refusal::ReadOnly("read-only (QUOTATOP_READ_ONLY)".into()))
        );
        rules.read_only = None;
        assert!(matches!(
            judge(&rules, &short),
            Err(Refusal::Invalid(ValidationError::ShortJustification { .. }))
        ));
        assert_eq!(
            judge(&rules, &ask(Act::Terminate)).unwrap_err().to_string(),
            "refused by the policy p.toml (sha256 abc): no terminate here; nothing changed"
        );
        rules.classes = Classes::None;
        assert_eq!(judge(&rules, &ask(Act::Terminate)), Ok(None));
        assert_eq!(
            judge(&rules, &ask(Act::Priority { new: 10 })),
            Err(Refusal::Invalid(ValidationError::Unchanged(10)))
        );
        assert!(matches!(
            judge(&rules, &ask(Act::Requeue { retry_limit: 101 })),
            Err(Refusal::RetryLimit(101))
        ));
        assert_eq!(
            judge(&rules, &ask(Act::Requeue { retry_limit: 2 })),
            Ok(None)
        );
        rules.classes = Classes::Unreadable("line 3: bad".into());
        assert_eq!(
            judge(&rules, &ask(Act::Requeue { retry_limit: 2 })),
            Err(Refusal::PolicyUnreadable("line 3: bad".into()))
        );
    }
}
