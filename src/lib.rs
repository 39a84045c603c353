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
pub mod metrics;
pub mod model;
pub mod poll;
pub mod replay;
pub mod services;
pub mod tui;
