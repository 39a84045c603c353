//! Which store a command reads or writes: the SQLite journal file, or a team's PostgreSQL
//! store. One resolution for every command, in this order:
//!
//! 1. `--journal PATH`: that file (an explicit file wins, even with a store configured);
//! 2. `--store URL`, or `QUOTATOP_STORE` (clap reads it into the same flag);
//! 3. `[store] url` in the config file;
//! 4. the default journal file in the user's data directory.
//!
//! A store's URL is shown (messages, logs) only through [`StoreLocation`]'s `Display`, which
//! leaves the password out.

use std::path::Path;

use anyhow::Context as _;
use quotatop_store::StoreLocation;
use quotatop_store::journal;

/// `--store`, with `QUOTATOP_STORE` as its environment variable (its value is never shown in
/// `--help`: it may carry a password).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct StoreArgs {
    /// The team's shared store: postgresql://USER@HOST:PORT/DB (the password from PGPASSWORD
    /// or PGPASSFILE, not the command line). Default: `[store] url` of the config, else the
    /// SQLite journal. --journal PATH wins over it.
    #[arg(
        long,
        value_name = "URL",
        env = "QUOTATOP_STORE",
        hide_env_values = true
    )]
    pub store: Option<String>,
}

/// The journal's location (see the module doc). `config_url` is the config's `[store] url`.
pub fn journal_location(
    journal_path: Option<&Path>,
    store: &StoreArgs,
    config_url: Option<&str>,
) -> anyhow::Result<StoreLocation> {
    if let Some(p) = journal_path {
        return Ok(StoreLocation::File(p.to_path_buf()));
    }
    let (url, from) = match (&store.store, config_url) {
        (Some(u), _) => {
            // On the command line (not from QUOTATOP_STORE), a password is in `ps` and the
            // shell's history for anyone on the machine to read.
            let from_env = std::env::var("QUOTATOP_STORE").is_ok_and(|e| e == *u);
            if !from_env && url_has_password(u) {
                eprintln!(
                    "warning: --store's URL carries a password, which `ps` and the shell's history show to others on this machine; give postgresql://USER@HOST/DB and the password in PGPASSFILE (~/.pgpass) or PGPASSWORD instead"
                );
            }
            (u.as_str(), "--store / QUOTATOP_STORE")
        }
        (None, Some(u)) => (u, "[store] url in the config file"),
        (None, None) => return Ok(StoreLocation::File(journal::default_journal_path()?)),
    };
    if !quotatop_store::pg::is_postgres_url(url) {
        anyhow::bail!(
            "{from} is not a postgresql:// URL; for an SQLite journal give --journal PATH"
        );
    }
    StoreLocation::parse(url).with_context(|| format!("{from}: cannot use the store"))
}

/// Whether a `postgresql://` URL carries a password (`USER:PASSWORD@` before the host).
fn url_has_password(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    authority
        .rsplit_once('@')
        .is_some_and(|(userinfo, _)| userinfo.contains(':'))
}

/// [`journal_location`] for a command that has not loaded its config: `[store] url` from
/// `config_path` (`--config`), else the user's config file — read only when neither --journal
/// nor --store says where.
pub fn journal_location_default_config(
    journal_path: Option<&Path>,
    store: &StoreArgs,
    config_path: Option<&Path>,
) -> anyhow::Result<StoreLocation> {
    if journal_path.is_some() || store.store.is_some() {
        return journal_location(journal_path, store, None);
    }
    let loaded = crate::config::load(&crate::config::Overrides {
        config_path: config_path.map(Path::to_path_buf),
        ..Default::default()
    });
    journal_location(None, store, loaded.config.store.url.as_deref())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_password_in_the_url_is_found() {
        use super::url_has_password as p;
        assert!(p("postgresql://alice:pw@db:5432/q"));
        assert!(p("postgres://alice:p%40w@db/q"));
        assert!(!p("postgresql://alice@db:5432/q"));
        assert!(!p("postgresql://db:5432/q"));
        assert!(!p("postgresql://alice@[::1]:5432/q"));
    }
}
