//! Acceptance: what `quotatop snapshot` reports equals the engine's own state at the same
//! instant — use per share and instance type, borrowed and lent, dispatch order, priorities,
//! preemption counts. The emulator runs in-process on a manual clock (time moves only when the
//! test advances it), the snapshot goes through the real SDK over loopback, and the engine is
//! read through `EmulatorHandle::with_engine`.

use std::collections::{BTreeMap, BTreeSet};

use crate::data_support::{batch_client, quotatop};
use crate::emulator_support::{G5, M5, QUEUE, create_share, submit};
use aws_sdk_batch::types::QuotaShareResourceSharingStrategy as Strategy;
use quotatop::commands::snapshot::{SnapshotDoc, document};
use quotatop_analysis::LoopRule;
use quotatop_aws::poll::{self, PollConfig};
use quotatop_emulator::EmulatorHandle;
use quotatop_engine::ShareUsage;
use quotatop_model::ServiceJob;

struct Truth {
    usage: Vec<ShareUsage>,
    order: Vec<String>,
    jobs: Vec<ServiceJob>,
    now: i64,
}

fn truth(h: &EmulatorHandle) -> Truth {
    h.with_engine(|e| Truth {
        usage: e.usage(),
        order: e
            .queue_order()
            .into_iter()
            .map(|id| e.job_uuid(id).unwrap().to_string())
            .collect(),
        jobs: e.jobs().collect(),
        now: e.now(),
    })
    .unwrap()
}

async fn snapshot_doc(h: &EmulatorHandle) -> SnapshotDoc {
    let client = batch_client(h).await;
    let config = PollConfig {
        queues: vec![QUEUE.to_string()],
        ..PollConfig::default()
    };
    let s = poll::refresh_once(&client, config).await.unwrap();
    document(&s, &LoopRule::default())
}

/// Every figure of the document against the engine.
fn check(doc: &SnapshotDoc, t: &Truth) {
    assert_eq!(doc.queues.len(), 1);
    let q = &doc.queues[0];
    assert_eq!(q.stale_reason, None);
    assert_eq!(
        q.server_time,
        Some(t.now),
        "server time is the engine's clock"
    );

    // Use per share and instance type: limit, used, borrowed.
    let engine_rows: BTreeMap<(String, String), (u32, u32, u32)> = t
        .usage
        .iter()
        .flat_map(|s| {
            s.usage.iter().map(|u| {
                (
                    (s.share.name.clone(), u.instance_type.clone()),
                    (u.limit, u.used, u.borrowed),
                )
            })
        })
        .collect();
    let doc_rows: BTreeMap<(String, String), (u32, u32, u32)> = q
        .usage
        .iter()
        .map(|u| {
            (
                (u.share.clone(), u.instance_type.clone()),
                (u.limit, u.used, u.borrowed),
            )
        })
        .collect();
    assert_eq!(
        doc_rows, engine_rows,
        "limit/used/borrowed per share and type"
    );

    // Lent: what lenders (LEND, LEND_AND_BORROW) have idle covers what is borrowed.
    let types: BTreeSet<&str> = q.usage.iter().map(|u| u.instance_type.as_str()).collect();
    for ty in types {
        let borrowed: u32 = t
            .usage
            .iter()
            .flat_map(|s| s.usage.iter())
            .filter(|u| u.instance_type == ty)
            .map(|u| u.borrowed)
            .sum();
        let lendable: u32 = t
            .usage
            .iter()
            .filter(|s| s.share.sharing.strategy.lends())
            .flat_map(|s| s.usage.iter())
            .filter(|u| u.instance_type == ty)
            .map(|u| u.limit.saturating_sub(u.used))
            .sum();
        let lent: u32 = q
            .usage
            .iter()
            .filter(|u| u.instance_type == ty)
            .map(|u| u.lent)
            .sum();
        assert_eq!(lent, borrowed.min(lendable), "lent of {ty}");
        for u in q.usage.iter().filter(|u| u.instance_type == ty) {
            let share = t.usage.iter().find(|s| s.share.name == u.share).unwrap();
            if !share.share.sharing.strategy.lends() {
                assert_eq!(u.lent, 0, "{} does not lend", u.share);
            }
            assert_eq!(u.idle + u.lent + u.own_used, u.limit, "{} {ty}", u.share);
            let from: u32 = u.borrowed_from.iter().map(|p| p.instances).sum();
            assert!(from <= u.borrowed);
        }
    }

    // Dispatch order and priorities.
    let order: Vec<String> = q
        .runnable
        .iter()
        .filter(|r| !r.misconfigured)
        .map(|r| r.job_id.clone())
        .collect();
    assert_eq!(order, t.order, "dispatch order");
    for r in &q.runnable {
        let j = t.jobs.iter().find(|j| j.id == r.job_id).unwrap();
        assert_eq!(r.priority, Some(j.priority), "priority of {}", j.name);
        assert_eq!(r.share, j.share);
        assert_eq!(
            r.misconfigured,
            j.status_reason
                .as_deref()
                .is_some_and(|s| s.starts_with("MISCONFIGURATION"))
        );
    }
    let runnable_in_engine = t
        .jobs
        .iter()
        .filter(|j| j.status == quotatop_model::JobStatus::Runnable)
        .count();
    assert_eq!(q.runnable.len(), runnable_in_engine);

    // Preemption counts per job and per share.
    let doc_pre: BTreeMap<String, u32> = q
        .preempted
        .iter()
        .map(|p| (p.job_id.clone(), p.preemptions))
        .collect();
    let eng_pre: BTreeMap<String, u32> = t
        .jobs
        .iter()
        .filter(|j| j.preemption_count() > 0)
        .map(|j| (j.id.clone(), j.preemption_count()))
        .collect();
    assert_eq!(doc_pre, eng_pre, "preemption count per job");
    for s in &q.shares {
        let n: u32 = t
            .jobs
            .iter()
            .filter(|j| j.share == s.name)
            .map(|j| j.preemption_count())
            .sum();
        assert_eq!(s.preemptions, n, "preemptions of share {}", s.name);
    }

    // Job counts per status.
    let mut by_status: BTreeMap<String, u32> = BTreeMap::new();
    for j in &t.jobs {
        *by_status.entry(j.status.as_str().to_string()).or_default() += 1;
    }
    assert_eq!(q.jobs_by_status, by_status);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_reports_the_engine_state_step_by_step() {
    let h = crate::emulator_support::start(&[(M5, 10), (G5, 4)], "").await;
    let sdk = crate::emulator_support::client(&h, 3);
    create_share(
        &sdk,
        "alpha",
        &[(M5, 2)],
        Strategy::LendAndBorrow,
        Some(-1),
        false,
    )
    .await;
    create_share(
        &sdk,
        "beta",
        &[(M5, 6), (G5, 2)],
        Strategy::Lend,
        None,
        false,
    )
    .await;
    create_share(
        &sdk,
        "gamma",
        &[(M5, 2), (G5, 2)],
        Strategy::Reserve,
        None,
        true,
    )
    .await;

    // Step 1: alpha borrows beta's idle capacity (gamma reserves its own).
    for (name, prio) in [("a1", 5), ("a2", 3), ("a3", 1), ("a4", 0)] {
        submit(&sdk, name, "alpha", M5, 2, prio).await;
    }
    h.advance(1_000).unwrap();
    let doc = snapshot_doc(&h).await;
    let t = truth(&h);
    check(&doc, &t);
    let alpha = doc.queues[0]
        .usage
        .iter()
        .find(|u| u.share == "alpha" && u.instance_type == M5)
        .unwrap();
    assert_eq!((alpha.used, alpha.borrowed), (8, 6), "the scenario borrows");
    let beta = doc.queues[0]
        .usage
        .iter()
        .find(|u| u.share == "beta" && u.instance_type == M5)
        .unwrap();
    assert_eq!(beta.lent, 6, "beta is the only lender");

    // Step 2: beta reclaims (cross-share preemption); gamma queues and misconfigures.
    submit(&sdk, "b1", "beta", M5, 4, 0).await;
    submit(&sdk, "b2", "beta", G5, 2, 0).await;
    submit(&sdk, "g1", "gamma", M5, 1, 2).await;
    submit(&sdk, "g2", "gamma", M5, 3, 9).await;
    h.advance(1_000).unwrap();
    let doc = snapshot_doc(&h).await;
    let t = truth(&h);
    check(&doc, &t);
    assert!(
        !doc.queues[0].preempted.is_empty(),
        "the reclaim preempted alpha's borrowers"
    );
    assert!(doc.queues[0].runnable.iter().any(|r| r.misconfigured));

    // Step 3: a priority change reorders the queue; more jobs wait.
    let waiting = doc.queues[0]
        .runnable
        .iter()
        .rfind(|r| !r.misconfigured)
        .unwrap()
        .job_id
        .clone();
    sdk.update_service_job()
        .job_id(&waiting)
        .scheduling_priority(9000)
        .send()
        .await
        .unwrap();
    submit(&sdk, "a5", "alpha", G5, 1, 4).await;
    submit(&sdk, "b3", "beta", M5, 1, 1).await;
    h.advance(1_000).unwrap();
    let doc = snapshot_doc(&h).await;
    let t = truth(&h);
    check(&doc, &t);
    assert_eq!(
        doc.queues[0].runnable[0].job_id, waiting,
        "raised to the front"
    );

    // The binary says the same as the library at the same instant.
    let url = h.endpoint_url();
    let out = tokio::task::spawn_blocking(move || {
        quotatop()
            .args(["snapshot", "--queue", QUEUE, "--format", "json"])
            .args(["--endpoint-url", &url])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cli: SnapshotDoc = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(cli.schema, "quotatop.snapshot/1");
    assert_eq!(cli.queues, doc.queues);
    check(&cli, &t);

    // And the table shows the same figures.
    let url = h.endpoint_url();
    let out = tokio::task::spawn_blocking(move || {
        quotatop()
            .args(["snapshot", "--queue", QUEUE, "--endpoint-url", &url])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let beta_row = text
        .lines()
        .find(|l| l.trim_start().starts_with("beta") && l.contains(M5) && l.contains("LEND"))
        .unwrap();
    let beta = doc.queues[0]
        .usage
        .iter()
        .find(|u| u.share == "beta" && u.instance_type == M5)
        .unwrap();
    let cells: Vec<&str> = beta_row.split_whitespace().collect();
    assert_eq!(
        cells[3..8],
        [
            beta.limit.to_string(),
            beta.used.to_string(),
            beta.borrowed.to_string(),
            beta.idle.to_string(),
            beta.lent.to_string()
        ]
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()[..]
    );
    h.shutdown().await.unwrap();
}
