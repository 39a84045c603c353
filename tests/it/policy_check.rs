//! `quotatop policy check` and `report`'s policy section on a recorded journal with a
//! deliberate breach: an incident job waits 20 minutes for capacity against its class's
//! 15-minute promise. Both name it the same way (one conformance function).

use std::path::Path;
use std::process::{Command, Output};

use quotatop_model::{
    Attempt, CapacityLimit, JobStatus, Millis, QueueSnapshot, QuotaShare, ServiceEnvironment,
    ServiceJob, SharingConfig, Snapshot, TrackedJob,
};
use quotatop_store::journal::{Journal, JournalConfig};

const G5: &str = "ml.g5.12xlarge";
const MIN: Millis = 60_000;

const POLICY: &str = r#"version = 1
[[class]]
name = "incident"
priority = [9000, 9999]
shares = ["prod"]
max_wait = "15m"
[[class]]
name = "exploratory"
priority = [0, 999]
shares = ["research"]
max_wait = "1d"
"#;

fn job(id: &str, share: &str, priority: u32) -> ServiceJob {
    ServiceJob {
        id: id.into(),
        name: format!("train-{id}"),
        share: share.into(),
        priority,
        instance_type: G5.into(),
        instance_count: 1,
        status: JobStatus::Runnable,
        status_reason: None,
        created_at: 0,
        scheduled_at: None,
        started_at: None,
        stopped_at: None,
        preemption_retries: None,
        class_tag: None,
        preemption: None,
        attempts: vec![],
        checkpoint_interval_ms: None,
        is_terminated: false,
        extras: Default::default(),
    }
}

/// `j` running from `at`, or done at `done`.
fn at(mut j: ServiceJob, start: Millis, done: Option<Millis>) -> ServiceJob {
    j.status = if done.is_some() {
        JobStatus::Succeeded
    } else {
        JobStatus::Running
    };
    j.scheduled_at = Some(start);
    j.started_at = Some(start);
    j.stopped_at = done;
    j.attempts = vec![Attempt {
        resource_id: format!("tj-{}", j.id),
        started_at: Some(start),
        stopped_at: done,
        status_reason: None,
    }];
    j
}

fn snap(t: Millis, jobs: Vec<ServiceJob>) -> Snapshot {
    let q = QueueSnapshot {
        name: "ml-training".into(),
        environment: ServiceEnvironment {
            name: "se".into(),
            capacity: vec![CapacityLimit::new(G5, 4)],
        },
        shares: vec![
            QuotaShare::new(
                "prod",
                vec![CapacityLimit::new(G5, 2)],
                SharingConfig::lend(),
            ),
            QuotaShare::new(
                "research",
                vec![CapacityLimit::new(G5, 2)],
                SharingConfig::lend_and_borrow(100),
            ),
        ],
        jobs: jobs
            .into_iter()
            .map(|j| TrackedJob {
                job: j.into(),
                arn: "arn".into(),
                described_at: Some(t),
                listed_at: t,
            })
            .collect(),
        server_time: Some(t),
        ..Default::default()
    };
    Snapshot {
        taken_at: t,
        sequence: t as u64,
        queues: vec![q],
        ..Default::default()
    }
}

/// inc-late waits 20 min (promise 15), inc-fast 1 min, exp-1 1 min; all done by 40 min.
fn write_journal(path: &Path) {
    write_journal_tagged(path, None);
}

/// [`write_journal`], exp-1 carrying the class tag `exp_tag` when given.
fn write_journal_tagged(path: &Path, exp_tag: Option<&str>) {
    let mut j = Journal::open(path, JournalConfig::default()).unwrap();
    let (late, fast, exp) = (
        job("inc-late", "prod", 9500),
        job("inc-fast", "prod", 9500),
        ServiceJob {
            class_tag: exp_tag.map(String::from),
            ..job("exp-1", "research", 10)
        },
    );
    j.record(&snap(30_000, vec![late.clone(), fast.clone(), exp.clone()]))
        .unwrap();
    j.record(&snap(
        90_000,
        vec![
            late.clone(),
            at(fast.clone(), MIN, None),
            at(exp.clone(), MIN, None),
        ],
    ))
    .unwrap();
    j.record(&snap(
        21 * MIN,
        vec![
            at(late.clone(), 20 * MIN, None),
            at(fast.clone(), MIN, Some(10 * MIN)),
            at(exp.clone(), MIN, Some(10 * MIN)),
        ],
    ))
    .unwrap();
    j.record(&snap(
        41 * MIN,
        vec![
            at(late, 20 * MIN, Some(40 * MIN)),
            at(fast, MIN, Some(10 * MIN)),
            at(exp, MIN, Some(10 * MIN)),
        ],
    ))
    .unwrap();
}

fn quotatop(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_quotatop"))
        .args(args)
        .arg("--journal")
        .arg(dir.join("j.sqlite3"))
        .arg("--policy")
        .arg(dir.join("policy.toml"))
        // Never the developer's own config or audit log.
        .env("HOME", dir)
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_DATA_HOME", dir.join("data"))
        .env_remove("QUOTATOP_CONFIG")
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

const BREACH: &str = "- wait: P95 wait to first capacity 20m00s, promise 15m00s — breached: 1 job(s), worst inc-late (train-inc-late): waited 20m00s";

#[test]
fn policy_check_and_report_name_the_job_past_its_promise_the_same_way() {
    let dir = tempfile::tempdir().unwrap();
    write_journal(&dir.path().join("j.sqlite3"));
    std::fs::write(dir.path().join("policy.toml"), POLICY).unwrap();

    let o = quotatop(
        dir.path(),
        &["policy", "check", "--queue", "ml-training", "--since", "7d"],
    );
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    for want in [
        "## Policy conformance",
        "### incident — 2 job(s), 1 breach(es)",
        BREACH,
        "### exploratory — 1 job(s), holds",
        "- wait: P95 wait to first capacity 1m00s, promise 1d00h — holds",
        "the policy is breached 1 time(s) in incident over the last 7d",
    ] {
        assert!(t.contains(want), "want {want:?} in:\n{t}");
    }

    let o = quotatop(
        dir.path(),
        &["report", "--queue", "ml-training", "--since", "7d"],
    );
    let md = text(&o);
    assert!(o.status.success(), "{md}");
    assert!(md.contains("# Scorecard: ml-training"), "{md}");
    assert!(md.contains(BREACH), "{md}");

    let o = quotatop(
        dir.path(),
        &[
            "report",
            "--queue",
            "ml-training",
            "--since",
            "7d",
            "--format",
            "json",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let incident = &json["policy"]["classes"][0];
    assert_eq!(incident["class"], "incident");
    assert_eq!(incident["checks"][0]["jobs"][0]["job_id"], "inc-late");
    let o = quotatop(
        dir.path(),
        &[
            "report",
            "--queue",
            "ml-training",
            "--since",
            "7d",
            "--format",
            "csv",
        ],
    );
    let csv = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(csv.contains("policy,incident,breaches,1\n"), "{csv}");
    assert!(csv.contains("policy,exploratory,breaches,0\n"), "{csv}");

    // Keep the promise at 25 minutes and the same history holds: check exits 0.
    std::fs::write(dir.path().join("policy.toml"), POLICY.replace("15m", "25m")).unwrap();
    let o = quotatop(
        dir.path(),
        &["policy", "check", "--queue", "ml-training", "--since", "7d"],
    );
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("### incident — 2 job(s), holds"), "{t}");
}

/// `/metrics` names the same breach: `record`'s policy task computes it with the function
/// `policy check` uses, and the exposition carries it per class.
#[test]
fn metrics_export_the_breaches_policy_check_counts() {
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("j.sqlite3");
    write_journal(&journal);
    let audit = dir.path().join("audit.jsonl");
    std::fs::write(&audit, "").unwrap();
    let policy = quotatop_policy::parse(POLICY, "policy.toml").unwrap();
    let breaches = quotatop::commands::policy::breaches(
        &quotatop_store::StoreLocation::File(journal.clone()),
        Some(&audit),
        &policy,
        &["ml-training".to_string()],
        "7d",
    );
    assert_eq!(
        breaches,
        [
            ("ml-training".to_string(), "incident".to_string(), 1),
            ("ml-training".to_string(), "exploratory".to_string(), 0),
        ]
    );
    let ctx = quotatop::metrics::Context::default();
    ctx.policy.set(breaches);
    let (text, _) = quotatop::metrics::exposition(
        Some(&snap(41 * MIN, vec![])),
        Some(&Default::default()),
        &ctx,
        41 * MIN,
        false,
    );
    assert!(
        text.contains(
            "quotatop_policy_breaches{region=\"\",queue=\"ml-training\",class=\"incident\"} 1"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "quotatop_policy_breaches{region=\"\",queue=\"ml-training\",class=\"exploratory\"} 0"
        ),
        "{text}"
    );
}

/// `replay --policy`: the policy names important work (classes with a promise or protected)
/// instead of the band heuristic, and its classes' budgets are judged: lending that preempts a
/// job of a class allowing no preemption turns APPROVE into REJECT.
#[test]
fn replay_with_a_policy_judges_its_important_work_and_budgets() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.csv");
    std::fs::write(
        &trace,
        "submit_s,share,instance_type,instance_count,work_s,priority,name\n\
         0,A,ml.g5.2xlarge,1,3600,0,a1\n0,A,ml.g5.2xlarge,1,3600,0,a2\n\
         0,A,ml.g5.2xlarge,1,3600,0,a3\n1800,B,ml.g5.2xlarge,1,3600,1000,b1\n",
    )
    .unwrap();
    let replay = |policy: Option<&str>| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_quotatop"));
        c.arg("replay")
            .arg("--trace")
            .arg(&trace)
            .arg("--config")
            .arg("tests/fixtures/verdict_isolated.toml")
            .arg("tests/fixtures/verdict_lending.toml");
        if let Some(text) = policy {
            let p = dir.path().join("policy.toml");
            std::fs::write(&p, text).unwrap();
            c.arg("--policy").arg(p);
        }
        let o = c.output().unwrap();
        assert!(o.status.success(), "{}", text(&o));
        String::from_utf8(o.stdout).unwrap()
    };
    let bands = replay(None);
    assert!(
        bands.contains("Verdict lending: APPROVE") && bands.contains("interruption not judged"),
        "{bands}"
    );
    assert!(bands.contains("Important work: 1 of 4 jobs"), "{bands}");
    let budgeted = replay(Some(
        "version = 1\n[[class]]\nname = \"batch\"\npriority = [0, 999]\nshares = [\"A\"]\nmax_preemptions_per_job = 0\n\
         [[class]]\nname = \"urgent\"\npriority = [1000, 9999]\nshares = [\"B\"]\nmax_wait = \"30m\"\n",
    ));
    assert!(
        budgeted.contains("Verdict lending: REJECT — fails: interruption-budget breaches 0 → 1"),
        "{budgeted}"
    );
    assert!(budgeted.contains("Important work: 1 of 4 jobs, the same in every scenario: the jobs of the classes of policy"), "{budgeted}");
    // Marking A's jobs important instead (a promise on batch, none on urgent) changes the
    // important work the verdict reads.
    let a_important = replay(Some(
        "version = 1\n[[class]]\nname = \"batch\"\npriority = [0, 999]\nshares = [\"A\"]\nmax_wait = \"4h\"\n\
         [[class]]\nname = \"urgent\"\npriority = [1000, 9999]\nshares = [\"B\"]\n",
    ));
    assert!(
        a_important.contains("Important work: 3 of 4 jobs"),
        "{a_important}"
    );
    assert!(
        a_important.contains("Verdict lending: APPROVE"),
        "{a_important}"
    );
    // The class's promise is its share's deadline rule: capacity within 10 minutes, which two
    // of A's jobs miss in isolation and one with lending.
    let promised = replay(Some(
        "version = 1\n[[class]]\nname = \"batch\"\npriority = [0, 999]\nshares = [\"A\"]\nmax_wait = \"10m\"\n\
         [[class]]\nname = \"urgent\"\npriority = [1000, 9999]\nshares = [\"B\"]\n",
    ));
    assert!(
        promised.contains("important missed deadlines 2 → 1"),
        "{promised}"
    );
}

/// The one test comparing every place the breach is named: `policy check`, `report`, the
/// console's Policy screen (and its attention item) and `/metrics`, on one recorded journal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_report_the_policy_screen_and_metrics_name_the_breach_the_same_way() {
    use super::tui_support::{Step, drive_serving, options, screen_text};
    use quotatop_tui::effects::Services;
    /// The console's screens, the policy's work reading `reader` (as the console serves it).
    fn serving(
        reader: quotatop::services::policy::PolicyFromJournal,
    ) -> quotatop_tui::registry::Screens {
        let reader: std::sync::Arc<dyn quotatop_tui::policy::PolicyReader> =
            std::sync::Arc::new(reader);
        quotatop_tui::registry::Screens::builtin().serving(reader)
    }
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("j.sqlite3");
    write_journal(&journal);
    let policy_path = dir.path().join("policy.toml");
    std::fs::write(&policy_path, POLICY).unwrap();
    let line = BREACH.trim_start_matches("- ");

    let d = dir.path().to_path_buf();
    let (check, report) = tokio::task::spawn_blocking(move || {
        let check = quotatop(
            &d,
            &[
                "policy",
                "check",
                "--queue",
                "ml-training",
                "--since",
                "24h",
            ],
        );
        let report = quotatop(&d, &["report", "--queue", "ml-training", "--since", "24h"]);
        (text(&check), text(&report))
    })
    .await
    .unwrap();
    assert!(check.contains(BREACH), "{check}");
    assert!(report.contains(BREACH), "{report}");

    // The console: the reader judges the journal over the scorecard's window (24 h).
    let reader = quotatop::services::policy::PolicyFromJournal {
        policy: policy_path.clone(),
        journal: journal.clone(),
        audit_log: None,
        window: "24h".into(),
    };
    let screens = serving(reader);
    let last = snap(41 * MIN, vec![]);
    let (t, _) = drive_serving(
        220,
        40,
        options(),
        screens,
        Services::default(),
        last,
        vec![],
    )
    .await;
    let overview = screen_text(&t);
    let item =
        "incident: 1 job(s) waited over their 15m00s promise, worst train-inc-late: waited 20m00s";
    assert!(overview.contains(item), "{overview}");
    assert!(overview.contains("POLICY"), "{overview}");

    let reader = quotatop::services::policy::PolicyFromJournal {
        policy: policy_path.clone(),
        journal: journal.clone(),
        audit_log: None,
        window: "24h".into(),
    };
    let (t, _) = drive_serving(
        220,
        40,
        options(),
        serving(reader),
        Services::default(),
        snap(41 * MIN, vec![]),
        vec![Step::Keys("5")],
    )
    .await;
    let screen = screen_text(&t);
    assert!(screen.contains(line), "want {line:?} in:\n{screen}");
    assert!(
        screen.contains("incident — 2 job(s), 1 breach(es)"),
        "{screen}"
    );
    assert!(screen.contains("exploratory — 1 job(s), holds"), "{screen}");

    // /metrics: the breaches `record` exports, over the same window.
    let breaches = quotatop::commands::policy::breaches(
        &quotatop_store::StoreLocation::File(journal.clone()),
        None,
        &quotatop_policy::read(&policy_path).unwrap(),
        &["ml-training".to_string()],
        "24h",
    );
    assert_eq!(
        breaches,
        [
            ("ml-training".to_string(), "incident".to_string(), 1),
            ("ml-training".to_string(), "exploratory".to_string(), 0),
        ]
    );
    // Every place counts the one breach of incident.
    assert!(
        check.contains("### incident — 2 job(s), 1 breach(es)"),
        "{check}"
    );
    assert!(
        report.contains("### incident — 2 job(s), 1 breach(es)"),
        "{report}"
    );
}

/// The journal records each job's `quotatop:class` tag, and membership takes it first: exp-1,
/// in share research, tagged `incident`, is judged as an incident job (outside incident's
/// shares and range), not as exploratory work.
#[test]
fn the_recorded_class_tag_decides_a_jobs_class_before_its_share() {
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("j.sqlite3");
    write_journal_tagged(&journal, Some(" incident "));
    std::fs::write(dir.path().join("policy.toml"), POLICY).unwrap();
    let j = Journal::open_existing(&journal, JournalConfig::default()).unwrap();
    let tags = j.class_tags("ml-training", 0).unwrap();
    assert_eq!(tags.len(), 1, "{tags:?}");
    assert_eq!(tags["exp-1"].trim(), "incident");
    drop(j);
    let o = quotatop(
        dir.path(),
        &["policy", "check", "--queue", "ml-training", "--since", "7d"],
    );
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    for want in [
        "### incident — 3 job(s), 2 breach(es)",
        "worst exp-1 (train-exp-1): in share research, not prod, priority 10 outside 9000-9999",
        "### exploratory — 0 job(s), holds",
    ] {
        assert!(t.contains(want), "want {want:?} in:\n{t}");
    }
    // Without the tag the same history keeps exp-1 exploratory.
    let untagged = tempfile::tempdir().unwrap();
    write_journal(&untagged.path().join("j.sqlite3"));
    std::fs::write(untagged.path().join("policy.toml"), POLICY).unwrap();
    let o = quotatop(
        untagged.path(),
        &["policy", "check", "--queue", "ml-training", "--since", "7d"],
    );
    assert!(
        text(&o).contains("### exploratory — 1 job(s), holds"),
        "{}",
        text(&o)
    );
}

/// The demo world carries class tags and the policy `quotatop demo` judges it by: recorded
/// from the emulator at the demo's own speed, within its first minute the journal holds each
/// job's tag and `policy check` (the Policy screen's function) names a true breach:
/// video-pretrain, delivery by its tag, preempted past its class's budget of one.
#[test]
fn the_demo_world_breaches_its_policy_within_its_first_minute() {
    use std::time::{Duration, Instant};
    let (emu, url) = crate::emulator_support::spawn_emulator_binary(&["--speed", "60"]);
    let _emu = crate::metrics_support::Kill(emu);
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("j.sqlite3");
    let rec = Command::new(env!("CARGO_BIN_EXE_quotatop"))
        .args(["record", "--queue", "ml-training", "--interval", "1"])
        .arg("--endpoint-url")
        .arg(&url)
        .arg("--journal")
        .arg(&journal)
        .arg("--log-dir")
        .arg(dir.path().join("logs"))
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_REGION", "us-east-1")
        .env("HOME", dir.path())
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .env("XDG_DATA_HOME", dir.path().join("data"))
        .env_remove("QUOTATOP_CONFIG")
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let _rec = crate::metrics_support::Kill(rec);
    std::fs::write(
        dir.path().join("policy.toml"),
        quotatop::commands::demo::DEMO_POLICY,
    )
    .unwrap();
    let started = Instant::now();
    let out = loop {
        std::thread::sleep(Duration::from_secs(2));
        let o = quotatop(
            dir.path(),
            &[
                "policy",
                "check",
                "--queue",
                "ml-training",
                "--since",
                "24h",
            ],
        );
        let t = text(&o);
        if t.contains("preempted 2 time(s), budget 1") {
            break t;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no breach named within the first minute:\n{t}"
        );
    };
    let budget = out
        .lines()
        .find(|l| l.contains("preempted 2 time(s), budget 1"))
        .unwrap();
    assert!(
        budget.starts_with("- interruption budget:") && budget.contains("(video-pretrain)"),
        "{out}"
    );
    let delivery = out.split("### delivery").nth(1).unwrap_or_default();
    assert!(delivery.contains("(video-pretrain)"), "{out}");
    // Only the breaches the demo exists to show: no job outside its class's range.
    assert!(
        !out.contains("outside its shares or priority range"),
        "{out}"
    );
    // Membership by the recorded tag: research-burst (tagged exploratory) and video-pretrain
    // (tagged delivery) are known by their tags.
    let j = Journal::open_existing(&journal, JournalConfig::default()).unwrap();
    let tags = j.class_tags("ml-training", 0).unwrap();
    let names: std::collections::BTreeMap<String, String> = j
        .jobs("ml-training", 0)
        .unwrap()
        .into_iter()
        .map(|r| (r.name, r.job_id))
        .collect();
    assert_eq!(tags[&names["video-pretrain"]], "delivery", "{tags:?}");
    assert_eq!(tags[&names["research-burst"]], "exploratory", "{tags:?}");
    assert_eq!(tags[&names["oversized-finetune"]], "regulatory", "{tags:?}");
}

/// The demo world keeps its policy except for the breaches it exists to show (video-pretrain's
/// interruption budget, oversized-finetune's wait): every scripted job and every priority a
/// generator draws is in its class's shares and priority range, by the membership rule the
/// Policy screen uses.
#[test]
fn the_demo_worlds_jobs_are_in_their_classes_shares_and_ranges() {
    let scenario =
        quotatop_emulator::Scenario::parse(quotatop::commands::demo::DEMO_SCENARIO).unwrap();
    let policy = quotatop_policy::parse(quotatop::commands::demo::DEMO_POLICY, "demo").unwrap();
    let mut outside = Vec::new();
    let mut judge = |name: &str,
                     tags: &std::collections::BTreeMap<String, String>,
                     share: &str,
                     priority: i64| {
        let priority = u32::try_from(priority).unwrap();
        let tag = tags.get("quotatop:class").map(String::as_str);
        match quotatop_policy::class_of(&policy, tag, share, priority) {
            Some(m)
                if m.class.shares.iter().any(|s| s == share)
                    && m.class.priority.contains(priority) => {}
            Some(m) => outside.push(format!("{name}: {share} {priority} in {}", m.class.name)),
            None => outside.push(format!("{name}: no class")),
        }
    };
    for j in &scenario.jobs {
        judge(&j.name, &j.tags, &j.share, j.priority);
    }
    for share in &scenario.shares {
        for g in &share.generators {
            let drawn: Vec<i64> = if g.priorities.is_empty() {
                vec![0]
            } else {
                g.priorities.iter().map(|p| p.priority).collect()
            };
            for p in drawn {
                judge(&g.name, &g.tags, &share.name, p);
            }
        }
    }
    assert!(
        outside.is_empty(),
        "demo jobs outside their class: {outside:?}"
    );
}

/// One window: without `--since`, `policy check` judges the configured `[scorecard]
/// window_hours` (24 h unless set), what the console's Policy screen and `/metrics` judge.
#[test]
fn policy_check_defaults_to_the_configured_window() {
    let dir = tempfile::tempdir().unwrap();
    write_journal(&dir.path().join("j.sqlite3"));
    std::fs::write(dir.path().join("policy.toml"), POLICY).unwrap();
    let o = quotatop(dir.path(), &["policy", "check", "--queue", "ml-training"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains(BREACH), "{t}");
    assert!(t.contains("in incident over the last 24h"), "{t}");

    let config = dir.path().join("config.toml");
    std::fs::write(&config, "[scorecard]\nwindow_hours = 48\n").unwrap();
    let o = quotatop(
        dir.path(),
        &[
            "policy",
            "check",
            "--queue",
            "ml-training",
            "--config",
            config.to_str().unwrap(),
        ],
    );
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("in incident over the last 48h"), "{t}");
    // A config that cannot be read says nothing about the window: refused, not judged over a
    // default the user did not ask for.
    std::fs::write(&config, "[scorecard\nwindow_hours = 48\n").unwrap();
    let o = quotatop(
        dir.path(),
        &[
            "policy",
            "check",
            "--queue",
            "ml-training",
            "--config",
            config.to_str().unwrap(),
        ],
    );
    let t = text(&o);
    assert!(!o.status.success(), "{t}");
    assert!(
        t.contains("cannot tell the window") && t.contains("--since"),
        "{t}"
    );
    assert!(!t.contains("over the last 24h"), "{t}");
}
