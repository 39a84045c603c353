//! Lines longer than their pane are never cut unseen, in a real terminal (tmux) on
//! `quotatop demo`: the `?` help wraps at words (its `:at` line whole at 120 columns, was `an
//! RFC 3339 tim`); the log pane cuts a long line with `…` and → scrolls along it, as
//! `less -S` does.

use crate::tui_narrow::{demo_at_80x24, demo_in, press_until};

/// The screen's text inside the borders, joined into words (wrapped lines read as one).
fn words(s: &str) -> String {
    s.lines()
        .map(|l| l.trim_matches(|c| matches!(c, '│' | '▲' | '▼' | '█' | ' ')))
        .collect::<Vec<_>>()
        .join(" ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn help_lines_wrap_at_120_columns() {
    let dir = tempfile::tempdir().unwrap();
    let tmux = demo_in(dir.path(), (120, 40), "");
    let s = press_until(&tmux, "?", "Help");
    assert!(s.contains("Keys"), "{s}");
    // Down to the commands.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let s = loop {
        tmux.keys(&["NPage"]);
        let s = tmux.screen();
        if s.contains("time travel to 30m") {
            break s;
        }
        assert!(std::time::Instant::now() < deadline, "no :at line:\n{s}");
    };
    assert!(
        words(&s).contains("HH:MM[:SS] today (UTC, the data's clock), or an RFC 3339 time"),
        "the :at help line is cut:\n{s}"
    );
}

#[test]
fn the_log_pane_scrolls_along_lines_longer_than_it() {
    let dir = tempfile::tempdir().unwrap();
    let tmux = demo_at_80x24(dir.path(), "");
    press_until(&tmux, "3", "Preemptions ·");
    let s = press_until(&tmux, "l", "Log ·");
    let row = s
        .lines()
        .position(|l| l.ends_with("…│"))
        .unwrap_or_else(|| panic!("no line cut with …:\n{s}"));
    let before = s.lines().nth(row).unwrap_or("").to_string();
    tmux.keys(&["Right"]);
    let s = tmux.wait_for("from column 21");
    let after = s.lines().nth(row).unwrap_or("").to_string();
    assert!(after.starts_with("│…"), "{after}");
    // What was after column 21 is now at the start (after the border and the `…`).
    let shifted: String = before.chars().skip(22).take(30).collect();
    let start: String = after.chars().skip(2).take(30).collect();
    assert_eq!(start, shifted, "{before}\n{after}");
    tmux.keys(&["Left"]);
    let s = tmux.wait_for("Log ·");
    assert!(!s.contains("from column"), "{s}");
}
