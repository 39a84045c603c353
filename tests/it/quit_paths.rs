//! Quitting never panics: `quotatop demo` in a real terminal (tmux), the log pane following a
//! training log, then `q` or Ctrl-C. The follow's next read used to run on after the console
//! returned and call into a runtime that was shutting down (`A Tokio 1.x context was found, but
//! it is being shutdown`, 4 of 4 times).

use std::time::{Duration, Instant};

use crate::tmux_support::Tmux;

fn quit_while_following(quit: &str) {
    let dir = tempfile::tempdir().unwrap();
    let err = dir.path().join("stderr.txt");
    let done = dir.path().join("done");
    let command = format!(
        "env HOME={home} XDG_CONFIG_HOME={home}/xdg XDG_DATA_HOME={home}/data TMPDIR={home} \
         {bin} demo 2> {err}; touch {done}; sleep 30",
        home = dir.path().display(),
        bin = env!("CARGO_BIN_EXE_quotatop"),
        err = err.display(),
        done = done.display(),
    );
    let tmux = Tmux::start(dir.path(), 160, 40, &command);
    tmux.wait_for("Needs attention");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        tmux.keys(&[":job video-pretrain", "Enter"]);
        std::thread::sleep(Duration::from_millis(500));
        let s = tmux.screen();
        if s.contains("quota share") && s.contains("video-pretrain") {
            break;
        }
        assert!(Instant::now() < deadline, "no Job detail:\n{s}");
    }
    tmux.keys(&["l"]);
    tmux.wait_for("Log ·");
    tmux.keys(&["f"]);
    tmux.wait_for("following");
    std::thread::sleep(Duration::from_millis(300));
    if quit == "C-c" {
        let ok = std::process::Command::new("tmux")
            .arg("-S")
            .arg(dir.path().join("tmux.sock"))
            .args(["send-keys", "-t", "q", "C-c"])
            .status()
            .unwrap();
        assert!(ok.success());
    } else {
        tmux.keys(&[quit]);
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done.exists() {
        assert!(
            Instant::now() < deadline,
            "the console did not quit:\n{}",
            tmux.screen()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // A follow read that outlived the console would panic up to its 2 s pause later.
    std::thread::sleep(Duration::from_secs(3));
    let stderr = std::fs::read_to_string(&err).unwrap_or_default();
    assert!(!stderr.contains("panicked"), "{quit}: {stderr}");
}

#[test]
fn quitting_with_q_while_following_a_log_does_not_panic() {
    quit_while_following("q");
}

#[test]
fn quitting_with_ctrl_c_while_following_a_log_does_not_panic() {
    quit_while_following("C-c");
}
