use super::change::priority_to_lead;
use super::*;
use crate::fixture::{job, queue};
use quotatop_model::MAX_PRIORITY;
use quotatop_model::{PreemptionSummary, SharingConfig, TrackedJob};

const P4: &str = "ml.p4d.24xlarge";

fn running(name: &str, share: &str, count: u32, priority: u32, at: i64) -> TrackedJob {
    let mut j = job(name, share, P4, count, JobStatus::Running, priority, at);
    std::sync::Arc::make_mut(&mut j.job).scheduled_at = Some(at);
    std::sync::Arc::make_mut(&mut j.job).started_at = Some(at);
    j
}

fn preempting(mut j: TrackedJob) -> TrackedJob {
    std::sync::Arc::make_mut(&mut j.job).status_reason =
        Some(PreemptionKind::CrossShare.in_progress_reason());
    j
}

fn text(w: &Why) -> String {
    w.lines().join("\n")
}

#[test]
fn not_waiting_jobs_have_no_answer() {
    let mut q = queue(&[("s", P4, 2, SharingConfig::reserve())]);
    q.jobs = vec![running("r", "s", 1, 0, 0)];
    assert_eq!(why(&q, "id-r"), None);
    assert_eq!(why(&q, "nope"), None);
}

#[test]
fn a_job_that_fits_dispatches_on_the_next_pass() {
    let mut q = queue(&[("s", P4, 2, SharingConfig::reserve())]);
    q.jobs = vec![job("w", "s", P4, 2, JobStatus::Runnable, 0, 10)];
    let w = why(&q, "id-w").unwrap();
    assert_eq!(w.verdict, Verdict::Dispatches);
    assert!(
        w.headline.contains("next scheduling pass dispatches it"),
        "{}",
        text(&w)
    );
    assert!(text(&w).contains("position 1 of 1 in share s's queue for ml.p4d.24xlarge"));
    assert!(text(&w).contains("share s holds 0 of its limit of 2"));
    assert!(w.changes.is_empty());
}

/// The brief's example: limit 2 + borrow 200% = 6, the job needs 8.
#[test]
fn misconfiguration_in_words_with_what_would_lift_it() {
    let mut q = queue(&[
        ("research", P4, 2, SharingConfig::lend_and_borrow(200)),
        ("prod", P4, 10, SharingConfig::lend()),
    ]);
    let mut big = job("big", "research", P4, 8, JobStatus::Runnable, 0, 10);
    std::sync::Arc::make_mut(&mut big.job).status_reason = Some(
        Misconfiguration::ExceedsShareAndBorrowLimit
            .reason()
            .to_string(),
    );
    q.jobs = vec![big];
    let w = why(&q, "id-big").unwrap();
    assert_eq!(
        w.verdict,
        Verdict::Misconfigured(Some(Misconfiguration::ExceedsShareAndBorrowLimit))
    );
    assert!(
        w.headline.contains(
            "needs 8 ml.p4d.24xlarge; share research may hold at most 6 (limit 2 + borrow 200%)"
        ),
        "{}",
        w.headline
    );
    assert!(w.changes[0].contains("a borrow limit of at least 300% for share research"));
    assert!(w.changes[0].contains("a job of at most 6 instances"));
}

#[test]
fn each_misconfiguration_is_worded() {
    let mut q = queue(&[
        ("r", P4, 2, SharingConfig::reserve()),
        ("b", P4, 2, SharingConfig::lend_and_borrow(-1)),
        ("l", P4, 1, SharingConfig::lend()),
    ]);
    q.environment.capacity = vec![quotatop_model::CapacityLimit::new(P4, 5)];
    let cases = [
        (
            "r",
            3,
            Misconfiguration::ExceedsShareLimit,
            "share r may hold at most 2 (RESERVE shares do not borrow)",
        ),
        (
            "b",
            5,
            Misconfiguration::ExceedsBorrowableCapacity,
            "share b has 2 of its own and the other shares lend at most 1",
        ),
        (
            "l",
            6,
            Misconfiguration::ExceedsShareLimit,
            "share l may hold at most 1",
        ),
    ];
    for (share, n, m, words) in cases {
        let mut j = job("x", share, P4, n, JobStatus::Runnable, 0, 10);
        std::sync::Arc::make_mut(&mut j.job).status_reason = Some(m.reason().to_string());
        q.jobs = vec![j];
        let w = why(&q, "id-x").unwrap();
        assert_eq!(w.verdict, Verdict::Misconfigured(Some(m)), "{share}");
        assert!(w.headline.contains(words), "{}", w.headline);
    }
    // Beyond the environment (the share's own check passes).
    let mut q = queue(&[("big", P4, 10, SharingConfig::reserve())]);
    q.environment.capacity = vec![quotatop_model::CapacityLimit::new(P4, 4)];
    let mut j = job("x", "big", P4, 6, JobStatus::Runnable, 0, 10);
    std::sync::Arc::make_mut(&mut j.job).status_reason =
        Some(Misconfiguration::ExceedsServiceEnvironment.reason().into());
    q.jobs = vec![j];
    let w = why(&q, "id-x").unwrap();
    assert!(
        w.headline.contains("the service environment has 4"),
        "{}",
        w.headline
    );
}

#[test]
fn a_reserve_share_at_its_limit_has_no_room_and_says_what_frees() {
    let mut q = queue(&[("s", P4, 2, SharingConfig::reserve())]);
    q.jobs = vec![
        running("r1", "s", 2, 5, 100),
        job("w", "s", P4, 1, JobStatus::Runnable, 1, 200),
    ];
    let w = why(&q, "id-w").unwrap();
    assert_eq!(w.verdict, Verdict::NoRoom);
    let t = text(&w);
    assert!(w.headline.contains("First in its queue"), "{t}");
    assert!(
        w.headline
            .contains("share s would go over its limit of 2 (2 held + 1) and does not borrow"),
        "{t}"
    );
    assert!(t.contains("RESERVE: it neither lends nor borrows"), "{t}");
    assert!(t.contains("in-share preemption is off for share s"), "{t}");
    assert!(
        t.contains("when one of the 1 running ml.p4d.24xlarge job(s) ends (r1); when: unknown"),
        "{t}"
    );
}

#[test]
fn in_share_preemption_names_the_priority_that_makes_room() {
    let mut q = queue(&[("s", P4, 2, SharingConfig::reserve())]);
    q.shares[0] = q.shares[0].clone().with_in_share_preemption(true);
    q.jobs = vec![
        running("r1", "s", 2, 3, 100),
        job("w", "s", P4, 1, JobStatus::Runnable, 1, 200),
    ];
    let w = why(&q, "id-w").unwrap();
    assert_eq!(w.verdict, Verdict::NoRoom);
    assert!(
        w.changes
            .iter()
            .any(|c| c.starts_with("priority 4 makes room (preview: in-share preemption of r1")),
        "{:?}",
        w.changes
    );
}

#[test]
fn a_job_behind_a_head_that_cannot_be_placed_is_blocked_by_it() {
    let mut q = queue(&[("s", P4, 4, SharingConfig::reserve())]);
    q.jobs = vec![
        running("r1", "s", 2, 0, 100),
        job("head", "s", P4, 3, JobStatus::Runnable, 5, 150),
        job("small", "s", P4, 1, JobStatus::Runnable, 1, 200),
    ];
    let w = why(&q, "id-small").unwrap();
    assert_eq!(w.verdict, Verdict::BlockedBehind("id-head".into()));
    let t = text(&w);
    assert!(
        w.headline
            .contains("Blocked behind head (priority 5, 3 × ml.p4d.24xlarge)"),
        "{t}"
    );
    assert!(t.contains("head-of-line blocking"), "{t}");
    assert!(t.contains("position 2 of 2"), "{t}");
    assert!(t.contains("next ahead: head (priority 5)"), "{t}");
    assert!(
        t.contains("would fit in the capacity idle now, but it waits its turn"),
        "{t}"
    );
    assert!(
        w.changes.iter().any(|c| c.starts_with("priority 6 puts it first in share s's queue for ml.p4d.24xlarge (preview: runs on its share's unused capacity)")),
        "{:?}",
        w.changes
    );
}

#[test]
fn the_priority_to_lead_follows_the_queue_key() {
    // Same priority, older ahead: one more is needed.
    assert_eq!(priority_to_lead((1, 200, 2), [(3, 100, 0)]), Some(4));
    // Same priority and older than the job ahead (the service's order differs): ties suffice.
    assert_eq!(priority_to_lead((1, 50, 2), [(3, 100, 0)]), Some(3));
    assert_eq!(
        priority_to_lead((1, 200, 2), [(MAX_PRIORITY, 100, 0)]),
        None
    );
    assert_eq!(priority_to_lead((1, 200, 2), []), None);
}

#[test]
fn a_job_waiting_for_capacity_being_given_back_names_the_preemptions() {
    let mut q = queue(&[
        ("owner", P4, 2, SharingConfig::lend()),
        ("borrower", P4, 1, SharingConfig::lend_and_borrow(-1)),
    ]);
    q.jobs = vec![
        running("o1", "owner", 1, 0, 100),
        running("b1", "borrower", 1, 0, 200),
        preempting(running("b2", "borrower", 1, 0, 300)),
        job("w", "owner", P4, 1, JobStatus::Runnable, 0, 400),
    ];
    let w = why(&q, "id-w").unwrap();
    assert_eq!(w.verdict, Verdict::AwaitsRelease(vec!["id-b2".into()]));
    let t = text(&w);
    assert!(w.headline.contains("preemption of b2 in progress"), "{t}");
    assert!(t.contains("capacity freeing next: 1 ml.p4d.24xlarge being given back by the preemption of b2; when: unknown"), "{t}");
}

#[test]
fn a_job_whose_lent_capacity_is_reclaimed_names_the_victim() {
    let mut q = queue(&[
        ("owner", P4, 2, SharingConfig::lend()),
        ("borrower", P4, 1, SharingConfig::lend_and_borrow(-1)),
    ]);
    q.jobs = vec![
        running("o1", "owner", 1, 0, 100),
        running("b1", "borrower", 1, 0, 200),
        running("b2", "borrower", 1, 0, 300),
        job("w", "owner", P4, 1, JobStatus::Runnable, 0, 400),
    ];
    let w = why(&q, "id-w").unwrap();
    assert_eq!(
        w.verdict,
        Verdict::Preempts(vec![("id-b2".into(), PreemptionKind::CrossShare)])
    );
    assert!(
        w.headline.contains("preempts b2 (cross-share)"),
        "{}",
        w.headline
    );
}

#[test]
fn a_borrower_sees_the_lenders_idle_capacity_and_its_borrow_limit() {
    let mut q = queue(&[
        ("lender", P4, 3, SharingConfig::lend()),
        ("b", P4, 2, SharingConfig::lend_and_borrow(50)),
    ]);
    q.jobs = vec![
        running("l1", "lender", 2, 0, 100),
        running("b1", "b", 2, 0, 200),
        job("w", "b", P4, 2, JobStatus::Runnable, 0, 300),
    ];
    let w = why(&q, "id-w").unwrap();
    let t = text(&w);
    assert_eq!(w.verdict, Verdict::NoRoom, "{t}");
    assert!(
        t.contains(
            "LEND_AND_BORROW: it may borrow up to 1 ml.p4d.24xlarge (borrow limit 50%), 0 now"
        ),
        "{t}"
    );
    assert!(
        t.contains("lending shares leave 1 ml.p4d.24xlarge unused (lender 1); 1 left to borrow"),
        "{t}"
    );
    assert!(
        w.headline
            .contains("would go over its limit plus borrow limit (2 + 1; 2 held + 2)"),
        "{t}"
    );
}

#[test]
fn a_submitted_job_is_not_queued_yet() {
    let mut q = queue(&[("s", P4, 2, SharingConfig::reserve())]);
    q.jobs = vec![
        job("w1", "s", P4, 1, JobStatus::Runnable, 5, 100),
        job("new", "s", P4, 1, JobStatus::Submitted, 1, 200),
        job("huge", "s", P4, 3, JobStatus::Pending, 1, 200),
    ];
    let w = why(&q, "id-new").unwrap();
    assert_eq!(w.verdict, Verdict::NotQueuedYet);
    assert!(
        text(&w).contains(
            "once RUNNABLE it joins share s's queue for ml.p4d.24xlarge behind 1 waiting job(s)"
        ),
        "{}",
        text(&w)
    );
    let w = why(&q, "id-huge").unwrap();
    assert!(
        text(&w).contains("once RUNNABLE it cannot run as configured: needs 3"),
        "{}",
        text(&w)
    );
}

/// The lenders' unused capacity is already lent (to the job's own share): nothing is left.
#[test]
fn unused_capacity_already_lent_is_not_left_to_borrow() {
    let mut q = queue(&[
        ("lender", P4, 2, SharingConfig::lend()),
        ("b", P4, 2, SharingConfig::lend_and_borrow(-1)),
    ]);
    q.jobs = vec![
        running("b1", "b", 4, 0, 200),
        job("w", "b", P4, 2, JobStatus::Runnable, 0, 300),
    ];
    let w = why(&q, "id-w").unwrap();
    let t = text(&w);
    assert_eq!(w.verdict, Verdict::NoRoom, "{t}");
    assert!(
        t.contains("lending shares leave 2 ml.p4d.24xlarge unused (lender 2), 2 of it lent out (to b 2); 0 left to borrow"),
        "{t}"
    );
    assert!(
        w.headline
            .contains("it must borrow 2 ml.p4d.24xlarge and nothing is left to borrow"),
        "{t}"
    );
}

/// A RESERVE share at its limit gets capacity back only from its own jobs: others' are not
/// listed as freeing capacity for it.
#[test]
fn only_jobs_whose_end_helps_are_listed_as_freeing_capacity() {
    let mut q = queue(&[
        ("s", P4, 1, SharingConfig::reserve()),
        ("other", P4, 2, SharingConfig::lend()),
    ]);
    q.jobs = vec![
        running("mine", "s", 1, 0, 100),
        running("theirs", "other", 2, 0, 100),
        job("w", "s", P4, 1, JobStatus::Runnable, 0, 200),
    ];
    let w = why(&q, "id-w").unwrap();
    let t = text(&w);
    assert!(
        t.contains("when one of the 1 running ml.p4d.24xlarge job(s) ends (mine)"),
        "{t}"
    );
}

/// A job whose share is placed after another's in the same pass waits for the preemption that
/// pass starts for the other: it is named, and said to be started by the pass.
#[test]
fn a_preemption_started_by_the_same_pass_is_what_it_waits_for() {
    let mut q = queue(&[
        ("a", P4, 1, SharingConfig::lend()),
        ("b", P4, 1, SharingConfig::lend()),
        ("c", P4, 0, SharingConfig::lend_and_borrow(-1)),
    ]);
    q.jobs = vec![
        running("c1", "c", 1, 0, 100),
        running("c2", "c", 1, 0, 200),
        job("wa", "a", P4, 1, JobStatus::Runnable, 0, 300),
        job("wb", "b", P4, 1, JobStatus::Runnable, 0, 400),
    ];
    let a = why(&q, "id-wa").unwrap();
    assert_eq!(
        a.verdict,
        Verdict::Preempts(vec![("id-c2".into(), PreemptionKind::CrossShare)])
    );
    let b = why(&q, "id-wb").unwrap();
    assert_eq!(b.verdict, Verdict::AwaitsRelease(vec!["id-c2".into()]));
    assert!(
        b.headline
            .contains("preemption of c2 started by the same pass for jobs placed first"),
        "{}",
        b.headline
    );
}

/// A job needing 6 in a share limited to 4 waits again after being reclaimed: the answer names
/// the cause of its preemptions and the remedies before anything about priority.
#[test]
fn a_reclaimed_job_over_its_own_limit_is_told_the_cause_and_the_remedies() {
    let mut q = queue(&[
        ("research", P4, 4, SharingConfig::lend_and_borrow(-1)),
        ("prod", P4, 4, SharingConfig::lend()),
    ]);
    let mut looper = job("looper", "research", P4, 6, JobStatus::Runnable, 0, 10);
    std::sync::Arc::make_mut(&mut looper.job).preemption = Some(PreemptionSummary {
        preempted_attempt_count: 13,
        recent_preempted_attempts: Vec::new(),
    });
    q.jobs = vec![looper, running("owner", "prod", 4, 0, 0)];
    let w = why(&q, "id-looper").unwrap();
    let t = text(&w);
    assert!(
        w.changes.first().is_some_and(|c| c.starts_with(
            "the cause of its preemptions: it needs 6 × ml.p4d.24xlarge but share research's own limit is 4"
        )),
        "{t}"
    );
    assert!(t.contains("4 or fewer ml.p4d.24xlarge"), "{t}");
    assert!(t.contains("preemptionRetriesBeforeTermination"), "{t}");
    // Never preempted: no cause to name.
    std::sync::Arc::make_mut(&mut q.jobs[0].job).preemption = None;
    let w = why(&q, "id-looper").unwrap();
    assert!(
        !text(&w).contains("the cause of its preemptions"),
        "{}",
        text(&w)
    );
}

/// The job's need stated against what is free for it, and limits that oversubscribe the
/// environment said as such.
#[test]
fn the_answer_states_the_need_against_what_is_free() {
    let mut q = queue(&[
        ("burst", P4, 4, SharingConfig::lend_and_borrow(-1)),
        ("prod", P4, 8, SharingConfig::lend()),
    ]);
    q.jobs = vec![
        running("p1", "prod", 6, 0, 0),
        job("research-burst", "burst", P4, 6, JobStatus::Runnable, 0, 10),
    ];
    let w = why(&q, "id-research-burst").unwrap();
    let t = text(&w);
    assert!(
        t.contains("it needs 6 ml.p4d.24xlarge; free for it now: 6 (4 within its share's limit, 2 to borrow"),
        "{t}"
    );
    assert!(
        t.contains("to borrow): enough") || t.contains("idle in the environment): enough"),
        "{t}"
    );
    assert!(!t.contains("more than the environment's"), "{t}");
    // Prod busier: only 4 are free for a need of 6.
    q.jobs[0] = running("p1", "prod", 8, 0, 0);
    let t = text(&why(&q, "id-research-burst").unwrap());
    assert!(
        t.contains("free for it now: 4 (4 within its share's limit, 0 to borrow"),
        "{t}"
    );
    assert!(t.contains("): not enough"), "{t}");
    // An environment smaller than the limits' sum is said.
    q.environment.capacity = vec![quotatop_model::CapacityLimit::new(P4, 10)];
    let t = text(&why(&q, "id-research-burst").unwrap());
    assert!(
        t.contains(
            "the shares' limits add up to 12 ml.p4d.24xlarge, more than the environment's 10"
        ),
        "{t}"
    );
}
