//! One module per subcommand; `main.rs` dispatches here.

pub mod emulator;
pub mod report;
pub mod report_format;
pub mod simulate;
