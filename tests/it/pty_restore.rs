//! The real binary in a pseudo-terminal (util-linux `script` provides the PTY): killed by
//! SIGTERM, and by a panic injected for testing, `quotatop demo` leaves the terminal restored
//! both times — the alternate screen left and raw mode off (`stty -a` shows `icanon` and `echo`
//! in the same PTY afterwards).

use std::process::Command;

fn in_pty(inner: &str, env: &[(&str, &str)]) -> Option<String> {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: util-linux `script` is not installed");
        return None;
    }
    let mut c = Command::new("timeout");
    c.args(["60", "script", "-qfec", inner, "/dev/null"]);
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().expect("script runs");
    Some(String::from_utf8_lossy(&out.stdout).to_string())
}

fn assert_restored(out: &str, expect_exit: &str) {
    assert!(out.contains(expect_exit), "no {expect_exit} in:\n{out}");
    let entered = out.matches("\u{1b}[?1049h").count();
    let left = out.matches("\u{1b}[?1049l").count();
    assert_eq!(entered, 1, "the console did not start:\n{out}");
    assert!(left >= 1, "the alternate screen was not left");
    let stty = out.rsplit(expect_exit).next().unwrap_or_default();
    assert!(
        stty.contains(" icanon") && !stty.contains("-icanon"),
        "raw mode left on: {stty}"
    );
    assert!(
        stty.contains(" echo ") && !stty.contains("-echo "),
        "echo left off: {stty}"
    );
}

#[test]
fn sigterm_restores_the_terminal() {
    let bin = env!("CARGO_BIN_EXE_quotatop");
    let inner = format!("sh -c 'timeout --foreground -s TERM 4 {bin} demo; echo EXIT=$?; stty -a'");
    if let Some(out) = in_pty(&inner, &[]) {
        // 124: timeout sent SIGTERM; the console ended on it and restored the terminal.
        assert_restored(&out, "EXIT=124");
    }
}

#[test]
fn a_panic_restores_the_terminal() {
    let bin = env!("CARGO_BIN_EXE_quotatop");
    let inner = format!("sh -c '{bin} demo; echo EXIT=$?; stty -a'");
    if let Some(out) = in_pty(&inner, &[("QUOTATOP_TEST_PANIC_AFTER_MS", "2500")]) {
        assert!(out.contains("panic injected for testing"), "{out}");
        assert_restored(&out, "EXIT=101");
    }
}
