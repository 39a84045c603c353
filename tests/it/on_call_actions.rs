//! Issue 43's "done when", in a real terminal (tmux): from the Preemptions screen of `quotatop
//! demo`, mark the looping job (video-pretrain), requeue it with a retry cap of 2, then mark
//! two low-priority jobs and terminate them with one justification; `quotatop audit list` on the
//! demo's kept audit log shows each change with its reason.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::tmux_support::Tmux;

const REQUEUE_WHY: &str = "loop: capped at 2 retries, ticket OPS-17";
const TERMINATE_WHY: &str = "freeing p4d for the release, ticket OPS-18";

/// The kept demo directory's audit log under `dir` (the demo's TMPDIR).
fn audit_log(dir: &std::path::Path) -> Option<std::path::PathBuf> {
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path().join("audit.jsonl"))
        .find(|p| p.is_file())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mark_requeue_the_loop_and_terminate_two_jobs_from_preemptions() {
    let dir = tempfile::tempdir().unwrap();
    let command = format!(
        "env HOME={home} XDG_CONFIG_HOME={home}/xdg XDG_DATA_HOME={home}/data TMPDIR={home} \
         {bin} demo --keep; sleep 30",
        home = dir.path().display(),
        bin = env!("CARGO_BIN_EXE_quotatop"),
    );
    let tmux = Tmux::start(dir.path(), 200, 50, &command);
    let (requeued, terminated) = tokio::task::spawn_blocking(move || {
        tmux.wait_for("Needs attention");
        // The loop is found within seconds; the Preemptions screen lists it first (most
        // preempted) once it is.
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            tmux.keys(&["3"]);
            let s = tmux.screen();
            if s.contains("video-pretrain") && s.contains("LOOP") && s.contains("research-sweep") {
                break;
            }
            assert!(Instant::now() < deadline, "no loop on Preemptions:\n{s}");
            std::thread::sleep(Duration::from_millis(500));
        }
        // Only the looping job shown, marked, requeued with the default cap of 2.
        tmux.keys(&["/", "video-pretrain", "Enter", " "]);
        tmux.wait_for("1 marked");
        tmux.keys(&["R"]);
        tmux.wait_for("Requeue with a retry cap");
        assert!(tmux.screen().contains("[2"), "{}", tmux.screen());
        tmux.keys(&["Tab", REQUEUE_WHY, "Enter"]);
        tmux.wait_for("the copy: retry cap 2");
        tmux.keys(&["Enter"]);
        // The whole result, not the first frame that starts it (a capture can catch a frame
        // half drawn).
        let requeued = tmux.wait_for("the copy is job");
        tmux.keys(&["Escape"]);
        std::thread::sleep(Duration::from_millis(300));
        tmux.keys(&["Escape"]);
        std::thread::sleep(Duration::from_millis(300));
        // Two low-priority research sweeps, marked and terminated with one justification.
        tmux.keys(&["/", "research-sweep", "Enter", " ", " "]);
        tmux.wait_for("2 marked");
        tmux.keys(&["C-k"]);
        tmux.wait_for("2 jobs in ml-training");
        tmux.keys(&[TERMINATE_WHY, "Enter"]);
        tmux.wait_for("GPU-h thrown away");
        tmux.keys(&["Enter"]);
        let terminated = tmux.wait_for("2 succeeded · 0 failed");
        tmux.keys(&["Escape"]);
        std::thread::sleep(Duration::from_millis(300));
        tmux.keys(&["q"]);
        tmux.wait_for("kept");
        (requeued, terminated)
    })
    .await
    .unwrap();
    assert!(
        requeued.contains("1 succeeded · 0 failed") && requeued.contains("the copy is job"),
        "{requeued}"
    );
    assert!(
        terminated.contains("2 succeeded · 0 failed"),
        "{terminated}"
    );
    let log = audit_log(dir.path()).expect("the demo kept its audit log");
    let out = Command::new(env!("CARGO_BIN_EXE_quotatop"))
        .args(["audit", "list", "--log"])
        .arg(&log)
        .env("HOME", dir.path())
        .env("XDG_CONFIG_HOME", dir.path().join("xdg"))
        .env("XDG_DATA_HOME", dir.path().join("data"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list = String::from_utf8_lossy(&out.stdout);
    let count = |s: &str| list.matches(s).count();
    assert_eq!(count("RequeueServiceJob"), 1, "{list}");
    assert!(
        list.contains("preemptionRetriesBeforeTermination 2"),
        "{list}"
    );
    assert_eq!(count("  TerminateServiceJob "), 2, "{list}");
    assert_eq!(count(&format!("why: {REQUEUE_WHY}")), 1, "{list}");
    assert_eq!(count(&format!("why: {TERMINATE_WHY}")), 2, "{list}");
    assert_eq!(count("succeeded"), 3, "{list}");
}
