//! The integration tests, in one binary: each module is one area (one file), with the shared
//! support modules declared once here. One binary links the dependency tree once, which keeps
//! the build fast and small (28 binaries each linked it before).

mod data_support;
mod emulator_support;
mod soak_support;
mod tui_support;

mod audit_cli;
mod cli_inputs;
mod emulator_bind;
mod emulator_cli;
mod emulator_demo;
mod emulator_limits;
mod emulator_malformed;
mod emulator_notebook;
mod emulator_sts;
mod emulator_wire;
mod engine_philly;
mod engine_props;
mod fuzz_inputs;
mod journal_report;
mod journal_scorecard;
mod poll_budget;
mod poll_faults;
mod preview_engine;
mod pty_restore;
mod record_cli;
mod replay;
mod secrets;
mod set_priority;
mod snapshot_cli;
mod snapshot_engine;
mod soak;
mod terminal_escapes;
mod tui_app;
mod tui_history;
mod tui_priority;
mod tui_scorecard;
mod tui_styles;
