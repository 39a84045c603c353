//! The Overview's sorts, drawn at 80×24.

use crate::{App, Msg};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use quotatop_analysis::fixture;
use quotatop_model::{JobStatus, SharingConfig};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

fn key(c: char) -> Msg {
    Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))
}

/// Four shares of 4 × g5.12xlarge: `charlie` waits for 6 instances, `bravo` and `delta` for
/// one each (bravo's since long before delta's), `alpha` for none but uses all it has.
fn app() -> (App, Terminal<TestBackend>) {
    let ty = "ml.g5.12xlarge";
    let shares: Vec<(&str, &str, u32, SharingConfig)> = ["alpha", "bravo", "charlie", "delta"]
        .iter()
        .map(|s| (*s, ty, 4, SharingConfig::lend()))
        .collect();
    let mut q = fixture::queue(&shares);
    let job = |name: &str, share: &str, n, status, at| {
        fixture::job(name, share, ty, n, status, 1, at)
    };
    q.jobs = vec![
        job("a-run", "alpha", 4, JobStatus::Running, 10),
        job("b-wait", "bravo", 1, JobStatus::Runnable, 100),
        job("c-wait-1", "charlie", 2, JobStatus::Runnable, 800_000),
        job("c-wait-2", "charlie", 2, JobStatus::Runnable, 800_000),
        job("c-wait-3", "charlie", 2, JobStatus::Runnable, 800_000),
        job("d-wait", "delta", 1, JobStatus::Runnable, 900_000),
    ];
    let (app, terminal) = crate::test_app::with_queue(q, 80, 24);
    (app, terminal)
}

fn lines(app: &mut App, terminal: &mut Terminal<TestBackend>) -> Vec<String> {
    let _ = terminal.draw(|f| app.draw(f));
    let buf = terminal.backend().buffer();
    let w = usize::from(buf.area.width);
    buf.content()
        .chunks(w)
        .map(|row| row.iter().map(|c| c.symbol()).collect())
        .collect()
}

/// The shares in the order the table shows them.
fn order(lines: &[String]) -> Vec<&'static str> {
    let mut at: Vec<(usize, &'static str)> = ["alpha", "bravo", "charlie", "delta"]
        .into_iter()
        .filter_map(|s| {
            lines
                .iter()
                .position(|l| l.split_whitespace().any(|w| w == s || w == format!("▶{s}")))
                .map(|i| (i, s))
        })
        .collect();
    at.sort();
    at.into_iter().map(|(_, s)| s).collect()
}

fn header(lines: &[String]) -> &str {
    lines
        .iter()
        .find(|l| l.contains("SHARE"))
        .map_or("", String::as_str)
}

#[test]
fn s_sorts_the_shares_by_contention_and_the_header_and_title_say_so() {
    let (mut app, mut term) = app();
    let shown = lines(&mut app, &mut term);
    assert_eq!(order(&shown), ["alpha", "bravo", "charlie", "delta"], "{shown:#?}");
    app.update(key('s'));
    let shown = lines(&mut app, &mut term);
    // Most waiting GPUs first; of equal waits the older one; then use against the limit.
    assert_eq!(order(&shown), ["charlie", "bravo", "delta", "alpha"], "{shown:#?}");
    assert!(header(&shown).contains("WAIT▼"), "{shown:#?}");
    assert!(shown.iter().any(|l| l.contains("sort contention")), "{shown:#?}");
    app.update(key('S'));
    let shown = lines(&mut app, &mut term);
    assert_eq!(order(&shown), ["alpha", "delta", "bravo", "charlie"], "{shown:#?}");
    assert!(header(&shown).contains("WAIT▲"), "{shown:#?}");
}

#[test]
fn a_column_is_picked_by_name_or_left_and_right() {
    let (mut app, mut term) = app();
    app.update(key(':'));
    for c in "sort use".chars() {
        app.update(key(c));
    }
    app.update(Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)));
    let shown = lines(&mut app, &mut term);
    // alpha uses all of its limit; the others none.
    assert_eq!(order(&shown)[0], "alpha", "{shown:#?}");
    assert!(header(&shown).contains("USAGE▼"), "{shown:#?}");
    assert!(shown.iter().any(|l| l.contains("sort use")), "{shown:#?}");
    app.update(key('<'));
    let shown = lines(&mut app, &mut term);
    assert!(header(&shown).contains("SHARE▲"), "{shown:#?}");
    app.update(key('S'));
    let shown = lines(&mut app, &mut term);
    assert_eq!(order(&shown), ["delta", "charlie", "bravo", "alpha"], "{shown:#?}");
    app.update(key('>'));
    let shown = lines(&mut app, &mut term);
    assert!(header(&shown).contains("USAGE"), "{shown:#?}");
}
