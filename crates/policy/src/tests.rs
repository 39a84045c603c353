use std::collections::BTreeMap;

use quotatop_analysis::scorecard::decision::{Budget, DeadlineRule};
use quotatop_analysis::shares_lint::Severity;
use quotatop_model::{CapacityLimit, QuotaShare, SharingConfig};

use super::*;

const FOUR: &str = include_str!("../fixtures/four_classes.toml");

fn four() -> Policy {
    parse(FOUR, "four_classes.toml").unwrap()
}

fn share(name: &str, sharing: SharingConfig, max: u32) -> QuotaShare {
    QuotaShare::new(
        name,
        vec![CapacityLimit::new("ml.p4d.24xlarge", max)],
        sharing,
    )
}

/// The demo world's shares, as the four-class example expects them.
fn demo_shares() -> Vec<QuotaShare> {
    vec![
        share("research", SharingConfig::lend_and_borrow(100), 4),
        share("prod", SharingConfig::lend(), 4),
        share("regulated", SharingConfig::reserve(), 2),
        share("vision", SharingConfig::lend_and_borrow(50), 2),
        share("nlp", SharingConfig::lend(), 2),
    ]
}

#[test]
fn the_four_class_example_reads_with_every_field() {
    let p = four();
    assert_eq!(p.version, 1);
    let names: Vec<&str> = p.classes.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["incident", "delivery", "regulatory", "exploratory"]);
    let incident = p.class("incident").unwrap();
    assert_eq!(
        incident.priority,
        PriorityRange {
            min: 9000,
            max: 9999
        }
    );
    assert_eq!(incident.promise.max_wait_ms, Some(15 * 60_000));
    assert_eq!(incident.budget.max_preemptions_per_job, Some(0));
    assert!(incident.change_record);
    assert_eq!(incident.line, 7);
    let exploratory = p.class("exploratory").unwrap();
    assert!(exploratory.may_borrow && !exploratory.protected);
    assert_eq!(exploratory.budget.max_lost_gpu_hours_per_day, Some(40.0));
    assert_eq!(p.owners["regulated"], ["compliance-officer"]);
    assert_eq!(p.hash.len(), 64);
    assert_eq!(p.hash, hash(FOUR));
    assert_ne!(p.hash, hash(&FOUR.replace("15m", "16m")));
}

#[test]
fn errors_name_the_line_the_key_and_what_to_do() {
    let cases = [
        (
            FOUR.replace("version = 1", "version = 2"),
            "this build reads version 1",
        ),
        (FOUR.replace("version = 1\n", ""), "add `version = 1`"),
        (
            FOUR.replace("max_wait = \"15m\"", "max_wiat = \"15m\""),
            "line 12, column 1: unknown field `max_wiat`",
        ),
        (
            FOUR.replace("[9000, 9999]", "[9000, 12000]"),
            "line 7: class \"incident\": priority: [9000, 12000] is not a range",
        ),
        (
            FOUR.replace("[9000, 9999]", "[9999, 9000]"),
            "write [lowest, highest]",
        ),
        (FOUR.replace("\"15m\"", "\"15\""), "has no unit"),
        (
            FOUR.replace("\"15m\"", "\"15 parsecs\""),
            "bad duration unit",
        ),
        (
            FOUR.replace("deadline_factor = 3.0", "deadline_factor = -1.0"),
            "deadline_factor: -1: must be above 0",
        ),
        (
            FOUR.replace("name = \"delivery\"", "name = \"incident\""),
            "class \"incident\" is named twice",
        ),
        (
            FOUR.replace("name = \"delivery\"", "name = \"deliv ery\""),
            "class name \"deliv ery\"",
        ),
        (FOUR.replace("\"oncall-*\", ", "\"*\", "), "names no one"),
        ("version = 1\n".to_string(), "no [[class]] entry"),
        ("version = \n".to_string(), "line 1"),
    ];
    for (text, want) in cases {
        let e = parse(&text, "p.toml").unwrap_err().to_string();
        assert!(e.starts_with("policy file p.toml: "), "{e}");
        assert!(e.contains(want), "want {want:?} in: {e}");
    }
}

#[test]
fn reading_refuses_what_is_not_a_small_regular_file() {
    let dir = tempfile::tempdir().unwrap();
    let e = read(dir.path()).unwrap_err();
    assert!(
        quotatop_model::error_chain(&e).contains("is a directory"),
        "{e}"
    );
    let e = read(std::path::Path::new("/dev/zero")).unwrap_err();
    assert!(quotatop_model::error_chain(&e).contains("is a device"));
    let f = dir.path().join("policy.toml");
    std::fs::write(&f, FOUR).unwrap();
    assert_eq!(read(&f).unwrap().classes.len(), 4);
}

#[test]
fn membership_is_tag_then_share_then_priority() {
    let p = four();
    let of = |tag: Option<&str>, share: &str, prio: u32| {
        class_of(&p, tag, share, prio).map(|m| (m.class.name.clone(), m.basis))
    };
    // The tag wins over the share and the range.
    assert_eq!(
        of(Some("regulatory"), "research", 10),
        Some(("regulatory".into(), Basis::Tag))
    );
    // A tag naming no class does not classify: the share does.
    assert_eq!(
        of(Some("nope"), "research", 10),
        Some(("exploratory".into(), Basis::Share))
    );
    // Two classes run in prod: the range picks, whatever the order.
    assert_eq!(
        of(None, "prod", 9500),
        Some(("incident".into(), Basis::Share))
    );
    assert_eq!(
        of(None, "prod", 2000),
        Some(("delivery".into(), Basis::Share))
    );
    // In prod but in neither range: the first class listing prod.
    assert_eq!(
        of(None, "prod", 10),
        Some(("incident".into(), Basis::Share))
    );
    // A share no class lists: the range.
    assert_eq!(
        of(None, "elsewhere", 9100),
        Some(("incident".into(), Basis::Priority))
    );
    assert_eq!(
        of(None, "elsewhere", 5000),
        Some(("delivery".into(), Basis::Priority))
    );
    let narrow = parse(
        "version = 1\n[[class]]\nname = \"a\"\npriority = [10, 20]\nshares = [\"s\"]\n",
        "x",
    )
    .unwrap();
    assert_eq!(class_of(&narrow, None, "t", 5), None);
    assert_eq!(
        class_name(class_of(&narrow, None, "t", 5).as_ref()),
        UNCLASSIFIED
    );
}

#[test]
fn operators_match_exactly_or_by_a_trailing_star() {
    let p = four();
    let c = p.class("incident").unwrap();
    assert!(c.allows(["oncall-alice"].into_iter()));
    assert!(c.allows(["bob", "arn:aws:sts::123456789012:assumed-role/oncall/bob"].into_iter()));
    assert!(!c.allows(["bob"].into_iter()));
    assert!(!c.allows(["arn:aws:sts::123456789012:assumed-role/dev/bob"].into_iter()));
    assert!(!c.allows(std::iter::empty()));
    // No operators: anyone.
    assert!(p.class("delivery").unwrap().allows(["bob"].into_iter()));
}

fn lines(f: &[Finding]) -> Vec<String> {
    f.iter().map(Finding::line).collect()
}

#[test]
fn the_four_class_example_lints_clean_against_the_demo_shares() {
    let f = lint(&four(), Some(&demo_shares()));
    assert_eq!(errors(&f), 0, "{:#?}", lines(&f));
    // vision is LEND_AND_BORROW while delivery may not borrow, and nlp cannot borrow while
    // exploratory may: said, not refused.
    assert_eq!(
        lines(&f),
        [
            "warning: class delivery: may not borrow, but share vision is LEND_AND_BORROW: its jobs can run on borrowed capacity",
            "warning: class exploratory: may borrow, but share nlp is LEND: it cannot (make the share LEND_AND_BORROW, or the class not borrow)",
        ]
    );
}

#[test]
fn each_lint_names_its_problem() {
    let mut p = four();
    // Overlap inside one share: delivery and incident both run in prod.
    p.classes[0].priority = PriorityRange {
        min: 8000,
        max: 9999,
    };
    // Overlap across different shares is no error (the share decides).
    p.classes[2].priority = PriorityRange {
        min: 1000,
        max: 9999,
    };
    // A protected class in a lending share.
    p.classes[3].protected = true;
    // A class with no share.
    p.classes.push(Class {
        name: "orphan".into(),
        shares: vec![],
        promise: deadline_factor_hack(),
        ..p.classes[1].clone()
    });
    let mut shares = demo_shares();
    // A budget on a share that never lends or borrows and has no in-share preemption.
    p.classes[2].budget = Budget {
        max_preemptions_per_job: Some(1),
        max_lost_gpu_hours_per_day: None,
    };
    // A promise that cannot hold: no capacity, no borrowing.
    shares[2].capacity_limits.clear();
    let f = lint(&p, Some(&shares));
    let l = lines(&f).join("\n");
    for want in [
        "error: class incident: priority 8000-9999 overlaps class delivery's 1000-8999 in share prod",
        "error: class exploratory: is protected but share research is LEND_AND_BORROW",
        "error: class orphan: runs in no share",
        "error: class orphan: deadline_factor = 0.5 cannot hold",
        "error: class regulatory: its promise cannot hold: its shares have no capacity and it may not borrow",
        "warning: class regulatory: has an interruption budget, but share regulated never lends or borrows",
        "error: class exploratory: is protected but share nlp is LEND",
    ] {
        assert!(l.contains(want), "want {want:?} in:\n{l}");
    }
    assert!(!l.contains("regulatory's"), "{l}");
    // Errors come first.
    let first_warning = f
        .iter()
        .position(|x| x.severity == Severity::Warning)
        .unwrap();
    assert!(
        f[..first_warning]
            .iter()
            .all(|x| x.severity == Severity::Error)
    );
    assert_eq!(errors(&f), first_warning);
    // Without the shares, only what the policy alone says.
    let alone = lines(&lint(&p, None)).join("\n");
    assert!(alone.contains("runs in no share") && !alone.contains("is protected but"));
    // A share the queue lacks.
    let f = lines(&lint(&four(), Some(&demo_shares()[..4]))).join("\n");
    assert!(
        f.contains(
            "error: class exploratory: runs in share \"nlp\", which the queue does not have"
        ),
        "{f}"
    );
}

/// The orphan class's promise: a deadline factor below 1.
fn deadline_factor_hack() -> Promise {
    Promise {
        max_wait_ms: None,
        deadline_factor: Some(0.5),
    }
}

#[test]
fn init_writes_a_policy_that_reads_and_lints_clean() {
    let shares = demo_shares();
    let mut deadlines = BTreeMap::new();
    deadlines.insert(
        "prod".to_string(),
        DeadlineRule {
            deadline_factor: Some(2.5),
            max_wait_s: Some(900),
        },
    );
    deadlines.insert(
        "*".to_string(),
        DeadlineRule {
            deadline_factor: None,
            max_wait_s: Some(7200),
        },
    );
    let mut budgets = BTreeMap::new();
    budgets.insert(
        "research".to_string(),
        Budget {
            max_preemptions_per_job: Some(3),
            max_lost_gpu_hours_per_day: Some(12.5),
        },
    );
    let text = init(&Today {
        queue: "ml-training",
        shares: &shares,
        deadlines: &deadlines,
        budgets: &budgets,
    });
    let p = parse(&text, "init").unwrap();
    assert_eq!(p.classes.len(), 5);
    let prod = p.class("prod").unwrap();
    assert_eq!(prod.promise.max_wait_ms, Some(900_000));
    assert_eq!(prod.promise.deadline_factor, Some(2.5));
    assert!(!prod.protected && !prod.may_borrow);
    assert_eq!(p.class("nlp").unwrap().promise.max_wait_ms, Some(7_200_000));
    let research = p.class("research").unwrap();
    assert!(research.may_borrow);
    assert_eq!(research.budget.max_lost_gpu_hours_per_day, Some(12.5));
    assert!(p.class("regulated").unwrap().protected);
    assert_eq!(p.owners.len(), 5);
    let f = lint(&p, Some(&shares));
    assert!(f.is_empty(), "{:#?}", lines(&f));
}

fn change(share: &str, old: u32, new: u32, who: &[&str], record: bool) -> ChangeVerdict {
    check_change(
        &four(),
        &ChangeRequest {
            tag: None,
            share,
            old: Some(old),
            new,
            who,
            change_record: record,
        },
    )
}

#[test]
fn a_change_is_refused_by_the_rule_it_breaks_and_allowed_otherwise() {
    // Within delivery: no operator or record needed.
    let v = change("prod", 2000, 3000, &["bob"], false);
    assert_eq!(v.refusal, None);
    assert_eq!(
        (v.class_before.as_str(), v.class_after.as_str()),
        ("delivery", "delivery")
    );
    assert_eq!(v.policy_hash, four().hash);
    // Into incident: bob may not.
    let v = change("prod", 2000, 9500, &["bob", "bob@host"], true);
    assert_eq!(
        v.refusal.as_deref(),
        Some(
            "bob may not move a job into class incident: the policy allows only oncall-*, arn:aws:sts::123456789012:assumed-role/oncall/*"
        )
    );
    assert_eq!(v.class_after, "incident");
    // The on-call operator may, with a change record …
    let v = change("prod", 2000, 9500, &["oncall-amy"], true);
    assert_eq!(v.refusal, None);
    // … and by the STS principal alone …
    let v = change(
        "prod",
        2000,
        9500,
        &["amy", "arn:aws:sts::123456789012:assumed-role/oncall/amy"],
        true,
    );
    assert_eq!(v.refusal, None);
    // … but not without one.
    let v = change("prod", 2000, 9500, &["oncall-amy"], false);
    assert_eq!(
        v.refusal.as_deref(),
        Some(
            "moving a job into class incident needs a change record: give its id (--change-record)"
        )
    );
    // Leaving every range of the share.
    let v = change("prod", 2000, 500, &["oncall-amy"], true);
    assert_eq!(
        v.refusal.as_deref(),
        Some(
            "priority 500 is outside the range of every class of share prod (incident 9000-9999, delivery 1000-8999): the policy's rule is that a class's jobs use its range"
        )
    );
    // Within incident, a change needs no record (nothing enters the class).
    assert_eq!(change("prod", 9100, 9900, &["bob"], false).refusal, None);
    // A share no class lists, leaving incident's range for no class.
    let v = change("elsewhere", 9100, 50, &["bob"], false);
    assert_eq!(v.class_after, "exploratory");
    assert_eq!(v.refusal, None);
    let narrow = parse(
        "version = 1\n[[class]]\nname = \"a\"\npriority = [10, 20]\nshares = [\"s\"]\n",
        "x",
    )
    .unwrap();
    let v = check_change(
        &narrow,
        &ChangeRequest {
            tag: None,
            share: "t",
            old: Some(15),
            new: 30,
            who: &["bob"],
            change_record: false,
        },
    );
    assert_eq!(v.class_after, UNCLASSIFIED);
    assert_eq!(
        v.refusal.as_deref(),
        Some(
            "priority 30 leaves class a (10-20) for no class: the policy's rule is that a's jobs use 10-20"
        )
    );
}

#[test]
fn the_policy_derives_each_shares_sharing_and_in_share_preemption() {
    let derived = derive_shares(&four(), &demo_shares());
    let by = |name: &str| derived.iter().find(|d| d.share.name == name).unwrap();
    // regulatory is protected.
    assert_eq!(by("regulated").share.sharing, SharingConfig::reserve());
    assert_eq!(
        by("regulated").why,
        ["RESERVE: class regulatory is protected"]
    );
    // exploratory may borrow: nlp becomes LEND_AND_BORROW, unlimited; research keeps its 100 %.
    assert_eq!(by("nlp").share.sharing, SharingConfig::lend_and_borrow(-1));
    assert_eq!(
        by("research").share.sharing,
        SharingConfig::lend_and_borrow(100)
    );
    // vision (delivery only) lends and no longer borrows.
    assert_eq!(by("vision").share.sharing, SharingConfig::lend());
    // prod holds incident and delivery; delivery's budget allows one preemption: enabled.
    let prod = by("prod");
    assert_eq!(prod.share.sharing, SharingConfig::lend());
    assert!(prod.share.in_share_preemption.enabled());
    assert_eq!(
        prod.why[1],
        "in-share preemption ENABLED: class incident may displace the share's other classes"
    );
    // Limits never change.
    for (d, l) in derived.iter().zip(demo_shares()) {
        assert_eq!(d.share.capacity_limits, l.capacity_limits);
    }
    // A lower class that allows no preemption disables it.
    let mut p = four();
    p.classes[1].budget.max_preemptions_per_job = Some(0);
    let prod = derive_shares(&p, &demo_shares())
        .into_iter()
        .find(|d| d.share.name == "prod")
        .unwrap();
    assert!(!prod.share.in_share_preemption.enabled());
    // Derived shares lint clean against the policy (what apply then makes true).
    let shares: Vec<QuotaShare> = derived.into_iter().map(|d| d.share).collect();
    assert!(
        lint(&four(), Some(&shares)).is_empty(),
        "{:?}",
        lines(&lint(&four(), Some(&shares)))
    );
}

/// Overlaps are found per share by a sweep, however the classes are ordered: a range inside
/// another, and one starting inside the widest before it.
#[test]
fn overlapping_ranges_are_found_in_any_order() {
    let mut p = four();
    let t = p.classes[0].clone();
    let class = |name: &str, min, max| Class {
        name: name.into(),
        priority: PriorityRange { min, max },
        shares: vec!["x".into()],
        ..t.clone()
    };
    p.classes = vec![
        class("wide", 0, 100),
        class("inner", 50, 60),
        class("later", 70, 80),
        class("apart", 200, 300),
    ];
    let l = lines(&lint(&p, None)).join("\n");
    assert!(
        l.contains("class wide: priority 0-100 overlaps class inner's 50-60 in share x"),
        "{l}"
    );
    assert!(
        l.contains("class wide: priority 0-100 overlaps class later's 70-80 in share x"),
        "{l}"
    );
    assert!(!l.contains("apart"), "{l}");
    assert!(
        !l.contains("class inner: priority 50-60 overlaps class later"),
        "{l}"
    );
}

/// 20,000 classes, every range 0-9999, each in a share of its own: linted in well under a
/// second's work per thousand classes (the pairwise check took 148 s for 61,146 classes).
#[test]
fn a_policy_of_many_classes_is_linted_in_linear_time() {
    let mut p = four();
    let t = p.classes[0].clone();
    p.owners.clear();
    p.classes = (0..20_000)
        .map(|i| Class {
            name: format!("c{i}"),
            priority: PriorityRange { min: 0, max: 9999 },
            shares: vec![format!("s{i}")],
            ..t.clone()
        })
        .collect();
    let started = std::time::Instant::now();
    let f = lint(&p, None);
    let took = started.elapsed();
    assert!(
        !f.iter().any(|f| f.message.contains("overlaps")),
        "{:?}",
        f.first()
    );
    assert!(took < std::time::Duration::from_secs(2), "{took:?}");
}
