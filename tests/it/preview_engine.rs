//! The priority-change preview against the engine: for a waiting job, what the preview predicts
//! (dispatch, borrowing, waiting, which jobs are preempted and how) is what the engine does when
//! the same change is applied to it, in many generated worlds (borrowing, lending, reclaim,
//! ties, in-share preemption on and off, two instance types) and in the LEND_AND_BORROW case
//! the old preview got wrong.

use std::collections::{BTreeSet, HashSet};

use proptest::prelude::*;

use crate::engine_support::{ShareCfg, TYPES, create_shares, environment, share_cfg};
use quotatop_actions::{self as actions, Prediction, Preview};
use quotatop_engine::{Delays, Engine, EngineConfig, EventReason, JobId, JobSpec, PreemptionKind};
use quotatop_model::{
    CapacityLimit, JobStatus, QueueSnapshot, QuotaShare, SharingConfig, TrackedJob,
};

/// The engine's state as a poller would show it: every job described at this instant.
fn snapshot(e: &Engine) -> QueueSnapshot {
    let now = e.now();
    QueueSnapshot {
        name: "q".into(),
        environment: e.service_environment("se"),
        shares: e.shares(),
        jobs: e
            .jobs()
            .map(|j| TrackedJob {
                arn: format!("arn:aws:batch:us-east-1:123456789012:service-job/{}", j.id),
                job: j.into(),
                described_at: Some(now),
                listed_at: now,
            })
            .collect(),
        server_time: Some(now),
        ..Default::default()
    }
}

/// What the engine did when the change was applied: the target's dispatch (instances borrowed)
/// and every preemption the change started (the target's, and those of jobs whose turn in the
/// same scheduling pass it changed), by job id with their kind.
struct Done {
    dispatched: Option<u32>,
    preempted: HashSet<(String, PreemptionKind)>,
}

fn apply(e: &mut Engine, target: JobId, priority: u32) -> Done {
    let from = e.events().len();
    e.update_priority(target, priority as i64)
        .expect("a waiting job's priority can change");
    let mut done = Done {
        dispatched: None,
        preempted: HashSet::new(),
    };
    for ev in &e.events()[from..] {
        match ev.reason {
            EventReason::Dispatched { borrowed } if ev.job == target => {
                done.dispatched = Some(borrowed)
            }
            EventReason::PreemptionStarted(kind) => {
                let id = e.job_uuid(ev.job).unwrap_or_default().to_string();
                done.preempted.insert((id, kind));
            }
            _ => {}
        }
    }
    done
}

/// Checks the preview against what the engine did; `Err` says how they differ.
fn agree(p: &Preview, done: &Done) -> Result<(), String> {
    let predicted: HashSet<(String, PreemptionKind)> = p
        .preemptions
        .candidates
        .iter()
        .map(|c| (c.job_id.clone(), c.kind))
        .collect();
    let dispatch = match p.prediction {
        Prediction::RunsOnOwnCapacity => Some(0),
        Prediction::Borrows { instances } => Some(instances),
        _ => None,
    };
    if dispatch != done.dispatched {
        return Err(format!(
            "dispatch: preview {:?} ({}), engine {:?}",
            dispatch,
            p.summary(),
            done.dispatched
        ));
    }
    let preempts = matches!(
        p.prediction,
        Prediction::Preempts(_) | Prediction::ReclaimsLent { .. }
    );
    if preempts && p.preemptions.max == 0 {
        return Err(format!("effect and victims disagree: {}", p.summary()));
    }
    if p.preemptions.settled() {
        if predicted != done.preempted {
            return Err(format!(
                "victims: preview {predicted:?} ({}), engine {:?}",
                p.summary(),
                done.preempted
            ));
        }
    } else {
        let n = done.preempted.len();
        if !done.preempted.is_subset(&predicted) || n < p.preemptions.min || n > p.preemptions.max {
            return Err(format!(
                "victims: preview up to {} (at least {}) of {predicted:?} ({}), engine {:?}",
                p.preemptions.max,
                p.preemptions.min,
                p.summary(),
                done.preempted
            ));
        }
    }
    Ok(())
}

/// The case the old preview got wrong: a LEND_AND_BORROW share with limit 2 holds 4 instances
/// (2 borrowed from an idle lender). Raising its waiting job makes room by preempting one job:
/// then the job fits by borrowing again, and the engine stops there. The victim is the
/// shortest-running job (run-d), not the ones the share would shed to get back under its limit.
#[test]
fn lend_and_borrow_preemption_stops_once_the_job_fits_by_borrowing() {
    let m5 = "ml.m5.xlarge";
    // Preemptions take a minute: the change's own pass is what is compared.
    let delays = Delays {
        preemption_ms: 60_000,
        ..Delays::default()
    };
    let mut e = Engine::new(EngineConfig::new(vec![CapacityLimit::new(m5, 4)]).with_delays(delays))
        .unwrap();
    e.create_share(
        QuotaShare::new(
            "team",
            vec![CapacityLimit::new(m5, 2)],
            SharingConfig::lend_and_borrow(-1),
        )
        .with_in_share_preemption(true),
    )
    .unwrap();
    e.create_share(QuotaShare::new(
        "lender",
        vec![CapacityLimit::new(m5, 2)],
        SharingConfig::lend(),
    ))
    .unwrap();
    let mut run = Vec::new();
    for (i, name) in ["run-a", "run-b", "run-c", "run-d"].iter().enumerate() {
        let id = e
            .submit(JobSpec::new(*name, "team", m5, 1, 36_000_000).priority(1))
            .unwrap();
        run.push(id);
        e.advance_to((i as i64 + 1) * 60_000).unwrap();
    }
    let target = e
        .submit(JobSpec::new("target", "team", m5, 1, 3_600_000))
        .unwrap();
    e.advance_to(10 * 60_000).unwrap();
    assert_eq!(e.status(target), Some(JobStatus::Runnable));
    assert_eq!(
        e.usage()[0].usage[0].used,
        4,
        "team holds 4 instances, 2 borrowed"
    );

    let uuid = e.job_uuid(target).unwrap().to_string();
    let p = actions::preview(&snapshot(&e), &uuid, 5).unwrap();
    let Prediction::Preempts(c) = &p.prediction else {
        panic!("{}", p.summary())
    };
    let names: Vec<&str> = c.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["run-d"], "{}", p.summary());
    assert!(p.preemptions.settled());
    assert!(
        p.summary().contains("in-share preemption of run-d ("),
        "{}",
        p.summary()
    );

    let done = apply(&mut e, target, 5);
    let d = e.job_uuid(run[3]).unwrap().to_string();
    assert_eq!(
        done.preempted,
        HashSet::from([(d, PreemptionKind::InShare)]),
        "only run-d is preempted"
    );
    for &other in &run[..3] {
        let j = e.job(other).unwrap();
        assert_eq!(j.status, JobStatus::Running);
        assert!(j.status_reason.is_none(), "{} was not preempted", j.name);
    }
    agree(&p, &done).unwrap();
}

#[derive(Debug, Clone)]
enum Op {
    Submit {
        share: usize,
        ty: usize,
        count: u32,
        priority: i64,
        work_s: u64,
    },
    Raise {
        job: usize,
        priority: i64,
    },
    Terminate {
        job: usize,
    },
}

#[derive(Debug, Clone)]
struct World {
    shares: Vec<ShareCfg>,
    spare: [u32; 2],
    delays: Delays,
    /// (seconds since the previous operation, operation): many zeros, so jobs tie in time.
    ops: Vec<(u64, Op)>,
    /// Which waiting job to raise (modulo their number), and by how much.
    pick: usize,
    raise: u32,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (0usize..5, 0usize..2, 1u32..4, 0i64..4, 30u64..600).prop_map(
            |(share, ty, count, priority, work_s)| Op::Submit { share, ty, count, priority, work_s }
        ),
        2 => (0usize..30, 0i64..6).prop_map(|(job, priority)| Op::Raise { job, priority }),
        1 => (0usize..30).prop_map(|job| Op::Terminate { job }),
    ]
}

fn world() -> impl Strategy<Value = World> {
    (
        prop::collection::vec(share_cfg(), 1..5),
        [0u32..3, 0u32..3],
        (0u64..3, 0u64..3, 1u64..20, 0u64..2),
        prop::collection::vec((prop_oneof![3 => Just(0u64), 2 => 1u64..20], op()), 1..40),
        any::<usize>(),
        0u32..6,
    )
        .prop_map(
            |(shares, spare, (d1, d2, preempt, jitter), ops, pick, raise)| World {
                shares,
                spare,
                delays: Delays {
                    submitted_ms: d1 * 1000,
                    pending_ms: d2 * 1000,
                    scheduled_ms: d1 * 1000,
                    starting_ms: d2 * 1000,
                    // At least a second: the change's own pass is over before any victim
                    // gives its capacity back.
                    preemption_ms: preempt * 1000,
                    jitter_ms: jitter * 1000,
                },
                ops,
                pick,
                raise,
            },
        )
}

fn build(w: &World, seed: u64) -> Result<Engine, String> {
    let capacity = environment(&w.shares, w.spare);
    let mut e = Engine::new(
        EngineConfig::new(capacity)
            .with_delays(w.delays)
            .with_seed(seed)
            .with_start(1_000_000),
    )
    .map_err(|e| e.to_string())?;
    create_shares(&mut e, &w.shares)?;
    let mut jobs: Vec<JobId> = Vec::new();
    let mut t = e.now();
    for (dt, op) in &w.ops {
        t += (*dt * 1000) as i64;
        e.advance_to(t).map_err(|e| e.to_string())?;
        match op {
            Op::Submit {
                share,
                ty,
                count,
                priority,
                work_s,
            } => {
                let spec = JobSpec::new(
                    format!("j{}", jobs.len()),
                    format!("s{}", share % w.shares.len()),
                    TYPES[*ty],
                    *count,
                    work_s * 1000,
                )
                .priority(*priority);
                jobs.push(e.submit(spec).map_err(|e| e.to_string())?);
            }
            Op::Raise { job, priority } => {
                if let Some(&id) = jobs.get(*job)
                    && !e.status(id).is_some_and(JobStatus::is_terminal)
                {
                    e.update_priority(id, *priority)
                        .map_err(|e| e.to_string())?;
                }
            }
            Op::Terminate { job } => {
                if let Some(&id) = jobs.get(*job) {
                    e.terminate(id, "test").map_err(|e| e.to_string())?;
                }
            }
        }
    }
    // Let the last submissions reach the queue.
    e.advance_to(t + 10_000).map_err(|e| e.to_string())?;
    Ok(e)
}

/// A waiting job to raise and its new priority: RUNNABLE, not misconfigured, and no other
/// waiting job of its share and type with the same creation time and the new priority (the API
/// does not order those).
fn target(e: &Engine, w: &World) -> Option<(JobId, u32)> {
    let waiting: Vec<JobId> = (0..e.job_count() as u32)
        .map(JobId)
        .filter(|&id| {
            e.job(id).is_some_and(|j| {
                j.status == JobStatus::Runnable
                    && !j
                        .status_reason
                        .as_deref()
                        .is_some_and(|r| r.starts_with("MISCONFIGURATION"))
            })
        })
        .collect();
    if waiting.is_empty() {
        return None;
    }
    let id = waiting[w.pick % waiting.len()];
    let j = e.job(id)?;
    // Mostly raises; sometimes lowers (another job then becomes the head).
    let priority = if w.raise == 5 {
        j.priority.saturating_sub(2)
    } else {
        j.priority + w.raise
    };
    let tied = waiting.iter().filter(|&&o| o != id).any(|&o| {
        e.job(o).is_some_and(|o| {
            o.share == j.share
                && o.instance_type == j.instance_type
                && o.created_at == j.created_at
                && o.priority == priority
        })
    });
    (!tied).then_some((id, priority))
}

/// Runs scheduling passes at the current instant (by "changing" the job's priority to what it
/// is) until one starts nothing: a pass is not a fixpoint, since preemptions it starts make
/// capacity look free to the next pass. The preview predicts from a state at rest.
fn at_rest(e: &mut Engine, id: JobId) -> bool {
    for _ in 0..10 {
        let Some(p) = e.job(id).map(|j| j.priority) else {
            return false;
        };
        let from = e.events().len();
        if e.update_priority(id, p as i64).is_err() {
            return false;
        }
        let moved = e.events()[from..].iter().any(|ev| {
            matches!(
                ev.reason,
                EventReason::PreemptionStarted(_) | EventReason::Dispatched { .. }
            )
        });
        if !moved {
            return e.status(id) == Some(JobStatus::Runnable);
        }
    }
    false
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

    /// Preview changing a waiting job's priority, apply it in the engine: the predicted effect
    /// and victims are the engine's (for "up to N of" predictions: the engine's victims are
    /// among the candidates, as many as predicted).
    #[test]
    fn the_preview_predicts_what_the_engine_does(w in world(), seed in any::<u64>()) {
        let mut e = build(&w, seed).map_err(TestCaseError::fail)?;
        let Some((id, priority)) = target(&e, &w) else { return Ok(()) };
        if !at_rest(&mut e, id) {
            return Ok(());
        }
        let uuid = e.job_uuid(id).unwrap_or_default().to_string();
        let p = actions::preview(&snapshot(&e), &uuid, priority)
            .map_err(|err| TestCaseError::fail(err.to_string()))?;
        let done = apply(&mut e, id, priority);
        agree(&p, &done).map_err(TestCaseError::fail)?;
    }
}

/// The generated worlds reach every kind of prediction (or the property above proves little).
#[test]
fn generated_worlds_reach_every_kind_of_prediction() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let mut seen = BTreeSet::new();
    for _ in 0..4000 {
        let w = world().new_tree(&mut runner).unwrap().current();
        let Ok(e) = build(&w, 7) else { continue };
        let Some((id, priority)) = target(&e, &w) else {
            continue;
        };
        let mut e = e;
        if !at_rest(&mut e, id) {
            continue;
        }
        let uuid = e.job_uuid(id).unwrap().to_string();
        let p = actions::preview(&snapshot(&e), &uuid, priority).unwrap();
        let kind = match &p.prediction {
            Prediction::Waits { .. } => "waits",
            Prediction::RunsOnOwnCapacity => "own",
            Prediction::Borrows { .. } => "borrows",
            Prediction::ReclaimsLent { .. } => "reclaims",
            Prediction::Preempts(_) if p.preemptions.cross_share() => "mixed",
            Prediction::Preempts(_) => "in-share",
            Prediction::WaitsForCapacity => "waits-for-capacity",
            _ => "other",
        };
        seen.insert(kind);
        if matches!(p.prediction, Prediction::Waits { .. }) && !p.preemptions.is_empty() {
            // Lowering the head job: the next one preempts in the same pass.
            seen.insert("next-head-preempts");
        }
        if !p.preemptions.settled() {
            seen.insert("up-to");
        }
    }
    for k in [
        "waits",
        "own",
        "borrows",
        "reclaims",
        "in-share",
        "waits-for-capacity",
        "up-to",
        "next-head-preempts",
    ] {
        assert!(seen.contains(k), "no {k} prediction in {seen:?}");
    }
}
