//! Sanity of the engine against published figures: the eight Philly VCs replayed each on its
//! own GPUs (RESERVE, equal priority, first come first served, no placement constraints). The
//! traces' README gives average job completion time and wait from two other simulators; a
//! gang-scheduled isolated replay should land near them, usually between the two.

use quotatop_engine::{Engine, EngineConfig};
use quotatop_model::{CapacityLimit, JobStatus, QuotaShare, SharingConfig};
use quotatop_replay::{philly, run_trace};

/// (vc, avg JCT A, avg wait A, avg JCT B, avg wait B) in seconds, from the traces' README.
const PUBLISHED: [(&str, f64, f64, f64, f64); 8] = [
    ("6214e9", 23974.0, 2341.0, 26602.0, 4970.0),
    ("6c71a0", 32312.0, 608.0, 32778.0, 1075.0),
    ("b436b2", 27068.0, 315.0, 27116.0, 364.0),
    ("ee9e8c", 76297.0, 84.0, 76471.0, 263.0),
    ("0e4a51", 110872.0, 22703.0, 111216.0, 23054.0),
    ("7f04ca", 284793.0, 40707.0, 329808.0, 86219.0),
    ("ed69ec", 61667.0, 15.0, 61667.0, 15.0),
    ("51b7ef", 8204.0, 0.0, 8204.0, 0.0),
];

#[test]
fn isolated_replay_lands_near_published_simulators() {
    // Missing traces fail the test, naming the folder (never a silent skip).
    let dir = crate::philly_figures::traces();
    let vcs = philly::load_dir(&dir, None)
        .expect("traces readable")
        .into_iter()
        .map(|v| (v.vc, v.gpus, v.jobs))
        .collect::<Vec<_>>();
    assert_eq!(vcs.len(), 8);
    let total: u32 = vcs.iter().map(|v| v.1).sum();
    let mut e = Engine::new(EngineConfig::new(vec![CapacityLimit::new(
        philly::GPU_INSTANCE_TYPE,
        total,
    )]))
    .unwrap();
    for (vc, gpus, _) in &vcs {
        e.create_share(QuotaShare::new(
            vc.clone(),
            vec![CapacityLimit::new(philly::GPU_INSTANCE_TYPE, *gpus)],
            SharingConfig::reserve(),
        ))
        .unwrap();
    }
    let jobs: Vec<_> = vcs.iter().flat_map(|v| v.2.iter().cloned()).collect();
    let ids = run_trace(&mut e, &jobs).unwrap();
    assert_eq!(ids.len(), 85_913);
    let mut report = String::new();
    for (vc, jct_a, wait_a, jct_b, wait_b) in PUBLISHED {
        let done: Vec<_> = e.jobs().filter(|j| j.share == vc).collect();
        assert!(
            done.iter().all(|j| j.status == JobStatus::Succeeded),
            "{vc}"
        );
        assert!(
            done.iter().all(|j| j.preemption.is_none()),
            "{vc}: RESERVE never preempts"
        );
        let n = done.len() as f64;
        let wait = done
            .iter()
            .map(|j| (j.scheduled_at.unwrap() - j.created_at) as f64 / 1000.0)
            .sum::<f64>()
            / n;
        let jct = done
            .iter()
            .map(|j| (j.stopped_at.unwrap() - j.created_at) as f64 / 1000.0)
            .sum::<f64>()
            / n;
        report.push_str(&format!(
            "{vc}: jct {jct:.0} (A {jct_a}, B {jct_b}), wait {wait:.0} (A {wait_a}, B {wait_b})\n"
        ));
        // Completion time: within 5% of the range spanned by the two simulators.
        let (lo, hi) = (jct_a.min(jct_b), jct_a.max(jct_b));
        assert!(jct >= lo * 0.95 && jct <= hi * 1.05, "{report}");
        // Wait: within the simulators' range widened by 25% and 60 s.
        let (lo, hi) = (wait_a.min(wait_b), wait_a.max(wait_b));
        assert!(
            wait >= lo * 0.75 - 60.0 && wait <= hi * 1.25 + 60.0,
            "{report}"
        );
    }
    eprintln!("{report}");
}

#[test]
fn lending_replay_finishes_every_job_and_conserves_work() {
    // Missing traces fail the test, naming the folder (never a silent skip).
    let dir = crate::philly_figures::traces();
    let vcs = philly::load_dir(&dir, None)
        .expect("traces readable")
        .into_iter()
        .map(|v| (v.vc, v.gpus, v.jobs))
        .collect::<Vec<_>>();
    let total: u32 = vcs.iter().map(|v| v.1).sum();
    let mut e = Engine::new(EngineConfig::new(vec![CapacityLimit::new(
        philly::GPU_INSTANCE_TYPE,
        total,
    )]))
    .unwrap();
    for (vc, gpus, _) in &vcs {
        e.create_share(QuotaShare::new(
            vc.clone(),
            vec![CapacityLimit::new(philly::GPU_INSTANCE_TYPE, *gpus)],
            SharingConfig::lend_and_borrow(-1),
        ))
        .unwrap();
    }
    let jobs: Vec<_> = vcs.iter().flat_map(|v| v.2.iter().cloned()).collect();
    let ids = run_trace(&mut e, &jobs).unwrap();
    let mut preemptions = 0u64;
    let mut wait_s = 0f64;
    for (&id, spec) in ids.iter().zip(
        {
            let mut sorted = jobs.clone();
            sorted.sort_by_key(|j| j.submit_ms);
            sorted
        }
        .iter(),
    ) {
        let job = e.job(id).unwrap();
        let work = e.work(id).unwrap();
        assert_eq!(job.status, JobStatus::Succeeded, "{}", job.name);
        assert_eq!(job.name, spec.name.to_string());
        // Conservation: time run = work + work lost to preemption (no checkpoints here).
        assert_eq!(
            work.run_ms,
            spec.work_ms + work.rolled_back_ms,
            "{}",
            job.name
        );
        preemptions += job.preemption_count() as u64;
        wait_s += (job.attempts[0].started_at.unwrap_or(0) - job.created_at) as f64 / 1000.0;
    }
    eprintln!(
        "lending: {} jobs, {preemptions} preemptions, average first wait {:.0} s",
        ids.len(),
        wait_s / ids.len() as f64
    );
    // Pooled, the eight VCs' peak demand (1,910 GPUs) fits in their summed capacity (2,432), so
    // with unlimited lending no job waits and no owner ever has to reclaim.
    assert_eq!(wait_s, 0.0);
    assert_eq!(preemptions, 0);
}
