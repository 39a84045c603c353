//! Measured lost work (issue 34, slice 4): the demo world (checkpointing jobs, and
//! video-pretrain, whose checkpoints are never restored) observed by the real poller every
//! `POLL_MS` of simulated time and journaled. The poller lists each checkpointing job's
//! `CheckpointConfig.S3Uri` and reads its attempts' logs for the preemption signal and the
//! restore; the journal keeps them; the ledger measures each preempted attempt's lost work from
//! them. Every measured figure must equal the engine's own record of the attempt exactly, and
//! the totals must say how much is measured and how much modelled.

use std::path::Path;

use quotatop_analysis::scorecard::{
    self, AttemptEnd, JobHistory, RestoreVerdict, ScorecardOptions, Window, measure_attempt,
};
use quotatop_aws::poll::{PollConfig, Poller};
use quotatop_emulator::{self as emulator, ClockMode, EmulatorConfig, EmulatorHandle, Scenario};
use quotatop_engine::{AttemptWork, JobId};
use quotatop_model::Millis;
use quotatop_store::journal::{Journal, JournalConfig, JournalHandle, scorecard_input};

const START: Millis = 1_770_000_000_000;
const POLL_MS: Millis = 30_000;
const RUN_MS: Millis = 3 * 3_600_000;
const QUEUE: &str = "ml-training";

/// The engine's record of each attempt of the job `id`, by the attempt's RUNNING time.
fn engine_work(emu: &EmulatorHandle, id: &str) -> Vec<AttemptWork> {
    emu.with_engine(|e| {
        let jid: JobId = e.find(id).unwrap();
        e.attempt_work(jid).to_vec()
    })
    .unwrap()
}

struct Checked {
    measured: usize,
    /// Attempts the engine preempted before they ran (never measured).
    never_ran: usize,
    restored: usize,
    from_scratch: usize,
    modelled: usize,
}

/// Compares every measured preempted attempt of `job` with the engine's record.
fn check_job(emu: &EmulatorHandle, job: &JobHistory, end: Millis, out: &mut Checked) {
    let work = engine_work(emu, &job.job_id);
    // Every attempt the engine made is in the journal, in the same order.
    assert_eq!(work.len(), job.attempts.len(), "{}: attempts", job.name);
    for (i, (a, w)) in job.attempts.iter().zip(&work).enumerate() {
        if a.end != AttemptEnd::Preempted {
            continue;
        }
        if w.running_at.is_none() {
            // Preempted before it ran: no start (the API gives none), no log, so no signal;
            // nothing of its work to lose, nothing measured (issue 44).
            assert_eq!(
                (a.started_at, a.preempting_from),
                (None, None),
                "{} attempt {}",
                job.name,
                i + 1
            );
            out.never_ran += 1;
            continue;
        }
        let started = a.started_at.unwrap();
        assert_eq!(
            w.running_at,
            Some(started),
            "{} attempt {}",
            job.name,
            i + 1
        );
        // The demo's jobs restore at once (restart overhead 0), as the options below say.
        assert_eq!(w.overhead_ms, 0);
        let work_end = a.preempting_from.or(a.stopped_at).unwrap();
        match measure_attempt(job, i, started, work_end) {
            Some(m) => {
                out.measured += 1;
                assert_eq!(
                    Some(work_end),
                    w.stopped_at,
                    "{} attempt {}: the journal's preemption signal",
                    job.name,
                    i + 1
                );
                assert_eq!(
                    m.lost_ms(work_end),
                    w.rolled_back_ms as Millis,
                    "{} attempt {}: measured lost work vs the engine's ({:?})",
                    job.name,
                    i + 1,
                    m
                );
                match m.restore {
                    RestoreVerdict::Restored => out.restored += 1,
                    RestoreVerdict::FromScratch => out.from_scratch += 1,
                    RestoreVerdict::Unknown => unreachable!(),
                }
            }
            None => {
                out.modelled += 1;
                // Only an attempt whose successor had not run long enough to say is unknown.
                let next = job.attempts.get(i + 1).and_then(|n| n.started_at);
                assert!(
                    job.training.is_none() || next.is_none_or(|s| s > end - 5 * POLL_MS),
                    "{} attempt {}: checkpoints listed but not measured ({:?})",
                    job.name,
                    i + 1,
                    job.training
                );
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn measured_lost_work_equals_the_engines_and_totals_say_what_is_measured() {
    let scenario = Scenario::load(Path::new("scenarios/demo.toml")).unwrap();
    let mut config = EmulatorConfig::from_scenario(scenario).unwrap();
    config.clock = ClockMode::Manual;
    config.start_ms = Some(START);
    config.deterministic_ids = true;
    let emu = emulator::start(config).await.unwrap();

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite3");
    let journal = JournalHandle::start(&path, JournalConfig::default());
    let client = crate::data_support::batch_client(&emu).await;
    let mut poller = Poller::new(PollConfig {
        queues: vec![QUEUE.to_string()],
        ..PollConfig::default()
    });
    let mut t = 0;
    let mut most = 0;
    while t < RUN_MS {
        emu.advance(POLL_MS).unwrap();
        t += POLL_MS;
        let before = emu.calls("listobjectsv2") + emu.calls("filterlogevents");
        let snap = poller.refresh(&client).await;
        let made = emu.calls("listobjectsv2") + emu.calls("filterlogevents") - before;
        most = most.max(made);
        assert!(journal.record(snap), "journal queue full");
    }
    journal.flush();
    assert_eq!(journal.status().unavailable, None);
    journal.shutdown();
    // Bounded per refresh: the default budget of training reads.
    assert!(
        most <= PollConfig::default().training.calls as u64,
        "{most}"
    );
    assert!(emu.calls("listobjectsv2") > 0);

    let end = emu.now().unwrap();
    let opts = ScorecardOptions::default();
    let j = Journal::open_existing(&path, JournalConfig::default()).unwrap();
    let input = scorecard_input(&j, QUEUE, Window::new(START, end + 1), &opts).unwrap();
    let mut checked = Checked {
        measured: 0,
        never_ran: 0,
        restored: 0,
        from_scratch: 0,
        modelled: 0,
    };
    for job in &input.jobs {
        check_job(&emu, job, end, &mut checked);
    }
    let by_name = |n: &str| input.jobs.iter().find(|j| j.name == n).unwrap();
    // The checkpointing job restores; video-pretrain never does; both are measured.
    let burst = scorecard::job_ledger(by_name("research-burst"), input.window, &opts);
    let video = scorecard::job_ledger(by_name("video-pretrain"), input.window, &opts);
    assert!(burst.basis.measured_attempts >= 1, "{burst:?}");
    assert!(video.basis.measured_attempts >= 2, "{video:?}");
    assert_eq!(video.basis.label(), "measured");
    assert!(
        checked.restored >= 1 && checked.from_scratch >= 2,
        "{}",
        summary(&checked)
    );
    // The totals say how much is measured and how much modelled.
    let card = scorecard::scorecard(&input, &opts);
    let l = &card.queue_row.ledger;
    // Only attempts that ran are measured: one preempted before it ran has nothing to measure.
    assert_eq!(l.basis.measured_attempts as usize, checked.measured);
    assert!(checked.never_ran >= 1, "{}", summary(&checked));
    assert!(l.basis.modelled_attempts > 0, "{:?}", l.basis);
    assert!(l.lost_measured_gpu_hours > 0.0 && l.lost_modelled_gpu_hours() > 0.0);
    let text = l.lost_basis_text();
    assert!(
        text.contains("GPU-h measured") && text.contains("modelled over ") && !text.contains(") ("),
        "{text}"
    );
    println!("{}; queue: {text}", summary(&checked));
    let compared = storage_equals_the_emulators(&client, &j, &input.jobs, end).await;
    println!("checkpoint storage of {compared} finished jobs equal to the emulator's objects");
    emu.shutdown().await.unwrap();
}

/// Checkpoint storage attributed to a job is what its prefix holds: for each job that ended
/// well before `end` (listed again after it ended, and writing nothing since), the journal's
/// current objects and bytes equal a listing of its prefix now, and the cost is those bytes at
/// the price per GB-month (2^30 bytes). Returns how many jobs were compared.
async fn storage_equals_the_emulators(
    client: &quotatop_aws::batch::BatchClient,
    journal: &Journal,
    jobs: &[JobHistory],
    end: Millis,
) -> usize {
    let price = 0.023;
    let listed = scorecard::jobs_storage(jobs, Some(price));
    let mut compared = 0;
    for job in jobs {
        let ended = match job.outcome {
            scorecard::Outcome::Succeeded(t) | scorecard::Outcome::Failed(t) => t,
            scorecard::Outcome::Open => continue,
        };
        if ended > end - 20 * 60_000 {
            continue;
        }
        let Some(t) = journal.job_training(&job.job_id).unwrap() else {
            continue;
        };
        let (uri, _) = t.listing.clone().unwrap();
        let now = client.list_checkpoints(&uri, 1000).await.unwrap();
        let bytes: u64 = now.objects.iter().map(|o| o.size).sum();
        let s = listed.iter().find(|s| s.job_id == job.job_id).unwrap();
        assert_eq!(
            (s.storage.objects, s.storage.bytes, s.storage.truncated),
            (now.objects.len() as u64, bytes, false),
            "{}: the journal's current checkpoint objects vs the prefix's",
            job.name
        );
        assert_eq!(
            s.storage.cost_per_month,
            Some(bytes as f64 / 1_073_741_824.0 * price)
        );
        compared += 1;
    }
    assert!(
        compared >= 3,
        "only {compared} finished jobs with checkpoints"
    );
    compared
}

fn summary(c: &Checked) -> String {
    format!(
        "{} preempted attempts measured ({} restored, {} from scratch; and {} that never ran), {} modelled",
        c.measured, c.restored, c.from_scratch, c.never_ran, c.modelled
    )
}

/// A checkpoint prefix or log group that refuses (access denied) is asked once, not at every
/// refresh: the error is reported, the reads stop, the poll goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_prefix_or_log_group_is_not_asked_again() {
    let scenario = Scenario::load(Path::new("scenarios/demo.toml")).unwrap();
    let mut config = EmulatorConfig::from_scenario(scenario).unwrap();
    config.clock = ClockMode::Manual;
    config.start_ms = Some(START);
    config.faults =
        quotatop_emulator::FaultSpec::parse("listobjectsv2:deny=1;filterlogevents:deny=1").unwrap();
    let emu = emulator::start(config).await.unwrap();
    let client = crate::data_support::batch_client(&emu).await;
    let mut poller = Poller::new(PollConfig {
        queues: vec![QUEUE.to_string()],
        ..PollConfig::default()
    });
    let mut errors = 0;
    for _ in 0..40 {
        emu.advance(POLL_MS).unwrap();
        let snap = poller.refresh(&client).await;
        assert_eq!(snap.queues[0].stale_reason, None);
        assert!(snap.queues[0].training.is_empty());
        errors += usize::from(snap.health.last_error.is_some());
    }
    let jobs = emu.with_engine(|e| e.jobs().count()).unwrap() as u64;
    // Each job's prefix at most once; the log group once.
    assert!(
        emu.calls("listobjectsv2") <= jobs,
        "{} listings",
        emu.calls("listobjectsv2")
    );
    assert!(emu.calls("listobjectsv2") > 0);
    assert!(emu.calls("filterlogevents") <= 1);
    assert!(errors > 0, "the refusal was never reported");
    emu.shutdown().await.unwrap();
}

/// How long a restore took, measured (issue 34): the demo with restores that take time
/// (research-burst 90 s, the research sweeps 45 s: the engine's restart overhead, and the
/// training log's restore line that long after the re-run's start), recorded by the real poller
/// and journaled. Each re-run whose log said it restored has a measured restore equal to the
/// engine's own overhead for that attempt, to the millisecond; the rest are modelled, and
/// recovery reliability says how many of each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn measured_restores_equal_the_engines_restart_overhead() {
    let mut scenario = Scenario::load(Path::new("scenarios/demo.toml")).unwrap();
    for j in scenario
        .jobs
        .iter_mut()
        .filter(|j| j.name == "research-burst")
    {
        j.restore_s = Some(90);
    }
    for s in scenario.shares.iter_mut().filter(|s| s.name == "research") {
        for g in &mut s.generators {
            g.restore_s = Some(45);
        }
    }
    let mut config = EmulatorConfig::from_scenario(scenario).unwrap();
    config.clock = ClockMode::Manual;
    config.start_ms = Some(START);
    config.deterministic_ids = true;
    let emu = emulator::start(config).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite3");
    let journal = JournalHandle::start(&path, JournalConfig::default());
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
    journal.shutdown();
    let end = emu.now().unwrap();
    let opts = ScorecardOptions::default();
    let j = Journal::open_existing(&path, JournalConfig::default()).unwrap();
    let input = scorecard_input(&j, QUEUE, Window::new(START, end + 1), &opts).unwrap();
    let (mut measured, mut modelled, mut nonzero) = (0, 0, 0);
    let mut burst = None;
    for job in &input.jobs {
        let work = engine_work(&emu, &job.job_id);
        assert_eq!(work.len(), job.attempts.len(), "{}: attempts", job.name);
        let restart = scorecard::restart_cost_ms(job, &opts);
        for (i, w) in work.iter().enumerate() {
            let Some(r) = scorecard::restore_time(job, i, restart) else {
                continue;
            };
            if !r.measured {
                modelled += 1;
                continue;
            }
            measured += 1;
            nonzero += usize::from(r.ms > 0);
            assert_eq!(
                r.ms,
                w.overhead_ms as Millis,
                "{} attempt {}: measured restore vs the engine's",
                job.name,
                i + 1
            );
            if job.name == "research-burst" {
                burst = Some(r.ms);
            }
        }
    }
    assert_eq!(burst, Some(90_000), "research-burst's measured restore");
    assert!(measured >= 3 && nonzero == measured, "{measured} measured");
    assert!(modelled > 0, "video-pretrain's re-runs never restore");
    // Recovery reliability reports them, labelled; the ledger's overhead uses the same figure.
    let card = scorecard::scorecard(&input, &opts);
    let r = card.queue_row.recovery.restores;
    assert_eq!(r.measured as usize, measured, "{r:?}");
    let label = r.label();
    assert!(
        label.starts_with("restore measured ") && label.contains("; modelled 0s restart cost"),
        "{label}"
    );
    println!("{measured} restores measured, {modelled} modelled; queue: {label}");
    emu.shutdown().await.unwrap();
}
