//! One module per subcommand; `main.rs` dispatches here.

pub mod audit;
pub mod console;
pub mod emulator;
pub mod replay;
pub mod simulate;
