use quotatop_model::Millis;

/// Why the engine refused an operation. A refused operation leaves the state unchanged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EngineError {
    #[error("quota share {0} does not exist")]
    UnknownShare(String),
    #[error("quota share {0} already exists")]
    DuplicateShare(String),
    #[error("a job queue can have at most {max} quota shares")]
    TooManyShares { max: usize },
    #[error("invalid quota share name {0:?}: use 1-128 letters, digits, '-' or '_'")]
    InvalidShareName(String),
    #[error("a quota share needs 1 to 5 capacity limits, got {0}")]
    LimitCount(usize),
    #[error("capacity limit for {0} must be at least 1")]
    LimitBelowOne(String),
    #[error("capacity unit {0} appears more than once")]
    DuplicateLimit(String),
    #[error("invalid capacity unit {0:?}")]
    InvalidInstanceType(String),
    #[error("borrowLimit is only valid with the LEND_AND_BORROW strategy, not {0}")]
    BorrowLimitNotAllowed(&'static str),
    #[error("borrowLimit must be -1 (unlimited) or at least 0, got {0}")]
    InvalidBorrowLimit(i32),
    #[error("quota share {0} is DISABLED and accepts no new jobs")]
    ShareDisabled(String),
    #[error("quota share {0} must be DISABLED before it can be deleted")]
    ShareNotDisabled(String),
    #[error("schedulingPriority must be between 0 and 9999, got {0}")]
    PriorityOutOfRange(i64),
    #[error("instance count must be at least 1")]
    InvalidInstanceCount,
    #[error("job {0} does not exist")]
    UnknownJob(String),
    #[error("job {0} has already finished")]
    JobFinished(String),
    #[error("the clock cannot go back from {now} to {to}")]
    ClockBackwards { now: Millis, to: Millis },
    #[error("service environment capacity for {0} must be at least 1")]
    InvalidEnvironment(String),
    /// An internal fault, never the caller's: the placement rules contradict each other.
    #[error(
        "scheduling does not settle at {at} ms: job {job} was preempted {times} times at this one instant (jobs preempting each other in turn); this is a fault in quotatop's engine"
    )]
    PreemptionLoop { at: Millis, job: String, times: u32 },
    /// An internal fault, never the caller's: a scheduling pass would not end.
    #[error("at {at} ms, job {job}: {source}; this is a fault in quotatop's engine")]
    NoFixpoint {
        at: Millis,
        job: String,
        source: crate::placement::NoFixpoint,
    },
}
