//! The status bar's words agree with each other: attempts the refresh got past are not
//! "errors" beside "● healthy" (while `:messages` has none); the demo's data clock is said as
//! the emulator's, not in the warning colour as a clock gone wrong.

use crate::tui_narrow::{demo_in, press_until};
use crate::tui_support::{options, run_with, screen_text, snapshot, typed};
use quotatop_model::HealthState;

fn second_line(text: &str) -> String {
    text.lines().nth(1).unwrap_or("").to_string()
}

#[tokio::test]
async fn failed_attempts_of_a_healthy_refresh_are_not_errors() {
    let mut s = snapshot();
    s.health.state = HealthState::Healthy;
    s.health.errors_last_minute = 2;
    let (t, _) = run_with(160, 24, options(), vec![s.clone()], typed("")).await;
    let line = second_line(&screen_text(&t));
    assert!(line.contains("● healthy"), "{line}");
    assert!(!line.contains("errors/min"), "{line}");
    assert!(line.contains("2 calls retried or not found/min"), "{line}");
    // Unhealthy: they are errors.
    s.health.state = HealthState::Degraded;
    let (t, _) = run_with(160, 24, options(), vec![s], typed("")).await;
    let line = second_line(&screen_text(&t));
    assert!(line.contains("2 errors/min"), "{line}");
}

#[test]
fn the_demo_says_its_clock_is_the_emulators() {
    let dir = tempfile::tempdir().unwrap();
    let tmux = demo_in(dir.path(), (160, 30), "");
    let s = press_until(&tmux, "1", "emulator clock");
    let line = second_line(&s);
    assert!(
        !line.contains("behind") && !line.contains("ahead"),
        "{line}"
    );
    assert!(!line.contains("data clock"), "{line}");
}
