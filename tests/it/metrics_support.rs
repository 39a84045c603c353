//! Shared by `metrics_cli` and the Prometheus tests (`tests/prometheus`): a recorder serving
//! `/metrics` against an emulator, and reading its exposition.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A recorder with `--metrics-addr 127.0.0.1:0`, its metrics address and its stderr lines;
/// its journal is `dir/journal.sqlite3` unless `extra` has `--no-journal`.
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
        .args(if extra.contains(&"--no-journal") {
            vec![]
        } else {
            vec!["--journal".into(), dir.join("journal.sqlite3")]
        })
        .arg("--log-dir")
        .arg(dir)
        // A journal at the default place would be in `dir` too.
        .env("HOME", dir)
        .env("XDG_DATA_HOME", dir.join("data"))
        .env("XDG_STATE_HOME", dir.join("state"))
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

/// Every line still to come from a process that has exited: its stderr reader forwards the
/// last lines a moment after the exit (later still on a loaded machine), so reading only
/// what has arrived (`try_iter`) can miss them. Waits until the reader closes the channel (the
/// pipe's end), `within` at the most.
pub fn lines_until_closed(rx: &mpsc::Receiver<String>, within: Duration) -> Vec<String> {
    let deadline = Instant::now() + within;
    let mut lines = Vec::new();
    while let Ok(line) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        lines.push(line);
    }
    lines
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
