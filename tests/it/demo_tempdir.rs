//! `quotatop demo`'s temporary directory (its journal and audit log), with the real binary in
//! a pseudo-terminal (util-linux `script`): however the demo ends (`q`, SIGTERM, SIGHUP,
//! SIGINT) it prints the directory's path and removes it, unless `--keep`, which keeps it.

use std::path::PathBuf;
use std::process::Command;

/// Runs `sh -c inner` in a PTY, with `keys` typed into it after 4 s; the PTY's output.
fn in_pty(inner: &str, keys: Option<&str>) -> String {
    for tool in ["script", "timeout", "sleep"] {
        assert!(
            Command::new("sh")
                .args(["-c", &format!("command -v {tool}")])
                .output()
                .is_ok_and(|o| o.status.success()),
            "`{tool}` is not installed: this test needs util-linux's `script` and coreutils"
        );
    }
    let typed = match keys {
        Some(k) => format!("(sleep 4; printf '{k}'; sleep 5)"),
        None => "sleep 12".to_string(),
    };
    let script = format!(
        "{typed} | timeout 60 script -qfec \"sh -c '{inner}'\" /dev/null",
        inner = inner.replace('"', "\\\"").replace('$', "\\$")
    );
    let out = Command::new("sh")
        .args(["-c", &script])
        .output()
        .expect("script runs");
    String::from_utf8_lossy(&out.stdout).to_string()
}

/// The directory the demo says it removed or kept.
fn printed_dir(out: &str, verb: &str) -> PathBuf {
    let prefix = format!("quotatop demo: {verb} ");
    let line = out
        .split(['\r', '\n'])
        .find_map(|l| l.split(&prefix).nth(1))
        .unwrap_or_else(|| panic!("no \"{prefix}\" in:\n{out}"));
    let path = line.split(' ').next().unwrap_or_default();
    assert!(path.contains("quotatop-demo-"), "{line}");
    PathBuf::from(path)
}

#[test]
fn quitting_with_q_removes_the_temporary_directory() {
    let bin = env!("CARGO_BIN_EXE_quotatop");
    let out = in_pty(&format!("{bin} demo; echo EXIT=$?"), Some("q"));
    assert!(out.contains("EXIT=0"), "{out}");
    let dir = printed_dir(&out, "removed");
    assert!(!dir.exists(), "{} is left behind", dir.display());
}

#[test]
fn signals_remove_the_temporary_directory() {
    let bin = env!("CARGO_BIN_EXE_quotatop");
    for signal in ["TERM", "HUP", "INT"] {
        let out = in_pty(
            &format!("timeout --foreground -s {signal} 4 {bin} demo; echo EXIT=$?"),
            None,
        );
        assert!(out.contains("EXIT=124"), "{signal}: {out}");
        let dir = printed_dir(&out, "removed");
        assert!(!dir.exists(), "{signal}: {} is left behind", dir.display());
    }
}

#[test]
fn keep_keeps_the_temporary_directory() {
    let bin = env!("CARGO_BIN_EXE_quotatop");
    let out = in_pty(&format!("{bin} demo --keep; echo EXIT=$?"), Some("q"));
    let dir = printed_dir(&out, "kept");
    let kept = dir.join("journal.sqlite3").exists();
    std::fs::remove_dir_all(&dir).ok();
    assert!(kept, "{} has no journal: {out}", dir.display());
}

/// The terminal itself goes away (the emulator of the terminal is killed, as when a tmux
/// server or an SSH session dies): the demo gets SIGHUP with nowhere left to write, and still
/// removes its directory. It used to abort while restoring the terminal and leave it behind.
#[test]
fn a_terminal_that_goes_away_still_removes_the_temporary_directory() {
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    let tmp = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_quotatop");
    let mut terminal = Command::new("script")
        .args(["-qfec", &format!("{bin} demo"), "/dev/null"])
        .env("TMPDIR", tmp.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("util-linux's `script` runs (install util-linux)");
    let demo_dirs = || {
        std::fs::read_dir(tmp.path())
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with("quotatop-demo-")
            })
            .count()
    };
    let wait_for = |want: usize| {
        let deadline = Instant::now() + Duration::from_secs(30);
        while demo_dirs() != want && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
        demo_dirs()
    };
    assert_eq!(wait_for(1), 1, "the demo made its directory");
    // Let the console take the terminal before it goes.
    std::thread::sleep(Duration::from_secs(2));
    terminal.kill().unwrap();
    terminal.wait().unwrap();
    assert_eq!(wait_for(0), 0, "the demo's directory is left behind");
}

/// The directory cannot be planted: a random name (not `quotatop-demo-<pid>`), created
/// exclusively, mode 0700 even under `umask 000` (it was 0777 then, and an existing
/// directory of that name, made by anyone, was used as it was).
#[test]
fn the_temporary_directory_is_private_and_unpredictable() {
    use std::os::unix::fs::PermissionsExt;
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    let tmp = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_quotatop");
    let mut terminal = Command::new("script")
        .args([
            "-qfec",
            &format!("sh -c 'umask 000; exec {bin} demo'"),
            "/dev/null",
        ])
        .env("TMPDIR", tmp.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("util-linux's `script` runs (install util-linux)");
    let deadline = Instant::now() + Duration::from_secs(30);
    let dir = loop {
        let found = std::fs::read_dir(tmp.path())
            .unwrap()
            .filter_map(Result::ok)
            .find(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with("quotatop-demo-")
            });
        if let Some(e) = found
            && e.path().join("journal.sqlite3").exists()
        {
            break e.path();
        }
        assert!(Instant::now() < deadline, "the demo made no directory");
        std::thread::sleep(Duration::from_millis(100));
    };
    let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
    let journal_mode = std::fs::metadata(dir.join("journal.sqlite3"))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    let name = dir.file_name().unwrap().to_string_lossy().to_string();
    terminal.kill().unwrap();
    terminal.wait().unwrap();
    assert_eq!(mode, 0o700, "{}", dir.display());
    assert_eq!(journal_mode, 0o600, "{}", dir.display());
    let suffix = name.trim_start_matches("quotatop-demo-");
    assert!(
        !suffix.chars().all(|c| c.is_ascii_digit()),
        "{name}: a process id can be guessed"
    );
}
