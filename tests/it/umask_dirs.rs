//! Under `umask 000` every directory quotatop makes for the user is 0700 (the data directory
//! of the journal and the audit log, the audit log's `.inflight`, the state directory of
//! `record.log`), every file in them 0600, and `man --dir` makes 0755 and 0644 (issue 31
//! item 12: they were 0777 and 0666, open to every user of the host). Each runs the binary as
//! a child of `sh -c 'umask 000; exec …'`, with HOME and the XDG directories in a temporary
//! directory whose parents do not exist yet (so quotatop makes the whole chain).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// quotatop with `args` under umask 000, its home in `home`: data in `home/d/data/quotatop`,
/// state in `home/s/state/quotatop`.
fn umask_000(home: &Path, args: &[&str]) -> Command {
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg("umask 000; exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_quotatop"))
        .args(args)
        .env("HOME", home)
        .env("XDG_DATA_HOME", home.join("d/data"))
        .env("XDG_STATE_HOME", home.join("s/state"))
        .env("XDG_CONFIG_HOME", home.join("no-config"))
        .env_remove("QUOTATOP_CONFIG")
        .env_remove("QUOTATOP_READ_ONLY")
        .env("AWS_ACCESS_KEY_ID", "AKIDTEST")
        .env("AWS_SECRET_ACCESS_KEY", "secret")
        .env("AWS_REGION", "us-east-1")
        .stdin(Stdio::null());
    c
}

/// Every directory and file under `root` (not `root` itself) with its mode bits.
fn modes(root: &Path) -> Vec<(PathBuf, bool, u32)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().map(Result::unwrap) {
            let meta = std::fs::symlink_metadata(e.path()).unwrap();
            if meta.is_dir() {
                stack.push(e.path());
            }
            out.push((e.path(), meta.is_dir(), meta.permissions().mode() & 0o777));
        }
    }
    out.sort();
    out
}

/// What under `root` is not private: a directory other than 0700, a file readable or
/// writable by group or others.
fn not_private(root: &Path) -> Vec<String> {
    modes(root)
        .into_iter()
        .filter(|(_, dir, m)| if *dir { *m != 0o700 } else { m & 0o077 != 0 })
        .map(|(p, _, m)| format!("{} {m:o}", p.display()))
        .collect()
}

/// The mechanism itself: under this wrapper a plain `mkdir -p` makes 0777, so the 0700 seen
/// below is quotatop's doing, not the test's umask.
#[test]
fn the_wrapper_really_runs_under_umask_000() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("plain/a");
    let st = Command::new("sh")
        .arg("-c")
        .arg("umask 000; exec mkdir -p \"$0\"")
        .arg(&dir)
        .status()
        .unwrap();
    assert!(st.success());
    assert_eq!(
        std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
        0o777
    );
}

/// `record` with the default journal and log places: the data directory (journal.sqlite3 and
/// its WAL) and the state directory (record.log), with the parents it had to make, are
/// private.
#[test]
fn record_makes_its_data_and_state_directories_private() {
    let (emu, url) = crate::emulator_support::spawn_emulator_binary(&["--speed", "600"]);
    let _emu = crate::metrics_support::Kill(emu);
    let home = tempfile::tempdir().unwrap();
    let args = [
        "record",
        "--queue",
        "ml-training",
        "--interval",
        "1",
        "--endpoint-url",
        &url,
    ];
    let mut rec = crate::metrics_support::Kill(
        umask_000(home.path(), &args)
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let log = home.path().join("s/state/quotatop/record.log");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !std::fs::read_to_string(&log)
        .unwrap_or_default()
        .contains("first snapshots written")
    {
        assert!(Instant::now() < deadline, "record journaled nothing");
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = Command::new("kill")
        .args(["-TERM", &rec.0.id().to_string()])
        .status();
    assert!(rec.0.wait().unwrap().success());
    let all = modes(home.path());
    for want in [
        "d",
        "d/data",
        "d/data/quotatop",
        "d/data/quotatop/journal.sqlite3",
        "s",
        "s/state",
        "s/state/quotatop",
        "s/state/quotatop/record.log",
    ] {
        assert!(
            all.iter().any(|(p, _, _)| *p == home.path().join(want)),
            "{want} not made: {all:?}"
        );
    }
    assert_eq!(not_private(home.path()), Vec::<String>::new(), "{all:?}");
}

/// `set-priority` with the default audit log: the data directory, `audit.jsonl`, its lock and
/// its `.inflight` directory are private.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_priority_makes_the_audit_logs_directories_private() {
    let (h, [_, _, target]) = crate::set_priority::world().await;
    let home = tempfile::tempdir().unwrap();
    let url = h.endpoint_url();
    let args = [
        "set-priority",
        &target,
        "--priority",
        "5",
        "--reason",
        "incident 12, umask check",
        "--yes",
        "--endpoint-url",
        &url,
    ];
    let mut c = umask_000(home.path(), &args);
    let out = tokio::task::spawn_blocking(move || c.output().unwrap())
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{text}");
    let all = modes(home.path());
    for want in [
        "d/data/quotatop",
        "d/data/quotatop/audit.jsonl",
        "d/data/quotatop/audit.jsonl.lock",
        "d/data/quotatop/audit.jsonl.inflight",
    ] {
        assert!(
            all.iter().any(|(p, _, _)| *p == home.path().join(want)),
            "{want} not made: {all:?}"
        );
    }
    assert_eq!(not_private(home.path()), Vec::<String>::new(), "{all:?}");
    h.shutdown().await.unwrap();
}

/// `man --dir` makes pages for everyone to read and no one else to write: 0755 directories
/// (the parents too) and 0644 pages.
#[test]
fn man_pages_are_readable_but_not_writable_by_others() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("share/man/man1");
    let out = umask_000(home.path(), &["man", "--dir", dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let all = modes(home.path());
    assert!(all.len() > 4, "{all:?}");
    let loose: Vec<_> = all
        .iter()
        .filter(|(_, d, m)| *m != if *d { 0o755 } else { 0o644 })
        .collect();
    assert!(loose.is_empty(), "{loose:?}");
}
