//! Where the journal (and the audit log) live: an SQLite file, or a shared PostgreSQL store.

use std::path::PathBuf;

use crate::pg::{PgError, StoreUrl, is_postgres_url};

/// The journal's location: a file on this machine or a PostgreSQL database for a team.
#[derive(Debug, Clone)]
pub enum StoreLocation {
    File(PathBuf),
    Postgres(StoreUrl),
}

impl StoreLocation {
    /// A `postgresql://` (or `postgres://`) URL is a PostgreSQL store; anything else is a
    /// file path.
    pub fn parse(s: &str) -> Result<Self, PgError> {
        if is_postgres_url(s) {
            Ok(StoreLocation::Postgres(StoreUrl::parse(s)?))
        } else {
            Ok(StoreLocation::File(PathBuf::from(s)))
        }
    }
}

impl std::fmt::Display for StoreLocation {
    /// The file's path, or the URL without its password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreLocation::File(p) => write!(f, "{}", p.display()),
            StoreLocation::Postgres(u) => write!(f, "{u}"),
        }
    }
}

impl From<PathBuf> for StoreLocation {
    fn from(p: PathBuf) -> Self {
        StoreLocation::File(p)
    }
}
