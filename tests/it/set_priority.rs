//! `quotatop set-priority` end to end against the emulator: validation, preview, the audit
//! trail around the API call, read-only mode, failures, and a preview that comes true.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::emulator_support::*;
use aws_sdk_batch::types::QuotaShareResourceSharingStrategy as Strategy;
use quotatop_actions::{self as actions, ChangeContext, Prediction};
use quotatop_aws::batch::{BatchClient, ConnectOptions, StaticCredentials};
use quotatop_aws::poll::{self, PollConfig};
use quotatop_emulator::EmulatorHandle;
use quotatop_store::audit::{self, AuditLog, AwsContext, Operator, Outcome, RecordKind};

pub fn temp_log(name: &str) -> crate::temp_support::TempPath {
    crate::temp_support::path(&format!("setprio-{name}"), "audit.jsonl")
}

pub fn cmd(url: &str, log: &PathBuf, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_quotatop"));
    c.arg("set-priority")
        .args(args)
        .args(["--endpoint-url", url, "--queue", QUEUE, "--log"])
        .arg(log)
        .env("AWS_ACCESS_KEY_ID", "AKIDTEST")
        .env("AWS_SECRET_ACCESS_KEY", "secret")
        .env("AWS_REGION", "us-east-1")
        .env_remove("QUOTATOP_READ_ONLY")
        .env_remove("QUOTATOP_CONFIG")
        // No user config file: the defaults, unless a test names one.
        .env("XDG_CONFIG_HOME", log.with_file_name("no-config"))
        .stdin(Stdio::null());
    c
}

/// `quotatop audit reconcile` on `log` against the emulator at `url`.
fn reconcile_cmd(url: &str, log: &PathBuf) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_quotatop"));
    c.args(["audit", "reconcile", "--endpoint-url", url, "--log"])
        .arg(log)
        .env("AWS_ACCESS_KEY_ID", "AKIDTEST")
        .env("AWS_SECRET_ACCESS_KEY", "secret")
        .env("AWS_REGION", "us-east-1");
    c
}

pub async fn run(c: Command) -> Output {
    let mut c = c;
    tokio::task::spawn_blocking(move || c.output().expect("quotatop runs"))
        .await
        .expect("join")
}

/// One share, in-share preemption on, 2 instances: two running jobs (priorities 3 and 1) and
/// a waiting job at priority 0.
pub async fn world() -> (EmulatorHandle, [String; 3]) {
    let h = start(&[(M5, 4)], "").await;
    let c = client(&h, 3);
    create_share(&c, "team", &[(M5, 2)], Strategy::Reserve, None, true).await;
    let mid = submit(&c, "mid", "team", M5, 1, 3).await;
    h.advance(10_000).unwrap();
    let low = submit(&c, "low", "team", M5, 1, 1).await;
    h.advance(10_000).unwrap();
    let target = submit(&c, "target", "team", M5, 1, 0).await;
    h.advance(1_000).unwrap();
    (h, [mid, low, target])
}

pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raising_a_waiting_job_preempts_what_the_preview_predicted() {
    let (h, [mid, low, target]) = world().await;
    let url = h.endpoint_url();
    let log = temp_log("success");
    // Dry run first: the preview names the lowest-priority running job, nothing changes.
    let dry = run(cmd(
        &url,
        &log,
        &[
            &target,
            "--priority",
            "5",
            "--reason",
            "incident 7, paper deadline",
            "--dry-run",
        ],
    ))
    .await;
    let t = text(&dry);
    assert!(dry.status.success(), "{t}");
    assert!(t.contains("position  1 -> 1 of 1"), "{t}");
    assert!(
        t.contains("in-share preemption of 1 running job") && t.contains("- low (priority 1"),
        "{t}"
    );
    assert!(t.contains("dry run: nothing changed"), "{t}");
    assert!(!log.exists());

    let out = run(cmd(
        &url,
        &log,
        &[
            &target,
            "--priority",
            "5",
            "--reason",
            "incident 7, paper deadline",
            "--yes",
            "--tag-justification",
        ],
    ))
    .await;
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("priority of target set to 5"), "{t}");
    // The engine preempted exactly the predicted job and no other (mid, at priority 3, is
    // also below the new priority but was not predicted), and the target runs.
    let (low_preempted, mid_preempted, target_prio) = h
        .with_engine(|e| {
            let t_id = e.find(&target).unwrap();
            // The emulator drains the engine's event log; the job's own record keeps the facts.
            let preempted = |id: &str| {
                let j = e.job(e.find(id).unwrap()).unwrap();
                j.preemption_count() > 0
                    || j.status_reason
                        .as_deref()
                        .is_some_and(|r| r.starts_with("PREEMPTION_IN_PROGRESS"))
            };
            (
                preempted(&low),
                preempted(&mid),
                e.job(t_id).unwrap().priority,
            )
        })
        .unwrap();
    assert!(low_preempted);
    assert!(
        !mid_preempted,
        "mid was not predicted and must not be preempted"
    );
    assert_eq!(target_prio, 5);
    let records = audit::read_records(&log).unwrap();
    assert_eq!(records.len(), 2);
    assert_eq!(records[0].1.kind, RecordKind::Intent);
    assert_eq!(records[0].1.justification, "incident 7, paper deadline");
    assert!(
        records[0].1.preview.contains("in-share preemption of low"),
        "{}",
        records[0].1.preview
    );
    assert!(matches!(
        records[1].1.outcome,
        Some(Outcome::Succeeded { .. })
    ));
    assert_eq!(audit::verify(&log).map(|h| h.count), Ok(2));
    // The justification tag is visible in AWS.
    let c = client(&h, 1);
    let arn = records[0].1.job.arn.clone();
    let tags = c
        .list_tags_for_resource()
        .resource_arn(&arn)
        .send()
        .await
        .unwrap();
    let tag = tags
        .tags()
        .and_then(|t| t.get("quotatop:priority-change"))
        .cloned();
    assert!(
        tag.is_some_and(|v| v.starts_with("0->5 by ") && v.ends_with("incident 7, paper deadline"))
    );
    // So is the audit log's head just after the change: an anchor outside the file.
    let head = audit::verify(&log).unwrap();
    let anchor = tags
        .tags()
        .and_then(|t| t.get("quotatop:audit-head"))
        .cloned();
    assert_eq!(anchor, Some(format!("2:{}", head.hash)));
    h.shutdown().await.ok();
}

/// A LEND_AND_BORROW share with limit 2 holds 4 instances (2 borrowed from an idle lender);
/// raising its waiting job previews the one preemption the engine makes (the job then fits by
/// borrowing again), and exactly that job is preempted: not the others the share would shed to
/// get back under its own limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raising_a_waiting_job_on_a_borrowing_share_preempts_only_the_predicted_job() {
    let h = start(&[(M5, 4)], "").await;
    let c = client(&h, 3);
    create_share(
        &c,
        "team",
        &[(M5, 2)],
        Strategy::LendAndBorrow,
        Some(-1),
        true,
    )
    .await;
    create_share(&c, "lender", &[(M5, 2)], Strategy::Lend, None, false).await;
    let mut running = Vec::new();
    for name in ["run-a", "run-b", "run-c", "run-d"] {
        running.push((name, submit(&c, name, "team", M5, 1, 1).await));
        h.advance(60_000).unwrap();
    }
    let target = submit(&c, "target", "team", M5, 1, 0).await;
    h.advance(60_000).unwrap();
    let url = h.endpoint_url();
    let log = temp_log("borrowing");
    let args = [
        target.as_str(),
        "--priority",
        "5",
        "--reason",
        "incident 8, paper deadline",
    ];
    let mut dry = args.to_vec();
    dry.push("--dry-run");
    let out = run(cmd(&url, &log, &dry)).await;
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("in-share preemption of 1 running job ("), "{t}");
    // Exactly, not "up to": the snapshot settles it. The emulator runs the engine the preview
    // runs, so no "as modelled" note.
    assert!(!t.contains("up to") && !t.contains("as modelled"), "{t}");
    let previewed: Vec<&str> = t
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("- "))
        .filter_map(|l| l.split(' ').next())
        .collect();
    assert_eq!(previewed, ["run-d"], "{t}");
    let mut yes = args.to_vec();
    yes.push("--yes");
    let out = run(cmd(&url, &log, &yes)).await;
    assert!(out.status.success(), "{}", text(&out));
    let preempted: Vec<(&str, bool)> = h
        .with_engine(|e| {
            running
                .iter()
                .map(|(name, id)| {
                    let j = e.job(e.find(id).unwrap()).unwrap();
                    let hit = j.preemption_count() > 0
                        || j.status_reason
                            .as_deref()
                            .is_some_and(|r| r.starts_with("PREEMPTION_IN_PROGRESS"));
                    (*name, hit)
                })
                .collect()
        })
        .unwrap();
    assert_eq!(
        preempted,
        [
            ("run-a", false),
            ("run-b", false),
            ("run-c", false),
            ("run-d", true)
        ]
    );
    // The previewed victims are exactly the jobs the emulator preempted.
    let hit: Vec<&str> = preempted
        .iter()
        .filter(|(_, hit)| *hit)
        .map(|(n, _)| *n)
        .collect();
    assert_eq!(hit, previewed);
    h.shutdown().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_read_only_and_unreachable_change_nothing() {
    let (h, [_, _, target]) = world().await;
    let url = h.endpoint_url();
    let log = temp_log("bad");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec![
                "--priority",
                "10000",
                "--reason",
                "INC-1 paper deadline",
                "--yes",
            ],
            "10000 is out of range",
        ),
        (
            vec![
                "--priority",
                "-3",
                "--reason",
                "INC-1 paper deadline",
                "--yes",
            ],
            "-3 is out of range",
        ),
        (
            vec![
                "--priority",
                "high",
                "--reason",
                "INC-1 paper deadline",
                "--yes",
            ],
            "\"high\" is not a whole number",
        ),
        (
            vec![
                "--priority",
                "",
                "--reason",
                "INC-1 paper deadline",
                "--yes",
            ],
            "enter a priority between 0 and 9999",
        ),
        (
            vec!["--priority", "5", "--reason", " ", "--yes"],
            "a justification is required",
        ),
        (
            vec!["--priority", "5", "--reason", "ok", "--yes"],
            "the justification is 2 characters; at least 15 are required",
        ),
        (
            vec![
                "--priority",
                "2000",
                "--reason",
                "INC-1 paper deadline",
                "--yes",
            ],
            "a change-record id is required",
        ),
        (
            vec!["--priority", "5", "--reason", "INC-1 paper deadline"],
            "pass --yes",
        ),
        (
            vec![
                "--priority",
                "5",
                "--reason",
                "INC-1 paper deadline",
                "--yes",
                "--read-only",
            ],
            "read-only is set by the --read-only flag",
        ),
    ];
    for (args, want) in cases {
        let mut all = vec![target.as_str()];
        all.extend(args);
        let out = run(cmd(&url, &log, &all)).await;
        assert!(!out.status.success());
        let t = text(&out);
        assert!(t.contains(want), "{t} lacks {want}");
        assert!(!t.contains("panicked"), "{t}");
    }
    // Read-only from the environment too.
    let mut c = cmd(
        &url,
        &log,
        &[
            &target,
            "--priority",
            "5",
            "--reason",
            "INC-1 paper deadline",
            "--yes",
        ],
    );
    c.env("QUOTATOP_READ_ONLY", "true");
    let t = text(&run(c).await);
    assert!(
        t.contains("read-only is set by the environment variable QUOTATOP_READ_ONLY=true"),
        "{t}"
    );
    // A large change passes with a change record... as a dry run.
    let ok = run(cmd(
        &url,
        &log,
        &[
            &target,
            "--priority",
            "2000",
            "--reason",
            "INC-1 paper deadline",
            "--change-record",
            "CHG-1",
            "--dry-run",
        ],
    ))
    .await;
    assert!(ok.status.success(), "{}", text(&ok));
    // Unreachable endpoint: a plain error, nothing recorded.
    let out = run(cmd(
        "http://127.0.0.1:1",
        &log,
        &[
            &target,
            "--priority",
            "5",
            "--reason",
            "INC-1 paper deadline",
            "--yes",
        ],
    ))
    .await;
    assert!(!out.status.success());
    assert!(text(&out).contains("cannot reach"), "{}", text(&out));
    assert!(!log.exists(), "no change, no audit record");
    h.shutdown().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_that_finished_meanwhile_is_refused_by_the_api_and_recorded() {
    let (h, [mid, _, _]) = world().await;
    let bc = BatchClient::connect(ConnectOptions {
        profile: None,
        region: Some("us-east-1".into()),
        endpoint_url: Some(h.endpoint_url()),
        credentials: Some(StaticCredentials {
            access_key_id: "AKIDTEST".into(),
            secret_access_key: "secret".into(),
        }),
    })
    .await
    .unwrap();
    let snap = poll::refresh_once(
        &bc,
        PollConfig {
            queues: vec![QUEUE.into()],
            ..PollConfig::default()
        },
    )
    .await
    .unwrap();
    let preview = actions::preview(&snap.queues[0], &mid, 9).unwrap();
    assert!(matches!(preview.prediction, Prediction::NotWaiting { .. }));
    // The job finishes between the preview and the call (the payload runs 10 h).
    h.advance(11 * 3_600_000).unwrap();
    let log = temp_log("finished");
    let ctx = ChangeContext {
        operator: Operator {
            user: "u".into(),
            host: "h".into(),
            ..Default::default()
        },
        aws: AwsContext::default(),
        queue: QUEUE.into(),
        justification: "deadline".into(),
        change_record: None,
        read_only: false,
        policy: None,
        class_policy: None,
        batch: None,
    };
    let outcome = actions::apply_change(&bc, &AuditLog::new(&log).into(), &ctx, &preview)
        .await
        .unwrap();
    let Outcome::Failed { error } = &outcome else {
        panic!("{outcome:?}")
    };
    // Exactly the refusal AWS gives for a finished job, not any client error.
    assert!(error.contains("has already finished"), "{error}");
    let recs = audit::read_records(&log).unwrap();
    assert_eq!(recs.len(), 2);
    assert_eq!(recs[1].1.outcome, Some(outcome));
    h.shutdown().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_changes_are_listed_as_unknown_then_reconciled() {
    let (h, [_, _, target]) = world().await;
    // UpdateServiceJob takes 30 s: each process is killed while waiting for it.
    h.set_faults(quotatop_emulator::FaultSpec::parse("updateservicejob:latency=30s").unwrap());
    let log = temp_log("killed");
    // Two changes to one job, each killed after its intent: first to 6, then to 5.
    for (n, prio) in [(1, "6"), (2, "5")] {
        let mut c = cmd(
            &h.endpoint_url(),
            &log,
            &[
                &target,
                "--priority",
                prio,
                "--reason",
                "killed mid-change",
                "--yes",
            ],
        );
        // `$USER` is anyone's to set: the record names the account of the uid.
        c.env("USER", "alice");
        let mut child = c
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while audit::read_records(&log).map(|r| r.len()).unwrap_or(0) < n {
            assert!(Instant::now() < deadline, "intent never written");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        child.kill().unwrap();
        child.wait().unwrap();
    }
    let list = Command::new(env!("CARGO_BIN_EXE_quotatop"))
        .args(["audit", "list", "--log"])
        .arg(&log)
        .output()
        .unwrap();
    let t = String::from_utf8_lossy(&list.stdout);
    assert!(
        t.contains("killed mid-change") && t.matches("OUTCOME UNKNOWN").count() == 2,
        "{t}"
    );
    assert_eq!(audit::verify(&log).map(|h| h.count), Ok(2));
    // Who: the local account from the uid (not `$USER`), the AWS principal from STS; and the
    // policy the change was checked against.
    let intent = &audit::read_records(&log).unwrap()[0].1;
    // A change of one job is no batch.
    assert_eq!(intent.batch_id, None);
    let uid_name = String::from_utf8(Command::new("id").arg("-un").output().unwrap().stdout)
        .unwrap()
        .trim()
        .to_string();
    assert_eq!(intent.operator.user, uid_name);
    assert!(
        intent
            .operator
            .local_user
            .as_deref()
            .is_some_and(|u| u.starts_with(&format!("{uid_name} (uid "))),
        "{intent:?}"
    );
    assert_eq!(
        intent.operator.aws_principal.as_deref(),
        Some("arn:aws:iam::123456789012:user/AKIDTEST")
    );
    assert_eq!(
        intent.policy.as_deref(),
        Some(
            "large_change=1000 protected_from=9000 min_justification_chars=15 (built-in defaults)"
        )
    );
    // The unknown changes are not attributed to anyone yet.
    assert!(
        audit::queue_priority_changes(&log, QUEUE)
            .unwrap()
            .is_empty()
    );

    // The second call landed (as a stalled call on AWS may, after the client died).
    client(&h, 1)
        .update_service_job()
        .job_id(&target)
        .scheduling_priority(5)
        .send()
        .await
        .unwrap();
    h.set_faults(quotatop_emulator::FaultSpec::none());
    // Reconcile, in read-only mode (it writes only the local log).
    let out = reconcile_cmd(&h.endpoint_url(), &log)
        .env("QUOTATOP_READ_ONLY", "1")
        .output()
        .unwrap();
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("6: undecidable"), "{t}");
    assert!(t.contains("5: landed (priority now 5)"), "{t}");
    assert!(t.contains("2 changes reconciled"), "{t}");
    let head = audit::verify(&log).unwrap();
    assert_eq!(head.count, 4);
    // The landed change is now attributed to the operator of its intent.
    let changes = audit::queue_priority_changes(&log, QUEUE).unwrap();
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!((changes[0].old, changes[0].new), (changes[0].old, 5));
    let intent_user = audit::read_records(&log).unwrap()[1]
        .1
        .operator
        .user
        .clone();
    assert_eq!(
        changes[0].operator.as_deref(),
        Some(
            format!(
                "{intent_user}@{}",
                audit::read_records(&log).unwrap()[1].1.operator.host
            )
            .as_str()
        )
    );
    let list = Command::new(env!("CARGO_BIN_EXE_quotatop"))
        .args(["audit", "list", "--log"])
        .arg(&log)
        .output()
        .unwrap();
    let t = String::from_utf8_lossy(&list.stdout);
    assert!(t.contains("outcome reconciled: landed"), "{t}");
    assert!(!t.contains("OUTCOME UNKNOWN"), "{t}");
    // A second run has nothing to do.
    let again = reconcile_cmd(&h.endpoint_url(), &log).output().unwrap();
    assert!(
        text(&again).contains("nothing to reconcile"),
        "{}",
        text(&again)
    );
    h.shutdown().await.ok();
}

/// 8 `set-priority` processes × 20 rounds on one job, with UpdateServiceJob failing half the
/// time (5xx): every outcome is paired with its own intent, says what the process saw, and
/// agrees with what the emulator did.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_changes_to_one_job_each_pair_with_their_own_outcome() {
    let (h, [_, _, target]) = world().await;
    h.set_faults(
        quotatop_emulator::FaultSpec::parse("updateservicejob:error=0.5;seed=11").unwrap(),
    );
    let url = h.endpoint_url();
    let log = temp_log("concurrent");
    // Each change sets a priority no other change sets: priority -> (exit success, output).
    let mut results: std::collections::HashMap<u32, (bool, String)> = Default::default();
    for round in 0..20u32 {
        let children: Vec<_> = (0..8u32)
            .map(|p| {
                let prio = (1 + round * 8 + p).to_string();
                let reason = format!("process {p} round {round}");
                let mut c = cmd(
                    &url,
                    &log,
                    &[&target, "--priority", &prio, "--reason", &reason, "--yes"],
                );
                c.env("AWS_MAX_ATTEMPTS", "2")
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped());
                (1 + round * 8 + p, c.spawn().expect("quotatop starts"))
            })
            .collect();
        for (prio, child) in children {
            let out = tokio::task::spawn_blocking(move || child.wait_with_output())
                .await
                .unwrap()
                .unwrap();
            results.insert(prio, (out.status.success(), text(&out)));
        }
    }
    let head = audit::verify(&log).expect("the chain verifies");
    let records = audit::read_records(&log).unwrap();
    let changes = audit::changes(&records);
    if head.count != 320 {
        // Which processes left no intent, and what they said: a refusal before the intent
        // (nothing changed, nothing to record) reads differently from a lost record.
        let recorded: std::collections::HashSet<u32> =
            changes.iter().map(|c| c.intent.new_priority).collect();
        let missing: Vec<_> = results
            .iter()
            .filter(|(p, _)| !recorded.contains(p))
            .collect();
        panic!(
            "{} records, not an intent and an outcome per change (320); without an intent: \
             {missing:#?}",
            head.count
        );
    }
    assert_eq!(changes.len(), 160);
    let ids: std::collections::HashSet<&str> = changes
        .iter()
        .map(|c| c.intent.change_id.as_str())
        .collect();
    assert_eq!(ids.len(), 160, "change ids are unique");
    assert!(
        ids.iter()
            .all(|id| id.len() == 36 && id.as_bytes()[14] == b'4')
    );
    let mut succeeded = std::collections::HashSet::new();
    let mut failed = 0;
    for c in &changes {
        let i = &c.intent;
        let o = c
            .outcome
            .as_ref()
            .unwrap_or_else(|| panic!("no outcome for {i:?}"));
        assert_eq!(
            (
                &o.change_id,
                o.new_priority,
                o.old_priority,
                &o.justification
            ),
            (
                &i.change_id,
                i.new_priority,
                i.old_priority,
                &i.justification
            ),
            "outcome paired with another change"
        );
        let (ok, said) = &results[&i.new_priority];
        match &o.outcome {
            Some(Outcome::Succeeded { request_id }) => {
                assert!(*ok, "recorded as succeeded, the process failed: {said}");
                let want = format!(
                    "set to {} (request {})",
                    i.new_priority,
                    request_id.as_deref().unwrap_or("-")
                );
                assert!(said.contains(&want), "{said} lacks {want}");
                succeeded.insert(i.new_priority);
            }
            Some(Outcome::Failed { .. }) => {
                assert!(!*ok, "recorded as failed, the process succeeded: {said}");
                assert!(said.contains("the API refused the change"), "{said}");
                failed += 1;
            }
            other => panic!("an outcome record without an API result: {other:?} in {o:?}"),
        }
    }
    assert!(failed > 0 && !succeeded.is_empty(), "{failed} failed");
    // The emulator's side: one processed UpdateServiceJob per success (5xx are not processed).
    let processed = h.calls("updateservicejob") - h.fault_stats().server_errors;
    assert_eq!(processed, succeeded.len() as u64);
    let final_priority = h
        .with_engine(|e| e.job(e.find(&target).unwrap()).unwrap().priority)
        .unwrap();
    assert!(
        succeeded.contains(&final_priority),
        "final priority {final_priority} was not set by a recorded success"
    );
    // Each change recorded the priority it observed: the start (0) or one a success set.
    for c in &changes {
        let old = c.intent.old_priority;
        assert!(old == 0 || succeeded.contains(&old), "observed {old}");
    }
    h.shutdown().await.ok();
}

/// A held audit-log lock: after ~1 s set-priority says who holds it, and gives up at the
/// configured timeout without calling the API.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_audit_lock_is_named_and_times_out() {
    use std::io::BufRead;
    let (h, [_, _, target]) = world().await;
    let log = temp_log("locked");
    let guard = AuditLog::new(&log).lock().unwrap();
    let mut c = cmd(
        &h.endpoint_url(),
        &log,
        &[
            &target,
            "--priority",
            "5",
            "--reason",
            "INC-1 paper deadline",
            "--yes",
        ],
    );
    c.env("QUOTATOP_AUDIT_LOCK_TIMEOUT", "3")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let err = child.stderr.take().unwrap();
    let lines = tokio::task::spawn_blocking(move || {
        std::io::BufReader::new(err)
            .lines()
            .map_while(Result::ok)
            .map(|l| (Instant::now(), l))
            .collect::<Vec<_>>()
    })
    .await
    .unwrap();
    let status = child.wait().unwrap();
    let ended = Instant::now();
    assert!(!status.success());
    let all: Vec<&str> = lines.iter().map(|(_, l)| l.as_str()).collect();
    let notice = lines
        .iter()
        .find(|(_, l)| {
            l.contains(&format!(
                "waiting for the audit log lock held by PID {}",
                std::process::id()
            ))
        })
        .unwrap_or_else(|| panic!("no waiting notice: {all:?}"));
    assert!(
        all.iter().any(|l| l.contains("gave up after 3 s")),
        "{all:?}"
    );
    // Said after 1 s of a 3 s wait: about 2 s before the process gave up.
    let before_end = ended - notice.0;
    assert!(
        before_end >= Duration::from_millis(1200) && before_end <= Duration::from_millis(2900),
        "notice {before_end:?} before the end"
    );
    assert_eq!(
        h.calls("updateservicejob"),
        0,
        "no change without an intent"
    );
    assert!(audit::read_records(&log).unwrap().is_empty());
    drop(guard);
    h.shutdown().await.ok();
}

/// `QUOTATOP_READ_ONLY` takes every spelling the README gives, through the one parser the
/// console uses too; a value it cannot understand stops the change instead of being ignored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_environment_values_and_policy_from_config_only() {
    let (h, [_, _, target]) = world().await;
    let url = h.endpoint_url();
    let log = temp_log("env");
    let dry = [
        target.as_str(),
        "--priority",
        "5",
        "--reason",
        "INC-1 paper deadline",
        "--dry-run",
    ];
    for on in ["1", "true", "TRUE", "yes", "on", " On "] {
        let mut c = cmd(&url, &log, &dry);
        c.env("QUOTATOP_READ_ONLY", on);
        let out = run(c).await;
        let t = text(&out);
        assert!(!out.status.success(), "{on:?}: {t}");
        assert!(t.contains("read-only mode"), "{on:?}: {t}");
        assert!(!t.contains("error: invalid value"), "{on:?}: {t}");
    }
    for off in ["0", "false", "no", "off", "OFF", ""] {
        let mut c = cmd(&url, &log, &dry);
        c.env("QUOTATOP_READ_ONLY", off);
        let out = run(c).await;
        assert!(out.status.success(), "{off:?}: {}", text(&out));
        assert!(text(&out).contains("dry run: nothing changed"));
    }
    let mut c = cmd(&url, &log, &dry);
    c.env("QUOTATOP_READ_ONLY", "maybe");
    let out = run(c).await;
    assert!(!out.status.success());
    let t = text(&out);
    assert!(
        t.contains("QUOTATOP_READ_ONLY=maybe is not a yes/no value"),
        "{t}"
    );
    assert!(t.contains("changes nothing"), "{t}");

    // The policy cannot be loosened from the command line: the old override flags are gone.
    for flag in ["--large-change", "--protected-from"] {
        let mut all = dry.to_vec();
        all.extend([flag, "100000"]);
        let out = run(cmd(&url, &log, &all)).await;
        assert!(!out.status.success());
        assert!(text(&out).contains("unexpected argument"), "{}", text(&out));
    }
    // It comes from the config file's [priority] table...
    let dir = log.parent().expect("log dir").to_path_buf();
    std::fs::create_dir_all(&dir).unwrap();
    let strict = dir.join("strict.toml");
    std::fs::write(
        &strict,
        "[priority]\nlarge_change = 3\nprotected_from = 9000\n",
    )
    .unwrap();
    let mut all = dry.to_vec();
    let strict_s = strict.display().to_string();
    all.extend(["--config", strict_s.as_str()]);
    let out = run(cmd(&url, &log, &all)).await;
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("a change-record id is required"),
        "{}",
        text(&out)
    );
    // ...and `read_only = true` there refuses too.
    let ro = dir.join("ro.toml");
    std::fs::write(&ro, "read_only = true\n").unwrap();
    let ro_s = ro.display().to_string();
    let mut all = dry.to_vec();
    all.extend(["--config", ro_s.as_str()]);
    let out = run(cmd(&url, &log, &all)).await;
    assert!(text(&out).contains("read-only mode"), "{}", text(&out));
    // A misspelt key in [priority] is not a looser policy: it stops the change.
    let typo = dir.join("typo.toml");
    std::fs::write(&typo, "[priority]\nlarge_chnage = 10\n").unwrap();
    let typo_s = typo.display().to_string();
    let mut all = dry.to_vec();
    all.extend(["--config", typo_s.as_str()]);
    let out = run(cmd(&url, &log, &all)).await;
    assert!(!out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("large_chnage"), "{}", text(&out));
    assert!(!text(&out).contains("using defaults"), "{}", text(&out));
    // A config file that cannot be read stops the change (no silent fall-back to defaults).
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, "[priority\n").unwrap();
    let bad_s = bad.display().to_string();
    let mut all = dry.to_vec();
    all.extend(["--config", bad_s.as_str()]);
    let out = run(cmd(&url, &log, &all)).await;
    assert!(!out.status.success());
    assert!(text(&out).contains(&bad_s), "{}", text(&out));
    assert!(!log.exists(), "nothing was recorded");
    h.shutdown().await.ok();
}

/// The console decides unknown outcomes when it starts (as `audit reconcile` does), and says
/// so in its footer; with nothing unknown it stays silent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_reconciles_unknown_outcomes_on_start() {
    let (h, [_, _, target]) = world().await;
    let log_path = temp_log("console-reconcile");
    let bc = BatchClient::connect(ConnectOptions {
        profile: None,
        region: Some("us-east-1".into()),
        endpoint_url: Some(h.endpoint_url()),
        credentials: Some(StaticCredentials {
            access_key_id: "AKIDTEST".into(),
            secret_access_key: "secret".into(),
        }),
    })
    .await
    .unwrap();
    assert_eq!(
        quotatop::commands::console::reconcile_on_start(&bc, &log_path).await,
        None,
        "no log: nothing to say"
    );
    // An intent whose process died: the waiting job is at priority 0, which it asked for.
    let log = AuditLog::new(&log_path);
    let mut intent = audit::read_records(&log_path).unwrap_or_default();
    assert!(intent.is_empty());
    let record = died_intent(&bc, &target);
    log.append(record).unwrap();
    let line = quotatop::commands::console::reconcile_on_start(&bc, &log_path)
        .await
        .expect("a footer line");
    assert!(line.contains("decided 1 change(s)"), "{line}");
    intent = audit::read_records(&log_path).unwrap();
    assert_eq!(intent.len(), 2);
    assert_eq!(
        intent[1].1.outcome,
        Some(Outcome::Reconciled {
            verdict: audit::Verdict::Landed,
            observed_priority: Some(0),
            observed: None,
            call_error: None,
        })
    );
    assert_eq!(
        quotatop::commands::console::reconcile_on_start(&bc, &log_path).await,
        None
    );
    h.shutdown().await.ok();
}

/// An intent whose process died before writing its outcome: the waiting job `job` at priority
/// 4 asked for 0, made against `bc`'s region and endpoint.
fn died_intent(bc: &BatchClient, job: &str) -> audit::AuditRecord {
    let target = job.to_string();
    audit::AuditRecord {
        v: audit::SCHEME,
        seq: 0,
        time: "2026-11-30T10:00:00.000Z".into(),
        kind: RecordKind::Intent,
        change_id: audit::new_change_id(),
        operator: Operator {
            user: "oncall".into(),
            host: "ops-1".into(),
            ..Default::default()
        },
        // Made against this emulator, as the console's client sees it.
        aws: AwsContext {
            profile: None,
            region: bc.source().region.clone(),
            endpoint: bc.source().endpoint.clone(),
            source: None,
        },
        queue: QUEUE.into(),
        share: "team".into(),
        job: audit::JobRef {
            id: target.clone(),
            name: "waiting".into(),
            arn: String::new(),
        },
        old_priority: 4,
        new_priority: 0,
        justification: "died before its outcome".into(),
        change_record: None,
        preview: String::new(),
        outcome: None,
        policy: None,
        repair: None,
        action: None,
        class_policy: None,
        batch_id: None,
        prev_hash: String::new(),
        hash: String::new(),
    }
}

/// With several sources (`[[sources]]`), the console decides each unknown outcome with the
/// client of the source it was made against: a change made in us-east-1 is decided although
/// the first source looks at eu-west-1, and is not reported as left unknown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_over_several_sources_reconciles_each_change_with_its_source() {
    let (h, [_, _, target]) = world().await;
    let log_path = temp_log("fleet-reconcile");
    let connect = |region: &str| {
        BatchClient::connect(ConnectOptions {
            profile: None,
            region: Some(region.into()),
            endpoint_url: Some(h.endpoint_url()),
            credentials: Some(StaticCredentials {
                access_key_id: "AKIDTEST".into(),
                secret_access_key: "secret".into(),
            }),
        })
    };
    let eu = connect("eu-west-1").await.unwrap();
    let us = connect("us-east-1").await.unwrap();
    AuditLog::new(&log_path)
        .append(died_intent(&us, &target))
        .unwrap();
    let only_eu = quotatop::commands::console::reconcile_on_start_with(&[&eu], &log_path)
        .await
        .expect("a footer line");
    assert!(only_eu.contains("1 left unknown"), "{only_eu}");
    let line = quotatop::commands::console::reconcile_on_start_with(&[&eu, &us], &log_path)
        .await
        .expect("a footer line");
    assert!(line.contains("decided 1 change(s)"), "{line}");
    assert!(!line.contains("left unknown"), "{line}");
    assert_eq!(audit::read_records(&log_path).unwrap().len(), 2);
    h.shutdown().await.ok();
}

/// `audit reconcile` while a change is still in flight leaves it to its writer (which then
/// records its own outcome), instead of deciding "did not land" for a call still under way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconcile_leaves_a_change_in_flight_to_its_writer() {
    let (h, [_, _, target]) = world().await;
    // Long enough that reconcile's own start (a debug build on a loaded machine took over
    // 3 s) falls inside the call, and short of the SDK's 10 s attempt timeout.
    h.set_faults(quotatop_emulator::FaultSpec::parse("updateservicejob:latency=8s").unwrap());
    let log = temp_log("inflight");
    let mut c = cmd(
        &h.endpoint_url(),
        &log,
        &[
            &target,
            "--priority",
            "7",
            "--reason",
            "slow call, on purpose",
            "--yes",
        ],
    );
    let child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while audit::read_records(&log).map(|r| r.len()).unwrap_or(0) == 0 {
        assert!(Instant::now() < deadline, "intent never written");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let out = reconcile_cmd(&h.endpoint_url(), &log).output().unwrap();
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("still being made by a live process"), "{t}");
    let done = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert!(done.status.success(), "{}", text(&done));
    let records = audit::read_records(&log).unwrap();
    assert_eq!(records.len(), 2, "intent and the writer's own outcome only");
    assert!(matches!(
        records[1].1.outcome,
        Some(Outcome::Succeeded { .. })
    ));
    h.shutdown().await.ok();
}

/// A held UpdateServiceJob lands after reconcile decided it had not (issue 31 item 4): the
/// process is killed after its intent while the emulator holds the call 5 s (`hold=5s`: held
/// and then carried out although its client is gone); reconcile then
/// reads the old priority and records "did not land"; the call lands; the next reconcile reads
/// the new priority and appends "landed after all" (the first decision stays: append-only),
/// which `audit list` shows and `audit verify` accepts; a third reconcile writes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_did_not_land_is_corrected_when_the_held_call_lands_later() {
    let (h, [_, _, target]) = world().await;
    h.set_faults(quotatop_emulator::FaultSpec::parse("updateservicejob:hold=5s").unwrap());
    let log = temp_log("lands-late");
    let mut child = cmd(
        &h.endpoint_url(),
        &log,
        &[
            &target,
            "--priority",
            "5",
            "--reason",
            "incident 9, held by the network",
            "--yes",
        ],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    // Killed once the emulator holds the call (received in full).
    while h.fault_stats().held < 1 {
        assert!(Instant::now() < deadline, "the call was never held");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(
        audit::read_records(&log).unwrap().len(),
        1,
        "the intent only"
    );
    let priority = || {
        h.with_engine(|e| e.job(e.find(&target).unwrap()).unwrap().priority)
            .unwrap()
    };
    let first = run(reconcile_cmd(&h.endpoint_url(), &log)).await;
    let t = text(&first);
    // Decided while the call was still held (the test is void if it landed first).
    assert_eq!(
        priority(),
        0,
        "the call landed before reconcile read it: {t}"
    );
    assert!(t.contains("did not land (priority now 0)"), "{t}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while priority() != 5 {
        assert!(Instant::now() < deadline, "the held call never landed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let second = run(reconcile_cmd(&h.endpoint_url(), &log)).await;
    let t = text(&second);
    assert!(second.status.success(), "{t}");
    assert!(t.contains("landed after all (priority now 5)"), "{t}");
    let records = audit::read_records(&log).unwrap();
    assert_eq!(records.len(), 3, "intent, did not land, landed after all");
    assert_eq!(audit::verify(&log).map(|h| h.count), Ok(3));
    let changes = audit::changes(&records);
    assert!(changes[0].took_effect());
    let list = Command::new(env!("CARGO_BIN_EXE_quotatop"))
        .args(["audit", "list", "--log"])
        .arg(&log)
        .output()
        .unwrap();
    let l = String::from_utf8_lossy(&list.stdout);
    assert!(l.contains("outcome reconciled: landed after all"), "{l}");
    let third = run(reconcile_cmd(&h.endpoint_url(), &log)).await;
    assert!(
        text(&third).contains("nothing to reconcile"),
        "{}",
        text(&third)
    );
    assert_eq!(audit::read_records(&log).unwrap().len(), 3);
    h.shutdown().await.unwrap();
}
