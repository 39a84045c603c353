//! `quotatop tui` (and bare `quotatop`): the console against AWS Batch, through the standard
//! credential chain or `--profile`, `--region`, `--endpoint-url`.

use std::time::Duration;

use anyhow::Context as _;
use tokio::sync::mpsc;

use super::console;
use crate::cli::TuiArgs;
use crate::config::Overrides;
use quotatop_aws::batch::{BatchClient, ConnectOptions};
use quotatop_aws::poll::{self, PollConfig};
use quotatop_store::audit::{ChangeLog, StoreAuditLog};
use quotatop_store::journal;
use quotatop_store::{StoreLocation, pg::StoreUrl};

/// What the console should say about the audit log at start: a torn last line (which would
/// refuse every priority change), else what reconciling unknown outcomes found.
async fn audit_log_warning(client: &BatchClient) -> Option<String> {
    if let Some(w) = quotatop_store::audit::default_path()
        .as_deref()
        .and_then(quotatop_store::audit::tail_warning)
    {
        return Some(quotatop_model::clean_text(&w));
    }
    let path = quotatop_store::audit::default_path()?;
    console::reconcile_on_start(client, &path).await
}

pub fn run(args: &TuiArgs) -> anyhow::Result<()> {
    quotatop_tui::require_terminal()?;
    let loaded = console::load(
        &args.console,
        Overrides {
            queues: args.target.queues.clone(),
            profile: args.target.aws.profile.clone(),
            region: args.target.aws.region.clone(),
            endpoint_url: args.target.aws.endpoint_url.clone(),
            ..Overrides::default()
        },
    );
    let c = &loaded.config;
    let refresh = Duration::from_secs_f64(c.refresh_secs);
    let connect = ConnectOptions {
        profile: c.profile.clone(),
        region: c.region.clone(),
        endpoint_url: c.endpoint_url.clone(),
        credentials: None,
    };
    let queues = c.queues.clone();
    let named = super::sources::named(
        c,
        &args.target.sources,
        args.target.aws.explicit(),
        loaded.broken.as_deref(),
    )?;
    let store = followed_store(args, c.store.url.as_deref())?;
    let journal = match &store {
        // Following a store: its recorder writes the history; this console writes none.
        Some(url) => console::Journal {
            path: None,
            handle: None,
            shared: Some(StoreLocation::Postgres(url.clone())),
        },
        None => console::journal(
            &args.console,
            c.journal.config(),
            journal::default_journal_path,
        ),
    };
    // Logging goes to a file: the terminal is the console's.
    let log_warning = console::start_logging();
    if let Some(w) = &log_warning {
        eprintln!("quotatop: {w}");
    }
    let runtime = super::runtime()?;
    if let Some(url) = store {
        let following = Follow {
            url,
            named,
            connect,
            log_warning,
        };
        return runtime.block_on(run_following(following, &loaded, journal));
    }
    if !named.is_empty() {
        return runtime.block_on(run_fleet(named, &loaded, journal, log_warning, refresh));
    }
    runtime.block_on(run_single(
        connect,
        queues,
        &loaded,
        journal,
        log_warning,
        refresh,
    ))
}

/// The console over one Batch endpoint (the flags' or the config's): its poller seeded from
/// the journal, changes through its client. Unknown outcomes in the audit log are decided on
/// start.
async fn run_single(
    connect: ConnectOptions,
    queues: Vec<String>,
    loaded: &crate::config::Loaded,
    journal: console::Journal,
    log_warning: Option<String>,
    refresh: Duration,
) -> anyhow::Result<()> {
    // Connecting only loads configuration (no call yet): a bad profile or a missing region
    // is reported here, before the terminal is taken over.
    let client = BatchClient::connect(connect).await?;
    let warm = journal
        .path
        .as_deref()
        .and_then(|p| super::warm::load(p, &queues, client.source()));
    let mut poller = poll::spawn_seeded(
        client.clone(),
        PollConfig {
            interval: refresh,
            progressive: true,
            queues,
            ..PollConfig::default()
        },
        warm.as_ref(),
    );
    let live = std::mem::replace(&mut poller.snapshots, mpsc::channel(1).1);
    let snapshots = super::warm::chain(warm, live);
    let mut opts = console::options(loaded, client.source().clone(), &journal);
    opts.warnings.extend(log_warning);
    if let Some(w) = audit_log_warning(&client).await {
        eprintln!("quotatop: {w}");
        opts.warnings.push(w);
    }
    let through = console::Through::Client(&client);
    let refresher = Box::new(poller.refresher());
    let result = until_quit(opts, snapshots, (through, refresher), loaded, journal).await;
    poller.shutdown().await;
    result
}

/// The console over several named sources: one poller per source, merged; each change goes
/// through its queue's source. Unknown outcomes in the audit log are decided on start, each
/// by the client of the source it was made against.
async fn run_fleet(
    named: Vec<crate::config::SelectedSource>,
    loaded: &crate::config::Loaded,
    journal: console::Journal,
    log_warning: Option<String>,
    refresh: Duration,
) -> anyhow::Result<()> {
    let sources = super::sources::connect(named).await?;
    let mut poller = super::sources::spawn(
        &sources,
        &PollConfig {
            interval: refresh,
            progressive: true,
            ..PollConfig::default()
        },
    );
    let snapshots = std::mem::replace(&mut poller.snapshots, mpsc::channel(1).1);
    let first = sources
        .first()
        .map(|s| s.client.source().clone())
        .unwrap_or_default();
    let mut opts = console::options(loaded, first, &journal);
    opts.warnings.extend(log_warning);
    if let Some(w) = quotatop_store::audit::default_path()
        .as_deref()
        .and_then(quotatop_store::audit::tail_warning)
    {
        let w = quotatop_model::clean_text(&w);
        eprintln!("quotatop: {w}");
        opts.warnings.push(w);
    } else if let Some(path) = quotatop_store::audit::default_path() {
        let clients: Vec<&BatchClient> = sources.iter().map(|s| &s.client).collect();
        if let Some(w) = console::reconcile_on_start_with(&clients, &path).await {
            eprintln!("quotatop: {w}");
            opts.warnings.push(w);
        }
    }
    let through = console::Through::Sources(&sources);
    let refresher = Box::new(poller.refresher());
    let result = until_quit(opts, snapshots, (through, refresher), loaded, journal).await;
    poller.shutdown().await;
    result
}

/// The console on `snapshots` until the user quits: changes and log reads through the client
/// or the sources, refreshes through the poller, the audit log in the user's data directory.
async fn until_quit(
    opts: quotatop_tui::AppOptions,
    snapshots: mpsc::Receiver<quotatop_model::Snapshot>,
    (through, refresh): (console::Through<'_>, console::Refresh),
    loaded: &crate::config::Loaded,
    journal: console::Journal,
) -> anyhow::Result<()> {
    let audit_log = quotatop_store::audit::default_path();
    let (services, screens) = console::services(through, refresh, loaded, &journal, audit_log);
    console::run(opts, snapshots, (services, screens), journal).await
}

/// The store the console follows instead of polling AWS: `--store URL` (or `QUOTATOP_STORE`),
/// else the config's `[store] url` (a bare `quotatop` follows the team's store when the config
/// names one); none with `--local` or `--journal PATH`, which keep the console on its own
/// poller and journal file.
fn followed_store(args: &TuiArgs, config_url: Option<&str>) -> anyhow::Result<Option<StoreUrl>> {
    if args.local
        || args.console.journal.is_some()
        || (args.store.store.is_none() && config_url.is_none())
    {
        return Ok(None);
    }
    match super::store::journal_location(None, &args.store, config_url)? {
        StoreLocation::Postgres(url) => Ok(Some(url)),
        StoreLocation::File(_) => Ok(None),
    }
}

/// What a console following a store starts from.
struct Follow {
    url: StoreUrl,
    named: Vec<crate::config::SelectedSource>,
    connect: ConnectOptions,
    log_warning: Option<String>,
}

/// The store's audit log, where a console following the store audits its changes; when it
/// cannot be used (a role without the grants, the log not made yet by one that may), the
/// console runs with changes refused and says why: they never go to a file instead.
async fn store_change_log(url: &StoreUrl) -> anyhow::Result<(Option<ChangeLog>, Option<String>)> {
    let at = url.clone();
    let opened = tokio::task::spawn_blocking(move || {
        StoreAuditLog::open(&at, quotatop_store::audit::DEFAULT_STORE_LOG, true)
    })
    .await?;
    Ok(match opened {
        Ok(log) => (Some(log.into()), None),
        Err(e) => (
            None,
            Some(quotatop_model::clean_text(&format!(
                "priority changes are refused: they are audited in the store, and {}",
                quotatop_model::error_chain(&e)
            ))),
        ),
    })
}

/// The console on the store's snapshots (no AWS polling): the status bar names the store and
/// the snapshot's age; time travel and the scorecard read the store; a change goes to AWS
/// through the operator's own credentials (`--profile`, the environment or a `[[sources]]`
/// entry), audited in the store's audit log (the team's one log), never in a file here.
async fn run_following(
    f: Follow,
    loaded: &crate::config::Loaded,
    journal: console::Journal,
) -> anyhow::Result<()> {
    // Once before the terminal is taken: a store that cannot be read now (wrong password, no
    // schema, unreachable) is an error with its reason, not an empty console.
    let location = StoreLocation::Postgres(f.url.clone());
    let checked = location.clone();
    tokio::task::spawn_blocking(move || {
        journal::Journal::open_existing_at(&checked, journal::JournalConfig::default()).map(drop)
    })
    .await?
    .with_context(|| format!("cannot follow the store {location}"))?;
    let (store_log, log_problem) = store_change_log(&f.url).await?;
    let mut following = super::follow::spawn(f.url)?;
    let audit = quotatop_store::audit::default_path();
    let (mut opts, (mut services, screens)) = if f.named.is_empty() {
        // Only configuration is loaded here: no call is made until a change is.
        let client = BatchClient::connect(f.connect).await?;
        let mut opts = console::options(loaded, client.source().clone(), &journal);
        if let Some(w) = audit_log_warning(&client).await {
            eprintln!("quotatop: {w}");
            opts.warnings.push(w);
        }
        let (mut services, screens) = console::services(
            console::Through::Client(&client),
            following.refresher(),
            loaded,
            &journal,
            audit.clone(),
        );
        services.changes = store_log.map(|log| console::api_runner(&client, None, loaded, log));
        (opts, (services, screens))
    } else {
        let sources = super::sources::connect(f.named).await?;
        let first = sources
            .first()
            .map(|s| s.client.source().clone())
            .unwrap_or_default();
        let opts = console::options(loaded, first, &journal);
        let (mut services, screens) = console::services(
            console::Through::Sources(&sources),
            following.refresher(),
            loaded,
            &journal,
            audit,
        );
        services.changes = store_log.map(|log| console::fleet_changes(&sources, loaded, log));
        (opts, (services, screens))
    };
    opts.warnings.extend(f.log_warning);
    opts.warnings.extend(log_problem);
    services.journal_state = Some(following.problem_fn());
    if let Some(store) = &journal.shared {
        tracing::info!(%store, "following the store; no AWS polling");
    }
    console::run(
        opts,
        following.take_snapshots(),
        (services, screens),
        journal,
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tui(local: bool, journal: Option<&str>, store: Option<&str>) -> TuiArgs {
        let mut a = TuiArgs {
            local,
            ..TuiArgs::default()
        };
        a.console.journal = journal.map(Into::into);
        a.store.store = store.map(Into::into);
        a
    }

    /// `[store] url` in the config makes a bare console follow the store; `--local` (even with
    /// `--store` or QUOTATOP_STORE) and `--journal PATH` keep it on its own poller; `--store`
    /// wins over the config.
    #[test]
    fn a_configured_store_is_followed_unless_local() {
        let config = Some("postgresql://reader@db.internal:5432/quotatop");
        let other = Some("postgresql://other@h:5433/q");
        let followed = |a: TuiArgs, c: Option<&str>| {
            followed_store(&a, c)
                .unwrap()
                .map(|u| u.to_string())
                .unwrap_or_default()
        };
        assert_eq!(
            followed(TuiArgs::default(), config),
            "postgresql://reader@db.internal:5432/quotatop"
        );
        assert_eq!(followed(TuiArgs::default(), None), "");
        assert_eq!(followed(tui(true, None, None), config), "");
        assert_eq!(followed(tui(true, None, other), config), "");
        assert_eq!(followed(tui(false, Some("j.sqlite3"), None), config), "");
        assert_eq!(
            followed(tui(false, None, other), config),
            "postgresql://other@h:5433/q"
        );
    }
}
