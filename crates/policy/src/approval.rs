//! Owners' approval of a change of a share's limits: the policy's `[owners]` name who approves
//! each share's entitlement (the platform team administers, business owners approve).

use crate::file::Policy;

/// What a change of the limits of some shares needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    /// None of the shares has owners in the policy.
    NotNeeded,
    /// `by` owns every share whose limits change.
    Approved { by: String },
    /// The rule that refuses it.
    Refused { rule: String },
}

/// Whether `name` is one of `owners`: exactly, or up to a trailing `*`.
fn owns(owners: &[String], name: &str) -> bool {
    owners.iter().any(|o| match o.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => o == name,
    })
}

/// The approval a change of the limits of `shares` needs under `policy`, given `approved_by`
/// (`--approved-by`, trimmed; empty is none).
pub fn limit_approval(policy: &Policy, shares: &[&str], approved_by: Option<&str>) -> Approval {
    let owned: Vec<(&str, &Vec<String>)> = shares
        .iter()
        .filter_map(|s| {
            policy
                .owners
                .get(*s)
                .filter(|o| !o.is_empty())
                .map(|o| (*s, o))
        })
        .collect();
    if owned.is_empty() {
        return Approval::NotNeeded;
    }
    let Some(by) = approved_by.map(str::trim).filter(|b| !b.is_empty()) else {
        let (share, owners) = owned[0];
        return Approval::Refused {
            rule: format!(
                "changing the limits of share {share} needs its owner's approval ({}): pass --approved-by NAME",
                owners.join(", ")
            ),
        };
    };
    if let Some((share, owners)) = owned.iter().find(|(_, o)| !owns(o, by)) {
        return Approval::Refused {
            rule: format!(
                "{by} is not an owner of share {share} (its owners: {}): the approval must be one of theirs",
                owners.join(", ")
            ),
        };
    }
    Approval::Approved { by: by.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> Policy {
        crate::parse(
            "version = 1\n[[class]]\nname = \"a\"\npriority = [0, 9999]\nshares = [\"prod\", \"lab\"]\n\
             [owners]\nprod = [\"head-of-sre\", \"sre-*\"]\nlab = []\n",
            "p.toml",
        )
        .unwrap()
    }

    #[test]
    fn an_owned_share_needs_one_of_its_owners() {
        let p = policy();
        assert_eq!(
            limit_approval(&p, &["lab", "free"], None),
            Approval::NotNeeded
        );
        let Approval::Refused { rule } = limit_approval(&p, &["prod"], None) else {
            panic!()
        };
        assert!(rule.contains("share prod needs its owner's approval (head-of-sre, sre-*)"));
        let Approval::Refused { rule } = limit_approval(&p, &["lab", "prod"], Some("bob")) else {
            panic!()
        };
        assert!(
            rule.starts_with("bob is not an owner of share prod"),
            "{rule}"
        );
        assert_eq!(
            limit_approval(&p, &["prod"], Some(" head-of-sre ")),
            Approval::Approved {
                by: "head-of-sre".into()
            }
        );
        assert_eq!(
            limit_approval(&p, &["prod"], Some("sre-amy")),
            Approval::Approved {
                by: "sre-amy".into()
            }
        );
        assert!(matches!(
            limit_approval(&p, &["prod"], Some("  ")),
            Approval::Refused { .. }
        ));
    }
}
