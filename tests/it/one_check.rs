//! One check for every door (`quotatop_analysis::gate::judge`): the same refused change reads
//! the same through `set-priority` and through the console's dialog (in a real terminal), and
//! the dialog refuses it as typed, before any preview or confirmation. In the demo, whose world
//! is judged by its own policy, the dialog refuses what that policy forbids.

use std::process::Command;

use crate::emulator_support::*;
use crate::tmux_support::Tmux;

const POLICY: &str = "version = 1\n\
    [[class]]\nname = \"sweep\"\npriority = [0, 9]\nshares = [\"research\"]\n\
    [[class]]\nname = \"paper\"\npriority = [10, 99]\nshares = [\"research\"]\noperators = [\"nobody\"]\n";

/// The screen's text with the dialog's borders and line breaks taken out, so a message the
/// dialog wrapped reads as one line.
fn unwrapped(screen: &str) -> String {
    screen
        .lines()
        .map(|l| l.trim_matches(|c: char| c == '│' || c == '║' || c.is_whitespace()))
        .collect::<Vec<_>>()
        .join(" ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_change_reads_the_same_through_the_cli_and_the_console() {
    let h = start(&[(M5, 4)], "").await;
    let c = client(&h, 1);
    create_share(
        &c,
        "research",
        &[(M5, 4)],
        aws_sdk_batch::types::QuotaShareResourceSharingStrategy::Reserve,
        None,
        false,
    )
    .await;
    submit(&c, "sweep-7", "research", M5, 1, 5).await;
    let dir = tempfile::tempdir().unwrap();
    let config_dir = dir.path().join("config");
    std::fs::create_dir_all(&config_dir).unwrap();
    let config = config_dir.join("config.toml");
    std::fs::write(&config, "").unwrap();
    std::fs::write(config_dir.join("policy.toml"), POLICY).unwrap();
    let data = dir.path().join("data");
    let reason = "incident 4711 rerun now";

    // The command line: refused, exit non-zero, nothing changed.
    let cli = Command::new(env!("CARGO_BIN_EXE_quotatop"))
        .args([
            "set-priority",
            "sweep-7",
            "--priority",
            "50",
            "--reason",
            reason,
        ])
        .args([
            "--queue",
            QUEUE,
            "--endpoint-url",
            &h.endpoint_url(),
            "--yes",
        ])
        .arg("--config")
        .arg(&config)
        .env("HOME", dir.path())
        .env("XDG_CONFIG_HOME", dir.path().join("xdg"))
        .env("XDG_DATA_HOME", &data)
        .env("AWS_ACCESS_KEY_ID", "AKIDTEST")
        .env("AWS_SECRET_ACCESS_KEY", "secret")
        .env("AWS_REGION", "us-east-1")
        .output()
        .unwrap();
    assert!(!cli.status.success());
    let cli_says = String::from_utf8_lossy(&cli.stderr)
        .trim()
        .trim_start_matches("Error: ")
        .to_string();
    assert!(
        cli_says.starts_with("refused by the policy")
            && cli_says.contains("may not move a job into class paper"),
        "{cli_says}"
    );

    // The console: the same words, at the first Enter (no preview was shown).
    let command = format!(
        "env HOME={home} XDG_CONFIG_HOME={home}/xdg XDG_DATA_HOME={data} \
         AWS_ACCESS_KEY_ID=AKIDTEST AWS_SECRET_ACCESS_KEY=secret AWS_REGION=us-east-1 \
         {bin} tui --queue {QUEUE} --endpoint-url {url} --config {config} --refresh 1 \
         --journal {home}/j.sqlite3; sleep 30",
        home = dir.path().display(),
        data = data.display(),
        bin = env!("CARGO_BIN_EXE_quotatop"),
        url = h.endpoint_url(),
        config = config.display(),
    );
    let tmux = Tmux::start(dir.path(), 200, 50, &command);
    let log = data.join("quotatop").join("audit.jsonl");
    let screen = tokio::task::spawn_blocking(move || {
        tmux.wait_for("research");
        tmux.keys(&[":job sweep-7", "Enter", "p"]);
        tmux.wait_for("sweep-7");
        tmux.keys(&["50", "Tab", reason, "Enter"]);
        let s = tmux.wait_for("may not move a job into class paper");
        tmux.keys(&["Escape", "Escape", "q"]);
        s
    })
    .await
    .unwrap();
    assert!(
        !screen.contains("apply this change"),
        "the dialog showed a preview to confirm before refusing:\n{screen}"
    );
    assert!(
        unwrapped(&screen).contains(&cli_says),
        "the console's refusal differs from the CLI's ({cli_says:?}):\n{screen}"
    );
    assert!(
        std::fs::read_to_string(&log).unwrap_or_default().is_empty(),
        "a refused change reached the audit log"
    );
    h.shutdown().await.unwrap();
}

/// `quotatop demo`: its world's policy (regulatory: 5000-8999, change records) is the one the
/// priority dialog judges by — 5000 → 4999 for a regulatory job is refused as typed, naming the
/// range.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demos_dialog_refuses_what_the_demos_policy_forbids() {
    let dir = tempfile::tempdir().unwrap();
    let command = format!(
        "env HOME={home} XDG_CONFIG_HOME={home}/xdg XDG_DATA_HOME={home}/data TMPDIR={home} \
         {bin} demo; sleep 30",
        home = dir.path().display(),
        bin = env!("CARGO_BIN_EXE_quotatop"),
    );
    let tmux = Tmux::start(dir.path(), 200, 50, &command);
    let screen = tokio::task::spawn_blocking(move || {
        tmux.wait_for("Needs attention");
        // The first snapshots are an early look: ask again until the job is in the data.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            tmux.keys(&[":job baseline-eval", "Enter"]);
            std::thread::sleep(std::time::Duration::from_millis(500));
            let s = tmux.screen();
            if s.contains("quota share") && s.contains("baseline-eval") {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "no Job detail:\n{s}");
        }
        tmux.keys(&["p"]);
        tmux.wait_for("new priority");
        tmux.keys(&["4999", "Tab", "regulator asked for it today", "Enter"]);
        let s = tmux.wait_for("outside that class's range 5000-8999");
        tmux.keys(&["Escape", "Escape", "q"]);
        s
    })
    .await
    .unwrap();
    assert!(
        unwrapped(&screen).contains("refused by the policy"),
        "{screen}"
    );
}
