//! The Scorecard screen's own work: what it asks for, and which answers it takes.

use super::*;
use quotatop_analysis::LoopRule;
use quotatop_analysis::scorecard::Window;
use quotatop_model::{QueueSnapshot, Snapshot};

fn data() -> Data {
    let mut d = Data::new(LoopRule::default());
    d.apply(Snapshot {
        taken_at: 5_000,
        queues: vec![QueueSnapshot {
            name: "q".into(),
            server_time: Some(5_000),
            ..Default::default()
        }],
        ..Default::default()
    });
    d
}

fn ctx(data: &Data, history: bool) -> Ctx<'_> {
    Ctx {
        data,
        queue: None,
        history,
        past: false,
    }
}

fn answer(queue: &str, result: Result<Box<ScorecardView>, HistoryError>) -> EffectResult {
    EffectResult::Scorecard(
        Box::new(ScorecardResult {
            queue: queue.into(),
            result,
        }),
        None,
    )
}

fn ready() -> Box<ScorecardView> {
    let input = ScorecardInput {
        queue: "q".into(),
        window: Window {
            start: 0,
            end: 5_000,
        },
        capacity: Vec::new(),
        entitlements: Vec::new(),
        jobs: Vec::new(),
    };
    Box::new(view(&input, &ScorecardOptions::default()))
}

#[test]
fn without_history_nothing_is_asked() {
    let d = data();
    let mut s = ScorecardScreen::new();
    assert!(s.load(Load::Opened, &ctx(&d, false)).is_empty());
    assert_eq!(s.state(), &ScorecardState::Unavailable);
}

#[test]
fn the_screen_asks_once_and_takes_only_its_answer() {
    let d = data();
    let c = ctx(&d, true);
    let mut s = ScorecardScreen::new();
    let asked = s.load(Load::Opened, &c);
    assert!(matches!(
        asked.as_slice(),
        [Effect::ComputeScorecard { queue, as_of: None }] if queue == "q"
    ));
    assert_eq!(s.state(), &ScorecardState::Computing);
    // Every so often: not while the same card is being computed.
    assert!(s.load(Load::Periodic, &c).is_empty());
    // Another queue's card is not this screen's.
    s.on_result(&answer("other", Ok(ready())), &c);
    assert_eq!(s.state(), &ScorecardState::Computing);
    s.on_result(&answer("q", Ok(ready())), &c);
    assert!(matches!(s.state(), ScorecardState::Ready(_)));
    // A recomputation keeps the card on screen until the new one comes.
    assert_eq!(s.load(Load::Periodic, &c).len(), 1);
    assert!(matches!(s.state(), ScorecardState::Ready(_)));
    s.on_result(&answer("q", Err(HistoryError::NoQueue("q".into()))), &c);
    assert_eq!(
        s.state(),
        &ScorecardState::Failed("no history of queue q yet".into())
    );
}
