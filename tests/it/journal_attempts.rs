//! Figures that say what happened (issue 44, items 1 and 2): the demo world observed by the
//! real poller every `POLL_MS` of simulated time and journaled, then read back.
//!
//! - eval-harness (nlp, a LEND share nothing preempts) fails its first attempt with
//!   `AlgorithmError` and succeeds on the retry: a failed attempt, never a preemption, so nlp
//!   has 0 interrupted attempts and 0 lost GPU-h, and the failure is counted as failed work.
//! - The journal's preempted attempts are the engine's, one for one.
//! - An attempt preempted before it ran has no start in the journal and loses nothing: its
//!   held time is held, not running (never "measured").

use std::path::Path;
use std::process::Command;

use quotatop_analysis::scorecard::{self, AttemptEnd, Outcome, Scope, ScorecardOptions, Window};
use quotatop_aws::poll::{PollConfig, Poller};
use quotatop_emulator::{self as emulator, ClockMode, EmulatorConfig, EmulatorHandle, Scenario};
use quotatop_engine::JobId;
use quotatop_model::Millis;
use quotatop_store::journal::{Journal, JournalConfig, JournalHandle, scorecard_input};

const START: Millis = 1_770_000_000_000;
const POLL_MS: Millis = 30_000;
const RUN_MS: Millis = 3 * 3_600_000;
const QUEUE: &str = "ml-training";

/// Records the demo for `RUN_MS` into a journal at `path`; returns the emulator (still
/// running, for its own records).
async fn record_demo(path: &Path) -> EmulatorHandle {
    let scenario = Scenario::load(Path::new("scenarios/demo.toml")).unwrap();
    let mut config = EmulatorConfig::from_scenario(scenario).unwrap();
    config.clock = ClockMode::Manual;
    config.start_ms = Some(START);
    config.deterministic_ids = true;
    let emu = emulator::start(config).await.unwrap();
    let journal = JournalHandle::start(path, JournalConfig::default());
    let client = crate::data_support::batch_client(&emu).await;
    let mut poller = Poller::new(PollConfig {
        queues: vec![QUEUE.to_string()],
        ..PollConfig::default()
    });
    let mut t = 0;
    while t < RUN_MS {
        emu.advance(POLL_MS).unwrap();
        t += POLL_MS;
        assert!(
            journal.record(poller.refresh(&client).await),
            "journal queue full"
        );
    }
    journal.flush();
    assert_eq!(journal.status().unavailable, None);
    journal.shutdown();
    emu
}

/// The engine's preempted-attempt count of job `id`, and which of its attempts ever ran.
fn engine_facts(emu: &EmulatorHandle, id: &str) -> (u32, Vec<bool>) {
    emu.with_engine(|e| {
        let jid: JobId = e.find(id).unwrap();
        let preempted = e
            .job(jid)
            .and_then(|j| j.preemption)
            .map_or(0, |p| p.preempted_attempt_count);
        let ran = e
            .attempt_work(jid)
            .iter()
            .map(|w| w.running_at.is_some())
            .collect();
        (preempted, ran)
    })
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_is_not_a_preemption_and_an_attempt_that_never_ran_lost_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite3");
    let emu = record_demo(&path).await;
    let end = emu.now().unwrap();
    let opts = ScorecardOptions::default();
    let j = Journal::open_existing(&path, JournalConfig::default()).unwrap();
    let input = scorecard_input(&j, QUEUE, Window::new(START, end + 1), &opts).unwrap();

    // eval-harness: attempt 1 failed, attempt 2 succeeded.
    let eval = input
        .jobs
        .iter()
        .find(|j| j.name == "eval-harness")
        .unwrap();
    let ends: Vec<AttemptEnd> = eval.attempts.iter().map(|a| a.end).collect();
    assert_eq!(
        ends,
        [AttemptEnd::Failed, AttemptEnd::Completed],
        "{eval:?}"
    );
    assert!(matches!(eval.outcome, Outcome::Succeeded(_)));

    let mut never_ran = 0;
    for job in &input.jobs {
        let (preempted, ran) = engine_facts(&emu, &job.job_id);
        let journaled = job
            .attempts
            .iter()
            .filter(|a| a.end == AttemptEnd::Preempted)
            .count();
        assert_eq!(
            journaled, preempted as usize,
            "{}: preempted attempts",
            job.name
        );
        assert_eq!(ran.len(), job.attempts.len(), "{}: attempts", job.name);
        for (i, (a, ran)) in job.attempts.iter().zip(ran).enumerate() {
            if a.end != AttemptEnd::Preempted || ran {
                continue;
            }
            // Preempted before it ran: no start, and none of its hold is lost.
            never_ran += 1;
            assert_eq!(a.started_at, None, "{} attempt {}", job.name, i + 1);
            let alone = scorecard::JobHistory {
                attempts: vec![a.clone()],
                ..job.clone()
            };
            let l = scorecard::job_ledger(&alone, input.window, &opts);
            assert_eq!(
                (l.lost, l.lost_measured),
                (0, 0),
                "{} attempt {}",
                job.name,
                i + 1
            );
            assert_eq!(
                l.basis.measured_attempts,
                0,
                "{} attempt {}",
                job.name,
                i + 1
            );
            assert!(
                l.held_not_running > 0,
                "{} attempt {}: {l:?}",
                job.name,
                i + 1
            );
        }
    }
    assert!(never_ran >= 1, "the demo preempts attempts before they run");

    let card = scorecard::scorecard(&input, &opts);
    let nlp = card
        .shares
        .iter()
        .find(|r| r.scope == Scope::Share("nlp".into()))
        .unwrap();
    assert_eq!(nlp.waste.interrupted_attempts, 0);
    assert_eq!(nlp.waste.lost_gpu_hours, 0.0);
    assert_eq!(nlp.recovery.interrupted_jobs, 0);
    assert!(nlp.ledger.failed_attempts >= 1, "{:?}", nlp.ledger);
    assert!(nlp.ledger.failed_gpu_hours > 0.0, "{:?}", nlp.ledger);

    // `report` over the recorded journal says the same.
    let out = Command::new(env!("CARGO_BIN_EXE_quotatop"))
        .args([
            "report", "--queue", QUEUE, "--since", "4h", "--format", "csv",
        ])
        .arg("--journal")
        .arg(&path)
        .env("HOME", dir.path())
        .env_remove("XDG_DATA_HOME")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let csv = String::from_utf8(out.stdout).unwrap();
    let figure = |metric: &str| -> f64 {
        let prefix = format!("share,nlp,{metric},");
        csv.lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .unwrap_or_else(|| panic!("{prefix} in {csv}"))
            .parse()
            .unwrap()
    };
    assert_eq!(figure("interrupted_attempts"), 0.0);
    assert_eq!(figure("lost_gpu_hours"), 0.0);
    assert_eq!(figure("interrupted_jobs"), 0.0);
    assert_eq!(figure("failed_attempts"), nlp.ledger.failed_attempts as f64);
    assert!(figure("failed_gpu_hours") > 0.0);
    let md = Command::new(env!("CARGO_BIN_EXE_quotatop"))
        .args(["report", "--queue", QUEUE, "--since", "4h"])
        .arg("--journal")
        .arg(&path)
        .env("HOME", dir.path())
        .env_remove("XDG_DATA_HOME")
        .output()
        .unwrap();
    let md = String::from_utf8(md.stdout).unwrap();
    assert!(md.contains("\n- share nlp: failed attempts: "), "{md}");
    emu.shutdown().await.unwrap();
}

/// A journal written before failed attempts had a kind of their own (schema 7) recorded a
/// failed, retried attempt as `preempted` with its reason: opening it migrates that row to
/// `attempt_failed` and leaves true preemptions alone. The migration's rule is
/// `quotatop_model::says_preempted`'s, checked here on every reason the emulator gives.
#[test]
fn an_older_journals_failed_attempts_are_migrated_apart_from_preemptions() {
    use quotatop_engine::{FailureKind, PreemptionKind};
    use quotatop_store::journal::TransitionKind;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.sqlite3");
    drop(Journal::open(&path, JournalConfig::default()).unwrap());
    let reasons: Vec<&str> = [
        PreemptionKind::CrossShare,
        PreemptionKind::InShare,
        PreemptionKind::LimitReduced,
    ]
    .into_iter()
    .map(PreemptionKind::reason)
    .chain(
        [
            FailureKind::Timeout,
            FailureKind::MaxRuntime,
            FailureKind::Error,
        ]
        .into_iter()
        .map(FailureKind::reason),
    )
    .collect();
    {
        let c = rusqlite::Connection::open(&path).unwrap();
        for (i, r) in reasons.iter().enumerate() {
            c.execute(
                "INSERT INTO transitions (job_id, kind, attempt, at, exact, observed_at, reason)
                 VALUES (?1, 'preempted', 'a', 1000, 1, 1000, ?2)",
                rusqlite::params![format!("j{i}"), r],
            )
            .unwrap();
        }
        c.pragma_update(None, "user_version", 7).unwrap();
    }
    let j = Journal::open(&path, JournalConfig::default()).unwrap();
    for (i, r) in reasons.iter().enumerate() {
        let kinds: Vec<TransitionKind> = j
            .transitions(&format!("j{i}"))
            .unwrap()
            .iter()
            .map(|t| t.kind)
            .collect();
        let want = if quotatop_model::says_preempted(r) {
            TransitionKind::Preempted
        } else {
            TransitionKind::AttemptFailed
        };
        assert_eq!(kinds, [want], "{r}");
        assert_eq!(i < 3, quotatop_model::says_preempted(r), "{r}");
    }
}
