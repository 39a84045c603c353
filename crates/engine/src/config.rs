use quotatop_model::CapacityLimit;

/// Delays of the lifecycle steps, in simulated milliseconds. Each step takes `base + U(0..=jitter)`
/// drawn from the seeded generator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Delays {
    /// SUBMITTED → PENDING.
    pub submitted_ms: u64,
    /// PENDING → RUNNABLE.
    pub pending_ms: u64,
    /// SCHEDULED → STARTING.
    pub scheduled_ms: u64,
    /// STARTING → RUNNING.
    pub starting_ms: u64,
    /// PREEMPTION_IN_PROGRESS → RUNNABLE (the capacity is held until then).
    pub preemption_ms: u64,
    /// Added to each step: uniform in 0..=jitter_ms.
    pub jitter_ms: u64,
}

/// What an engine is created with.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineConfig {
    /// The service environment's capacity per instance type.
    pub capacity: Vec<CapacityLimit>,
    pub delays: Delays,
    pub seed: u64,
    /// Size of the `recentPreemptedAttempts` window.
    pub recent_preemptions: usize,
    /// Start of the simulated clock (epoch ms).
    pub start_ms: i64,
    /// Prefix of the training-job ARNs given to attempts.
    pub training_job_arn_prefix: String,
    /// Seed of a separate stream for job ids and training-job names. `None`: ids come from the
    /// schedule's own draws, so the same `seed` gives the same ids (reproducible tests). `Some`:
    /// ids come from this stream instead, while the schedule's draws stay exactly the same.
    pub id_seed: Option<u64>,
}

impl EngineConfig {
    pub fn new(capacity: Vec<CapacityLimit>) -> Self {
        Self {
            capacity,
            delays: Delays::default(),
            seed: 0,
            recent_preemptions: 5,
            start_ms: 0,
            training_job_arn_prefix: "arn:aws:sagemaker:us-east-1:123456789012:training-job/"
                .to_string(),
            id_seed: None,
        }
    }
    pub fn with_delays(mut self, delays: Delays) -> Self {
        self.delays = delays;
        self
    }
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }
    pub fn with_start(mut self, start_ms: i64) -> Self {
        self.start_ms = start_ms;
        self
    }
}
