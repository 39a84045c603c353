use std::path::PathBuf;

/// What can go wrong with the journal. The console and `record` keep running without history
/// on any of these: they are reported, never a panic. Messages do not repeat their `source`:
/// show one as text with [`quotatop_model::error_chain`].
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error("cannot create the journal's directory {path}")]
    CreateDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot open the journal {path}")]
    Open {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("no journal at {0} (run the console or `quotatop record` first)")]
    Missing(PathBuf),
    #[error(
        "the journal {path} is not a readable database ({message}); move it away to start a new one"
    )]
    Corrupt { path: PathBuf, message: String },
    #[error("the journal {path} is locked by another process")]
    Locked { path: PathBuf },
    #[error("the journal {path} has schema version {found}; this quotatop knows up to {known}")]
    TooNew {
        path: PathBuf,
        found: i64,
        known: i64,
    },
    #[error(
        "the journal {path} has schema version {found}, older than this quotatop's {known}; it can only be read after a writable open (`quotatop record` or the console) upgrades it"
    )]
    TooOldToRead {
        path: PathBuf,
        found: i64,
        known: i64,
    },
    #[error(
        "the journal {path} is read-only here ({message}); check the permissions of the file, its directory and its -wal/-shm files"
    )]
    ReadOnly { path: PathBuf, message: String },
    #[error("journal {path}: {message}")]
    Sql { path: PathBuf, message: String },
    #[error("the journal {0} was deleted, moved or replaced while open; starting a new one there")]
    Replaced(PathBuf),
    #[error("cannot start the journal's writer thread: {0}")]
    Thread(String),
    #[error("cannot encode or decode a stored snapshot: {0}")]
    Codec(String),
    #[error("no user data directory could be determined; give the journal path explicitly")]
    NoDataDir,
    /// The shared store could not be reached or refused a statement (its URL shown without
    /// the password).
    #[error("{0}")]
    Store(String),
    #[error(
        "the store {0} has no journal yet; run `quotatop record --store URL` (or `quotatop journal migrate --to URL`) with a role that may create tables first"
    )]
    NoStoreSchema(String),
    /// A write of a recorder that no longer leads its source, refused in its transaction.
    #[error("{store}: {message}")]
    Fenced { store: String, message: String },
}

impl JournalError {
    /// Classifies an SQLite error for the database at `path`.
    pub(crate) fn sql(path: &std::path::Path, e: rusqlite::Error) -> Self {
        use rusqlite::ErrorCode;
        if let rusqlite::Error::SqliteFailure(f, msg) = &e {
            match f.code {
                ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt => {
                    return JournalError::Corrupt {
                        path: path.to_path_buf(),
                        message: msg.clone().unwrap_or_else(|| f.to_string()),
                    };
                }
                ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked => {
                    return JournalError::Locked {
                        path: path.to_path_buf(),
                    };
                }
                ErrorCode::ReadOnly | ErrorCode::PermissionDenied => {
                    return JournalError::ReadOnly {
                        path: path.to_path_buf(),
                        message: msg.clone().unwrap_or_else(|| f.to_string()),
                    };
                }
                _ => {}
            }
        }
        JournalError::Sql {
            path: path.to_path_buf(),
            message: e.to_string(),
        }
    }

    /// A statement's error in the store `store` (a path or a URL without its password).
    pub(crate) fn from_db(store: &str, e: crate::db::DbError) -> Self {
        use crate::db::DbError;
        match e {
            DbError::Sqlite(e) => JournalError::sql(std::path::Path::new(store), e),
            DbError::Codec(m) => JournalError::Codec(m),
            DbError::Fenced(message) => JournalError::Fenced {
                store: store.to_string(),
                message,
            },
            e @ DbError::Postgres(_) => JournalError::Store(format!("{store}: {e}")),
            e @ DbError::Type { .. } => JournalError::Sql {
                path: store.into(),
                message: e.to_string(),
            },
        }
    }

    /// Whether writing again later cannot help (the file itself is unusable, or another
    /// recorder leads now).
    pub fn is_fatal(&self) -> bool {
        matches!(
            self,
            JournalError::Corrupt { .. }
                | JournalError::TooNew { .. }
                | JournalError::Fenced { .. }
        )
    }
}
