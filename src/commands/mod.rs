//! One module per subcommand; `main.rs` dispatches here.

pub mod audit;
pub mod console;
pub mod demo;
pub mod emulator;
pub mod record;
pub mod replay;
pub mod report;
pub mod report_format;
pub mod set_priority;
pub mod simulate;
pub mod snapshot;
pub mod tui;

/// The tokio runtime a command runs its async part on: one helper for every command, so each
/// starts the same multi-threaded runtime (timers and I/O enabled) and fails the same way.
pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    use anyhow::Context as _;
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}
