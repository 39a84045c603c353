//! `record --store` against the emulator: snapshots land in PostgreSQL, `report --store` reads
//! them, and the store's password shows up nowhere (stderr, record.log, the journal's rows).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::Test;
use crate::cluster::Cluster;
use crate::emulator_support::spawn_emulator_binary;
use crate::metrics_support::Kill;

pub fn tests() -> Vec<Test> {
    vec![
        (
            "record::record_and_report_with_a_store_keep_its_password_out_of_view".into(),
            Box::new(record_and_report_with_a_store_keep_its_password_out_of_view),
        ),
        (
            "record::record_with_a_store_serves_the_policy_breaches_of_each_class".into(),
            Box::new(record_with_a_store_serves_the_policy_breaches_of_each_class),
        ),
        (
            "record::a_store_that_refuses_the_recorder_is_an_error_not_a_standby".into(),
            Box::new(a_store_that_refuses_the_recorder_is_an_error_not_a_standby),
        ),
    ]
}

/// A store that refuses the recorder (a wrong password; a closed port) is not "standing by":
/// stderr and record.log say the store refuses it, `/metrics` has `quotatop_journal_up 0` and
/// a growing `quotatop_journal_store_errors_total`, the tries back off, and SIGTERM ends it
/// non-zero, having journaled nothing.
fn a_store_that_refuses_the_recorder_is_an_error_not_a_standby(c: &Cluster) {
    let db = c.database("refused");
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let wrong = format!(
        "postgresql://postgres:not-the-pw-123@127.0.0.1:{}/{db}",
        c.port
    );
    let nobody = format!("postgresql://postgres@127.0.0.1:{closed}/{db}");
    for (url, says) in [
        (wrong.as_str(), "password authentication failed"),
        (nobody.as_str(), "onnection refused"),
    ] {
        let dir = tempfile::TempDir::new().unwrap();
        // The AWS endpoint is never called while the store refuses: a closed port too.
        let endpoint = format!("http://127.0.0.1:{closed}");
        let started = Instant::now();
        let (mut rec, lines) = recorder(
            &endpoint,
            url,
            dir.path(),
            &["--metrics-addr", "127.0.0.1:0"],
        );
        let mut seen = Vec::new();
        let addr = crate::failover::metrics_addr(&lines, &mut seen);
        let first = crate::failover::wait_line(
            &lines,
            "the store refuses this recorder",
            Duration::from_secs(30),
            &mut seen,
        );
        assert!(first.contains(says), "{first}");
        assert!(!first.contains("not-the-pw-123"), "{first}");
        // Tried again, later each time: the third failed try comes 1 + 2 s after the first.
        crate::failover::wait_line(
            &lines,
            "failed tries in a row: 3",
            Duration::from_secs(30),
            &mut seen,
        );
        let (_, text) = crate::metrics_support::scrape(&addr, None);
        let one = |name: &str| {
            crate::metrics_support::samples(&text, name)
                .get("")
                .copied()
        };
        assert_eq!(one("quotatop_journal_up"), Some(0.0), "{text}");
        assert!(
            one("quotatop_journal_store_errors_total").unwrap_or(0.0) >= 3.0,
            "{text}"
        );
        assert_eq!(one("quotatop_record_leader"), Some(0.0), "{text}");
        assert!(
            !seen.iter().any(|l| l.contains("another recorder leads")),
            "{seen:#?}"
        );
        let log = std::fs::read_to_string(dir.path().join("record.log")).unwrap();
        assert!(
            log.contains("ERROR")
                && log.contains("the store refuses this recorder")
                && log.contains(says),
            "{log}"
        );
        assert!(!log.contains("not-the-pw-123"), "{log}");
        Command::new("kill")
            .args(["-TERM", &rec.0.id().to_string()])
            .status()
            .unwrap();
        let status = rec.0.wait().unwrap();
        let rest = crate::metrics_support::lines_until_closed(&lines, Duration::from_secs(20));
        println!(
            "  {says}: refused, 3 tries in {:.1} s; exit {status}",
            started.elapsed().as_secs_f64()
        );
        assert!(!status.success(), "exit {status}: {rest:#?}");
        assert!(
            rest.iter()
                .any(|l| l.contains("journaled nothing: the store refused this recorder")),
            "{rest:#?}"
        );
    }
}

/// `record --store --metrics-addr` with a policy beside its config: `quotatop_policy_breaches`
/// per class, computed from the team's store (as from a journal file), naming each class of
/// the demo's policy.
fn record_with_a_store_serves_the_policy_breaches_of_each_class(c: &Cluster) {
    let db = c.database("policy");
    let dir = tempfile::TempDir::new().unwrap();
    let (emulator, endpoint) = spawn_emulator_binary(&["--speed", "60"]);
    let _emulator = Kill(emulator);
    std::fs::copy(
        "crates/policy/fixtures/four_classes.toml",
        dir.path().join("policy.toml"),
    )
    .unwrap();
    let url = c.admin_url(&db);
    let (_rec, lines) = recorder(
        &endpoint,
        &url,
        dir.path(),
        &["--metrics-addr", "127.0.0.1:0"],
    );
    let mut seen = Vec::new();
    let addr = crate::failover::metrics_addr(&lines, &mut seen);
    let deadline = Instant::now() + Duration::from_secs(90);
    let breaches = loop {
        let (_, text) = crate::metrics_support::scrape(&addr, None);
        let b = crate::metrics_support::samples(&text, "quotatop_policy_breaches");
        if b.len() == 4 {
            break b;
        }
        seen.extend(lines.try_iter());
        assert!(
            Instant::now() < deadline,
            "no policy breaches from the store within 90 s; last exposition:\n{text}\nstderr: {seen:#?}"
        );
        std::thread::sleep(Duration::from_millis(300));
    };
    for class in ["incident", "delivery", "regulatory", "exploratory"] {
        assert!(
            breaches.keys().any(|k| k.contains("queue=\"ml-training\"")
                && k.contains(&format!("class=\"{class}\""))),
            "{breaches:?}"
        );
    }
}

/// `quotatop record` polling `endpoint` into `store`, every second, logging into `dir`;
/// its stderr lines go to the returned channel.
pub fn recorder(
    endpoint: &str,
    store: &str,
    dir: &std::path::Path,
    extra: &[&str],
) -> (Kill, std::sync::mpsc::Receiver<String>) {
    let mut args = vec!["--queue", "ml-training", "--interval", "1"];
    args.extend_from_slice(extra);
    recorder_of(endpoint, store, dir, &args)
}

/// [`recorder`] with every flag given (`--queue` and `--interval` included).
pub fn recorder_of(
    endpoint: &str,
    store: &str,
    dir: &std::path::Path,
    extra: &[&str],
) -> (Kill, std::sync::mpsc::Receiver<String>) {
    let config = dir.join("config.toml");
    std::fs::write(&config, "[journal]\nsnapshot_interval_secs = 1\n").unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_quotatop"))
        .arg("record")
        .args(["--endpoint-url", endpoint, "--store", store])
        .args(extra)
        .arg("--log-dir")
        .arg(dir)
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_REGION", "us-east-1")
        .env("QUOTATOP_CONFIG", config)
        .env_remove("QUOTATOP_STORE")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = BufReader::new(child.stderr.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in err.lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    (Kill(child), rx)
}

/// Waits until `sql` (a count) reaches `n` in database `db`.
pub fn wait_for_count(c: &Cluster, db: &str, sql: &str, n: i64, within: Duration) -> i64 {
    let deadline = Instant::now() + within;
    let mut admin = c.admin(db);
    loop {
        let got: i64 = admin
            .query_opt(sql, &[])
            .ok()
            .flatten()
            .map_or(0, |r| r.get(0));
        if got >= n {
            return got;
        }
        assert!(
            Instant::now() < deadline,
            "{sql}: {got} < {n} after {within:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Every row of every table of `db` as text (what a dump would show).
pub fn dump(c: &Cluster, db: &str) -> String {
    let mut admin = c.admin(db);
    let tables: Vec<String> = admin
        .query(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public'",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let mut out = String::new();
    for t in tables {
        for r in admin
            .query(&format!("SELECT t::text FROM {t} t"), &[])
            .unwrap()
        {
            out.push_str(r.get::<_, &str>(0));
            out.push('\n');
        }
    }
    out
}

fn record_and_report_with_a_store_keep_its_password_out_of_view(c: &Cluster) {
    let db = c.database("record");
    let dir = tempfile::TempDir::new().unwrap();
    let (emulator, endpoint) = spawn_emulator_binary(&["--speed", "60"]);
    let _emulator = Kill(emulator);
    let url = c.admin_url(&db);
    let (rec, lines) = recorder(&endpoint, &url, dir.path(), &[]);
    wait_for_count(
        c,
        &db,
        "SELECT COUNT(*) FROM snapshots",
        2,
        Duration::from_secs(90),
    );
    let jobs = wait_for_count(
        c,
        &db,
        "SELECT COUNT(*) FROM jobs",
        1,
        Duration::from_secs(30),
    );
    drop(rec);
    let stderr = crate::metrics_support::lines_until_closed(&lines, Duration::from_secs(20));
    let stderr = stderr.join("\n");
    assert!(
        stderr.contains(&format!(
            "journal postgresql://postgres@127.0.0.1:{}/{db}",
            c.port
        )),
        "{stderr}"
    );
    let log = std::fs::read_to_string(dir.path().join("record.log")).unwrap();
    let rows = dump(c, &db);
    // The snapshots themselves (gzip) as the journal reads them back.
    let store = quotatop_store::StoreLocation::parse(&url).unwrap();
    let j = quotatop_store::journal::Journal::open_existing_at(&store, Default::default()).unwrap();
    let snap = serde_json::to_string(&j.newest_snapshot().unwrap().unwrap()).unwrap();
    for (what, text) in [
        ("stderr", &stderr),
        ("record.log", &log),
        ("rows", &rows),
        ("snapshot", &snap),
    ] {
        assert!(!text.contains(&c.password), "the password is in {what}");
    }
    assert!(log.contains("recording"), "{log}");

    // report --store with the password from a password file, not the URL.
    let pgpass = dir.path().join("pgpass");
    std::fs::write(
        &pgpass,
        format!("127.0.0.1:{}:{db}:postgres:{}\n", c.port, c.password),
    )
    .unwrap();
    let bare = format!("postgresql://postgres@127.0.0.1:{}/{db}", c.port);
    let out = Command::new(env!("CARGO_BIN_EXE_quotatop"))
        .args([
            "report",
            "--queue",
            "ml-training",
            "--since",
            "30d",
            "--format",
            "json",
        ])
        .args(["--store", &bare])
        .env("PGPASSFILE", &pgpass)
        .env_remove("PGPASSWORD")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("ml-training"), "{text}");
    assert!(jobs > 0);

    // A wrong password: the server's refusal, the URL shown without it.
    let wrong = format!(
        "postgresql://postgres:not-the-pw-123@127.0.0.1:{}/{db}",
        c.port
    );
    let out = Command::new(env!("CARGO_BIN_EXE_quotatop"))
        .args(["report", "--queue", "ml-training", "--store", &wrong])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("password authentication failed"), "{err}");
    assert!(err.contains(&bare), "{err}");
    assert!(!err.contains("not-the-pw-123"), "{err}");
}
