//! The files quotatop owns (journal, audit log, its lock and in-flight marks) must be regular
//! files or absent: a FIFO or a symbolic link named as one is refused with a message, and
//! nothing is chmodded, created or followed beside it (issue 31 item 2). Never real /dev/null:
//! a FIFO and a link in a temporary directory stand in for it.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn mkfifo(p: &Path) {
    let st = Command::new("mkfifo")
        .args(["-m", "644"])
        .arg(p)
        .status()
        .unwrap();
    assert!(st.success(), "mkfifo {}", p.display());
}

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

/// Runs quotatop with `args` in a temporary home; fails the test if it has not ended within
/// 30 s (the old code blocked for ever opening a FIFO nobody reads). (exit ok, stderr).
fn quotatop(home: &Path, args: &[&str]) -> (bool, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_quotatop"))
        .args(args)
        .env("AWS_ACCESS_KEY_ID", "AKIDTEST")
        .env("AWS_SECRET_ACCESS_KEY", "secret")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_MAX_ATTEMPTS", "1")
        .env_remove("QUOTATOP_READ_ONLY")
        .env_remove("QUOTATOP_CONFIG")
        .env_remove("QUOTATOP_AUDIT_LOG")
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_STATE_HOME", home.join("state"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "quotatop {args:?} still running after 30 s\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

#[test]
fn a_fifo_or_a_link_as_journal_or_audit_log_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let home = d.join("home");
    let fifo = d.join("fifo");
    mkfifo(&fifo);
    let target = d.join("target");
    std::fs::write(&target, "not quotatop's\n").unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o644)).unwrap();
    let link = d.join("link");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let url = "http://127.0.0.1:9";
    let shares = d.join("shares.toml");
    std::fs::write(
        &shares,
        "[[shares]]\nname = \"a\"\nstrategy = \"LEND\"\nlimits = { \"ml.m5.large\" = 1 }\n",
    )
    .unwrap();
    let setp = |log: &Path| {
        vec![
            "set-priority".to_string(),
            "job-1".into(),
            "--priority".into(),
            "5".into(),
            "--reason".into(),
            "r".into(),
            "--yes".into(),
            "--endpoint-url".into(),
            url.into(),
            "--log".into(),
            log.display().to_string(),
        ]
    };
    let apply = |log: &Path| {
        vec![
            "shares".to_string(),
            "apply".into(),
            "--queue".into(),
            "q".into(),
            "-f".into(),
            shares.display().to_string(),
            "--reason".into(),
            "r".into(),
            "--yes".into(),
            "--endpoint-url".into(),
            url.into(),
            "--log".into(),
            log.display().to_string(),
        ]
    };
    let record = |journal: &Path| {
        vec![
            "record".to_string(),
            "--endpoint-url".into(),
            url.into(),
            "--log-dir".into(),
            d.join("logs").display().to_string(),
            "--journal".into(),
            journal.display().to_string(),
        ]
    };
    for (args, kind) in [
        (record(&fifo), "a FIFO"),
        (record(&link), "a symbolic link"),
        (setp(&fifo), "a FIFO"),
        (setp(&link), "a symbolic link"),
        (apply(&fifo), "a FIFO"),
        (apply(&link), "a symbolic link"),
    ] {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (ok, err) = quotatop(&home, &args);
        assert!(!ok, "{args:?} succeeded\n{err}");
        assert!(
            err.contains(kind) && err.contains("must be a regular file"),
            "{args:?}\n{err}"
        );
    }
    // Nothing chmodded, written, created or followed beside them.
    assert_eq!(mode(&fifo), 0o644);
    assert_eq!(mode(&target), 0o644);
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        "not quotatop's\n"
    );
    assert_eq!(names(d), ["fifo", "link", "shares.toml", "target"]);
}

/// Inputs that never end (`/dev/zero`) or block (a FIFO nobody writes) are refused at once,
/// not read until memory runs out or for ever (issue 31 item 11).
#[test]
fn inputs_that_never_end_or_block_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let home = d.join("home");
    let fifo = d.join("fifo");
    mkfifo(&fifo);
    let url = "http://127.0.0.1:9";
    for input in [fifo.display().to_string(), "/dev/zero".to_string()] {
        let i = input.as_str();
        for (args, want) in [
            (
                vec![
                    "shares",
                    "plan",
                    "--queue",
                    "q",
                    "--endpoint-url",
                    url,
                    "-f",
                    i,
                ],
                "a FIFO|a device",
            ),
            (vec!["replay", "--trace", i], "a FIFO|a device"),
            (vec!["audit", "verify", "--log", i], "a FIFO|a device"),
            (
                vec!["report", "--queue", "q", "--journal", i],
                "a FIFO|a device",
            ),
            (
                vec![
                    "set-priority",
                    "job-1",
                    "--priority",
                    "5",
                    "--reason",
                    "r",
                    "--endpoint-url",
                    url,
                    "--config",
                    i,
                ],
                "FIFO|a device",
            ),
        ] {
            let started = Instant::now();
            let (ok, err) = quotatop(&home, &args);
            assert!(!ok, "{args:?} succeeded\n{err}");
            assert!(want.split('|').any(|w| err.contains(w)), "{args:?}: {err}");
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "{args:?} took {:?}",
                started.elapsed()
            );
        }
    }
}
