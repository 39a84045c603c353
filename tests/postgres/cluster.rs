//! A throwaway PostgreSQL cluster: `initdb` into a temporary directory, `postgres` listening on
//! 127.0.0.1 on a free port (unix sockets in the same directory), stopped and removed on drop.
//!
//! PostgreSQL refuses to run as root: as root both run as `nobody` (through `setpriv`, which
//! execs, so the child is the server itself), with the directory handed to that user. The
//! server gets the parent-death signal too, so a test process killed outright does not leave
//! it running. The superuser `postgres` has a random password (scram-sha-256 over TCP): tests
//! connect with it, as a team's recorder would.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Cluster {
    child: Child,
    pub port: u16,
    pub password: String,
    /// Socket directory (and the parent of the data directory).
    pub dir: tempfile::TempDir,
    next_db: std::sync::atomic::AtomicUsize,
}

fn bin_dir() -> PathBuf {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .expect("no /usr/lib/postgresql: install Debian's postgresql package (scripts/test does)")
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|p| p.join("initdb").exists())
        .collect();
    dirs.sort_by_key(|p| {
        p.parent()
            .and_then(|v| v.file_name())
            .and_then(|v| v.to_str())
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(0)
    });
    dirs.pop()
        .expect("no initdb under /usr/lib/postgresql/*/bin: install the postgresql package")
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}

/// `program args…` as the unprivileged user when root (nobody: uid/gid 65534).
fn as_user(program: &Path) -> Command {
    if is_root() {
        let mut c = Command::new("setpriv");
        c.args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--pdeathsig=TERM",
        ])
        .arg(program);
        c
    } else {
        Command::new(program)
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Cluster {
    pub fn start() -> Cluster {
        let bin = bin_dir();
        let dir = tempfile::TempDir::new().unwrap();
        if is_root() {
            std::os::unix::fs::chown(dir.path(), Some(65534), Some(65534)).unwrap();
        }
        let password = format!("pw-{}", uuid::Uuid::new_v4().simple());
        let pwfile = dir.path().join("pwfile");
        std::fs::write(&pwfile, &password).unwrap();
        if is_root() {
            std::os::unix::fs::chown(&pwfile, Some(65534), Some(65534)).unwrap();
        }
        let data = dir.path().join("data");
        let out = as_user(&bin.join("initdb"))
            .args(["-D"])
            .arg(&data)
            .args([
                "-U",
                "postgres",
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                "--no-sync",
                "--encoding=UTF8",
                "--locale=C",
            ])
            .arg(format!("--pwfile={}", pwfile.display()))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "initdb failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let port = free_port();
        let log = std::fs::File::create(dir.path().join("server.log")).unwrap();
        let child = as_user(&bin.join("postgres"))
            .arg("-D")
            .arg(&data)
            .args(["-p", &port.to_string(), "-k"])
            .arg(dir.path())
            .args([
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                "fsync=off",
                "-c",
                "max_connections=200",
            ])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        let cluster = Cluster {
            child,
            port,
            password,
            dir,
            next_db: Default::default(),
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            match postgres::Client::connect(&cluster.admin_url("postgres"), postgres::NoTls) {
                Ok(_) => break,
                Err(e) if Instant::now() < deadline => {
                    let _ = e;
                    std::thread::sleep(Duration::from_millis(100));
                }
                Err(e) => panic!("the test cluster did not start: {e}; {}", cluster.log()),
            }
        }
        cluster
    }

    /// Hands `path` to the user the server runs as (nobody, when the tests run as root), so
    /// the server may read it (a TLS key must be its own).
    pub fn give_to_server(&self, path: &Path) {
        if is_root() {
            std::os::unix::fs::chown(path, Some(65534), Some(65534)).unwrap();
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }

    /// The superuser's URL for database `db` (password included).
    pub fn admin_url(&self, db: &str) -> String {
        format!(
            "postgresql://postgres:{}@127.0.0.1:{}/{db}",
            self.password, self.port
        )
    }

    /// A connection as the superuser to `db`.
    pub fn admin(&self, db: &str) -> postgres::Client {
        postgres::Client::connect(&self.admin_url(db), postgres::NoTls).unwrap()
    }

    /// A new empty database, named after `hint`; returns its name.
    pub fn database(&self, hint: &str) -> String {
        let n = self
            .next_db
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let clean: String = hint
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '_'
                }
            })
            .take(40)
            .collect();
        let name = format!("t{n}_{clean}");
        self.admin("postgres")
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .unwrap();
        name
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // SIGINT: fast shutdown (clients disconnected, no wait for them).
        let _ = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
