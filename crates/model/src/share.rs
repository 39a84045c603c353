use serde::{Deserialize, Serialize};

/// AWS allows at most 20 quota shares per quota-management job queue.
pub const MAX_SHARES_PER_QUEUE: usize = 20;
/// A quota share has between 1 and 5 capacity limits.
pub const MAX_CAPACITY_LIMITS: usize = 5;

/// Whether `t` has the form of a SageMaker training instance type, `ml.<family>.<size>`
/// (`ml.p4d.24xlarge`, `ml.p6-b200.48xlarge`): lowercase letters, digits and `-`, the family
/// starting with a letter. Only the form is checked: AWS adds types, so a well-formed one that
/// no table here knows is still accepted.
pub fn is_training_instance_type(t: &str) -> bool {
    let mut parts = t.split('.');
    let (Some("ml"), Some(family), Some(size), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let word = |s: &str| {
        !s.is_empty()
            && s.len() <= 32
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    };
    word(family) && word(size) && family.starts_with(|c: char| c.is_ascii_lowercase())
}

/// `borrowLimit` value meaning "no limit".
pub const UNLIMITED_BORROW: i32 = -1;

/// `maxCapacity` instances of one SageMaker instance type (the capacity unit).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CapacityLimit {
    pub instance_type: String,
    pub max_capacity: u32,
}

impl CapacityLimit {
    pub fn new(instance_type: impl Into<String>, max_capacity: u32) -> Self {
        Self {
            instance_type: instance_type.into(),
            max_capacity,
        }
    }
}

/// What a share does with its idle capacity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum SharingStrategy {
    /// Idle capacity stays idle for the owner; never lends, never borrows.
    Reserve,
    /// Idle capacity may be used by borrowing shares; never borrows.
    Lend,
    /// Lends, and borrows others' idle capacity up to `borrow_limit` percent.
    LendAndBorrow,
}

impl SharingStrategy {
    pub fn lends(self) -> bool {
        !matches!(self, SharingStrategy::Reserve)
    }
    pub fn borrows(self) -> bool {
        matches!(self, SharingStrategy::LendAndBorrow)
    }
    pub fn as_str(self) -> &'static str {
        match self {
            SharingStrategy::Reserve => "RESERVE",
            SharingStrategy::Lend => "LEND",
            SharingStrategy::LendAndBorrow => "LEND_AND_BORROW",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "RESERVE" => Some(Self::Reserve),
            "LEND" => Some(Self::Lend),
            "LEND_AND_BORROW" => Some(Self::LendAndBorrow),
            _ => None,
        }
    }
}

/// `resourceSharingConfiguration`: the strategy and, for `LEND_AND_BORROW` only, the borrow limit
/// as a percentage of the share's own `maxCapacity` per instance type (-1 = unlimited).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SharingConfig {
    pub strategy: SharingStrategy,
    pub borrow_limit: Option<i32>,
}

impl SharingConfig {
    pub fn reserve() -> Self {
        Self {
            strategy: SharingStrategy::Reserve,
            borrow_limit: None,
        }
    }
    pub fn lend() -> Self {
        Self {
            strategy: SharingStrategy::Lend,
            borrow_limit: None,
        }
    }
    pub fn lend_and_borrow(borrow_limit: i32) -> Self {
        Self {
            strategy: SharingStrategy::LendAndBorrow,
            borrow_limit: Some(borrow_limit),
        }
    }
    /// The effective borrow limit in percent, `None` when borrowing is unlimited, `Some(0)` when
    /// the share cannot borrow at all.
    pub fn borrow_percent(&self) -> Option<u32> {
        if !self.strategy.borrows() {
            return Some(0);
        }
        match self.borrow_limit.unwrap_or(UNLIMITED_BORROW) {
            UNLIMITED_BORROW => None,
            p => Some(p.max(0) as u32),
        }
    }
    /// Most instances of one type the share may borrow given its own limit for that type.
    pub fn borrow_cap(&self, own: u32) -> Option<u32> {
        self.borrow_percent()
            .map(|p| ((own as u64 * p as u64) / 100).min(u32::MAX as u64) as u32)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum InSharePreemption {
    Enabled,
    Disabled,
}

impl InSharePreemption {
    pub fn enabled(self) -> bool {
        matches!(self, Self::Enabled)
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Enabled => "ENABLED",
            Self::Disabled => "DISABLED",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ShareState {
    Enabled,
    Disabled,
}

impl ShareState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Enabled => "ENABLED",
            Self::Disabled => "DISABLED",
        }
    }
}

/// A quota share as written in a scenario, a shares file or a replay config that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShareSpecError {
    #[error("share {share}: strategy {strategy:?} is not RESERVE, LEND or LEND_AND_BORROW")]
    BadStrategy { share: String, strategy: String },
    /// Generators in a file that only configures shares; `place` names such files.
    #[error("share {share}: workload generators belong in emulator scenarios, not {place}")]
    Generators { share: String, place: &'static str },
}

/// A quota share: a virtual queue inside a job queue with its own capacity limits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuotaShare {
    pub name: String,
    pub capacity_limits: Vec<CapacityLimit>,
    pub sharing: SharingConfig,
    pub in_share_preemption: InSharePreemption,
    pub state: ShareState,
    /// What AWS says of the share's configuration when it is not `VALID`: `CREATING`,
    /// `UPDATING`, `DELETING` or `INVALID` (as sent: raw text, clean it to show it). `None`
    /// when valid, or not sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

impl QuotaShare {
    /// An enabled share with in-share preemption disabled.
    pub fn new(
        name: impl Into<String>,
        limits: Vec<CapacityLimit>,
        sharing: SharingConfig,
    ) -> Self {
        Self {
            name: name.into(),
            capacity_limits: limits,
            sharing,
            in_share_preemption: InSharePreemption::Disabled,
            state: ShareState::Enabled,
            status: None,
        }
    }
    pub fn with_in_share_preemption(mut self, on: bool) -> Self {
        self.in_share_preemption = if on {
            InSharePreemption::Enabled
        } else {
            InSharePreemption::Disabled
        };
        self
    }
    /// The share's own limit for an instance type (0 when the type is not among its limits).
    pub fn limit_for(&self, instance_type: &str) -> u32 {
        self.capacity_limits
            .iter()
            .find(|l| l.instance_type == instance_type)
            .map_or(0, |l| l.max_capacity)
    }
}

/// The service environment behind a queue: total capacity per instance type.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ServiceEnvironment {
    pub name: String,
    pub capacity: Vec<CapacityLimit>,
}

impl ServiceEnvironment {
    pub fn capacity_for(&self, instance_type: &str) -> u32 {
        self.capacity
            .iter()
            .find(|l| l.instance_type == instance_type)
            .map_or(0, |l| l.max_capacity)
    }
}

#[cfg(test)]
mod instance_type_tests {
    use super::is_training_instance_type;

    #[test]
    fn the_form_is_ml_family_size() {
        for ok in [
            "ml.p4d.24xlarge",
            "ml.g5.xlarge",
            "ml.m5.large",
            "ml.p6-b200.48xlarge",
            "ml.trn1n.32xlarge",
            "ml.x9.huge",
        ] {
            assert!(is_training_instance_type(ok), "{ok}");
        }
        for bad in [
            "foo",
            "NUM_INSTANCES",
            "ml.p4d",
            "p4d.24xlarge",
            "ml..large",
            "ml.P4D.24xlarge",
            "ml.p4d.24xlarge.extra",
            "ml.4d.24xlarge",
            "",
        ] {
            assert!(!is_training_instance_type(bad), "{bad}");
        }
    }
}
