//! Which of several recorders of one source writes a store: the one holding a PostgreSQL
//! session advisory lock, on a connection of its own, for as long as it records.
//!
//! [`Lead::spawn`] starts a thread that tries the lock once a second (standby) until it holds
//! it (leader), then checks that connection once a second. When the leader's process dies
//! (kill -9 included) its session ends and the server releases the lock: a standby takes it
//! within a second. A leader whose lock connection fails is told ([`Role::Lost`]) and must
//! stop recording, since the lock may already be another's.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::pg::{PgError, StoreUrl, error_text};

/// How often a standby tries the lock, and a leader checks its session.
pub const LEAD_CHECK: Duration = Duration::from_secs(1);
/// The lock's first key: every quotatop recorder lock, whatever the source.
const NAMESPACE: &str = "quotatop-record";

/// A recorder's part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// The lock not tried yet.
    Starting,
    /// Another recorder leads (or the store cannot be reached yet: the reason).
    Standby(Option<String>),
    Leader,
    /// Led, and lost the lock's connection (the reason): stop recording.
    Lost(String),
}

/// The leadership thread's state, read by the recorder.
pub struct Lead {
    role: Arc<Mutex<Role>>,
    stop: Arc<AtomicBool>,
}

impl Lead {
    /// Starts contending for the lead of `source` (any text naming what is recorded) on the
    /// store at `url`.
    pub fn spawn(url: StoreUrl, source: String) -> std::io::Result<Self> {
        let role = Arc::new(Mutex::new(Role::Starting));
        let stop = Arc::new(AtomicBool::new(false));
        let (r, s) = (role.clone(), stop.clone());
        std::thread::Builder::new()
            .name("record-lead".into())
            .spawn(move || run(&url, &source, &r, &s))?;
        Ok(Self { role, stop })
    }

    pub fn role(&self) -> Role {
        self.role.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl Drop for Lead {
    /// Stops the thread, which closes the lock's session (releasing it) within a second.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn set(role: &Mutex<Role>, r: Role) {
    *role.lock().unwrap_or_else(|p| p.into_inner()) = r;
}

fn run(url: &StoreUrl, source: &str, role: &Mutex<Role>, stop: &AtomicBool) {
    let mut client: Option<postgres::Client> = None;
    let mut leading = false;
    while !stop.load(Ordering::Relaxed) {
        if leading {
            let check = match client.as_mut() {
                Some(c) => c.is_valid(LEAD_CHECK * 2).map_err(|e| error_text(&e)),
                None => Err("no connection".to_string()),
            };
            if let Err(why) = check {
                tracing::error!(store = %url, %why, "lost the recorder's lead");
                set(
                    role,
                    Role::Lost(format!("the lock's connection to {url} failed: {why}")),
                );
                return;
            }
        } else {
            match try_lock(url, source, &mut client) {
                Ok(true) => {
                    leading = true;
                    tracing::info!(store = %url, "leading: this recorder writes the store");
                    set(role, Role::Leader);
                }
                Ok(false) => set(role, Role::Standby(None)),
                Err(e) => {
                    client = None;
                    set(role, Role::Standby(Some(e.to_string())));
                }
            }
        }
        std::thread::sleep(LEAD_CHECK);
    }
}

/// One try of the lock on `client` (connected first when `None`).
fn try_lock(
    url: &StoreUrl,
    source: &str,
    client: &mut Option<postgres::Client>,
) -> Result<bool, PgError> {
    if client.is_none() {
        *client = Some(url.connect()?);
    }
    let Some(c) = client.as_mut() else {
        return Ok(false);
    };
    c.query_one(
        "SELECT pg_try_advisory_lock(hashtext($1), hashtext($2))",
        &[&NAMESPACE, &source],
    )
    .and_then(|r| r.try_get::<_, bool>(0))
    .map_err(|e| PgError::Query {
        store: url.to_string(),
        message: error_text(&e),
    })
}
