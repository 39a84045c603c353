//! Every key a screen handles is in its footer (or `?`), under the name it has there, in a
//! real terminal (tmux) on `quotatop demo`: `l logs` on Jobs, Preemptions and Job detail at
//! 80×24; in the log pane `f follow`, `n-N match`, `/ search` and `[-] attempt`, never `filter`
//! or `past` (the log pane's `/` searches and its `[` `]` step through attempts).

use crate::tui_narrow::{demo_at_80x24, demo_in, press_until};

fn footer(s: &str) -> String {
    s.lines()
        .rfind(|l| !l.trim().is_empty())
        .unwrap_or("")
        .to_string()
}

#[test]
fn jobs_preemptions_and_job_detail_offer_l_at_80x24() {
    let dir = tempfile::tempdir().unwrap();
    let tmux = demo_at_80x24(dir.path(), "");
    for (key, title) in [("2", "Jobs ·"), ("3", "Preemptions ·")] {
        press_until(&tmux, key, title);
        // Once its rows are in (a job selected).
        let s = tmux.wait_for("<l>logs");
        assert!(s.contains(title), "{s}");
    }
    // Enter on the looping job: its detail.
    press_until(&tmux, "\r", "quota share");
    let s = tmux.wait_for("<l>logs");
    assert!(s.contains("quota share"), "Job detail:\n{s}");
}

#[test]
fn the_log_pane_footer_names_its_own_keys() {
    let dir = tempfile::tempdir().unwrap();
    let tmux = demo_in(dir.path(), (120, 30), "");
    press_until(&tmux, "3", "Preemptions ·");
    let s = press_until(&tmux, "l", "Log ·");
    let foot = footer(&s);
    for hint in [
        "<f>follow",
        "<n-N>match",
        "</>search",
        "<[-]>attempt",
        "help",
        "quit",
    ] {
        assert!(
            foot.contains(hint),
            "log pane footer without {hint}: {foot}"
        );
    }
    for wrong in ["filter", "past"] {
        assert!(
            !foot.contains(wrong),
            "log pane footer says {wrong}: {foot}"
        );
    }
    // The keys do what the footer says: `f` follows.
    tmux.keys(&["f"]);
    tmux.wait_for("following");
}
