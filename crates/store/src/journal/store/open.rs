//! Opening a journal: a file (created mode 0600, WAL, its schema migrated), an existing one
//! read-only, or a PostgreSQL store.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use rusqlite::Connection;

use super::{Journal, JournalConfig, JournalError};
use crate::StoreLocation;
use crate::db::Conn;
use crate::journal::schema;
use crate::pg::StoreUrl;

/// The (device, inode) of the file at `path`, where the platform has them.
pub(super) fn file_identity(path: &Path) -> Option<(u64, u64)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

/// Creates the journal file (mode 0600, its directory 0700) where missing; refuses a path that
/// is not a regular file (a device, FIFO, directory or link: see
/// [`crate::private_file`]) before SQLite creates anything beside it.
fn create_private(path: &Path) -> Result<(), JournalError> {
    crate::private_file::open(path, "journal", true).map_err(|source| JournalError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(())
}

/// `path` as the path part of an SQLite URI: `%`, `?` and `#` (and anything not printable
/// ASCII) percent-encoded.
fn uri_path(path: &Path) -> String {
    let mut out = String::new();
    for b in path.as_os_str().as_encoded_bytes() {
        match b {
            b'%' | b'?' | b'#' => out.push_str(&format!("%{b:02X}")),
            0x21..=0x7e => out.push(*b as char),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

impl Journal {
    /// Opens (creating it, mode 0600) the journal at `path` and brings its schema up to date.
    ///
    /// Another process opening the same fresh journal at the same moment can make SQLite
    /// refuse at once rather than wait (it does so where waiting could deadlock, e.g. both
    /// switching to WAL), so a `Locked` open is tried again until the busy timeout has passed.
    pub fn open(path: &Path, config: JournalConfig) -> Result<Self, JournalError> {
        create_private(path)?;
        let deadline =
            std::time::Instant::now() + Duration::from_millis(config.busy_timeout_ms.max(1));
        loop {
            match Self::connect(path, config) {
                Err(JournalError::Locked { .. }) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10));
                }
                other => return other,
            }
        }
    }

    /// Opens the journal at `location` for writing: [`Journal::open`] for a file; for a
    /// PostgreSQL store a pooled connection, its schema brought up to date.
    pub fn open_at(location: &StoreLocation, config: JournalConfig) -> Result<Self, JournalError> {
        match location {
            StoreLocation::File(p) => Self::open(p, config),
            StoreLocation::Postgres(url) => Self::open_pg(url, config, true),
        }
    }

    /// Opens the journal at `location` for reading only ([`Journal::open_existing`] for a
    /// file): never writes, so a read-only database role is enough.
    pub fn open_existing_at(
        location: &StoreLocation,
        config: JournalConfig,
    ) -> Result<Self, JournalError> {
        match location {
            StoreLocation::File(p) => Self::open_existing(p, config),
            StoreLocation::Postgres(url) => Self::open_pg(url, config, false),
        }
    }

    fn open_pg(url: &StoreUrl, config: JournalConfig, write: bool) -> Result<Self, JournalError> {
        let store = || url.to_string();
        let (client, stmts) =
            crate::pg::Pool::get(url).map_err(|e| JournalError::Store(e.to_string()))?;
        let mut conn = Conn::Postgres(Box::new(crate::db::PgConn {
            client: Some(client),
            stmts,
            url: url.clone(),
        }));
        let found = if write {
            conn.with(schema::migrate_pg)
        } else {
            conn.with(|x| schema::version_pg(x, schema::PG_COMPONENT))
        }
        .map_err(|e| JournalError::from_db(&store(), e))?;
        let known = schema::PG_VERSION;
        match found {
            Some(found) if found > known => Err(JournalError::TooNew {
                path: store().into(),
                found,
                known,
            }),
            Some(found) if found < known => Err(JournalError::TooOldToRead {
                path: store().into(),
                found,
                known,
            }),
            Some(_) => Ok(Self::with_conn(
                conn,
                StoreLocation::Postgres(url.clone()),
                config,
            )),
            None => Err(JournalError::NoStoreSchema(store())),
        }
    }

    /// Opens an existing journal for reading only (reports, the console's history): never
    /// writes, so an archived journal on a read-only disk, or one whose file or directory is
    /// not writable, can be reported on. [`JournalError::Missing`] when there is none.
    ///
    /// It first opens read-only (`mode=ro`), which shares the writer's WAL index and sees what
    /// a running recorder wrote; when that cannot work (no WAL index and a directory it may
    /// not create one in) it opens the file as immutable, as it was last checkpointed.
    pub fn open_existing(path: &Path, config: JournalConfig) -> Result<Self, JournalError> {
        if !path.exists() {
            return Err(JournalError::Missing(path.to_path_buf()));
        }
        // A FIFO would block SQLite's open; a device or directory is no journal.
        quotatop_model::check_regular_input(path).map_err(|source| JournalError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        let conn = match Self::read_only_conn(path, &config, false) {
            Ok(c) => c,
            Err(first) => match Self::read_only_conn(path, &config, true) {
                Ok(c) => c,
                Err(_) => return Err(first),
            },
        };
        Ok(Self::with_conn(
            Conn::Sqlite(conn),
            StoreLocation::File(path.to_path_buf()),
            config,
        ))
    }
    fn read_only_conn(
        path: &Path,
        config: &JournalConfig,
        immutable: bool,
    ) -> Result<Connection, JournalError> {
        use rusqlite::OpenFlags;
        let sql = |e| JournalError::sql(path, e);
        let abs = std::path::absolute(path).map_err(|source| JournalError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        let uri = format!(
            "file:{}?mode=ro{}",
            uri_path(&abs),
            if immutable { "&immutable=1" } else { "" }
        );
        let conn = Connection::open_with_flags(
            uri,
            OpenFlags::SQLITE_OPEN_READ_ONLY
                | OpenFlags::SQLITE_OPEN_URI
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(sql)?;
        conn.busy_timeout(Duration::from_millis(config.busy_timeout_ms))
            .map_err(sql)?;
        // The first statement that reads the file: a corrupt or unreadable file fails here.
        let found: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(sql)?;
        if found > schema::VERSION {
            return Err(JournalError::TooNew {
                path: path.to_path_buf(),
                found,
                known: schema::VERSION,
            });
        }
        if found < schema::VERSION {
            return Err(JournalError::TooOldToRead {
                path: path.to_path_buf(),
                found,
                known: schema::VERSION,
            });
        }
        // Reading the schema proves the WAL index (if any) could be used too.
        conn.query_row("SELECT count(*) FROM queues", [], |r| r.get::<_, i64>(0))
            .map_err(sql)?;
        Ok(conn)
    }

    fn connect(path: &Path, config: JournalConfig) -> Result<Self, JournalError> {
        let sql = |e| JournalError::sql(path, e);
        let mut conn = Connection::open(path).map_err(sql)?;
        conn.busy_timeout(Duration::from_millis(config.busy_timeout_ms))
            .map_err(sql)?;
        // The first statement that reads the file: a corrupt file fails here.
        let _mode: String = conn
            .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))
            .map_err(sql)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(sql)?;
        match schema::migrate(&mut conn).map_err(sql)? {
            Ok(_) => {}
            Err(found) => {
                return Err(JournalError::TooNew {
                    path: path.to_path_buf(),
                    found,
                    known: schema::VERSION,
                });
            }
        }
        Ok(Self::with_conn(
            Conn::Sqlite(conn),
            StoreLocation::File(path.to_path_buf()),
            config,
        ))
    }

    fn with_conn(conn: Conn, location: StoreLocation, config: JournalConfig) -> Self {
        let identity = match &location {
            StoreLocation::File(p) => file_identity(p),
            StoreLocation::Postgres(_) => None,
        };
        Self {
            db: std::sync::Mutex::new(conn),
            location,
            config,
            prev: HashMap::new(),
            last_snapshot: None,
            last_snapshot_partial: false,
            last_usage: HashMap::new(),
            last_prune: None,
            identity,
        }
    }
}
