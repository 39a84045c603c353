//! A job's instance type and count from what AWS sent: `capacityUsage` (ListServiceJobs and
//! DescribeServiceJob) and the SageMaker payload's `ResourceConfig` (DescribeServiceJob only).
//!
//! The API reference says a service job's `capacityUnit` is its instance type, but also lets it
//! report other units (`NUM_INSTANCES`): such a unit is never counted as an instance type (it
//! became a phantom `NUM_INSTANCES 1/0, borrowed` row). The payload's `InstanceType` is used
//! instead (or, for a job known only from its listing, the share's one limit type, see
//! [`resolve_from_share`]), and every disagreement is noted on the job.

use quotatop_model::{CapacityUsed, QuotaShare, is_instance_type};

/// What the job holds, as worked out from what AWS sent.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Capacity {
    /// Empty when no instance type is known (a listing whose unit is not one).
    pub instance_type: String,
    pub instance_count: u32,
    /// `capacityUsage` as sent.
    pub used: Vec<CapacityUsed>,
    /// Where the sources disagree, and what was used.
    pub notes: Vec<String>,
}

fn count_of(q: f64) -> u32 {
    q.max(0.0).round().min(f64::from(u32::MAX)) as u32
}

/// `ResourceConfig.InstanceType` and `InstanceCount` of a CreateTrainingJob payload.
fn payload_resources(payload: Option<&str>) -> Option<(String, u32)> {
    let v: serde_json::Value = serde_json::from_str(payload?).ok()?;
    let rc = v.get("ResourceConfig")?;
    let t = rc.get("InstanceType")?.as_str()?.to_string();
    let n = rc.get("InstanceCount").and_then(serde_json::Value::as_u64);
    Some((t, n.map_or(1, |n| n.min(u64::from(u32::MAX)) as u32)))
}

/// The job's capacity from its `capacityUsage` entries (unit, quantity) and its payload.
pub fn capacity(usage: &[(Option<&str>, Option<f64>)], payload: Option<&str>) -> Capacity {
    let used: Vec<CapacityUsed> = usage
        .iter()
        .filter_map(|&(u, q)| {
            Some(CapacityUsed {
                unit: u?.to_string(),
                quantity: q.unwrap_or(0.0),
            })
        })
        .collect();
    let from_payload = payload_resources(payload);
    let mut notes = Vec::new();
    let typed = used.iter().find(|u| is_instance_type(&u.unit));
    let other = used.iter().find(|u| !is_instance_type(&u.unit));
    let (instance_type, instance_count) = match (typed, other, &from_payload) {
        (Some(u), _, p) => {
            let n = count_of(u.quantity);
            if let Some((t, c)) = p.as_ref().filter(|(t, c)| *t != u.unit || *c != n) {
                notes.push(format!(
                    "capacityUsage says {n} × {}, the payload's ResourceConfig {c} × {t}: counted as capacityUsage says",
                    u.unit
                ));
            }
            (u.unit.clone(), n)
        }
        (None, Some(u), Some((t, c))) => {
            notes.push(format!(
                "capacityUsage reports {} {}, which is not an instance type: counted as the payload's ResourceConfig, {c} × {t}",
                u.quantity, u.unit
            ));
            (t.clone(), *c)
        }
        (None, Some(u), None) => {
            notes.push(format!(
                "capacityUsage reports {} {}, which is not an instance type: the instance type is not known until the job is described",
                u.quantity, u.unit
            ));
            (String::new(), count_of(u.quantity))
        }
        (None, None, p) => p.clone().unwrap_or_default(),
    };
    Capacity {
        instance_type,
        instance_count,
        used,
        notes,
    }
}

/// A listed job whose unit was not an instance type (no instance type known): its share's
/// limit type when the share has exactly one, noted; else it stays unknown.
pub fn resolve_from_share(
    instance_type: &mut String,
    notes: &mut Vec<String>,
    share: Option<&QuotaShare>,
) {
    if !instance_type.is_empty() {
        return;
    }
    let Some(share) = share else {
        return;
    };
    if let [only] = share.capacity_limits.as_slice() {
        instance_type.clone_from(&only.instance_type);
        notes.push(format!(
            "counted as {}, the only instance type of quota share {}'s limits",
            only.instance_type, share.name
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAYLOAD: &str =
        r#"{"ResourceConfig":{"InstanceType":"ml.p4d.24xlarge","InstanceCount":2}}"#;

    #[test]
    fn a_unit_that_is_not_an_instance_type_is_never_counted_as_one() {
        let c = capacity(&[(Some("NUM_INSTANCES"), Some(2.0))], Some(PAYLOAD));
        assert_eq!(
            (c.instance_type.as_str(), c.instance_count),
            ("ml.p4d.24xlarge", 2)
        );
        assert_eq!(c.notes.len(), 1, "{:?}", c.notes);
        assert!(c.notes[0].contains("NUM_INSTANCES"), "{:?}", c.notes);
        let listed = capacity(&[(Some("NUM_INSTANCES"), Some(1.0))], None);
        assert_eq!(
            (listed.instance_type.as_str(), listed.instance_count),
            ("", 1)
        );
        assert_eq!(listed.notes.len(), 1);
    }

    #[test]
    fn an_instance_type_unit_is_used_and_a_disagreeing_payload_noted() {
        let same = capacity(&[(Some("ml.p4d.24xlarge"), Some(2.0))], Some(PAYLOAD));
        assert_eq!(same.instance_type, "ml.p4d.24xlarge");
        assert!(same.notes.is_empty(), "{:?}", same.notes);
        let differs = capacity(&[(Some("ml.g5.12xlarge"), Some(1.0))], Some(PAYLOAD));
        assert_eq!(
            (differs.instance_type.as_str(), differs.instance_count),
            ("ml.g5.12xlarge", 1)
        );
        assert_eq!(differs.notes.len(), 1);
        let none = capacity(&[], Some(PAYLOAD));
        assert_eq!(
            (none.instance_type.as_str(), none.instance_count),
            ("ml.p4d.24xlarge", 2)
        );
        assert!(none.notes.is_empty());
    }
}
