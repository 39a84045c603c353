//! One module per subcommand; `main.rs` dispatches here.

pub mod emulator;
pub mod simulate;
