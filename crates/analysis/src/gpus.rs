//! GPUs (or accelerator chips) per SageMaker training instance type, for GPU-hours.

use std::collections::BTreeMap;

/// The built-in table; `None` for a type it does not know (callers show instance-hours only).
pub fn gpus_per_instance(instance_type: &str) -> Option<u32> {
    let t = instance_type.strip_prefix("ml.").unwrap_or(instance_type);
    let (family, size) = t.split_once('.')?;
    let n = match (family, size) {
        ("p6-b200" | "p5" | "p5e" | "p5en" | "p4d" | "p4de", _) => 8,
        ("p3", "2xlarge") => 1,
        ("p3", "8xlarge") => 4,
        ("p3", "16xlarge") | ("p3dn", "24xlarge") => 8,
        ("g4dn", "12xlarge") => 4,
        ("g4dn", _) => 1,
        ("g5" | "g6" | "g6e", "12xlarge" | "24xlarge") => 4,
        ("g5" | "g6" | "g6e", "48xlarge") => 8,
        ("g5" | "g6" | "g6e", _) => 1,
        ("trn1", "2xlarge") => 1,
        ("trn1" | "trn1n", "32xlarge") => 16,
        ("trn2", "48xlarge") => 16,
        ("m5" | "m6i" | "m7i" | "c5" | "c6i" | "c7i" | "r5" | "t3", _) => 0,
        _ => return None,
    };
    Some(n)
}

/// The built-in table with the user's overrides on top (from config: `instance type → GPUs`).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GpuTable {
    pub overrides: BTreeMap<String, u32>,
}

impl GpuTable {
    pub fn with_overrides(overrides: BTreeMap<String, u32>) -> Self {
        Self { overrides }
    }
    /// The override for `instance_type` if any, else the built-in count.
    pub fn gpus(&self, instance_type: &str) -> Option<u32> {
        self.overrides
            .get(instance_type)
            .copied()
            .or_else(|| gpus_per_instance(instance_type))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_and_unknown_types() {
        assert_eq!(gpus_per_instance("ml.p4d.24xlarge"), Some(8));
        assert_eq!(gpus_per_instance("ml.g5.2xlarge"), Some(1));
        assert_eq!(gpus_per_instance("ml.g5.12xlarge"), Some(4));
        assert_eq!(gpus_per_instance("ml.m5.large"), Some(0));
        assert_eq!(gpus_per_instance("ml.x9.huge"), None);
        assert_eq!(gpus_per_instance("nonsense"), None);
    }

    #[test]
    fn overrides_win_over_the_built_in_table() {
        let t = GpuTable::with_overrides(BTreeMap::from([
            ("ml.x9.huge".to_string(), 2),
            ("ml.g5.xlarge".to_string(), 3),
        ]));
        assert_eq!(t.gpus("ml.x9.huge"), Some(2));
        assert_eq!(t.gpus("ml.g5.xlarge"), Some(3));
        assert_eq!(t.gpus("ml.p4d.24xlarge"), Some(8));
        assert_eq!(t.gpus("ml.y1.tiny"), None);
    }
}
