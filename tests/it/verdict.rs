//! The verdict between scenarios (docs/verdict.md): worked example 2 through the trace and
//! config files a user writes, and properties over generated traces.

use std::path::{Path, PathBuf};
use std::process::Command;

use proptest::prelude::*;

use quotatop_analysis::scorecard::decision::{DecisionRule, VerdictKind, max_behind_gpu_hours};
use quotatop_replay::report::{self, Judged};
use quotatop_replay::{Comparison, ReplayConfig, ReplayOutcome, TraceJob, replay_to, trace_csv};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn load_trace(name: &str) -> Vec<TraceJob> {
    let p = fixture(name);
    trace_csv::parse(&std::fs::read_to_string(&p).unwrap(), name).unwrap()
}

/// The two configurations of worked example 2 replayed over `trace`, read with the baseline's
/// rules (as `quotatop replay` reads them).
fn example_2(trace: &str) -> (Vec<ReplayOutcome>, Judged) {
    let jobs = load_trace(trace);
    let iso = ReplayConfig::load(&fixture("verdict_isolated.toml")).unwrap();
    let lend = ReplayConfig::load(&fixture("verdict_lending.toml")).unwrap();
    let cmp = Comparison {
        rules: iso.rules.clone(),
        per_job: true,
        ..Comparison::default()
    };
    let outcomes: Vec<ReplayOutcome> = [iso, lend]
        .iter()
        .map(|c| replay_to(&jobs, c, &cmp, &mut |_, _| {}).unwrap().0)
        .collect();
    let judged = report::judge(&outcomes, &DecisionRule::default());
    (outcomes, judged)
}

/// Each job's end in hours, by name.
fn ends(o: &ReplayOutcome) -> Vec<(String, f64)> {
    o.jobs_rows
        .iter()
        .map(|r| (r.name.to_string(), r.ended_s.unwrap_or(f64::NAN) / 3600.0))
        .collect()
}

fn named(v: &[(&str, f64)]) -> Vec<(String, f64)> {
    v.iter().map(|(n, t)| (n.to_string(), *t)).collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-5
}

#[test]
fn worked_example_2_trace_g_approves_work_completed_sooner() {
    let (o, j) = example_2("verdict_trace_g.csv");
    assert_eq!(ends(&o[0]), named(&[("a1", 1.0), ("a2", 2.0), ("b1", 2.2)]));
    assert_eq!(ends(&o[1]), named(&[("a1", 1.0), ("a2", 1.0), ("b1", 2.2)]));
    let v = j.verdicts[1].as_ref().unwrap();
    let (m0, m1) = (
        j.completion[0].mean_completion_h.unwrap(),
        j.completion[1].mean_completion_h.unwrap(),
    );
    assert!(close(m0, 1.733333) && close(m1, 1.4), "{m0} {m1}");
    assert!(
        close(v.mean_completion_change_h.unwrap(), -0.333333),
        "{v:?}"
    );
    assert_eq!(
        format!("{:.1}%", v.mean_completion_change_pct.unwrap()),
        "-19.2%"
    );
    // Never behind; lending ahead by 1 GPU-h on [1, 2).
    assert_eq!(v.max_behind_pct, 0.0);
    let ahead = max_behind_gpu_hours(&o[1].schedule, &o[0].schedule, &j.frame);
    assert!(close(ahead, 1.0), "{ahead}");
    // Goodput by the submission window's end (1.2 h): 1.0 vs 2.0 GPU-h.
    assert!(close(
        j.completion[0].goodput_by_submission_end_gpu_hours,
        1.0
    ));
    assert!(close(
        j.completion[1].goodput_by_submission_end_gpu_hours,
        2.0
    ));
    for (k, out) in o.iter().enumerate() {
        // b1 waits 0 and meets its deadline (3.2 h); no waste.
        let b1 = out.jobs_rows.iter().find(|r| r.name == "b1").unwrap();
        assert_eq!(b1.deadline_met, Some(true));
        assert_eq!(out.evaluation.important.wait.p95_ms, Some(0));
        assert_eq!(out.ledger.waste_gpu_hours(), 0.0);
        // Common window [0, 2.2 h): 4.4 GPU-h, 3 / 4.4 = 68.2% in both.
        let f = &j.figures[k];
        assert!(close(f.allocated_gpu_hours, 4.4), "{f:?}");
        assert_eq!(format!("{:.1}%", f.utilisation.unwrap() * 100.0), "68.2%");
    }
    assert_eq!(v.kind, VerdictKind::Approve, "{}", v.summary);
    assert!(
        v.summary
            .contains("interruption not judged: no budget defined"),
        "{}",
        v.summary
    );
}

#[test]
fn worked_example_2_trace_l_rejects_waste_without_gain() {
    let (o, j) = example_2("verdict_trace_l.csv");
    let want = named(&[("a1", 1.0), ("a2", 2.0), ("b1", 1.5)]);
    assert_eq!(ends(&o[0]), want);
    assert_eq!(ends(&o[1]), want);
    for c in &j.completion {
        assert!(close(c.mean_completion_h.unwrap(), 1.5), "{c:?}");
    }
    // a2 borrows B at 0 and is preempted at 0.5 h: held 3.5 = productive 3.0 + lost 0.5.
    let l = &o[1].ledger;
    assert!(close(l.held_gpu_hours(), 3.5) && close(l.productive_gpu_hours, 3.0));
    assert!(close(l.lost_gpu_hours, 0.5));
    let v = j.verdicts[1].as_ref().unwrap();
    assert!(close(v.mean_completion_change_h.unwrap(), 0.0));
    assert!(close(v.waste_gpu_hours_delta, 0.5));
    assert_eq!(v.kind, VerdictKind::Reject);
    assert!(
        v.summary.starts_with("fails: completed work no sooner"),
        "{}",
        v.summary
    );
    assert!(v.summary.contains("waste +0.5 GPU-h"), "{}", v.summary);
}

fn quotatop(args: &[&str], files: &[PathBuf]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_quotatop"))
        .args(args)
        .args(files)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// The command prints what the tests above compute, with the clause that fails.
#[test]
fn the_command_says_approve_and_reject_with_their_reasons() {
    let configs = [
        fixture("verdict_isolated.toml"),
        fixture("verdict_lending.toml"),
    ];
    let run = |trace: &str| {
        let mut files = vec![fixture(trace), "--config".into()];
        files.extend(configs.iter().cloned());
        quotatop(&["replay", "--trace"], &files)
    };
    let (ok, g, err) = run("verdict_trace_g.csv");
    assert!(ok, "{err}");
    assert!(
        g.contains("| lending | 1.40 h (-19.2%) | 0.0% | 2.0 / 2 |"),
        "{g}"
    );
    assert!(
        g.contains("Verdict lending: APPROVE — rests on: completed work sooner"),
        "{g}"
    );
    assert!(
        g.contains("| allocated GPU-h (common window) | 4.4 | 4.4 |"),
        "{g}"
    );
    assert!(
        g.contains("| completed-work utilisation (common window) | 68.2% | 68.2% |"),
        "{g}"
    );
    let (ok, l, err) = run("verdict_trace_l.csv");
    assert!(ok, "{err}");
    assert!(
        l.contains("Verdict lending: REJECT — fails: completed work no sooner"),
        "{l}"
    );
    // --sensitivity: the verdict at 0.75× and 1.25× the capacity, in the same run. Each share's
    // one instance stays one (rounded, at least 1): the same schedules, the same REJECT.
    let mut files = vec![fixture("verdict_trace_l.csv"), "--config".into()];
    files.extend(configs.iter().cloned());
    files.push("--sensitivity".into());
    let (ok, s, err) = quotatop(&["replay", "--trace"], &files);
    assert!(ok, "{err}");
    let line = s
        .lines()
        .find(|l| l.starts_with("Sensitivity"))
        .expect("a sensitivity line");
    assert!(
        line.contains("at 0.75× the capacity: lending REJECT"),
        "{line}"
    );
    assert!(
        line.contains("at 1.25× the capacity: lending REJECT"),
        "{line}"
    );
}

/// The same scenario name twice is refused with how to rename.
#[test]
fn duplicate_scenario_names_are_refused() {
    let (ok, _, err) = quotatop(
        &["replay", "--trace"],
        &[
            fixture("verdict_trace_g.csv"),
            "--config".into(),
            fixture("verdict_isolated.toml"),
            fixture("verdict_isolated.toml"),
        ],
    );
    assert!(!ok);
    assert!(
        err.contains("two scenarios are named \"isolated\""),
        "{err}"
    );
    assert!(
        err.contains("rename one, e.g. name = \"isolated-2\""),
        "{err}"
    );
}

/// A job the baseline can never run is listed in the Markdown and the JSON, and an APPROVE
/// that rests on it says so; budgets, once defined, are judged.
#[test]
fn never_run_jobs_are_listed_and_budgets_judged() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("wide.csv");
    std::fs::write(
        &trace,
        "submit_s,share,instance_type,instance_count,work_s,priority,name\n0,A,ml.g5.2xlarge,2,3600,0,wide\n0,A,ml.g5.2xlarge,1,3600,0,narrow\n",
    )
    .unwrap();
    let mut files = vec![trace.clone(), "--config".into()];
    files.push(fixture("verdict_isolated.toml"));
    files.push(fixture("verdict_lending.toml"));
    let (ok, md, err) = quotatop(&["replay", "--trace"], &files);
    assert!(ok, "{err}");
    assert!(md.contains("Jobs isolated can never run (1;"), "{md}");
    assert!(md.contains("| wide | "), "{md}");
    assert!(
        md.contains("lending completes 1 job, 2.0 GPU-h, that isolated never runs"),
        "{md}"
    );
    let (ok, json, err) = quotatop(&["replay", "--format", "json", "--trace"], &files);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["outcomes"][0]["never_run"][0]["name"], "wide");
    assert_eq!(v["outcomes"][1]["verdict"]["kind"], "approve");

    // Trace L with a budget of no preemption: lending breaches it once more than isolated.
    let rules = dir.path().join("rules.toml");
    std::fs::write(&rules, "[budgets.\"*\"]\nmax_preemptions_per_job = 0\n").unwrap();
    let mut files = vec![fixture("verdict_trace_l.csv"), "--config".into()];
    files.push(fixture("verdict_isolated.toml"));
    files.push(fixture("verdict_lending.toml"));
    files.push("--rules".into());
    files.push(rules);
    let (ok, md, err) = quotatop(&["replay", "--trace"], &files);
    assert!(ok, "{err}");
    assert!(md.contains("interruption-budget breaches 0 → 1"), "{md}");
    assert!(!md.contains("not judged"), "{md}");
}

/// One share: nothing to lend, the schedules are identical: NO DIFFERENCE.
#[test]
fn one_share_makes_no_difference() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = |name: &str, strategy: &str| {
        let p = dir.path().join(format!("{name}.toml"));
        std::fs::write(
            &p,
            format!("name = \"{name}\"\n[[shares]]\nname = \"A\"\nstrategy = \"{strategy}\"\nlimits = {{ \"ml.g5.2xlarge\" = 1 }}\n"),
        )
        .unwrap();
        p
    };
    let trace = dir.path().join("one.csv");
    std::fs::write(
        &trace,
        "submit_s,share,instance_type,instance_count,work_s\n0,A,ml.g5.2xlarge,1,3600\n0,A,ml.g5.2xlarge,1,3600\n",
    )
    .unwrap();
    let files = [
        trace,
        "--config".into(),
        cfg("isolated", "RESERVE"),
        cfg("lending", "LEND_AND_BORROW"),
    ];
    let (ok, md, err) = quotatop(&["replay", "--trace"], &files);
    assert!(ok, "{err}");
    assert!(
        md.contains("Verdict lending: NO DIFFERENCE — every job runs exactly as under isolated"),
        "{md}"
    );
}

/// A generated trace: `(share, submit minutes, instances, work minutes, priority)`, every job
/// within its share's limit so that every job finishes in both scenarios.
fn job() -> impl Strategy<Value = (usize, u32, u32, u32, u32)> {
    (
        0usize..3,
        0u32..180,
        1u32..=2,
        10u32..120,
        prop_oneof![Just(0u32), Just(1000)],
    )
}

const SHARES: [&str; 3] = ["A", "B", "C"];

fn configs() -> [ReplayConfig; 2] {
    let cfg = |name: &str, strategies: [&str; 3]| {
        let mut text =
            format!("name = \"{name}\"\ncurrency = \"USD\"\n[prices]\n\"ml.g5.2xlarge\" = 1.5\n");
        for (s, strategy) in SHARES.iter().zip(strategies) {
            text.push_str(&format!(
                "[[shares]]\nname = \"{s}\"\nstrategy = \"{strategy}\"\nlimits = {{ \"ml.g5.2xlarge\" = 2 }}\n"
            ));
        }
        ReplayConfig::parse(&text, name, name).unwrap()
    };
    [
        cfg("isolated", ["RESERVE", "RESERVE", "RESERVE"]),
        cfg("lending", ["LEND_AND_BORROW", "LEND", "LEND_AND_BORROW"]),
    ]
}

fn trace_of(jobs: &[(usize, u32, u32, u32, u32)]) -> Vec<TraceJob> {
    let mut text = String::from("submit_s,share,instance_type,instance_count,work_s,priority\n");
    for (s, at, n, w, p) in jobs {
        text.push_str(&format!(
            "{},{},ml.g5.2xlarge,{n},{},{p}\n",
            at * 60,
            SHARES[*s],
            w * 60
        ));
    }
    trace_csv::parse(&text, "generated.csv").unwrap()
}

fn judged(trace: &[TraceJob], horizon_ms: Option<i64>) -> (Vec<ReplayOutcome>, Judged) {
    let [iso, lend] = configs();
    let cmp = Comparison {
        horizon_ms,
        rules: iso.rules.clone(),
        per_job: true,
        ..Comparison::default()
    };
    let outcomes: Vec<ReplayOutcome> = [iso, lend]
        .iter()
        .map(|c| replay_to(trace, c, &cmp, &mut |_, _| {}).unwrap().0)
        .collect();
    let j = report::judge(&outcomes, &DecisionRule::default());
    (outcomes, j)
}

/// ∫ (C_base − C_s) dt in GPU-h × h, from each job's end (`--jobs-out` rows) and work.
fn area_between(base: &ReplayOutcome, this: &ReplayOutcome, work: &dyn Fn(&str) -> f64) -> f64 {
    let ends = |o: &ReplayOutcome| -> Vec<(f64, f64)> {
        o.jobs_rows
            .iter()
            .map(|r| (r.ended_s.unwrap() / 3600.0, work(&r.name.to_string())))
            .collect()
    };
    let (b, s) = (ends(base), ends(this));
    let mut times: Vec<f64> = b.iter().chain(&s).map(|&(t, _)| t).collect();
    times.sort_by(f64::total_cmp);
    let c = |v: &[(f64, f64)], t: f64| -> f64 {
        v.iter().filter(|&&(e, _)| e <= t).map(|&(_, w)| w).sum()
    };
    times
        .windows(2)
        .map(|w| (c(&b, w[0]) - c(&s, w[0])) * (w[1] - w[0]))
        .sum()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// The verdict does not depend on `--horizon`; identical capacity costs the same in every
    /// scenario; the mean completion change is the area between the curves ÷ the work.
    #[test]
    fn verdict_properties(jobs in prop::collection::vec(job(), 1..8), h1 in 5i64..300, h2 in 5i64..300) {
        let trace = trace_of(&jobs);
        // Horizons of minutes to hours: many cut the run short.
        let (o, a) = judged(&trace, Some(h1 * 60_000));
        let (_, b) = judged(&trace, Some(h2 * 60_000));
        let (_, c) = judged(&trace, None);
        let kind = |j: &Judged| j.verdicts[1].as_ref().map(|v| (v.kind, v.summary.clone()));
        prop_assert_eq!(kind(&a), kind(&b));
        prop_assert_eq!(kind(&a), kind(&c));
        let cost = |k: usize| a.figures[k].cost.as_ref().map(|c| c.allocated);
        prop_assert_eq!(cost(0), cost(1));
        prop_assert_eq!(a.figures[0].allocated_gpu_hours, a.figures[1].allocated_gpu_hours);
        // Every job finishes in both: the total work is the trace's.
        let names: Vec<String> = o[0].jobs_rows.iter().map(|r| r.name.to_string()).collect();
        let work = |name: &str| -> f64 {
            let i = names.iter().position(|n| n == name).unwrap();
            let t = trace.iter().find(|t| t.name == names[i].as_str()).unwrap();
            t.work_ms as f64 / 3_600_000.0 * f64::from(t.instance_count)
        };
        let total: f64 = trace.iter().map(|t| t.work_ms as f64 / 3_600_000.0 * f64::from(t.instance_count)).sum();
        let v = a.verdicts[1].as_ref().unwrap();
        let change = v.mean_completion_change_h.unwrap();
        let area = area_between(&o[0], &o[1], &work);
        // A later mean (positive change) is the baseline's curve ahead: ∫ (C_base − C_s).
        prop_assert!((change - area / total).abs() < 1e-6, "change {} area/total {}", change, area / total);
    }
}
