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
