//! quotatop: a terminal operations console for AWS Batch quota-share job queues.
//!
//! The layers are the crates under `crates/`; this package is the command line and its
//! commands, with the wiring between layers (`config`, `services`, `metrics`). `main.rs` only
//! parses the command line and dispatches.

pub mod cli;
pub mod commands;
pub mod config;
pub mod metrics;
pub mod services;
