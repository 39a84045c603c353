//! The soak driver: the real poller and journal (as `quotatop record` wires them) against the
//! emulator child, with the world moving and faults on, then the world frozen and faults off
//! until the snapshot equals the engine, for a number of cycles; meanwhile resident memory is
//! sampled and every snapshot checked on arrival.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use quotatop_aws::batch::{BatchClient, ConnectOptions, StaticCredentials};
use quotatop_aws::poll::{self, PollConfig};
use quotatop_model::{HealthState, Snapshot};
use quotatop_store::journal::{JournalConfig, JournalHandle, JournalStatus};
use tokio::sync::watch;

use super::child::EmulatorChild;
use super::compare::differences;
use super::procfs::{RssSeries, cpu_time, memory_kib};

/// How long and how hard to soak.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Clean start with the world moving.
    pub warm_up: Duration,
    pub cycles: u32,
    /// Per cycle: world moving, faults on.
    pub faulted: Duration,
    /// Per cycle: world frozen, faults off; the snapshot must equal the engine within this.
    pub recovery_limit: Duration,
    /// Simulated milliseconds per real millisecond while the world moves.
    pub speed: f64,
    /// Fault spec while faulted (`seed=` is appended per cycle).
    pub faults: String,
    pub poll: PollConfig,
}

/// What a soak measured.
#[derive(Debug, Default)]
pub struct Report {
    pub elapsed: Duration,
    pub received: u64,
    /// Sequence numbers that did not follow the previous one: (previous, got).
    pub gaps: Vec<(u64, u64)>,
    pub journal: JournalStatus,
    pub journal_bytes: u64,
    pub faulted_snapshots: u64,
    /// Snapshots under faults whose queue carried a `stale_reason`.
    pub stale_snapshots: u64,
    /// Snapshots under faults whose health was not `Healthy`.
    pub unhealthy_snapshots: u64,
    /// A stale queue reported with health `Healthy` (must not happen).
    pub stale_but_healthy: u64,
    /// A snapshot that lost the jobs an earlier one had (must not happen).
    pub lost_jobs: u64,
    /// Jobs that went missing from a snapshot and had finished by the end (pruned finished
    /// jobs, or lost while active: the soak cannot tell these apart).
    pub missing_then_finished: u64,
    /// Oldest `described_at` of an active job under faults, against `taken_at`.
    pub max_described_age_faulted: Duration,
    pub health_seen: BTreeSet<String>,
    /// Per cycle: time from faults off to a snapshot equal to the engine, or what still differed.
    pub recoveries: Vec<Result<Duration, Vec<String>>>,
    pub rss: RssSeries,
    /// Memory samples up to here are the warm-up (the clean start and the first cycle).
    pub warm_up_end: Duration,
    pub peak_rss_kib: u64,
    pub cpu: Duration,
    pub emulator_peak_rss_kib: u64,
    pub emulator_cpu: Duration,
    pub jobs_total: usize,
    pub simulated: Duration,
    pub faults_injected: (u64, u64, u64, u64),
}

const WARMING: u8 = 0;
const FAULTED: u8 = 1;
const RECOVERING: u8 = 2;

#[derive(Default)]
struct Seen {
    received: u64,
    last_seq: Option<u64>,
    gaps: Vec<(u64, u64)>,
    faulted: u64,
    stale: u64,
    unhealthy: u64,
    stale_but_healthy: u64,
    /// Jobs active in one snapshot and missing from the next. A job that finished in between
    /// may be gone legitimately (the poller keeps only the newest finished jobs); one that is
    /// still active at the end of the run was lost while active (jobs never leave a terminal
    /// status), which [`run`] counts.
    missing: std::collections::HashSet<String>,
    /// The active jobs of the previous snapshot.
    prev_active: std::collections::HashSet<String>,
    max_age_ms: i64,
    health: BTreeSet<String>,
}

impl Seen {
    fn check(&mut self, s: &Snapshot, phase: u8) {
        self.received += 1;
        if let Some(prev) = self.last_seq
            && s.sequence != prev + 1
        {
            self.gaps.push((prev, s.sequence));
        }
        self.last_seq = Some(s.sequence);
        self.health.insert(format!("{:?}", s.health.state));
        let Some(q) = s.queues.first() else { return };
        // Each job active in the previous snapshot must be in this one (checked job by job,
        // not only "the list is not empty"); see `missing`.
        let ids: std::collections::HashSet<&str> =
            q.jobs.iter().map(|j| j.job.id.as_str()).collect();
        for id in &self.prev_active {
            if !ids.contains(id.as_str()) {
                self.missing.insert(id.clone());
            }
        }
        self.prev_active = q
            .jobs
            .iter()
            .filter(|j| !j.job.status.is_terminal())
            .map(|j| j.job.id.clone())
            .collect();
        if q.stale_reason.is_some() && s.health.state == HealthState::Healthy {
            self.stale_but_healthy += 1;
        }
        if phase == FAULTED {
            self.faulted += 1;
            self.stale += u64::from(q.stale_reason.is_some());
            self.unhealthy += u64::from(s.health.state != HealthState::Healthy);
            for j in q.jobs.iter().filter(|j| !j.job.status.is_terminal()) {
                if let Some(d) = j.described_at {
                    self.max_age_ms = self.max_age_ms.max(s.taken_at - d);
                }
            }
        }
    }
}

async fn client(endpoint: &str) -> BatchClient {
    BatchClient::connect(ConnectOptions {
        profile: None,
        region: Some("us-east-1".into()),
        endpoint_url: Some(endpoint.to_string()),
        credentials: Some(StaticCredentials {
            access_key_id: "AKIDSOAK".into(),
            secret_access_key: "soak-secret".into(),
        }),
    })
    .await
    .unwrap()
}

/// Runs the soak; `child_test` is the test that serves the emulator in the child process.
pub async fn run(plan: &Plan, child_test: &str, dir: &Path) -> Report {
    let started = Instant::now();
    let emu = EmulatorChild::spawn(child_test);
    let journal_path = dir.join("journal.sqlite3");
    let journal = Arc::new(JournalHandle::start(
        &journal_path,
        JournalConfig::default(),
    ));
    assert_eq!(journal.status().unavailable, None);
    let mut poller = poll::spawn(client(&emu.endpoint).await, plan.poll.clone());

    // Every snapshot: checked, journaled, and published for the recovery check.
    let phase = Arc::new(AtomicU8::new(WARMING));
    let seen = Arc::new(Mutex::new(Seen::default()));
    let (latest_tx, mut latest) = watch::channel::<Option<Arc<Snapshot>>>(None);
    let receiver = {
        let (phase, seen, journal) = (phase.clone(), seen.clone(), journal.clone());
        let mut snapshots =
            std::mem::replace(&mut poller.snapshots, tokio::sync::mpsc::channel(1).1);
        tokio::spawn(async move {
            while let Some(s) = snapshots.recv().await {
                seen.lock().unwrap().check(&s, phase.load(Ordering::SeqCst));
                journal.record(s.clone());
                let _ = latest_tx.send(Some(Arc::new(s)));
            }
        })
    };

    // The world's clock, moving while `moving` is set.
    let moving = Arc::new(AtomicBool::new(true));
    let paused = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let tick = Duration::from_millis(100);
    let clock = {
        let (emu, moving, paused, stop) =
            (emu.clone(), moving.clone(), paused.clone(), stop.clone());
        let step = (plan.speed * tick.as_millis() as f64) as i64;
        tokio::spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                if moving.load(Ordering::SeqCst) {
                    paused.store(false, Ordering::SeqCst);
                    emu.advance(step).await;
                } else {
                    paused.store(true, Ordering::SeqCst);
                }
                tokio::time::sleep(tick).await;
            }
        })
    };

    // Resident memory of this process (the poller and the journal) every 250 ms.
    let rss = Arc::new(Mutex::new(RssSeries::default()));
    let sampler = {
        let (rss, stop) = (rss.clone(), stop.clone());
        tokio::spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                if let Some((kib, _)) = memory_kib("self") {
                    rss.lock().unwrap().push(started.elapsed(), kib);
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        })
    };

    let mut report = Report::default();
    let t0 = emu.truth().await.now;
    tokio::time::sleep(plan.warm_up).await;
    for cycle in 0..plan.cycles {
        emu.set_faults(&format!("{},seed={}", plan.faults, cycle + 1))
            .await;
        phase.store(FAULTED, Ordering::SeqCst);
        tokio::time::sleep(plan.faulted).await;

        // Freeze the world, stop the faults, and wait for the truth to show.
        phase.store(RECOVERING, Ordering::SeqCst);
        moving.store(false, Ordering::SeqCst);
        while !paused.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        emu.set_faults("").await;
        let off = Instant::now();
        let truth = emu.truth().await;
        let mut last = vec!["no snapshot".to_string()];
        let mut outcome = None;
        while off.elapsed() < plan.recovery_limit {
            let left = plan.recovery_limit.saturating_sub(off.elapsed());
            if tokio::time::timeout(left, latest.changed()).await.is_err() {
                break;
            }
            let Some(s) = latest.borrow_and_update().clone() else {
                continue;
            };
            last = differences(&s, &truth);
            if last.is_empty() && s.health.state == HealthState::Healthy {
                outcome = Some(off.elapsed());
                break;
            }
        }
        report.recoveries.push(outcome.ok_or(last));
        if cycle == 0 {
            report.warm_up_end = started.elapsed();
        }
        phase.store(WARMING, Ordering::SeqCst);
        moving.store(true, Ordering::SeqCst);
    }

    // Figures, then an orderly stop.
    let truth = emu.truth().await;
    report.jobs_total = truth.jobs_total;
    report.simulated = Duration::from_millis((truth.now - t0).max(0) as u64);
    report.faults_injected = (
        truth.delayed,
        truth.throttled,
        truth.server_errors,
        truth.dropped,
    );
    if let Some((_, hwm)) = memory_kib(&emu.pid) {
        report.emulator_peak_rss_kib = hwm;
    }
    report.emulator_cpu = cpu_time(&emu.pid).unwrap_or_default();
    stop.store(true, Ordering::SeqCst);
    clock.await.unwrap();
    sampler.await.unwrap();
    poller.shutdown().await;
    receiver.await.unwrap();
    // The world is frozen and the poller stopped: a job that went missing from a snapshot and
    // is active now was active when it went missing.
    let end = emu.truth().await;
    let journal = Arc::into_inner(journal).expect("the receiver is done");
    journal.flush();
    report.journal = journal.status();
    journal.shutdown();
    report.journal_bytes = std::fs::metadata(&journal_path).map_or(0, |m| m.len());
    emu.quit().await;

    let seen = std::mem::take(&mut *seen.lock().unwrap());
    report.received = seen.received;
    report.gaps = seen.gaps;
    report.faulted_snapshots = seen.faulted;
    report.stale_snapshots = seen.stale;
    report.unhealthy_snapshots = seen.unhealthy;
    report.stale_but_healthy = seen.stale_but_healthy;
    report.lost_jobs = end
        .active
        .iter()
        .filter(|j| seen.missing.contains(&j.id))
        .count() as u64;
    report.missing_then_finished = seen.missing.len() as u64 - report.lost_jobs;
    report.max_described_age_faulted = Duration::from_millis(seen.max_age_ms.max(0) as u64);
    report.health_seen = seen.health;
    report.rss = std::mem::take(&mut *rss.lock().unwrap());
    report.peak_rss_kib = memory_kib("self").map_or(0, |(_, hwm)| hwm);
    report.cpu = cpu_time("self").unwrap_or_default();
    report.elapsed = started.elapsed();
    report
}
