//! A fixed snapshot for the console tests (deterministic times) and a driver that runs the real
//! app loop on a `TestBackend` with scripted keys.

use std::collections::BTreeMap;
use std::time::Duration;

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use futures_util::StreamExt;
use quotatop_analysis::LoopRule;
use quotatop_model::{
    Attempt, CapacityLimit, FrontEntry, HealthState, JobStatus, Millis, PollHealth,
    PreemptedAttempt, PreemptionSummary, QueueSnapshot, QuotaShare, ServiceEnvironment, ServiceJob,
    SharingConfig, Snapshot, Source, TrackedJob,
};
use quotatop_tui::keymap::KeyMap;
use quotatop_tui::registry::Screens;
use quotatop_tui::theme::Theme;
use quotatop_tui::{App, AppOptions, StatusInfo, event_loop};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

/// The service clock of the fixture (2026-02-02 02:40:00Z).
pub const NOW: Millis = 1_770_000_000_000;
const MIN: Millis = 60_000;
pub const P4D: &str = "ml.p4d.24xlarge";
pub const G5: &str = "ml.g5.12xlarge";

struct J<'a> {
    name: &'a str,
    share: &'a str,
    ty: &'a str,
    n: u32,
    status: JobStatus,
    pri: u32,
    age_min: i64,
}

fn job(j: J, i: usize) -> TrackedJob {
    let id = format!(
        "{:08x}-0000-4000-8000-{:012x}",
        0xa1b2_0000u32 + i as u32,
        i
    );
    let created_at = NOW - j.age_min * MIN;
    let holds = j.status.holds_capacity();
    let started = matches!(
        j.status,
        JobStatus::Running | JobStatus::Succeeded | JobStatus::Failed
    );
    TrackedJob {
        job: std::sync::Arc::new(ServiceJob {
            id: id.clone(),
            name: j.name.to_string(),
            share: j.share.to_string(),
            priority: j.pri,
            instance_type: j.ty.to_string(),
            instance_count: j.n,
            status: j.status,
            status_reason: None,
            created_at,
            scheduled_at: (holds || started).then_some(created_at + MIN),
            started_at: started.then_some(created_at + 2 * MIN),
            stopped_at: j.status.is_terminal().then_some(NOW - MIN),
            preemption_retries: None,
            class_tag: None,
            preemption: None,
            attempts: if started {
                vec![Attempt {
                    resource_id: format!(
                        "arn:aws:sagemaker:us-east-1:123456789012:training-job/{}-1",
                        j.name
                    ),
                    started_at: Some(created_at + 2 * MIN),
                    stopped_at: j.status.is_terminal().then_some(NOW - MIN),
                    status_reason: None,
                }]
            } else {
                Vec::new()
            },
            checkpoint_interval_ms: None,
            is_terminated: false,
            extras: Default::default(),
        }),
        arn: format!("arn:aws:batch:us-east-1:123456789012:service-job/{id}"),
        described_at: Some(NOW - 3_000),
        listed_at: NOW - 2_000,
    }
}

fn preempted(t: &mut TrackedJob, times: &[(i64, i64)], reason: &str) {
    std::sync::Arc::make_mut(&mut t.job).preemption = Some(PreemptionSummary {
        preempted_attempt_count: times.len() as u32,
        recent_preempted_attempts: times
            .iter()
            .enumerate()
            .map(|(i, &(start, stop))| PreemptedAttempt {
                resource_id: format!(
                    "arn:aws:sagemaker:us-east-1:123456789012:training-job/{}-{}",
                    t.job.name,
                    i + 1
                ),
                started_at: Some(NOW - start * MIN),
                stopped_at: NOW - stop * MIN,
                status_reason: reason.to_string(),
            })
            .collect(),
    });
}

/// The main fixture queue: five shares, borrowing both ways, a preemption loop, in-share
/// preemption, a misconfigured job, and one job name with an escape sequence in it.
pub fn ml_training() -> QueueSnapshot {
    use JobStatus::*;
    let specs = [
        J {
            name: "research-sweep-01",
            share: "research",
            ty: P4D,
            n: 2,
            status: Running,
            pri: 1,
            age_min: 50,
        },
        J {
            name: "research-sweep-02",
            share: "research",
            ty: P4D,
            n: 2,
            status: Running,
            pri: 5,
            age_min: 40,
        },
        J {
            name: "research-sweep-03",
            share: "research",
            ty: P4D,
            n: 2,
            status: Running,
            pri: 1,
            age_min: 30,
        },
        J {
            name: "research-sweep-04",
            share: "research",
            ty: P4D,
            n: 1,
            status: Runnable,
            pri: 1,
            age_min: 20,
        },
        J {
            name: "research-sweep-05",
            share: "research",
            ty: P4D,
            n: 2,
            status: Runnable,
            pri: 5,
            age_min: 12,
        },
        J {
            name: "prod-serving-eval",
            share: "prod",
            ty: P4D,
            n: 1,
            status: Running,
            pri: 50,
            age_min: 90,
        },
        J {
            name: "nlp-tokenizer-7",
            share: "nlp",
            ty: G5,
            n: 2,
            status: Running,
            pri: 10,
            age_min: 25,
        },
        J {
            name: "video-pretrain",
            share: "vision",
            ty: G5,
            n: 2,
            status: Runnable,
            pri: 3,
            age_min: 240,
        },
        J {
            name: "vision-aug-12",
            share: "vision",
            ty: G5,
            n: 2,
            status: Running,
            pri: 3,
            age_min: 35,
        },
        J {
            name: "vision-aug-13",
            share: "vision",
            ty: G5,
            n: 2,
            status: Starting,
            pri: 3,
            age_min: 5,
        },
        J {
            name: "oversized-finetune",
            share: "regulated",
            ty: G5,
            n: 6,
            status: Runnable,
            pri: 9,
            age_min: 70,
        },
        J {
            name: "regulated-review",
            share: "regulated",
            ty: G5,
            n: 1,
            status: Succeeded,
            pri: 50,
            age_min: 120,
        },
        J {
            name: "research-old-run",
            share: "research",
            ty: P4D,
            n: 1,
            status: Failed,
            pri: 1,
            age_min: 300,
        },
        J {
            name: "evil\u{1b}[2Jname\u{7}",
            share: "research",
            ty: P4D,
            n: 1,
            status: Succeeded,
            pri: 1,
            age_min: 200,
        },
    ];
    let mut jobs: Vec<TrackedJob> = specs
        .into_iter()
        .enumerate()
        .map(|(i, j)| job(j, i))
        .collect();
    // video-pretrain: preempted four times by nlp reclaiming, no retry cap: a loop.
    preempted(
        &mut jobs[7],
        &[(30, 22), (70, 61), (120, 104), (200, 170)],
        "Preempted: capacity reclaimed by quota share nlp",
    );
    // research-sweep-01: once, bounded retries.
    preempted(
        &mut jobs[0],
        &[(80, 60)],
        "Preempted: capacity reclaimed by quota share prod",
    );
    std::sync::Arc::make_mut(&mut jobs[0].job).preemption_retries = Some(3);
    std::sync::Arc::make_mut(&mut jobs[10].job).status_reason = Some(
        "MISCONFIGURATION: requests 6 ml.g5.12xlarge, quota share regulated allows 2".to_string(),
    );
    std::sync::Arc::make_mut(&mut jobs[12].job).status_reason =
        Some("AlgorithmError: loss became NaN\r\n(step 1200)".to_string());

    let front = |i: usize, since: i64| FrontEntry {
        job_arn: jobs[i].arn.clone(),
        earliest_time_at_position: Some(NOW - since * MIN),
    };
    let front_of_queue = vec![front(4, 10), front(3, 18), front(7, 20), front(10, 60)];

    QueueSnapshot {
        name: "ml-training".into(),
        source: None,
        arn: "arn:aws:batch:us-east-1:123456789012:job-queue/ml-training".into(),
        state: "ENABLED".into(),
        status: "VALID".into(),
        scheduling_policy_arn: Some(
            "arn:aws:batch:us-east-1:123456789012:scheduling-policy/ml-training-quota".into(),
        ),
        environment: ServiceEnvironment {
            name: "ml-training-sagemaker".into(),
            capacity: vec![CapacityLimit::new(P4D, 12), CapacityLimit::new(G5, 8)],
        },
        shares: vec![
            QuotaShare::new(
                "research",
                vec![CapacityLimit::new(P4D, 4)],
                SharingConfig::lend_and_borrow(200),
            )
            .with_in_share_preemption(true),
            QuotaShare::new(
                "prod",
                vec![CapacityLimit::new(P4D, 4)],
                SharingConfig::lend(),
            ),
            QuotaShare::new(
                "nlp",
                vec![CapacityLimit::new(G5, 4), CapacityLimit::new(P4D, 2)],
                SharingConfig::lend_and_borrow(50),
            ),
            QuotaShare::new(
                "vision",
                vec![CapacityLimit::new(G5, 2)],
                SharingConfig::lend_and_borrow(-1),
            ),
            QuotaShare::new(
                "regulated",
                vec![CapacityLimit::new(G5, 2)],
                SharingConfig::reserve(),
            ),
        ],
        jobs,
        front_of_queue,
        front_of_shares: BTreeMap::new(),
        utilization: BTreeMap::new(),
        server_time: Some(NOW),
        refreshed_at: Some(NOW - 2_000),
        stale_reason: None,
        listing: None,
        training: Vec::new(),
    }
}

/// A second, small queue.
pub fn inference() -> QueueSnapshot {
    let j = job(
        J {
            name: "batch-embed",
            share: "embed",
            ty: G5,
            n: 1,
            status: JobStatus::Running,
            pri: 1,
            age_min: 15,
        },
        99,
    );
    QueueSnapshot {
        name: "inference".into(),
        arn: "arn:aws:batch:us-east-1:123456789012:job-queue/inference".into(),
        state: "ENABLED".into(),
        status: "VALID".into(),
        environment: ServiceEnvironment {
            name: "inference-env".into(),
            capacity: vec![CapacityLimit::new(G5, 2)],
        },
        shares: vec![QuotaShare::new(
            "embed",
            vec![CapacityLimit::new(G5, 2)],
            SharingConfig::lend(),
        )],
        jobs: vec![j],
        server_time: Some(NOW),
        refreshed_at: Some(NOW - 2_000),
        ..Default::default()
    }
}

pub fn snapshot() -> Snapshot {
    Snapshot {
        taken_at: NOW - 2_000,
        sequence: 7,
        source: Source {
            endpoint: Some("http://127.0.0.1:5566".into()),
            profile: None,
            region: Some("us-east-1".into()),
        },
        queues: vec![ml_training(), inference()],
        health: PollHealth {
            state: HealthState::Healthy,
            calls_last_minute: 42,
            throttled_last_minute: 0,
            errors_last_minute: 0,
            last_error: None,
            ..PollHealth::default()
        },
        sources: Vec::new(),
    }
}

pub fn options() -> AppOptions {
    AppOptions {
        theme: Theme::dark(),
        no_color: false,
        theme_dir: None,
        keymap: KeyMap::default(),
        status: StatusInfo::default(),
        queue: None,
        loop_rule: LoopRule::default(),
        clock: Box::new(|| NOW + 1_000),
        warnings: Vec::new(),
        door: Default::default(),
        storage_price: Default::default(),
    }
}

/// One key press per character (`\n` is Enter, `\x1b` Esc, `\t` Tab).
pub fn typed(s: &str) -> Vec<Event> {
    s.chars()
        .map(|c| {
            let code = match c {
                '\n' => KeyCode::Enter,
                '\x1b' => KeyCode::Esc,
                '\t' => KeyCode::Tab,
                c => KeyCode::Char(c),
            };
            let m = if c.is_ascii_uppercase() {
                KeyModifiers::SHIFT
            } else {
                KeyModifiers::NONE
            };
            Event::Key(KeyEvent::new(code, m))
        })
        .collect()
}

/// Runs the real loop on a `width`×`height` `TestBackend`: the fixture snapshot arrives first,
/// then the scripted keys; the loop ends when the script does.
pub async fn run(
    width: u16,
    height: u16,
    opts: AppOptions,
    script: Vec<Event>,
) -> (Terminal<TestBackend>, App) {
    run_with(width, height, opts, vec![snapshot()], script).await
}

pub async fn run_with(
    width: u16,
    height: u16,
    opts: AppOptions,
    snapshots: Vec<Snapshot>,
    script: Vec<Event>,
) -> (Terminal<TestBackend>, App) {
    let terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    let app = App::new(opts);
    run_loop(terminal, app, snapshots, script, Default::default()).await
}

/// Like [`run_with`], with services (a fake priority API in tests); the loop ends when the
/// script does and the background work it started has finished.
pub async fn run_services(
    width: u16,
    height: u16,
    opts: AppOptions,
    snap: Snapshot,
    script: Vec<Event>,
    services: quotatop_tui::effects::Services,
) -> (Terminal<TestBackend>, App) {
    let screens = Screens::builtin();
    run_serving(width, height, opts, screens, snap, script, services).await
}

/// Like [`run_services`], with `screens` serving the services of screens' own work (as the
/// console is given them: `Screens::builtin().serving(Arc::new(reader) as Arc<dyn Its>)`).
pub async fn run_serving(
    width: u16,
    height: u16,
    opts: AppOptions,
    screens: Screens,
    snap: Snapshot,
    script: Vec<Event>,
    services: quotatop_tui::effects::Services,
) -> (Terminal<TestBackend>, App) {
    let terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    let app = App::with_screens(opts, screens);
    run_loop(terminal, app, vec![snap], script, services).await
}

/// The real loop (the console's own, which derives each snapshot's analysis off the UI
/// thread): `snapshots` arrive first, and the keys are typed once the loop reports them all
/// applied (settled), as a user would press them with the data on screen; the loop ends when
/// the script and the work it started are done.
pub async fn run_loop(
    mut terminal: Terminal<TestBackend>,
    mut app: App,
    snapshots: Vec<Snapshot>,
    script: Vec<Event>,
    services: quotatop_tui::effects::Services,
) -> (Terminal<TestBackend>, App) {
    let (tx, rx) = tokio::sync::mpsc::channel(snapshots.len().max(1));
    for s in snapshots {
        tx.send(s).await.unwrap();
    }
    let (settled_tx, mut settled) = tokio::sync::mpsc::unbounded_channel::<()>();
    let events = Box::pin(
        futures_util::stream::once(async move {
            until_settled(&mut settled).await;
            futures_util::stream::iter(script.into_iter().map(Ok))
        })
        .flatten(),
    );
    event_loop::run_observed(
        &mut terminal,
        &mut app,
        events,
        rx,
        Duration::from_secs(3600),
        services,
        Some(settled_tx),
    )
    .await
    .unwrap();
    drop(tx);
    (terminal, app)
}

/// The screen as plain text, one line per row.
pub fn screen_text(t: &Terminal<TestBackend>) -> String {
    let buf = t.backend().buffer();
    let mut out = String::new();
    for y in 0..buf.area.height {
        for x in 0..buf.area.width {
            out.push_str(buf[(x, y)].symbol());
        }
        out.push('\n');
    }
    out
}

/// One step of a scripted console session: keys typed, or a new live snapshot.
pub enum Step {
    Keys(&'static str),
    Live(quotatop_model::Snapshot),
}

/// Waits until the loop says it has handled what it was sent and nothing is in flight.
async fn until_settled(settled: &mut tokio::sync::mpsc::UnboundedReceiver<()>) {
    tokio::time::timeout(std::time::Duration::from_secs(20), settled.recv())
        .await
        .expect("the console settles")
        .expect("the loop runs");
}

/// The real event loop on a `TestBackend`: `first` as the live data, then the steps, each
/// handled (and every read it started done, as the loop reports) before the next, instead of
/// sleeping and hoping.
pub async fn drive_steps(
    width: u16,
    height: u16,
    opts: quotatop_tui::AppOptions,
    services: quotatop_tui::effects::Services,
    first: quotatop_model::Snapshot,
    steps: Vec<Step>,
) -> (
    ratatui::Terminal<ratatui::backend::TestBackend>,
    quotatop_tui::App,
) {
    let screens = Screens::builtin();
    drive_serving(width, height, opts, screens, services, first, steps).await
}

/// [`drive_steps`] with `screens` serving the services of screens' own work.
pub async fn drive_serving(
    width: u16,
    height: u16,
    opts: quotatop_tui::AppOptions,
    screens: Screens,
    services: quotatop_tui::effects::Services,
    first: quotatop_model::Snapshot,
    steps: Vec<Step>,
) -> (
    ratatui::Terminal<ratatui::backend::TestBackend>,
    quotatop_tui::App,
) {
    let mut terminal =
        ratatui::Terminal::new(ratatui::backend::TestBackend::new(width, height)).unwrap();
    let mut app = quotatop_tui::App::with_screens(opts, screens);
    let (snap_tx, snap_rx) = tokio::sync::mpsc::channel(8);
    snap_tx.send(first).await.unwrap();
    let (key_tx, key_rx) = tokio::sync::mpsc::unbounded_channel::<crossterm::event::Event>();
    let (settled_tx, mut settled) = tokio::sync::mpsc::unbounded_channel::<()>();
    let events = Box::pin(futures_util::stream::unfold(key_rx, |mut rx| async move {
        rx.recv().await.map(|e| (Ok(e), rx))
    }));
    let script = tokio::spawn(async move {
        // The first live snapshot.
        until_settled(&mut settled).await;
        for step in steps {
            match step {
                Step::Keys(k) => {
                    for e in typed(k) {
                        while settled.try_recv().is_ok() {}
                        key_tx.send(e).unwrap();
                        until_settled(&mut settled).await;
                    }
                }
                Step::Live(s) => {
                    while settled.try_recv().is_ok() {}
                    snap_tx.send(s).await.unwrap();
                    until_settled(&mut settled).await;
                }
            }
        }
        drop(key_tx);
        snap_tx
    });
    quotatop_tui::event_loop::run_observed(
        &mut terminal,
        &mut app,
        events,
        snap_rx,
        std::time::Duration::from_secs(3600),
        services,
        Some(settled_tx),
    )
    .await
    .unwrap();
    drop(script.await.unwrap());
    (terminal, app)
}
