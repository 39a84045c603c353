//! Security: credentials never reach quotatop's files or output. Distinctive fake credentials
//! (access key, secret, session token, and a password written into the endpoint URL) are given
//! to `quotatop record`, `quotatop snapshot` (reachable and unreachable endpoint) and a priority
//! change through `actions::apply_change` with the audit log; then every file they wrote (the
//! log, the journal (and any WAL file left), read table by table with compressed snapshots
//! inflated, the audit log) and everything they printed is searched for them. The same files
//! must be mode 0600.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use quotatop_actions::{self as actions, ApiFailure, ChangeContext, PriorityApi};
use quotatop_aws::batch::{BatchClient, ConnectOptions};
use quotatop_aws::poll::{self, PollConfig};
use quotatop_emulator::{self as emulator, ClockMode, EmulatorConfig, EmulatorHandle, Scenario};
use quotatop_store::audit::{AuditLog, AwsContext, Operator};

const AKID: &str = "AKIDCANARY4Q7Z2LEAK";
const SECRET: &str = "canary-secret-9f1c7e-do-not-log";
const TOKEN: &str = "canary-session-token-51ab";
const URL_PASSWORD: &str = "canary-url-password-77";
const CANARIES: [&str; 4] = [AKID, SECRET, TOKEN, URL_PASSWORD];

fn with_password(url: &str) -> String {
    url.replacen("http://", &format!("http://canaryuser:{URL_PASSWORD}@"), 1)
}

fn quotatop(home: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_quotatop"));
    c.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_STATE_HOME", home.join("state"))
        .env("AWS_ACCESS_KEY_ID", AKID)
        .env("AWS_SECRET_ACCESS_KEY", SECRET)
        .env("AWS_SESSION_TOKEN", TOKEN)
        .env("AWS_REGION", "us-east-1")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("AWS_CONFIG_FILE", "/nonexistent/quotatop-test-config")
        .env(
            "AWS_SHARED_CREDENTIALS_FILE",
            "/nonexistent/quotatop-test-credentials",
        )
        .env("RUST_LOG", "trace")
        .env("RUST_BACKTRACE", "1");
    c
}

async fn blocking_output(mut c: Command) -> Output {
    tokio::task::spawn_blocking(move || c.output().unwrap())
        .await
        .unwrap()
}

fn assert_clean(what: &str, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    for c in CANARIES {
        assert!(!text.contains(c), "{c} found in {what}:\n{text}");
    }
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(files(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// Every value of every table, with gzip blobs inflated.
fn journal_text(path: &Path) -> Vec<u8> {
    let db =
        rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let tables: Vec<String> = db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut out = Vec::new();
    let mut rows_seen = 0;
    for t in &tables {
        let mut stmt = db.prepare(&format!("SELECT * FROM \"{t}\"")).unwrap();
        let n = stmt.column_count();
        let mut rows = stmt.query([]).unwrap();
        while let Some(row) = rows.next().unwrap() {
            rows_seen += 1;
            for i in 0..n {
                match row.get_ref(i).unwrap() {
                    rusqlite::types::ValueRef::Text(b) => out.extend_from_slice(b),
                    rusqlite::types::ValueRef::Blob(b) => {
                        out.extend_from_slice(b);
                        if b.starts_with(&[0x1f, 0x8b]) {
                            flate2::read::GzDecoder::new(b)
                                .read_to_end(&mut out)
                                .unwrap();
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    assert!(rows_seen > 0, "the journal holds data to search");
    out
}

struct SdkPriority(aws_sdk_batch::Client);

impl PriorityApi for SdkPriority {
    async fn update_priority(
        &self,
        job_id: &str,
        priority: u32,
    ) -> Result<Option<String>, ApiFailure> {
        self.0
            .update_service_job()
            .job_id(job_id)
            .scheduling_priority(priority as i32)
            .send()
            .await
            .map(|_| None)
            .map_err(|e| ApiFailure(format!("{e:?}")))
    }
}

async fn demo() -> EmulatorHandle {
    let scenario = Scenario::load("scenarios/demo.toml".as_ref()).unwrap();
    let mut config = EmulatorConfig::from_scenario(scenario).unwrap();
    config.clock = ClockMode::Scaled(600.0);
    emulator::start(config).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_never_reach_logs_journal_audit_or_output() {
    let h = demo().await;
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().to_path_buf();
    let url = h.endpoint_url();
    let journal = home.join("journal.sqlite3");

    // `record` with the password in the endpoint URL and keys in the environment.
    let mut rec = quotatop(&home);
    rec.args(["record", "--queue", "ml-training", "--interval", "1"])
        .args(["--endpoint-url", &with_password(&url)])
        .arg("--journal")
        .arg(&journal)
        .arg("--log-dir")
        .arg(home.join("logs"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut rec = rec.spawn().unwrap();
    // Stopped once it has journaled (not after a fixed time).
    let waited = journal.clone();
    tokio::task::spawn_blocking(move || {
        crate::data_support::wait_until_journaled(&waited, "ml-training")
    })
    .await
    .unwrap();
    let pid = rec.id().to_string();
    let killed = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(killed.success());
    let out = tokio::task::spawn_blocking(move || {
        let deadline = Instant::now() + Duration::from_secs(20);
        while rec.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "record did not stop on SIGTERM");
            std::thread::sleep(Duration::from_millis(50));
        }
        rec.wait_with_output().unwrap()
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_clean("record's stdout", &out.stdout);
    assert_clean("record's stderr", &out.stderr);

    // `snapshot`, reachable and not.
    let mut snap = quotatop(&home);
    snap.args(["snapshot", "--queue", "ml-training", "--format", "json"])
        .args(["--endpoint-url", &with_password(&url)]);
    let out = blocking_output(snap).await;
    assert_clean("snapshot's stdout", &out.stdout);
    assert_clean("snapshot's stderr", &out.stderr);
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed_url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let mut snap = quotatop(&home);
    snap.args(["snapshot", "--queue", "ml-training"])
        .args(["--endpoint-url", &with_password(&closed_url)]);
    let out = blocking_output(snap).await;
    assert!(!out.status.success(), "the endpoint is closed");
    assert_clean("snapshot's error", &out.stderr);
    assert_clean("snapshot's error stdout", &out.stdout);

    // A priority change, audited, with the console's connection settings.
    let client = BatchClient::connect(ConnectOptions {
        profile: None,
        region: Some("us-east-1".into()),
        endpoint_url: Some(with_password(&url)),
        credentials: None,
    })
    .await
    .unwrap();
    let source = client.source().clone();
    let sdk = aws_sdk_batch::Client::from_conf(
        aws_sdk_batch::Config::builder()
            .behavior_version(aws_sdk_batch::config::BehaviorVersion::latest())
            .region(aws_sdk_batch::config::Region::new("us-east-1"))
            .credentials_provider(aws_credential_types::Credentials::from_keys(
                AKID,
                SECRET,
                Some(TOKEN.to_string()),
            ))
            .endpoint_url(&url)
            .build(),
    );
    let plain = BatchClient::connect(ConnectOptions {
        profile: None,
        region: Some("us-east-1".into()),
        endpoint_url: Some(url.clone()),
        credentials: Some(quotatop_aws::batch::StaticCredentials {
            access_key_id: AKID.into(),
            secret_access_key: SECRET.into(),
        }),
    })
    .await
    .unwrap();
    let s = poll::refresh_once(
        &plain,
        PollConfig {
            queues: vec!["ml-training".into()],
            ..PollConfig::default()
        },
    )
    .await
    .unwrap();
    let q = &s.queues[0];
    let job = q
        .jobs
        .iter()
        .find(|j| !j.job.status.is_terminal())
        .expect("an active job in the demo");
    let preview = actions::preview(q, &job.job.id, job.job.priority + 1).unwrap();
    let audit = AuditLog::new(home.join("audit").join("audit.jsonl"));
    let ctx = ChangeContext {
        operator: Operator::current(),
        aws: AwsContext {
            profile: source.profile.clone(),
            region: source.region.clone(),
            endpoint: source.endpoint.clone(),
            source: None,
        },
        queue: "ml-training".into(),
        justification: "soak of the credential handling".into(),
        change_record: None,
        read_only: false,
        policy: None,
        class_policy: None,
        batch: None,
    };
    actions::apply_change(&SdkPriority(sdk), &audit.clone().into(), &ctx, &preview)
        .await
        .unwrap();
    h.shutdown().await.unwrap();

    // Every file written: no canary, mode 0600.
    let written = files(&home);
    let names: Vec<String> = written
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    for expected in ["record.log", "journal.sqlite3", "audit.jsonl"] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} not in {names:?}"
        );
    }
    for p in &written {
        assert_clean(&p.display().to_string(), &std::fs::read(p).unwrap());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{}", p.display());
        }
    }
    assert_clean("the journal's tables", &journal_text(&journal));
    let log = std::fs::read_to_string(home.join("audit").join("audit.jsonl")).unwrap();
    assert!(log.contains("\"endpoint\":\"http://127.0.0.1:"), "{log}");
}
