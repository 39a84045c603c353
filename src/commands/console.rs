//! What `quotatop demo` and `quotatop tui` share: the layered config turned into the console's
//! options, problems reported on stderr before the terminal is taken over, and the console run
//! on a channel of snapshots. The callers only decide where the snapshots come from.

use tokio::sync::mpsc;

use crate::cli::ConsoleArgs;
use crate::config::{self, Loaded, Overrides};
use crate::model::{Snapshot, Source};
use crate::tui::keymap::KeyMap;
use crate::tui::theme::Theme;
use crate::tui::{self, AppOptions, StatusInfo};

/// The config layers with these flags on top (`queues`, `aws` from the caller).
pub fn load(console: &ConsoleArgs, overrides: Overrides) -> Loaded {
    config::load(&Overrides {
        config_path: console.config.clone(),
        theme: console.theme.clone(),
        no_color: console.no_color,
        read_only: console.read_only,
        refresh_secs: console.refresh,
        ..overrides
    })
}

/// Builds the console's options; every problem (bad config file, unknown theme, bad key
/// binding) is printed to stderr now, while the terminal is still ours, and shown again in the
/// console's footer.
pub fn options(loaded: &Loaded, source: Source) -> AppOptions {
    let mut warnings = loaded.warnings.clone();
    let theme = match Theme::resolve(&loaded.config.theme, loaded.theme_dir.as_deref()) {
        Ok(t) => t,
        Err(e) => {
            warnings.push(format!("{e}; using dark"));
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
        },
        queue: loaded.config.queues.first().cloned(),
        loop_rule: loaded.config.loops.rule(),
        clock: Box::new(tui::wall_clock),
        warnings,
    }
}

/// Runs the console until the user quits.
pub async fn run(opts: AppOptions, snapshots: mpsc::Receiver<Snapshot>) -> anyhow::Result<()> {
    tui::run(opts, snapshots).await?;
    Ok(())
}
