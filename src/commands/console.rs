//! What `quotatop demo` and `quotatop tui` share: the layered config turned into the console's
//! options, problems reported on stderr before the terminal is taken over, and the console run
//! on a channel of snapshots. The callers only decide where the snapshots come from.

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::mpsc;

use crate::services::{self, ApiRunner, JournalReader, ScorecardSettings};
use quotatop_actions::JobTagger;
use quotatop_aws::batch::BatchClient;
use quotatop_store::StoreLocation;
use quotatop_store::audit::{AuditLog, AwsContext, ChangeLog, Operator};
use quotatop_tui::data::HISTORY_LEN;
use quotatop_tui::effects::{ChangeRunner, HistoryReader, Services};
use quotatop_tui::registry::Screens;

use crate::cli::ConsoleArgs;

mod reconcile;
use crate::config::{self, Loaded, Overrides};
use quotatop_model::{Snapshot, Source};
use quotatop_store::journal::{JournalConfig, JournalError, JournalHandle};
use quotatop_tui::keymap::KeyMap;
use quotatop_tui::theme::Theme;
use quotatop_tui::{self as tui, AppOptions, History, StatusInfo};
pub use reconcile::{reconcile_on_start, reconcile_on_start_with};

mod actions;

/// The config layers with these flags on top (`queues`, `aws` from the caller).
pub fn load(console: &ConsoleArgs, overrides: Overrides) -> Loaded {
    config::load(&Overrides {
        config_path: console.config.clone(),
        theme: console.theme.clone(),
        no_color: console.no_color,
        read_only: console.read_only,
        tag_justification: console.tag_justification,
        refresh_secs: console.refresh,
        ..overrides
    })
}

/// Sends the console's `tracing` output to `console.log` in the state directory, never to the
/// terminal it draws on. A log that cannot be opened is a warning, not a failure.
pub fn start_logging() -> Option<String> {
    let opened = quotatop_store::journal::state_dir()
        .map_err(anyhow::Error::from)
        .and_then(|dir| {
            super::record::init_named_file_logging(
                &dir,
                "console.log",
                super::log_file::DEFAULT_ROTATION,
                tracing::Level::INFO,
            )
        });
    match opened {
        Ok(path) => {
            tracing::info!("console started; log {}", path.display());
            None
        }
        Err(e) => Some(format!("no console log: {e:#}")),
    }
}

/// Builds the console's options; every problem (bad config file, unknown theme, bad key
/// binding) is printed to stderr now, while the terminal is still ours, and shown again in the
/// console's footer.
pub fn options(loaded: &Loaded, source: Source, journal: &Journal) -> AppOptions {
    let mut warnings = loaded.warnings.clone();
    let history = match &journal.handle {
        // A console following a store reads the recorder's history.
        None if journal.shared.is_some() => History::Recording,
        None => History::Off,
        Some(h) => match h.status().unavailable {
            None => History::Recording,
            Some(reason) => {
                warnings.push(format!("history unavailable: {reason}"));
                History::Unavailable
            }
        },
    };
    let theme = match Theme::resolve(&loaded.config.theme, loaded.theme_dir.as_deref()) {
        Ok(t) => t,
        Err(e) => {
            warnings.push(format!("{}; using dark", quotatop_model::error_chain(&e)));
            Theme::dark()
        }
    };
    let (keymap, key_warnings) = KeyMap::with_overrides(&loaded.config.keys);
    warnings.extend(key_warnings);
    for w in &warnings {
        eprintln!("quotatop: {w}");
    }
    AppOptions {
        theme,
        no_color: loaded.config.no_color,
        theme_dir: loaded.theme_dir.clone(),
        keymap,
        status: StatusInfo {
            source,
            read_only: loaded.config.read_only,
            read_only_from: loaded.read_only_from.clone(),
            history,
            config_broken: loaded.broken.clone(),
            messages: 0,
            store: journal.shared.as_ref().map(ToString::to_string),
            emulated_clock: false,
        },
        queue: loaded.config.queues.first().cloned(),
        loop_rule: loaded.config.loop_rule(),
        clock: Box::new(tui::wall_clock),
        warnings,
        door: Arc::new(crate::commands::policy::gate::door(
            change_rules(loaded),
            &Operator::current(),
        )),
        storage_price: tui::StoragePrice {
            gb_month: quotatop_analysis::scorecard::s3_price(&loaded.config.prices),
            currency: loaded.config.currency.clone(),
        },
    }
}

/// The log pane's reader through `clients` (`None` outside a runtime: the pane says so).
fn log_reader(
    clients: Vec<(Option<String>, BatchClient)>,
) -> Option<Arc<dyn quotatop_tui::logs::LogReader>> {
    let runtime = tokio::runtime::Handle::try_current().ok()?;
    Some(Arc::new(services::logs::ApiLogs { clients, runtime }))
}

/// What the console's refresh key does: asks the poller (or the store follower) for data now.
pub type Refresh = Box<dyn Fn() + Send>;

/// Priority changes through the sources' clients, each change through its queue's source,
/// audited in `log`.
pub fn fleet_changes(
    sources: &[super::sources::Connected],
    loaded: &Loaded,
    log: ChangeLog,
) -> Arc<dyn ChangeRunner> {
    Arc::new(services::changes::BySource {
        runners: sources
            .iter()
            .map(|s| {
                let runner = api_runner(&s.client, Some(&s.name), loaded, log.clone());
                (s.name.clone(), runner)
            })
            .collect(),
    })
}

/// Priority changes through `client`, audited in `log` with the source's name.
pub fn api_runner(
    client: &BatchClient,
    name: Option<&str>,
    loaded: &Loaded,
    log: ChangeLog,
) -> Arc<dyn ChangeRunner> {
    let source = client.source().clone();
    Arc::new(ApiRunner {
        api: Arc::new(client.clone()),
        log,
        operator: Operator::current(),
        aws: AwsContext::of(&source, name),
        // A config file that cannot be used never loosens policy: no changes until fixed.
        read_only: loaded.config.read_only || loaded.broken.is_some(),
        policy: Some(loaded.config.priority.describe(&loaded.policy_source())),
        tagger: loaded
            .config
            .tag_justification
            .then(|| Arc::new(client.clone()) as Arc<dyn JobTagger>),
        rules: change_rules(loaded),
    })
}

/// The rules this console's dialogs, bulk actions and change runner judge every change by
/// (one function, so they cannot differ): read-only mode (or a config file that cannot be
/// used), `[priority]`, and the class policy in force.
pub fn change_rules(loaded: &Loaded) -> quotatop_analysis::gate::Rules {
    let read_only = loaded.config.read_only.then(|| {
        format!(
            "read-only mode: priority changes are disabled (read-only is set by {})",
            loaded
                .read_only_from
                .as_deref()
                .unwrap_or("--read-only or read_only = true")
        )
    });
    crate::commands::policy::gate::rules(loaded, read_only)
}

/// Whom a console's changes and log reads go to: one Batch client, or several named sources
/// (each change through its queue's source).
#[derive(Clone, Copy)]
pub enum Through<'a> {
    Client(&'a BatchClient),
    Sources(&'a [super::sources::Connected]),
}

/// The services of a console connected to Batch: priority changes `through` the client or
/// sources, with `audit_log` (none when the OS gives no home directory: the dialog then
/// reports that), and refreshes through the poller; and the screens, serving their own work's
/// services by type (the log pane's reads through the same client or sources, the Policy
/// screen's reader, the Share screen's audit log).
pub fn services(
    through: Through,
    refresh: Refresh,
    loaded: &Loaded,
    journal: &Journal,
    audit_log: Option<PathBuf>,
) -> (Services, Screens) {
    let changes = audit_log.clone().map(|path| {
        let log: ChangeLog = AuditLog::new(path).into();
        match through {
            Through::Client(client) => api_runner(client, None, loaded, log),
            Through::Sources(sources) => fleet_changes(sources, loaded, log),
        }
    });
    let actions = audit_log
        .clone()
        .map(|path| actions::job_actions(through, loaded, path));
    let clients = match through {
        Through::Client(client) => vec![(None, client.clone())],
        Through::Sources(sources) => sources
            .iter()
            .map(|c| (Some(c.name.clone()), c.client.clone()))
            .collect(),
    };
    // The scorecard reads the journal the console writes, when there is one that opened, or
    // the store the console follows.
    let history = journal
        .handle
        .as_ref()
        .is_some_and(|h| h.status().unavailable.is_none());
    let path = journal.shared.clone().or_else(|| {
        journal
            .path
            .clone()
            .filter(|_| history)
            .map(StoreLocation::File)
    });
    let (window_ms, options) = loaded.config.scorecard_options();
    let scorecard = path.clone().map(|p| {
        services::journal_scorecard(
            p,
            ScorecardSettings {
                window_ms,
                options,
                audit_log: scorecard_audit(journal, audit_log.clone()),
                rules: loaded.config.rules(),
            },
        )
    });
    let history = path.map(|path| {
        Arc::new(JournalReader {
            location: path,
            spark_len: HISTORY_LEN,
        }) as Arc<dyn HistoryReader>
    });
    let mut screens = Screens::builtin();
    if let Some(reader) = policy_reader(loaded, journal, audit_log.clone()) {
        screens = screens.serving(reader);
    }
    if let Some(reader) = log_reader(clients) {
        screens = screens.serving(reader);
    }
    if let Some(path) = audit_log {
        screens =
            screens.serving(
                Arc::new(crate::services::share_changes::AuditShareChanges { path })
                    as Arc<dyn quotatop_tui::effects::ShareChangeReader>,
            );
    }
    let services = Services {
        changes,
        actions,
        refresh: Some(refresh),
        scorecard,
        history,
        // Set by `run`, which owns the journal's writer.
        journal_state: None,
    };
    (services, screens)
}

/// The audit log the scorecard's exceptions name operators from: a console following a store
/// reads the store's log (the team's one log, where its changes and every other console's
/// go), else the file `audit_log` on this machine.
pub fn scorecard_audit(journal: &Journal, audit_log: Option<PathBuf>) -> Option<ChangeLog> {
    match &journal.shared {
        Some(StoreLocation::Postgres(url)) => Some(
            quotatop_store::audit::StoreAuditLog::reader(
                url,
                quotatop_store::audit::DEFAULT_STORE_LOG,
            )
            .into(),
        ),
        _ => audit_log.map(|p| AuditLog::new(p).into()),
    }
}

/// The Policy screen's reader: the policy beside the config (or `loaded.policy_file`, the
/// demo's), judged over the journal the console writes; `None` without a journal.
fn policy_reader(
    loaded: &Loaded,
    journal: &Journal,
    audit_log: Option<PathBuf>,
) -> Option<Arc<dyn quotatop_tui::policy::PolicyReader>> {
    let journal = journal.path.clone()?;
    let policy = crate::commands::policy::policy_path(&crate::cli::PolicyFileArgs {
        policy: None,
        config: loaded.path.clone(),
    })?;
    Some(policy_reader_at(policy, journal, audit_log, loaded))
}

/// The Policy screen's reader of the policy at `policy`, judged over the journal at `journal`.
pub fn policy_reader_at(
    policy: PathBuf,
    journal: PathBuf,
    audit_log: Option<PathBuf>,
    loaded: &Loaded,
) -> Arc<dyn quotatop_tui::policy::PolicyReader> {
    Arc::new(services::policy::PolicyFromJournal {
        policy,
        journal,
        audit_log,
        window: crate::commands::policy::window(&loaded.config),
    })
}

/// The console's journal: where it is and the writer feeding it (`None` with `--no-journal`),
/// or the shared store a console following it reads its history from (it writes none).
pub struct Journal {
    pub path: Option<PathBuf>,
    pub handle: Option<JournalHandle>,
    pub shared: Option<StoreLocation>,
}

/// Opens the journal the flags ask for: none with `--no-journal`, `--journal PATH`, or
/// `default` (which may fail: no home directory). Never fails: a journal that cannot be
/// opened is an unavailable handle, and the console runs without history.
pub fn journal(
    console: &ConsoleArgs,
    config: JournalConfig,
    default: impl FnOnce() -> Result<PathBuf, JournalError>,
) -> Journal {
    if console.no_journal {
        return Journal {
            path: None,
            handle: None,
            shared: None,
        };
    }
    let path = match &console.journal {
        Some(p) => Ok(p.clone()),
        None => default(),
    };
    match path {
        Ok(path) => {
            let handle = JournalHandle::start(&path, config);
            Journal {
                path: Some(path),
                handle: Some(handle),
                shared: None,
            }
        }
        Err(e) => Journal {
            path: None,
            handle: Some(JournalHandle::unavailable(&e)),
            shared: None,
        },
    }
}

/// Records every snapshot into the journal (never blocking: a full writer queue drops the
/// snapshot from history, not from the screen) and passes it on to the console.
fn tee(
    mut snapshots: mpsc::Receiver<Snapshot>,
    handle: Arc<JournalHandle>,
) -> (mpsc::Receiver<Snapshot>, tokio::task::JoinHandle<()>) {
    let (tx, rx) = mpsc::channel(4);
    let task = tokio::spawn(async move {
        let mut journaled = JournalPace::default();
        while let Some(s) = snapshots.recv().await {
            if journaled.keep(&s, std::time::Instant::now()) {
                handle.record(s.clone());
            }
            if tx.send(s).await.is_err() {
                break;
            }
        }
    });
    (rx, task)
}

/// Which snapshots the console journals: every refresh's own, and of the snapshots sent while
/// a refresh runs (the early look, progress once a second) only one every
/// [`JournalPace::IN_PROGRESS_EVERY`], so that a long first load of a large queue is kept now
/// and then without writing every job once a second.
#[derive(Debug, Default)]
struct JournalPace {
    last_in_progress: Option<std::time::Instant>,
}

impl JournalPace {
    const IN_PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_secs(30);

    fn keep(&mut self, s: &Snapshot, now: std::time::Instant) -> bool {
        if !s.health.in_progress {
            return true;
        }
        let due = self
            .last_in_progress
            .is_none_or(|t| now.duration_since(t) >= Self::IN_PROGRESS_EVERY);
        if due {
            self.last_in_progress = Some(now);
        }
        due
    }
}

/// Runs the console with `screens` until the user quits, recording what it receives into
/// `journal`.
pub async fn run(
    opts: AppOptions,
    snapshots: mpsc::Receiver<Snapshot>,
    (services, screens): (Services, Screens),
    journal: Journal,
) -> anyhow::Result<()> {
    // The console drops a job list of tens of MB every refresh at 50,000 jobs: with glibc's
    // mmap threshold fixed, such lists are mapped and given back when freed instead of staying
    // resident in the heap (measured by `benches/console_scale.rs`: 164 → 142 MB at 50,000).
    quotatop_replay::fix_mmap_threshold();
    let Some(handle) = journal.handle else {
        let result = tui::run_screens(opts, screens, snapshots, services).await;
        log_end(&result);
        result?;
        return Ok(());
    };
    let handle = Arc::new(handle);
    let mut services = services;
    let watched = Arc::downgrade(&handle);
    services.journal_state = Some(Arc::new(move || {
        watched.upgrade().and_then(|h| h.status().unavailable)
    }));
    let (snapshots, task) = tee(snapshots, handle.clone());
    let result = tui::run_screens(opts, screens, snapshots, services).await;
    log_end(&result);
    task.abort();
    let _ = task.await;
    // The tee is gone, so this is the last reference; writing what is queued and joining the
    // writer thread blocks, so it runs off the async threads.
    if let Ok(h) = Arc::try_unwrap(handle) {
        let _ = tokio::task::spawn_blocking(move || h.shutdown()).await;
    }
    result?;
    Ok(())
}

fn log_end(result: &Result<(), tui::TuiError>) {
    match result {
        Ok(()) => tracing::info!("console closed"),
        Err(e) => tracing::error!("console failed: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_journal_keeps_every_refresh_and_a_progress_snapshot_every_30_s() {
        let t0 = std::time::Instant::now();
        let at = |s: u64| t0 + std::time::Duration::from_secs(s);
        let snap = |in_progress: bool| {
            let mut s = Snapshot::default();
            s.health.in_progress = in_progress;
            s
        };
        let mut pace = JournalPace::default();
        let kept: Vec<bool> = [
            (0, true),
            (1, true),
            (2, false),
            (29, true),
            (31, true),
            (40, false),
        ]
        .into_iter()
        .map(|(t, progress)| pace.keep(&snap(progress), at(t)))
        .collect();
        // The early look at 0 s, not the progress at 1 s, the refresh at 2 s, not the progress
        // at 29 s, the progress at 31 s, the refresh at 40 s.
        assert_eq!(kept, [true, false, true, false, true, true]);
    }

    fn args(journal: Option<PathBuf>, no_journal: bool) -> ConsoleArgs {
        ConsoleArgs {
            journal,
            no_journal,
            ..ConsoleArgs::default()
        }
    }

    #[test]
    fn no_journal_means_no_handle() {
        let j = journal(&args(None, true), JournalConfig::default(), || {
            Err(JournalError::NoDataDir)
        });
        assert!(j.handle.is_none() && j.path.is_none());
    }

    #[test]
    fn a_journal_that_cannot_open_is_unavailable_not_an_error() {
        let j = journal(&args(None, false), JournalConfig::default(), || {
            Err(JournalError::NoDataDir)
        });
        let status = j.handle.map(|h| h.status());
        assert!(status.is_some_and(|s| s.unavailable.is_some()));
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a-file");
        std::fs::write(&file, "not a directory").unwrap();
        let j = journal(
            &args(Some(file.join("journal.sqlite3")), false),
            JournalConfig::default(),
            || unreachable!("--journal wins"),
        );
        assert!(j.handle.unwrap().status().unavailable.is_some());
    }

    #[tokio::test]
    async fn every_snapshot_is_recorded_and_passed_on() {
        let dir = tempfile::tempdir().unwrap();
        let j = journal(
            &args(Some(dir.path().join("j.sqlite3")), false),
            JournalConfig::default(),
            || unreachable!(),
        );
        let handle = Arc::new(j.handle.unwrap());
        let (tx, rx) = mpsc::channel(4);
        let (mut out, task) = tee(rx, handle.clone());
        for i in 0..3 {
            let s = Snapshot {
                taken_at: 1_770_000_000_000 + i * 1_000,
                ..Snapshot::default()
            };
            tx.send(s.clone()).await.unwrap();
            assert_eq!(out.recv().await, Some(s));
        }
        drop(tx);
        task.await.unwrap();
        handle.flush();
        assert_eq!(handle.status().snapshots_written, 3);
    }
}
