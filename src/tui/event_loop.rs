//! The console's one loop: a `tokio::select!` over terminal events, snapshots from the poller and
//! a tick. It never waits on the network (the poller is another task) and draws only when
//! something changed. Generic over the backend and the event source, so tests drive it with
//! `TestBackend` and scripted keys.

use std::io;
use std::time::Duration;

use crossterm::event::{Event, KeyEventKind};
use futures_util::{Stream, StreamExt};
use ratatui::Terminal;
use ratatui::backend::Backend;
use tokio::sync::mpsc;

use super::TuiError;
use super::app::{App, Msg};
use super::effects::{ChangeResult, Effect, PreemptionHistory, Services, TravelResult};
use super::scorecard::{HISTORY_UNAVAILABLE, ScorecardResult};
use crate::model::Snapshot;

/// Ticks drive only the "updated N s ago" text (a redraw happens when it changes).
pub const TICK: Duration = Duration::from_millis(1000);

/// Why time travel and the preemption history cannot work without a journal.
pub const NO_HISTORY: &str =
    "no history: this console keeps no journal (--no-journal, or it could not be opened)";

/// Turns a terminal event into a message: key presses only (not repeats' releases), resizes.
pub fn message(event: Event) -> Option<Msg> {
    match event {
        Event::Key(k) if k.kind == KeyEventKind::Press => Some(Msg::Key(k)),
        Event::Resize(_, _) => Some(Msg::Resize),
        _ => None,
    }
}

/// Runs until the user quits or the event stream ends, without services (no changes can be
/// applied; the app says so).
pub async fn run<B, E>(
    terminal: &mut Terminal<B>,
    app: &mut App,
    events: E,
    snapshots: mpsc::Receiver<Snapshot>,
    tick: Duration,
) -> Result<(), TuiError>
where
    B: Backend,
    E: Stream<Item = io::Result<Event>> + Unpin,
{
    run_with(terminal, app, events, snapshots, tick, Services::default()).await
}

/// Runs until the user quits, or the event stream ends and the background work it started is
/// done. Effects the app asks for run in spawned tasks; their results come back as messages.
pub async fn run_with<B, E>(
    terminal: &mut Terminal<B>,
    app: &mut App,
    mut events: E,
    mut snapshots: mpsc::Receiver<Snapshot>,
    tick: Duration,
    services: Services,
) -> Result<(), TuiError>
where
    B: Backend,
    E: Stream<Item = io::Result<Event>> + Unpin,
{
    let mut ticker = tokio::time::interval(tick);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut source_open = true;
    let mut events_open = true;
    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<Msg>();
    let mut in_flight = 0usize;
    // The journal's last reported failure (`None`: recording).
    let mut journal_broken: Option<String> = None;
    loop {
        if app.is_dirty() {
            terminal.draw(|f| app.draw(f))?;
        }
        if app.should_quit() || (!events_open && in_flight == 0) {
            return Ok(());
        }
        // Biased: a snapshot already waiting is applied before the keys that follow it, so a
        // key acts on the data that was on screen when it was pressed.
        let msg = tokio::select! {
            biased;
            snap = snapshots.recv(), if source_open => match snap {
                Some(s) => Msg::Snapshot(Box::new(s)),
                None => {
                    source_open = false;
                    Msg::SourceClosed
                }
            },
            done = done_rx.recv() => match done {
                Some(m) => {
                    in_flight = in_flight.saturating_sub(1);
                    m
                }
                // Unreachable while `done_tx` lives; treat as a tick.
                None => Msg::Tick,
            },
            event = events.next(), if events_open => match event {
                Some(Ok(e)) => match message(e) {
                    Some(m) => m,
                    None => continue,
                },
                Some(Err(e)) => return Err(TuiError::Io(e)),
                None => {
                    events_open = false;
                    continue;
                }
            },
            _ = ticker.tick() => Msg::Tick,
        };
        let check_journal = matches!(msg, Msg::Snapshot(_) | Msg::Tick);
        app.update(msg);
        if check_journal && let Some(state) = &services.journal_state {
            let now = state();
            if now != journal_broken {
                journal_broken = now.clone();
                app.update(Msg::JournalState(now));
            }
        }
        for effect in app.take_effects() {
            match effect {
                Effect::ApplyChange(req) => match &services.changes {
                    Some(runner) => {
                        let fut = runner.apply(*req);
                        let tx = done_tx.clone();
                        in_flight += 1;
                        tokio::spawn(async move {
                            let r = fut.await;
                            let _ = tx.send(Msg::ChangeDone(Box::new(r)));
                        });
                    }
                    None => app.update(Msg::ChangeDone(Box::new(ChangeResult {
                        job_id: req.preview.job_id.clone(),
                        job_name: req.preview.job_name.clone(),
                        new_priority: req.preview.new_priority,
                        result: Err("this console has no API connection to change it".into()),
                        warning: None,
                    }))),
                },
                Effect::ComputeScorecard { queue, as_of } => match &services.scorecard {
                    Some(compute) => {
                        let compute = compute.clone();
                        let tx = done_tx.clone();
                        in_flight += 1;
                        tokio::task::spawn_blocking(move || {
                            let r = compute(&queue, as_of);
                            let _ = tx.send(Msg::ScorecardDone(Box::new(r), as_of));
                        });
                    }
                    None => app.update(Msg::ScorecardDone(
                        Box::new(ScorecardResult {
                            queue,
                            result: Err(HISTORY_UNAVAILABLE.into()),
                        }),
                        as_of,
                    )),
                },
                Effect::Travel(to) => match &services.history {
                    Some(reader) => {
                        let reader = reader.clone();
                        let tx = done_tx.clone();
                        in_flight += 1;
                        tokio::task::spawn_blocking(move || {
                            let r = reader.travel(to);
                            let _ = tx.send(Msg::TravelDone(Box::new(r)));
                        });
                    }
                    None => app.update(Msg::TravelDone(Box::new(TravelResult {
                        to,
                        result: Err(NO_HISTORY.into()),
                    }))),
                },
                Effect::LoadPreemptions { queue } => match &services.history {
                    Some(reader) => {
                        let reader = reader.clone();
                        let tx = done_tx.clone();
                        in_flight += 1;
                        tokio::task::spawn_blocking(move || {
                            let r = reader.preemptions(&queue);
                            let _ = tx.send(Msg::PreemptionHistory(Box::new(r)));
                        });
                    }
                    None => app.update(Msg::PreemptionHistory(Box::new(PreemptionHistory {
                        queue,
                        result: Err(NO_HISTORY.into()),
                    }))),
                },
                Effect::RefreshNow => {
                    if let Some(refresh) = &services.refresh {
                        refresh();
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::{KeyCode, KeyEvent, KeyEventState, KeyModifiers};

    #[test]
    fn only_key_presses_and_resizes_become_messages() {
        let press = KeyEvent::new(KeyCode::Char('q'), KeyModifiers::NONE);
        let release = KeyEvent {
            kind: KeyEventKind::Release,
            state: KeyEventState::NONE,
            ..press
        };
        assert!(matches!(message(Event::Key(press)), Some(Msg::Key(_))));
        assert!(message(Event::Key(release)).is_none());
        assert!(matches!(message(Event::Resize(80, 24)), Some(Msg::Resize)));
        assert!(message(Event::FocusGained).is_none());
    }
}
