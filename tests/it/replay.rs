//! `quotatop replay`: conservation, isolation, determinism, bad input.

use std::path::{Path, PathBuf};
use std::process::Command;

use quotatop_replay::{ReplayConfig, philly, presets, replay, trace_csv};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn trace() -> Vec<quotatop_replay::TraceJob> {
    let p = fixture("replay_trace.csv");
    trace_csv::parse(&std::fs::read_to_string(&p).unwrap(), "replay_trace.csv").unwrap()
}

#[test]
fn conservation_every_job_accounted_and_gpu_hours_add_up() {
    // too-big asks regulated for 3 of its 2: misconfigured everywhere. big-explore asks
    // research for 4 of its 2: it runs only where research may borrow.
    for (cfg, unfinished) in [("replay_lending.toml", 1), ("replay_isolated.toml", 2)] {
        let cfg = ReplayConfig::load(&fixture(cfg)).unwrap();
        let (o, e) = replay(&trace(), &cfg, &mut |_, _| {}).unwrap();
        assert_eq!(o.jobs, 9);
        assert_eq!(
            o.completed + o.failed + o.unfinished,
            o.jobs,
            "{}",
            cfg.name
        );
        assert_eq!(o.unfinished, unfinished, "{}", cfg.name);
        // The engine's own accounting (work, lost, overhead per job) agrees with the ledger.
        let l = &o.ledger;
        let (mut work, mut lost, mut overhead) = (0.0, 0.0, 0.0);
        for id in e.jobs().map(|j| e.find(&j.id).unwrap()) {
            let (j, w) = (e.job(id).unwrap(), e.work(id).unwrap());
            let gpus = quotatop_analysis::gpus_per_instance(&j.instance_type).unwrap();
            let g = |ms: u64| ms as f64 / 3.6e6 * f64::from(j.instance_count * gpus);
            if j.status == quotatop_model::JobStatus::Succeeded {
                work += g(w.work_ms);
            }
            lost += g(w.rolled_back_ms);
            overhead += g(w.overhead_ms);
        }
        assert!(
            (l.productive_gpu_hours - work).abs() < 1e-6,
            "{}: {l:?} vs {work}",
            cfg.name
        );
        assert!(
            (l.lost_gpu_hours - lost).abs() < 1e-6,
            "{}: {l:?} vs {lost}",
            cfg.name
        );
        assert!(l.overhead_gpu_hours >= overhead - 1e-6, "{}", cfg.name);
    }
}

#[test]
fn isolated_never_preempts_and_lending_does() {
    let iso = ReplayConfig::load(&fixture("replay_isolated.toml")).unwrap();
    let (o, _) = replay(&trace(), &iso, &mut |_, _| {}).unwrap();
    assert_eq!(o.preemptions, 0);
    assert_eq!(o.ledger.lost_gpu_hours, 0.0);
    let lend = ReplayConfig::load(&fixture("replay_lending.toml")).unwrap();
    let (o, _) = replay(&trace(), &lend, &mut |_, _| {}).unwrap();
    assert!(
        o.preemptions > 0,
        "research borrows prod's idle capacity and loses it"
    );
    assert!(o.ledger.lost_gpu_hours > 0.0);
    // The fixture's retries-0 job ("fragile") is never preempted in this run, so the retry rule
    // is checked on a trace that does preempt: retry_rule_is_exact.
    retry_rule_holds(&e_of(&trace(), &lend), o.failed);
}

fn e_of(trace: &[quotatop_replay::TraceJob], cfg: &ReplayConfig) -> quotatop_engine::Engine {
    replay(trace, cfg, &mut |_, _| {}).unwrap().1
}

/// The retry rule, exactly: a job with `retries = N` fails on its (N+1)-th preemption and not
/// before; a job without a limit never fails; `failed` counts exactly those.
fn retry_rule_holds(e: &quotatop_engine::Engine, reported_failed: usize) {
    let mut failed = 0;
    for j in e.jobs() {
        let n = j.preemption_count();
        let fails = j.status == quotatop_model::JobStatus::Failed;
        match j.preemption_retries {
            Some(r) => assert_eq!(fails, n > r, "{}: {n} preemptions, {r} retries", j.name),
            None => assert!(!fails, "{}: no retry limit yet failed", j.name),
        }
        if fails {
            assert_eq!(Some(n - 1), j.preemption_retries, "{}: failed late", j.name);
            failed += 1;
        }
    }
    assert_eq!(reported_failed, failed);
}

/// Borrowers preempted when the lender reclaims: `fragile` (retries 0) fails on its first
/// preemption; `sturdy` (retries 1) survives one and finishes.
#[test]
fn retry_rule_is_exact() {
    let text =
        "submit_s,share,instance_type,instance_count,work_s,priority,checkpoint_s,retries,name
0,research,ml.p4d.24xlarge,6,3600,1,,0,fragile
60,prod,ml.p4d.24xlarge,4,600,9,,,reclaim-1
1000,research,ml.p4d.24xlarge,6,3600,1,,1,sturdy
1100,prod,ml.p4d.24xlarge,4,300,9,,,reclaim-2
";
    let trace = trace_csv::parse(text, "retries.csv").unwrap();
    let lend = ReplayConfig::load(&fixture("replay_lending.toml")).unwrap();
    let (o, e) = replay(&trace, &lend, &mut |_, _| {}).unwrap();
    retry_rule_holds(&e, o.failed);
    let job = |name: &str| e.jobs().find(|j| j.name == name).unwrap();
    let (fragile, sturdy) = (job("fragile"), job("sturdy"));
    assert_eq!(fragile.preemption_retries, Some(0));
    assert_eq!(
        (fragile.preemption_count(), fragile.status),
        (1, quotatop_model::JobStatus::Failed),
        "fragile fails on its first preemption"
    );
    assert_eq!(sturdy.preemption_retries, Some(1));
    assert_eq!(
        (sturdy.preemption_count(), sturdy.status),
        (1, quotatop_model::JobStatus::Succeeded),
        "sturdy survives one preemption"
    );
    assert_eq!(o.failed, 1);
}

#[test]
fn same_inputs_same_report() {
    // The presets derive from the first configuration; a base named as a preset would be
    // refused (two scenarios of one name).
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base.toml");
    let text = std::fs::read_to_string(fixture("replay_isolated.toml")).unwrap();
    std::fs::write(
        &base,
        text.replace("name = \"isolated\"", "name = \"base\""),
    )
    .unwrap();
    let run = || {
        Command::new(env!("CARGO_BIN_EXE_quotatop"))
            .args(["replay", "--format", "json", "--trace"])
            .arg(fixture("replay_trace.csv"))
            .arg("--config")
            .arg(&base)
            .arg("--preset")
            .output()
            .expect("runs")
    };
    let (a, b) = (run(), run());
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    let strip = |o: &std::process::Output| -> serde_json::Value {
        let mut v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
        for row in v["outcomes"].as_array_mut().expect("array") {
            row.as_object_mut()
                .expect("object")
                .remove("replay_seconds");
        }
        v
    };
    let (va, vb) = (strip(&a), strip(&b));
    assert_eq!(va, vb);
    assert_eq!(va["baseline"], "base");
    assert_eq!(va["outcomes"][0]["verdict"], serde_json::Value::Null);
    // The preset's isolated is the base again: the same schedule.
    assert_eq!(va["outcomes"][1]["verdict"]["kind"], "no_difference");
    assert_eq!(va["outcomes"][2]["verdict"]["approve"], true);
    let names: Vec<&str> = va["outcomes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["config"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        vec!["base", "isolated", "lending", "lending-protected(prod)"]
    );
}

#[test]
fn bad_input_names_file_and_line() {
    let dir = crate::temp_support::dir_path("replay");
    let bad_trace = dir.join("bad.csv");
    std::fs::write(
        &bad_trace,
        "submit_s,share,instance_type,instance_count,work_s\n0,research,ml.p4d.24xlarge,2,10\n5,research,ml.p4d.24xlarge,two,10\n",
    )
    .unwrap();
    let unknown_share = dir.join("unknown.csv");
    std::fs::write(
        &unknown_share,
        "submit_s,share,instance_type,instance_count,work_s\n0,ghost,ml.p4d.24xlarge,1,10\n",
    )
    .unwrap();
    let bad_cfg = dir.join("bad.toml");
    std::fs::write(
        &bad_cfg,
        "[[shares]]\nname = \"a\"\nstrategy = \"RESERVE\"\nlimits = 5\n",
    )
    .unwrap();
    let cases: Vec<(Vec<PathBuf>, Vec<PathBuf>, &str)> = vec![
        (
            vec![bad_trace.clone()],
            vec![fixture("replay_lending.toml")],
            "bad.csv:3: instance_count (column 4): \"two\"",
        ),
        (
            vec![unknown_share],
            vec![fixture("replay_lending.toml")],
            "unknown.csv:2: share \"ghost\" is not in configuration",
        ),
        (
            vec![fixture("replay_trace.csv")],
            vec![bad_cfg],
            "bad.toml: line 4",
        ),
        (
            vec![dir.join("missing.csv")],
            vec![fixture("replay_lending.toml")],
            "cannot read trace",
        ),
        (
            vec![fixture("replay_trace.csv")],
            vec![],
            "nothing to compare",
        ),
    ];
    for (traces, configs, want) in cases {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_quotatop"));
        cmd.arg("replay").arg("--trace").args(&traces);
        if !configs.is_empty() {
            cmd.arg("--config").args(&configs);
        }
        let out = cmd.output().unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{err} does not contain {want}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// The decision summary comes first with a verdict per scenario; rules from a file give cost
/// lines and budgets; `--jobs-out` writes one row per job and configuration whose productive
/// GPU-hours add up to the figure in the table.
#[test]
fn decision_summary_rules_and_per_job_rows() {
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("rules.toml");
    std::fs::write(
        &rules,
        "currency = \"USD\"\n[prices]\n\"ml.p4d.24xlarge\" = 32.77\n[budgets.research]\nmax_preemptions_per_job = 0\n[deadlines.\"*\"]\nmax_wait_s = 3600\n[decision]\nmin_goodput_gain_pct = 5.0\n",
    )
    .unwrap();
    let jobs = dir.path().join("jobs.csv");
    let out = Command::new(env!("CARGO_BIN_EXE_quotatop"))
        .args(["replay", "--trace"])
        .arg(fixture("replay_trace.csv"))
        .arg("--config")
        .arg(fixture("replay_isolated.toml"))
        .arg(fixture("replay_lending.toml"))
        .arg("--rules")
        .arg(&rules)
        .arg("--jobs-out")
        .arg(&jobs)
        .output()
        .unwrap();
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(md.starts_with("## Decision (baseline: isolated)"), "{md}");
    // The old key is read as the new one, with a warning in the output.
    assert!(md.contains("min_completion_gain_pct = 5"), "{md}");
    assert!(
        md.contains(
            "the mean completion time of the jobs every scenario completes falls by more than 5%"
        ),
        "{md}"
    );
    // Lending completes work sooner, but research's preempted jobs breach its budget.
    assert!(
        md.contains("Verdict lending: REJECT — fails: interruption-budget breaches 0 → 2"),
        "{md}"
    );
    assert!(md.contains("| cost allocated (common window) |"), "{md}");
    // The run's scorecard: the scorecard's column list, in its order, one row each.
    let scorecard_rows: Vec<&str> = md
        .lines()
        .filter_map(|l| l.strip_prefix("| scorecard: "))
        .filter_map(|l| l.split(" | ").next())
        .collect();
    let headers: Vec<&str> = quotatop_analysis::scorecard::COLUMNS
        .iter()
        .map(|c| c.header)
        .collect();
    assert_eq!(scorecard_rows, headers, "{md}");
    assert!(md.contains("USD"), "{md}");
    assert!(
        md.contains("Cost by share (allocated over the common window / productive / wasted)"),
        "{md}"
    );
    assert!(md.contains("| research | "), "{md}");
    // research's jobs preempted at all breach a budget of 0 preemptions.
    let breaches = md
        .lines()
        .find(|l| l.starts_with("| interruption-budget breaches |"))
        .unwrap();
    assert!(
        breaches.starts_with("| interruption-budget breaches | 0 | "),
        "{breaches}"
    );
    assert!(!breaches.ends_with("| 0 |"), "{breaches}");
    let rows = std::fs::read_to_string(&jobs).unwrap();
    let mut lines = rows.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(header[0], "config");
    let prod = header
        .iter()
        .position(|h| *h == "productive_gpu_hours")
        .unwrap();
    let mut per_config: std::collections::BTreeMap<String, (usize, f64)> = Default::default();
    for l in lines {
        let f: Vec<&str> = l.split(',').collect();
        let e = per_config.entry(f[0].to_string()).or_default();
        e.0 += 1;
        e.1 += f[prod].parse::<f64>().unwrap();
    }
    assert_eq!(per_config["isolated"].0, 9);
    assert_eq!(per_config["lending"].0, 9);
    let row = md
        .lines()
        .find(|l| l.starts_with("| scorecard: productive GPU-h |"))
        .unwrap();
    assert_eq!(
        row,
        format!(
            "| scorecard: productive GPU-h | {:.1} | {:.1} |",
            per_config["isolated"].1, per_config["lending"].1
        )
    );
}

#[test]
fn bad_rules_and_horizon_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("rules.toml");
    std::fs::write(&rules, "[prices]\n\"ml.p4d.24xlarge\" = -3.0\n").unwrap();
    let run = |extra: &[&std::ffi::OsStr]| {
        Command::new(env!("CARGO_BIN_EXE_quotatop"))
            .args(["replay", "--trace"])
            .arg(fixture("replay_trace.csv"))
            .arg("--config")
            .arg(fixture("replay_isolated.toml"))
            .args(extra)
            .output()
            .unwrap()
    };
    let out = run(&["--rules".as_ref(), rules.as_os_str()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("rules.toml") && err.contains("prices"),
        "{err}"
    );
    std::fs::write(&rules, "[deadline]\nx = 1\n").unwrap();
    let out = run(&["--rules".as_ref(), rules.as_os_str()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("line 1"), "{err}");
    let out = run(&["--horizon".as_ref(), "soon".as_ref()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("--horizon"), "{err}");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
}

fn quotatop(args: &[&std::ffi::OsStr]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_quotatop"))
        .arg("replay")
        .args(args)
        .output()
        .expect("runs")
}

fn os<'a>(items: &'a [&'a dyn AsRef<std::ffi::OsStr>]) -> Vec<&'a std::ffi::OsStr> {
    items.iter().map(|i| i.as_ref()).collect()
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const PHILLY_HEADER: &str =
    "app_id,submit_time,service,num_jobs,sleep_time,model_name,duration_s\n";

fn philly_dir(nodes: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for vc in ["aa", "bb"] {
        std::fs::write(
            dir.path().join(format!("trace_{vc}.csv")),
            format!("{PHILLY_HEADER}0,0,1,2,0,\"Resnet,50\",600\n1,30,1,4,0,M,60\n"),
        )
        .unwrap();
    }
    if !nodes.is_empty() {
        std::fs::write(dir.path().join("philly_vc_nodes.csv"), nodes).unwrap();
    }
    dir
}

#[test]
fn philly_node_counts_are_never_assumed() {
    // A directory whose nodes file misses a VC.
    let dir = philly_dir("vc,node num\naa,1\n");
    let p = dir.path();
    let out = quotatop(&os(&[&"--trace", &p, &"--preset"]));
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("no node count for VC bb"), "{err}");
    assert!(err.contains("trace_bb.csv"), "{err}");
    assert!(err.contains("--default-nodes"), "{err}");
    let out = quotatop(&os(&[
        &"--trace",
        &p,
        &"--preset",
        &"--default-nodes",
        &"2",
    ]));
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(
            "Philly VC bb: philly_vc_nodes.csv gives no node count; using --default-nodes 2 (16 GPUs)"
        ),
        "{err}"
    );
    assert!(!err.contains("Philly VC aa"), "{err}");
    // A single trace file with no nodes file next to it.
    let bare = philly_dir("");
    let file = bare.path().join("trace_aa.csv");
    let out = quotatop(&os(&[&"--trace", &file, &"--preset"]));
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("trace_aa.csv: no node count for VC aa"),
        "{err}"
    );
    assert!(err.contains("philly_vc_nodes.csv next to it"), "{err}");
    let out = quotatop(&os(&[
        &"--trace",
        &file,
        &"--preset",
        &"--default-nodes",
        &"1",
    ]));
    assert!(out.status.success(), "{}", stderr(&out));
    for bad in ["0", "-1", "x", "1000000000"] {
        let out = quotatop(&os(&[
            &"--trace",
            &file,
            &"--preset",
            &"--default-nodes",
            &bad,
        ]));
        assert!(!out.status.success());
        assert!(
            stderr(&out).contains("is not a whole number of nodes"),
            "{}",
            stderr(&out)
        );
    }
}

fn unfinished(out: &std::process::Output) -> Vec<(String, u64)> {
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    v["outcomes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["config"].as_str().unwrap().to_string(),
                r["unfinished"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn capacity_scale_applies_to_configs_and_philly_once_and_refuses_bad_factors() {
    let trace = fixture("replay_trace.csv");
    let iso = fixture("replay_isolated.toml");
    let base = [
        &"--format" as &dyn AsRef<std::ffi::OsStr>,
        &"json",
        &"--trace",
        &trace,
        &"--config",
        &iso,
    ];
    let out = quotatop(&os(&base));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(unfinished(&out), vec![("isolated".to_string(), 2)]);
    let mut scaled = base.to_vec();
    scaled.extend([&"--capacity-scale" as &dyn AsRef<std::ffi::OsStr>, &"0.5"]);
    let out = quotatop(&os(&scaled));
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("capacity scaled by 0.5: isolated: environment ml.p4d.24xlarge 4; shares research 1, prod 2, regulated 1"),
        "{err}"
    );
    // research's 2-instance sweeps, prod's nightly (4) and audit-1 (2) no longer fit.
    assert_eq!(unfinished(&out), vec![("isolated".to_string(), 6)]);
    // Philly: the base is scaled once, before the presets are derived from it.
    let dir = philly_dir("vc,node num\naa,4\nbb,1\n");
    let out = quotatop(&os(&[
        &"--trace",
        &dir.path(),
        &"--preset",
        &"--capacity-scale",
        &"0.25",
    ]));
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.matches("capacity scaled by").count(), 1, "{err}");
    assert!(
        err.contains(
            "capacity scaled by 0.25: philly: environment ml.g5.2xlarge 10; shares aa 8, bb 2"
        ),
        "{err}"
    );
    for bad in ["0", "-1", "NaN", "inf", "x"] {
        let mut args = base.to_vec();
        args.extend([&"--capacity-scale" as &dyn AsRef<std::ffi::OsStr>, &bad]);
        let out = quotatop(&os(&args));
        assert!(!out.status.success(), "{bad}");
        assert!(
            stderr(&out).contains("is not a finite number > 0"),
            "{}",
            stderr(&out)
        );
    }
}

#[test]
fn jobs_that_can_never_run_are_named_per_configuration() {
    let out = quotatop(&os(&[
        &"--trace",
        &fixture("replay_trace.csv"),
        &"--config",
        &fixture("replay_isolated.toml"),
        &fixture("replay_lending.toml"),
    ]));
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("isolated: 2 job(s) can never run"), "{err}");
    assert!(err.contains("lending: 1 job(s) can never run"), "{err}");
    assert!(err.contains("  big-explore ("), "{err}");
    assert!(
        err.contains("replay_trace.csv:4): MISCONFIGURATION:"),
        "{err}"
    );
    assert!(err.contains("  too-big ("), "{err}");
    assert!(
        err.contains("replay_trace.csv:10): MISCONFIGURATION:"),
        "{err}"
    );
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(
        md.contains("| unfinished (misconfigured) | 2 | 1 |"),
        "{md}"
    );
    // Many: the first ten by name, then a count; names may hold commas (quoted).
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.csv");
    let mut text = String::from("submit_s,share,instance_type,instance_count,work_s,name\n");
    for i in 0..13 {
        text.push_str(&format!(
            "{i},regulated,ml.p4d.24xlarge,3,60,\"huge,{i}\"\n"
        ));
    }
    text.push_str("20,regulated,ml.p4d.24xlarge,99,60,larger-than-the-environment\n");
    std::fs::write(&big, text).unwrap();
    let out = quotatop(&os(&[
        &"--trace",
        &big,
        &"--config",
        &fixture("replay_isolated.toml"),
    ]));
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("isolated: 14 job(s) can never run"), "{err}");
    assert!(err.contains("  huge,0 ("), "{err}");
    assert!(err.contains("big.csv:2)"), "{err}");
    assert!(err.contains("  huge,9 ("), "{err}");
    assert!(!err.contains("huge,10"), "{err}");
    assert!(err.contains("  … and 4 more"), "{err}");
}

#[test]
fn out_of_range_numbers_are_errors_naming_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let far = dir.path().join("far.csv");
    std::fs::write(
        &far,
        "submit_s,share,instance_type,instance_count,work_s\n1e300,prod,ml.p4d.24xlarge,1,10\n",
    )
    .unwrap();
    let cfg = dir.path().join("wrap.toml");
    std::fs::write(
        &cfg,
        std::fs::read_to_string(fixture("replay_lending.toml"))
            .unwrap()
            .replace(
                "restart_overhead_s = 60",
                "restart_overhead_s = 18446744073709552",
            ),
    )
    .unwrap();
    let philly = philly_dir("vc,node num\naa,1\nbb,1\n");
    std::fs::write(
        philly.path().join("trace_bb.csv"),
        format!("{PHILLY_HEADER}0,0,1,1,0,M,60\n1,5,1,1,0,M,-60\n"),
    )
    .unwrap();
    let (lending, trace, philly) = (
        fixture("replay_lending.toml"),
        fixture("replay_trace.csv"),
        philly.path().to_path_buf(),
    );
    let cases: Vec<(Vec<&dyn AsRef<std::ffi::OsStr>>, String)> = vec![
        (
            vec![&"--trace", &far, &"--config", &lending],
            "far.csv:2: submit_s (column 1): \"1e300\" is beyond 100 years".to_string(),
        ),
        (
            vec![&"--trace", &trace, &"--config", &cfg],
            "wrap.toml: line 18, column 22: workload.restart_overhead_s = 18446744073709552: is beyond 100 years"
                .to_string(),
        ),
        (
            vec![&"--trace", &philly, &"--preset"],
            "trace_bb.csv:3: duration_s (column 7): \"-60\" is negative".to_string(),
        ),
    ];
    for (args, want) in cases {
        let out = quotatop(&os(&args));
        assert!(!out.status.success(), "{want}");
        let err = stderr(&out);
        assert!(err.contains(&want), "{err} does not contain {want}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn protected_share_is_the_largest_then_most_demanded_among_the_64_node_vcs() {
    // Missing traces fail the test, naming the folder (never a silent skip).
    let vcs = philly::load_dir(&crate::philly_figures::traces(), None)
        .expect("every VC has a node count");
    let shares: Vec<_> = vcs
        .iter()
        .map(|v| {
            quotatop_model::QuotaShare::new(
                v.vc.clone(),
                vec![quotatop_model::CapacityLimit::new(
                    philly::GPU_INSTANCE_TYPE,
                    v.gpus,
                )],
                quotatop_model::SharingConfig::reserve(),
            )
        })
        .collect();
    let jobs: Vec<_> = vcs.iter().flat_map(|v| v.jobs.iter().cloned()).collect();
    let base = ReplayConfig {
        name: "philly".to_string(),
        capacity: quotatop_replay::summed_limits(&shares),
        shares,
        workload: Default::default(),
        rules: Default::default(),
    };
    // 6214e9, b436b2 and ee9e8c have 64 nodes each; ee9e8c's jobs ask for the most GPU-hours.
    let choice = presets::protected_share(&base, None, &jobs).unwrap();
    assert_eq!(choice.name, "ee9e8c");
    assert_eq!(
        choice.reason,
        "protected share: ee9e8c (largest capacity 512 instances; tie with 6214e9, b436b2 broken by GPU-hours of demand 579186 vs 564852, 478565)"
    );
    assert_eq!(
        presets::protected_share(&base, Some("b436b2"), &jobs)
            .unwrap()
            .name,
        "b436b2"
    );
    let names: Vec<String> = presets::product_presets(&base, None, &jobs)
        .into_iter()
        .map(|c| c.name)
        .collect();
    assert_eq!(names[2], "lending-protected(ee9e8c)");
}

/// Two replays writing the same `--jobs-out` at once: each writes its own temporary file and
/// renames it, so the result is one whole set of rows, never a mix or a torn file.
#[test]
fn two_replays_writing_the_same_jobs_out_never_mix() {
    let dir = tempfile::tempdir().unwrap();
    let jobs = dir.path().join("jobs.csv");
    let spawn = |cfg: &str| {
        Command::new(env!("CARGO_BIN_EXE_quotatop"))
            .args(["replay", "--trace"])
            .arg(fixture("replay_trace.csv"))
            .arg("--config")
            .arg(fixture(cfg))
            .arg("--jobs-out")
            .arg(&jobs)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    for _ in 0..5 {
        let (mut a, mut b) = (spawn("replay_isolated.toml"), spawn("replay_lending.toml"));
        assert!(a.wait().unwrap().success() && b.wait().unwrap().success());
        let rows = std::fs::read_to_string(&jobs).unwrap();
        let lines: Vec<&str> = rows.lines().collect();
        assert_eq!(lines.len(), 10, "{rows}");
        let configs: std::collections::BTreeSet<&str> = lines[1..]
            .iter()
            .map(|l| l.split(',').next().unwrap())
            .collect();
        assert_eq!(configs.len(), 1, "rows of two runs mixed: {rows}");
    }
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 1, "temporary files left: {left:?}");
}
