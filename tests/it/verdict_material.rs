//! What a verdict rests on (issue 44, items 3–6): jobs only one scenario completes are stated
//! apart from the mean completion time, a change below the materiality threshold is NO
//! MATERIAL DIFFERENCE, an APPROVE states the waste it costs, class membership does not
//! depend on the order of classes, every note says what the figures used, and "by the last
//! submission" and "by the horizon" count a completion at the same instant the same way.

use std::path::{Path, PathBuf};
use std::process::Command;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// `quotatop replay --trace TRACE --config isolated lending ARGS…`: (success, stdout, stderr).
fn replay(trace: &Path, args: &[&std::ffi::OsStr]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_quotatop"))
        .arg("replay")
        .arg("--trace")
        .arg(trace)
        .arg("--config")
        .arg(fixture("verdict_isolated.toml"))
        .arg(fixture("verdict_lending.toml"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

fn verdict_line(md: &str) -> String {
    md.lines()
        .find(|l| l.starts_with("Verdict lending:"))
        .unwrap_or_else(|| panic!("no verdict line in {md}"))
        .to_string()
}

/// Two 1-instance shares and a job `h` needing 2 instances: isolation can never run it,
/// lending runs it after a1 and b1. The mean completion time compares a1 and b1 (1.00 h in
/// both), and h is stated apart, in jobs and GPU-hours; the APPROVE rests on h, not on the
/// millisecond by which a censored completion used to differ.
#[test]
fn a_job_only_lending_completes_is_stated_apart_from_the_mean() {
    let (ok, md, err) = replay(&fixture("verdict_trace_h.csv"), &[]);
    assert!(ok, "{err}");
    let line = verdict_line(&md);
    assert!(
        line.contains("lending completes 1 job, 2.0 GPU-h, that isolated never runs"),
        "{line}"
    );
    assert!(
        line.contains(
            "mean completion time of the 2 jobs every scenario completes 1.00 h → 1.00 h (+0.0%"
        ),
        "{line}"
    );
    assert!(line.starts_with("Verdict lending: APPROVE"), "{line}");
    assert!(!line.contains("completed work sooner"), "{line}");
    // The table's row reads the same jobs: 1.00 h in both.
    assert!(md.contains("| isolated | 1.00 h | - |"), "{md}");
    assert!(md.contains("| lending | 1.00 h (+0.0%) | 0.0% |"), "{md}");
}

/// b1 ends one second before a1, so lending runs a2 on B one second early: the mean
/// completion time falls by 1/3 s, below the 60 s threshold: NO MATERIAL DIFFERENCE. With the
/// threshold at 0 the same schedules APPROVE, and the APPROVE states its waste per hour gained.
#[test]
fn a_change_below_the_materiality_threshold_is_no_material_difference() {
    let trace = fixture("verdict_trace_m.csv");
    let (ok, md, err) = replay(&trace, &[]);
    assert!(ok, "{err}");
    let line = verdict_line(&md);
    assert!(
        line.starts_with("Verdict lending: NO MATERIAL DIFFERENCE"),
        "{line}"
    );
    assert!(
        line.contains("below the materiality threshold of 60 s"),
        "{line}"
    );
    assert!(md.contains("min_material_change_s"), "{md}");

    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("rules.toml");
    std::fs::write(
        &rules,
        "currency = \"USD\"\n[prices]\n\"ml.g5.2xlarge\" = 1.5\n[decision]\nmin_material_change_s = 0\n",
    )
    .unwrap();
    let (ok, md, err) = replay(&trace, &["--rules".as_ref(), rules.as_os_str()]);
    assert!(ok, "{err}");
    let line = verdict_line(&md);
    assert!(line.starts_with("Verdict lending: APPROVE"), "{line}");
    assert!(
        line.contains(
            "waste +0.0 GPU-h (+0 USD) for 0.00 h sooner: 0.0 GPU-h (0 USD) per hour gained"
        ),
        "{line}"
    );
}

/// Worked example 2 (trace G) still APPROVEs on −19.2 %, and now states what it costs.
#[test]
fn the_worked_example_approve_states_its_waste() {
    let (ok, md, err) = replay(&fixture("verdict_trace_g.csv"), &[]);
    assert!(ok, "{err}");
    assert!(
        md.contains("| lending | 1.40 h (-19.2%) | 0.0% | 2.0 / 2 | 3.0 / 3 | 0s (+0s) | 0/1 (+0) | 0.0 | not judged: no budget defined | APPROVE |"),
        "{md}"
    );
    let line = verdict_line(&md);
    assert!(
        line.contains("waste +0.0 GPU-h for 0.33 h sooner: 0.0 GPU-h per hour gained"),
        "{line}"
    );
}

/// a1 succeeds at exactly 1 h, the last submission; `--horizon 1h` ends at the same instant.
/// Both columns count a completion at T the same way: [first submission, T), so neither
/// counts a1.
#[test]
fn by_the_last_submission_and_by_the_horizon_agree_at_the_same_instant() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("edge.csv");
    std::fs::write(
        &trace,
        "submit_s,share,instance_type,instance_count,work_s,priority,name\n0,A,ml.g5.2xlarge,1,3600,0,a1\n3600,B,ml.g5.2xlarge,1,3600,0,b1\n",
    )
    .unwrap();
    let (ok, md, err) = replay(&trace, &["--horizon".as_ref(), "1h".as_ref()]);
    assert!(ok, "{err}");
    let row = md
        .lines()
        .find(|l| l.starts_with("| isolated |"))
        .unwrap_or_else(|| panic!("{md}"));
    assert!(row.contains("| 0.0 / 0 | 0.0 / 0 |"), "{row}");
}

const ALONE: &str = "version = 1\n\
    [[class]]\nname = \"incident\"\npriority = [9000, 9999]\nshares = [\"A\"]\nmax_wait = \"15m\"\nmax_preemptions_per_job = 0\n\
    [[class]]\nname = \"urgent\"\npriority = [1000, 8999]\nshares = [\"B\"]\nmax_wait = \"30m\"\n";

/// The same, with A listed again under a later class whose range none of A's jobs use: they
/// stay in incident (the first class listing their share), for deadlines and budgets alike.
const LISTED_TWICE: &str = "version = 1\n\
    [[class]]\nname = \"incident\"\npriority = [9000, 9999]\nshares = [\"A\"]\nmax_wait = \"15m\"\nmax_preemptions_per_job = 0\n\
    [[class]]\nname = \"urgent\"\npriority = [1000, 8999]\nshares = [\"B\"]\nmax_wait = \"30m\"\n\
    [[class]]\nname = \"delivery\"\npriority = [1000, 8999]\nshares = [\"A\"]\nmax_wait = \"2h\"\ndeadline_factor = 3.0\nmax_preemptions_per_job = 1\n";

/// The decision summary without the line naming the policy file and its hash.
fn decision_without_policy_name(md: &str) -> String {
    md.lines()
        .filter(|l| !l.starts_with("Important work:"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A's three jobs and B's b1 at 0.5 h: lending runs a2 on B, preempts it once when b1 arrives,
/// and completes the work sooner (the trace of `tests/it/policy_check.rs`).
const PREEMPTS_A2: &str = "submit_s,share,instance_type,instance_count,work_s,priority,name\n\
    0,A,ml.g5.2xlarge,1,3600,0,a1\n0,A,ml.g5.2xlarge,1,3600,0,a2\n\
    0,A,ml.g5.2xlarge,1,3600,0,a3\n1800,B,ml.g5.2xlarge,1,3600,1000,b1\n";

/// Lending preempts a2 (share A, priority 0) once. Under `ALONE` a2 is in
/// incident (no preemption allowed): REJECT. Listing A again under delivery (one preemption
/// allowed) used to give a2 delivery's budget while its deadline kept incident's promise, and
/// lending read APPROVE; one membership rule judges both files alike.
#[test]
fn a_share_listed_under_two_classes_is_judged_as_under_the_first_alone() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.csv");
    std::fs::write(&trace, PREEMPTS_A2).unwrap();
    let run = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        let (ok, md, err) = replay(&trace, &["--policy".as_ref(), p.as_os_str()]);
        assert!(ok, "{err}");
        md
    };
    let alone = run("alone.toml", ALONE);
    let twice = run("twice.toml", LISTED_TWICE);
    assert!(
        verdict_line(&alone)
            .starts_with("Verdict lending: REJECT — fails: interruption-budget breaches 0 → 1"),
        "{alone}"
    );
    let cut =
        |md: &str| decision_without_policy_name(md.split("## Figures").next().unwrap_or_default());
    assert_eq!(cut(&alone), cut(&twice));
}

/// With `--policy`, the deadlines note says which jobs follow a class's promise instead of
/// claiming the default of 2 × their work.
#[test]
fn the_deadlines_note_says_what_the_figures_used() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("policy.toml");
    std::fs::write(&p, ALONE).unwrap();
    let (ok, md, err) = replay(
        &fixture("verdict_trace_l.csv"),
        &["--policy".as_ref(), p.as_os_str()],
    );
    assert!(ok, "{err}");
    let note = md
        .lines()
        .find(|l| l.starts_with("Deadlines:"))
        .unwrap_or_else(|| panic!("{md}"));
    assert!(!note.contains("2 × their work (default"), "{note}");
    assert!(
        note.contains("3 job(s) follow the promise of their policy class (incident 2, urgent 1;"),
        "{note}"
    );
}
