//! `quotatop record --metrics-addr` against the demo emulator: `/metrics` in both formats by
//! the `Accept` header, and the figures of the snapshots it journals.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use quotatop_store::journal::{Journal, JournalConfig};

/// A recorder with `--metrics-addr 127.0.0.1:0`, its metrics address and its stderr lines.
pub fn recorder_with_metrics(
    url: &str,
    dir: &std::path::Path,
    extra: &[&str],
) -> (Kill, String, mpsc::Receiver<String>) {
    // Every snapshot stored (the journal keeps one per 30 s by default), so a scrape's
    // snapshot can be found in the journal.
    let config = dir.join("config.toml");
    std::fs::write(&config, "[journal]\nsnapshot_interval_secs = 1\n").unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_quotatop"))
        .args(["record", "--queue", "ml-training", "--interval", "1"])
        .args(["--endpoint-url", url, "--metrics-addr", "127.0.0.1:0"])
        .args(extra)
        .arg("--journal")
        .arg(dir.join("journal.sqlite3"))
        .arg("--log-dir")
        .arg(dir)
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_REGION", "us-east-1")
        .env("QUOTATOP_CONFIG", config)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = BufReader::new(child.stderr.take().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in err.lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    let addr = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = rx
            .recv_timeout(left)
            .expect("record names its metrics address");
        if let Some(rest) = line.strip_prefix("quotatop record: metrics on http://") {
            break rest.trim_end_matches("/metrics").to_string();
        }
    };
    (Kill(child), addr, rx)
}

/// A child process stopped with SIGTERM when dropped (also when a test fails).
pub struct Kill(pub Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(20);
        while matches!(self.0.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `GET /metrics` with `accept`: (content type, body).
pub fn scrape(addr: &str, accept: Option<&str>) -> (String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    let accept = accept
        .map(|a| format!("Accept: {a}\r\n"))
        .unwrap_or_default();
    write!(
        s,
        "GET /metrics HTTP/1.1\r\nHost: {addr}\r\n{accept}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).unwrap();
    let (head, body) = resp.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let ty = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-type: ")
                .map(str::to_string)
        })
        .unwrap_or_default();
    (ty, body.to_string())
}

/// Samples of `name` keyed by their label text.
pub fn samples(text: &str, name: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            let (n, labels) = series.split_once('{').unwrap_or((series, "}"));
            if n != name {
                return None;
            }
            Some((
                labels.trim_end_matches('}').to_string(),
                value.parse().ok()?,
            ))
        })
        .collect()
}

/// `promtool check metrics` (Prometheus's linter) on a classic exposition.
fn promtool_check_metrics(text: &str) {
    let child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        panic!(
            "`promtool` is not installed: this test lints the exposition with it \
             (Debian/Ubuntu: apt-get install prometheus)"
        );
    };
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool check metrics: {}{}\n{text}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

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

    promtool_check_metrics(&classic);

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
