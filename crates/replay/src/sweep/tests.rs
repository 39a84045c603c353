//! The sweep on a trace small enough to work out by hand.
//!
//! Two `ml.g5.2xlarge` (1 GPU each). Share `a` (LEND_AND_BORROW, limit 1) runs job A (low band,
//! 2 instances, 3 h of work, deadline 6 h) from 0, borrowing `b`'s instance; share `b` (LEND,
//! limit 1) submits job B (normal band, 1 instance, 1 h) at 2.5 h and takes its instance back:
//! A is preempted at 2.5 h and runs again when B ends at 3.5 h. No restart overhead; a
//! checkpoint takes 15 min to write (0.25 h × 2 GPUs = 0.5 GPU-h each for A).
//!
//! Class low (A), each setting (cost = held − productive + checkpoint overhead, GPU-h):
//! - 2h, unlimited: saved 2 h, lost 0.5 h (1.0 GPU-h); 1 checkpoint (at 2 h; ⌈3/2⌉ − 1):
//!   0.5 GPU-h; cost 1.5; ends 3.5 + 1 = 4.5 h, within its 6 h.
//! - 1h, unlimited: saved 2 h, lost 1.0 GPU-h; 2 checkpoints: 1.0; cost 2.0; ends 4.5 h.
//! - 30m, unlimited: saved 2.5 h, lost 0; 5 checkpoints: 2.5; cost 2.5; ends 4.0 h.
//! - none, unlimited: lost 2.5 h (5.0 GPU-h); cost 5.0; ends 3.5 + 3 = 6.5 h: misses.
//! - any interval, retry limit 0: A fails at 2.5 h: held 5.0 GPU-h, nothing productive; its
//!   deadline is missed.
//!
//! As configured (no interval, unlimited) A misses its deadline, so every setting keeps the
//! promise (1 missed, no more): 2h/unlimited is chosen at 1.5, runner-up 1h/unlimited at 2.0
//! (+0.5 GPU-h). With a 9 h deadline the reference meets it, and settings that all fail A
//! (retry limit 0) keep nothing: "no combination keeps the promise".

use quotatop_analysis::scorecard::PriorityBand;

use super::super::{Comparison, ReplayConfig, trace_csv};
use super::*;

const CONFIG: &str = r#"
name = "small"
[[capacity]]
instance_type = "ml.g5.2xlarge"
max = 2
[[shares]]
name = "a"
strategy = "LEND_AND_BORROW"
limits = { "ml.g5.2xlarge" = 1 }
[[shares]]
name = "b"
strategy = "LEND"
limits = { "ml.g5.2xlarge" = 1 }
"#;

fn trace(deadline_s: u32) -> Vec<TraceJob> {
    let text = format!(
        "submit_s,share,instance_type,instance_count,work_s,priority,name,deadline_s\n\
         0,a,ml.g5.2xlarge,2,10800,0,A,{deadline_s}\n\
         9000,b,ml.g5.2xlarge,1,3600,100,B,\n"
    );
    trace_csv::parse(&text, "small.csv").unwrap()
}

fn model() -> CheckpointModel {
    CheckpointModel {
        write_s: 900.0,
        gb_per_gpu: 2.0,
        s3_gb_month: Some(0.023),
        currency: None,
    }
}

fn class(b: PriorityBand) -> SweepClass {
    SweepClass {
        name: b.as_str().to_string(),
        members: ClassMembers::Band(b),
        budget_class: None,
    }
}

fn setting(interval_s: Option<u64>, limit: Option<u32>) -> Setting {
    Setting {
        checkpoint_interval_ms: interval_s.map(|s| s * 1000),
        retry_limit: limit,
    }
}

fn run(deadline_s: u32, settings: &[Setting], threads: usize) -> Vec<ClassSweep> {
    let trace = trace(deadline_s);
    let base = ReplayConfig::parse(CONFIG, "small.toml", "small").unwrap();
    let classes = [class(PriorityBand::Low), class(PriorityBand::Normal)];
    let plan = Plan {
        trace: &trace,
        base: &base,
        cmp: &Comparison::default(),
        classes: &classes,
        settings,
        model: &model(),
    };
    sweep(&plan, threads, &|_, _| {}).unwrap()
}

fn grid() -> Vec<Setting> {
    let mut out = Vec::new();
    for limit in [Some(0), None] {
        for interval in [Some(1800), Some(3600), Some(7200), None] {
            out.push(setting(interval, limit));
        }
    }
    out
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn the_sweep_chooses_what_the_hand_worked_figures_say() {
    let settings = grid();
    let sweeps = run(21_600, &settings, 1);
    let low = &sweeps[0];
    let at = |interval: Option<u64>, limit: Option<u32>| {
        let s = setting(interval, limit);
        let i = settings.iter().position(|x| *x == s).unwrap();
        (i, &low.points[i].1)
    };
    assert_eq!(low.reference.jobs, 1);
    assert_eq!(low.reference.missed_deadlines, 1);
    let (two_h, f) = at(Some(7200), None);
    assert!(close(f.lost_gpu_hours, 1.0), "{f:?}");
    assert_eq!(f.checkpoints_written, 1);
    assert!(close(f.checkpoint_overhead_gpu_hours, 0.5), "{f:?}");
    assert!(close(f.cost_gpu_hours(), 1.5), "{f:?}");
    assert!(close(f.checkpoint_storage_gb, 4.0), "{f:?}");
    assert_eq!(f.missed_deadlines, 0);
    assert!(close(f.last_end_h.unwrap(), 4.5), "{f:?}");
    let (one_h, f) = at(Some(3600), None);
    assert_eq!(f.checkpoints_written, 2);
    assert!(close(f.cost_gpu_hours(), 2.0), "{f:?}");
    let (_, f) = at(Some(1800), None);
    assert_eq!(f.checkpoints_written, 5);
    assert!(close(f.lost_gpu_hours, 0.0), "{f:?}");
    assert!(close(f.cost_gpu_hours(), 2.5), "{f:?}");
    let (_, f) = at(None, None);
    assert!(close(f.cost_gpu_hours(), 5.0), "{f:?}");
    assert_eq!(f.missed_deadlines, 1);
    let (_, f) = at(Some(3600), Some(0));
    assert_eq!(f.failed_at_limit, 1);
    assert!(close(f.productive_gpu_hours, 0.0), "{f:?}");
    assert_eq!(f.missed_deadlines, 1);
    match low.recommendation {
        Recommendation::Chosen {
            best,
            runner_up: Some((r, margin)),
        } => {
            assert_eq!(best, two_h);
            assert_eq!(r, one_h);
            assert!(close(margin, 0.5), "{margin}");
        }
        ref other => panic!("{other:?}"),
    }
    // Class normal (B) is never preempted: only its checkpoint at 30 min costs anything, and
    // the first of the free settings given (1h, retry limit 0) is chosen.
    let normal = &sweeps[1];
    assert_eq!(normal.reference.jobs, 1);
    assert!(matches!(
        normal.recommendation,
        Recommendation::Chosen { best: 1, .. }
    ));
    let text = markdown(&sweeps, &[]);
    assert!(
        text.contains("Recommendation: checkpoint interval 2h, retry limit unlimited: cost 1.5 GPU-h, waste 1.5 GPU-h, 0 missed deadlines; runner-up: 1h, unlimited (+0.5 GPU-h, +33.3%)."),
        "{text}"
    );
}

#[test]
fn no_combination_keeps_the_promise_when_every_setting_misses_more() {
    // A 9 h deadline: as configured A meets it; with retry limit 0 it always fails.
    let settings = [setting(Some(3600), Some(0)), setting(None, Some(0))];
    let sweeps = run(32_400, &settings, 1);
    let low = &sweeps[0];
    assert_eq!(low.reference.missed_deadlines, 0);
    assert_eq!(low.recommendation, Recommendation::NoneKeeps);
    let text = markdown(&sweeps, &[]);
    assert!(
        text.contains("Recommendation: no combination keeps the promise: as configured the class misses 0 deadlines and ends 0 jobs at the retry limit; the fewest any setting misses is 1, the fewest it ends at the limit 1."),
        "{text}"
    );
}

#[test]
fn the_output_is_the_same_on_one_and_two_threads() {
    let settings = grid();
    let one = run(21_600, &settings, 1);
    let two = run(21_600, &settings, 2);
    assert_eq!(markdown(&one, &[]), markdown(&two, &[]));
    assert_eq!(json(&one, &[]), json(&two, &[]));
}

/// Every number of the chart is a cell of the table: the waste column of the same row.
#[test]
fn the_chart_shows_the_table_s_figures() {
    let sweeps = run(21_600, &grid(), 1);
    let text = markdown(&sweeps, &[]);
    for c in &sweeps {
        let section = text
            .split("\n## Class ")
            .find(|s| s.starts_with(&format!("{} ", c.class.name)))
            .unwrap();
        let header: Vec<&str> = section
            .lines()
            .find(|l| l.starts_with("| checkpoint interval"))
            .unwrap()
            .split(" | ")
            .collect();
        let waste_col = header.iter().position(|h| *h == "waste GPU-h").unwrap();
        let table: Vec<Vec<&str>> = section
            .lines()
            .filter(|l| l.starts_with("| ") && !l.starts_with("| checkpoint interval"))
            .map(|l| l.split(" | ").collect())
            .collect();
        let mut circles = 0;
        for line in section.lines().filter(|l| l.starts_with("<circle cx")) {
            let attr = |name: &str| {
                let start = line.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
                &line[start..start + line[start..].find('"').unwrap()]
            };
            let row = table
                .iter()
                .find(|r| {
                    r[0] == format!("| {}", attr("data-interval")) && r[1] == attr("data-limit")
                })
                .unwrap();
            assert_eq!(row[waste_col], attr("data-waste"), "{line}");
            circles += 1;
        }
        assert_eq!(circles, c.points.len());
        let chosen = section
            .lines()
            .find(|l| l.starts_with("<circle class=\"chosen\""))
            .unwrap();
        assert!(chosen.contains("data-interval=\"") && chosen.contains("data-waste=\""));
    }
}

/// A retry limit that ends jobs unfinished is not chosen for being cheap: ending them frees
/// capacity (fewer missed deadlines, less held time), but their work is never done. Figures
/// shaped as the Philly half-capacity sweep's: limit 0 costs least and misses fewer deadlines
/// than the reference, and ends 3,901 jobs; the setting that ends none is chosen.
#[test]
fn a_setting_that_ends_more_jobs_at_the_limit_does_not_keep_the_promise() {
    let reference = ClassFigures {
        jobs: 10_000,
        completed: 10_000,
        missed_deadlines: 29_614,
        held_gpu_hours: 5_000.0,
        productive_gpu_hours: 3_000.0,
        ..ClassFigures::default()
    };
    let ends_jobs = ClassFigures {
        completed: 6_099,
        failed_at_limit: 3_901,
        missed_deadlines: 26_577,
        held_gpu_hours: 3_500.0,
        productive_gpu_hours: 2_400.0,
        ..reference.clone()
    };
    let finishes_all = ClassFigures {
        held_gpu_hours: 4_500.0,
        ..reference.clone()
    };
    assert!(ends_jobs.cost_gpu_hours() < finishes_all.cost_gpu_hours());
    assert!(!rule::keeps(&reference, &ends_jobs));
    let points = vec![
        (setting(None, Some(0)), ends_jobs),
        (setting(Some(3600), None), finishes_all),
    ];
    assert_eq!(
        rule::recommend(&reference, &points),
        rule::Recommendation::Chosen {
            best: 1,
            runner_up: None
        }
    );
}
