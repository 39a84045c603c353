use std::collections::BTreeMap;

use quotatop_analysis::scorecard::{
    AttemptEnd, AttemptHistory, JobHistory, Outcome, PriorityChange, ScorecardInput,
    ScorecardOptions, Window,
};

use super::*;

const MIN: i64 = 60_000;
const HOUR: i64 = 60 * MIN;

fn attempt(from: i64, to: Option<i64>, end: AttemptEnd) -> AttemptHistory {
    AttemptHistory {
        scheduled_at: Some(from),
        started_at: Some(from),
        stopped_at: to,
        end,
        preempting_from: None,
        restored: None,
        restored_at: None,
    }
}

fn job(
    id: &str,
    share: &str,
    priority: u32,
    attempts: Vec<AttemptHistory>,
    outcome: Outcome,
) -> JobHistory {
    JobHistory {
        job_id: id.into(),
        name: format!("{id}-name"),
        share: share.into(),
        priority,
        instance_type: "ml.g5.12xlarge".into(),
        instance_count: 1,
        submitted_at: 0,
        runnable_at: vec![0],
        attempts,
        outcome,
        checkpoint_interval_ms: None,
        restart_overhead_ms: None,
        preemption_retries: None,
        training: None,
    }
}

fn four() -> Policy {
    crate::parse(include_str!("../fixtures/four_classes.toml"), "four.toml").unwrap()
}

/// A window of 10 h with one job breaching each rule, and the jobs that keep it.
fn input() -> ScorecardInput {
    use AttemptEnd::*;
    let jobs = vec![
        // incident: one waited 40 min (promise 15), one 5 min; one still waiting since 9 h.
        job(
            "i-late",
            "prod",
            9500,
            vec![attempt(40 * MIN, Some(HOUR), Completed)],
            Outcome::Succeeded(HOUR),
        ),
        job(
            "i-ok",
            "prod",
            9500,
            vec![attempt(5 * MIN, Some(HOUR), Completed)],
            Outcome::Succeeded(HOUR),
        ),
        JobHistory {
            submitted_at: 9 * HOUR,
            runnable_at: vec![9 * HOUR],
            ..job("i-waiting", "prod", 9999, vec![], Outcome::Open)
        },
        // delivery: preempted twice (budget 1), then done; deadline 3× its work: 1 h of work,
        // done at 5 h → 2 h late.
        job(
            "d-preempted",
            "vision",
            2000,
            vec![
                attempt(0, Some(30 * MIN), Preempted),
                attempt(HOUR, Some(90 * MIN), Preempted),
                attempt(4 * HOUR, Some(5 * HOUR), Completed),
            ],
            Outcome::Succeeded(5 * HOUR),
        ),
        // exploratory by share, outside its range.
        job(
            "e-high",
            "research",
            5000,
            vec![attempt(0, Some(HOUR), Completed)],
            Outcome::Succeeded(HOUR),
        ),
        // exploratory by priority: a share no class lists.
        job(
            "e-stray",
            "elsewhere",
            50,
            vec![attempt(0, Some(HOUR), Completed)],
            Outcome::Succeeded(HOUR),
        ),
    ];
    ScorecardInput {
        queue: "ml-training".into(),
        window: Window::new(0, 10 * HOUR),
        capacity: vec![],
        entitlements: vec![],
        jobs,
    }
}

fn change(job: &str, by: &str, record: Option<&str>) -> PriorityChange {
    PriorityChange {
        at: 2 * MIN,
        job_id: job.into(),
        share: "prod".into(),
        operator: Some(by.into()),
        old: 100,
        new: 9500,
        change_record: record.map(String::from),
    }
}

fn class<'a>(c: &'a Conformance, name: &str) -> &'a ClassConformance {
    c.classes.iter().find(|k| k.class == name).unwrap()
}

fn line(c: &Conformance, class_name: &str, kind: CheckKind) -> String {
    class(c, class_name)
        .checks
        .iter()
        .find(|k| k.kind == kind)
        .unwrap()
        .line()
}

#[test]
fn each_breach_is_named_with_its_job_and_the_rest_holds() {
    let p = four();
    let changes = vec![
        change("i-late", "bob@host", None),
        change("i-ok", "oncall-amy@host", Some("CR-7")),
    ];
    let c = conformance(
        &p,
        &input(),
        &ScorecardOptions::default(),
        &changes,
        &BTreeMap::new(),
    );
    assert_eq!(class(&c, "incident").jobs, 3);
    assert_eq!(
        line(&c, "incident", CheckKind::Wait),
        "wait: P95 wait to first capacity 1h00m, promise 15m00s — breached: 2 job(s), worst i-waiting (i-waiting-name): still waiting after 1h00m; i-late (i-late-name): waited 40m00s"
    );
    assert_eq!(
        line(&c, "incident", CheckKind::Exceptions),
        "priority changes: bob@host 1, oncall-amy@host 1 — breached: 1 job(s), worst i-late (i-late-name): 100 → 9500 by bob@host, who may not use incident, 100 → 9500 by bob@host without a change record"
    );
    assert_eq!(
        line(&c, "incident", CheckKind::Budget),
        "interruption budget: 0 preemption(s), budget no preemption — holds"
    );
    assert_eq!(
        line(&c, "delivery", CheckKind::Budget),
        "interruption budget: 2 preemption(s), budget ≤ 1 preemption(s)/job — breached: 1 job(s), worst d-preempted (d-preempted-name): preempted 2 time(s), budget 1"
    );
    assert_eq!(
        line(&c, "delivery", CheckKind::Deadlines),
        "deadlines: 1 of 1 succeeded job(s) late (deadline 3× its work) — breached: 1 job(s), worst d-preempted (d-preempted-name): succeeded 2h00m after its deadline"
    );
    assert_eq!(
        line(&c, "exploratory", CheckKind::Outside),
        "shares and range: shares research, nlp, priority 0-999 — breached: 2 job(s), worst e-high (e-high-name): priority 5000 outside 0-999; e-stray (e-stray-name): in share elsewhere, not research, nlp"
    );
    assert_eq!(
        line(&c, "regulatory", CheckKind::Wait),
        "wait: P95 wait to first capacity no waits, promise 1h00m — holds"
    );
    assert_eq!(
        c.breaches_by_class(),
        [
            ("incident".to_string(), 3),
            ("delivery".to_string(), 2),
            ("regulatory".to_string(), 0),
            ("exploratory".to_string(), 2),
        ]
    );
    assert!(c.unclassified.is_empty());
}

#[test]
fn a_class_tag_moves_a_job_and_the_markdown_names_every_class() {
    let p = four();
    let mut tags = BTreeMap::new();
    tags.insert("e-high".to_string(), "regulatory".to_string());
    let c = conformance(&p, &input(), &ScorecardOptions::default(), &[], &tags);
    assert_eq!(class(&c, "regulatory").jobs, 1);
    assert_eq!(
        line(&c, "regulatory", CheckKind::Outside),
        "shares and range: shares regulated, priority 5000-8999 — breached: 1 job(s), worst e-high (e-high-name): in share research, not regulated"
    );
    let md = markdown(&c, &p);
    assert!(
        md.starts_with("## Policy conformance\n\nPolicy four.toml (sha256 "),
        "{md}"
    );
    for want in [
        "### incident — 3 job(s), 2 breach(es)",
        "### regulatory — 1 job(s), 1 breach(es)",
        "### exploratory — 1 job(s), 1 breach(es)",
        "- priority changes: none — holds",
    ] {
        assert!(md.contains(want), "want {want:?} in:\n{md}");
    }
}

#[test]
fn the_lost_gpu_hours_budget_is_judged_per_day() {
    let mut p = four();
    // delivery: at most 1 GPU-h lost a day; d-preempted loses 2 × 30 min × 4 GPUs = 4 GPU-h.
    p.classes[1].budget.max_lost_gpu_hours_per_day = Some(1.0);
    p.classes[1].budget.max_preemptions_per_job = None;
    let c = conformance(
        &p,
        &input(),
        &ScorecardOptions::default(),
        &[],
        &BTreeMap::new(),
    );
    let l = line(&c, "delivery", CheckKind::Budget);
    assert!(
        l.ends_with("— breached: 4.0 GPU-h lost on the day from 1970-01-01T00:00:00Z (budget 1)"),
        "{l}"
    );
}

/// The attention item names the worst job as people know it, by its name; where another job of
/// the breach has the same name, its id follows, and a job without a name is its id.
#[test]
fn breach_items_name_the_worst_job_by_name_with_the_id_where_names_repeat() {
    let p = four();
    let text_with = |rename: &dyn Fn(&mut JobHistory)| {
        let mut data = input();
        data.jobs.iter_mut().for_each(rename);
        let c = conformance(
            &p,
            &data,
            &ScorecardOptions::default(),
            &[],
            &BTreeMap::new(),
        );
        breach_items(&c, &p)[0].text.clone()
    };
    assert_eq!(
        text_with(&|_| {}),
        "incident: 2 job(s) waiting over their 15m00s promise, worst i-waiting-name: still waiting after 1h00m"
    );
    // i-late, the other breach of the same check, takes the worst job's name.
    let same_name = |j: &mut JobHistory| {
        if j.job_id == "i-late" {
            j.name = "i-waiting-name".into();
        }
    };
    assert_eq!(
        text_with(&same_name),
        "incident: 2 job(s) waiting over their 15m00s promise, worst i-waiting-name (i-waiting): still waiting after 1h00m"
    );
    let no_name = |j: &mut JobHistory| {
        if j.job_id == "i-waiting" {
            j.name = String::new();
        }
    };
    assert_eq!(
        text_with(&no_name),
        "incident: 2 job(s) waiting over their 15m00s promise, worst i-waiting: still waiting after 1h00m"
    );
}

#[test]
fn breach_items_name_each_breached_check_in_words() {
    let p = four();
    let c = conformance(
        &p,
        &input(),
        &ScorecardOptions::default(),
        &[],
        &BTreeMap::new(),
    );
    let items = breach_items(&c, &p);
    let texts: Vec<&str> = items.iter().map(|i| i.text.as_str()).collect();
    assert_eq!(
        texts,
        [
            "incident: 2 job(s) waiting over their 15m00s promise, worst i-waiting-name: still waiting after 1h00m",
            "delivery: 1 job(s) past their deadline, worst d-preempted-name: succeeded 2h00m after its deadline",
            "delivery: 1 breach(es) of its interruption budget, worst d-preempted-name: preempted 2 time(s), budget 1",
            "exploratory: 2 job(s) outside its shares or priority range, worst e-high-name: priority 5000 outside 0-999",
        ]
    );
    assert_eq!(items[0].job.as_deref(), Some("i-waiting"));
    assert_eq!(items[0].share.as_deref(), Some("prod"));
    // Every breach counted per class is an item's: the panel and /metrics agree.
    let per_class: usize = c.classes.iter().map(|k| k.breaches()).sum();
    let counted: usize = items
        .iter()
        .map(|i| {
            class(&c, &i.class)
                .checks
                .iter()
                .find(|k| k.kind == i.kind)
                .map_or(0, |k| k.breaches())
        })
        .sum();
    assert_eq!(counted, per_class);
    // A job that got its capacity late waited; none still waiting: "waited".
    let mut one = input();
    one.jobs.retain(|j| j.job_id != "i-waiting");
    let c = conformance(
        &p,
        &one,
        &ScorecardOptions::default(),
        &[],
        &BTreeMap::new(),
    );
    assert_eq!(
        breach_items(&c, &p)[0].text,
        "incident: 1 job(s) waited over their 15m00s promise, worst i-late-name: waited 40m00s"
    );
}

/// Issue 44, item 4: a share listed under a second, later class whose range its jobs do not
/// use changes nothing: `policy check`, the change-time check and the verdict's class rules
/// all put prod's priority-500 job in incident, the first class listing prod, exactly as with
/// prod under incident alone.
#[test]
fn a_share_listed_twice_is_judged_as_under_its_first_class_alone() {
    use crate::{ChangeRequest, check_change, class_index, class_rules};
    use AttemptEnd::*;
    let alone = crate::parse(
        "version = 1\n[[class]]\nname = \"incident\"\npriority = [9000, 9999]\nshares = [\"prod\"]\nmax_wait = \"15m\"\nmax_preemptions_per_job = 0\n",
        "alone.toml",
    )
    .unwrap();
    let twice = crate::parse(
        "version = 1\n[[class]]\nname = \"incident\"\npriority = [9000, 9999]\nshares = [\"prod\"]\nmax_wait = \"15m\"\nmax_preemptions_per_job = 0\n\
         [[class]]\nname = \"delivery\"\npriority = [1000, 8999]\nshares = [\"prod\"]\nmax_wait = \"2h\"\ndeadline_factor = 3.0\nmax_preemptions_per_job = 1\n",
        "twice.toml",
    )
    .unwrap();
    let input = ScorecardInput {
        queue: "q".into(),
        window: Window::new(0, 10 * HOUR),
        capacity: vec![],
        entitlements: vec![],
        jobs: vec![job(
            "p-500",
            "prod",
            500,
            vec![
                attempt(40 * MIN, Some(HOUR), Preempted),
                attempt(2 * HOUR, Some(3 * HOUR), Completed),
            ],
            Outcome::Succeeded(3 * HOUR),
        )],
    };
    let opts = ScorecardOptions::default();
    let judge = |p: &Policy| conformance(p, &input, &opts, &[], &BTreeMap::new());
    let (a, t) = (judge(&alone), judge(&twice));
    assert_eq!(class(&a, "incident"), class(&t, "incident"));
    assert_eq!(class(&t, "incident").jobs, 1);
    assert_eq!(class(&t, "delivery").jobs, 0);
    // Waited 40 min (promise 15), preempted once (budget 0), priority outside 9000-9999.
    assert_eq!(class(&a, "incident").breaches(), 3, "{a:?}");
    // The change-time check reads the same class.
    let ask = |p: &Policy| {
        let v = check_change(
            p,
            &ChangeRequest {
                tag: None,
                share: "prod",
                old: Some(500),
                new: 9500,
                who: &["oncall-a"],
                change_record: false,
            },
        );
        (v.class_before, v.class_after)
    };
    assert_eq!(ask(&alone), ask(&twice));
    assert_eq!(ask(&twice).0, "incident");
    // And the verdict's class rules (replay --policy) give it incident's promise and budget.
    let rule = |p: &Policy| {
        let k = class_index(p, "prod", 500).unwrap();
        class_rules(p)[usize::from(k)].clone()
    };
    assert_eq!(rule(&alone), rule(&twice));
    assert_eq!(rule(&twice).name, "incident");
}
