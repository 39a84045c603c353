//! Frame time of the Jobs screen with 10,000 jobs (issue 5: goal ≤ 2 ms median in release).
//! Only the visible rows are built; sorting and filtering happen when data or keys change, not
//! per frame — the second benchmark measures that update cost separately.

// Benchmarks are test code: a broken setup should stop the run loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use criterion::{Criterion, criterion_group, criterion_main};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use quotatop_analysis::LoopRule;
use quotatop_model::{
    CapacityLimit, JobStatus, QueueSnapshot, QuotaShare, ServiceJob, SharingConfig, Snapshot,
    TrackedJob,
};
use quotatop_tui::keymap::KeyMap;
use quotatop_tui::theme::Theme;
use quotatop_tui::{App, AppOptions, Msg, StatusInfo};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

const NOW: i64 = 1_770_000_000_000;

fn snapshot(n: usize) -> Snapshot {
    let shares = ["research", "prod", "nlp", "vision", "regulated"];
    let jobs = (0..n)
        .map(|i| {
            let status = JobStatus::ALL[i % JobStatus::ALL.len()];
            TrackedJob {
                job: std::sync::Arc::new(ServiceJob {
                    id: format!("{i:08x}-0000-4000-8000-000000000000"),
                    name: format!("job-{i:05}"),
                    share: shares[i % shares.len()].to_string(),
                    priority: (i * 7 % 100) as u32,
                    instance_type: "ml.p4d.24xlarge".to_string(),
                    instance_count: 1,
                    status,
                    status_reason: None,
                    created_at: NOW - (i as i64) * 1000,
                    scheduled_at: None,
                    started_at: None,
                    stopped_at: None,
                    preemption_retries: None,
                    class_tag: None,
                    preemption: None,
                    attempts: Vec::new(),
                    checkpoint_interval_ms: None,
                    is_terminated: false,
                    extras: Default::default(),
                }),
                arn: format!("arn:aws:batch:us-east-1:1:service-job/{i}"),
                described_at: Some(NOW),
                listed_at: NOW,
            }
        })
        .collect();
    Snapshot {
        taken_at: NOW,
        queues: vec![QueueSnapshot {
            name: "q".into(),
            shares: shares
                .iter()
                .map(|s| {
                    QuotaShare::new(
                        *s,
                        vec![CapacityLimit::new("ml.p4d.24xlarge", 100)],
                        SharingConfig::lend(),
                    )
                })
                .collect(),
            jobs,
            server_time: Some(NOW),
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn app() -> App {
    App::new(AppOptions {
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
    })
}

fn key(c: char) -> Msg {
    Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))
}

fn bench(c: &mut Criterion) {
    let mut app = app();
    app.update(Msg::Snapshot(Box::new(snapshot(10_000))));
    app.update(key('2'));
    let mut terminal = Terminal::new(TestBackend::new(160, 50)).expect("test backend");
    c.bench_function("jobs screen frame, 10k jobs, 160x50", |b| {
        b.iter(|| {
            terminal.draw(|f| app.draw(f)).expect("draw");
        })
    });
    c.bench_function("jobs screen re-sort, 10k jobs", |b| {
        b.iter(|| app.update(key('s')))
    });
    let snap = snapshot(10_000);
    c.bench_function("apply a 10k-job snapshot (analysis + rows)", |b| {
        b.iter(|| app.update(Msg::Snapshot(Box::new(snap.clone()))))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
