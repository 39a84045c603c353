//! The console at 80×24, the least it runs at, in a real terminal (tmux): what safety rests on
//! is dropped last. `quotatop demo --read-only` shows READ-ONLY on every screen, a refusal
//! whole (wrapped at words, not cut mid-word), the Preemptions screen's LOOP flag on the
//! looping job, the attention panel's causes, and the footer's hints for what the screen is
//! for (`mark` on Preemptions) before the generic ones.

use std::time::{Duration, Instant};

use crate::tmux_support::Tmux;

/// `quotatop demo ARGS` in tmux at 80×24, in a home of its own; its stderr in `stderr.txt`.
pub fn demo_at_80x24(dir: &std::path::Path, args: &str) -> Tmux {
    demo_in(dir, (80, 24), args)
}

/// `quotatop demo ARGS` in tmux at `width`×`height`, as [`demo_at_80x24`].
pub fn demo_in(dir: &std::path::Path, (width, height): (u16, u16), args: &str) -> Tmux {
    let command = format!(
        "env HOME={home} XDG_CONFIG_HOME={home}/xdg XDG_DATA_HOME={home}/data TMPDIR={home} \
         {bin} demo {args} 2> {home}/stderr.txt; touch {home}/done; sleep 30",
        home = dir.display(),
        bin = env!("CARGO_BIN_EXE_quotatop"),
    );
    let tmux = Tmux::start(dir, width, height, &command);
    tmux.wait_for("Needs attention");
    tmux
}

/// Presses `key` until `text` shows (the demo's first refreshes can swallow a key's effect).
pub fn press_until(tmux: &Tmux, key: &str, text: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        tmux.keys(&[key]);
        std::thread::sleep(Duration::from_millis(300));
        let s = tmux.screen();
        if s.contains(text) {
            return s;
        }
        assert!(
            Instant::now() < deadline,
            "{key} never showed {text:?}:\n{s}"
        );
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

fn footer(s: &str) -> &str {
    s.lines().rfind(|l| !l.trim().is_empty()).unwrap_or("")
}

#[test]
fn at_80x24_read_only_loop_flags_causes_and_refusals_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let tmux = demo_at_80x24(dir.path(), "--read-only");
    let s = tmux.wait_for("cause:");
    assert!(first_line(&s).contains("READ-ONLY"), "Overview:\n{s}");
    // The cause of the loop is shown, not cut away after the lost hours.
    assert!(s.contains("own limit"), "the loop's cause:\n{s}");

    let s = press_until(&tmux, "2", "Jobs ·");
    assert!(first_line(&s).contains("READ-ONLY"), "Jobs:\n{s}");
    tmux.keys(&["p"]);
    let s = tmux.wait_for("read-only mode");
    // The refusal whole, wrapped at words: what set read-only mode is named.
    let text = s.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        text.contains("read-only is set by the --read-only flag)"),
        "the refusal is cut:\n{s}"
    );

    let s = press_until(&tmux, "3", "Preemptions ·");
    assert!(first_line(&s).contains("READ-ONLY"), "Preemptions:\n{s}");
    let row = s
        .lines()
        .find(|l| l.contains("video-pretrain") && l.contains("vision"))
        .unwrap_or_else(|| panic!("no video-pretrain row:\n{s}"));
    assert!(s.contains("FLAGS"), "the FLAGS column is dropped:\n{s}");
    assert!(row.contains("LOOP"), "the looping job is not flagged:\n{s}");
    // The footer keeps what the screen is for before the generic hints.
    let foot = footer(&s);
    for hint in ["mark", "help", "quit"] {
        assert!(foot.contains(hint), "footer without {hint}: {foot}");
    }

    for (key, title) in [("4", "Scorecard ·"), ("5", "Policy ·"), ("1", "Overview ·")] {
        let s = press_until(&tmux, key, title);
        assert!(first_line(&s).contains("READ-ONLY"), "{title}\n{s}");
        let foot = footer(&s);
        assert!(
            foot.contains("help") && foot.contains("quit"),
            "{title} footer: {foot}"
        );
    }
    tmux.keys(&["q"]);
    let stderr = std::fs::read_to_string(dir.path().join("stderr.txt")).unwrap_or_default();
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// Ctrl-C in a dialog cancels the dialog, not the console: a justification typed into the
/// priority dialog, Ctrl-C asks once, Ctrl-C again closes the dialog, the console runs on
/// (a third Ctrl-C, at the top, quits).
#[test]
fn ctrl_c_in_the_priority_dialog_closes_it_and_the_console_runs_on() {
    let dir = tempfile::tempdir().unwrap();
    let tmux = demo_at_80x24(dir.path(), "");
    press_until(&tmux, "2", "Jobs ·");
    let s = press_until(&tmux, "p", "Change priority");
    assert!(s.contains("new priority"), "{s}");
    tmux.keys(&["Tab", "the release needs the capacity"]);
    tmux.wait_for("the release needs");
    tmux.keys(&["C-c"]);
    let s = tmux.wait_for("ctrl-c again closes the dialog");
    assert!(
        s.contains("Change priority"),
        "the dialog went at once:\n{s}"
    );
    tmux.keys(&["C-c"]);
    let s = tmux.wait_for("dialog closed");
    assert!(!s.contains("Change priority"), "{s}");
    assert!(!dir.path().join("done").exists(), "the console quit:\n{s}");
    // Still running: keys still work.
    press_until(&tmux, "3", "Preemptions ·");
    assert!(!dir.path().join("done").exists());
    tmux.keys(&["C-c"]);
    let deadline = Instant::now() + Duration::from_secs(20);
    while !dir.path().join("done").exists() {
        assert!(Instant::now() < deadline, "no quit:\n{}", tmux.screen());
        std::thread::sleep(Duration::from_millis(100));
    }
    let stderr = std::fs::read_to_string(dir.path().join("stderr.txt")).unwrap_or_default();
    assert!(!stderr.contains("panicked"), "{stderr}");
}
