//! The policy at change time: whether a priority change, a termination or a requeue may be
//! made, by this operator, with or without a change record. Every door asks through
//! `quotatop_analysis::gate::judge`, which asks a [`Policy`] as its [`ClassRules`] (and `drill`
//! asks [`check_change`] for the jobs it submits); the audit keeps the classes before and after
//! and the policy's hash.

use crate::file::Policy;
use crate::membership::{Basis, class_name, class_of};
use quotatop_analysis::gate::{Act, Ask, ClassRules, Stamp};
use quotatop_model::CLASS_TAG;

/// A proposed priority change of one job.
#[derive(Debug, Clone, Copy)]
pub struct ChangeRequest<'a> {
    /// The job's `quotatop:class` tag, when known.
    pub tag: Option<&'a str>,
    pub share: &'a str,
    /// The priority now; `None` for a job about to be submitted (it enters its class).
    pub old: Option<u32>,
    pub new: u32,
    /// The names the operator is known by: the OS user (`alice`, `alice@host`) and, when
    /// known, the AWS principal's ARN.
    pub who: &'a [&'a str],
    pub change_record: bool,
}

/// The policy's answer: the job's class before and after, and the rule that refuses the
/// change, if one does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeVerdict {
    /// `unclassified` when no class claims the job.
    pub class_before: String,
    pub class_after: String,
    pub refusal: Option<String>,
    /// SHA-256 of the policy checked.
    pub policy_hash: String,
}

/// Checks a priority change against `policy`, in this order:
/// 1. the new priority must lie in the range of the class the job would then belong to
///    (leaving a class's range for no class of the share is refused);
/// 2. moving a job into another class needs an operator the class allows;
/// 3. and, when the class says so, a change record.
pub fn check_change(policy: &Policy, r: &ChangeRequest<'_>) -> ChangeVerdict {
    let before = r.old.and_then(|old| class_of(policy, r.tag, r.share, old));
    let after = class_of(policy, r.tag, r.share, r.new);
    let verdict = |refusal: Option<String>| ChangeVerdict {
        class_before: class_name(before.as_ref()),
        class_after: class_name(after.as_ref()),
        refusal,
        policy_hash: policy.hash.clone(),
    };
    let Some(to) = after else {
        return verdict(before.map(|b| {
            format!(
                "priority {} leaves class {} ({}) for no class: the policy's rule is that {}'s jobs use {}",
                r.new, b.class.name, b.class.priority, b.class.name, b.class.priority
            )
        }));
    };
    let c = to.class;
    if !c.priority.contains(r.new) && to.basis == Basis::Tag {
        return verdict(Some(format!(
            "the job is in class {} by its {CLASS_TAG} tag and priority {} is outside that class's range {}: the policy's rule is that a class's jobs use its range",
            c.name, r.new, c.priority
        )));
    }
    if !c.priority.contains(r.new) {
        let ranges: Vec<String> = policy
            .classes
            .iter()
            .filter(|k| k.shares.iter().any(|s| s == r.share))
            .map(|k| format!("{} {}", k.name, k.priority))
            .collect();
        return verdict(Some(format!(
            "priority {} is outside the range of every class of share {} ({}): the policy's rule is that a class's jobs use its range",
            r.new,
            r.share,
            ranges.join(", ")
        )));
    }
    let entering = before.is_none_or(|b| b.class.name != c.name);
    if entering && !c.allows(r.who.iter().copied()) {
        return verdict(Some(format!(
            "{} may not move a job into class {}: the policy allows only {}",
            r.who.first().copied().unwrap_or("this operator"),
            c.name,
            c.operators.join(", ")
        )));
    }
    if entering && c.change_record && !r.change_record {
        return verdict(Some(format!(
            "moving a job into class {} needs a change record: give its id (--change-record)",
            c.name
        )));
    }
    verdict(None)
}

/// Checks a termination or a requeue of a job against `policy`: the job's class (as it is now)
/// may name who may end its jobs (`terminate`), and, when it asks for change records, ending
/// one needs one too.
pub fn check_ending(policy: &Policy, ask: &Ask<'_>) -> ChangeVerdict {
    let class = class_of(policy, ask.job.class_tag, ask.job.share, ask.job.priority);
    let name = class_name(class.as_ref());
    let verdict = |refusal: Option<String>| ChangeVerdict {
        class_before: name.clone(),
        class_after: name.clone(),
        refusal,
        policy_hash: policy.hash.clone(),
    };
    let Some(m) = class else {
        return verdict(None);
    };
    let c = m.class;
    if !c.allows_ending(ask.who.iter().copied()) {
        return verdict(Some(format!(
            "{} may not {} jobs of class {}: the policy allows only {}",
            ask.who.first().copied().unwrap_or("this operator"),
            ask.act.verb(),
            c.name,
            c.terminate.join(", ")
        )));
    }
    if c.change_record && !ask.change_record_given() {
        return verdict(Some(format!(
            "to {} a job of class {} needs a change record: give its id (--change-record)",
            ask.act.verb(),
            c.name
        )));
    }
    verdict(None)
}

/// The policy as every door's gate asks it.
impl ClassRules for Policy {
    fn judge(&self, ask: &Ask<'_>) -> Result<Stamp, String> {
        let v = match ask.act {
            Act::Priority { new } => check_change(
                self,
                &ChangeRequest {
                    tag: ask.job.class_tag,
                    share: ask.job.share,
                    old: Some(ask.job.priority),
                    new,
                    who: ask.who,
                    change_record: ask.change_record_given(),
                },
            ),
            Act::Terminate | Act::Requeue { .. } => check_ending(self, ask),
        };
        match v.refusal {
            Some(rule) => Err(rule),
            None => Ok(Stamp {
                policy_hash: v.policy_hash,
                class_before: v.class_before,
                class_after: v.class_after,
            }),
        }
    }

    fn origin(&self) -> &str {
        &self.origin
    }

    fn short_hash(&self) -> &str {
        Policy::short_hash(self)
    }
}

#[cfg(test)]
mod gate_tests {
    use super::*;

    const POLICY: &str = "version = 1\n\
        [[class]]\nname = \"prod\"\npriority = [100, 199]\nshares = [\"p\"]\n\
        terminate = [\"oncall-*\"]\nchange_record = true\n\
        [[class]]\nname = \"sweep\"\npriority = [0, 99]\nshares = [\"p\"]\n";

    fn ask<'a>(act: Act, priority: u32, who: &'a [&'a str], record: Option<&'a str>) -> Ask<'a> {
        Ask {
            act,
            job: quotatop_analysis::gate::Subject {
                share: "p",
                class_tag: None,
                priority,
            },
            justification: "a justification long enough",
            change_record: record,
            who,
        }
    }

    #[test]
    fn who_may_end_a_class_s_jobs_and_with_what() {
        let p = crate::parse(POLICY, "p.toml").unwrap();
        let judge = |a: &Ask<'_>| ClassRules::judge(&p, a);
        // Not named in `terminate`: refused, for a termination and a requeue alike.
        let e = judge(&ask(Act::Terminate, 150, &["alice"], Some("CHG-1"))).unwrap_err();
        assert_eq!(
            e,
            "alice may not terminate jobs of class prod: the policy allows only oncall-*"
        );
        let e = judge(&ask(Act::Requeue { retry_limit: 2 }, 150, &["bob"], None)).unwrap_err();
        assert!(
            e.starts_with("bob may not requeue jobs of class prod"),
            "{e}"
        );
        // Named, but the class asks for a change record.
        let e = judge(&ask(Act::Terminate, 150, &["oncall-ann"], None)).unwrap_err();
        assert!(e.contains("needs a change record"), "{e}");
        let ok = judge(&ask(Act::Terminate, 150, &["oncall-ann"], Some("CHG-1"))).unwrap();
        assert_eq!(
            (ok.class_before.as_str(), ok.class_after.as_str()),
            ("prod", "prod")
        );
        // A class without rules for ending lets anyone end its jobs.
        assert!(judge(&ask(Act::Terminate, 5, &["alice"], None)).is_ok());
        // A priority change goes through the same door as check_change.
        let e = judge(&ask(Act::Priority { new: 150 }, 5, &["alice"], None)).unwrap_err();
        assert!(e.contains("needs a change record"), "{e}");
        // A `terminate` entry that names no one is an error in the file.
        let bad = POLICY.replace("terminate = [\"oncall-*\"]", "terminate = [\"*\"]");
        let e = crate::parse(&bad, "p.toml").unwrap_err().to_string();
        assert!(e.contains("leave `terminate` out"), "{e}");
    }
}
