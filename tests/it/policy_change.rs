//! The policy at change time, end to end against the emulator: `set-priority` refuses a move
//! into a class the operator may not use, one that needs a change record, and a priority
//! outside every class of the share, each naming the rule; an allowed change records the class
//! before and after and the policy's hash in the audit intent.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::emulator_support::*;
use aws_sdk_batch::types::QuotaShareResourceSharingStrategy as Strategy;
use quotatop_store::audit::{self, RecordKind};

fn policy(operators: &str) -> String {
    format!(
        "version = 1\n\
         [[class]]\nname = \"batch\"\npriority = [0, 99]\nshares = [\"team\"]\n\
         [[class]]\nname = \"urgent\"\npriority = [100, 999]\nshares = [\"team\"]\n\
         operators = [{operators}]\nchange_record = true\n"
    )
}

fn set_priority(url: &str, dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_quotatop"));
    c.arg("set-priority")
        .args(args)
        .args(["--endpoint-url", url, "--queue", QUEUE, "--yes", "--log"])
        .arg(dir.join("audit.jsonl"))
        .arg("--config")
        .arg(dir.join("config.toml"))
        .env("AWS_ACCESS_KEY_ID", "AKIDTEST")
        .env("AWS_SECRET_ACCESS_KEY", "secret")
        .env("AWS_REGION", "us-east-1")
        .env_remove("QUOTATOP_READ_ONLY")
        .env_remove("QUOTATOP_CONFIG")
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
        "status {:?}\n{}{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_priority_is_refused_by_the_rule_it_breaks_and_an_allowed_change_is_stamped() {
    let h = start(&[(M5, 4)], "").await;
    let c = client(&h, 3);
    create_share(&c, "team", &[(M5, 2)], Strategy::Reserve, None, false).await;
    let job = submit(&c, "target", "team", M5, 1, 10).await;
    h.advance(1_000).unwrap();
    let url = h.endpoint_url();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.toml"), "").unwrap();
    std::fs::write(dir.path().join("policy.toml"), policy("\"nobody-else\"")).unwrap();
    let log = dir.path().join("audit.jsonl");
    let attempt = |args: Vec<&str>| set_priority(&url, dir.path(), &args);

    let refused = [
        (
            vec![
                job.as_str(),
                "--priority",
                "500",
                "--reason",
                "incident INC-9 fix",
                "--change-record",
                "CR-1",
            ],
            "may not move a job into class urgent: the policy allows only nobody-else",
        ),
        (
            vec![
                job.as_str(),
                "--priority",
                "5000",
                "--reason",
                "incident INC-9 fix",
                "--change-record",
                "CR-2",
            ],
            "priority 5000 is outside the range of every class of share team (batch 0-99, urgent 100-999)",
        ),
    ];
    for (args, rule) in refused {
        let o = run(attempt(args)).await;
        let t = text(&o);
        assert_eq!(o.status.code(), Some(1), "{t}");
        assert!(
            t.contains("refused by the policy") && t.contains(rule),
            "want {rule:?} in:\n{t}"
        );
        assert!(t.contains("nothing changed"), "{t}");
    }
    // The operator running the test is allowed; a change record is still needed.
    let me = audit::LocalUser::current().name;
    let text_policy = policy(&format!("\"{me}\""));
    std::fs::write(dir.path().join("policy.toml"), &text_policy).unwrap();
    let o = run(attempt(vec![
        job.as_str(),
        "--priority",
        "500",
        "--reason",
        "incident INC-9 fix",
    ]))
    .await;
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(
        t.contains(
            "moving a job into class urgent needs a change record: give its id (--change-record)"
        ),
        "{t}"
    );
    // Nothing was written for the refused changes.
    assert!(
        audit::read_records(&log)
            .map(|r| r.is_empty())
            .unwrap_or(true)
    );

    let o = run(attempt(vec![
        job.as_str(),
        "--priority",
        "500",
        "--reason",
        "incident INC-9 fix",
        "--change-record",
        "CR-1",
    ]))
    .await;
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    let hash = quotatop_policy::hash(&text_policy);
    assert!(
        t.contains(&format!(
            "class     batch -> urgent (policy sha256 {})",
            &hash[..12]
        )),
        "{t}"
    );
    let records = audit::read_records(&log).unwrap();
    let intent = records
        .iter()
        .map(|(_, r)| r)
        .find(|r| r.kind == RecordKind::Intent)
        .unwrap();
    let stamp = intent
        .class_policy
        .as_ref()
        .expect("the intent carries the class policy");
    assert_eq!(stamp.hash, hash);
    assert_eq!(stamp.class_before.as_deref(), Some("batch"));
    assert_eq!(stamp.class_after.as_deref(), Some("urgent"));
    assert_eq!(intent.new_priority, 500);
    assert!(audit::verify(&log).is_ok());
    // Back into batch: anyone, no record needed.
    let o = run(attempt(vec![
        job.as_str(),
        "--priority",
        "20",
        "--reason",
        "incident over, back",
    ]))
    .await;
    assert!(o.status.success(), "{}", text(&o));
    h.shutdown().await.unwrap();
}

/// `drill` checks its submissions (the lender's priority job, the borrower's jobs) against the
/// class policy before anything is planned or submitted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drill_outside_its_classes_is_refused_before_anything_is_submitted() {
    use crate::drill_support as d;
    let h = d::start(60.0).await;
    let tmp = d::temp("policy");
    let dir = tmp.path();
    let url = h.endpoint_url();
    std::fs::write(dir.join("config.toml"), "").unwrap();
    let drill = |range: &str| {
        std::fs::write(
            dir.join("policy.toml"),
            format!(
                "version = 1\n[[class]]\nname = \"lending\"\npriority = {range}\nshares = [\"lender\"]\nchange_record = true\n"
            ),
        )
        .unwrap();
        let mut c = d::drill(
            &url,
            dir,
            &["--lender", "lender", "--borrower", "borrower", "--dry-run"],
        );
        c.arg("--config").arg(dir.join("config.toml"));
        c
    };
    let o = d::run(drill("[0, 50]")).await;
    let t = d::text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(
        t.contains("drill refused: refused by the policy")
            && t.contains(
                "priority 100 is outside the range of every class of share lender (lending 0-50)"
            ),
        "{t}"
    );
    assert!(!t.contains("dry run: nothing submitted"), "{t}");
    // The range holds the priority job (100) and the borrower's jobs (0, by range): planned.
    let o = d::run(drill("[0, 999]")).await;
    let t = d::text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("dry run: nothing submitted"), "{t}");
    assert_eq!(h.calls("submitservicejob"), 0);
    h.shutdown().await.unwrap();
}

/// A drill run under a class policy: every audit record of it (submissions and terminations)
/// carries the policy's hash and the class its jobs were checked into, as set-priority's do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drill_under_a_policy_stamps_its_audit_records() {
    use crate::drill_support as d;
    let h = d::start(400.0).await;
    let tmp = d::temp("policy-run");
    let dir = tmp.path();
    std::fs::write(dir.join("config.toml"), "").unwrap();
    let text = "version = 1\n[[class]]\nname = \"lending\"\npriority = [0, 999]\nshares = [\"lender\", \"borrower\"]\n";
    std::fs::write(dir.join("policy.toml"), text).unwrap();
    let mut c = d::drill(
        &h.endpoint_url(),
        dir,
        &[
            "--lender",
            "lender",
            "--borrower",
            "borrower",
            "--lengths",
            "10m",
            "--repeat",
            "1",
            "--priority-length",
            "2m",
            "--yes",
            "--timeout",
            "5m",
        ],
    );
    c.arg("--config").arg(dir.join("config.toml"));
    let o = d::run(c).await;
    assert!(o.status.success(), "{}", d::text(&o));
    let log = dir.join("audit.jsonl");
    let records = quotatop_store::audit::read_records(&log).unwrap();
    assert!(records.len() >= 4, "{records:?}");
    let hash = quotatop_policy::hash(text);
    for (_, r) in &records {
        let stamp = r
            .class_policy
            .as_ref()
            .unwrap_or_else(|| panic!("unstamped: {r:?}"));
        assert_eq!(stamp.hash, hash);
        // A submission's class; a termination of several jobs names no share and no class.
        let class = (!r.share.is_empty()).then_some("lending");
        assert_eq!(stamp.class_after.as_deref(), class, "{r:?}");
    }
    assert!(quotatop_store::audit::verify(&log).is_ok());
    h.shutdown().await.unwrap();
}

/// Membership at change time is the same rule as everywhere: the job's `quotatop:class` tag
/// first. A job tagged `urgent` at priority 10 (its share and priority alone would make it
/// `batch`, where 20 is allowed) may not be moved to 20: that leaves urgent's range.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tagged_job_is_judged_by_its_tag_not_its_share_and_priority() {
    let h = start(&[(M5, 4)], "").await;
    let c = client(&h, 3);
    create_share(&c, "team", &[(M5, 2)], Strategy::Reserve, None, false).await;
    let tagged = c
        .submit_service_job()
        .job_name("tagged")
        .job_queue(QUEUE)
        .service_job_type(aws_sdk_batch::types::ServiceJobType::SagemakerTraining)
        .service_request_payload(payload(M5, 1))
        .quota_share_name("team")
        .scheduling_priority(10)
        .tags(quotatop_model::CLASS_TAG, "urgent")
        .send()
        .await
        .unwrap()
        .job_id()
        .unwrap()
        .to_string();
    let plain = submit(&c, "plain", "team", M5, 1, 10).await;
    h.advance(1_000).unwrap();
    let url = h.endpoint_url();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.toml"), "").unwrap();
    std::fs::write(dir.path().join("policy.toml"), policy("\"nobody-else\"")).unwrap();
    let log = dir.path().join("audit.jsonl");
    let attempt = |job: &str| {
        set_priority(
            &url,
            dir.path(),
            &[job, "--priority", "20", "--reason", "nudge it up a little"],
        )
    };

    let o = run(attempt(&tagged)).await;
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(
        t.contains("refused by the policy")
            && t.contains(
                "the job is in class urgent by its quotatop:class tag and priority 20 is outside that class's range 100-999"
            ),
        "{t}"
    );
    assert!(
        audit::read_records(&log)
            .map(|r| r.is_empty())
            .unwrap_or(true),
        "a refused change writes nothing"
    );
    // The same change to the untagged job of the same share and priority is allowed: batch.
    let o = run(attempt(&plain)).await;
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("class     batch -> batch"), "{t}");
    h.shutdown().await.unwrap();
}
