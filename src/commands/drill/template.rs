//! The drill's job template: a SageMaker CreateTrainingJob request (or a SubmitServiceJob-like
//! object holding one in `serviceRequestPayload`), turned into each drill job's payload with its
//! instance type, count and length; its stopping condition is kept as it is.

use std::collections::BTreeMap;

use anyhow::{Context, bail};
use serde_json::{Map, Value};

use quotatop_model::Millis;

/// Tag every drill job carries: `quotatop:drill=<run id>`.
pub const DRILL_TAG: &str = "quotatop:drill";
/// Environment variable each drill job's payload carries: how many seconds it should work.
pub const LENGTH_ENV: &str = "QUOTATOP_DRILL_SECONDS";

#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    payload: Map<String, Value>,
    /// The template's own tags (the drill's are added).
    pub tags: BTreeMap<String, String>,
    /// `StoppingCondition.MaxRuntimeInSeconds`, in ms.
    pub max_runtime_ms: Millis,
}

impl Template {
    pub fn load(path: &std::path::Path) -> anyhow::Result<Self> {
        let text = quotatop_model::read_small_text(path, quotatop_model::MAX_SMALL_FILE)
            .with_context(|| format!("cannot read the template {}", path.display()))?;
        Self::parse(&text).with_context(|| format!("template {}", path.display()))
    }

    pub fn parse(text: &str) -> anyhow::Result<Self> {
        let v: Value = serde_json::from_str(text).context("not JSON")?;
        let Value::Object(mut top) = v else {
            bail!("must be a JSON object");
        };
        let mut tags = BTreeMap::new();
        let payload = match top.remove("serviceRequestPayload") {
            None => top,
            Some(p) => {
                if let Some(Value::Object(t)) = top.get("tags") {
                    for (k, v) in t {
                        if let Value::String(v) = v {
                            tags.insert(k.clone(), v.clone());
                        }
                    }
                }
                match p {
                    Value::Object(o) => o,
                    Value::String(s) => match serde_json::from_str(&s) {
                        Ok(Value::Object(o)) => o,
                        _ => bail!("serviceRequestPayload is not a JSON object"),
                    },
                    _ => bail!("serviceRequestPayload is not a JSON object"),
                }
            }
        };
        let max_runtime_s = payload
            .get("StoppingCondition")
            .and_then(|s| s.get("MaxRuntimeInSeconds"))
            .and_then(Value::as_u64)
            .filter(|&s| s > 0);
        let Some(max_runtime_s) = max_runtime_s else {
            bail!(
                "has no StoppingCondition.MaxRuntimeInSeconds: every drill job must have a stopping condition"
            );
        };
        // The drill sets its own tags; how the job checkpoints (its interval, and for the
        // emulator a checkpoint fault and how long a restore takes) is the template's to
        // declare.
        let own = [
            quotatop_model::CHECKPOINT_TAG,
            quotatop_emulator::CHECKPOINT_FAULT_TAG,
            quotatop_emulator::RESTORE_TAG,
        ];
        if let Some(k) = tags
            .keys()
            .find(|k| k.starts_with("quotatop:") && !own.contains(&k.as_str()))
        {
            bail!(
                "its tag {k} uses the quotatop: prefix, which the drill sets (only {} are the template's)",
                own.join(", ")
            );
        }
        Ok(Self {
            payload,
            tags,
            max_runtime_ms: Millis::try_from(max_runtime_s.saturating_mul(1000))
                .unwrap_or(Millis::MAX),
        })
    }

    /// The payload of one drill job: the template with its instance type and count, the
    /// training job's name, and the length in its environment.
    pub fn payload(
        &self,
        name: &str,
        instance_type: &str,
        count: u32,
        length_ms: Millis,
    ) -> String {
        let mut p = self.payload.clone();
        p.insert("TrainingJobName".into(), Value::String(name.to_string()));
        let rc = p
            .entry("ResourceConfig")
            .or_insert_with(|| Value::Object(Map::new()));
        if !rc.is_object() {
            *rc = Value::Object(Map::new());
        }
        if let Value::Object(rc) = rc {
            rc.insert("InstanceType".into(), Value::String(instance_type.into()));
            rc.insert("InstanceCount".into(), Value::from(count));
            rc.entry("VolumeSizeInGB").or_insert(Value::from(30));
        }
        let env = p
            .entry("Environment")
            .or_insert_with(|| Value::Object(Map::new()));
        if !env.is_object() {
            *env = Value::Object(Map::new());
        }
        if let Value::Object(env) = env {
            env.insert(
                LENGTH_ENV.into(),
                Value::String((length_ms / 1000).to_string()),
            );
        }
        // Each drill job checkpoints under a prefix of its own (the template's, then its name),
        // so its checkpoints can be told from the other jobs' and measured.
        if let Some(uri) = Self::checkpoint_uri_in(&Value::Object(p.clone()), name)
            && let Some(Value::Object(cc)) = p.get_mut("CheckpointConfig")
        {
            cc.insert("S3Uri".into(), Value::String(uri));
        }
        Value::Object(p).to_string()
    }

    /// The `CheckpointConfig.S3Uri` of the drill job `name` (see [`Template::payload`]), when
    /// the template names one.
    pub fn checkpoint_uri(&self, name: &str) -> Option<String> {
        Self::checkpoint_uri_in(&Value::Object(self.payload.clone()), name)
    }

    fn checkpoint_uri_in(payload: &Value, name: &str) -> Option<String> {
        let base = payload.get("CheckpointConfig")?.get("S3Uri")?.as_str()?;
        Some(format!("{}/{name}/", base.trim_end_matches('/')))
    }

    /// The template's `quotatop:class` tag, which every drill job carries.
    pub fn class_tag(&self) -> Option<String> {
        quotatop_model::class_from_tags(self.tags.iter().map(|(k, v)| (k.as_str(), v.as_str())))
    }

    /// The tags of one drill job: the template's, the drill's run id, and (for the emulator)
    /// how long it works.
    pub fn tags(&self, run_id: &str, length_ms: Millis) -> BTreeMap<String, String> {
        let mut t = self.tags.clone();
        t.insert(DRILL_TAG.into(), run_id.into());
        t.insert(
            quotatop_emulator::WORK_TAG.into(),
            (length_ms / 1000).max(1).to_string(),
        );
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_template_without_a_stopping_condition_is_refused() {
        let e = Template::parse(r#"{"AlgorithmSpecification":{}}"#).unwrap_err();
        assert!(format!("{e:#}").contains("stopping condition"), "{e:#}");
        let t = Template::parse(
            r#"{"serviceRequestPayload":"{\"StoppingCondition\":{\"MaxRuntimeInSeconds\":7200}}","tags":{"team":"ml"}}"#,
        )
        .unwrap();
        assert_eq!(t.max_runtime_ms, 7_200_000);
        let p: Value = serde_json::from_str(&t.payload("j", "ml.g5.xlarge", 2, 600_000)).unwrap();
        assert_eq!(p["ResourceConfig"]["InstanceCount"], 2);
        assert_eq!(p["StoppingCondition"]["MaxRuntimeInSeconds"], 7200);
        assert_eq!(p["Environment"][LENGTH_ENV], "600");
        let tags = t.tags("run-1", 600_000);
        assert_eq!(tags[DRILL_TAG], "run-1");
        assert_eq!(tags["team"], "ml");
        // A checkpoint interval is the template's to declare; the drill's own tags are not.
        let with = |tag: &str| {
            Template::parse(&format!(
                r#"{{"serviceRequestPayload":{{"StoppingCondition":{{"MaxRuntimeInSeconds":60}}}},"tags":{{"{tag}":"300"}}}}"#
            ))
        };
        assert!(with(quotatop_model::CHECKPOINT_TAG).is_ok());
        assert!(with(DRILL_TAG).is_err());
        assert!(with(quotatop_emulator::WORK_TAG).is_err());
    }
}
