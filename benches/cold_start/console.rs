//! The console's side of `cold_start`, in a process of its own (the bench runs itself again with
//! `QT_CONSOLE_CHILD` set): its resident memory and frame time at the world's size.

use std::time::{Duration, Instant};

use quotatop_analysis::LoopRule;
use quotatop_aws::poll::{PollConfig, Poller};
use quotatop_model::JobStatus;
use quotatop_tui::keymap::KeyMap;
use quotatop_tui::theme::Theme;
use quotatop_tui::{App, AppOptions, Msg, StatusInfo};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

use super::connect;

use super::memory::memory_mb;

/// The median time of `n` frames.
fn frames(app: &mut App, terminal: &mut Terminal<TestBackend>, n: usize) -> Duration {
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        terminal.draw(|f| app.draw(f)).expect("draw");
        v.push(t.elapsed());
    }
    v.sort();
    v[v.len() / 2]
}

/// The console's side in a process of its own: its poller's complete view of the world, applied
/// to the console, then frames drawn.
pub fn console_child(endpoint: String) {
    let queue = std::env::var("QT_QUEUE").expect("QT_QUEUE");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (rss0, _) = memory_mb();
    let mut poller = Poller::new(PollConfig {
        queues: vec![queue],
        concurrency: 32,
        refresh_deadline: Duration::from_secs(3600),
        ..PollConfig::default()
    });
    let snap = rt.block_on(async {
        let client = connect(endpoint).await;
        poller.refresh(&client).await
    });
    let jobs = snap.queues[0].jobs.len();
    let running = snap.queues[0]
        .jobs
        .iter()
        .filter(|j| j.job.status == JobStatus::Running)
        .count();
    let now = snap.taken_at;
    let mut app = App::new(AppOptions {
        theme: Theme::dark(),
        no_color: false,
        theme_dir: None,
        keymap: KeyMap::default(),
        status: StatusInfo::default(),
        queue: None,
        loop_rule: LoopRule::default(),
        clock: Box::new(move || now),
        warnings: Vec::new(),
        door: Default::default(),
        storage_price: Default::default(),
    });
    let t = Instant::now();
    // The snapshot moves to the console, as the poller's channel hands it over.
    app.update(Msg::Snapshot(Box::new(snap)));
    let apply = t.elapsed();
    let mut terminal = Terminal::new(TestBackend::new(160, 50)).expect("test backend");
    let overview = frames(&mut app, &mut terminal, 50);
    app.update(Msg::Key(crossterm::event::KeyEvent::new(
        crossterm::event::KeyCode::Char('2'),
        crossterm::event::KeyModifiers::NONE,
    )));
    let jobs_frame = frames(&mut app, &mut terminal, 50);
    let (rss, hwm) = memory_mb();
    println!(
        "console at {jobs} jobs ({running} running): resident {rss:.0} MB (peak {hwm:.0} MB; {rss0:.0} MB \
         before polling), snapshot applied in {:.0} ms, frame (160×50, median of 50) overview \
         {:.2} ms, jobs screen {:.2} ms",
        apply.as_secs_f64() * 1000.0,
        overview.as_secs_f64() * 1000.0,
        jobs_frame.as_secs_f64() * 1000.0
    );
    println!(
        "| console resident memory, {jobs} jobs | ≤ 100 MB | {rss:.0} MB (peak {hwm:.0} MB) |"
    );
    println!(
        "| frame, {jobs} jobs | ≤ 1 ms | overview {:.2} ms, jobs {:.2} ms |",
        overview.as_secs_f64() * 1000.0,
        jobs_frame.as_secs_f64() * 1000.0
    );
}
