//! `quotatop emulator --scenario scenarios/demo.toml` as docs/emulator.md documents it: prints the endpoint
//! and the client environment, serves the demo world, and exits cleanly on Ctrl-C (SIGINT).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::emulator_support::SIGNED;

#[test]
fn emulator_command_prints_the_environment_serves_and_stops_on_ctrl_c() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_quotatop"))
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
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut printed = String::new();
    let mut url = None;
    while !printed.contains("Ctrl-C") {
        let mut line = String::new();
        if out.read_line(&mut line).unwrap() == 0 {
            break;
        }
        if let Some(rest) = line.trim().strip_prefix("export AWS_ENDPOINT_URL=") {
            url = Some(rest.to_string());
        }
        printed.push_str(&line);
    }
    for needle in [
        "AWS_ACCESS_KEY_ID=",
        "AWS_SECRET_ACCESS_KEY=",
        "AWS_REGION=us-east-1",
        "600x",
    ] {
        assert!(
            printed.contains(needle),
            "{needle} missing from:\n{printed}"
        );
    }
    let url = url.expect("endpoint printed");
    let addr = url.strip_prefix("http://").unwrap();
    assert!(addr.starts_with("127.0.0.1:"), "{addr}");

    // At 600x the demo's scripted job arrives within seconds: asked until it is listed (with
    // a deadline), not after a fixed sleep.
    let body =
        r#"{"jobQueue":"ml-training","filters":[{"name":"JOB_NAME","values":["video-pretrain"]}]}"#;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let mut s = TcpStream::connect(addr).unwrap();
        write!(
            s,
            "POST /v1/listservicejobs HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{SIGNED}Content-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut reply = String::new();
        s.read_to_string(&mut reply).unwrap();
        assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
        if reply.contains("\"jobName\":\"video-pretrain\"") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "video-pretrain never listed: {reply}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    let exit = loop {
        if let Some(exit) = child.try_wait().unwrap() {
            break exit;
        }
        assert!(Instant::now() < deadline, "did not stop on Ctrl-C");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(exit.success(), "{exit:?}");
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    assert!(rest.contains("shutting down"), "{rest}");
}

/// Without `--scenario` the emulator serves the demo world built into the binary, from any
/// directory (an installed binary has no `scenarios/` beside it).
#[test]
fn emulator_without_a_scenario_serves_the_built_in_demo_world_from_any_directory() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_quotatop"))
        .args(["emulator", "--port", "0", "--speed", "0"])
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut printed = String::new();
    while !printed.contains("Ctrl-C") {
        let mut line = String::new();
        if out.read_line(&mut line).unwrap() == 0 {
            break;
        }
        printed.push_str(&line);
    }
    let _ = child.kill();
    let exit = child.wait().unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(
        printed.contains("queue ml-training") && printed.contains("built in"),
        "{printed}\nstderr: {err}\nexit: {exit:?}"
    );
}

/// As a tool for other clients the emulator runs at real time unless asked to accelerate: a job
/// the demo world submits at once carries a `createdAt` within seconds of the client's own
/// clock (an accelerated clock starts (speed − 1) × 24 h behind it), so a client filtering
/// `AFTER_CREATED_AT` by its own clock finds it.
#[test]
fn emulator_runs_at_real_time_unless_asked_to_accelerate() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_quotatop"))
        .args(["emulator", "--port", "0"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut printed = String::new();
    let mut url = None;
    while !printed.contains("Ctrl-C") {
        let mut line = String::new();
        if out.read_line(&mut line).unwrap() == 0 {
            break;
        }
        if let Some(rest) = line.trim().strip_prefix("export AWS_ENDPOINT_URL=") {
            url = Some(rest.to_string());
        }
        printed.push_str(&line);
    }
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    let _child = crate::metrics_support::Kill(child);
    assert!(
        printed.contains("1x simulated time (real time)"),
        "{printed}"
    );
    let url = url.expect("endpoint printed");
    let addr = url.strip_prefix("http://").unwrap();
    let client_now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let body = format!(
        r#"{{"jobQueue":"ml-training","filters":[{{"name":"AFTER_CREATED_AT","values":["{}"]}}]}}"#,
        client_now - 60_000
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    let reply = loop {
        let mut s = TcpStream::connect(addr).unwrap();
        write!(
            s,
            "POST /v1/listservicejobs HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{SIGNED}Content-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut reply = String::new();
        s.read_to_string(&mut reply).unwrap();
        assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
        if reply.contains("\"jobName\":\"video-pretrain\"") {
            break reply;
        }
        assert!(
            Instant::now() < deadline,
            "no job created in the client's last minute: {reply}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let json: serde_json::Value =
        serde_json::from_str(reply.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    for job in json["jobSummaryList"].as_array().unwrap() {
        let created = job["createdAt"].as_i64().unwrap();
        assert!(
            (created - client_now).abs() < 60_000,
            "createdAt {created} vs the client's {client_now}"
        );
    }
}
