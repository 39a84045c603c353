//! "Why is this job not running?" against the engine: in generated worlds (borrowing, lending,
//! reclaim, in-share preemption on and off, misconfigured jobs, ties, two instance types), what
//! `analysis::why` says of each waiting job on a snapshot is checked against the engine itself
//! and its next scheduling pass: a job said to dispatch is dispatched (and only those), a job
//! said to wait for preemptions in progress has them in progress and the engine completes them,
//! a job said blocked behind X has X ahead of it in the engine's share queue, a misconfigured
//! job has the engine's MISCONFIGURATION reason for the same check, the victims named are the
//! ones the engine preempts, and the priority said to put a job first does so in the engine.

use std::collections::{BTreeSet, HashSet};

use proptest::prelude::*;

use crate::engine_support::{ShareCfg, TYPES, create_shares, environment, share_cfg, snapshot};
use quotatop_analysis::{Verdict, Why, why};
use quotatop_engine::{Delays, Engine, EngineConfig, EventReason, JobId, JobSpec};
use quotatop_model::JobStatus;

#[derive(Debug, Clone)]
struct Submit {
    share: usize,
    ty: usize,
    count: u32,
    priority: i64,
    work_s: u64,
}

#[derive(Debug, Clone)]
struct World {
    shares: Vec<ShareCfg>,
    spare: [u32; 2],
    delays: Delays,
    /// (seconds since the previous submission, submission): many zeros, so jobs tie in time.
    ops: Vec<(u64, Submit)>,
    /// Seconds after the last submission the snapshot is taken.
    settle_s: u64,
    /// What starts the engine's next pass, applied to the snapshot as well.
    trigger: Trigger,
}

/// A change whose pass the answers are checked against: the snapshot shows the state after the
/// change and before its pass.
#[derive(Debug, Clone)]
enum Trigger {
    /// A priority "change" to the same value: the state as it is.
    Nothing,
    /// A job holding capacity (by index, modulo their number) is terminated: capacity frees.
    Terminate(usize),
    /// A waiting job (by index, modulo their number) is raised by this much.
    Raise(usize, u32),
}

fn world() -> impl Strategy<Value = World> {
    (
        prop::collection::vec(share_cfg(), 1..5),
        [0u32..3, 0u32..3],
        (0u64..3, 1u64..20, 0u64..2),
        prop::collection::vec(
            (
                prop_oneof![3 => Just(0u64), 2 => 1u64..20],
                (0usize..5, 0usize..2, 1u32..6, 0i64..4, 30u64..600),
            ),
            1..30,
        ),
        0u64..40,
        prop_oneof![
            1 => Just(Trigger::Nothing),
            2 => any::<usize>().prop_map(Trigger::Terminate),
            2 => (any::<usize>(), 1u32..4).prop_map(|(k, by)| Trigger::Raise(k, by)),
        ],
    )
        .prop_map(
            |(shares, spare, (d, preempt, jitter), ops, settle_s, trigger)| World {
                shares,
                spare,
                delays: Delays {
                    submitted_ms: d * 1000,
                    pending_ms: d * 1000,
                    scheduled_ms: d * 1000,
                    starting_ms: d * 1000,
                    // At least a second: the next pass is over before any victim gives its
                    // capacity back.
                    preemption_ms: preempt * 1000,
                    jitter_ms: jitter * 1000,
                },
                ops: ops
                    .into_iter()
                    .map(|(dt, (share, ty, count, priority, work_s))| {
                        (
                            dt,
                            Submit {
                                share,
                                ty,
                                count,
                                priority,
                                work_s,
                            },
                        )
                    })
                    .collect(),
                settle_s,
                trigger,
            },
        )
}

/// The world's engine at the snapshot's instant (deterministic: the same world and seed give
/// the same engine).
fn build(w: &World, seed: u64) -> Result<Engine, String> {
    let mut e = Engine::new(
        EngineConfig::new(environment(&w.shares, w.spare))
            .with_delays(w.delays)
            .with_seed(seed)
            .with_start(1_000_000),
    )
    .map_err(|e| e.to_string())?;
    create_shares(&mut e, &w.shares)?;
    let mut t = e.now();
    for (i, (dt, s)) in w.ops.iter().enumerate() {
        t += (*dt * 1000) as i64;
        e.advance_to(t).map_err(|e| e.to_string())?;
        let spec = JobSpec::new(
            format!("j{i}"),
            format!("s{}", s.share % w.shares.len()),
            TYPES[s.ty],
            s.count,
            s.work_s * 1000,
        )
        .priority(s.priority);
        e.submit(spec).map_err(|e| e.to_string())?;
    }
    e.advance_to(t + (w.settle_s * 1000) as i64)
        .map_err(|e| e.to_string())?;
    Ok(e)
}

fn waiting(e: &Engine) -> Vec<JobId> {
    (0..e.job_count() as u32)
        .map(JobId)
        .filter(|&id| {
            e.status(id).is_some_and(|s| {
                matches!(
                    s,
                    JobStatus::Submitted | JobStatus::Pending | JobStatus::Runnable
                )
            })
        })
        .collect()
}

fn uuid(e: &Engine, id: JobId) -> String {
    e.job_uuid(id).unwrap_or_default().to_string()
}

/// The priority a "what would change it" line says puts the job first.
fn lead_priority(w: &Why) -> Option<u32> {
    w.changes.iter().find_map(|c| {
        c.strip_prefix("priority ")?
            .split(' ')
            .next()?
            .parse()
            .ok()
            .filter(|_| c.contains(" puts it first in share "))
    })
}

/// Whether `id` is dispatched, or first among its share's waiting jobs of its type, in `e`.
fn first_or_running(e: &Engine, id: JobId) -> bool {
    let Some(j) = e.job(id) else { return false };
    if j.status != JobStatus::Runnable {
        return true;
    }
    e.share_queue(&j.share).into_iter().find(|&o| {
        e.job(o).is_some_and(|o| {
            o.instance_type == j.instance_type
                && !o
                    .status_reason
                    .as_deref()
                    .is_some_and(|r| r.starts_with("MISCONFIGURATION"))
        })
    }) == Some(id)
}

/// Checks every waiting job's answer against the engine; returns the verdicts seen.
fn check(w: &World, seed: u64) -> Result<BTreeSet<&'static str>, String> {
    let mut e = build(w, seed)?;
    let mut snap = snapshot(&e);
    let ids = waiting(&e);
    let holding: Vec<JobId> = (0..e.job_count() as u32)
        .map(JobId)
        .filter(|&id| e.status(id).is_some_and(JobStatus::holds_capacity))
        .collect();
    // The change, as the snapshot shows it before its pass.
    let trigger = match w.trigger {
        Trigger::Terminate(k) if !holding.is_empty() => {
            Trigger::Terminate(holding[k % holding.len()].0 as usize)
        }
        Trigger::Raise(k, by) if !ids.is_empty() => {
            Trigger::Raise(ids[k % ids.len()].0 as usize, by)
        }
        _ => Trigger::Nothing,
    };
    match trigger {
        Trigger::Terminate(x) => {
            let j = std::sync::Arc::make_mut(&mut snap.jobs[x].job);
            j.status = JobStatus::Failed;
            j.status_reason = Some("test".into());
            j.is_terminated = true;
        }
        Trigger::Raise(x, by) => {
            let j = std::sync::Arc::make_mut(&mut snap.jobs[x].job);
            j.priority += by;
        }
        Trigger::Nothing => {}
    }
    let mut seen = BTreeSet::new();
    let answers: Vec<(JobId, Why)> = ids
        .iter()
        .map(|&id| {
            why(&snap, &uuid(&e, id))
                .map(|a| (id, a))
                .ok_or_else(|| format!("no answer for waiting job {}", uuid(&e, id)))
        })
        .collect::<Result<_, _>>()?;
    // Claims about the state now.
    for (id, a) in &answers {
        let j = e.job(*id).ok_or("job gone")?;
        let engine_misconfigured = j
            .status_reason
            .as_deref()
            .is_some_and(|r| r.starts_with("MISCONFIGURATION"));
        match &a.verdict {
            Verdict::Misconfigured(m) => {
                seen.insert("misconfigured");
                let m = m.ok_or("misconfigured without a kind")?;
                if j.status_reason.as_deref() != Some(m.reason()) {
                    return Err(format!(
                        "{}: why says {m:?}, the engine's reason is {:?}",
                        j.name, j.status_reason
                    ));
                }
            }
            _ if engine_misconfigured => {
                return Err(format!("{}: misconfigured in the engine: {:?}", j.name, a));
            }
            Verdict::BlockedBehind(_) => {
                seen.insert("blocked-behind");
            }
            Verdict::AwaitsRelease(_) => {
                seen.insert("awaits-release");
            }
            Verdict::NotQueuedYet => {
                seen.insert("not-queued");
            }
            Verdict::Dispatches => {
                seen.insert("dispatches");
            }
            Verdict::Preempts(_) => {
                seen.insert("preempts");
            }
            Verdict::NoRoom => {
                seen.insert("no-room");
            }
            Verdict::UnknownShare => return Err(format!("{}: share unknown", j.name)),
        }
        if lead_priority(a).is_some() {
            seen.insert("lead-priority");
        }
    }
    // The engine's next pass: the change's (a priority "change" to the same value runs one).
    let Some(&first) = ids.first() else {
        return Ok(seen);
    };
    let from = e.events().len();
    match trigger {
        Trigger::Terminate(x) => e.terminate(JobId(x as u32), "test"),
        Trigger::Raise(x, by) => {
            let p = e.job(JobId(x as u32)).map_or(0, |j| j.priority);
            e.update_priority(JobId(x as u32), (p + by) as i64)
        }
        Trigger::Nothing => {
            let p = e.job(first).map_or(0, |j| j.priority);
            e.update_priority(first, p as i64)
        }
    }
    .map_err(|e| e.to_string())?;
    let mut dispatched = HashSet::new();
    let mut preempted = HashSet::new();
    for ev in &e.events()[from..] {
        match ev.reason {
            EventReason::Dispatched { .. } => {
                dispatched.insert(ev.job);
            }
            EventReason::PreemptionStarted(kind) => {
                preempted.insert((uuid(&e, ev.job), kind));
            }
            _ => {}
        }
    }
    for (id, a) in &answers {
        if !a.settled {
            continue;
        }
        let name = e.job(*id).map(|j| j.name).unwrap_or_default();
        let says = a.verdict == Verdict::Dispatches;
        if says != dispatched.contains(id) {
            return Err(format!(
                "{name}: why says {:?} ({}), the engine's next pass {} it",
                a.verdict,
                a.headline,
                if dispatched.contains(id) {
                    "dispatches"
                } else {
                    "does not dispatch"
                }
            ));
        }
        // Blocked behind X: X (not dispatched by the pass) is ahead of it in the engine's queue.
        if let Verdict::BlockedBehind(x) = &a.verdict {
            let j = e.job(*id).ok_or("job gone")?;
            let queue = e.share_queue(&j.share);
            let me = queue.iter().position(|&o| o == *id);
            let it = queue.iter().position(|&o| uuid(&e, o) == *x);
            match (it, me) {
                (Some(i), Some(m)) if i < m => {}
                _ => {
                    return Err(format!(
                        "{}: said blocked behind {x}, not ahead in the engine's queue",
                        j.name
                    ));
                }
            }
            let xj = e.job(e.find(x).ok_or("blocker unknown")?).ok_or("gone")?;
            if xj.instance_type != j.instance_type || xj.status != JobStatus::Runnable {
                return Err(format!(
                    "{}: blocker {} is not a waiting job of its type",
                    j.name, xj.name
                ));
            }
        }
        // Waiting for preemptions: they are in progress once the pass is over.
        if let Verdict::AwaitsRelease(jobs) = &a.verdict {
            let j = e.job(*id).ok_or("job gone")?;
            if jobs.is_empty() {
                return Err(format!("{}: waits for no preemption", j.name));
            }
            for x in jobs {
                let xj = e.job(e.find(x).ok_or("unknown")?).ok_or("gone")?;
                if !xj
                    .status_reason
                    .as_deref()
                    .is_some_and(|r| r.starts_with("PREEMPTION_IN_PROGRESS"))
                {
                    return Err(format!("{}: {} is not being preempted", j.name, xj.name));
                }
            }
        }
        if let Verdict::Preempts(v) = &a.verdict {
            for x in v {
                if !preempted.contains(x) {
                    return Err(format!(
                        "{name}: {x:?} not preempted by the engine: {preempted:?}"
                    ));
                }
            }
        }
    }
    // Preemptions waited for complete.
    let waited: Vec<JobId> = answers
        .iter()
        .filter_map(|(_, a)| match &a.verdict {
            Verdict::AwaitsRelease(v) => Some(v.clone()),
            _ => None,
        })
        .flatten()
        .filter_map(|x| e.find(&x))
        .collect();
    if !waited.is_empty() {
        let from = e.events().len();
        let until = e.now() + (w.delays.preemption_ms + w.delays.jitter_ms + 1000) as i64;
        e.advance_to(until).map_err(|e| e.to_string())?;
        let done: HashSet<JobId> = e.events()[from..]
            .iter()
            .filter(|ev| matches!(ev.reason, EventReason::Preempted(_)))
            .map(|ev| ev.job)
            .collect();
        if let Some(x) = waited.iter().find(|x| !done.contains(x)) {
            return Err(format!(
                "preemption of {} waited for never completed",
                uuid(&e, *x)
            ));
        }
    }
    // The priority said to put a job first does, in the same world (the first such job).
    if let Some((id, lead)) = answers
        .iter()
        .find_map(|(id, a)| lead_priority(a).map(|p| (*id, p)))
        .filter(|_| matches!(trigger, Trigger::Nothing))
    {
        let mut e = build(w, seed)?;
        e.update_priority(id, lead as i64)
            .map_err(|e| e.to_string())?;
        if !first_or_running(&e, id) {
            return Err(format!(
                "priority {lead} does not put {} first",
                uuid(&e, id)
            ));
        }
        let mut e = build(w, seed)?;
        let now = e.job(id).map_or(0, |j| j.priority);
        if lead > now.max(1) {
            e.update_priority(id, lead as i64 - 1)
                .map_err(|e| e.to_string())?;
            if e.status(id) == Some(JobStatus::Runnable) && first_or_running(&e, id) {
                return Err(format!(
                    "priority {} already puts {} first",
                    lead - 1,
                    uuid(&e, id)
                ));
            }
        }
    }
    Ok(seen)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn why_agrees_with_the_engine(w in world(), seed in any::<u64>()) {
        check(&w, seed).map_err(TestCaseError::fail)?;
    }
}

/// The generated worlds reach every answer (or the property above proves little).
#[test]
fn generated_worlds_reach_every_answer() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let mut seen = BTreeSet::new();
    for _ in 0..600 {
        let w = world().new_tree(&mut runner).unwrap().current();
        seen.extend(check(&w, 7).unwrap());
    }
    for k in [
        "dispatches",
        "preempts",
        "misconfigured",
        "blocked-behind",
        "awaits-release",
        "not-queued",
        "no-room",
        "lead-priority",
    ] {
        assert!(seen.contains(k), "no {k} answer in {seen:?}");
    }
}
