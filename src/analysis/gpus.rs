//! GPUs (or accelerator chips) per SageMaker training instance type, for GPU-hours.

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
}
