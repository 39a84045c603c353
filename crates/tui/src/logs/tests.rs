use super::*;
use crate::theme::Theme;
use quotatop_analysis::AttemptRow;
use quotatop_model::Millis;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

fn pane(events: Vec<(Millis, String)>) -> LogPane {
    let mut p = LogPane::new("ml-training".into(), "j-1".into());
    p.name = "evil\x1b]0;owned\x07-job".into();
    p.attempts = vec![NumberedAttempt {
        number: 1,
        row: AttemptRow {
            resource_id: "arn:aws:sagemaker:us-east-1:1:training-job/tj-1".into(),
            started_at: Some(0),
            stopped_at: Some(60_000),
            reason: Some("Cross-share preemption".into()),
            preempted: true,
        },
    }];
    p.chosen = Some(1);
    p.state = State::Ready(LogText {
        events,
        truncated: false,
        not_utf8: 0,
    });
    p.rebuild();
    p
}

fn drawn(p: &LogPane) -> String {
    let Ok(mut t) = Terminal::new(TestBackend::new(120, 12)) else {
        unreachable!("a test backend always opens")
    };
    let data = Data::default();
    let theme = Theme::plain("test");
    let ctx = DrawCtx {
        data: &data,
        queue: None,
        theme: &theme,
        marks: &Default::default(),
        keymap: &Default::default(),
    };
    t.draw(|f| p.draw(f, f.area(), &ctx)).unwrap();
    t.backend()
        .buffer()
        .content()
        .iter()
        .map(|c| c.symbol())
        .collect()
}

#[test]
fn hostile_log_text_is_drawn_cleaned() {
    let p = pane(vec![
        (1_000, "loss \x1b[2J\x1b[31mred\x07 \u{9b}1;1H".into()),
        (2_000, "line one\nline\rtwo".into()),
        (30_000, "received SIGTERM (preemption): stopping at step 9".into()),
    ]);
    let screen = drawn(&p);
    assert!(
        !screen.chars().any(|c| c.is_control()),
        "a control character reached the terminal: {screen:?}"
    );
    assert!(screen.contains("loss \u{fffd}[2J\u{fffd}[31mred\u{fffd}"), "{screen}");
    assert!(screen.contains("evil\u{fffd}]0;owned\u{fffd}-job"), "{screen}");
    // A message of several lines is several lines; the signal and the end are marked.
    assert!(screen.contains("#1 line one"), "{screen}");
    let roles: Vec<Role> = p.lines.iter().map(|(_, r)| *r).collect();
    assert_eq!(
        roles,
        [
            Role::Text,
            Role::Text,
            Role::Text,
            Role::Critical,
            Role::Warning
        ],
        "{:?}",
        p.text()
    );
}

#[test]
fn following_reads_again_and_an_older_attempts_answer_is_not_shown() {
    let mut p = pane(vec![(1_000, "step 1".into())]);
    let data = Data::default();
    let ctx = Ctx {
        data: &data,
        queue: None,
        history: false,
        past: false,
    };
    let answer = |attempt: usize, text: &str| EffectResult::Screen {
        screen: Kind::Logs,
        answer: crate::effects::ScreenAnswer::new(LogAnswer {
            queue: "ml-training".into(),
            id: "j-1".into(),
            attempt,
            result: Ok(LogText {
                events: vec![(2_000, text.into())],
                truncated: false,
                not_utf8: 0,
            }),
        }),
    };
    // Not following: the answer is shown, nothing more is asked.
    assert!(p.on_result(&answer(1, "step 2"), &ctx).is_empty());
    assert!(p.text()[0].ends_with("#1 step 2"), "{:?}", p.text());
    // Following: each answer asks for the next read.
    let key = KeyEvent::from(crossterm::event::KeyCode::Char('f'));
    let follow = Some(crate::keymap::Action::Follow);
    assert_eq!(p.own_key(&key, follow, &ctx).map(|e| e.len()), Some(1));
    assert_eq!(p.on_result(&answer(1, "step 3"), &ctx).len(), 1);
    // A late answer for another attempt is not drawn as this one's.
    assert_eq!(p.on_result(&answer(2, "other"), &ctx).len(), 1);
    assert!(p.text()[0].ends_with("#1 step 3"), "{:?}", p.text());
    assert!(p.title().contains("following"), "{}", p.title());
}

/// A frame builds only the lines the pane shows, not the up to 10,000 it keeps; and they
/// are the right ones: the top line, the search hit, the last line at the bottom.
#[test]
fn a_frame_builds_only_the_lines_shown() {
    let mut p = pane(
        (0..5_000)
            .map(|i| (i * 1_000, format!("step {i}: loss")))
            .collect(),
    );
    let before = screen::lines_built();
    let screen = drawn(&p);
    // 12 rows less the two borders.
    assert_eq!(screen::lines_built() - before, 10, "{screen}");
    assert!(screen.contains("step 0: loss"), "{screen}");
    p.scroll.set_filter("step 2500:".into());
    p.rebuild();
    let before = screen::lines_built();
    let screen = drawn(&p);
    assert_eq!(screen::lines_built() - before, 10, "{screen}");
    assert!(screen.contains("step 2500: loss"), "{screen}");
    assert!(screen.contains("step 2498: loss"), "{screen}");
    assert!(!screen.contains("step 2497: loss"), "{screen}");
    p.scroll.selected = usize::MAX;
    let screen = drawn(&p);
    assert!(screen.contains("step 4999: loss"), "{screen}");
}

#[test]
fn search_moves_between_matches_and_wraps() {
    let mut p = pane(
        (0..40)
            .map(|i| (i * 1_000, format!("step {i}: loss")))
            .collect(),
    );
    p.scroll.set_filter("step 1".into());
    p.rebuild();
    // "step 1", "step 10" … "step 19": the first, then on, then round again.
    assert_eq!(p.hit, Some(1));
    p.find(true);
    assert_eq!(p.hit, Some(10));
    p.find(false);
    assert_eq!(p.hit, Some(1));
    p.find(false);
    assert_eq!(p.hit, Some(19));
    assert_eq!(p.matches(), 11);
    assert!(p.title().contains("/step 1 11 match(es)"), "{}", p.title());
}
