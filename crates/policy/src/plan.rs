//! `quotatop policy plan / apply`: the quota shares a policy asks for, from the live ones.
//! The policy says nothing of capacity, so limits and state stay as they are; what it decides
//! is each share's sharing and its in-share preemption:
//!
//! - a share with a **protected** class is `RESERVE` (its capacity is never lent);
//! - else a share with a class that **may borrow** is `LEND_AND_BORROW` (the live borrow
//!   limit when it already borrows, else unlimited);
//! - else it is `LEND` (it lends its idle capacity and borrows none);
//! - **in-share preemption** is enabled in a share of several classes, so that a class with a
//!   higher range can displace a lower one, unless a lower class's budget allows no
//!   preemption (`max_preemptions_per_job = 0`), which disables it; a share of one class
//!   keeps its setting.
//!
//! Shares no class runs in are left as they are.

use quotatop_model::{InSharePreemption, QuotaShare, SharingConfig, UNLIMITED_BORROW};

use crate::file::{Class, Policy};

/// A share as the policy asks for it, and why, in words.
#[derive(Debug, Clone, PartialEq)]
pub struct DerivedShare {
    pub share: QuotaShare,
    pub why: Vec<String>,
}

/// Every live share, as the policy asks for it (in the live order).
pub fn derive_shares(policy: &Policy, live: &[QuotaShare]) -> Vec<DerivedShare> {
    live.iter().map(|s| derive(policy, s)).collect()
}

fn derive(policy: &Policy, live: &QuotaShare) -> DerivedShare {
    let classes: Vec<&Class> = policy
        .classes
        .iter()
        .filter(|c| c.shares.contains(&live.name))
        .collect();
    let mut share = live.clone();
    let mut why = Vec::new();
    if classes.is_empty() {
        why.push("no class runs in it: left as it is".to_string());
        return DerivedShare { share, why };
    }
    if let Some(c) = classes.iter().find(|c| c.protected) {
        share.sharing = SharingConfig::reserve();
        why.push(format!("RESERVE: class {} is protected", c.name));
    } else if let Some(c) = classes.iter().find(|c| c.may_borrow) {
        let limit = if live.sharing.strategy.borrows() {
            live.sharing.borrow_limit.unwrap_or(UNLIMITED_BORROW)
        } else {
            UNLIMITED_BORROW
        };
        share.sharing = SharingConfig::lend_and_borrow(limit);
        why.push(format!("LEND_AND_BORROW: class {} may borrow", c.name));
    } else {
        share.sharing = SharingConfig::lend();
        let names: Vec<&str> = classes.iter().map(|c| c.name.as_str()).collect();
        why.push(format!(
            "LEND: {} neither protected nor borrowing",
            names.join(", ")
        ));
    }
    if classes.len() > 1 {
        let top = classes
            .iter()
            .max_by_key(|c| c.priority.max)
            .map_or("", |c| c.name.as_str());
        let shielded = classes
            .iter()
            .find(|c| c.name != top && c.budget.max_preemptions_per_job == Some(0));
        share.in_share_preemption = match shielded {
            Some(c) => {
                why.push(format!(
                    "in-share preemption DISABLED: class {}'s budget allows no preemption",
                    c.name
                ));
                InSharePreemption::Disabled
            }
            None => {
                why.push(format!(
                    "in-share preemption ENABLED: class {top} may displace the share's other classes"
                ));
                InSharePreemption::Enabled
            }
        };
    }
    DerivedShare { share, why }
}
