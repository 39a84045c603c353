//! Fidelity of `journal export-trace` / `replay --journal` (issue 17): an emulator world
//! recorded by the real poller into the journal, its history exported as a trace, the trace
//! replayed under the emulator's own configuration (the shares and capacity the journal saw),
//! and the replay's scorecard compared with the recorded one.
//!
//! The engine runs both, so what differs is only what the journal could not see:
//! - the trace's work is each job's productive time as observed: a run's end is exact (API
//!   timestamps), so productive GPU-hours agree to the millisecond, for the jobs exported;
//! - the emulator's scenario delays (submitted 1 s, pending 2 s, scheduled 5 s, starting 10 s,
//!   preemption 5 s, jitter up to 2 s a step) are not in the journal, and the replay's engine
//!   runs without delays: in the recording every attempt holds its capacity ~15 s before it
//!   runs, and on a congested queue those seconds add up along the line of waiting jobs; each
//!   RUNNABLE is also seen up to one poll (`POLL_MS`) late. So replayed waits are shorter: the
//!   queue's mean and P50 wait are at most one poll longer than recorded and at least
//!   `WAIT_FLOOR` of it (measured: mean 1,835 s vs 1,926 s, P50 499 s vs 602 s);
//! - jobs the recording did not see finish are left out (none here: the run outlasts them);
//! - each job's `preemptionRetriesBeforeTermination` and checkpoint interval (its
//!   `quotatop:checkpoint-seconds` tag) come from DescribeServiceJob as the journal kept them,
//!   so no configured interval is needed; a job never described (seen only in listings) would
//!   fall back to the config's per-share interval and the engine's default retries.

use crate::data_support::RECORDED_WORLD as SCENARIO;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use quotatop::cli::JournalWindowArgs;
use quotatop::commands::journal::trace_from_journal;
use quotatop_analysis::scorecard::{self, ScorecardOptions, Window};
use quotatop_aws::poll::{PollConfig, Poller};
use quotatop_emulator::{self as emulator, ClockMode, EmulatorConfig, Scenario};
use quotatop_model::Millis;
use quotatop_store::journal::{Journal, JournalConfig, scorecard_input};

const START: Millis = 1_770_000_000_000;
const POLL_MS: Millis = 30_000;
/// Long enough for every generated job to finish.
const RUN_MS: Millis = 6 * 3_600_000;
const QUEUE: &str = "ml-training";
/// Replayed waits are at least this share of the recorded ones (see the module's notes).
const WAIT_FLOOR: f64 = 0.75;

/// The scenario run for `run_ms` on a manual clock, observed every `POLL_MS` by the real
/// poller into a journal; returns the journal's directory and path.
async fn record(run_ms: Millis) -> (tempfile::TempDir, PathBuf) {
    let scenario = Scenario::parse(SCENARIO).unwrap();
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
    while t < run_ms {
        emu.advance(POLL_MS).unwrap();
        t += POLL_MS;
        journal.record(&poller.refresh(&client).await).unwrap();
    }
    drop(journal);
    emu.shutdown().await.unwrap();
    (dir, path)
}

#[tokio::test]
async fn an_exported_trace_replays_to_the_recorded_scorecard() {
    let (_dir, path) = record(RUN_MS).await;
    // No per-share checkpoint interval: the jobs' own tags, as journaled, give it.
    let opts = ScorecardOptions {
        restart_cost_ms: 0,
        ..Default::default()
    };
    let window_args = JournalWindowArgs {
        queue: Some(QUEUE.to_string()),
        since: "30d".to_string(),
        until: None,
        ..Default::default()
    };
    let exported = trace_from_journal(
        Some(&path),
        &window_args,
        &opts,
        quotatop::commands::journal::Baseline::LastSeen,
    )
    .unwrap();
    assert!(
        exported.trace.left_out.is_empty(),
        "{:?}",
        exported.trace.left_out
    );
    assert!(
        exported.trace.jobs.len() >= 40,
        "{}",
        exported.trace.jobs.len()
    );

    // Per job, as DescribeServiceJob showed it: research checkpoints every 300 s, prod's
    // retries are capped at 2, the rest have neither.
    for job in &exported.trace.jobs {
        let (checkpoint, retries) = match &*job.share {
            "research" => (Some(300_000), None),
            "prod" => (None, Some(2)),
            _ => (None, None),
        };
        assert_eq!(
            (job.checkpoint_interval_ms, job.preemption_retries),
            (checkpoint, retries),
            "{} of {}",
            job.name,
            job.share
        );
    }

    let j = Journal::open_existing(&path, JournalConfig::default()).unwrap();
    let last = j.queue(QUEUE).unwrap().unwrap().last_observed_at;
    let recorded_input = scorecard_input(&j, QUEUE, Window::new(START, last + 1), &opts).unwrap();
    let recorded = scorecard::scorecard(&recorded_input, &opts).queue_row;

    // The emulator's own configuration, as the journal saw it.
    let cfg = &exported.baseline;
    assert_eq!(cfg.shares.len(), 3);
    let (outcome, _) = quotatop_replay::replay(&exported.trace.jobs, cfg, &mut |_, _| {}).unwrap();
    let replayed = &outcome.scorecard.queue_row;
    assert_eq!(outcome.completed, exported.trace.jobs.len());

    let (rp, pp) = (
        recorded.ledger.productive_gpu_hours,
        replayed.ledger.productive_gpu_hours,
    );
    println!("productive GPU-h: recorded {rp:.3}, replayed {pp:.3}");
    println!(
        "wait recorded {:?}\nwait replayed {:?}",
        recorded.wait, replayed.wait
    );
    assert!((rp - pp).abs() < 1e-6, "productive GPU-h {rp} vs {pp}");
    for (what, r, p) in [
        ("mean", recorded.wait.mean_ms, replayed.wait.mean_ms),
        ("p50", recorded.wait.p50_ms, replayed.wait.p50_ms),
    ] {
        let (r, p) = (r.unwrap(), p.unwrap());
        assert!(
            p <= r + POLL_MS && p as f64 >= r as f64 * WAIT_FLOOR,
            "{what} wait: recorded {r} ms, replayed {p} ms"
        );
    }
}

fn quotatop(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_quotatop"))
        .args(args)
        .output()
        .expect("quotatop runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The commands end to end: `journal export-trace` writes a trace that `replay --trace` reads
/// back as the same jobs, `replay --journal` replays the same history with the journal's
/// baseline, and bad input names the problem.
#[tokio::test]
async fn export_trace_and_replay_journal_from_the_command_line() {
    let (dir, path) = record(3 * 3_600_000).await;
    let journal = path.to_str().unwrap();
    let cfg = dir.path().join("config.toml");
    std::fs::write(&cfg, "[scorecard.checkpoint_minutes]\nresearch = 5\n").unwrap();
    let cfg = cfg.to_str().unwrap();
    let export = [
        "journal",
        "export-trace",
        "--journal",
        journal,
        "--queue",
        QUEUE,
    ];
    let (ok, csv, err) = quotatop(&[&export[..], &["--since", "30d", "--config", cfg]].concat());
    assert!(ok, "{err}");
    assert!(err.contains("job(s) exported; left out: "), "{err}");
    assert!(err.contains("still open at the window's end"), "{err}");

    // The same jobs as the library builds, through the trace reader.
    let opts = ScorecardOptions {
        checkpoint_by_share: BTreeMap::from([("research".to_string(), 300_000)]),
        ..Default::default()
    };
    let window = JournalWindowArgs {
        queue: Some(QUEUE.to_string()),
        since: "30d".to_string(),
        until: None,
        ..Default::default()
    };
    let built = trace_from_journal(
        Some(&path),
        &window,
        &opts,
        quotatop::commands::journal::Baseline::LastSeen,
    )
    .unwrap();
    let read = quotatop_replay::trace_csv::parse(&csv, "trace.csv").unwrap();
    assert_eq!(read.len(), built.trace.jobs.len());
    for (r, b) in read.iter().zip(&built.trace.jobs) {
        assert_eq!(
            (&r.name, r.submit_ms, r.work_ms, r.priority),
            (&b.name, b.submit_ms, b.work_ms, b.priority)
        );
        assert_eq!(r.checkpoint_interval_ms, b.checkpoint_interval_ms);
    }
    assert!(
        read.iter()
            .any(|j| j.checkpoint_interval_ms == Some(300_000))
    );

    // replay --trace reads it; replay --journal replays it with the baseline first.
    let trace = dir.path().join("trace.csv");
    std::fs::write(&trace, &csv).unwrap();
    let scenario = dir.path().join("isolated.toml");
    std::fs::write(
        &scenario,
        "name = \"isolated\"\n[[capacity]]\ninstance_type = \"ml.g5.12xlarge\"\nmax = 8\n\
         [[shares]]\nname = \"research\"\nstrategy = \"RESERVE\"\nlimits = { \"ml.g5.12xlarge\" = 3 }\n\
         [[shares]]\nname = \"prod\"\nstrategy = \"RESERVE\"\nlimits = { \"ml.g5.12xlarge\" = 3 }\n\
         [[shares]]\nname = \"regulated\"\nstrategy = \"RESERVE\"\nlimits = { \"ml.g5.12xlarge\" = 2 }\n",
    )
    .unwrap();
    let scenario = scenario.to_str().unwrap();
    let (ok, out, err) = quotatop(&[
        "replay",
        "--trace",
        trace.to_str().unwrap(),
        "--config",
        scenario,
    ]);
    assert!(ok, "{err}");
    assert!(out.contains("isolated"), "{out}");
    let (ok, out, err) = quotatop(&[
        "replay",
        "--journal",
        journal,
        "--queue",
        QUEUE,
        "--since",
        "30d",
        "--preset",
    ]);
    assert!(ok, "{err}");
    assert!(err.contains("job(s) from the journal"), "{err}");
    assert!(out.contains("ml-training (journal)"), "{out}");
    assert!(out.contains("lending"), "{out}");

    // The configuration in force at --since: 30 days back is before the journal saw any, said
    // with when it first did; 2 h back is inside, and the baseline says when it was observed.
    let at_since = |since: &str| {
        quotatop(&[
            "replay",
            "--journal",
            journal,
            "--queue",
            QUEUE,
            "--since",
            since,
            "--baseline-at-since",
        ])
    };
    let (ok, _, err) = at_since("30d");
    assert!(
        !ok && err.contains("no configuration of ml-training in force at --since")
            && err.contains("the first it observed is from 2026-02-02T02:40:30Z"),
        "{err}"
    );
    let (ok, out, err) = at_since("2h");
    assert!(ok, "{err}");
    assert!(
        out.contains(
            "ml-training (journal, as at 2026-02-02T03:40:00Z; observed 2026-02-02T02:40:30Z)"
        ),
        "{out}"
    );

    // Bad input names the problem.
    let (ok, _, err) = quotatop(&[
        "journal",
        "export-trace",
        "--journal",
        journal,
        "--queue",
        "nope",
    ]);
    assert!(!ok && err.contains("has no queue \"nope\""), "{err}");
    let (ok, _, err) = quotatop(&[&export[..], &["--since", "1s"]].concat());
    assert!(
        !ok && err.contains("no job of ml-training was submitted and finished"),
        "{err}"
    );
    let (ok, _, err) = quotatop(&["replay", "--journal", journal]);
    assert!(!ok && err.contains("--queue"), "{err}");
}
