//! `quotatop record` against the emulator binary: journals what the poller sees, logs to the
//! given directory, and stops cleanly on SIGTERM; `report` then reads the journal.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn wait_exit(child: &mut Child, what: &str) -> std::process::ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(exit) = child.try_wait().unwrap() {
            return exit;
        }
        assert!(Instant::now() < deadline, "{what} did not stop");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn record_journals_until_sigterm_and_report_reads_it() {
    let mut emu = Command::new(env!("CARGO_BIN_EXE_quotatop"))
        .args([
            "emulator",
            "--scenario",
            "scenarios/demo.toml",
            "--port",
            "0",
            "--speed",
            "600",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(emu.stdout.take().unwrap());
    let mut url = None;
    while url.is_none() {
        let mut line = String::new();
        if out.read_line(&mut line).unwrap() == 0 {
            break;
        }
        if let Some(rest) = line.trim().strip_prefix("export AWS_ENDPOINT_URL=") {
            url = Some(rest.to_string());
        }
    }
    let url = url.expect("emulator endpoint");
    let dir = std::env::temp_dir().join(format!("quotatop-record-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let journal = dir.join("journal.sqlite3");
    let mut rec = Command::new(env!("CARGO_BIN_EXE_quotatop"))
        .args([
            "record",
            "--queue",
            "ml-training",
            "--interval",
            "1",
            "--endpoint-url",
            &url,
        ])
        .arg("--journal")
        .arg(&journal)
        .arg("--log-dir")
        .arg(&dir)
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_REGION", "us-east-1")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // At 600x, four real seconds are forty simulated minutes of the demo.
    std::thread::sleep(Duration::from_secs(4));
    assert!(
        Command::new("kill")
            .args(["-TERM", &rec.id().to_string()])
            .status()
            .unwrap()
            .success()
    );
    let exit = wait_exit(&mut rec, "record");
    let mut err = String::new();
    std::io::Read::read_to_string(&mut rec.stderr.take().unwrap(), &mut err).unwrap();
    assert!(exit.success(), "{err}");
    assert!(err.contains("stopped after"), "{err}");
    let _ = Command::new("kill")
        .args(["-INT", &emu.id().to_string()])
        .status();
    wait_exit(&mut emu, "emulator");

    let log = std::fs::read_to_string(dir.join("record.log")).expect("record.log written");
    assert!(log.contains("recording"), "{log}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&journal).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
    let report = Command::new(env!("CARGO_BIN_EXE_quotatop"))
        .args([
            "report",
            "--queue",
            "ml-training",
            "--format",
            "json",
            "--journal",
        ])
        .arg(&journal)
        .output()
        .unwrap();
    assert!(
        report.status.success(),
        "{}",
        String::from_utf8_lossy(&report.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&report.stdout).expect("report JSON");
    let text = v.to_string();
    for share in ["research", "prod", "regulated", "vision", "nlp"] {
        assert!(text.contains(share), "{share} missing from the report");
    }
}
