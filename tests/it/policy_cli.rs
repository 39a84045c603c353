//! `quotatop policy lint / init` end to end: the four-class example against the demo world's
//! shares, lint errors that exit non-zero, a first policy from an emulator's live shares and
//! the config's [deadlines] that lints clean against the same queue, and `policy.toml` found
//! beside the config file.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::emulator_support::*;
use aws_sdk_batch::types::QuotaShareResourceSharingStrategy as Strategy;

const FOUR: &str = "crates/policy/fixtures/four_classes.toml";

/// The demo world's shares (scenarios/demo.toml) as a shares file, as `shares export` writes
/// them (docs/policy.md's `policy lint` example reads it).
const DEMO_SHARES: &str = "crates/policy/fixtures/demo_shares.toml";

/// `quotatop policy ARGS` with a temporary home (no user config), stdin not a terminal.
fn policy(dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_quotatop"));
    c.arg("policy")
        .args(args)
        .env("AWS_ACCESS_KEY_ID", "AKIDTEST")
        .env("AWS_SECRET_ACCESS_KEY", "secret")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_MAX_ATTEMPTS", "1")
        .env_remove("QUOTATOP_CONFIG")
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_DATA_HOME", dir.join("data"))
        .stdin(Stdio::null());
    c
}

async fn run(mut c: Command) -> Output {
    tokio::task::spawn_blocking(move || c.output().expect("quotatop runs"))
        .await
        .expect("join")
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_four_class_example_lints_with_warnings_only() {
    let dir = tempfile::tempdir().unwrap();
    let o = run(policy(
        dir.path(),
        &["lint", "--policy", FOUR, "--shares", DEMO_SHARES],
    ))
    .await;
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    for want in [
        "(version 1, sha256 ",
        "4 class(es); checked against the shares file",
        "| incident | 9000-9999 | prod | capacity within 15m00s | no preemption |",
        "A job's class: its `quotatop:class` tag, else its share, else its priority range.",
        "warning: class delivery: may not borrow, but share vision is LEND_AND_BORROW",
        "warning: share lender is in no class: its jobs are classed by priority range alone",
        "0 error(s), 4 warning(s)",
    ] {
        assert!(t.contains(want), "want {want:?} in:\n{t}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lint_errors_are_listed_and_exit_non_zero() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    let four = std::fs::read_to_string(FOUR).unwrap();
    std::fs::write(
        &bad,
        four.replace("may_borrow = true", "protected = true")
            .replace("shares = [\"regulated\"]", "shares = []"),
    )
    .unwrap();
    let o = run(policy(
        dir.path(),
        &[
            "lint",
            "--policy",
            bad.to_str().unwrap(),
            "--shares",
            DEMO_SHARES,
        ],
    ))
    .await;
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    for want in [
        "error: class regulatory: runs in no share",
        "error: class exploratory: is protected but share research is LEND_AND_BORROW",
        "error: class exploratory: is protected but share nlp is LEND",
        "3 error(s)",
        "3 lint error(s); fix them before the policy is used",
    ] {
        assert!(t.contains(want), "want {want:?} in:\n{t}");
    }
    // A file that cannot be read names the line and the key, and exits non-zero.
    std::fs::write(&bad, four.replace("max_wait = \"15m\"", "max_wait = 15")).unwrap();
    let o = run(policy(
        dir.path(),
        &["lint", "--policy", bad.to_str().unwrap()],
    ))
    .await;
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(
        t.contains("line 12, column 12: invalid type: integer `15`, expected a string"),
        "{t}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_from_live_shares_and_config_lints_clean_beside_the_config() {
    let h = start(&[(M5, 8), (G5, 4)], "").await;
    let c = client(&h, 1);
    create_share(
        &c,
        "alpha",
        &[(M5, 4)],
        Strategy::LendAndBorrow,
        Some(50),
        true,
    )
    .await;
    create_share(
        &c,
        "beta",
        &[(M5, 4), (G5, 2)],
        Strategy::Reserve,
        None,
        false,
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let conf_dir = dir.path().join("config").join("quotatop");
    std::fs::create_dir_all(&conf_dir).unwrap();
    std::fs::write(
        conf_dir.join("config.toml"),
        "[deadlines.beta]\nmax_wait_s = 900\n[budgets.alpha]\nmax_preemptions_per_job = 2\n",
    )
    .unwrap();
    let url = h.endpoint_url();
    // No policy beside the config yet: the error says how to write one.
    let o = run(policy(dir.path(), &["lint"])).await;
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(
        t.contains("no policy file at ") && t.contains("quotatop policy init --queue Q >"),
        "{t}"
    );

    let o = run(policy(
        dir.path(),
        &["init", "--queue", QUEUE, "--endpoint-url", &url],
    ))
    .await;
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    let init = String::from_utf8(o.stdout).unwrap();
    for want in [
        "version = 1\n",
        "name = \"beta\"\n",
        "max_wait = \"15m\"\nprotected = true\nmay_borrow = false\n",
        "name = \"alpha\"\n",
        "max_preemptions_per_job = 2\nprotected = false\nmay_borrow = true\n",
        "[owners]\n\"alpha\" = []\n\"beta\" = []\n",
    ] {
        assert!(init.contains(want), "want {want:?} in:\n{init}");
    }
    std::fs::write(conf_dir.join("policy.toml"), &init).unwrap();
    let o = run(policy(
        dir.path(),
        &["lint", "--queue", QUEUE, "--endpoint-url", &url],
    ))
    .await;
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("policy.toml (version 1"), "{t}");
    assert!(
        t.contains("checked against the live shares of queue qm-queue"),
        "{t}"
    );
    assert!(t.contains("0 error(s), 0 warning(s)"), "{t}");
    h.shutdown().await.unwrap();
}

/// docs/policy.md's `policy lint` example runs as written, from the repository, and prints what it
/// shows, byte for byte.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_lint_example_runs_as_written() {
    let readme = std::fs::read_to_string("docs/policy.md").unwrap();
    let at = readme
        .find("`quotatop policy lint --policy ")
        .expect("docs/policy.md shows a policy lint example");
    let command = &readme[at + 1..];
    let command = &command[..command.find('`').unwrap()];
    let args: Vec<&str> = command.split_whitespace().skip(2).collect();
    assert!(args.contains(&DEMO_SHARES), "{command}");
    let rest = &readme[at..];
    let shown = &rest[rest.find("```\n").unwrap() + 4..];
    let shown = &shown[..shown.find("```").unwrap()];
    let dir = tempfile::tempdir().unwrap();
    let o = run(policy(dir.path(), &args)).await;
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout), shown, "{command}");
}

/// The demo shares fixture is what `shares export` writes of the demo world today (less its
/// comment and name lines, which name the time and endpoint).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_shares_fixture_is_the_demo_worlds_export() {
    use quotatop_emulator::{self as emulator, ClockMode, EmulatorConfig, Scenario};
    let scenario = Scenario::parse(quotatop::commands::demo::DEMO_SCENARIO).unwrap();
    let mut config = EmulatorConfig::from_scenario(scenario).unwrap();
    config.clock = ClockMode::Manual;
    let h = emulator::start(config).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut c = Command::new(env!("CARGO_BIN_EXE_quotatop"));
    c.args([
        "shares",
        "export",
        "--queue",
        "ml-training",
        "--endpoint-url",
    ])
    .arg(h.endpoint_url())
    .env("AWS_ACCESS_KEY_ID", "AKIDTEST")
    .env("AWS_SECRET_ACCESS_KEY", "secret")
    .env("AWS_REGION", "us-east-1")
    .env("AWS_MAX_ATTEMPTS", "1")
    .env_remove("QUOTATOP_CONFIG")
    .env("XDG_CONFIG_HOME", dir.path().join("config"))
    .env("XDG_DATA_HOME", dir.path().join("data"))
    .stdin(Stdio::null());
    let o = run(c).await;
    assert!(o.status.success(), "{}", text(&o));
    let body = |t: &str| -> String {
        t.lines()
            .filter(|l| !l.starts_with('#') && !l.starts_with("name = \"ml-training"))
            .map(|l| format!("{l}\n"))
            .collect()
    };
    let fixture = std::fs::read_to_string(DEMO_SHARES).unwrap();
    assert_eq!(
        body(&String::from_utf8_lossy(&o.stdout)),
        body(&fixture),
        "{DEMO_SHARES} is no longer the demo world's shares: write it again with `quotatop shares export`"
    );
    h.shutdown().await.unwrap();
}

/// docs/policy.md's four-class example is the fixture the tests read, word for word.
#[test]
fn the_readme_example_is_the_tested_fixture() {
    let readme = std::fs::read_to_string("docs/policy.md").unwrap();
    let fixture = std::fs::read_to_string(FOUR).unwrap();
    let body: String = fixture
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(
        readme.contains(&format!("```toml\n{body}```")),
        "docs/policy.md's worked example differs from {FOUR}"
    );
}

/// `policy plan` shows what the policy asks of each share and the diff; `policy apply` makes it
/// true through `shares apply`, every record carrying the policy's hash; a second plan finds
/// nothing to change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policy_plan_then_apply_makes_the_shares_what_the_policy_asks() {
    let h = start(&[(M5, 8), (G5, 4)], "").await;
    let c = client(&h, 1);
    create_share(
        &c,
        "alpha",
        &[(M5, 4)],
        Strategy::LendAndBorrow,
        Some(50),
        true,
    )
    .await;
    create_share(
        &c,
        "beta",
        &[(M5, 4), (G5, 2)],
        Strategy::Reserve,
        None,
        false,
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let policy_text = "version = 1\n\
        [[class]]\nname = \"regulatory\"\npriority = [0, 9999]\nshares = [\"alpha\"]\nprotected = true\n\
        [[class]]\nname = \"explore\"\npriority = [0, 9999]\nshares = [\"beta\"]\nmay_borrow = true\n";
    let file = dir.path().join("policy.toml");
    std::fs::write(&file, policy_text).unwrap();
    let hash = quotatop_policy::hash(policy_text);
    let url = h.endpoint_url();
    let log = dir.path().join("audit.jsonl");
    let args = |sub: &str| {
        let mut v = vec![
            sub.to_string(),
            "--queue".into(),
            QUEUE.into(),
            "--endpoint-url".into(),
            url.clone(),
            "--policy".into(),
            file.display().to_string(),
        ];
        if sub == "apply" {
            v.extend([
                "--reason".into(),
                "policy 2026-Q4".into(),
                "--change-record".into(),
                "CR-42".into(),
                "--yes".into(),
                "--log".into(),
                log.display().to_string(),
            ]);
        }
        v
    };
    let o = run(policy(
        dir.path(),
        &args("plan").iter().map(String::as_str).collect::<Vec<_>>(),
    ))
    .await;
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    let asks = format!("(sha256 {}) asks of queue qm-queue:", &hash[..12]);
    for want in [
        asks.as_str(),
        "- alpha: RESERVE: class regulatory is protected",
        "- beta: LEND_AND_BORROW: class explore may borrow",
        "update alpha",
        "update beta",
    ] {
        assert!(t.contains(want), "want {want:?} in:\n{t}");
    }
    let o = run(policy(
        dir.path(),
        &args("apply").iter().map(String::as_str).collect::<Vec<_>>(),
    ))
    .await;
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    let shares = c.list_quota_shares().job_queue(QUEUE).send().await.unwrap();
    let strategy = |name: &str| {
        let s = shares
            .quota_shares()
            .iter()
            .find(|s| s.quota_share_name() == Some(name))
            .unwrap()
            .resource_sharing_configuration()
            .unwrap();
        (s.strategy().unwrap().as_str().to_string(), s.borrow_limit())
    };
    assert_eq!(strategy("alpha").0, "RESERVE");
    assert_eq!(strategy("beta"), ("LEND_AND_BORROW".to_string(), Some(-1)));
    let records = quotatop_store::audit::read_records(&log).unwrap();
    assert!(records.len() >= 4, "{records:?}");
    for (_, r) in &records {
        assert_eq!(
            r.class_policy.as_ref().map(|p| p.hash.as_str()),
            Some(hash.as_str())
        );
    }
    assert!(quotatop_store::audit::verify(&log).is_ok());
    let o = run(policy(
        dir.path(),
        &args("plan").iter().map(String::as_str).collect::<Vec<_>>(),
    ))
    .await;
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(
        t.contains("No changes: the live shares match the file."),
        "{t}"
    );
    // The chain's end: work runs in the applied shares, `record` journals it, and `policy
    // check` over that journal finds the policy holds (exit 0).
    submit(&c, "reg-1", "alpha", M5, 2, 100).await;
    submit(&c, "explore-1", "beta", M5, 2, 10).await;
    let journal = dir.path().join("j.sqlite3");
    let d = dir.path().to_path_buf();
    let (u, j) = (url.clone(), journal.clone());
    let recorded = tokio::task::spawn_blocking(move || record_briefly(&d, &u, &j))
        .await
        .unwrap();
    assert!(recorded.contains("journaled"), "{recorded}");
    let mut check = policy(
        dir.path(),
        &[
            "check",
            "--queue",
            QUEUE,
            "--since",
            "1d",
            "--policy",
            &file.display().to_string(),
            "--journal",
            &journal.display().to_string(),
        ],
    );
    check.env("HOME", dir.path());
    let o = run(check).await;
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    for want in [
        "### regulatory — 1 job(s), holds",
        "### explore — 1 job(s), holds",
    ] {
        assert!(t.contains(want), "want {want:?} in:\n{t}");
    }
    h.shutdown().await.unwrap();
}

/// `quotatop record` of [`QUEUE`] at `url` into `journal` until it has journaled two
/// snapshots (at most 30 s), stopped by SIGTERM; its standard error.
fn record_briefly(dir: &Path, url: &str, journal: &Path) -> String {
    use std::time::{Duration, Instant};
    let rec = Command::new(env!("CARGO_BIN_EXE_quotatop"))
        .args([
            "record",
            "--queue",
            QUEUE,
            "--interval",
            "1",
            "--endpoint-url",
            url,
        ])
        .arg("--journal")
        .arg(journal)
        .arg("--log-dir")
        .arg(dir.join("logs"))
        .env("AWS_ACCESS_KEY_ID", "AKIDTEST")
        .env("AWS_SECRET_ACCESS_KEY", "secret")
        .env("AWS_REGION", "us-east-1")
        .env("HOME", dir)
        .env_remove("QUOTATOP_CONFIG")
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_DATA_HOME", dir.join("data"))
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let seen = |j: &Path| {
        quotatop_store::journal::Journal::open_existing(
            j,
            quotatop_store::journal::JournalConfig::default(),
        )
        .ok()
        .and_then(|j| j.jobs(QUEUE, 0).ok())
        .is_some_and(|jobs| jobs.len() == 2)
    };
    while !seen(journal) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(300));
    }
    std::thread::sleep(Duration::from_millis(1500));
    let _ = Command::new("kill")
        .args(["-TERM", &rec.id().to_string()])
        .status();
    let out = rec.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stderr).to_string()
}

/// `shares apply` of a limit change on a share with owners in the policy beside the config:
/// refused without an owner's approval and with someone else's (the rule named, nothing called
/// or recorded); with an owner's `--approved-by`, made, and every record carries the approver
/// and the policy's hash.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_limit_change_needs_an_owners_approval_and_records_it() {
    let h = start(&[(M5, 8)], "").await;
    let c = client(&h, 1);
    create_share(&c, "alpha", &[(M5, 4)], Strategy::Reserve, None, false).await;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "").unwrap();
    let policy_text = "version = 1\n[[class]]\nname = \"all\"\npriority = [0, 9999]\nshares = [\"alpha\"]\n\
        [owners]\nalpha = [\"head-of-sre\"]\n";
    std::fs::write(dir.path().join("policy.toml"), policy_text).unwrap();
    let file = dir.path().join("shares.toml");
    std::fs::write(
        &file,
        "[[shares]]\nname = \"alpha\"\nstrategy = \"RESERVE\"\nlimits = { \"ml.m5.large\" = 6 }\n",
    )
    .unwrap();
    let log = dir.path().join("audit.jsonl");
    let url = h.endpoint_url();
    let apply = |extra: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_quotatop"));
        cmd.args(["shares", "apply", "--queue", QUEUE, "--endpoint-url", &url])
            .arg("-f")
            .arg(&file)
            .arg("--config")
            .arg(&config)
            .arg("--log")
            .arg(&log)
            .args([
                "--reason",
                "more for the launch",
                "--change-record",
                "CR-9",
                "--yes",
            ])
            .args(extra)
            .env("AWS_ACCESS_KEY_ID", "AKIDTEST")
            .env("AWS_SECRET_ACCESS_KEY", "secret")
            .env("AWS_REGION", "us-east-1")
            .env("AWS_MAX_ATTEMPTS", "1")
            .env_remove("QUOTATOP_CONFIG")
            .env("XDG_CONFIG_HOME", dir.path().join("xdg"))
            .env("XDG_DATA_HOME", dir.path().join("data"))
            .stdin(Stdio::null());
        cmd
    };
    let limit = || async {
        let shares = c.list_quota_shares().job_queue(QUEUE).send().await.unwrap();
        shares.quota_shares()[0].capacity_limits()[0].max_capacity()
    };
    for (extra, why) in [
        (
            &[][..],
            "share alpha needs its owner's approval (head-of-sre): pass --approved-by NAME",
        ),
        (
            &["--approved-by", "bob"][..],
            "bob is not an owner of share alpha",
        ),
    ] {
        let o = run(apply(extra)).await;
        let t = text(&o);
        assert!(!o.status.success(), "{t}");
        assert!(
            t.contains("refused by the policy") && t.contains(why) && t.contains("nothing changed"),
            "want {why:?} in:\n{t}"
        );
        assert!(
            std::fs::read_to_string(&log).unwrap_or_default().is_empty(),
            "{t}"
        );
        assert_eq!(limit().await, Some(4));
    }
    let o = run(apply(&["--approved-by", "head-of-sre"])).await;
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert_eq!(limit().await, Some(6));
    let records = quotatop_store::audit::read_records(&log).unwrap();
    assert!(records.len() >= 2, "{records:?}");
    for (_, r) in &records {
        let stamp = r.class_policy.as_ref().expect("the policy stamp");
        assert_eq!(stamp.approved_by.as_deref(), Some("head-of-sre"));
        assert_eq!(stamp.hash, quotatop_policy::hash(policy_text));
    }
    assert!(quotatop_store::audit::verify(&log).is_ok());
    h.shutdown().await.unwrap();
}
