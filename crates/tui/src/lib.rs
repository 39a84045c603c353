//! The live console: screens over [`Snapshot`]s received on a channel. It never calls the
//! network: the poller (another task) sends owned snapshots; this module only draws them and
//! reacts to keys.
//!
//! - [`app`]: state and update; [`event_loop`]: the `select!` loop; [`terminal`]: restore guard.
//! - [`effects`]: the work the app asks for, its typed answers, and the traits of the services
//!   that do it (built outside the console, in `quotatop::services`); [`runner`]: runs it, a newer
//!   request cancelling an older one of its kind; [`travel`]: time travel.
//! - One screen per file: [`overview`], [`share`], [`jobs`], [`preemptions`], [`job_detail`], [`scorecard`], [`policy`], [`logs`],
//!   plus [`help`], [`status_bar`], [`footer`]. Each file holds its screen's registry entry
//!   (kind, key, `:` command, help line, how it opens); the `screens!` list below is the
//!   [`registry`] that keys, commands, help and navigation read.
//! - [`keymap`]: the one key-binding table (help and footer hints come from it).
//! - [`theme`]: semantic colour roles from `themes/*.toml`.

mod app;
pub mod bulk_priority;
mod command;
pub mod data;
pub mod effects;
pub mod event_loop;
mod field;
mod footer;
mod gauge;
mod help;
mod input;
pub mod job_act;
mod job_act_view;
pub mod keymap;
pub mod list;
pub mod marks;
mod messages;
pub mod priority;
pub mod registry;
pub mod requeue;
mod runner;
pub mod screen;
mod status_bar;
pub mod sweep_chart;
mod terminal;
pub mod terminate;
#[cfg(test)]
mod test_app;
mod text;
pub mod theme;
mod travel;

// The screens, each as `its module: its kind`: each is its file (the screen and its `ENTRY`)
// and its line here.
registry::screens! {
    overview: Overview,
    jobs: Jobs,
    preemptions: Preemptions,
    scorecard: Scorecard,
    policy: Policy,
    share: Share,
    job_detail: JobDetail,
    logs: Logs,
}

use tokio::sync::mpsc;

pub use app::{App, AppOptions, Msg};
pub use data::StoragePrice;
pub use status_bar::{History, StatusInfo};

use quotatop_model::Snapshot;

#[derive(Debug, thiserror::Error)]
pub enum TuiError {
    #[error("terminal")]
    Io(#[from] std::io::Error),
    /// Standard input or output is not a terminal (a pipe, a file, a cron job, `ssh` without
    /// `-t`).
    #[error(
        "the console needs a terminal, and standard {0} is not one: run it in a terminal (over \
         ssh: ssh -t); for scripts, `quotatop snapshot` prints one refresh and `quotatop record` \
         keeps the history without a screen"
    )]
    NotATerminal(&'static str),
}

/// The console's screen is a terminal: refuses at once, before anything starts, when standard
/// input or output is not one (else the first draw fails with the OS's "No such device or
/// address").
pub fn require_terminal() -> Result<(), TuiError> {
    use std::io::IsTerminal;
    if !std::io::stdin().is_terminal() {
        return Err(TuiError::NotATerminal("input"));
    }
    if !std::io::stdout().is_terminal() {
        return Err(TuiError::NotATerminal("output"));
    }
    Ok(())
}

/// Opens the console on the real terminal and runs it until the user quits. The terminal is
/// restored on every exit path, panics included.
pub async fn run(
    opts: AppOptions,
    snapshots: mpsc::Receiver<Snapshot>,
    services: effects::Services,
) -> Result<(), TuiError> {
    run_screens(opts, registry::Screens::builtin(), snapshots, services).await
}

/// [`run`] with `screens` (the registry, with the services of screens' own work).
pub async fn run_screens(
    opts: AppOptions,
    screens: registry::Screens,
    snapshots: mpsc::Receiver<Snapshot>,
    services: effects::Services,
) -> Result<(), TuiError> {
    let mut app = App::with_screens(opts, screens);
    let mut guard = terminal::TerminalGuard::enter()?;
    let events = crossterm::event::EventStream::new();
    let console = event_loop::run_with(
        &mut guard.terminal,
        &mut app,
        events,
        snapshots,
        event_loop::TICK,
        services,
    );
    // SIGTERM, SIGHUP and SIGINT (Ctrl-C is a key in raw mode; this is `kill -INT`) end the
    // console like `q` does: the guard restores the terminal on the way out.
    // QUOTATOP_TEST_PANIC_AFTER_MS makes it panic on purpose, for the test that checks the
    // panic hook restores the terminal too.
    tokio::select! {
        r = console => r,
        _ = terminate_signal() => Ok(()),
        _ = test_panic() => Ok(()),
    }
}

async fn terminate_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match (
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
            signal(SignalKind::interrupt()),
        ) {
            (Ok(mut term), Ok(mut hup), Ok(mut int)) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = hup.recv() => {}
                    _ = int.recv() => {}
                }
            }
            _ => std::future::pending::<()>().await,
        }
    }
    #[cfg(not(unix))]
    std::future::pending::<()>().await;
}

/// Debug builds only (the ones `cargo test` runs): a release binary carries no way to make it
/// panic on purpose.
#[cfg(not(debug_assertions))]
async fn test_panic() {
    std::future::pending::<()>().await;
}

#[cfg(debug_assertions)]
#[allow(clippy::panic)] // the point of this switch
async fn test_panic() {
    match std::env::var("QUOTATOP_TEST_PANIC_AFTER_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        Some(ms) => {
            tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
            panic!("QUOTATOP_TEST_PANIC_AFTER_MS: panic injected for testing");
        }
        None => std::future::pending::<()>().await,
    }
}

/// The local wall clock in epoch ms.
pub fn wall_clock() -> quotatop_model::Millis {
    quotatop_model::wall_clock_ms()
}
