use super::*;
use quotatop_analysis::fixture::{job, queue};
use quotatop_model::{JobStatus, SharingConfig, Source};

fn snap() -> Snapshot {
    let mut q = queue(&[
        (
            "borrower",
            "ml.g5.12xlarge",
            1,
            SharingConfig::lend_and_borrow(-1),
        ),
        ("lender", "ml.g5.12xlarge", 4, SharingConfig::lend()),
    ]);
    q.jobs = vec![
        job(
            "b1",
            "borrower",
            "ml.g5.12xlarge",
            3,
            JobStatus::Running,
            10,
            100,
        ),
        job(
            "w1",
            "borrower",
            "ml.g5.12xlarge",
            1,
            JobStatus::Runnable,
            2000,
            400_000,
        ),
        job(
            "w2",
            "borrower",
            "ml.g5.12xlarge",
            1,
            JobStatus::Runnable,
            2000,
            700_000,
        ),
        job(
            "l1",
            "lender",
            "ml.g5.12xlarge",
            1,
            JobStatus::Runnable,
            50,
            900_000,
        ),
    ];
    q.refreshed_at = Some(10_000);
    Snapshot {
        taken_at: 10_000,
        sequence: 1,
        source: Source {
            region: Some("us-east-1".into()),
            ..Default::default()
        },
        queues: vec![q],
        ..Default::default()
    }
}

fn sample<'a>(text: &'a str, name: &str, labels: &[&str]) -> Option<&'a str> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find(|l| l.split(['{', ' ']).next() == Some(name) && labels.iter().all(|x| l.contains(x)))
        .and_then(|l| l.rsplit(' ').next())
}

#[test]
fn figures_come_from_the_analysis_functions() {
    let s = snap();
    let (text, ty) = exposition(
        Some(&s),
        Some(&JournalStatus::default()),
        &Context::default(),
        25_000,
        false,
    );
    assert_eq!(ty, CLASSIC_TYPE);
    let u = share_usage(&s.queues[0]);
    let borrower = u.iter().find(|u| u.share == "borrower").unwrap();
    assert_eq!(borrower.borrowed, 2);
    let got = sample(
        &text,
        "quotatop_capacity_borrowed_instances",
        &["share=\"borrower\""],
    );
    assert_eq!(got.map(|v| v.parse::<f64>().unwrap()), Some(2.0), "{text}");
    // 4 GPUs per ml.g5.12xlarge.
    let got = sample(
        &text,
        "quotatop_capacity_borrowed_gpus",
        &["share=\"borrower\""],
    );
    assert_eq!(got.map(|v| v.parse::<f64>().unwrap()), Some(8.0), "{text}");
    let got = sample(
        &text,
        "quotatop_capacity_lent_instances",
        &["share=\"lender\""],
    );
    assert_eq!(got.map(|v| v.parse::<f64>().unwrap()), Some(2.0), "{text}");
    let got = sample(
        &text,
        "quotatop_runnable_jobs",
        &["share=\"borrower\"", "band=\"high\""],
    );
    assert_eq!(got.map(|v| v.parse::<f64>().unwrap()), Some(2.0), "{text}");
    // The service clock is at 1,000,000 ms; the oldest waiter was created at 400,000.
    let got = sample(
        &text,
        "quotatop_oldest_runnable_age_seconds",
        &["share=\"borrower\"", "band=\"high\""],
    );
    assert_eq!(
        got.map(|v| v.parse::<f64>().unwrap()),
        Some(600.0),
        "{text}"
    );
    let got = sample(&text, "quotatop_data_age_seconds", &["queue=\"q\""]);
    assert_eq!(got.map(|v| v.parse::<f64>().unwrap()), Some(15.0), "{text}");
    assert!(text.contains("region=\"us-east-1\""), "{text}");
}

#[test]
fn every_family_has_help_and_the_formats_differ_as_prometheus_expects() {
    let s = snap();
    let st = JournalStatus::default();
    let (om, ty) = exposition(Some(&s), Some(&st), &Context::default(), 25_000, true);
    assert_eq!(ty, OPENMETRICS_TYPE);
    assert!(om.ends_with("# EOF\n"), "{om}");
    assert!(om.contains("# TYPE quotatop_preemptions counter"), "{om}");
    let (classic, _) = exposition(Some(&s), Some(&st), &Context::default(), 25_000, false);
    assert!(!classic.contains("# EOF"), "{classic}");
    assert!(
        classic.contains("# TYPE quotatop_preemptions_total counter"),
        "{classic}"
    );
    assert!(
        classic.contains("# HELP quotatop_preemptions_total "),
        "{classic}"
    );
    for text in [&om, &classic] {
        let types: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("# TYPE "))
            .filter_map(|l| l.split(' ').next())
            .collect();
        assert_eq!(types.len(), GAUGES.len() + COUNTERS.len());
        for name in types {
            assert!(
                text.contains(&format!("# HELP {name} ")),
                "no HELP for {name}"
            );
        }
    }
}

#[test]
fn accept_headers_pick_the_format() {
    assert!(wants_openmetrics(Some(
        "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"
    )));
    assert!(!wants_openmetrics(Some("text/plain")));
    assert!(!wants_openmetrics(None));
}

#[test]
fn only_loopback_binds_without_allow_remote() {
    use server::check_bind;
    assert!(check_bind("127.0.0.1:9464".parse().unwrap(), false).is_ok());
    assert!(check_bind("[::1]:9464".parse().unwrap(), false).is_ok());
    let why = check_bind("0.0.0.0:9464".parse().unwrap(), false)
        .unwrap_err()
        .to_string();
    assert!(why.contains("--metrics-allow-remote"), "{why}");
    assert!(check_bind("0.0.0.0:9464".parse().unwrap(), true).is_ok());
}

/// With `[[sources]]`, two sources' queues of the same name are two series each, told apart by
/// the `source` label, each with its own source's region.
#[test]
fn two_sources_with_the_same_queue_name_are_two_series() {
    let one = snap();
    let mut fleet = quotatop_model::Fleet::new(vec![
        ("us".into(), quotatop_model::Source::default()),
        ("eu".into(), quotatop_model::Source::default()),
    ]);
    let mut one = one;
    one.health.state = quotatop_model::HealthState::Healthy;
    let mut eu = one.clone();
    eu.source.region = Some("eu-west-1".into());
    eu.health.state = quotatop_model::HealthState::Unreachable;
    fleet.update(0, one);
    let merged = fleet.update(1, eu);
    let (text, _) = exposition(
        Some(&merged),
        Some(&JournalStatus::default()),
        &Context::default(),
        25_000,
        false,
    );
    let series: Vec<&str> = text
        .lines()
        .filter(|l| {
            l.starts_with("quotatop_capacity_borrowed_instances{") && l.contains("borrower")
        })
        .collect();
    assert_eq!(series.len(), 2, "{text}");
    assert!(
        series
            .iter()
            .any(|l| l.contains("source=\"eu\"") && l.contains("region=\"eu-west-1\"")),
        "{text}"
    );
    assert!(
        series
            .iter()
            .any(|l| l.contains("source=\"us\"") && l.contains("region=\"us-east-1\"")),
        "{text}"
    );
    // Each source's refresh health: the one that fails is down, the other up.
    let up = |labels: &[&str]| sample(&text, "quotatop_refresh_up", labels).map(str::to_string);
    assert_eq!(
        up(&["source=\"eu\"", "region=\"eu-west-1\""]).as_deref(),
        Some("0.0"),
        "{text}"
    );
    assert_eq!(
        up(&["source=\"us\"", "region=\"us-east-1\""]).as_deref(),
        Some("1.0"),
        "{text}"
    );
}

/// [`snap`] with the borrower share (and its jobs) and the queue renamed to `share`, `queue`.
pub fn hostile_snap(share: &str, queue: &str) -> Snapshot {
    let mut s = snap();
    let q = &mut s.queues[0];
    q.name = queue.to_string();
    for sh in &mut q.shares {
        if sh.name == "borrower" {
            sh.name = share.to_string();
        }
    }
    for j in &mut q.jobs {
        if j.job.share == "borrower" {
            std::sync::Arc::make_mut(&mut j.job).share = share.to_string();
        }
    }
    s
}

/// A context whose policy breaches name the queue `queue` and the class `class`.
fn breaches(queue: &str, class: &str) -> Context {
    let ctx = Context::default();
    ctx.policy
        .set(vec![(queue.to_string(), class.to_string(), 2)]);
    ctx
}

#[test]
fn hostile_names_are_escaped_and_inject_nothing() {
    let share = "research\"} 0\nquotatop_injected 1\n# a \\ back";
    let s = hostile_snap(share, "q\"\n");
    let ctx = breaches("q\"\n", share);
    for om in [false, true] {
        let (text, _) = exposition(Some(&s), Some(&JournalStatus::default()), &ctx, 25_000, om);
        assert!(
            !text.lines().any(|l| l.starts_with("quotatop_injected")
                || l.starts_with("# a")
                || l == "\"} 0"),
            "{text}"
        );
        assert!(
            text.contains("share=\"research\\\"} 0\\nquotatop_injected 1\\n# a \\\\ back\""),
            "{text}"
        );
        assert!(text.contains("queue=\"q\\\"\\n\""), "{text}");
        assert!(
            text.contains("class=\"research\\\"} 0\\nquotatop_injected 1\\n# a \\\\ back\""),
            "the policy breaches' class label: {text}"
        );
        // Every sample line still ends with a number.
        for l in text.lines().filter(|l| !l.starts_with('#')) {
            let v = l.rsplit(' ').next().unwrap_or("");
            assert!(v.parse::<f64>().is_ok(), "{l:?}");
        }
    }
    assert_eq!(escape_label_value("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
}

/// Share and queue names carrying ESC, BEL, C1 CSI and a right-to-left override reach no
/// scrape as raw bytes (a terminal running `curl` on `/metrics` would obey them): a byte
/// check of both exposition formats.
#[test]
fn control_and_bidi_characters_never_reach_a_scrape() {
    let share = "vision\u{1b}]0;owned\u{7}\u{9b}31m\u{202e}";
    let s = hostile_snap(share, "q\u{1b}[2J");
    let ctx = breaches("q\u{1b}[2J", share);
    for om in [false, true] {
        let (text, _) = exposition(Some(&s), Some(&JournalStatus::default()), &ctx, 25_000, om);
        assert!(text.contains("quotatop_policy_breaches{"), "{text}");
        for bad in ["\u{1b}", "\u{7}", "\u{9b}", "\u{202e}"] {
            assert!(!text.contains(bad), "{bad:?} in the scrape:\n{text}");
        }
        assert!(
            text.contains("share=\"vision\u{fffd}]0;owned\u{fffd}\u{fffd}31m\u{fffd}\""),
            "{text}"
        );
    }
}

/// The changes made outside quotatop are one counter family, per API call, as `record`'s
/// event intake counts them (0 for a call nobody made outside it, so a first change shows as
/// an increase).
#[test]
fn changes_made_outside_quotatop_are_counted_per_call() {
    let ctx = Context::default();
    ctx.outside.set(vec![
        ("TerminateServiceJob".to_string(), 0),
        ("UpdateServiceJob".to_string(), 2),
    ]);
    let (text, _) = exposition(None, None, &ctx, 25_000, false);
    assert!(
        text.contains("quotatop_outside_changes_total{call=\"UpdateServiceJob\"} 2.0"),
        "{text}"
    );
    assert!(
        text.contains("quotatop_outside_changes_total{call=\"TerminateServiceJob\"} 0.0"),
        "{text}"
    );
    assert!(
        text.contains("# TYPE quotatop_outside_changes_total counter"),
        "{text}"
    );
}
