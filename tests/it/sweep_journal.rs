//! `quotatop sweep --journal` on a journal recorded from the demo world (recorded here, at
//! today's schema): a table per class of the demo's policy and a recommendation per class.

use std::path::Path;
use std::process::Command;

use quotatop_aws::poll::{PollConfig, Poller};
use quotatop_emulator::{self as emulator, ClockMode, EmulatorConfig, Scenario};
use quotatop_model::Millis;
use quotatop_store::journal::{JournalConfig, JournalHandle};

const START: Millis = 1_770_000_000_000;
const POLL_MS: Millis = 30_000;
const RUN_MS: Millis = 3 * 3_600_000;
const QUEUE: &str = "ml-training";
const POLICY: &str = "crates/policy/fixtures/four_classes.toml";

/// Records the demo for `RUN_MS` of simulated time into a journal at `path`.
pub async fn record_demo(path: &Path) {
    let scenario = Scenario::load(Path::new("scenarios/demo.toml")).unwrap();
    let mut config = EmulatorConfig::from_scenario(scenario).unwrap();
    config.clock = ClockMode::Manual;
    config.start_ms = Some(START);
    config.deterministic_ids = true;
    let emu = emulator::start(config).await.unwrap();
    let journal = JournalHandle::start(path, JournalConfig::default());
    let client = crate::data_support::batch_client(&emu).await;
    let mut poller = Poller::new(PollConfig {
        queues: vec![QUEUE.to_string()],
        ..PollConfig::default()
    });
    let mut t = 0;
    while t < RUN_MS {
        emu.advance(POLL_MS).unwrap();
        t += POLL_MS;
        assert!(
            journal.record(poller.refresh(&client).await),
            "journal queue full"
        );
    }
    journal.flush();
    assert_eq!(journal.status().unavailable, None);
    journal.shutdown();
}

/// `quotatop sweep --journal PATH --queue ml-training` with `extra`; its stdout and stderr.
pub fn sweep_journal(journal: &Path, extra: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_quotatop"))
        .args(["sweep", "--queue", QUEUE, "--journal"])
        .arg(journal)
        .args(extra)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_demo_journal_sweeps_to_a_table_and_a_recommendation_per_class() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite3");
    record_demo(&path).await;
    let (ok, md, err) = sweep_journal(
        &path,
        &[
            "--policy",
            POLICY,
            "--checkpoint-interval",
            "15m,1h,none",
            "--retry-limit",
            "0,2,unlimited",
        ],
    );
    assert!(ok, "{err}");
    if let Ok(keep) = std::env::var("QUOTATOP_KEEP_JOURNAL") {
        std::fs::copy(&path, keep).unwrap();
    }
    // Every class of the demo's policy with jobs in the journal: a heading, a recommendation
    // line (or the "no combination" line) and a table with the reference and every setting.
    let sections: Vec<&str> = md.split("\n## Class ").skip(1).collect();
    let names: Vec<&str> = sections
        .iter()
        .map(|s| s.split_whitespace().next().unwrap())
        .collect();
    for class in ["delivery", "exploratory"] {
        assert!(names.contains(&class), "no table for class {class}: {md}");
    }
    for (name, section) in names.iter().zip(&sections) {
        assert!(
            ["incident", "delivery", "regulatory", "exploratory"].contains(name),
            "{name} is not a class of the policy"
        );
        let first = section
            .lines()
            .find(|l| !l.trim().is_empty() && !l.contains("jobs)"));
        let first = first.unwrap_or_default();
        assert!(
            first.starts_with("Recommendation: checkpoint interval ")
                || first.starts_with("Recommendation: no combination keeps the promise"),
            "class {name}: {first}"
        );
        let rows = section
            .lines()
            .filter(|l| l.starts_with("| ") && !l.starts_with("| checkpoint interval"))
            .count();
        assert_eq!(
            rows,
            1 + 3 * 3,
            "class {name}: reference + 9 settings\n{section}"
        );
    }
    restart_overhead_is_measured_where_the_logs_say(&path, &md);
}

/// "Restart overhead per class: …" split into (class, n measured restores, mean s); `None`
/// for a class modelled.
fn restart_bases(md: &str) -> Vec<(String, Option<(usize, f64)>)> {
    let line = md
        .lines()
        .find_map(|l| l.strip_prefix("Restart overhead per class: "))
        .unwrap_or_else(|| panic!("no restart overhead note: {md}"));
    let (classes, _) = line.split_once("; the replays hold").unwrap();
    classes
        .split("; ")
        .map(|c| {
            let (name, rest) = c.split_once(' ').unwrap();
            let measured = rest.strip_prefix("measured (").map(|r| {
                let (n, r) = r.split_once(" restores, mean ").unwrap();
                (
                    n.parse().unwrap(),
                    r.trim_end_matches(" s)").parse().unwrap(),
                )
            });
            if measured.is_none() {
                assert!(rest.starts_with("modelled (restart_overhead_s = "), "{c}");
            }
            (name.to_string(), measured)
        })
        .collect()
}

/// The demo's re-runs log their restores: the classes with them say "measured (n restores)",
/// n adding up to the journal's logged restores; moving every restore line 90 s later moves
/// each class's measured mean by 90 s, and what the replays hold to the mean of them all.
fn restart_overhead_is_measured_where_the_logs_say(path: &Path, md: &str) {
    let db = rusqlite::Connection::open(path).unwrap();
    let logged: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM attempt_marks WHERE restored = 1 AND restored_at IS NOT NULL",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(logged > 0, "the demo logs no restore");
    let before = restart_bases(md);
    let n: usize = before.iter().filter_map(|(_, m)| m.map(|m| m.0)).sum();
    assert_eq!(n as i64, logged, "{before:?}");
    db.execute(
        "UPDATE attempt_marks SET restored_at = restored_at + 90000 WHERE restored_at IS NOT NULL",
        [],
    )
    .unwrap();
    drop(db);
    let (ok, later, err) = sweep_journal(
        path,
        &[
            "--policy",
            POLICY,
            "--checkpoint-interval",
            "1h",
            "--retry-limit",
            "2",
        ],
    );
    assert!(ok, "{err}");
    let after = restart_bases(&later);
    for ((name, a), (_, b)) in before.iter().zip(&after) {
        match (a, b) {
            (Some((n, m)), Some((n2, m2))) => {
                assert_eq!(n, n2, "{name}");
                assert!((m2 - m - 90.0).abs() < 0.11, "{name}: {m} then {m2}");
            }
            (None, None) => {}
            _ => panic!("{name}: measured once, modelled the other time"),
        }
    }
    // What the replays hold is the mean of every measured restore.
    let (n, total) = after
        .iter()
        .filter_map(|(_, m)| *m)
        .fold((0, 0.0), |(n, t), (k, m)| (n + k, t + k as f64 * m));
    let held = (total / n as f64).round();
    assert!(held >= 90.0, "{later}");
    assert!(
        later.contains(&format!("restart overhead {held} s per re-run")),
        "{held}: {later}"
    );
}
