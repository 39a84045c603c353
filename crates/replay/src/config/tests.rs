//! Reading replay configurations: ranges, errors and scaling.

use super::*;

const GOOD: &str = r#"
name = "lending"
[[shares]]
name = "a"
strategy = "LEND_AND_BORROW"
limits = { "ml.g5.2xlarge" = 8 }
[[shares]]
name = "b"
strategy = "LEND"
limits = { "ml.g5.2xlarge" = 4 }
[workload]
checkpoint_s = 600
restart_overhead_s = 60
priority = { "a" = 10 }
"#;

#[test]
fn parses_and_sums_capacity() {
    let c = ReplayConfig::parse(GOOD, "good.toml", "good").unwrap();
    assert_eq!(c.name, "lending");
    assert_eq!(c.capacity, vec![CapacityLimit::new("ml.g5.2xlarge", 12)]);
    assert_eq!(c.workload.checkpoint_s, Some(600));
    assert_eq!(c.workload.priority["a"], 10);
}

#[test]
fn out_of_range_workload_numbers_name_key_line_and_column() {
    let cases = [
        (
            "restart_overhead_s = 60",
            "restart_overhead_s = 18446744073709552",
            "bad.toml: line 13, column 22: workload.restart_overhead_s = 18446744073709552: is beyond 100 years",
        ),
        (
            "checkpoint_s = 600",
            "checkpoint_s = -5",
            "bad.toml: line 12, column 16: workload.checkpoint_s = -5: is negative",
        ),
        (
            "checkpoint_s = 600",
            "checkpoint_s = 3155760001",
            "bad.toml: line 12, column 16: workload.checkpoint_s = 3155760001: is beyond 100 years",
        ),
        (
            "\"a\" = 10",
            "\"a\" = 10000",
            "bad.toml: line 14, column 20: workload.priority.\"a\" = 10000: is above 9999",
        ),
        (
            "\"a\" = 10",
            "\"a\" = -1",
            "bad.toml: line 14, column 20: workload.priority.\"a\" = -1: is negative",
        ),
        (
            "restart_overhead_s = 60",
            "restart_overhead_s = 60\npreemption_retries = 5000000000",
            "bad.toml: line 14, column 22: workload.preemption_retries = 5000000000: is above 4294967295",
        ),
        (
            "restart_overhead_s = 60",
            "restart_overhead_s = 1.5",
            "bad.toml: line 13, column 22: workload.restart_overhead_s: invalid type: floating point `1.5`, expected i64",
        ),
        (
            "restart_overhead_s = 60",
            "restart_overhead_s = nan",
            "bad.toml: line 13, column 22: workload.restart_overhead_s: invalid type: floating point `NaN`, expected i64",
        ),
        ("= 4 }", "= -4 }", "bad.toml: line 10, column 30:"),
    ];
    for (from, to, want) in cases {
        let bad = GOOD.replace(from, to);
        let e = ReplayConfig::parse(&bad, "bad.toml", "bad")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with(want), "{e}\nwanted: {want}");
    }
    // At the limit: 100 years is accepted.
    let ok = GOOD.replace("restart_overhead_s = 60", "restart_overhead_s = 3155760000");
    let c = ReplayConfig::parse(&ok, "ok.toml", "ok").unwrap();
    assert_eq!(c.workload.restart_overhead_s, 3_155_760_000);
}

#[test]
fn scaling_rounds_to_whole_instances_and_keeps_at_least_one() {
    let c = ReplayConfig::parse(GOOD, "good.toml", "good").unwrap();
    let half = c.scaled(0.5);
    assert_eq!(half.capacity, vec![CapacityLimit::new("ml.g5.2xlarge", 6)]);
    let limits: Vec<u32> = half
        .shares
        .iter()
        .map(|s| s.capacity_limits[0].max_capacity)
        .collect();
    assert_eq!(limits, vec![4, 2]);
    assert_eq!(half.shares[0].sharing, c.shares[0].sharing);
    let tiny = c.scaled(0.01);
    assert_eq!(tiny.capacity[0].max_capacity, 1);
    assert!(
        tiny.shares
            .iter()
            .all(|s| s.capacity_limits[0].max_capacity == 1)
    );
    // 4 × 0.375 = 1.5 rounds to 2; 8 × 0.375 = 3.
    let r = c.scaled(0.375);
    assert_eq!(r.shares[1].capacity_limits[0].max_capacity, 2);
    assert_eq!(r.shares[0].capacity_limits[0].max_capacity, 3);
    assert_eq!(
        c.scaled(2.0).capacity_summary(),
        "environment ml.g5.2xlarge 24; shares a 16, b 8"
    );
}

#[test]
fn errors_name_the_file_and_line() {
    let bad = GOOD.replace(
        "strategy = \"LEND\"\n",
        "strategy = \"LEND\"\ncolour = \"red\"\n",
    );
    let e = ReplayConfig::parse(&bad, "bad.toml", "bad")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("bad.toml: line 10, column 1:"), "{e}");
    assert!(e.contains("colour"), "{e}");
    let bad = GOOD.replace("\"LEND\"", "\"SHARE\"");
    let e = ReplayConfig::parse(&bad, "bad.toml", "bad")
        .unwrap_err()
        .to_string();
    assert!(e.contains("strategy \"SHARE\""), "{e}");
    let bad = GOOD.replace("= 8 }", "= 0 }");
    let e = ReplayConfig::parse(&bad, "bad.toml", "bad")
        .unwrap_err()
        .to_string();
    assert!(e.contains("at least 1"), "{e}");
    let e = ReplayConfig::parse("name = 3", "x.toml", "x")
        .unwrap_err()
        .to_string();
    assert!(e.contains("line 1"), "{e}");
}
