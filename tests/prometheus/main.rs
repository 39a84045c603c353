//! The tests that need a real Prometheus: `prometheus` scraping `record --metrics-addr` with the
//! shipped alert rules, and `promtool check metrics` linting the exposition. Both tools come in
//! Debian/Ubuntu's `prometheus` package. They are not part of `cargo test` (`test = false` in
//! Cargo.toml), which needs no outside tool; `scripts/test` installs the package and runs them
//! with `cargo test --test prometheus`. A missing tool fails them, naming what to install.

// Test code may unwrap, expect and panic: a failed assumption is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

// Shared with tests/it; this binary uses only part of each.
#[allow(dead_code)]
#[path = "../it/emulator_support/mod.rs"]
mod emulator_support;
#[allow(dead_code)]
#[path = "../it/metrics_support.rs"]
mod metrics_support;

mod alerts;
mod lint;
