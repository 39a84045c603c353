//! Tests against a real PostgreSQL server (Debian's `postgresql` package): outside plain
//! `cargo test`, which needs no outside tool. `scripts/test` installs the package and runs
//! them (`cargo test --test postgres`); a missing server fails them, never skips them.
//!
//! One throwaway cluster for the run (cluster.rs), a database of its own per test. Its own
//! harness (`harness = false`): the cluster is started once and stopped and removed when the
//! run ends, which a `#[test]` harness gives no place for. `cargo test --test postgres NAME`
//! runs the tests whose name contains NAME.

// Test code may unwrap, expect and panic: a failed assumption is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

// Shared with tests/it; this binary uses only part of each.
#[allow(dead_code)]
#[path = "../it/emulator_support/mod.rs"]
mod emulator_support;
#[allow(dead_code)]
#[path = "../it/metrics_support.rs"]
mod metrics_support;

#[allow(dead_code)]
#[path = "../../benches/support/soak_world.rs"]
mod soak_world;

mod audit;
mod changes;
mod cluster;
mod failover;
mod follow;
mod journal;
mod migrate;
mod record;
mod store_audit;
mod tls;

use std::process::ExitCode;

use cluster::Cluster;

/// A test: its name and body, given the cluster.
pub type Test = (String, Box<dyn Fn(&Cluster)>);

fn main() -> ExitCode {
    // The audit test's writer processes are this binary again.
    if let Ok(spec) = std::env::var("PGTEST_AUDIT_WRITER") {
        audit::writer_process(&spec);
        return ExitCode::SUCCESS;
    }
    let filter: Option<String> = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let tests: Vec<Test> = journal::tests()
        .into_iter()
        .chain(record::tests())
        .chain(migrate::tests())
        .chain(audit::tests())
        .chain(changes::tests())
        .chain(follow::tests())
        .chain(failover::tests())
        .chain(store_audit::tests())
        .chain(tls::tests())
        .filter(|(name, _)| filter.as_deref().is_none_or(|f| name.contains(f)))
        .collect();
    let cluster = Cluster::start();
    println!(
        "running {} tests on PostgreSQL at 127.0.0.1:{}",
        tests.len(),
        cluster.port
    );
    let (mut passed, mut failed) = (0, Vec::new());
    for (name, test) in &tests {
        let started = std::time::Instant::now();
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| test(&cluster)));
        let secs = started.elapsed().as_secs_f64();
        match result {
            Ok(()) => {
                passed += 1;
                println!("test {name} ... ok ({secs:.1} s)");
            }
            Err(_) => {
                failed.push(name.clone());
                println!("test {name} ... FAILED ({secs:.1} s)");
            }
        }
    }
    if !failed.is_empty() {
        println!("\nfailures:");
        for f in &failed {
            println!("    {f}");
        }
    }
    println!("\n{passed} passed, {} failed", failed.len());
    drop(cluster);
    if failed.is_empty() && passed > 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
