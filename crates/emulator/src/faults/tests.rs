//! Tests of fault specs and the injector's draws.

use super::*;
use std::time::Duration;

#[test]
fn parses_rules_and_later_rules_override() {
    let s = FaultSpec::parse(
        "latency=20ms+30ms,throttle=5%; submitservicejob|describeservicejob:error=0.1,latency=1s; seed=9",
    )
    .unwrap();
    assert_eq!(s.seed, 9);
    let list = s.for_op("listservicejobs");
    assert_eq!((list.latency_ms, list.jitter_ms), (20, 30));
    assert!((list.throttle - 0.05).abs() < 1e-12);
    assert_eq!(list.error, 0.0);
    let submit = s.for_op("submitservicejob");
    assert_eq!((submit.latency_ms, submit.jitter_ms), (1000, 0));
    assert_eq!(submit.error, 0.1);
    assert!((submit.throttle - 0.05).abs() < 1e-12);
}

#[test]
fn rejects_bad_specs_with_a_reason() {
    for bad in [
        "throttle=2",
        "latency=fast",
        "nosuchop:error=0.1",
        "jitter=1",
        "drop",
        "throttle-first=-1",
        "latency=2h",
        "latency=60.001m",
        "latency=3600001",
        "deny=yes",
        "expired-token=1.5",
        "lose-answer=2",
        "lose-answer-first=x",
    ] {
        assert!(FaultSpec::parse(bad).is_err(), "{bad}");
    }
    assert!(FaultSpec::parse("").unwrap().is_empty());
    let s = FaultSpec::parse("latency=1.5s+50 ms").unwrap();
    let f = s.for_op("listservicejobs");
    assert_eq!((f.latency_ms, f.jitter_ms), (1_500, 50));
    let s = FaultSpec::parse("latency=1h+250").unwrap();
    let f = s.for_op("listservicejobs");
    assert_eq!((f.latency_ms, f.jitter_ms), (3_600_000, 250));
}

#[test]
fn hold_is_per_operation_and_counted() {
    let spec = FaultSpec::parse("updateservicejob:hold=1.5s").unwrap();
    assert_eq!(spec.for_op("updateservicejob").hold_ms, 1500);
    assert_eq!(spec.for_op("listservicejobs").hold_ms, 0);
    assert!(FaultSpec::parse("hold=2h").is_err(), "at most an hour");
    let f = FaultInjector::new(spec);
    assert_eq!(f.hold("listservicejobs"), Duration::ZERO);
    assert_eq!(f.hold("updateservicejob"), Duration::from_millis(1500));
    assert_eq!(f.stats().held, 1);
}

#[test]
fn draws_are_seeded_per_operation_and_rates_hold() {
    let run = |interleave: bool| {
        let inj = FaultInjector::new(FaultSpec::parse("throttle=0.3,seed=4").unwrap());
        (0..1000)
            .map(|_| {
                if interleave {
                    inj.decide("describeservicejob");
                }
                inj.decide("listservicejobs").1
            })
            .collect::<Vec<_>>()
    };
    let a = run(false);
    assert_eq!(a, run(true));
    let throttled = a.iter().filter(|d| **d == Decision::Throttle).count();
    assert!((200..400).contains(&throttled), "{throttled}");
}

#[test]
fn spec_changes_at_runtime_and_calls_are_counted() {
    let inj = FaultInjector::new(FaultSpec::parse("throttle=1").unwrap());
    assert_eq!(inj.decide("listservicejobs").1, Decision::Throttle);
    inj.set_spec(FaultSpec::none());
    assert_eq!(inj.decide("listservicejobs").1, Decision::Proceed);
    inj.decide("describeservicejob");
    assert_eq!(inj.calls("listservicejobs"), 2);
    assert_eq!(inj.calls("describeservicejob"), 1);
    assert_eq!(inj.calls("getjobqueuesnapshot"), 0);
}

#[test]
fn lost_answers_come_after_the_other_faults_and_leave_their_draws_alone() {
    let inj = FaultInjector::new(
        FaultSpec::parse(
            "createquotashare:lose-answer-first=1;deletequotashare:throttle=1,lose-answer=1",
        )
        .unwrap(),
    );
    let d: Vec<Decision> = (0..2).map(|_| inj.decide("createquotashare").1).collect();
    assert_eq!(d, [Decision::LoseAnswer, Decision::Proceed]);
    // A throttled call never reaches the handler, so it has no answer to lose.
    assert_eq!(inj.decide("deletequotashare").1, Decision::Throttle);
    assert_eq!(inj.stats().answers_lost, 1);
    let run = |spec: &str| {
        let inj = FaultInjector::new(FaultSpec::parse(spec).unwrap());
        (0..200)
            .map(|_| inj.decide("listservicejobs").1)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        run("throttle=0.3,error=0.2,seed=2"),
        run("throttle=0.3,error=0.2,lose-answer=0,seed=2")
    );
    let lost = run("lose-answer=0.5,seed=3")
        .iter()
        .filter(|d| **d == Decision::LoseAnswer)
        .count();
    assert!((60..140).contains(&lost), "{lost}");
}

#[test]
fn throttle_first_then_proceed() {
    let inj = FaultInjector::new(FaultSpec::parse("describejobqueues:throttle-first=2").unwrap());
    let d: Vec<Decision> = (0..3).map(|_| inj.decide("describejobqueues").1).collect();
    assert_eq!(
        d,
        [Decision::Throttle, Decision::Throttle, Decision::Proceed]
    );
    assert_eq!(inj.decide("listservicejobs").1, Decision::Proceed);
    assert_eq!(inj.stats().throttled, 2);
}

#[test]
fn credential_faults_answer_403_before_throttling_and_leave_other_draws_alone() {
    let spec =
        FaultSpec::parse("deny=1,throttle=1;describeservicejob:deny=0,expired-token=100%").unwrap();
    assert_eq!(spec.for_op("listservicejobs").deny, 1.0);
    let inj = FaultInjector::new(spec);
    assert_eq!(inj.decide("listservicejobs").1, Decision::AccessDenied);
    assert_eq!(inj.decide("describeservicejob").1, Decision::ExpiredToken);
    assert_eq!(inj.stats().denied, 2);
    assert_eq!(inj.stats().throttled, 0);
    // A spec with a credential fault that never fires draws the same throttles as without.
    let run = |spec: &str| {
        let inj = FaultInjector::new(FaultSpec::parse(spec).unwrap());
        (0..200)
            .map(|_| inj.decide("listservicejobs").1)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        run("throttle=0.3,seed=2"),
        run("throttle=0.3,deny=0,seed=2")
    );
}
