//! `quotatop shares plan --impact` on a recorded world: the journal's history replayed under
//! the live shares and the proposed ones, with `replay`'s decision summary (the live column is
//! the figure `replay --journal` gives its baseline), and the lint's RESERVE check read from
//! the same journal.

use std::path::Path;
use std::process::Command;

use crate::data_support::RECORDED_WORLD;
use quotatop_aws::poll::{PollConfig, Poller};
use quotatop_emulator::{self as emulator, ClockMode, EmulatorConfig, Scenario};
use quotatop_model::Millis;
use quotatop_store::journal::{Journal, JournalConfig};

const START: Millis = 1_770_000_000_000;
const POLL_MS: Millis = 60_000;
const RUN_MS: Millis = 4 * 3_600_000;
const QUEUE: &str = "ml-training";

fn quotatop(dir: &Path, url: &str, args: &[&str]) -> (bool, String, String) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_quotatop"));
    c.args(args)
        .args(["--endpoint-url", url])
        .env("AWS_ACCESS_KEY_ID", "AKIDTEST")
        .env("AWS_SECRET_ACCESS_KEY", "secret")
        .env("AWS_REGION", "us-east-1")
        .env_remove("QUOTATOP_CONFIG")
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_DATA_HOME", dir.join("data"));
    let out = c.output().expect("quotatop runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// The table row of `scenario` in a decision summary, without its name and verdict.
fn row<'a>(text: &'a str, scenario: &str) -> Vec<&'a str> {
    let line = text
        .lines()
        .find(|l| l.starts_with(&format!("| {scenario} |")))
        .unwrap_or_else(|| panic!("no row {scenario:?} in\n{text}"));
    let cells: Vec<&str> = line.split('|').map(str::trim).collect();
    // "", name, figures…, verdict, ""
    cells[2..cells.len() - 2].to_vec()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn impact_replays_the_journal_under_live_and_proposed_with_replay_s_figures() {
    let scenario = Scenario::parse(RECORDED_WORLD).unwrap();
    let mut config = EmulatorConfig::from_scenario(scenario).unwrap();
    config.clock = ClockMode::Manual;
    config.start_ms = Some(START);
    let emu = emulator::start(config).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite3");
    let mut journal = Journal::open(&path, JournalConfig::default()).unwrap();
    let client = crate::data_support::batch_client(&emu).await;
    let mut poller = Poller::new(PollConfig {
        queues: vec![QUEUE.to_string()],
        ..PollConfig::default()
    });
    let mut t = 0;
    while t < RUN_MS {
        emu.advance(POLL_MS).unwrap();
        t += POLL_MS;
        journal.record(&poller.refresh(&client).await).unwrap();
    }
    drop(journal);
    let url = emu.endpoint_url();
    let d = dir.path().to_path_buf();
    let j = path.to_str().unwrap().to_string();

    let (ok, live, err) = tokio::task::spawn_blocking({
        let (d, url) = (d.clone(), url.clone());
        move || quotatop(&d, &url, &["shares", "export", "--queue", QUEUE])
    })
    .await
    .unwrap();
    assert!(ok, "{err}");
    // The regulated share lends; a new RESERVE share no job has used.
    // Issue 29 §2.14: the export is named as an export, not as the live configuration.
    assert!(!live.contains("(live)"), "{live}");
    assert!(live.contains("name = \"ml-training exported 20"), "{live}");
    let proposed = live
        .lines()
        .map(|l| {
            if l.starts_with("name = \"ml-training exported") {
                "name = \"regulated lends\""
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        .replace("strategy = \"RESERVE\"", "strategy = \"LEND\"")
        + "\n[[shares]]\nname = \"idle\"\nstrategy = \"RESERVE\"\nlimits = { \"ml.g5.12xlarge\" = 1 }\n";
    let file = dir.path().join("proposed.toml");
    std::fs::write(&file, proposed).unwrap();
    let f = file.to_str().unwrap().to_string();
    let (ok, out, err) = tokio::task::spawn_blocking({
        let (d, url, j, f) = (d.clone(), url.clone(), j.clone(), f.clone());
        move || {
            quotatop(
                &d,
                &url,
                &[
                    "shares",
                    "plan",
                    "--queue",
                    QUEUE,
                    "-f",
                    &f,
                    "--journal",
                    &j,
                    "--impact",
                    "7d",
                ],
            )
        }
    })
    .await
    .unwrap();
    assert!(ok, "{out}\n{err}");
    assert!(out.contains("strategy           RESERVE -> LEND"), "{out}");
    assert!(
        out.contains("warning: share idle: RESERVE, but no job used it in the journal's last 7d"),
        "{out}"
    );
    assert!(!out.contains("share regulated: RESERVE"), "{out}");
    assert!(out.contains("## Decision (baseline: live)"), "{out}");
    // Each side labelled by its source: the live queue, the file (and the name in it).
    assert!(
        out.contains("| proposed: proposed.toml (regulated lends) |"),
        "{out}"
    );

    assert_ne!(
        row(&out, "live")[0],
        "0",
        "jobs completed in the replay: {out}"
    );
    // The live column is what `replay --journal` says of its baseline: one definition.
    let (ok, replayed, err) = tokio::task::spawn_blocking({
        let (d, j) = (d.clone(), j.clone());
        move || {
            let mut c = Command::new(env!("CARGO_BIN_EXE_quotatop"));
            c.args(["replay", "--journal", &j, "--queue", QUEUE, "--since", "7d"])
                .env_remove("QUOTATOP_CONFIG")
                .env("XDG_CONFIG_HOME", d.join("config"));
            let o = c.output().unwrap();
            (
                o.status.success(),
                String::from_utf8_lossy(&o.stdout).to_string(),
                String::from_utf8_lossy(&o.stderr).to_string(),
            )
        }
    })
    .await
    .unwrap();
    assert!(ok, "{err}");
    assert_eq!(
        row(&out, "live"),
        row(&replayed, "ml-training (journal)"),
        "{out}\n{replayed}"
    );

    // A journal without the queue is named.
    let (ok, _, err) = tokio::task::spawn_blocking({
        let (d, url, f) = (d.clone(), url.clone(), f.clone());
        let empty = d.join("empty.sqlite3");
        drop(Journal::open(&empty, JournalConfig::default()).unwrap());
        let e = empty.to_str().unwrap().to_string();
        move || {
            quotatop(
                &d,
                &url,
                &[
                    "shares",
                    "plan",
                    "--queue",
                    QUEUE,
                    "-f",
                    &f,
                    "--journal",
                    &e,
                    "--impact",
                    "7d",
                ],
            )
        }
    })
    .await
    .unwrap();
    assert!(!ok);
    assert!(err.contains("has no queue \"ml-training\""), "{err}");
    emu.shutdown().await.unwrap();
}
