//! The console's log pane in a real terminal (tmux): `quotatop tui` against the demo world two
//! simulated hours in, `l` on a preempted job shows its attempt's training log through
//! CloudWatch Logs; `[` goes to the earlier attempt, whose preemption signal and end are shown;
//! `/` searches and `n` moves between matches; `f` follows.

use std::path::Path;
use std::time::Duration;

use quotatop_emulator::{
    self as emulator, ClockMode, EmulatorConfig, EmulatorHandle, FaultSpec, Scenario,
};

use crate::tmux_support::Tmux;

const START: i64 = 1_770_000_000_000;
const HOUR: i64 = 3_600_000;

/// The demo two simulated hours in (with `faults`), research-burst's attempt count, and the
/// console on it in tmux (its directory kept alive with it).
async fn demo_console(faults: &str) -> (EmulatorHandle, usize, Tmux, tempfile::TempDir) {
    let scenario = Scenario::load(Path::new("scenarios/demo.toml")).unwrap();
    let mut config = EmulatorConfig::from_scenario(scenario).unwrap();
    config.clock = ClockMode::Manual;
    config.start_ms = Some(START);
    config.deterministic_ids = true;
    config.faults = FaultSpec::parse(faults).unwrap();
    let h = emulator::start(config).await.unwrap();
    h.advance(2 * HOUR).unwrap();
    // The engine's own record: research-burst's attempts, the earlier ones preempted.
    let attempts = h
        .with_engine(|e| {
            let job = e.jobs().find(|j| j.name == "research-burst").unwrap();
            job.attempts.len()
        })
        .unwrap();
    assert!(attempts >= 2, "research-burst ran {attempts} attempt(s)");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.toml"), "").unwrap();
    let bin = env!("CARGO_BIN_EXE_quotatop");
    let command = format!(
        "env HOME={home} XDG_CONFIG_HOME={home}/xdg XDG_DATA_HOME={home}/data \
         AWS_ACCESS_KEY_ID=AKIDTEST AWS_SECRET_ACCESS_KEY=secret AWS_REGION=us-east-1 \
         {bin} tui --queue ml-training --endpoint-url {url} --config {home}/config.toml \
         --refresh 1 --no-journal; sleep 30",
        home = dir.path().display(),
        url = h.endpoint_url(),
    );
    let tmux = Tmux::start(dir.path(), 200, 50, &command);
    (h, attempts, tmux, dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_log_pane_opens_searches_and_switches_attempt_in_tmux() {
    let (h, attempts, tmux, _dir) = demo_console("").await;
    let screens = tokio::task::spawn_blocking(move || {
        tmux.wait_for("research");
        open_job(&tmux);
        tmux.keys(&["l"]);
        let newest = tmux.wait_all(&[
            &format!("attempt {attempts} of {attempts}"),
            &format!("#{attempts} "),
            "Log · research-burst",
            "starting on",
        ]);
        // The attempt before, preempted: its signal and its end.
        tmux.keys(&["["]);
        let prev = attempts - 1;
        let earlier = tmux.wait_all(&[
            "received SIGTERM (preemption)",
            &format!("attempt {prev} of {attempts}"),
            &format!("#{prev} "),
            &format!("── attempt {prev} preempted:"),
        ]);
        tmux.keys(&["/", "restored from", "Enter", "n"]);
        // The search as typed whole: the pane searches as each key arrives, so "match(es)"
        // already shows for a prefix of it.
        let searched = tmux.wait_all(&["/restored from ", "match(es)"]);
        tmux.keys(&["f"]);
        let following = tmux.wait_for("following");
        tmux.keys(&["Escape", "Escape", "q"]);
        (newest, earlier, searched, following)
    })
    .await
    .unwrap();
    let (newest, earlier, searched, following) = screens;
    let prev = attempts - 1;
    assert!(
        newest.contains("Log · research-burst") && newest.contains("starting on"),
        "{newest}"
    );
    assert!(
        earlier.contains(&format!("attempt {prev} of {attempts}"))
            && earlier.contains(&format!("#{prev} "))
            && earlier.contains(&format!("── attempt {prev} preempted:"))
            && !earlier.contains(&format!("#{attempts} ")),
        "{earlier}"
    );
    assert!(
        searched.contains("/restored from") && searched.contains("match(es)"),
        "{searched}"
    );
    assert!(following.contains("following"), "{following}");
    h.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_log_read_is_said_in_the_pane_with_the_next_step() {
    let (h, _attempts, tmux, _dir) = demo_console("filterlogevents:deny=1").await;
    let (denied, after) = tokio::task::spawn_blocking(move || {
        tmux.wait_for("research");
        open_job(&tmux);
        tmux.keys(&["l"]);
        let denied = tmux.wait_for("access denied reading CloudWatch Logs");
        // Still a working console: back to the job, and out.
        tmux.keys(&["Escape"]);
        let after = tmux.wait_for("job id");
        tmux.keys(&["q"]);
        (denied, after)
    })
    .await
    .unwrap();
    assert!(
        denied.contains("role needs") && denied.contains("logs:FilterLogEvents"),
        "{denied}"
    );
    assert!(!after.contains("reading CloudWatch Logs"), "{after}");
    h.shutdown().await.unwrap();
}

/// Opens research-burst's Job detail, again until the console has listed it (the first
/// refreshes may not have reached it yet).
fn open_job(tmux: &Tmux) {
    for _ in 0..60 {
        tmux.keys(&[":job research-burst", "Enter"]);
        std::thread::sleep(Duration::from_millis(300));
        if tmux.screen().contains("job id") {
            return;
        }
    }
    tmux.wait_for("job id");
}

/// `l` opens the same pane from the Jobs and Preemptions lists, on the selected row: each list
/// filtered to research-burst (`/`), then `l` shows its newest attempt's log; Esc goes back to
/// the list it came from.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_log_pane_opens_from_the_jobs_and_preemptions_lists() {
    let (h, attempts, tmux, _dir) = demo_console("").await;
    let panes = tokio::task::spawn_blocking(move || {
        tmux.wait_for("research");
        // Once the console has listed the job (the first refreshes may not have reached it).
        open_job(&tmux);
        let mut out = Vec::new();
        for (screen, title) in [("2", "Jobs · "), ("3", "Preemptions · ")] {
            tmux.keys(&[screen]);
            tmux.wait_for(title);
            tmux.keys(&["/", "research-burst", "Enter"]);
            std::thread::sleep(Duration::from_millis(300));
            tmux.keys(&["l"]);
            let pane = tmux.wait_all(&[
                &format!("attempt {attempts} of {attempts}"),
                &format!("#{attempts} "),
            ]);
            tmux.keys(&["Escape"]);
            let back = tmux.wait_for(title);
            // tmux would read Escape and the next screen's digit as one Alt key.
            std::thread::sleep(Duration::from_millis(300));
            out.push((screen, pane, back));
        }
        tmux.keys(&["q"]);
        out
    })
    .await
    .unwrap();
    for (screen, pane, back) in panes {
        assert!(
            pane.contains("Log · research-burst") && pane.contains("starting on"),
            "from screen {screen}: {pane}"
        );
        assert!(!back.contains("Log · "), "from screen {screen}: {back}");
    }
    h.shutdown().await.unwrap();
}
