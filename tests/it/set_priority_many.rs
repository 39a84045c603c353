//! `set-priority` with several jobs: each is found, previewed and judged by the one check
//! first; one confirmation; one audited change per job, each with its result. One refusal
//! refuses them all before anything is written or called.

use crate::emulator_support::*;
use crate::set_priority::{cmd, run, temp_log, text, world};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_jobs_one_justification_one_change_each() {
    let (h, [mid, low, _target]) = world().await;
    let log = temp_log("many");
    let o = run(cmd(
        &h.endpoint_url(),
        &log,
        &[
            "mid",
            "low",
            "--priority",
            "7",
            "--reason",
            "incident 88: both sweeps first",
            "--yes",
        ],
    ))
    .await;
    assert!(o.status.success(), "{}", text(&o));
    let t = text(&o);
    assert!(
        t.contains("priority of mid set to 7") && t.contains("priority of low set to 7"),
        "{t}"
    );
    // One preview of both changes placed at once, then each alone.
    assert!(t.contains("together: the next scheduling pass"), "{t}");
    assert!(t.contains("each job's own change, computed alone"), "{t}");
    let records = quotatop_store::audit::read_records(&log).unwrap();
    let changes = quotatop_store::audit::changes(&records);
    assert_eq!(changes.len(), 2, "{records:?}");
    assert!(changes.iter().all(|c| !c.outcome_unknown()), "{records:?}");
    // One action: both intents carry one batch id (and only the intents of this action).
    let batch = changes[0].intent.batch_id.clone().expect("a batch id");
    assert!(
        changes
            .iter()
            .all(|c| c.intent.batch_id.as_deref() == Some(batch.as_str())),
        "{records:?}"
    );
    assert_eq!(quotatop_store::audit::verify(&log).map(|h| h.count), Ok(4));
    let list = std::process::Command::new(env!("CARGO_BIN_EXE_quotatop"))
        .args(["audit", "list", "--log"])
        .arg(&log)
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&list.stdout);
    assert_eq!(
        listed.matches(&format!(" (batch {batch})")).count(),
        2,
        "{listed}"
    );
    let csv = std::process::Command::new(env!("CARGO_BIN_EXE_quotatop"))
        .args(["audit", "export", "--format", "csv", "--log"])
        .arg(&log)
        .output()
        .unwrap();
    let csv = String::from_utf8_lossy(&csv.stdout);
    assert!(
        csv.lines().next().unwrap().ends_with(",run_id,batch_id"),
        "{csv}"
    );
    assert_eq!(
        csv.lines().filter(|l| l.ends_with(&batch)).count(),
        2,
        "{csv}"
    );
    let c = client(&h, 1);
    for id in [&mid, &low] {
        let job = c.describe_service_job().job_id(id).send().await.unwrap();
        assert_eq!(job.scheduling_priority(), Some(7), "{id}");
    }
    h.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_refused_job_refuses_them_all_before_anything_is_written() {
    let (h, [mid, low, _target]) = world().await;
    let log = temp_log("many-refused");
    // low is already at 1: "the priority is already 1" refuses it, and with it mid's change.
    let o = run(cmd(
        &h.endpoint_url(),
        &log,
        &[
            "mid",
            "low",
            "--priority",
            "1",
            "--reason",
            "incident 88: both sweeps first",
            "--yes",
        ],
    ))
    .await;
    assert!(!o.status.success());
    let t = text(&o);
    assert!(
        t.contains("low (")
            && t.contains("the priority is already 1")
            && t.contains("none of the 2 changes was made"),
        "{t}"
    );
    assert!(
        quotatop_store::audit::read_records(&log)
            .map(|r| r.is_empty())
            .unwrap_or(true),
        "a refused command wrote to the audit log"
    );
    let c = client(&h, 1);
    let job = c.describe_service_job().job_id(&mid).send().await.unwrap();
    assert_eq!(job.scheduling_priority(), Some(3), "mid was changed");
    let _ = low;
    h.shutdown().await.unwrap();
}
