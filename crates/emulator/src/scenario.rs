//! Scenario files (`scenarios/*.toml`): the world an emulator starts with.
//!
//! ```toml
//! name = "demo"
//! seed = 7                    # one seed for job ids, delays and workload draws
//! speed = 60.0                # simulated seconds per real second (the CLI's --speed overrides)
//! faults = ""                 # optional fault spec, see `faults.rs` (the CLI's --faults overrides)
//!
//! [queue]
//! name = "ml-training"        # the quota-management job queue
//! scheduling_policy = "ml-training-qm"
//! service_environment = "ml-training-se"
//!
//! [[capacity]]                # the service environment's capacity limits
//! instance_type = "ml.p4d.24xlarge"
//! max = 12
//!
//! [delays]                    # engine lifecycle delays, simulated ms (all optional)
//! starting_ms = 60000
//!
//! [[shares]]
//! name = "research"
//! strategy = "LEND_AND_BORROW"   # RESERVE | LEND | LEND_AND_BORROW
//! borrow_limit = 200             # percent; LEND_AND_BORROW only; -1 or omitted = unlimited
//! in_share_preemption = true
//! limits = { "ml.p4d.24xlarge" = 4 }
//!
//! [[shares.generators]]          # a Poisson stream of jobs into this share
//! name = "sweep"                 # job name prefix
//! arrivals_per_hour = 6.0
//! instance_type = "ml.p4d.24xlarge"
//! instance_counts = [1, 2]       # drawn uniformly (repeat a value to weight it)
//! priorities = [{ priority = 1, weight = 3 }, { priority = 50, weight = 1 }]
//! duration_s = [600, 1800]       # running time needed, uniform in [min, max]
//! checkpoint_s = 300             # optional; without it a preempted job restarts from zero
//! restore_s = 90                 # optional; running time a re-run spends restoring (default 0)
//! preemption_retries = 2         # optional; omitted = requeued forever
//! start_s = 0                    # first arrival no earlier than this (simulated seconds)
//! max_jobs = 100                 # optional cap on the stream
//!
//! [[jobs]]                       # one-off submissions at a simulated time
//! at_s = 120
//! share = "research"
//! name = "oversized-finetune"
//! instance_type = "ml.p4d.24xlarge"
//! instance_count = 20
//! duration_s = 3600
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use super::error::EmulatorError;
use quotatop_engine::{Delays, Engine, EngineConfig};
use quotatop_model::{
    CapacityLimit, InSharePreemption, QuotaShare, ShareSpecError, ShareState, SharingConfig,
    SharingStrategy,
};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    #[serde(default = "default_name")]
    pub name: String,
    #[serde(default)]
    pub seed: u64,
    #[serde(default = "default_speed")]
    pub speed: f64,
    #[serde(default)]
    pub faults: Option<String>,
    pub queue: QueueSpec,
    pub capacity: Vec<CapacitySpec>,
    #[serde(default)]
    pub delays: Delays,
    #[serde(default)]
    pub shares: Vec<ShareSpec>,
    #[serde(default)]
    pub jobs: Vec<ScriptedJob>,
}

fn default_name() -> String {
    "scenario".to_string()
}

fn default_speed() -> f64 {
    60.0
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueSpec {
    pub name: String,
    #[serde(default = "default_policy")]
    pub scheduling_policy: String,
    #[serde(default = "default_environment")]
    pub service_environment: String,
    #[serde(default = "default_priority")]
    pub priority: i64,
}

fn default_policy() -> String {
    "quota-policy".to_string()
}
fn default_environment() -> String {
    "service-environment".to_string()
}
fn default_priority() -> i64 {
    1
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapacitySpec {
    pub instance_type: String,
    pub max: u32,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShareSpec {
    pub name: String,
    pub strategy: String,
    #[serde(default)]
    pub borrow_limit: Option<i32>,
    #[serde(default)]
    pub in_share_preemption: bool,
    #[serde(default)]
    pub disabled: bool,
    pub limits: BTreeMap<String, u32>,
    #[serde(default)]
    pub generators: Vec<GeneratorSpec>,
}

impl ShareSpec {
    /// The share as the engine takes it.
    pub fn to_quota_share(&self) -> Result<QuotaShare, ShareSpecError> {
        let strategy =
            SharingStrategy::parse(&self.strategy).ok_or_else(|| ShareSpecError::BadStrategy {
                share: self.name.clone(),
                strategy: self.strategy.clone(),
            })?;
        let sharing = SharingConfig {
            strategy,
            borrow_limit: if strategy.borrows() {
                Some(
                    self.borrow_limit
                        .unwrap_or(quotatop_model::UNLIMITED_BORROW),
                )
            } else {
                self.borrow_limit
            },
        };
        Ok(QuotaShare {
            name: self.name.clone(),
            capacity_limits: self
                .limits
                .iter()
                .map(|(t, &n)| CapacityLimit::new(t.clone(), n))
                .collect(),
            sharing,
            in_share_preemption: if self.in_share_preemption {
                InSharePreemption::Enabled
            } else {
                InSharePreemption::Disabled
            },
            state: if self.disabled {
                ShareState::Disabled
            } else {
                ShareState::Enabled
            },
            status: None,
        })
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeneratorSpec {
    pub name: String,
    pub arrivals_per_hour: f64,
    pub instance_type: String,
    #[serde(default = "default_counts")]
    pub instance_counts: Vec<u32>,
    #[serde(default)]
    pub priorities: Vec<PriorityWeight>,
    pub duration_s: [u64; 2],
    #[serde(default)]
    pub checkpoint_s: Option<u64>,
    /// Running time each re-run spends restoring before it makes progress (default 0).
    #[serde(default)]
    pub restore_s: Option<u64>,
    #[serde(default)]
    pub preemption_retries: Option<u32>,
    #[serde(default)]
    pub start_s: u64,
    #[serde(default)]
    pub max_jobs: Option<u32>,
    /// `retryStrategy.attempts` of each job (1–10; default 1).
    #[serde(default)]
    pub attempts: Option<u32>,
    /// `timeoutConfig.attemptDurationSeconds` of each job.
    #[serde(default)]
    pub timeout_s: Option<u64>,
    /// Share of jobs (0–1) whose first attempt fails after `fail_after_s` of RUNNING.
    #[serde(default)]
    pub fail_rate: Option<f64>,
    #[serde(default)]
    pub fail_after_s: Option<u64>,
    /// Tags each job carries, as SubmitServiceJob's `tags` (e.g. `"quotatop:class" =
    /// "incident"`): DescribeServiceJob shows them.
    #[serde(default)]
    pub tags: std::collections::BTreeMap<String, String>,
}

fn default_counts() -> Vec<u32> {
    vec![1]
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PriorityWeight {
    pub priority: i64,
    pub weight: f64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedJob {
    pub at_s: u64,
    pub share: String,
    pub name: String,
    pub instance_type: String,
    #[serde(default = "default_count")]
    pub instance_count: u32,
    #[serde(default)]
    pub priority: i64,
    pub duration_s: u64,
    #[serde(default)]
    pub checkpoint_s: Option<u64>,
    /// `corrupt` or `never-restored`: the job writes checkpoints every `checkpoint_s` that no
    /// attempt can use, so the engine runs it without checkpoints.
    #[serde(default)]
    pub checkpoint_fault: Option<String>,
    /// Running time each re-run spends restoring before it makes progress (default 0): its
    /// log's restore line comes that long after its start.
    #[serde(default)]
    pub restore_s: Option<u64>,
    #[serde(default)]
    pub preemption_retries: Option<u32>,
    /// `retryStrategy.attempts` (1–10; default 1).
    #[serde(default)]
    pub attempts: Option<u32>,
    /// `timeoutConfig.attemptDurationSeconds`.
    #[serde(default)]
    pub timeout_s: Option<u64>,
    /// `StoppingCondition.MaxRuntimeInSeconds` (a job whose `duration_s` reaches it fails there).
    #[serde(default)]
    pub max_runtime_s: Option<u64>,
    /// The first `fail_attempts` (default 1) attempts fail after this much RUNNING.
    #[serde(default)]
    pub fail_after_s: Option<u64>,
    #[serde(default)]
    pub fail_attempts: Option<u32>,
    /// Tags the job carries, as SubmitServiceJob's `tags`: DescribeServiceJob shows them.
    #[serde(default)]
    pub tags: std::collections::BTreeMap<String, String>,
}

fn default_count() -> u32 {
    1
}

impl Scenario {
    pub fn load(path: &Path) -> Result<Self, EmulatorError> {
        let text = quotatop_model::read_small_text(path, quotatop_model::MAX_SMALL_FILE).map_err(
            |source| EmulatorError::ReadScenario {
                path: path.display().to_string(),
                source,
            },
        )?;
        Self::parse(&text).map_err(|e| match e {
            EmulatorError::Scenario(message) => EmulatorError::ParseScenario {
                path: path.display().to_string(),
                message,
            },
            other => other,
        })
    }

    pub fn parse(text: &str) -> Result<Self, EmulatorError> {
        let scenario: Scenario =
            toml::from_str(text).map_err(|e| EmulatorError::Scenario(e.to_string()))?;
        scenario.validate()?;
        Ok(scenario)
    }

    /// A minimal world: one queue, the given capacity, no shares and no workload.
    pub fn empty(queue: &str, capacity: Vec<CapacityLimit>) -> Self {
        Self {
            name: "empty".to_string(),
            seed: 0,
            speed: default_speed(),
            faults: None,
            queue: QueueSpec {
                name: queue.to_string(),
                scheduling_policy: default_policy(),
                service_environment: default_environment(),
                priority: default_priority(),
            },
            capacity: capacity
                .into_iter()
                .map(|l| CapacitySpec {
                    instance_type: l.instance_type,
                    max: l.max_capacity,
                })
                .collect(),
            delays: Delays::default(),
            shares: Vec::new(),
            jobs: Vec::new(),
        }
    }

    pub fn capacity_limits(&self) -> Vec<CapacityLimit> {
        self.capacity
            .iter()
            .map(|c| CapacityLimit::new(c.instance_type.clone(), c.max))
            .collect()
    }

    /// An engine configuration with this scenario's delays and seed over `capacity` (also for
    /// queues created through the API).
    pub fn engine_config(
        &self,
        capacity: Vec<CapacityLimit>,
        start_ms: i64,
        id_seed: Option<u64>,
        base: &super::account::ArnBase,
    ) -> EngineConfig {
        let mut config = EngineConfig::new(capacity)
            .with_delays(self.delays)
            .with_seed(self.seed)
            .with_start(start_ms);
        config.id_seed = id_seed;
        config.training_job_arn_prefix = format!(
            "arn:aws:sagemaker:{}:{}:training-job/",
            base.region, base.account
        );
        config
    }

    /// The quota shares as the engine takes them.
    pub fn quota_shares(&self) -> Result<Vec<QuotaShare>, EmulatorError> {
        self.shares
            .iter()
            .map(|s| {
                s.to_quota_share()
                    .map_err(|e| EmulatorError::Scenario(e.to_string()))
            })
            .collect()
    }

    /// The engine with the scenario's environment and shares, its clock at `start_ms`.
    pub fn build_engine(&self, start_ms: i64) -> Result<Engine, EmulatorError> {
        self.build_engine_with_ids(start_ms, None, &super::account::ArnBase::default())
    }

    /// [`Scenario::build_engine`] with job ids from their own stream when `id_seed` is set
    /// (the schedule stays the seed's), training jobs named in `base`'s region and account.
    pub fn build_engine_with_ids(
        &self,
        start_ms: i64,
        id_seed: Option<u64>,
        base: &super::account::ArnBase,
    ) -> Result<Engine, EmulatorError> {
        let mut config = self.engine_config(self.capacity_limits(), start_ms, id_seed, base);
        config.id_seed = id_seed;
        let mut engine = Engine::new(config)?;
        for share in self.quota_shares()? {
            engine.create_share(share)?;
        }
        Ok(engine)
    }
}

/// Names of jobs and quota shares: a resource name ([`valid_resource_name`]) starting with a
/// letter or digit.
pub fn valid_job_or_share_name(name: &str) -> bool {
    valid_resource_name(name) && name.starts_with(|c: char| c.is_ascii_alphanumeric())
}

/// Names of queues, environments and policies: 1–128 of `[A-Za-z0-9_-]`.
pub fn valid_resource_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"
        [queue]
        name = "q"
        [[capacity]]
        instance_type = "ml.m5.large"
        max = 2
        [[shares]]
        name = "a"
        strategy = "LEND"
        limits = { "ml.m5.large" = 1 }
    "#;

    #[test]
    fn speed_and_arrival_rates_are_bounded() {
        let generator = |rate: &str, cap: &str| {
            format!(
                "{MINIMAL}\n[[shares.generators]]\nname = \"g\"\narrivals_per_hour = {rate}\ninstance_type = \"ml.m5.large\"\ninstance_counts = [1]\nduration_s = [60, 120]\n{cap}\n"
            )
        };
        assert!(Scenario::parse(&generator("3600.0", "")).is_ok());
        assert!(Scenario::parse(&generator("30000.0", "max_jobs = 100")).is_ok());
        for (text, want) in [
            (
                generator("1e12", "max_jobs = 100"),
                "arrivals_per_hour must be at most 36000",
            ),
            (generator("7200.0", ""), "set max_jobs to bound the stream"),
            (
                format!("speed = 1e300\n{MINIMAL}"),
                "speed must be a number from 0 (frozen) to 3600",
            ),
            (
                format!("speed = -1.0\n{MINIMAL}"),
                "speed must be a number from 0",
            ),
        ] {
            let e = Scenario::parse(&text).unwrap_err().to_string();
            assert!(e.contains(want), "{e} vs {want}");
        }
        assert!(super::super::check_speed(3600.0).is_ok());
        assert!(super::super::check_speed(3600.5).is_err());
        assert!(super::super::check_speed(f64::NAN).is_err());
    }

    #[test]
    fn minimal_scenario_builds_an_engine() {
        let s = Scenario::parse(MINIMAL).unwrap();
        assert_eq!(s.speed, 60.0);
        let e = s.build_engine(1_000).unwrap();
        assert_eq!(e.shares().len(), 1);
        assert_eq!(e.now(), 1_000);
    }

    #[test]
    fn typos_and_bad_values_are_refused_with_a_message() {
        let typo = MINIMAL.replace("strategy = \"LEND\"", "stratgy = \"LEND\"");
        assert!(Scenario::parse(&typo).is_err());
        let bad = MINIMAL.replace("\"LEND\"", "\"SHARE\"");
        let e = Scenario::parse(&bad).unwrap_err().to_string();
        assert!(e.contains("RESERVE, LEND or LEND_AND_BORROW"), "{e}");
    }

    #[test]
    fn shipped_scenarios_pass_validation() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
        for entry in std::fs::read_dir(dir).unwrap() {
            let p = entry.unwrap().path();
            if p.extension().is_some_and(|x| x == "toml") {
                Scenario::load(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            }
        }
    }

    #[test]
    fn durations_beyond_100_years_and_bad_counts_are_refused() {
        let job = |fields: &str| {
            format!(
                "{MINIMAL}\n[[jobs]]\nshare = \"a\"\nname = \"j\"\ninstance_type = \"ml.m5.large\"\n{fields}\n"
            )
        };
        assert!(Scenario::parse(&job("at_s = 0\nduration_s = 60")).is_ok());
        for (fields, want) in [
            (
                "at_s = 3155760001\nduration_s = 60",
                "job j: at_s: 3155760001 is beyond 100 years",
            ),
            (
                "at_s = 0\nduration_s = 9223372036854775807",
                "job j: duration_s: 9223372036854775807 is beyond 100 years",
            ),
            (
                "at_s = 0\nduration_s = 60\ncheckpoint_s = 18446744073709552",
                "job j: checkpoint_s: 18446744073709552 is beyond 100 years",
            ),
            (
                "at_s = 0\nduration_s = 60\ninstance_count = 0",
                "job j: instance_count must be at least 1",
            ),
            (
                "at_s = 0\nduration_s = 60\npriority = -1",
                "job j: priority: -1 is not a priority from 0 to 9999",
            ),
        ] {
            let e = Scenario::parse(&job(fields)).unwrap_err().to_string();
            assert!(e.contains(want), "{e} vs {want}");
        }
        let slow = MINIMAL.replace(
            "[[shares]]",
            "[delays]\nstarting_ms = 3155760000001\n[[shares]]",
        );
        let e = Scenario::parse(&slow).unwrap_err().to_string();
        assert!(
            e.contains("delays.starting_ms: 3155760000001 is beyond 100 years"),
            "{e}"
        );
    }
}
