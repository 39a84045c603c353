//! `quotatop sweep` as a process: the same output on any number of threads, and its figures
//! equal to separate `quotatop replay` runs with the same settings (an independent check).

use std::path::{Path, PathBuf};
use std::process::Command;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// Runs the binary; its stdout, after checking it succeeded.
fn quotatop(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_quotatop"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn sweep(extra: &[&str]) -> String {
    let trace = fixture("sweep_trace.csv");
    let config = fixture("sweep_small.toml");
    let mut args = vec![
        "sweep",
        "--trace",
        trace.to_str().unwrap(),
        "--config",
        config.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    quotatop(&args)
}

#[test]
fn the_output_is_byte_identical_on_one_and_two_threads() {
    for format in ["md", "json"] {
        let one = sweep(&["--threads", "1", "--format", format]);
        let two = sweep(&["--threads", "2", "--format", format]);
        assert!(one.len() > 1000, "{one}");
        assert_eq!(one, two, "--format {format}");
    }
}

/// The fields of one CSV record (RFC 4180 quotes, as `--jobs-out` writes them).
fn fields(line: &str) -> Vec<String> {
    let (mut out, mut cur, mut quoted) = (Vec::new(), String::new(), false);
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out
}

/// Class low's figures from `replay --jobs-out` under a configuration whose workload gives the
/// setting: the trace's class-low jobs (share a) carry no interval or cap of their own, and the
/// others carry theirs, so the workload reaches class low alone.
fn replay_figures(interval_s: Option<u64>, limit: Option<u32>) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let mut config = std::fs::read_to_string(fixture("sweep_small.toml")).unwrap();
    if let Some(s) = interval_s {
        config.push_str(&format!("checkpoint_s = {s}\n"));
    }
    if let Some(n) = limit {
        config.push_str(&format!("preemption_retries = {n}\n"));
    }
    let cfg = dir.path().join("setting.toml");
    std::fs::write(&cfg, config).unwrap();
    let rows = dir.path().join("rows.csv");
    let trace = fixture("sweep_trace.csv");
    quotatop(&[
        "replay",
        "--trace",
        trace.to_str().unwrap(),
        "--config",
        cfg.to_str().unwrap(),
        "--jobs-out",
        rows.to_str().unwrap(),
    ]);
    let text = std::fs::read_to_string(&rows).unwrap();
    let mut lines = text.lines();
    let head = fields(lines.next().unwrap());
    let col = |name: &str| head.iter().position(|h| h == name).unwrap();
    let (mut completed, mut failed, mut missed, mut with_deadline) = (0, 0, 0, 0);
    let (mut productive, mut lost, mut overhead, mut completion) = (0.0, 0.0, 0.0, 0.0);
    for line in lines {
        let f = fields(line);
        if f[col("share")] != "a" {
            continue;
        }
        let num = |name: &str| f[col(name)].parse::<f64>().unwrap();
        match f[col("outcome")].as_str() {
            "succeeded" => {
                completed += 1;
                completion += num("ended_s") - num("submit_s");
            }
            "failed" => failed += 1,
            _ => {}
        }
        productive += num("productive_gpu_hours");
        lost += num("lost_gpu_hours");
        overhead += num("overhead_gpu_hours");
        match f[col("deadline_met")].as_str() {
            "true" => with_deadline += 1,
            "false" => {
                with_deadline += 1;
                missed += 1;
            }
            _ => {}
        }
    }
    serde_json::json!({
        "completed": completed,
        "failed_at_limit": failed,
        "productive_gpu_hours": productive,
        "lost_gpu_hours": lost,
        "restart_overhead_gpu_hours": overhead,
        "missed_deadlines": missed,
        "with_deadline": with_deadline,
        "mean_completion_h": completion / 3600.0 / f64::from(completed),
    })
}

#[test]
fn the_sweep_s_figures_equal_separate_replays_with_the_same_settings() {
    let out = sweep(&[
        "--class",
        "low",
        "--checkpoint-interval",
        "30m,1h,none",
        "--retry-limit",
        "0,2,unlimited",
        "--format",
        "json",
    ]);
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    let classes = report["classes"].as_array().unwrap();
    assert_eq!(classes.len(), 1);
    assert_eq!(classes[0]["class"], "low");
    let points = classes[0]["points"].as_array().unwrap();
    let mut checked = 0;
    let mut differ = std::collections::BTreeSet::new();
    for (interval, interval_s, limit, limit_n) in [
        ("1h", Some(3600), "unlimited", None),
        ("none", None, "0", Some(0)),
        ("30m", Some(1800), "2", Some(2)),
    ] {
        let point = points
            .iter()
            .find(|p| p["checkpoint_interval"] == interval && p["retry_limit"] == limit)
            .unwrap();
        let swept = &point["figures"];
        let replayed = replay_figures(interval_s, limit_n);
        for (key, want) in replayed.as_object().unwrap() {
            let got = &swept[key];
            match (got.as_f64(), want.as_f64()) {
                // --jobs-out writes GPU-hours to 3 decimals: a sum of 4 rows is within 0.002.
                (Some(g), Some(w)) => assert!(
                    (g - w).abs() < 0.002,
                    "{interval}/{limit} {key}: sweep {g}, replay {w}"
                ),
                _ => panic!("{interval}/{limit} {key}: sweep {got}, replay {want}"),
            }
        }
        differ.insert(format!("{replayed}"));
        checked += 1;
    }
    assert_eq!(checked, 3);
    // The three settings lead to three different outcomes: the check could tell them apart.
    assert_eq!(differ.len(), 3, "{differ:?}");
}

/// Bad input fails loudly, saying what to give instead.
#[test]
fn bad_input_is_refused_with_a_next_step() {
    let trace = fixture("sweep_trace.csv");
    let config = fixture("sweep_small.toml");
    for (extra, says) in [
        (
            vec!["--class", "urgent"],
            "--class urgent: no such class with jobs in the trace (classes: low, normal)",
        ),
        (
            vec!["--checkpoint-interval", "soon"],
            "--checkpoint-interval \"soon\": not a duration",
        ),
        (
            vec!["--retry-limit", "many"],
            "--retry-limit \"many\": not a whole number",
        ),
        (vec!["--checkpoint-interval", "1h,60m"], "is given twice"),
        (vec!["--threads", "0"], "--threads 0: give at least 1"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_quotatop"))
            .args(["sweep", "--trace", trace.to_str().unwrap()])
            .args(["--config", config.to_str().unwrap()])
            .args(&extra)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{extra:?}");
        assert!(err.contains(says), "{extra:?}: {err}");
    }
}
