//! `quotatop demo`: the embedded emulator with the demo world on 127.0.0.1 (a free port), the
//! real SDK client and poller pointed at it, and the console. No AWS account needed; the data
//! path is exactly the one `quotatop tui` uses against AWS, only the endpoint differs.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use tokio::sync::mpsc;

use super::console;
use crate::cli::DemoArgs;
use crate::config::Overrides;
use quotatop_aws::batch::{BatchClient, ConnectOptions, StaticCredentials};
use quotatop_aws::poll::{self, PollConfig};
use quotatop_emulator::{self as emulator, ClockMode, EmulatorConfig, Scenario};

/// The demo world, embedded so `quotatop demo` works from any directory.
pub const DEMO_SCENARIO: &str = include_str!("../../scenarios/demo.toml");

/// The demo world's policy (the four classes of docs/policy.md), which its jobs' class tags name: the
/// Policy screen judges the demo by it.
pub const DEMO_POLICY: &str = include_str!("../../crates/policy/fixtures/four_classes.toml");

/// Refresh interval of the demo unless `--refresh` says otherwise: the emulator runs 60× faster
/// than real time, so 2 s is two simulated minutes.
const DEMO_REFRESH_SECS: f64 = 2.0;

/// The demo's temporary directory (its journal and audit log): on the way out of [`run`],
/// however it ends (`q`, Ctrl-C, SIGTERM, SIGHUP, an error, a panic that unwinds), its path is
/// printed and it is removed unless `--keep`.
struct TempDir {
    path: PathBuf,
    keep: bool,
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if !self.path.exists() {
            return;
        }
        use std::io::Write as _;
        let path = self.path.display();
        // Written without `eprintln!`, which panics when stderr is gone (a closed terminal).
        let mut err = std::io::stderr();
        let audit_log = self.path.join("audit.jsonl");
        if self.keep {
            let _ = writeln!(
                err,
                "quotatop demo: kept {path} (journal and audit log); its changes: quotatop audit list --log {}",
                audit_log.display()
            );
            return;
        }
        // What the demo's changes were is said before they go: the demo audits them in its
        // own log, which `audit list` without --log does not read.
        let changes = quotatop_store::audit::read_records(&audit_log)
            .map(|r| quotatop_store::audit::changes(&r).len())
            .unwrap_or(0);
        let _ = match std::fs::remove_dir_all(&self.path) {
            Ok(()) if changes > 0 => writeln!(
                err,
                "quotatop demo: removed {path} (journal and audit log, with {changes} audited \
                 change(s); --keep keeps them for `quotatop audit list --log`)"
            ),
            Ok(()) => writeln!(
                err,
                "quotatop demo: removed {path} (journal and audit log; --keep keeps them)"
            ),
            Err(e) => writeln!(err, "quotatop demo: could not remove {path}: {e}"),
        };
    }
}

/// Makes the demo's directory under the system's temporary directory: a random name
/// (`quotatop-demo-XXXXXX`), created exclusively (never one that already exists, so nothing
/// planted beforehand is used) with mode 0700. Its journal and audit log are then opened
/// without following links (`quotatop_store::private_file`).
pub fn demo_dir() -> anyhow::Result<PathBuf> {
    let parent = std::env::temp_dir();
    let dir = tempfile::Builder::new()
        .prefix("quotatop-demo-")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .tempdir_in(&parent)
        .with_context(|| {
            format!(
                "cannot create the demo's temporary directory in {} (set TMPDIR to a writable directory)",
                parent.display()
            )
        })?;
    // Removed by [`TempDir`] on the way out (or kept with --keep), not by tempfile.
    Ok(dir.keep())
}

/// The demo's emulator: `--scenario` or the built-in world, on a free port, at `--speed`; and
/// the scenario's queue.
fn emulator_config(args: &DemoArgs) -> anyhow::Result<(EmulatorConfig, String)> {
    let scenario = match &args.scenario {
        Some(path) => Scenario::load(path)?,
        None => Scenario::parse(DEMO_SCENARIO).context("the built-in demo scenario")?,
    };
    let queue = scenario.queue.name.clone();
    let mut config = EmulatorConfig::from_scenario(scenario)?;
    config.port = 0;
    if let Some(speed) = args.speed {
        quotatop_emulator::check_speed(speed).map_err(|m| anyhow::anyhow!("--{m}"))?;
        config.clock = ClockMode::Scaled(speed);
    }
    Ok((config, queue))
}

pub fn run(args: &DemoArgs) -> anyhow::Result<()> {
    quotatop_tui::require_terminal()?;
    // First, so it is dropped last: after the console, the journal and the runtime.
    let temp = TempDir {
        path: demo_dir()?,
        keep: args.keep,
    };
    let dir = temp.path.clone();
    let (config, queue) = emulator_config(args)?;
    let mut console_args = args.console.clone();
    console_args.refresh.get_or_insert(DEMO_REFRESH_SECS);
    let mut loaded = console::load(
        &console_args,
        Overrides {
            queues: vec![queue.clone()],
            ..Overrides::default()
        },
    );
    // The built-in world is judged by its own policy, written beside its journal: the Policy
    // screen, the dialogs and the change runner all read this one file.
    if args.scenario.is_none() {
        let policy = dir.join("policy.toml");
        std::fs::write(&policy, DEMO_POLICY)
            .with_context(|| format!("cannot write the demo's policy {}", policy.display()))?;
        loaded.policy_file = Some(policy);
    }
    let refresh = Duration::from_secs_f64(loaded.config.refresh_secs);
    // The demo's history lasts minutes, not days: a stored snapshot every 10 s at most, so
    // time travel has stops to step through soon after it starts.
    let mut journal_config = loaded.config.journal.config();
    journal_config.snapshot_interval_ms = journal_config.snapshot_interval_ms.min(10_000);
    let journal = console::journal(&console_args, journal_config, || {
        Ok(dir.join("journal.sqlite3"))
    });
    // Logging goes to a file: the terminal is the console's.
    let log_warning = console::start_logging();
    if let Some(w) = &log_warning {
        eprintln!("quotatop: {w}");
    }
    let runtime = super::runtime()?;
    runtime.block_on(async {
        let emulator = emulator::start(config).await?;
        let client = BatchClient::connect(ConnectOptions {
            profile: None,
            region: Some("us-east-1".to_string()),
            endpoint_url: Some(emulator.endpoint_url()),
            // The emulator accepts any keys; these never leave 127.0.0.1.
            credentials: Some(StaticCredentials {
                access_key_id: "quotatop-demo".to_string(),
                secret_access_key: "quotatop-demo".to_string(),
            }),
        })
        .await?;
        let mut poller = poll::spawn(
            client.clone(),
            PollConfig {
                interval: refresh,
                progressive: true,
                queues: vec![queue],
                ..PollConfig::default()
            },
        );
        let snapshots = std::mem::replace(&mut poller.snapshots, mpsc::channel(1).1);
        let mut opts = console::options(&loaded, client.source().clone(), &journal);
        opts.warnings.extend(log_warning);
        // The data's clock is the emulator's scenario clock, not one gone wrong.
        opts.status.emulated_clock = true;
        // Priority changes against the demo world are audited in the demo's own log.
        let audit_log = Some(dir.join("audit.jsonl"));
        let (services, mut screens) = console::services(
            console::Through::Client(&client),
            Box::new(poller.refresher()),
            &loaded,
            &journal,
            audit_log.clone(),
        );
        if let (Some(policy), Some(path)) = (&loaded.policy_file, &journal.path) {
            screens = screens.serving(console::policy_reader_at(
                policy.clone(),
                path.clone(),
                audit_log,
                &loaded,
            ));
        }
        let result = console::run(opts, snapshots, (services, screens), journal).await;
        poller.shutdown().await;
        emulator.shutdown().await?;
        result
    })
}
