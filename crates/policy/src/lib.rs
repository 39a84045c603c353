//! Policy as code: the organisation's classes of work (their priority ranges, shares, promises
//! and interruption budgets, who may use them) and the owners of each share, read from a
//! versioned TOML file; which class a job belongs to; the lint of a policy against the queue's
//! shares; and a first policy from today's configuration.

mod approval;
mod change;
mod conformance;
mod file;
mod init;
mod lint;
mod membership;
mod plan;
mod show;
mod verdict;

pub use approval::{Approval, limit_approval};
pub use change::{ChangeRequest, ChangeVerdict, check_change, check_ending};
pub use conformance::{
    BreachItem, Check, CheckKind, ClassConformance, Conformance, JobBreach, breach_items,
    conformance, first_capacity_wait, markdown,
};
pub use file::{
    CLASS_TAG, Class, POLICY_VERSION, Policy, PolicyError, PriorityRange, Promise, hash, parse,
    read,
};
pub use init::{Today, init};
pub use lint::{Finding, errors, lint};
pub use membership::{Basis, Membership, UNCLASSIFIED, class_name, class_of};
pub use plan::{DerivedShare, derive_shares};
pub use show::classes_table;
pub use verdict::{class_index, class_rules, important};

#[cfg(test)]
mod tests;
