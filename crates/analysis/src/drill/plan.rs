//! What a preemption drill will submit, checked against the queue as it is: the refusals, the
//! fill of the lender's idle capacity per instance type, the repetitions, the capacity held and
//! its estimated cost.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use quotatop_model::{JobStatus, Millis, QueueSnapshot, QuotaShare};

use super::super::usage::{ShareUsage, share_usage};

/// Start-up a drill job is assumed to need before RUNNING (SageMaker provisioning), for the
/// expected duration and the capacity held; the measured times are the API's.
pub const ASSUMED_STARTUP_MS: Millis = 5 * 60_000;

/// What the operator asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DrillRequest {
    pub queue: String,
    pub lender: String,
    pub borrower: String,
    /// Empty: every instance type the lender has a limit for.
    pub instance_types: Vec<String>,
    /// How long each borrower job works (RUNNING), one repetition set per length.
    pub lengths_ms: Vec<Millis>,
    pub repeat: u32,
    pub baseline: bool,
    /// The lender's priority job: its scheduling priority and how long it works.
    pub priority: u32,
    pub priority_length_ms: Millis,
    /// The borrower jobs' scheduling priority.
    pub borrower_priority: u32,
    /// `preemptionRetriesBeforeTermination` of every drill job.
    pub preemption_retries: u32,
    /// Other shares' RUNNABLE work in the lender or borrower share does not refuse the drill.
    pub allow_busy: bool,
    /// The template's `StoppingCondition.MaxRuntimeInSeconds`, in ms.
    pub max_runtime_ms: Millis,
}

/// One instance type of the drill: how the borrower fills the lender's idle capacity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TypePlan {
    pub instance_type: String,
    pub lender_limit: u32,
    /// The lender's own capacity neither used nor lent now.
    pub lender_idle: u32,
    pub borrower_limit: u32,
    /// The borrower's own capacity it does not use now.
    pub borrower_idle: u32,
    /// Instances the borrower may still borrow (its borrow limit less what it borrows now);
    /// `None`: unlimited.
    pub borrow_room: Option<u32>,
    /// Borrower jobs of one instance each: its own idle capacity, then the lender's.
    pub borrower_jobs: u32,
    /// Of those, how many instances are borrowed from the lender.
    pub borrowed: u32,
    /// Instances of the lender's priority job: all its idle capacity.
    pub priority_count: u32,
}

/// One repetition: an instance type, a length, a round (1..=repeat), or the baseline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepetitionSpec {
    /// 1-based, in the order they run.
    pub index: usize,
    pub instance_type: String,
    /// The borrower jobs' work (0 for the baseline, which submits none).
    pub length_ms: Millis,
    pub round: u32,
    /// Nothing borrows: the priority job is submitted while the lender's capacity is idle.
    pub baseline: bool,
    pub borrower_jobs: u32,
    pub priority_count: u32,
}

/// The plan printed before anything is submitted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DrillPlan {
    pub queue: String,
    pub lender: String,
    pub borrower: String,
    pub types: Vec<TypePlan>,
    pub repetitions: Vec<RepetitionSpec>,
    pub priority: u32,
    pub priority_length_ms: Millis,
    pub borrower_priority: u32,
    pub preemption_retries: u32,
    /// Expected wall time of the whole drill, with [`ASSUMED_STARTUP_MS`] per start.
    pub expected_ms: Millis,
    /// Instance-hours the drill's jobs are expected to hold, per instance type.
    pub instance_hours: BTreeMap<String, f64>,
    /// With prices: their sum over `instance_hours` (types without a price count nothing and
    /// are listed in `unpriced`).
    pub cost: Option<f64>,
    pub unpriced: Vec<String>,
}

/// Why a drill cannot be run as asked, and what to change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DrillRefusal {
    #[error("the lender and the borrower are the same share ({0}): name two shares")]
    SameShare(String),
    #[error(
        "share {share} does not lend (strategy {strategy}): change its strategy to LEND or LEND_AND_BORROW to drill it as the lender"
    )]
    NotLending {
        share: String,
        strategy: &'static str,
    },
    #[error(
        "share {share} does not borrow (strategy {strategy}{}): change it to LEND_AND_BORROW with a borrow limit above 0 to drill it as the borrower",
        borrow_limit.map(|l| format!(", borrow limit {l}%")).unwrap_or_default()
    )]
    NotBorrowing {
        share: String,
        strategy: &'static str,
        /// Its borrow limit, when its strategy borrows.
        borrow_limit: Option<i32>,
    },
    #[error(
        "share {share} has {} RUNNABLE job{} of others ({}{}): drill a quiet share, wait, or pass --allow-busy",
        waiting.len(),
        if waiting.len() == 1 { "" } else { "s" },
        waiting.iter().take(3).map(String::as_str).collect::<Vec<_>>().join(", "),
        if waiting.len() > 3 { ", …" } else { "" }
    )]
    Busy { share: String, waiting: Vec<String> },
    #[error("queue {queue} has no quota share {share:?}")]
    UnknownShare { queue: String, share: String },
    #[error("--lengths needs at least one length above zero (e.g. 10m,1h)")]
    NoLengths,
    #[error("--repeat must be at least 1")]
    NoRepeat,
    #[error(
        "the template's stopping condition (MaxRuntimeInSeconds {max_runtime_s}) is shorter than the longest drill job ({longest_s} s): raise it or drill shorter lengths"
    )]
    RuntimeTooShort { max_runtime_s: i64, longest_s: i64 },
    #[error("share {0} has no capacity limits to drill")]
    NoLimits(String),
    #[error("share {share} has no capacity of {ty} to lend (its limits: {limits})")]
    NothingToLend {
        share: String,
        ty: String,
        limits: String,
    },
    #[error(
        "share {share} has no idle {ty} now (all {limit} in use or lent): nothing to reclaim; drill when it is idle"
    )]
    NoIdle {
        share: String,
        ty: String,
        limit: u32,
    },
    #[error(
        "share {share} cannot borrow {ty}: its borrow limit ({percent}% of its own {limit}) allows no more; raise the borrow limit or give it a limit for {ty}"
    )]
    CannotBorrow {
        share: String,
        ty: String,
        percent: i32,
        limit: u32,
    },
}

/// Refuses a lender that does not lend and a borrower that does not borrow, naming the share
/// to change.
pub fn check_strategies(lender: &QuotaShare, borrower: &QuotaShare) -> Result<(), DrillRefusal> {
    if lender.name == borrower.name {
        return Err(DrillRefusal::SameShare(lender.name.clone()));
    }
    if !lender.sharing.strategy.lends() {
        return Err(DrillRefusal::NotLending {
            share: lender.name.clone(),
            strategy: lender.sharing.strategy.as_str(),
        });
    }
    if !borrower.sharing.strategy.borrows() || borrower.sharing.borrow_percent() == Some(0) {
        return Err(DrillRefusal::NotBorrowing {
            share: borrower.name.clone(),
            strategy: borrower.sharing.strategy.as_str(),
            borrow_limit: borrower
                .sharing
                .borrow_limit
                .filter(|_| borrower.sharing.strategy.borrows()),
        });
    }
    Ok(())
}

/// Refuses when the lender or the borrower share holds RUNNABLE work (the drill would delay it,
/// and it would disturb the measurements); `--allow-busy` skips this check.
pub fn check_quiet(q: &QueueSnapshot, shares: &[&str]) -> Result<(), DrillRefusal> {
    for share in shares {
        let waiting: Vec<String> = q
            .jobs
            .iter()
            .filter(|j| j.job.share == *share && j.job.status == JobStatus::Runnable)
            .map(|j| j.job.name.clone())
            .collect();
        if !waiting.is_empty() {
            return Err(DrillRefusal::Busy {
                share: share.to_string(),
                waiting,
            });
        }
    }
    Ok(())
}

/// The drill of one instance type: what the lender can lend and the borrower borrow now.
fn type_plan(
    usage: &[ShareUsage],
    lender: &QuotaShare,
    borrower: &QuotaShare,
    ty: &str,
) -> Result<TypePlan, DrillRefusal> {
    let row = |share: &str, ty: &str| {
        usage
            .iter()
            .find(|u| u.share == share && u.instance_type == ty)
            .cloned()
    };
    let lender_limit = lender.limit_for(ty);
    if lender_limit == 0 {
        return Err(DrillRefusal::NothingToLend {
            share: lender.name.clone(),
            ty: ty.to_string(),
            limits: limits_text(lender),
        });
    }
    let lender_idle = row(&lender.name, ty).map_or(lender_limit, |u| u.idle);
    if lender_idle == 0 {
        return Err(DrillRefusal::NoIdle {
            share: lender.name.clone(),
            ty: ty.to_string(),
            limit: lender_limit,
        });
    }
    let b = row(&borrower.name, ty);
    let borrower_limit = borrower.limit_for(ty);
    let borrower_idle = b.as_ref().map_or(borrower_limit, |u| u.idle);
    let borrowing_now = b.as_ref().map_or(0, |u| u.borrowed);
    let borrow_room = borrower
        .sharing
        .borrow_cap(borrower_limit)
        .map(|cap| cap.saturating_sub(borrowing_now));
    let borrowed = borrow_room.map_or(lender_idle, |r| r.min(lender_idle));
    if borrowed == 0 {
        return Err(DrillRefusal::CannotBorrow {
            share: borrower.name.clone(),
            ty: ty.to_string(),
            percent: borrower.sharing.borrow_limit.unwrap_or(-1),
            limit: borrower_limit,
        });
    }
    Ok(TypePlan {
        instance_type: ty.to_string(),
        lender_limit,
        lender_idle,
        borrower_limit,
        borrower_idle,
        borrow_room,
        borrower_jobs: borrower_idle + borrowed,
        borrowed,
        priority_count: lender_idle,
    })
}

/// Every repetition of the drill, numbered from 1: per type, the baseline (when asked), then
/// each length `repeat` times.
fn repetitions(type_plans: &[TypePlan], req: &DrillRequest) -> Vec<RepetitionSpec> {
    let mut repetitions = Vec::new();
    for t in type_plans {
        if req.baseline {
            repetitions.push(RepetitionSpec {
                index: 0,
                instance_type: t.instance_type.clone(),
                length_ms: 0,
                round: 1,
                baseline: true,
                borrower_jobs: 0,
                priority_count: t.priority_count,
            });
        }
        for &length_ms in &req.lengths_ms {
            for round in 1..=req.repeat {
                repetitions.push(RepetitionSpec {
                    index: 0,
                    instance_type: t.instance_type.clone(),
                    length_ms,
                    round,
                    baseline: false,
                    borrower_jobs: t.borrower_jobs,
                    priority_count: t.priority_count,
                });
            }
        }
    }
    for (i, r) in repetitions.iter_mut().enumerate() {
        r.index = i + 1;
    }
    repetitions
}

/// The lengths and repetitions asked for make a drill the template's stopping condition allows.
fn check_lengths(req: &DrillRequest) -> Result<(), DrillRefusal> {
    if req.lengths_ms.is_empty() || req.lengths_ms.iter().any(|&l| l <= 0) {
        return Err(DrillRefusal::NoLengths);
    }
    if req.repeat == 0 {
        return Err(DrillRefusal::NoRepeat);
    }
    let longest = req
        .lengths_ms
        .iter()
        .copied()
        .chain([req.priority_length_ms])
        .max()
        .unwrap_or(0);
    if longest > req.max_runtime_ms {
        return Err(DrillRefusal::RuntimeTooShort {
            max_runtime_s: req.max_runtime_ms / 1000,
            longest_s: longest / 1000,
        });
    }
    Ok(())
}

/// The plan for `req` against the queue `q` as it is now, or why the drill cannot be run.
pub fn plan(
    q: &QueueSnapshot,
    req: &DrillRequest,
    prices: &BTreeMap<String, f64>,
) -> Result<DrillPlan, DrillRefusal> {
    let find = |name: &str| {
        q.shares
            .iter()
            .find(|s| s.name == name)
            .ok_or_else(|| DrillRefusal::UnknownShare {
                queue: q.name.clone(),
                share: name.to_string(),
            })
    };
    let lender = find(&req.lender)?;
    let borrower = find(&req.borrower)?;
    check_strategies(lender, borrower)?;
    if !req.allow_busy {
        check_quiet(q, &[&req.lender, &req.borrower])?;
    }
    check_lengths(req)?;
    let types: Vec<String> = if req.instance_types.is_empty() {
        lender
            .capacity_limits
            .iter()
            .filter(|l| l.max_capacity > 0)
            .map(|l| l.instance_type.clone())
            .collect()
    } else {
        let mut seen = Vec::new();
        for t in &req.instance_types {
            if !seen.contains(t) {
                seen.push(t.clone());
            }
        }
        seen
    };
    if types.is_empty() {
        return Err(DrillRefusal::NoLimits(lender.name.clone()));
    }
    let usage = share_usage(q);
    let type_plans = types
        .iter()
        .map(|ty| type_plan(&usage, lender, borrower, ty))
        .collect::<Result<Vec<_>, _>>()?;
    let repetitions = repetitions(&type_plans, req);
    let mut expected_ms: Millis = 0;
    let mut instance_hours: BTreeMap<String, f64> = BTreeMap::new();
    for r in &repetitions {
        let (rep_ms, held_ms) = expected_repetition(r, req.priority_length_ms);
        expected_ms += rep_ms;
        *instance_hours.entry(r.instance_type.clone()).or_default() += held_ms as f64 / 3.6e6;
    }
    let unpriced: Vec<String> = instance_hours
        .keys()
        .filter(|t| !prices.contains_key(*t))
        .cloned()
        .collect();
    let cost = (!prices.is_empty()).then(|| {
        instance_hours
            .iter()
            .filter_map(|(t, h)| prices.get(t).map(|p| p * h))
            .sum()
    });
    Ok(DrillPlan {
        queue: q.name.clone(),
        lender: lender.name.clone(),
        borrower: borrower.name.clone(),
        types: type_plans,
        repetitions,
        priority: req.priority,
        priority_length_ms: req.priority_length_ms,
        borrower_priority: req.borrower_priority,
        preemption_retries: req.preemption_retries,
        expected_ms,
        instance_hours,
        cost,
        unpriced: if prices.is_empty() {
            Vec::new()
        } else {
            unpriced
        },
    })
}

/// A repetition's expected wall time and the instance-ms its jobs hold: the borrower jobs start
/// and run half their length, the priority job starts and runs, the preempted jobs start again;
/// the baseline is the priority job alone.
pub fn expected_repetition(r: &RepetitionSpec, priority_length_ms: Millis) -> (Millis, Millis) {
    let prio_ms = ASSUMED_STARTUP_MS + priority_length_ms;
    if r.baseline {
        return (prio_ms, prio_ms * Millis::from(r.priority_count));
    }
    let wall = ASSUMED_STARTUP_MS + r.length_ms / 2 + prio_ms + ASSUMED_STARTUP_MS;
    (
        wall,
        wall * Millis::from(r.borrower_jobs) + prio_ms * Millis::from(r.priority_count),
    )
}

fn limits_text(s: &QuotaShare) -> String {
    if s.capacity_limits.is_empty() {
        return "none".into();
    }
    s.capacity_limits
        .iter()
        .map(|l| format!("{} {}", l.instance_type, l.max_capacity))
        .collect::<Vec<_>>()
        .join(", ")
}
