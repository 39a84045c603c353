//! The integration tests, in one binary: each module is one area (one file), with the shared
//! support modules declared once here. One binary links the dependency tree once, which keeps
//! the build fast and small (28 binaries each linked it before). The soak (`tests/soak`) is
//! the one other binary: it measures its own process's memory and CPU, which other tests
//! running in the same process would distort. The tests that need a real Prometheus are in
//! `tests/prometheus`, outside `cargo test` (`scripts/test` installs Prometheus and runs them).

// Test code may unwrap, expect and panic: a failed assumption is a failed test. clippy.toml
// allows them in #[test] functions and #[cfg(test)] modules; the support modules' helpers
// here are neither, so the whole test crate allows them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// Test code may be longer than the 80 lines denied to the libraries and binaries.
#![allow(clippy::too_many_lines)]

mod data_support;
mod drill_support;
mod emulator_support;
mod engine_support;
mod metrics_support;
mod temp_support;
mod tmux_support;
mod tui_support;

mod audit_cli;
mod audit_outside;
mod ca_bundle;
mod capacity_units;
mod cli_inputs;
mod client_states;
mod demo_tempdir;
mod drill;
mod drill_checkpoints;
mod drill_safety;
mod emulator_bind;
mod emulator_cli;
mod emulator_demo;
mod emulator_events;
mod emulator_events_boto3;
mod emulator_ids;
mod emulator_lifecycle;
mod emulator_limits;
mod emulator_log_ids;
mod emulator_malformed;
mod emulator_notebook;
mod emulator_paging;
mod emulator_rate;
mod emulator_setup;
mod emulator_share_rules;
mod emulator_sts;
mod emulator_truth;
mod emulator_wire;
mod engine_philly;
mod engine_props;
mod events_apply;
mod events_cli;
mod events_loop;
mod events_record;
mod expired_token;
mod file_sizes;
mod fuzz_inputs;
mod journal_attempts;
mod journal_checkpoints;
mod journal_migrate;
mod journal_report;
mod journal_scorecard;
mod journal_trace;
mod keys_doc;
mod layers;
mod logs_not_utf8;
mod metrics_cli;
mod odd_answers;
mod on_call_actions;
mod one_check;
mod owned_paths;
mod pacer;
mod paging_runaway;
mod philly_figures;
mod policy_change;
mod policy_check;
mod policy_cli;
mod policy_console;
mod poll_budget;
mod poll_early;
mod poll_faults;
mod poll_progressive;
mod poll_rate;
mod poll_warm;
mod preview_engine;
mod pty_restore;
mod quit_paths;
mod record_cli;
mod replay;
mod requeue_cli;
mod secrets;
mod set_priority;
mod set_priority_many;
mod set_priority_order;
mod share_status;
mod shares_cli;
mod shares_impact;
mod shell_integration;
mod snapshot_cli;
mod snapshot_engine;
mod sources;
mod sweep;
mod sweep_chart;
mod sweep_journal;
mod terminal_escapes;
mod terminate_cli;
mod training_logs;
mod tui_app;
mod tui_footer_keys;
mod tui_history;
mod tui_lists;
mod tui_logs;
mod tui_long_lines;
mod tui_marks;
mod tui_narrow;
mod tui_priority;
mod tui_priority_recheck;
mod tui_registry;
mod tui_scale;
mod tui_scorecard;
mod tui_share_change;
mod tui_states;
mod tui_status_words;
mod tui_store;
mod tui_styles;
mod tui_triage;
mod tui_why;
mod tui_widths;
mod umask_dirs;
mod verdict;
mod verdict_material;
mod why_engine;
