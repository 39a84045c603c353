//! Which class a job belongs to: the one documented order, in one function.
//!
//! 1. **tag**: the job's `quotatop:class` tag, when it names a class of the policy;
//! 2. **share**: else the classes that list the job's share: the only one, or among several the
//!    first (in file order) whose priority range holds the job's priority, else the first;
//! 3. **priority**: else the first class (in file order) whose range holds the priority;
//! 4. else the job is **unclassified**.
//!
//! A tag naming no class of the policy does not classify the job; the conformance check
//! counts it as running outside its class.

use crate::file::{Class, Policy};

/// How a job's class was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Basis {
    Tag,
    Share,
    Priority,
}

impl Basis {
    pub fn as_str(self) -> &'static str {
        match self {
            Basis::Tag => "tag",
            Basis::Share => "share",
            Basis::Priority => "priority",
        }
    }
}

/// A job's class and why.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Membership<'a> {
    pub class: &'a Class,
    pub basis: Basis,
}

impl Membership<'_> {
    /// `incident (by share)`, as screens and reports show a class.
    pub fn describe(&self) -> String {
        format!("{} (by {})", self.class.name, self.basis.as_str())
    }
}

/// The class of a job with the class tag `tag` (if any), in `share`, at `priority`.
pub fn class_of<'a>(
    policy: &'a Policy,
    tag: Option<&str>,
    share: &str,
    priority: u32,
) -> Option<Membership<'a>> {
    if let Some(class) = tag.and_then(|t| policy.class(t.trim())) {
        return Some(Membership {
            class,
            basis: Basis::Tag,
        });
    }
    let in_share: Vec<&Class> = policy
        .classes
        .iter()
        .filter(|c| c.shares.iter().any(|s| s == share))
        .collect();
    if let Some(class) = in_share
        .iter()
        .find(|c| c.priority.contains(priority))
        .or(in_share.first())
    {
        return Some(Membership {
            class,
            basis: Basis::Share,
        });
    }
    policy
        .classes
        .iter()
        .find(|c| c.priority.contains(priority))
        .map(|class| Membership {
            class,
            basis: Basis::Priority,
        })
}

/// The name of a job's class, or `unclassified`.
pub fn class_name(m: Option<&Membership<'_>>) -> String {
    m.map_or_else(|| UNCLASSIFIED.to_string(), |m| m.class.name.clone())
}

/// What a job without a class is called wherever classes are listed.
pub const UNCLASSIFIED: &str = "unclassified";
