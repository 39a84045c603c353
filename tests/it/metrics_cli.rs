//! `quotatop record --metrics-addr` against the demo emulator: `/metrics` in both formats by
//! the `Accept` header, and the figures of the snapshots it journals.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::metrics_support::{Kill, recorder_with_metrics, samples, scrape};

use quotatop_store::journal::{Journal, JournalConfig};

#[test]
fn record_serves_metrics_of_the_snapshots_it_journals_in_both_formats() {
    let (emu, url) = crate::emulator_support::spawn_emulator_binary(&["--speed", "60"]);
    let _emu = Kill(emu);
    let dir = tempfile::tempdir().unwrap();
    let (rec, addr, _err) = recorder_with_metrics(&url, dir.path(), &[]);
    let journal = dir.path().join("journal.sqlite3");

    // Scrape until a scrape's snapshot is in the journal and some share borrows in it.
    let deadline = Instant::now() + Duration::from_secs(60);
    let (classic, checked) = loop {
        assert!(
            Instant::now() < deadline,
            "no scrape matched a journaled snapshot"
        );
        std::thread::sleep(Duration::from_millis(200));
        let (ty, text) = scrape(&addr, None);
        assert!(ty.starts_with("text/plain; version=0.0.4"), "{ty}");
        let Some(&taken) = samples(&text, "quotatop_last_snapshot_timestamp_seconds")
            .values()
            .next()
        else {
            continue;
        };
        let taken = (taken * 1e3).round() as i64;
        let Ok(j) = Journal::open_existing(&journal, JournalConfig::default()) else {
            continue;
        };
        let Some(snap) = j
            .snapshot_at(taken)
            .unwrap()
            .filter(|s| s.taken_at == taken)
        else {
            continue;
        };
        let usage = quotatop_analysis::share_usage(&snap.queues[0]);
        if !usage.iter().any(|u| u.borrowed > 0) {
            continue;
        }
        let borrowed = samples(&text, "quotatop_capacity_borrowed_instances");
        for u in &usage {
            let key = format!(
                "region=\"us-east-1\",queue=\"ml-training\",share=\"{}\",instance_type=\"{}\"",
                u.share, u.instance_type
            );
            assert_eq!(
                borrowed.get(&key),
                Some(&f64::from(u.borrowed)),
                "{key} in {text}"
            );
        }
        break (text, usage.len());
    };
    assert!(checked > 0);
    assert!(!classic.contains("# EOF"));
    assert!(
        classic.contains("# TYPE quotatop_preemptions_total counter"),
        "{classic}"
    );

    // `promtool check metrics` lints this exposition in tests/prometheus (scripts/test).

    let (ty, om) = scrape(
        &addr,
        Some("application/openmetrics-text;version=1.0.0,text/plain;q=0.5"),
    );
    assert!(ty.starts_with("application/openmetrics-text"), "{ty}");
    assert!(om.ends_with("# EOF\n"), "{om}");
    assert!(om.contains("# TYPE quotatop_preemptions counter"), "{om}");
    for text in [&classic, &om] {
        for ty in text.lines().filter_map(|l| l.strip_prefix("# TYPE ")) {
            let name = ty.split(' ').next().unwrap();
            assert!(
                text.contains(&format!("# HELP {name} ")),
                "no HELP for {name}"
            );
        }
    }

    drop(rec);
}

/// `record --no-journal` polls and serves `/metrics` (without the journal's families), stops
/// cleanly with exit 0, and creates no journal anywhere; with `--journal` it is refused, and
/// without `--metrics-addr` (it would achieve nothing) too.
#[test]
fn record_without_a_journal_serves_metrics_and_creates_no_journal() {
    let (emu, url) = crate::emulator_support::spawn_emulator_binary(&["--speed", "60"]);
    let _emu = Kill(emu);
    let dir = tempfile::tempdir().unwrap();
    let (mut rec, addr, err) = recorder_with_metrics(&url, dir.path(), &["--no-journal"]);
    let deadline = Instant::now() + Duration::from_secs(60);
    let text = loop {
        assert!(Instant::now() < deadline, "no snapshot was served");
        std::thread::sleep(Duration::from_millis(200));
        let (_, text) = scrape(&addr, None);
        if !samples(&text, "quotatop_last_snapshot_timestamp_seconds").is_empty() {
            break text;
        }
    };
    assert!(!text.contains("quotatop_journal_"), "{text}");
    assert!(
        !samples(&text, "quotatop_capacity_limit_instances").is_empty(),
        "{text}"
    );
    let _ = Command::new("kill")
        .args(["-TERM", &rec.0.id().to_string()])
        .status();
    let exit = rec.0.wait().unwrap();
    let lines = crate::metrics_support::lines_until_closed(&err, Duration::from_secs(20));
    assert!(exit.success(), "{exit:?}: {lines:?}");
    assert!(
        lines.iter().any(|l| l.contains("(0 journaled)")),
        "{lines:?}"
    );
    let mut files = Vec::new();
    let mut stack = vec![dir.path().to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().map(Result::unwrap) {
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else {
                files.push(e.file_name().to_string_lossy().into_owned());
            }
        }
    }
    files.sort();
    assert_eq!(files, ["config.toml", "record.log"], "{files:?}");

    let refused = |args: &[&str], why: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_quotatop"))
            .arg("record")
            .args(args)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {text}");
        assert!(text.contains(why), "{args:?}: {text}");
    };
    let j = dir.path().join("j.sqlite3");
    refused(
        &[
            "--no-journal",
            "--journal",
            j.to_str().unwrap(),
            "--metrics-addr",
            "127.0.0.1:0",
        ],
        "cannot be used with",
    );
    refused(&["--no-journal"], "--metrics-addr");
    assert!(!j.exists());
    let help = Command::new(env!("CARGO_BIN_EXE_quotatop"))
        .args(["record", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(
        help.contains("--no-journal") && help.contains("Keep no history"),
        "{help}"
    );
}

#[test]
fn a_non_loopback_metrics_address_needs_allow_remote() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_quotatop"))
        .args([
            "record",
            "--endpoint-url",
            "http://127.0.0.1:9",
            "--metrics-addr",
            "0.0.0.0:0",
        ])
        .arg("--journal")
        .arg(dir.path().join("j.sqlite3"))
        .arg("--log-dir")
        .arg(dir.path())
        .env("QUOTATOP_CONFIG", dir.path().join("no-config.toml"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--metrics-allow-remote"), "{err}");
    assert!(err.contains("not a loopback address"), "{err}");
}

/// Idle and stalled scrapers can neither use up `record`'s connections nor keep it from
/// stopping: over the cap a connection is closed at once, one that sends no complete headers is
/// closed after the header timeout, and SIGTERM ends `record` promptly with a client stalled
/// mid-request (it stayed up 44 s and more before).
#[test]
fn idle_and_stalled_scrapers_are_bounded_and_do_not_hold_shutdown() {
    use std::io::{Read, Write};
    use std::net::TcpStream;
    let (emu, url) = crate::emulator_support::spawn_emulator_binary(&["--speed", "60"]);
    let _emu = Kill(emu);
    let dir = tempfile::tempdir().unwrap();
    let (mut rec, addr, _err) = recorder_with_metrics(&url, dir.path(), &[]);
    // Twice the cap of idle connections: the ones over it are closed at once.
    let cap = 32;
    let idle: Vec<TcpStream> = (0..2 * cap)
        .map(|_| TcpStream::connect(&addr).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let closed_at_once = idle
        .iter()
        .filter(|s| {
            s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
            matches!((&**s).read(&mut [0u8; 1]), Ok(0))
        })
        .count();
    assert!(
        closed_at_once >= cap,
        "{closed_at_once} of {} idle connections closed at once",
        2 * cap
    );
    // After the header timeout (5 s) the rest are closed too, and a scrape is answered.
    let deadline = Instant::now() + Duration::from_secs(15);
    let still_open = loop {
        std::thread::sleep(Duration::from_millis(500));
        let open = idle
            .iter()
            .filter(|s| {
                s.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
                match (&**s).read(&mut [0u8; 1]) {
                    // Closed (EOF or reset): no longer held.
                    Ok(0) => false,
                    Err(e) => matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ),
                    Ok(_) => true,
                }
            })
            .count();
        if open == 0 || Instant::now() > deadline {
            break open;
        }
    };
    assert_eq!(
        still_open, 0,
        "idle connections outlived the header timeout"
    );
    let (_, text) = scrape(&addr, None);
    assert!(text.contains("quotatop_"), "{text}");
    // A client stalled mid-request, then SIGTERM: record stops promptly.
    let mut stalled = TcpStream::connect(&addr).unwrap();
    stalled
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    let started = Instant::now();
    Command::new("kill")
        .args(["-TERM", &rec.0.id().to_string()])
        .status()
        .unwrap();
    while matches!(rec.0.try_wait(), Ok(None)) && started.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let took = started.elapsed();
    assert!(
        matches!(rec.0.try_wait(), Ok(Some(_))),
        "record still running {took:?} after SIGTERM"
    );
    assert!(
        took < Duration::from_secs(8),
        "record took {took:?} to stop"
    );
}

/// With a policy beside the config, `record` serves `quotatop_policy_breaches` for every class
/// of it, computed from the journal it writes.
#[test]
fn record_serves_the_policy_breaches_of_each_class() {
    let (emu, url) = crate::emulator_support::spawn_emulator_binary(&["--speed", "60"]);
    let _emu = Kill(emu);
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        "crates/policy/fixtures/four_classes.toml",
        dir.path().join("policy.toml"),
    )
    .unwrap();
    let (_rec, addr, _err) = recorder_with_metrics(&url, dir.path(), &[]);
    let deadline = Instant::now() + Duration::from_secs(60);
    let breaches = loop {
        let (_, text) = scrape(&addr, None);
        let b = samples(&text, "quotatop_policy_breaches");
        if b.len() == 4 {
            break b;
        }
        assert!(
            Instant::now() < deadline,
            "no policy breaches within 60 s; last exposition:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(300));
    };
    for class in ["incident", "delivery", "regulatory", "exploratory"] {
        assert!(
            breaches.keys().any(|k| k.contains("queue=\"ml-training\"")
                && k.contains(&format!("class=\"{class}\""))),
            "{breaches:?}"
        );
    }
}
