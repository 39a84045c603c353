use super::*;
use crate::audit::{Action, AuditRecord, ChangeOrigin, JobRef, Operator};

const BOB: &str = "arn:aws:iam::1:user/bob";
const QT: &str = "arn:aws:iam::1:user/quotatop";

fn origin() -> ChangeOrigin {
    ChangeOrigin {
        operator: Operator {
            user: "amy".into(),
            host: "h".into(),
            local_user: None,
            aws_principal: Some(QT.into()),
        },
        ..Default::default()
    }
}

fn job(id: &str) -> JobRef {
    JobRef {
        id: id.into(),
        name: format!("{id}-name"),
        arn: String::new(),
    }
}

/// A priority change of `id` to `new`, at the intent's time `t`, answered with `answer`
/// (`None`: no outcome recorded).
fn priority(id: &str, new: u32, t: &str, answer: Option<&str>) -> Change {
    let mut intent = AuditRecord::priority_intent(
        origin(),
        format!("c-{id}-{new}"),
        "s".into(),
        job(id),
        1,
        new,
        String::new(),
    );
    intent.time = t.into();
    let outcome = answer.map(|r| {
        AuditRecord::outcome_of(
            intent.clone(),
            Outcome::Succeeded {
                request_id: Some(r.into()),
            },
        )
    });
    Change { intent, outcome }
}

fn call(
    name: &str,
    time: Millis,
    who: &str,
    request: Option<&str>,
    params: serde_json::Value,
) -> ApiCall {
    ApiCall {
        event_id: format!("ev-{name}-{time}"),
        time,
        name: name.into(),
        principal: who.into(),
        request_id: request.map(str::to_string),
        parameters: params.to_string(),
    }
}

/// 2026-01-01T00:00:00Z plus `s` seconds, in ms.
fn at(s: i64) -> Millis {
    1_767_225_600_000 + s * 1000
}

#[test]
fn a_call_quotatop_answered_is_its_own_and_the_same_change_by_another_is_not() {
    let changes = [priority(
        "j1",
        9,
        "2026-01-01T00:00:00Z",
        Some("req-000001"),
    )];
    let p = serde_json::json!({"jobId": "j1", "schedulingPriority": 9});
    let calls = [
        call("UpdateServiceJob", at(1), QT, Some("req-000001"), p.clone()),
        // The same change made again by hand: another request id, so not quotatop's.
        call(
            "UpdateServiceJob",
            at(60),
            BOB,
            Some("req-000002"),
            p.clone(),
        ),
        // Even by quotatop's own principal: the change's answer was another call's.
        call("UpdateServiceJob", at(61), QT, Some("req-000003"), p),
    ];
    assert_eq!(own_calls(&calls, &changes), [true, false, false]);
    let outside: Vec<&str> = outside_calls(&calls, &changes)
        .iter()
        .map(|c| c.event_id.as_str())
        .collect();
    assert_eq!(outside.len(), 2, "{outside:?}");
}

#[test]
fn a_change_whose_answer_was_lost_accounts_for_one_matching_call_of_its_principal() {
    let changes = [priority("j1", 9, "2026-01-01T00:00:00Z", None)];
    let p = serde_json::json!({"jobId": "j1", "schedulingPriority": 9});
    let other = serde_json::json!({"jobId": "j1", "schedulingPriority": 10});
    // Another principal, another value, a day and more after: none is the change's.
    let not = [
        call("UpdateServiceJob", at(5), BOB, Some("r-a"), p.clone()),
        call("UpdateServiceJob", at(5), QT, Some("r-b"), other),
        call("UpdateServiceJob", at(90_000), QT, Some("r-c"), p.clone()),
        call("UpdateServiceJob", at(-600), QT, Some("r-d"), p.clone()),
    ];
    assert_eq!(own_calls(&not, &changes), [false; 4]);
    // The change's call, and the same again: only the first is accounted for.
    let calls = [
        call("UpdateServiceJob", at(5), QT, Some("r-e"), p.clone()),
        call("UpdateServiceJob", at(6), QT, Some("r-f"), p),
    ];
    assert_eq!(own_calls(&calls, &changes), [true, false]);
}

#[test]
fn terminations_submissions_and_share_changes_match_by_their_markers() {
    let mut t = AuditRecord::drill_intent(
        origin(),
        "c-t".into(),
        "s".into(),
        job("j2"),
        Action {
            call: "TerminateServiceJob".into(),
            target: "j2".into(),
            detail: String::new(),
            run_id: None,
        },
    );
    t.time = "2026-01-01T00:00:00Z".into();
    let mut s = t.clone();
    s.change_id = "c-s".into();
    s.action = Some(Action {
        call: "UpdateQuotaShare".into(),
        target: "research".into(),
        detail: String::new(),
        run_id: None,
    });
    let changes = [
        Change {
            intent: t,
            outcome: None,
        },
        Change {
            intent: s,
            outcome: None,
        },
    ];
    let calls = [
        // A reason not in quotatop's form is someone else's, whoever they claim to be.
        call(
            "TerminateServiceJob",
            at(1),
            QT,
            None,
            serde_json::json!({"jobId": "j2", "reason": "cleanup"}),
        ),
        call(
            "TerminateServiceJob",
            at(2),
            QT,
            None,
            serde_json::json!({"jobId": "j2", "reason": "quotatop: amy@h: why"}),
        ),
        call(
            "UpdateQuotaShare",
            at(3),
            QT,
            None,
            serde_json::json!({"quotaShareArn": "arn:aws:batch:us-east-1:1:quota-share/q/research"}),
        ),
        call(
            "UpdateQuotaShare",
            at(4),
            QT,
            None,
            serde_json::json!({"quotaShareArn": "arn:aws:batch:us-east-1:1:quota-share/q/vision"}),
        ),
        // Not a judged call: never listed as a change, whoever made it.
        call(
            "SubmitServiceJob",
            at(5),
            BOB,
            None,
            serde_json::json!({"jobName": "x"}),
        ),
    ];
    assert_eq!(
        own_calls(&calls, &changes),
        [false, true, true, false, false]
    );
    let outside: Vec<Millis> = outside_calls(&calls, &changes)
        .iter()
        .map(|c| c.time)
        .collect();
    assert_eq!(outside, [at(1), at(4)]);
}

#[test]
fn a_requeue_answers_with_two_request_ids() {
    let mut c = priority(
        "j3",
        1,
        "2026-01-01T00:00:00Z",
        Some("submit sub-00000001, terminate ter-00000001"),
    );
    c.intent.action = Some(Action {
        call: "RequeueServiceJob".into(),
        target: "j3".into(),
        detail: String::new(),
        run_id: None,
    });
    let calls = [
        call(
            "TerminateServiceJob",
            at(1),
            BOB,
            Some("ter-00000001"),
            serde_json::json!({"jobId": "j3"}),
        ),
        call(
            "TerminateServiceJob",
            at(2),
            BOB,
            Some("ter-00000002"),
            serde_json::json!({"jobId": "j3"}),
        ),
    ];
    assert_eq!(own_calls(&calls, &[c]), [true, false]);
}
