use serde_json::json;

use super::*;

#[test]
fn patterns_match_values_lists_nested_fields_and_the_three_matchers() {
    let event = json!({
        "source": "aws.batch",
        "detail-type": "Batch Service Job State Change",
        "resources": ["arn:a", "arn:b"],
        "detail": {"status": "RUNNING", "jobName": "train-7"},
    });
    let p = |v: Value| {
        check_pattern(&v).unwrap();
        matches(&v, &event)
    };
    assert!(p(json!({"source": ["aws.batch"]})));
    assert!(!p(json!({"source": ["aws.ec2"]})));
    assert!(p(json!({"source": ["aws.batch"], "detail-type": [
        "Batch Service Job Preemption Started", "Batch Service Job State Change"]})));
    assert!(p(json!({"resources": ["arn:b"]})));
    assert!(p(json!({"detail": {"status": ["RUNNING"]}})));
    assert!(!p(json!({"detail": {"status": ["FAILED"]}})));
    assert!(p(json!({"detail": {"jobName": [{"prefix": "train-"}]}})));
    assert!(p(json!({"detail": {"stoppedAt": [{"exists": false}]}})));
    assert!(!p(json!({"detail": {"status": [{"exists": false}]}})));
    assert!(p(
        json!({"detail": {"status": [{"anything-but": ["FAILED"]}]}})
    ));
    assert!(!p(
        json!({"detail": {"status": [{"anything-but": "RUNNING"}]}})
    ));
    for bad in [
        json!([]),
        json!({}),
        json!({"source": "aws.batch"}),
        json!({"source": []}),
        json!({"source": [{"numeric": [">", 1]}]}),
    ] {
        assert!(check_pattern(&bad).is_err(), "{bad}");
    }
}

#[test]
fn a_queue_policy_must_let_eventbridge_send_the_rules_events() {
    let queue = "arn:aws:sqs:us-east-1:123456789012:q";
    let rule = "arn:aws:events:us-east-1:123456789012:rule/r";
    let policy = |statement: Value| Some(json!({"Statement": statement}).to_string());
    let allow = json!({
        "Effect": "Allow",
        "Principal": {"Service": "events.amazonaws.com"},
        "Action": "sqs:SendMessage",
        "Resource": queue,
        "Condition": {"ArnEquals": {"aws:SourceArn": rule}},
    });
    assert!(policy_allows(policy(allow.clone()).as_ref(), queue, rule));
    assert!(!policy_allows(None, queue, rule));
    let mut other_rule = allow.clone();
    other_rule["Condition"]["ArnEquals"]["aws:SourceArn"] = json!("arn:x");
    assert!(!policy_allows(policy(other_rule).as_ref(), queue, rule));
    let mut like = allow.clone();
    like["Condition"] =
        json!({"ArnLike": {"aws:SourceArn": "arn:aws:events:*:123456789012:rule/*"}});
    assert!(policy_allows(policy(json!([like])).as_ref(), queue, rule));
    let mut deny = allow.clone();
    deny["Effect"] = json!("Deny");
    assert!(!policy_allows(policy(deny).as_ref(), queue, rule));
    let mut other_principal = allow;
    other_principal["Principal"] = json!({"AWS": "*"});
    assert!(!policy_allows(
        policy(other_principal).as_ref(),
        queue,
        rule
    ));
    assert!(glob("a*c", "abbc") && glob("*", "") && !glob("a*c", "abd"));
}

fn bus_with_queue(faults: DeliveryFaults) -> Bus {
    let mut bus = Bus::new(0);
    bus.configure("http://127.0.0.1:1", faults);
    bus.queues.push(SqsQueue {
        name: "q".into(),
        arn: "arn:aws:sqs:us-east-1:1:q".into(),
        attributes: BTreeMap::from([(
            "Policy".to_string(),
            json!({"Statement": {"Effect": "Allow",
                "Principal": {"Service": "events.amazonaws.com"}, "Action": "sqs:SendMessage"}})
            .to_string(),
        )]),
        created: 0,
        modified: 0,
        messages: VecDeque::new(),
    });
    bus.rules.push(Rule {
        name: "r".into(),
        arn: "arn:aws:events:us-east-1:1:rule/r".into(),
        pattern: json!({"source": ["aws.batch"]}),
        pattern_text: String::new(),
        enabled: true,
        description: None,
        targets: vec![Target {
            id: "t".into(),
            arn: "arn:aws:sqs:us-east-1:1:q".into(),
            input: None,
        }],
    });
    bus
}

#[test]
fn each_delivery_fault_does_what_it_says() {
    let event = json!({"source": "aws.batch", "detail": {}});
    let run = |faults: DeliveryFaults| {
        let mut bus = bus_with_queue(faults);
        for _ in 0..200 {
            bus.publish(event.clone(), 0);
        }
        bus
    };
    let clean = run(DeliveryFaults::default());
    assert_eq!(clean.queues[0].messages.len(), 200);
    assert_eq!(clean.stats.delivered, 200);
    let dropped = run(DeliveryFaults {
        drop: 1.0,
        ..Default::default()
    });
    assert_eq!(
        (dropped.queues[0].messages.len(), dropped.stats.dropped),
        (0, 200)
    );
    let doubled = run(DeliveryFaults {
        duplicate: 1.0,
        ..Default::default()
    });
    let q = &doubled.queues[0].messages;
    assert_eq!(q.len(), 400);
    assert_eq!(
        q[0].body, q[1].body,
        "a duplicate carries the same event (and id)"
    );
    assert_ne!(q[0].id, q[1].id, "in two messages");
    let half = run(DeliveryFaults {
        reorder: 0.5,
        seed: 7,
        ..Default::default()
    });
    let held = half.stats.reordered;
    assert!((50..150).contains(&held), "{held}");
    let q = &half.queues[0].messages;
    assert!(
        q.iter()
            .zip(q.iter().skip(1))
            .any(|(a, b)| a.visible_at > b.visible_at)
    );
    let late = run(DeliveryFaults {
        delay_ms: 60_000,
        ..Default::default()
    });
    assert!(
        late.queues[0]
            .messages
            .iter()
            .all(|m| m.visible_at > Instant::now())
    );
    // Unmatched events and a queue without a policy get nothing.
    let mut bus = bus_with_queue(DeliveryFaults::default());
    bus.publish(json!({"source": "aws.ec2"}), 0);
    assert!(bus.queues[0].messages.is_empty());
    bus.queues[0].attributes.clear();
    bus.publish(event, 0);
    assert_eq!(
        (bus.queues[0].messages.len(), bus.stats.refused_by_policy),
        (0, 1)
    );
}

#[test]
fn queues_and_the_event_history_are_bounded_in_bytes() {
    let mut bus = bus_with_queue(DeliveryFaults::default());
    let mib = "x".repeat(1024 * 1024);
    let limit = MAX_MESSAGE_BYTES / mib.len();
    for _ in 0..limit + 3 {
        bus.send(0, mib.clone(), 0, Instant::now());
    }
    assert_eq!(bus.queues[0].messages.len(), limit);
    assert_eq!(bus.stats.overflowed, 3);
    assert_eq!(bus.message_bytes, limit * mib.len());
    bus.remove_message(0, 0);
    assert_eq!(bus.message_bytes, (limit - 1) * mib.len());
    bus.remove_queue(0);
    assert_eq!(bus.message_bytes, 0);
    let record = json!({ "requestParameters": "y".repeat(30 * 1024) });
    let size = record.to_string().len();
    for _ in 0..1000 {
        bus.record(record.clone());
    }
    assert_eq!(bus.trail.len(), MAX_TRAIL_BYTES / size);
    assert!(bus.trail_bytes <= MAX_TRAIL_BYTES);
}
