//! Concurrent `set-priority` processes on a few jobs: the audit log, read in order, is each
//! job's true history. Each change holds its job's lock from before it reads the live priority
//! until its outcome is written, so every intent replaced what the job's previous logged change
//! set, the last logged success of a job is its live priority, and `audit verify` checks it.

use std::process::Stdio;

use crate::emulator_support::*;
use crate::set_priority::{cmd, text};
use aws_sdk_batch::types::QuotaShareResourceSharingStrategy as Strategy;
use quotatop_store::audit;

const JOBS: usize = 4;
const PER_JOB: usize = 12;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_changes_are_logged_in_the_order_aws_applied_them() {
    let h = start(&[(M5, 1)], "").await;
    let c = client(&h, 3);
    create_share(&c, "team", &[(M5, 1)], Strategy::Reserve, None, false).await;
    // One running job holds the share; the jobs changed all wait behind it.
    submit(&c, "holder", "team", M5, 1, 9000).await;
    h.advance(10_000).unwrap();
    let mut jobs = Vec::new();
    for j in 0..JOBS {
        jobs.push(submit(&c, &format!("wait-{j}"), "team", M5, 1, 0).await);
    }
    h.advance(1_000).unwrap();
    let url = h.endpoint_url();
    let log = crate::set_priority::temp_log("order");
    // Every process at once, each setting a priority no other sets.
    let children: Vec<_> = (0..JOBS * PER_JOB)
        .map(|n| {
            let job = &jobs[n % JOBS];
            let prio = (1 + n).to_string();
            let reason = format!("ordering test change {n}");
            let mut c = cmd(
                &url,
                &log,
                &[job, "--priority", &prio, "--reason", &reason, "--yes"],
            );
            c.stdout(Stdio::piped()).stderr(Stdio::piped());
            c.spawn().expect("quotatop starts")
        })
        .collect();
    for child in children {
        let out = tokio::task::spawn_blocking(move || child.wait_with_output())
            .await
            .unwrap()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
    }
    let records = audit::read_records(&log).unwrap();
    let changes = audit::changes(&records);
    assert_eq!(changes.len(), JOBS * PER_JOB);
    let breaks = audit::history_breaks(&changes);
    for job in &jobs {
        let last = changes
            .iter()
            .rfind(|c| &c.intent.job.id == job && c.took_effect())
            .map(|c| c.intent.new_priority);
        let live = h
            .with_engine(|e| e.job(e.find(job).unwrap()).unwrap().priority)
            .unwrap();
        assert_eq!(
            last,
            Some(live),
            "job {job}: the log's last change set {last:?}, the live priority is {live}; breaks: {breaks:#?}"
        );
    }
    assert!(breaks.is_empty(), "{} breaks: {breaks:#?}", breaks.len());
    let verify = std::process::Command::new(env!("CARGO_BIN_EXE_quotatop"))
        .args(["audit", "verify", "--log"])
        .arg(&log)
        .output()
        .unwrap();
    assert!(verify.status.success(), "{}", text(&verify));
    assert!(
        text(&verify).contains("every job's history follows on"),
        "{}",
        text(&verify)
    );
    h.shutdown().await.ok();
}

/// A log whose job history does not follow on (a change made outside quotatop, or logged out
/// of order) fails `audit verify`, naming the job and the records, though its chain is intact.
#[test]
fn verify_names_a_change_that_does_not_follow_on() {
    let log = crate::set_priority::temp_log("order-break");
    let l = audit::AuditLog::new(&log);
    let job = audit::JobRef {
        id: "job-7".into(),
        name: "train".into(),
        arn: "arn:job-7".into(),
    };
    for (old, new) in [(0, 5), (3, 8)] {
        let intent = audit::AuditRecord::priority_intent(
            Default::default(),
            audit::new_change_id(),
            "s".into(),
            job.clone(),
            old,
            new,
            String::new(),
        );
        let intent = l.append(intent).unwrap();
        l.append(audit::AuditRecord::outcome_of(
            intent,
            audit::Outcome::Succeeded { request_id: None },
        ))
        .unwrap();
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_quotatop"))
        .args(["audit", "verify", "--log"])
        .arg(&log)
        .output()
        .unwrap();
    let t = text(&out);
    assert!(!out.status.success(), "{t}");
    assert!(
        t.contains("job job-7: the change at record 3 replaced priority 3, but the job's previous change (record 1) set 5"),
        "{t}"
    );
}
