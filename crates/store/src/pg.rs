//! The shared store's connection: a PostgreSQL URL (or libpq key=value string), its
//! credentials, TLS mode and a small pool of open clients.
//!
//! - Credentials come from the URL, else `PGPASSWORD`, else the password file (`PGPASSFILE`,
//!   default `~/.pgpass`, libpq's format). [`StoreUrl`]'s `Display` never shows the password:
//!   it is what logs, errors, the journal and the audit log may carry.
//! - TLS (`crate::tls`, rustls): `sslmode=disable|prefer|require|verify-ca|verify-full` and
//!   `sslrootcert=FILE|system`, as libpq reads them; both are taken out of the string before
//!   the client's own parser (which knows neither `verify-*` nor `sslrootcert`) reads the rest.
//!   A `verify-*` mode without a CA certificate is refused when the URL is read.
//! - A connection attempt gives up after 5 s unless the URL sets `connect_timeout`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use postgres::config::Host;
use postgres::{Client, Config, NoTls};
use quotatop_model::clean_text;

use crate::tls::{RustlsConnect, SslMode, Tls};

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
        "the store URL has sslmode={0}, which is none of disable, prefer, require, verify-ca, verify-full"
    )]
    SslMode(String),
    #[error(transparent)]
    Tls(#[from] crate::tls::TlsError),
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
    tls: Tls,
    /// `sslmode` and `sslrootcert` as given (for messages).
    mode: SslMode,
    root: Option<String>,
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

/// `raw` without its `sslmode` and `sslrootcert` options, and their values: in a URL's query
/// (`?a=b&c=d`, values percent-decoded) or a key=value string (values unquoted).
fn take_tls_options(raw: &str) -> (String, Option<String>, Option<String>) {
    let (mut mode, mut root) = (None, None);
    let mut take = |key: &str, value: String| match key {
        "sslmode" => {
            mode = Some(value);
            true
        }
        "sslrootcert" => {
            root = Some(value);
            true
        }
        _ => false,
    };
    if is_postgres_url(raw) {
        let Some((base, query)) = raw.split_once('?') else {
            return (raw.to_string(), None, None);
        };
        let kept: Vec<&str> = query
            .split('&')
            .filter(|kv| {
                let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
                !take(k, percent_decode(v))
            })
            .collect();
        let rest = if kept.is_empty() {
            base.to_string()
        } else {
            format!("{base}?{}", kept.join("&"))
        };
        return (rest, mode, root);
    }
    let kept: Vec<&str> = raw
        .split_whitespace()
        .filter(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            !take(k.trim(), v.trim_matches('\'').to_string())
        })
        .collect();
    (kept.join(" "), mode, root)
}

/// `%XX` escapes of a URL's query value decoded (anything else kept as written).
fn percent_decode(v: &str) -> String {
    let bytes = v.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl StoreUrl {
    /// Parses `raw` and resolves its credentials from the environment: `PGUSER` when it names
    /// no user, `PGPASSWORD` or the password file when it carries no password.
    pub fn parse(raw: &str) -> Result<Self, PgError> {
        Self::parse_with(raw, &|k| std::env::var(k).ok())
    }

    /// [`StoreUrl::parse`] with the environment given (tests).
    pub fn parse_with(raw: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<Self, PgError> {
        let (rest, mode, root) = take_tls_options(raw);
        let mode = match mode.or_else(|| env("PGSSLMODE")) {
            None => SslMode::Prefer,
            Some(m) => SslMode::parse(&m).ok_or_else(|| PgError::SslMode(clean_text(&m)))?,
        };
        let root = root.or_else(|| env("PGSSLROOTCERT"));
        let mut config: Config = rest.parse().map_err(|e: postgres::Error| {
            // The parser's message names the option, never its value.
            PgError::Parse(e.to_string())
        })?;
        // The client's own mode: whether TLS is tried (prefer) or required.
        config.ssl_mode(match mode {
            SslMode::Disable => postgres::config::SslMode::Disable,
            SslMode::Prefer => postgres::config::SslMode::Prefer,
            _ => postgres::config::SslMode::Require,
        });
        let home = env("HOME").map(PathBuf::from);
        let tls = Tls::new(mode, root.as_deref(), home.as_deref())?;
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
            tls,
            mode,
            root,
            raw: raw.to_string(),
        })
    }

    /// Opens a new client (not pooled). Blocking; callable inside a tokio runtime too (it
    /// then connects from a thread of its own), but the client must then be used and dropped
    /// off the runtime's threads.
    pub fn connect(&self) -> Result<Client, PgError> {
        crate::db::off_runtime(|| {
            let connected = match &self.tls {
                Tls::Off => self.config.connect(NoTls),
                Tls::On(c) => self.config.connect(RustlsConnect(c.clone())),
            };
            connected.map_err(|e| PgError::Connect {
                store: self.to_string(),
                message: format!("{}{}", error_text(&e), self.tls_hint(&e)),
            })
        })
    }

    /// What to check when a connection with TLS failed in its TLS part: the mode and the CA
    /// file, named.
    fn tls_hint(&self, e: &postgres::Error) -> String {
        if matches!(self.tls, Tls::Off) || e.as_db_error().is_some() {
            return String::new();
        }
        let text = error_text(e).to_lowercase();
        if !(text.contains("tls") || text.contains("certificate") || text.contains("ssl")) {
            return String::new();
        }
        let root = self
            .root
            .as_deref()
            .map(clean_text)
            .unwrap_or_else(|| "~/.postgresql/root.crt".into());
        match self.mode {
            SslMode::VerifyFull => format!(
                " (sslmode=verify-full: the server's certificate must be signed by a CA in sslrootcert={root} and name the host connected to)"
            ),
            SslMode::VerifyCa => format!(
                " (sslmode=verify-ca: the server's certificate must be signed by a CA in sslrootcert={root})"
            ),
            m => format!(
                " (sslmode={}: the server must accept TLS; sslmode=disable connects in plain text)",
                m.name()
            ),
        }
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
    fn tls_options_are_read_and_taken_out_of_the_string() {
        let dir = tempfile::TempDir::new().unwrap();
        let home = dir.path().to_str().unwrap();
        let pairs = [("HOME", home)];
        let env = env_of(&pairs);
        for mode in ["disable", "prefer", "require"] {
            let u = StoreUrl::parse_with(
                &format!("postgresql://u:pw@h/db?sslmode={mode}&connect_timeout=3"),
                &env,
            )
            .unwrap();
            assert_eq!(u.mode.name(), mode);
            assert_eq!(
                u.config.get_connect_timeout(),
                Some(&Duration::from_secs(3))
            );
            assert_eq!(matches!(u.tls, Tls::Off), mode == "disable");
        }
        // verify-* without a CA: refused when read, naming both options.
        // The password is a word no temporary path can hold by chance (the message names the
        // home directory, whose random name once held "pw").
        let e = StoreUrl::parse_with(
            "postgresql://u:Secret-Word-42@h/db?sslmode=verify-full",
            &env,
        )
        .unwrap_err();
        assert!(e.to_string().contains("sslrootcert="), "{e}");
        assert!(!e.to_string().contains("Secret-Word-42"), "{e}");
        let e =
            StoreUrl::parse_with("host=h user=u sslmode=verify-ca dbname=db", &env).unwrap_err();
        assert!(e.to_string().contains("sslmode=verify-ca"), "{e}");
        // A path percent-encoded in a URL, quoted in key=value.
        let (rest, mode, root) = take_tls_options(
            "postgresql://u@h/db?sslrootcert=%2Ftmp%2Fca%20x.pem&sslmode=verify-ca",
        );
        assert_eq!(
            (rest.as_str(), mode.as_deref(), root.as_deref()),
            (
                "postgresql://u@h/db",
                Some("verify-ca"),
                Some("/tmp/ca x.pem")
            )
        );
        let (rest, mode, root) =
            take_tls_options("host=h sslmode='require' sslrootcert=/c.pem user=u");
        assert_eq!(
            (rest.as_str(), mode.as_deref(), root.as_deref()),
            ("host=h user=u", Some("require"), Some("/c.pem"))
        );
        // An unknown mode is named, its control characters cleaned.
        let e = StoreUrl::parse_with("postgresql://u@h/db?sslmode=%1b%5b31mx", &env).unwrap_err();
        assert!(matches!(e, PgError::SslMode(_)), "{e}");
        assert!(!e.to_string().contains('\u{1b}'), "{e}");
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
