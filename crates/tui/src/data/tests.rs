//! The console data's own tests: policy answers in order, the job index, sparkline samples per
//! source, prepared snapshots.

use super::*;
use quotatop_analysis::fixture;
use quotatop_model::{Fleet, SharingConfig, Source};

/// Of the panel's and the Policy screen's conformance, the one asked for later wins, in
/// whatever order they arrive: an older answer arriving last changes nothing.
#[test]
fn an_older_policy_answer_arriving_last_changes_nothing() {
    let item = |text: &str| Attention {
        kind: analysis::AttentionKind::PolicyBreach,
        target: analysis::AttentionTarget::Share("s".into()),
        share: "s".into(),
        text: text.into(),
        waiting_ms: None,
    };
    let mut d = Data::new(LoopRule::default());
    assert!(d.set_policy_items("q", 2, vec![item("3 jobs")]));
    assert!(!d.set_policy_items("q", 1, vec![item("1 job")]));
    assert_eq!(d.policy_items["q"], vec![item("3 jobs")]);
    // A newer answer with no breach clears them.
    assert!(d.set_policy_items("q", 3, Vec::new()));
    assert!(!d.policy_items.contains_key("q"));
}

/// The index finds every job at its position, the last of jobs sharing an id, and nothing
/// for an unknown id.
#[test]
fn job_index_finds_each_job_by_id() {
    let ty = "ml.g5.12xlarge";
    let job =
        |name: &str| fixture::job(name, "a", ty, 1, quotatop_model::JobStatus::Runnable, 1, 0);
    let jobs = vec![job("c"), job("a"), job("b"), job("a"), job("d")];
    let index = JobIndex::of(&jobs);
    for (id, at) in [("id-c", 0), ("id-a", 3), ("id-b", 2), ("id-d", 4)] {
        assert_eq!(index.get(&jobs, id), Some(at), "{id}");
    }
    for id in ["", "id-", "id-aa", "id-e", "zz"] {
        assert_eq!(index.get(&jobs, id), None, "{id}");
    }
    assert_eq!(JobIndex::of(&[]).get(&[], "id-a"), None);
}

/// With sources, a merged snapshot after one source's refresh adds a sparkline sample to
/// that source's queues only.
#[test]
fn each_sources_sparkline_advances_with_its_own_refreshes() {
    let queue = |at: i64| {
        let mut q = analysis::fixture::queue(&[("a", "ml.g5.12xlarge", 2, SharingConfig::lend())]);
        q.refreshed_at = Some(at);
        Snapshot {
            taken_at: at,
            queues: vec![q],
            ..Snapshot::default()
        }
    };
    let mut fleet = Fleet::new(vec![
        ("us".into(), Source::default()),
        ("eu".into(), Source::default()),
    ]);
    let mut data = Data::default();
    data.apply(fleet.update(0, queue(1_000)));
    data.apply(fleet.update(1, queue(1_100)));
    data.apply(fleet.update(0, queue(2_000)));
    let samples = |key: &str| {
        data.history
            .iter()
            .filter(|((q, _, _), _)| q == key)
            .map(|(_, h)| h.len())
            .max()
    };
    assert_eq!(samples("q@us"), Some(2));
    assert_eq!(samples("q@eu"), Some(1));
}

/// A snapshot analysed off the UI thread is swapped in as derived; when the journal's
/// record of its queue arrived meanwhile, it is derived again with it (never shown without
/// the history the console already has).
#[test]
fn a_prepared_snapshot_is_swapped_in_unless_the_record_changed_meanwhile() {
    let snapshot = |at: i64| Snapshot {
        taken_at: at,
        queues: vec![analysis::fixture::queue(&[(
            "a",
            "ml.g5.12xlarge",
            2,
            SharingConfig::lend(),
        )])],
        ..Snapshot::default()
    };
    let mut data = Data::default();
    data.apply(snapshot(1_000));
    let key = data.queues()[0].key();
    let prepared = Prepared::new(snapshot(2_000), &data.inputs(), 1);
    data.apply_prepared(prepared);
    let taken_at = |d: &Data| d.snapshot.as_ref().map(|s| s.taken_at);
    assert_eq!(taken_at(&data), Some(2_000));
    // The replaced snapshot is kept for the caller to free off the UI thread.
    let retired = data.take_retired().expect("the replaced snapshot");
    assert_eq!(retired.taken_at(), Some(1_000));
    assert!(data.take_retired().is_none());
    assert!(!data.views[0].with_history);
    let prepared = Prepared::new(snapshot(3_000), &data.inputs(), 2);
    data.set_recorded(&key, Vec::new());
    data.apply_prepared(prepared);
    assert_eq!(taken_at(&data), Some(3_000));
    assert!(
        data.views[0].with_history,
        "derived again with the record that came meanwhile"
    );
}
