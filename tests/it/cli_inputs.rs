//! Every duration and time a user types on the command line (`--since`, `--horizon`,
//! `--restart-cost`, ...) ends in an answer or a clear error, never a panic — whatever its size.

use std::process::Command;

fn quotatop(args: &[&str], dir: &std::path::Path) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_quotatop"))
        .args(args)
        .env("XDG_DATA_HOME", dir)
        .env("XDG_CONFIG_HOME", dir)
        .env_remove("QUOTATOP_CONFIG")
        .output()
        .expect("quotatop runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn huge_and_odd_durations_are_clear_errors() {
    let dir = crate::temp_support::dir_path("cli-inputs");
    let log = dir.join("audit.jsonl");
    std::fs::write(&log, "").unwrap();
    let log_s = log.display().to_string();
    for since in [
        "100000000d",
        "99999999999w",
        "9223372036854775807m",
        "-7d",
        "7y",
        "\u{1b}[31m",
    ] {
        let arg = format!("--since={since}");
        let (ok, text) = quotatop(&["audit", "list", "--log", &log_s, &arg], &dir);
        assert!(!ok, "--since {since:?}: {text}");
        assert!(!text.contains("panicked"), "--since {since:?}: {text}");
        assert!(text.contains("--since"), "--since {since:?}: {text}");
        assert!(
            !text.contains('\u{1b}'),
            "an escape reached the terminal: {text:?}"
        );
    }
    // The longest accepted look-back works on an empty log.
    let (ok, text) = quotatop(
        &["audit", "list", "--log", &log_s, "--since", "36525d"],
        &dir,
    );
    assert!(ok, "{text}");

    for (args, what) in [
        (
            vec!["report", "--queue", "q", "--since", "100000000d"],
            "100 years",
        ),
        (
            vec!["report", "--queue", "q", "--restart-cost", "99999999999w"],
            "100 years",
        ),
    ] {
        let (ok, text) = quotatop(&args, &dir);
        assert!(!ok, "{args:?}: {text}");
        assert!(!text.contains("panicked"), "{args:?}: {text}");
        assert!(text.contains(what), "{args:?}: {text}");
    }
}

/// `--store` with a password in its URL is warned about (it shows in `ps`), without echoing the
/// password; the same URL from QUOTATOP_STORE, or one without a password, is not.
#[test]
fn a_password_on_the_command_line_is_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let with = format!("postgresql://alice:hunter2-pw@127.0.0.1:{closed}/q");
    let without = format!("postgresql://alice@127.0.0.1:{closed}/q");
    let report = |url: &str| ["report", "--queue", "q", "--store", url].map(str::to_string);
    let (ok, text) = quotatop(&report(&with).each_ref().map(String::as_str), dir.path());
    assert!(!ok, "{text}");
    assert!(
        text.contains("warning: --store's URL carries a password") && text.contains("PGPASSFILE"),
        "{text}"
    );
    assert!(!text.contains("hunter2-pw"), "{text}");
    let (_, text) = quotatop(&report(&without).each_ref().map(String::as_str), dir.path());
    assert!(!text.contains("carries a password"), "{text}");
    let out = Command::new(env!("CARGO_BIN_EXE_quotatop"))
        .args(["report", "--queue", "q"])
        .env("QUOTATOP_STORE", &with)
        .env("XDG_DATA_HOME", dir.path())
        .env("XDG_CONFIG_HOME", dir.path())
        .env_remove("QUOTATOP_CONFIG")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("carries a password"), "{err}");
}
