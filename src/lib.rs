//! quotatop: a terminal operations console for AWS Batch quota-share job queues.
//!
//! The library holds every layer; `main.rs` only parses the command line and dispatches.

pub mod actions;
pub mod analysis;
pub mod audit;
pub mod batch;
pub mod cli;
pub mod commands;
pub mod config;
pub mod emulator;
pub mod engine;
pub mod journal;
pub mod model;
pub mod poll;
pub mod replay;
pub mod services;
// The test-only panic switch (`QUOTATOP_TEST_PANIC_AFTER_MS` in tui/mod.rs) is the one
// `panic!` outside tests; allowed here until that module is reworked, the lint stays deny
// everywhere else.
#[allow(clippy::panic)]
pub mod tui;
