//! `journal migrate --to`: a journal `record` wrote (SQLite) copied into PostgreSQL, an
//! interrupted copy resumed, verified; the same report from both stores; a destination row
//! that differs fails the verification.

use std::process::{Command, Stdio};
use std::time::Duration;

use quotatop_store::StoreLocation;
use quotatop_store::journal::copy::{self, CopyOptions};
use quotatop_store::journal::{Journal, JournalConfig};

use crate::Test;
use crate::cluster::Cluster;
use crate::emulator_support::spawn_emulator_binary;
use crate::metrics_support::Kill;

pub fn tests() -> Vec<Test> {
    vec![(
        "migrate::a_recorded_journal_is_copied_resumed_and_verified".into(),
        Box::new(a_recorded_journal_is_copied_resumed_and_verified),
    )]
}

fn quotatop(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_quotatop"))
        .args(args)
        .env_remove("QUOTATOP_STORE")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn a_recorded_journal_is_copied_resumed_and_verified(c: &Cluster) {
    let dir = tempfile::TempDir::new().unwrap();
    let file = dir.path().join("journal.sqlite3");
    // A real journal: `record` against the emulator (60x) until it holds a few snapshots.
    {
        let (emulator, endpoint) = spawn_emulator_binary(&["--speed", "60"]);
        let _emulator = Kill(emulator);
        let config = dir.path().join("config.toml");
        std::fs::write(&config, "[journal]\nsnapshot_interval_secs = 1\n").unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_quotatop"))
            .args(["record", "--queue", "ml-training", "--interval", "1"])
            .args(["--endpoint-url", &endpoint, "--journal"])
            .arg(&file)
            .arg("--log-dir")
            .arg(dir.path())
            .env("AWS_ACCESS_KEY_ID", "test")
            .env("AWS_SECRET_ACCESS_KEY", "test")
            .env("AWS_REGION", "us-east-1")
            .env("QUOTATOP_CONFIG", &config)
            .env_remove("QUOTATOP_STORE")
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let _rec = Kill(child);
        let deadline = std::time::Instant::now() + Duration::from_secs(90);
        loop {
            let n = Journal::open_existing(&file, JournalConfig::default())
                .and_then(|j| j.snapshot_times(0, i64::MAX))
                .map_or(0, |t| t.len());
            let jobs = Journal::open_existing(&file, JournalConfig::default())
                .and_then(|j| j.jobs("ml-training", 0))
                .map_or(0, |j| j.len());
            if n >= 6 && jobs >= 6 {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "{n} snapshots");
            std::thread::sleep(Duration::from_millis(300));
        }
    }
    let db = c.database("migrate");
    let url = c.admin_url(&db);
    let to_at = StoreLocation::parse(&url).unwrap();
    let from = Journal::open_existing(&file, JournalConfig::default()).unwrap();
    let source_id = std::path::absolute(&file).unwrap().display().to_string();
    // Interrupted after 3 chunks of 5 rows.
    {
        let to = Journal::open_at(&to_at, JournalConfig::default()).unwrap();
        let opts = CopyOptions {
            chunk: 5,
            max_chunks: Some(3),
        };
        let stats = copy::copy(&from, &to, &source_id, opts, &mut |_, _| {}).unwrap();
        assert!(stats.interrupted);
        let partial = copy::verify(&from, &to).unwrap();
        assert!(!partial.ok(), "{partial:?}");
    }
    // The command goes on from there, and verifies.
    let file_s = file.to_str().unwrap();
    let out = quotatop(&[
        "journal",
        "migrate",
        "--to",
        &url,
        "--journal",
        file_s,
        "--chunk",
        "20",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    // Three chunks were in (the queue, its configuration, 5 jobs): the jobs go on after them.
    assert!(
        err.contains("jobs: ") && err.contains("new, resumed after 5"),
        "{err}"
    );
    assert!(err.contains("verified: all"), "{err}");
    assert!(!err.contains(&c.password), "{err}");
    // Nothing twice: the destination has exactly the source's rows.
    let to = Journal::open_existing_at(&to_at, JournalConfig::default()).unwrap();
    let check = copy::verify(&from, &to).unwrap();
    assert!(check.ok(), "{check:?}");
    let mut admin = c.admin(&db);
    for (table, t) in &check.tables {
        let n: i64 = admin
            .query_one(&format!("SELECT COUNT(*) FROM {table}"), &[])
            .unwrap()
            .get(0);
        assert_eq!(n as usize, t.source_rows, "{table}");
    }
    assert!(
        check
            .tables
            .iter()
            .any(|(t, c)| t == "jobs" && c.source_rows >= 6)
    );
    // The same report from the file and from the store.
    let report = |store: &[&str]| {
        let mut args = vec![
            "report",
            "--queue",
            "ml-training",
            "--since",
            "30d",
            "--format",
            "json",
        ];
        args.extend_from_slice(store);
        let out = quotatop(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    assert_eq!(report(&["--journal", file_s]), report(&["--store", &url]));
    // A row changed in the store: the verification says so and the command fails.
    admin
        .batch_execute(
            "UPDATE jobs SET priority = priority + 1 WHERE job_id = (SELECT MIN(job_id) FROM jobs)",
        )
        .unwrap();
    let out = quotatop(&["journal", "migrate", "--to", &url, "--journal", file_s]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("jobs: 0 of") && err.contains("1 different"),
        "{err}"
    );
}
