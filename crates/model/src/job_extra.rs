//! What DescribeServiceJob says of a job that the console shows but does not compute with:
//! its retry strategy, its timeout, its tags, its `capacityUsage` as sent, and the notes of
//! where what AWS sent disagrees with itself or was out of range (and what was used instead).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// `retryStrategy.evaluateOnExit[]`: what to do when an attempt ends with a matching reason.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ExitRule {
    /// `RETRY` or `EXIT`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// The glob matched against the attempt's status reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_status_reason: Option<String>,
}

/// `retryStrategy`: attempts the job is given, and the rules deciding a retry.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RetryStrategy {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempts: Option<i64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evaluate_on_exit: Vec<ExitRule>,
}

/// One `capacityUsage` entry as AWS sent it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CapacityUsed {
    pub unit: String,
    pub quantity: f64,
}

/// The job's fields beyond those the console computes with (see the module doc). Empty for a
/// job known only from its listing.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct JobExtras {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<RetryStrategy>,
    /// `timeoutConfig.attemptDurationSeconds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<i64>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tags: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capacity_usage: Vec<CapacityUsed>,
    /// Where what AWS sent disagrees with itself or is out of range, and what the console
    /// used instead (shown in Job detail and by `snapshot`). Raw text: clean it to show it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl JobExtras {
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// For `skip_serializing_if` on a boxed [`JobExtras`].
pub(crate) fn no_extras(e: &JobExtras) -> bool {
    e.is_empty()
}

/// Whether a `capacityUnit` names an instance type (`ml.p4d.24xlarge`, `m5.large`): what the
/// API reference says a service job reports. A unit such as `NUM_INSTANCES` does not (it has
/// no family and size), and must not be counted as one.
pub fn is_instance_type(unit: &str) -> bool {
    let mut parts = unit.split('.');
    let ok = |p: Option<&str>| {
        p.is_some_and(|p| {
            !p.is_empty()
                && p.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        })
    };
    // `family.size` or `ml.family.size`.
    let (a, b) = (parts.next(), parts.next());
    ok(a) && ok(b) && parts.all(|p| ok(Some(p)))
}

#[cfg(test)]
mod tests {
    use super::is_instance_type;

    #[test]
    fn instance_types_are_told_from_other_units() {
        for t in [
            "ml.p4d.24xlarge",
            "ml.g5.12xlarge",
            "m5.large",
            "p4d.24xlarge",
        ] {
            assert!(is_instance_type(t), "{t}");
        }
        for u in [
            "NUM_INSTANCES",
            "",
            "ml.",
            "VCPU",
            "ml.P4D.24XLARGE",
            "gpu count",
        ] {
            assert!(!is_instance_type(u), "{u}");
        }
    }
}
