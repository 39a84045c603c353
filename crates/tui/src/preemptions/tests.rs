use crate::screen::Kind;
use crate::{App, Msg};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use quotatop_analysis::fixture;
use quotatop_model::{JobStatus, PreemptedAttempt, PreemptionSummary, SharingConfig};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

fn key(c: char) -> Msg {
    Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))
}

fn preempted(name: &str, status: JobStatus, count: u32) -> quotatop_model::TrackedJob {
    const G5: &str = "ml.g5.12xlarge";
    let mut j = fixture::job(name, "a", G5, 1, status, 1, 0);
    std::sync::Arc::make_mut(&mut j.job).preemption = Some(PreemptionSummary {
        preempted_attempt_count: count,
        recent_preempted_attempts: (0..count.min(5))
            .map(|i| PreemptedAttempt {
                resource_id: format!("{name}-{i}"),
                started_at: Some(i64::from(i) * 60_000),
                stopped_at: i64::from(i) * 60_000 + 30_000,
                status_reason: "Cross-share preemption".into(),
            })
            .collect(),
    });
    j
}

fn screen_text(app: &mut App, terminal: &mut Terminal<TestBackend>) -> String {
    let _ = terminal.draw(|f| app.draw(f));
    let buf = terminal.backend().buffer();
    let width = buf.area.width as usize;
    buf.content()
        .chunks(width)
        .map(|row| row.iter().map(|c| c.symbol()).collect::<String>() + "\n")
        .collect()
}

/// Issue 45 item 3: one definition of a loop. A job that SUCCEEDED after nine preemptions is
/// not looping; the running job preempted four times is. The Preemptions title, its FLAGS
/// column and the Overview's attention panel all count one.
#[test]
fn the_preemptions_title_and_the_attention_panel_count_the_same_loops() {
    let mut q = fixture::queue(&[("a", "ml.g5.12xlarge", 4, SharingConfig::lend())]);
    q.jobs = vec![
        preempted("finished-after-nine", JobStatus::Succeeded, 9),
        preempted("still-looping", JobStatus::Running, 4),
    ];
    let (mut app, mut terminal) = crate::test_app::with_queue(q, 160, 30);
    let overview = screen_text(&mut app, &mut terminal);
    let loop_items = overview
        .lines()
        .filter(|l| l.contains("LOOP") && l.contains("preempted"))
        .count();
    assert_eq!(loop_items, 1, "{overview}");
    assert!(!overview.contains("finished-after-nine"), "{overview}");
    app.update(key('3'));
    assert_eq!(app.screen_kind(), Kind::Preemptions);
    let screen = screen_text(&mut app, &mut terminal);
    assert!(screen.contains(" 1 looping"), "{screen}");
    let flagged: Vec<&str> = screen.lines().filter(|l| l.contains("LOOP")).collect();
    assert_eq!(flagged.len(), 1, "{screen}");
    assert!(flagged.iter().all(|l| l.contains("still-looping")), "{screen}");
}
