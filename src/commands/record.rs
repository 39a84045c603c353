//! `quotatop record`: the poller and the journal without a screen (a server, a systemd unit),
//! logging to the state directory, stopping cleanly on SIGTERM/SIGINT.
//!
//! [`run`] connects, starts the poller and the journal writer, and hands every snapshot to
//! [`record_loop`] until [`shutdown_signal`]; [`init_named_file_logging`] sends `tracing` to
//! `<state dir>/record.log`, rotated by size while it runs. Here: the command's setup from its
//! arguments; in `lead`, leading a shared store or standing by, and one recording session; in
//! `loops`, what becomes of each snapshot; in `endpoint`, `/metrics` and its policy task; in
//! `logging`, record.log.

mod endpoint;
mod events;
mod lead;
mod logging;
mod loops;

use anyhow::Context;

use crate::cli::RecordArgs;
use quotatop_store::StoreLocation;
use quotatop_store::journal;

use super::log_file::Rotation;
use endpoint::Metrics;
use lead::lead_and_record;
pub use logging::init_named_file_logging;
pub use loops::{RecordSummary, record_loop, serve_loop};

/// The target of every event `record` logs, from any of its parts: record.log names
/// `quotatop::commands::record` (what its readers match), not the part's module.
pub(crate) const LOG_TARGET: &str = module_path!();

/// `quotatop record`.
pub fn run(args: &RecordArgs) -> anyhow::Result<()> {
    let loaded = crate::config::load(&crate::config::Overrides {
        config_path: args.config.clone(),
        ..Default::default()
    });
    let location = journal_location(args, &loaded)?;
    let log_dir = match &args.log_dir {
        Some(d) => d.clone(),
        None => journal::state_dir()?,
    };
    let rotation = Rotation {
        max_bytes: args.log_max_bytes,
        keep: args.log_keep,
    };
    let log = init_named_file_logging(&log_dir, "record.log", rotation, args.log_level.into())
        .with_context(|| format!("cannot write record.log in {}", log_dir.display()))?;
    eprintln!(
        "quotatop record: {}, log {}; stop with Ctrl-C or SIGTERM",
        location.as_ref().map_or_else(
            || "no journal (--no-journal)".to_string(),
            |l| format!("journal {l}")
        ),
        log.display()
    );
    for w in &loaded.warnings {
        eprintln!("warning: {w}");
    }
    let journal_config = loaded.config.journal.config();
    // `[[sources]]` of the config, picked by `--source`: one poller each, one journal.
    let named = super::sources::named_for_queues(
        &loaded,
        &args.target.queues,
        &args.target.sources,
        args.target.aws.explicit(),
    )?;
    if let Some(addr) = args.metrics_addr {
        crate::metrics::server::check_bind(addr, args.metrics_allow_remote)?;
    }
    // The class policy beside the config: its breaches are exported with the metrics.
    let class_policy = match super::policy::for_changes(loaded.path.as_deref()) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("warning: {e:#}; no policy metrics");
            None
        }
    };
    let metrics_ctx = crate::metrics::Context {
        rule: loaded.config.loop_rule(),
        gpus: quotatop_analysis::GpuTable::with_overrides(loaded.config.gpus.clone()),
        policy: crate::metrics::PolicyBreaches::default(),
        outside: crate::metrics::OutsideChanges::default(),
    };
    let session = Session {
        args,
        location: location.as_ref(),
        named,
        class_policy,
        policy_cell: metrics_ctx.policy.clone(),
        policy_window: super::policy::window(&loaded.config),
        journal_config,
        events_named: events::Named::default(),
    };
    let rt = super::runtime()?;
    rt.block_on(serve(&session, metrics_ctx))
}

/// The metrics endpoint, the signal handler, the event intake (with `--events-queue`) and the
/// recording sessions, until a signal or an error ends them.
async fn serve(session: &Session<'_>, metrics_ctx: crate::metrics::Context) -> anyhow::Result<()> {
    let args = session.args;
    let latest = if session.location.is_some() {
        crate::metrics::server::Latest::default()
    } else {
        crate::metrics::server::Latest::without_journal()
    };
    let outside = metrics_ctx.outside.clone();
    let metrics = Metrics::start(args.metrics_addr, &latest, metrics_ctx).await?;
    // SIGTERM/SIGINT, whether it comes while standing by or recording.
    let stop = tokio_util::sync::CancellationToken::new();
    let signal = {
        let stop = stop.clone();
        tokio::spawn(async move {
            shutdown_signal().await;
            stop.cancel();
        })
    };
    let intake = events::start(
        args,
        session.location,
        session.journal_config,
        (stop.clone(), outside, session.events_named.clone()),
    )
    .await?;
    let result = lead_and_record(session, &latest, &metrics, &stop).await;
    if let Some(task) = intake {
        stop.cancel();
        let _ = task.await;
    }
    signal.abort();
    metrics.stop().await;
    result
}

/// What every recording session of `record` starts from.
struct Session<'a> {
    args: &'a RecordArgs,
    location: Option<&'a StoreLocation>,
    /// `[[sources]]` of the config, picked by `--source`: one poller each, one journal.
    named: Vec<crate::config::SelectedSource>,
    /// The class policy beside the config: its breaches are exported with the metrics.
    class_policy: Option<quotatop_policy::Policy>,
    policy_cell: crate::metrics::PolicyBreaches,
    policy_window: String,
    journal_config: journal::JournalConfig,
    /// Where the event intake sends the jobs Batch's events name: the current session's
    /// poller.
    events_named: events::Named,
}

/// Where `record` journals: `None` with `--no-journal`; else `--journal`, `--store`
/// (`QUOTATOP_STORE`), `[store] url` or the default file. A file is refused before anything is
/// created when it is a device, FIFO, directory or link.
fn journal_location(
    args: &RecordArgs,
    loaded: &crate::config::Loaded,
) -> anyhow::Result<Option<StoreLocation>> {
    if args.no_journal {
        return Ok(None);
    }
    let location = super::store::journal_location(
        args.journal.as_deref(),
        &args.store,
        loaded.config.store.url.as_deref(),
    )?;
    if let StoreLocation::File(path) = &location {
        quotatop_store::private_file::check_kind(path, "journal").map_err(|e| {
            anyhow::anyhow!(
                "{}; record keeps its history in the journal (to keep none and only serve /metrics, add --no-journal)",
                quotatop_model::clean_text(&e.to_string())
            )
        })?;
    }
    Ok(Some(location))
}

/// Resolves on SIGTERM or SIGINT (Ctrl-C elsewhere).
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) {
            (Ok(mut term), Ok(mut int)) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = int.recv() => {}
                }
            }
            _ => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

#[cfg(test)]
mod tests;
