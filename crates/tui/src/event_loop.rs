//! The console's one loop: a `tokio::select!` over terminal events, snapshots from the poller and
//! a tick. It never waits on the network (the poller is another task) and draws only when
//! something changed. A snapshot's analysis is derived on a blocking thread ([`Derivation`]);
//! the UI thread only swaps the result in ([`Msg::Prepared`]), so keys pressed meanwhile act at
//! once, on the data on screen. Generic over the backend and the event source, so tests drive it with
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
use super::data::Prepared;
use super::effects::Services;
use super::runner::Runner;
use quotatop_model::Snapshot;
use tokio::task::JoinHandle;

/// Ticks drive only the "updated N s ago" text (a redraw happens when it changes).
pub const TICK: Duration = Duration::from_millis(1000);

/// Turns a terminal event into a message: key presses only (not repeats' releases), resizes.
pub fn message(event: Event) -> Option<Msg> {
    match event {
        Event::Key(k) if k.kind == KeyEventKind::Press => Some(Msg::Key(k)),
        Event::Resize(_, _) => Some(Msg::Resize),
        _ => None,
    }
}

/// The analysis of one snapshot at a time, derived on a blocking thread. One at a time keeps
/// snapshots in the order they came (each adds its sparkline sample) and the console holding at
/// most two (the one on screen, the one being derived); the next waits in the poller's channel.
#[derive(Default)]
struct Derivation {
    running: Option<JoinHandle<Prepared>>,
    /// The number of the last one started ([`Prepared::order`]).
    started: u64,
}

impl Derivation {
    fn is_running(&self) -> bool {
        self.running.is_some()
    }

    /// Starts deriving `snapshot`'s analysis with what `app` knows now.
    fn start(&mut self, app: &App, snapshot: Snapshot) {
        self.started += 1;
        let (inputs, order) = (app.derive_inputs(), self.started);
        self.running = Some(tokio::task::spawn_blocking(move || {
            Prepared::new(snapshot, &inputs, order)
        }));
    }

    /// The running derivation's result (`None`: it failed, logged; the data on screen stays
    /// and the next snapshot is derived anew); pending for ever when none runs. Cancel-safe
    /// (for `select!`): the handle is kept until it finishes.
    async fn finished(&mut self) -> Option<Prepared> {
        let handle = self.running.as_mut()?;
        let result = handle.await;
        self.running = None;
        match result {
            Ok(prepared) => Some(prepared),
            Err(e) => {
                tracing::error!(
                    "deriving a snapshot's analysis failed, the next one is tried: {e}"
                );
                None
            }
        }
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
/// done. Effects the app asks for run in the [`Runner`]'s tasks; their results come back as
/// messages.
pub async fn run_with<B, E>(
    terminal: &mut Terminal<B>,
    app: &mut App,
    events: E,
    snapshots: mpsc::Receiver<Snapshot>,
    tick: Duration,
    services: Services,
) -> Result<(), TuiError>
where
    B: Backend,
    E: Stream<Item = io::Result<Event>> + Unpin,
{
    run_observed(terminal, app, events, snapshots, tick, services, None).await
}

/// [`run_with`], telling `settled` each time the loop has handled a message and no background
/// work is in flight: a driver (a test) that waits for it after each key knows the key and
/// everything it started are done, without guessing with sleeps.
pub async fn run_observed<B, E>(
    terminal: &mut Terminal<B>,
    app: &mut App,
    mut events: E,
    mut snapshots: mpsc::Receiver<Snapshot>,
    tick: Duration,
    services: Services,
    settled: Option<mpsc::UnboundedSender<()>>,
) -> Result<(), TuiError>
where
    B: Backend,
    E: Stream<Item = io::Result<Event>> + Unpin,
{
    let mut ticker = tokio::time::interval(tick);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut source_open = true;
    let mut events_open = true;
    let mut runner = Runner::serving(services, app.screen_services());
    let mut derivation = Derivation::default();
    // The snapshot (and analysis) a prepared one replaced, to free off the UI thread.
    let mut retired = None;
    loop {
        if app.is_dirty() {
            terminal.draw(|f| app.draw(f))?;
        }
        // Freed on a blocking thread once the frame showing the new snapshot is drawn: freed
        // meanwhile, the two threads contending for the allocator made that frame 15 times
        // slower (console_scale, 50,000 jobs).
        if let Some(old) = retired.take() {
            tokio::task::spawn_blocking(move || drop(old));
        }
        // Nothing in flight: no task, no analysis being derived, no snapshot (or the source's
        // closing) waiting.
        let waiting = source_open && (!snapshots.is_empty() || snapshots.is_closed());
        let idle = runner.is_idle() && !derivation.is_running() && !waiting;
        if app.should_quit() || (!events_open && idle) {
            runner.finish().await;
            return Ok(());
        }
        // Here every message so far is handled (and drawn); with nothing in flight, the loop
        // is about to wait for the next one.
        if idle && let Some(tx) = &settled {
            let _ = tx.send(());
        }
        // Biased: a finished analysis is swapped in first, then a waiting snapshot starts
        // deriving (one at a time: the next waits in the channel), then the rest. A key
        // pressed meanwhile acts at once on the data on screen.
        let msg = tokio::select! {
            biased;
            prepared = derivation.finished(), if derivation.is_running() => match prepared {
                Some(p) => Msg::Prepared(Box::new(p)),
                None => continue,
            },
            snap = snapshots.recv(), if source_open && !derivation.is_running() => match snap {
                Some(s) => {
                    derivation.start(app, s);
                    continue;
                }
                None => {
                    source_open = false;
                    Msg::SourceClosed
                }
            },
            done = runner.next(), if !runner.is_idle() => match done {
                Some(m) => m,
                // Every task left was superseded.
                None => continue,
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
        let check_journal = matches!(msg, Msg::Snapshot(_) | Msg::Prepared(_) | Msg::Tick);
        app.update(msg);
        retired = app.take_retired().or(retired);
        if check_journal && let Some(state) = runner.journal_change() {
            app.update(Msg::JournalState(state));
        }
        // An effect no service can run is answered at once, and that answer may ask for more.
        let mut effects = app.take_effects();
        while !effects.is_empty() {
            for effect in effects {
                if let Some(answer) = runner.start(effect) {
                    app.update(answer);
                }
            }
            effects = app.take_effects();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::AppOptions;
    use crossterm::event::{KeyCode, KeyEvent, KeyEventState, KeyModifiers};
    use quotatop_analysis::fixture;
    use quotatop_model::SharingConfig;
    use ratatui::backend::TestBackend;

    fn app() -> App {
        App::new(AppOptions {
            theme: crate::theme::Theme::dark(),
            no_color: false,
            theme_dir: None,
            keymap: crate::keymap::KeyMap::default(),
            status: crate::StatusInfo::default(),
            queue: None,
            loop_rule: quotatop_analysis::LoopRule::default(),
            clock: Box::new(|| 1_000_000),
            warnings: Vec::new(),
            door: Default::default(),
            storage_price: Default::default(),
        })
    }

    /// The poller gone while a snapshot's analysis is being derived: that snapshot is still
    /// applied, then the console says its source closed (nothing sent is lost).
    #[tokio::test]
    async fn a_snapshot_being_derived_when_the_source_closes_is_still_applied() {
        let mut app = app();
        let mut terminal = Terminal::new(TestBackend::new(80, 24)).expect("a test backend");
        let (tx, rx) = mpsc::channel(1);
        let snapshot = Snapshot {
            taken_at: 5_000,
            queues: vec![fixture::queue(&[(
                "a",
                "ml.g5.12xlarge",
                2,
                SharingConfig::lend(),
            )])],
            ..Snapshot::default()
        };
        tx.send(snapshot).await.expect("the loop's channel");
        drop(tx);
        let events = futures_util::stream::empty();
        run(
            &mut terminal,
            &mut app,
            events,
            rx,
            Duration::from_secs(3600),
        )
        .await
        .expect("the loop ends with the events");
        let data = app.live_data();
        assert_eq!(data.snapshot.as_ref().map(|s| s.taken_at), Some(5_000));
        assert!(data.source_closed);
        // What the snapshot replaced was handed off to be freed off the UI thread.
        assert!(app.take_retired().is_none());
    }

    /// `settled` is told only with nothing pending, the poller's channel closing included: the
    /// loop tells it once, after the console says "poller stopped", not before (a driver that
    /// typed at the first `settled` would act on a screen not yet saying it).
    #[tokio::test]
    async fn settled_waits_for_the_source_closing_to_be_applied() {
        let mut app = app();
        let mut terminal = Terminal::new(TestBackend::new(80, 24)).expect("a test backend");
        let (tx, rx) = mpsc::channel::<Snapshot>(1);
        drop(tx);
        let (settled_tx, mut settled) = mpsc::unbounded_channel();
        let (keys, keys_rx) = mpsc::unbounded_channel::<io::Result<Event>>();
        let events = Box::pin(futures_util::stream::unfold(keys_rx, |mut rx| async move {
            rx.recv().await.map(|e| (e, rx))
        }));
        // At the first `settled` the driver ends the events: the loop then ends.
        let driver = async move {
            settled.recv().await.expect("the loop settles");
            drop(keys);
            settled
        };
        let run = run_observed(
            &mut terminal,
            &mut app,
            events,
            rx,
            Duration::from_secs(3600),
            Services::default(),
            Some(settled_tx),
        );
        let (result, mut settled) = tokio::join!(run, driver);
        result.expect("the loop ends with the events");
        assert!(app.live_data().source_closed);
        assert!(
            settled.try_recv().is_err(),
            "settled was told before the source's closing was applied"
        );
    }

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
