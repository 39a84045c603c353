//! The shared store's connection: a PostgreSQL URL (or libpq key=value string), its
//! credentials, TLS mode and a small pool of open clients.
//!
//! - Credentials come from the URL, else `PGPASSWORD`, else the password file (`PGPASSFILE`,
//!   default `~/.pgpass`, libpq's format). [`StoreUrl`]'s `Display` never shows the password:
//!   it is what logs, errors, the journal and the audit log may carry.
//! - TLS: this build has no TLS for PostgreSQL. `sslmode=disable` and `prefer` (libpq's
//!   default: TLS when the server offers it, else plain) connect in plain text;
//!   `require`, `verify-ca` and `verify-full` are refused when the URL is read, with what to do
//!   instead, so nothing is sent in clear text that the URL said must not be.
//! - A connection attempt gives up after 5 s unless the URL sets `connect_timeout`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use postgres::config::{Host, SslMode};
use postgres::{Client, Config, NoTls};

use crate::db::StmtCache;

/// Idle clients kept per URL by [`Pool`]; more are closed when returned.
const POOL_IDLE: usize = 4;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a pooled client's check before reuse may take.
const VALID_WITHIN: Duration = Duration::from_secs(2);

/// What is wrong with a store URL or its connection.
#[derive(Debug, thiserror::Error)]
pub enum PgError {
    #[error("the store URL is not a PostgreSQL connection string: {0}")]
    Parse(String),
    #[error(
        "the store URL asks for sslmode={0}, and this quotatop has no TLS for PostgreSQL; connect over a unix socket, 127.0.0.1 or an SSH tunnel with sslmode=disable"
    )]
    TlsRequired(String),
    #[error("cannot read the PostgreSQL password file {path}")]
    PassFile {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot connect to {store}: {message}")]
    Connect { store: String, message: String },
    #[error("{store}: {message}")]
    Query { store: String, message: String },
}

/// A parsed store location: a PostgreSQL connection string with its credentials resolved.
#[derive(Clone)]
pub struct StoreUrl {
    config: Box<Config>,
    /// The connection string as given (the pool's key; never shown).
    raw: String,
}

impl std::fmt::Debug for StoreUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StoreUrl({self})")
    }
}

impl std::fmt::Display for StoreUrl {
    /// `postgresql://user@host:port/dbname`: no password, no other option.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let user = self.config.get_user().unwrap_or("");
        let host = match self.config.get_hosts().first() {
            Some(Host::Tcp(h)) => h.clone(),
            Some(Host::Unix(p)) => p.display().to_string(),
            None => "localhost".to_string(),
        };
        let port = self.config.get_ports().first().copied().unwrap_or(5432);
        let db = self.config.get_dbname().unwrap_or(user);
        write!(f, "postgresql://{user}@{host}:{port}/{db}")
    }
}

/// Whether `s` names a PostgreSQL store rather than an SQLite file.
pub fn is_postgres_url(s: &str) -> bool {
    s.starts_with("postgresql://") || s.starts_with("postgres://")
}

/// The value of `sslmode` in a URL's query or a key=value string, as written.
fn sslmode_of(raw: &str) -> Option<String> {
    let at = raw.find("sslmode=")?;
    let rest = &raw[at + "sslmode=".len()..];
    let end = rest.find(['&', ' ', '#']).unwrap_or(rest.len());
    Some(rest[..end].to_string())
}

impl StoreUrl {
    /// Parses `raw` and resolves its credentials from the environment: `PGUSER` when it names
    /// no user, `PGPASSWORD` or the password file when it carries no password.
    pub fn parse(raw: &str) -> Result<Self, PgError> {
        Self::parse_with(raw, &|k| std::env::var(k).ok())
    }

    /// [`StoreUrl::parse`] with the environment given (tests).
    pub fn parse_with(raw: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<Self, PgError> {
        if let Some(mode) = sslmode_of(raw)
            && !matches!(mode.as_str(), "disable" | "prefer")
        {
            return Err(PgError::TlsRequired(mode));
        }
        let mut config: Config = raw.parse().map_err(|e: postgres::Error| {
            // The parser's message names the option, never its value.
            PgError::Parse(e.to_string())
        })?;
        if config.get_ssl_mode() == SslMode::Require {
            return Err(PgError::TlsRequired("require".into()));
        }
        if config.get_hosts().is_empty() {
            config.host(&env("PGHOST").unwrap_or_else(|| "localhost".into()));
        }
        if config.get_user().is_none()
            && let Some(u) = env("PGUSER").or_else(|| env("USER"))
        {
            config.user(&u);
        }
        if config.get_dbname().is_none()
            && let Some(d) = env("PGDATABASE")
        {
            config.dbname(&d);
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_password().is_none() {
            if let Some(p) = env("PGPASSWORD") {
                config.password(p);
            } else if let Some(p) = password_from_file(&config, env)? {
                config.password(p);
            }
        }
        config.application_name("quotatop");
        Ok(Self {
            config: Box::new(config),
            raw: raw.to_string(),
        })
    }

    /// Opens a new client (not pooled). Blocking; callable inside a tokio runtime too (it
    /// then connects from a thread of its own), but the client must then be used and dropped
    /// off the runtime's threads.
    pub fn connect(&self) -> Result<Client, PgError> {
        crate::db::off_runtime(|| {
            self.config.connect(NoTls).map_err(|e| PgError::Connect {
                store: self.to_string(),
                message: error_text(&e),
            })
        })
    }

    /// Whether a password was found (in the URL, the environment or the password file).
    pub fn has_password(&self) -> bool {
        self.config.get_password().is_some()
    }
}

/// A PostgreSQL error as text: the server's message (and detail) when it sent one.
pub(crate) fn error_text(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => match db.detail() {
            Some(d) => format!("{} ({d})", db.message()),
            None => db.message().to_string(),
        },
        None => {
            use std::error::Error as _;
            match e.source() {
                Some(s) => format!("{e}: {s}"),
                None => e.to_string(),
            }
        }
    }
}

/// The password file's entry for `config`, as libpq reads it: `PGPASSFILE`, else `~/.pgpass`
/// (a missing default file is no error); lines `host:port:database:user:password`, `*` matches
/// anything, `\:` and `\\` are escapes, `#` starts a comment.
fn password_from_file(
    config: &Config,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<String>, PgError> {
    let (path, explicit) = match env("PGPASSFILE") {
        Some(p) => (PathBuf::from(p), true),
        None => match env("HOME") {
            Some(h) => (Path::new(&h).join(".pgpass"), false),
            None => return Ok(None),
        },
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if !explicit && e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(PgError::PassFile { path, source }),
    };
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(h)) => h.clone(),
        Some(Host::Unix(_)) | None => "localhost".to_string(),
    };
    let port = config
        .get_ports()
        .first()
        .copied()
        .unwrap_or(5432)
        .to_string();
    let user = config.get_user().unwrap_or("").to_string();
    let db = config.get_dbname().unwrap_or(&user).to_string();
    let wanted = [host, port, db, user];
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let fields = split_pgpass(line);
        if fields.len() == 5
            && fields[..4]
                .iter()
                .zip(&wanted)
                .all(|(f, w)| f == "*" || f == w)
        {
            return Ok(fields.into_iter().nth(4));
        }
    }
    Ok(None)
}

fn split_pgpass(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(n) = chars.next()
                    && let Some(last) = out.last_mut()
                {
                    last.push(n);
                }
            }
            ':' if out.len() < 5 => out.push(String::new()),
            c => {
                if let Some(last) = out.last_mut() {
                    last.push(c);
                }
            }
        }
    }
    out
}

/// A few idle clients per store URL, kept for the next reader: the console's history screens
/// and reports open the journal per question, and a new PostgreSQL session costs a process
/// fork and an authentication on the server. A client is checked (not closed) before reuse.
pub(crate) struct Pool;

type Idle = HashMap<String, Vec<(Client, StmtCache)>>;
static IDLE: Mutex<Option<Idle>> = Mutex::new(None);

impl Pool {
    /// An open client for `url` with its prepared statements: an idle one if any, else a new
    /// one.
    pub(crate) fn get(url: &StoreUrl) -> Result<(Client, StmtCache), PgError> {
        // Off any runtime: the check blocks, and a dead client dropped here drops its runtime.
        crate::db::off_runtime(|| Self::get_here(url))
    }

    fn get_here(url: &StoreUrl) -> Result<(Client, StmtCache), PgError> {
        loop {
            let reused = {
                let mut idle = IDLE.lock().unwrap_or_else(|p| p.into_inner());
                idle.get_or_insert_with(HashMap::new)
                    .get_mut(&url.raw)
                    .and_then(Vec::pop)
            };
            match reused {
                // An idle client whose server session ended (a restart, a failover, an
                // administrator's pg_terminate_backend) only learns it on its next statement:
                // one empty query finds out before the caller's first one fails.
                Some((mut c, s)) => {
                    if !c.is_closed() && c.is_valid(VALID_WITHIN).is_ok() {
                        return Ok((c, s));
                    }
                }
                None => return Ok((url.connect()?, StmtCache::new())),
            }
        }
    }

    /// Returns a client for the next [`Pool::get`] of `url` (closed when the pool is full, or
    /// when the client is closed or inside a transaction).
    pub(crate) fn put(url: &StoreUrl, client: Client, stmts: StmtCache) {
        if client.is_closed() {
            return;
        }
        let mut idle = IDLE.lock().unwrap_or_else(|p| p.into_inner());
        let list = idle
            .get_or_insert_with(HashMap::new)
            .entry(url.raw.clone())
            .or_default();
        if list.len() < POOL_IDLE {
            list.push((client, stmts));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn display_never_shows_the_password() {
        let u = StoreUrl::parse_with(
            "postgresql://team:s3cret-pw@db.example:6543/quotatop",
            &env_of(&[]),
        )
        .unwrap();
        assert_eq!(u.to_string(), "postgresql://team@db.example:6543/quotatop");
        assert!(!format!("{u:?}").contains("s3cret-pw"));
        assert!(u.has_password());
    }

    #[test]
    fn tls_modes_that_need_tls_are_refused_by_name() {
        for mode in ["require", "verify-ca", "verify-full"] {
            let e =
                StoreUrl::parse_with(&format!("postgresql://u@h/db?sslmode={mode}"), &env_of(&[]))
                    .unwrap_err();
            assert!(matches!(&e, PgError::TlsRequired(m) if m == mode), "{e}");
            assert!(e.to_string().contains("sslmode=disable"));
        }
        for mode in ["disable", "prefer"] {
            StoreUrl::parse_with(&format!("postgresql://u@h/db?sslmode={mode}"), &env_of(&[]))
                .unwrap();
        }
    }

    #[test]
    fn password_from_environment_then_password_file() {
        let dir = tempfile::TempDir::new().unwrap();
        let file = dir.path().join("pgpass");
        std::fs::write(
            &file,
            "# comment\nother:5432:*:team:wrong\nh:5433:db:team:pa\\:ss\n*:*:*:*:fallback\n",
        )
        .unwrap();
        let f = file.to_str().unwrap();
        let u = StoreUrl::parse_with("postgresql://team@h:5433/db", &env_of(&[("PGPASSFILE", f)]))
            .unwrap();
        assert_eq!(u.config.get_password(), Some(&b"pa:ss"[..]));
        let u =
            StoreUrl::parse_with("postgresql://x@h:1/db", &env_of(&[("PGPASSFILE", f)])).unwrap();
        assert_eq!(u.config.get_password(), Some(&b"fallback"[..]));
        let u = StoreUrl::parse_with(
            "postgresql://team@h:5433/db",
            &env_of(&[("PGPASSFILE", f), ("PGPASSWORD", "env")]),
        )
        .unwrap();
        assert_eq!(u.config.get_password(), Some(&b"env"[..]));
        // A named file that cannot be read is an error; a missing ~/.pgpass is not.
        let missing = dir.path().join("none");
        assert!(
            StoreUrl::parse_with(
                "postgresql://team@h/db",
                &env_of(&[("PGPASSFILE", missing.to_str().unwrap())])
            )
            .is_err()
        );
        let home = dir.path().to_str().unwrap();
        let u = StoreUrl::parse_with("postgresql://team@h/db", &env_of(&[("HOME", home)])).unwrap();
        assert!(!u.has_password());
    }
}
