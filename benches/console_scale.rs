//! The console process at scale (issue 20): resident memory and frame time with `QT_JOBS` jobs
//! (default 50,000) without polling them over the wire. A realistic world (20 quota shares over
//! three instance types, jobs in every active status plus recently finished ones, preemption
//! summaries and attempts as DescribeServiceJob gives them) is built in memory and held as the
//! console process holds it: the poller's copy (a `QueueTracker` seeded with it, as a warm start
//! seeds it), the snapshot the poller hands over (moved into the console) and the console's own
//! state after applying it. Measured in a fresh child process (the bench runs itself again with
//! `QT_SCALE_CHILD` set): `VmRSS`/`VmHWM`, the frame time (median and p95 of `QT_FRAMES`, default
//! 100, draws at 160×50) of each main screen, and the cost of a refresh (the poller building its
//! snapshot; the console deriving its analysis and the Jobs rows off the UI thread, then swapping
//! them in and drawing on the UI thread (the snapshot replaced freed on another thread, as the
//! console's loop does), the figure a key pressed during a refresh waits for; and, to compare, the
//! same applied with the analysis derived on the UI thread). Like `quotatop tui`, the child fixes glibc's mmap
//! threshold first (`QT_MMAP_FIX=0` leaves it alone, to compare).
//!
//! ```sh
//! QT_JOBS=50000 cargo bench --bench console_scale
//! ```

// Benchmarks are test code: a broken setup should stop the run loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// Test code may be longer than the 80 lines denied to the libraries and binaries.
#![allow(clippy::too_many_lines)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use quotatop_analysis::LoopRule;
use quotatop_aws::batch::JobQueueInfo;
use quotatop_aws::poll::{QueueInfo, QueueTracker};
use quotatop_model::{
    Attempt, CapacityLimit, FrontEntry, JobStatus, PreemptedAttempt, PreemptionSummary,
    QueueSnapshot, QuotaShare, ServiceEnvironment, ServiceJob, SharingConfig, Snapshot, TrackedJob,
};
use quotatop_tui::data::{Data, Prepared};
use quotatop_tui::keymap::KeyMap;
use quotatop_tui::theme::Theme;
use quotatop_tui::{App, AppOptions, Msg, StatusInfo};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

const NOW: i64 = 1_770_000_000_000;
const TYPES: [&str; 3] = ["ml.p4d.24xlarge", "ml.g5.12xlarge", "ml.g5.2xlarge"];
const SHARES: usize = 20;
const ACCOUNT: &str = "123456789012";
const REGION: &str = "us-east-1";

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(default)
}

/// A deterministic pseudo-random stream (splitmix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn uuid(rng: &mut Rng) -> String {
    let a = rng.next();
    let b = rng.next();
    format!(
        "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        b >> 52,
        b & 0xffff_ffff_ffff
    )
}

fn share_name(s: usize) -> String {
    format!("team-{:02}", s + 1)
}

/// A status as a large queue holds them: mostly waiting, a running set bounded by capacity,
/// some in passage, some recently finished.
fn status(rng: &mut Rng) -> JobStatus {
    match rng.below(100) {
        0..=2 => JobStatus::Submitted,
        3..=5 => JobStatus::Pending,
        6..=71 => JobStatus::Runnable,
        72..=74 => JobStatus::Scheduled,
        75..=77 => JobStatus::Starting,
        78..=93 => JobStatus::Running,
        94..=97 => JobStatus::Succeeded,
        _ => JobStatus::Failed,
    }
}

fn preempted(rng: &mut Rng, job: &str, at: i64, n: u32) -> PreemptionSummary {
    let recent = (0..n.min(5))
        .map(|k| {
            let started_at = at + i64::from(k) * 900_000;
            PreemptedAttempt {
                resource_id: format!(
                    "arn:aws:sagemaker:{REGION}:{ACCOUNT}:training-job/{job}-{k}-{:06x}",
                    rng.below(1 << 24)
                ),
                started_at: Some(started_at),
                stopped_at: started_at + 600_000,
                status_reason: if rng.below(2) == 0 {
                    "Preempted by higher priority job in share".into()
                } else {
                    "Capacity reclaimed by lending quota share".into()
                },
            }
        })
        .collect();
    PreemptionSummary {
        preempted_attempt_count: n,
        recent_preempted_attempts: recent,
    }
}

fn job(rng: &mut Rng, i: usize, n: usize) -> TrackedJob {
    let s = i % SHARES;
    let ty = TYPES[s % TYPES.len()];
    let id = uuid(rng);
    let name = format!("{}-job-{:05}", share_name(s), i / SHARES);
    let status = status(rng);
    // Created over the last few days, oldest first.
    let created_at = NOW - ((n - i) as i64) * 9_000 - rng.below(5_000) as i64;
    let holds = status.holds_capacity() || status.is_terminal();
    let scheduled_at = holds.then(|| created_at + 60_000 + rng.below(3_600_000) as i64);
    let started_at = matches!(status, JobStatus::Running)
        .then(|| scheduled_at.unwrap_or(created_at) + 30_000)
        .or_else(|| {
            status
                .is_terminal()
                .then(|| scheduled_at.unwrap_or(created_at) + 30_000)
        });
    let stopped_at = status
        .is_terminal()
        .then(|| started_at.unwrap_or(created_at) + 300_000 + rng.below(600_000) as i64);
    // One job in eight has been preempted; a few of those repeatedly (loops).
    let preemptions = if rng.below(8) == 0 {
        if rng.below(10) == 0 {
            4 + rng.below(6) as u32
        } else {
            1 + rng.below(2) as u32
        }
    } else {
        0
    };
    let preemption = (preemptions > 0).then(|| preempted(rng, &name, created_at, preemptions));
    let mut attempts: Vec<Attempt> = Vec::new();
    if started_at.is_some() || preemptions > 0 {
        for k in 0..=preemptions.min(4) {
            let at = created_at + 60_000 + i64::from(k) * 900_000;
            let last = k == preemptions.min(4);
            attempts.push(Attempt {
                resource_id: format!(
                    "arn:aws:sagemaker:{REGION}:{ACCOUNT}:training-job/{name}-{k}-{:06x}",
                    rng.below(1 << 24)
                ),
                started_at: Some(at),
                stopped_at: (!last || status.is_terminal()).then_some(at + 600_000),
                status_reason: (!last).then(|| "Preempted".to_string()),
            });
        }
    }
    TrackedJob {
        arn: format!("arn:aws:batch:{REGION}:{ACCOUNT}:service-job/{id}"),
        job: std::sync::Arc::new(ServiceJob {
            id,
            name,
            share: share_name(s),
            priority: [1, 1, 1, 10, 50][rng.below(5) as usize],
            instance_type: ty.into(),
            instance_count: [1, 1, 2, 4][rng.below(4) as usize],
            status,
            status_reason: match status {
                JobStatus::Failed => Some("Essential container in task exited".into()),
                JobStatus::Runnable if preemptions > 0 => {
                    Some("Preempted by higher priority job in share".into())
                }
                _ => None,
            },
            created_at,
            scheduled_at,
            started_at,
            stopped_at,
            preemption_retries: Some(5),
            checkpoint_interval_ms: s.is_multiple_of(3).then_some(120_000),
            class_tag: None,
            preemption,
            attempts,
            is_terminated: false,
            extras: Default::default(),
        }),
        described_at: Some(NOW - rng.below(60_000) as i64),
        listed_at: NOW - rng.below(20_000) as i64,
    }
}

/// The world: one queue of `n` jobs over 20 shares.
fn world(n: usize) -> (QueueInfo, QueueSnapshot) {
    let mut rng = Rng(20);
    let shares: Vec<QuotaShare> = (0..SHARES)
        .map(|s| {
            let sharing = match s % 3 {
                0 => SharingConfig::lend_and_borrow(100),
                1 => SharingConfig::lend(),
                _ => SharingConfig::reserve(),
            };
            QuotaShare::new(
                share_name(s),
                vec![CapacityLimit::new(TYPES[s % TYPES.len()], 60)],
                sharing,
            )
            .with_in_share_preemption(s.is_multiple_of(3))
        })
        .collect();
    let jobs: Vec<TrackedJob> = (0..n).map(|i| job(&mut rng, i, n)).collect();
    let mut utilization: BTreeMap<String, BTreeMap<String, f64>> = BTreeMap::new();
    for j in jobs.iter().filter(|j| j.job.status.holds_capacity()) {
        *utilization
            .entry(j.job.share.clone())
            .or_default()
            .entry(j.job.instance_type.clone())
            .or_default() += f64::from(j.job.instance_count);
    }
    let runnable: Vec<&TrackedJob> = jobs
        .iter()
        .filter(|j| j.job.status == JobStatus::Runnable)
        .collect();
    let front = |j: &&TrackedJob| FrontEntry {
        job_arn: j.arn.clone(),
        earliest_time_at_position: Some(j.job.created_at),
    };
    // GetJobQueueSnapshot gives the first 100 of the queue and the first few of each share.
    let front_of_queue = runnable.iter().take(100).map(front).collect();
    let mut front_of_shares: BTreeMap<String, Vec<FrontEntry>> = BTreeMap::new();
    for j in &runnable {
        let v = front_of_shares.entry(j.job.share.clone()).or_default();
        if v.len() < 5 {
            v.push(front(j));
        }
    }
    let name = "scale-training".to_string();
    let arn = format!("arn:aws:batch:{REGION}:{ACCOUNT}:job-queue/{name}");
    let environment = ServiceEnvironment {
        name: "scale-sagemaker".into(),
        capacity: TYPES.iter().map(|t| CapacityLimit::new(*t, 400)).collect(),
    };
    let policy = format!("arn:aws:batch:{REGION}:{ACCOUNT}:scheduling-policy/scale-quota");
    let info = QueueInfo {
        queue: JobQueueInfo {
            name: name.clone(),
            arn: arn.clone(),
            state: "ENABLED".into(),
            status: "VALID".into(),
            status_reason: None,
            queue_type: Some("SAGEMAKER_TRAINING".into()),
            scheduling_policy_arn: Some(policy.clone()),
            service_environments: vec![format!(
                "arn:aws:batch:{REGION}:{ACCOUNT}:service-environment/scale-sagemaker"
            )],
        },
        environment: environment.clone(),
    };
    let q = QueueSnapshot {
        name,
        arn,
        state: "ENABLED".into(),
        status: "VALID".into(),
        scheduling_policy_arn: Some(policy),
        environment,
        shares,
        jobs,
        front_of_queue,
        front_of_shares,
        utilization,
        server_time: Some(NOW),
        refreshed_at: Some(NOW),
        ..QueueSnapshot::default()
    };
    (info, q)
}

#[path = "support/memory.rs"]
mod memory;
use memory::memory_mb;

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// `(median, p95)` of `v`.
fn stats(mut v: Vec<Duration>) -> (Duration, Duration) {
    v.sort();
    let p95 = ((v.len() * 95).div_ceil(100)).clamp(1, v.len()) - 1;
    (v[v.len() / 2], v[p95])
}

fn frames(app: &mut App, terminal: &mut Terminal<TestBackend>, n: usize) -> (Duration, Duration) {
    // One unmeasured frame first: a screen's first draw after a change may build its rows.
    terminal.draw(|f| app.draw(f)).expect("draw");
    let v = (0..n)
        .map(|_| {
            let t = Instant::now();
            terminal.draw(|f| app.draw(f)).expect("draw");
            t.elapsed()
        })
        .collect();
    stats(v)
}

fn key(code: KeyCode) -> Msg {
    Msg::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

fn snapshot(tracker: &QueueTracker, sequence: u64) -> Snapshot {
    Snapshot {
        taken_at: NOW,
        sequence,
        queues: vec![tracker.snapshot()],
        ..Snapshot::default()
    }
}

fn child() {
    let n = env_usize("QT_JOBS", 50_000);
    let draws = env_usize("QT_FRAMES", 100).max(1);
    let refreshes = env_usize("QT_REFRESHES", 10).max(1);
    // As the console's run does at start (`QT_MMAP_FIX=0`: without, to compare).
    if std::env::var("QT_MMAP_FIX").map_or(true, |v| v != "0") {
        quotatop_replay::fix_mmap_threshold();
    }
    let (rss0, _) = memory_mb();
    // The poller's copy: a tracker seeded with the world (the journaled queue is dropped after).
    let (info, q) = world(n);
    let (rss_world, _) = memory_mb();
    let tracker = QueueTracker::seeded(&info, &q);
    let (rss_both, _) = memory_mb();
    drop(q);
    let (rss_tracker, _) = memory_mb();
    let mut app = App::new(AppOptions {
        theme: Theme::dark(),
        no_color: false,
        theme_dir: None,
        keymap: KeyMap::default(),
        status: StatusInfo::default(),
        queue: None,
        loop_rule: LoopRule::default(),
        clock: Box::new(|| NOW),
        warnings: Vec::new(),
        door: Default::default(),
        storage_price: Default::default(),
    });
    let mut terminal = Terminal::new(TestBackend::new(160, 50)).expect("test backend");
    let first = snapshot(&tracker, 1);
    let (rss_snapshot, _) = memory_mb();
    app.update(Msg::Snapshot(Box::new(first)));
    terminal.draw(|f| app.draw(f)).expect("draw");
    let (rss_first, _) = memory_mb();

    // Refreshes: the poller builds its snapshot, the console applies it (on the Jobs screen,
    // the heaviest), as every refresh does: its analysis derived off the UI thread (as the
    // console's loop does on a blocking thread), then swapped in and drawn on the UI thread. The
    // same snapshot applied the old way (derived on the UI thread) is measured beside it.
    app.update(key(KeyCode::Char('2')));
    let mut build = Vec::new();
    let mut derive = Vec::new();
    let mut ui = Vec::new();
    let mut update = Vec::new();
    let mut frame = Vec::new();
    let mut inline = Vec::new();
    // As the loop does: the snapshot a prepared one replaced is freed on another thread once
    // the frame showing the new one is drawn.
    let (retire, retired) = std::sync::mpsc::channel::<quotatop_tui::data::Retired>();
    let freer = std::thread::spawn(move || retired.into_iter().for_each(drop));
    for seq in 0..refreshes {
        // The old way first (so the screens then show the prepared snapshot's rows): its
        // analysis derived on the UI thread; a large queue's Jobs rows are then asked for off
        // it (the work not run here).
        let snap = snapshot(&tracker, 2 + seq as u64);
        let t = Instant::now();
        app.update(Msg::Snapshot(Box::new(snap)));
        terminal.draw(|f| app.draw(f)).expect("draw");
        inline.push(t.elapsed());
        let _ = app.take_effects();
        let t = Instant::now();
        let snap = snapshot(&tracker, 2 + seq as u64);
        build.push(t.elapsed());
        let t = Instant::now();
        let prepared = Prepared::new(snap, &app.derive_inputs(), 1 + seq as u64);
        derive.push(t.elapsed());
        let t = Instant::now();
        app.update(Msg::Prepared(Box::new(prepared)));
        let old = app.take_retired();
        let updated = t.elapsed();
        terminal.draw(|f| app.draw(f)).expect("draw");
        let whole = t.elapsed();
        if let Some(old) = old {
            retire.send(old).expect("the freeing thread");
        }
        ui.push(whole);
        update.push(updated);
        frame.push(whole - updated);
        let _ = app.take_effects();
    }
    drop(retire);
    freer.join().expect("the freeing thread");
    let (rss_steady, _) = memory_mb();
    let (build, build95) = stats(build);
    let (derive, derive95) = stats(derive);
    let (ui, ui95) = stats(ui);
    let (update, _) = stats(update);
    let (frame, _) = stats(frame);
    let (inline, inline95) = stats(inline);

    let mut results = Vec::new();
    let mut measure = |app: &mut App, terminal: &mut Terminal<TestBackend>| {
        let kind = app.screen_kind();
        let (med, p95) = frames(app, terminal, draws);
        results.push((format!("{kind:?}"), med, p95));
    };
    app.update(key(KeyCode::Char('1')));
    measure(&mut app, &mut terminal);
    // The first share row of the overview (its first rows may be queues).
    for _ in 0..5 {
        app.update(key(KeyCode::Enter));
        if format!("{:?}", app.screen_kind()) == "Share" {
            break;
        }
        app.update(key(KeyCode::Char('1')));
        app.update(key(KeyCode::Down));
    }
    measure(&mut app, &mut terminal);
    app.update(key(KeyCode::Char('2')));
    measure(&mut app, &mut terminal);
    app.update(key(KeyCode::Enter));
    measure(&mut app, &mut terminal);
    app.update(key(KeyCode::Char('3')));
    measure(&mut app, &mut terminal);

    let (rss, hwm) = memory_mb();
    // After the memory figures (it holds one more console's data): the swap alone.
    let (swap, freed) = swap_parts(&tracker, refreshes);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load: Vec<&str> = load.split_whitespace().take(3).collect();
    println!(
        "console at {n} jobs (20 shares, 160×50, load average {}):",
        load.join(" ")
    );
    println!(
        "  resident {rss:.1} MB, peak {hwm:.1} MB (before the world {rss0:.1} MB, after the first \
         snapshot {rss_first:.1} MB)"
    );
    println!(
        "  resident by stage: world {rss_world:.1}, + tracker {rss_both:.1}, world dropped \
         {rss_tracker:.1}, + snapshot {rss_snapshot:.1}, applied {rss_first:.1}, after \
         {refreshes} refreshes {rss_steady:.1} MB"
    );
    println!(
        "  refresh: poller's snapshot {:.1} ms (p95 {:.1}); analysis off the UI thread {:.1} ms \
         (p95 {:.1}); UI thread per refresh (swap in + frame) {:.1} ms (p95 {:.1}); derived on \
         the UI thread instead (apply + frame, the Jobs rows then asked for off it) {:.1} ms \
         (p95 {:.1}); medians of {refreshes}",
        ms(build),
        ms(build95),
        ms(derive),
        ms(derive95),
        ms(ui),
        ms(ui95),
        ms(inline),
        ms(inline95)
    );
    println!(
        "  UI thread's part: app update {:.1} ms (of it the data swap {:.1} ms; the old snapshot \
         and analysis, {:.1} ms to free, are freed on another thread; the rest is the screens' \
         refresh, the Jobs rows taken as derived), frame {:.1} ms; medians of {refreshes}",
        ms(update),
        ms(swap),
        ms(freed),
        ms(frame)
    );
    for (kind, med, p95) in &results {
        println!(
            "  frame {kind:<12} median {:.3} ms, p95 {:.3} ms ({draws} draws)",
            ms(*med),
            ms(*p95)
        );
    }
}

/// The UI thread's swap alone (`Data::apply_prepared` on a console's data without screens,
/// freeing the previous snapshot and analysis as it does) and that freeing alone (a prepared
/// snapshot dropped): medians of `refreshes`.
fn swap_parts(tracker: &QueueTracker, refreshes: usize) -> (Duration, Duration) {
    let mut data = Data::default();
    data.apply(snapshot(tracker, 100));
    let mut swap = Vec::new();
    let mut freed = Vec::new();
    for seq in 0..refreshes as u64 {
        let spare = Prepared::new(snapshot(tracker, 101 + seq), &data.inputs(), 1);
        let t = Instant::now();
        drop(spare);
        freed.push(t.elapsed());
        let prepared = Prepared::new(snapshot(tracker, 101 + seq), &data.inputs(), 1 + seq);
        let t = Instant::now();
        data.apply_prepared(prepared);
        let old = data.take_retired();
        swap.push(t.elapsed());
        drop(old);
    }
    (stats(swap).0, stats(freed).0)
}

fn main() {
    if std::env::var_os("QT_SCALE_CHILD").is_some() {
        child();
        return;
    }
    // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing: run only as a bench.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let exe = std::env::current_exe().expect("current exe");
    let status = std::process::Command::new(exe)
        .env("QT_SCALE_CHILD", "1")
        .status()
        .expect("run the measuring child");
    assert!(status.success(), "the measuring child failed: {status}");
}
