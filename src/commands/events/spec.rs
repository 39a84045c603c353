//! What `events setup` makes, as values: the names, the rule's pattern, the queue policy's
//! statement, and the steps from what exists to that (and back, for `teardown`). Pure, so it
//! is unit-tested without a service.

use quotatop_aws::batch::{QueueState, RuleState, RuleTarget};

/// The detail types the rule forwards (AWS Batch user guide, "event stream").
pub const DETAIL_TYPES: [&str; 4] = [
    "Batch Service Job State Change",
    "Batch Service Job Preemption Started",
    "Batch Service Job Preemption Completed",
    "AWS API Call via CloudTrail",
];
/// The rule's target id.
pub const TARGET_ID: &str = "quotatop-events";
/// The rule's description: how `teardown` knows a rule is setup's.
pub const RULE_MARKER: &str = "made by quotatop events setup";
/// The queue policy statement's Sid: how `teardown` knows a queue is setup's.
pub const POLICY_SID: &str = "quotatop-events";
const RULE_PREFIX: &str = "quotatop-";
/// SQS: a queue name is at most 80 characters; EventBridge: a rule name at most 64.
const QUEUE_NAME_MAX: usize = 80;
const RULE_NAME_MAX: usize = 64;

/// The queue name checked (SQS: letters, digits, `-`, `_`; not a `.fifo` queue), and the
/// rule's name, `quotatop-NAME`.
pub fn rule_name(queue: &str) -> Result<String, String> {
    let ok_chars = queue
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if queue.is_empty() || !ok_chars || queue.len() > QUEUE_NAME_MAX {
        return Err(format!(
            "--queue {:?} is not an SQS queue name: 1 to {QUEUE_NAME_MAX} letters, digits, '-' or '_' (a standard queue; e.g. quotatop-events)",
            quotatop_model::clean_text(queue)
        ));
    }
    let rule = format!("{RULE_PREFIX}{queue}");
    if rule.len() > RULE_NAME_MAX {
        return Err(format!(
            "--queue: the rule is named {RULE_PREFIX}NAME and an EventBridge rule name is at most {RULE_NAME_MAX} characters: use a queue name of at most {} characters",
            RULE_NAME_MAX - RULE_PREFIX.len()
        ));
    }
    Ok(rule)
}

/// The rule's event pattern (JSON).
pub fn pattern() -> String {
    serde_json::json!({"source": ["aws.batch"], "detail-type": DETAIL_TYPES}).to_string()
}

/// Whether `existing` is the same pattern as [`pattern`] (as JSON values, whatever the
/// spacing and key order).
fn same_pattern(existing: Option<&str>) -> bool {
    let parse = |s: &str| serde_json::from_str::<serde_json::Value>(s).ok();
    match existing.and_then(parse) {
        Some(v) => Some(v) == parse(&pattern()),
        None => false,
    }
}

/// setup's statement: events.amazonaws.com may send to `queue_arn`, from rule `rule_arn` only.
fn statement(queue_arn: &str, rule_arn: &str) -> serde_json::Value {
    serde_json::json!({
        "Sid": POLICY_SID,
        "Effect": "Allow",
        "Principal": {"Service": "events.amazonaws.com"},
        "Action": "sqs:SendMessage",
        "Resource": queue_arn,
        "Condition": {"ArnEquals": {"aws:SourceArn": rule_arn}}
    })
}

fn statements(policy: Option<&str>) -> Vec<serde_json::Value> {
    policy
        .and_then(|p| serde_json::from_str::<serde_json::Value>(p).ok())
        .and_then(|v| match v.get("Statement") {
            Some(serde_json::Value::Array(a)) => Some(a.clone()),
            Some(one @ serde_json::Value::Object(_)) => Some(vec![one.clone()]),
            _ => None,
        })
        .unwrap_or_default()
}

fn is_ours(s: &serde_json::Value) -> bool {
    s.get("Sid").and_then(serde_json::Value::as_str) == Some(POLICY_SID)
}

/// Whether `policy` holds setup's statement (by its Sid): the queue is setup's.
pub fn policy_is_ours(policy: Option<&str>) -> bool {
    statements(policy).iter().any(is_ours)
}

/// Whether `policy` holds setup's statement exactly as it should be for these ARNs.
fn policy_current(policy: Option<&str>, queue_arn: &str, rule_arn: &str) -> bool {
    let want = statement(queue_arn, rule_arn);
    statements(policy).contains(&want)
}

/// `existing` with setup's statement put in (replacing an older one of the same Sid), the
/// other statements kept. An existing policy that is not JSON is refused, not overwritten.
pub fn policy_with(
    existing: Option<&str>,
    queue_arn: &str,
    rule_arn: &str,
) -> Result<String, String> {
    if let Some(p) = existing
        && serde_json::from_str::<serde_json::Value>(p).is_err()
    {
        return Err(format!(
            "the queue's policy is not JSON, so setup cannot add its statement without losing it: fix or remove it (aws sqs set-queue-attributes --queue-url … --attributes Policy=…); nothing changed after this. The policy begins {:?}",
            quotatop_model::clean_text(&p.chars().take(60).collect::<String>())
        ));
    }
    let mut kept: Vec<serde_json::Value> = statements(existing)
        .into_iter()
        .filter(|s| !is_ours(s))
        .collect();
    kept.push(statement(queue_arn, rule_arn));
    Ok(serde_json::json!({"Version": "2012-10-17", "Statement": kept}).to_string())
}

/// What exists now under setup's names.
#[derive(Debug, Clone, Default)]
pub struct Current {
    pub queue: Option<QueueState>,
    pub rule: Option<RuleState>,
    pub targets: Vec<RuleTarget>,
}

impl Current {
    /// Setup's target of the rule, if there is one.
    pub fn our_target(&self) -> Option<&RuleTarget> {
        self.targets.iter().find(|t| t.id == TARGET_ID)
    }

    /// Whether the rule is setup's (by its description).
    pub fn rule_is_ours(&self) -> bool {
        self.rule
            .as_ref()
            .is_some_and(|r| r.description.as_deref() == Some(RULE_MARKER))
    }

    /// Whether the rule is there, enabled, with setup's pattern.
    pub fn rule_current(&self) -> bool {
        self.rule
            .as_ref()
            .is_some_and(|r| r.enabled && same_pattern(r.pattern.as_deref()))
    }

    /// Whether the queue's policy lets the rule send, as setup writes it.
    pub fn policy_current(&self) -> bool {
        match (&self.queue, &self.rule) {
            (Some(q), Some(r)) => policy_current(q.policy.as_deref(), &q.arn, &r.arn),
            _ => false,
        }
    }

    /// Whether setup's target delivers to the queue.
    pub fn target_current(&self) -> bool {
        match (&self.queue, self.our_target()) {
            (Some(q), Some(t)) => t.arn == q.arn,
            _ => false,
        }
    }
}

/// One call of `setup` or `teardown`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    CreateQueue,
    PutRule,
    SetQueuePolicy,
    PutTarget,
    RemoveTarget,
    DeleteRule,
    DeleteQueue,
}

impl Step {
    /// The step in the plan's words, for queue `queue` and rule `rule`.
    pub fn describe(self, queue: &str, rule: &str) -> String {
        match self {
            Step::CreateQueue => format!("CreateQueue         SQS queue {queue}"),
            Step::PutRule => format!(
                "PutRule             EventBridge rule {rule} on the default bus: source aws.batch, detail types {}",
                DETAIL_TYPES.join(", ")
            ),
            Step::SetQueuePolicy => format!(
                "SetQueueAttributes  queue {queue}'s policy: events.amazonaws.com may send from rule {rule} (statement {POLICY_SID}; other statements kept)"
            ),
            Step::PutTarget => {
                format!(
                    "PutTargets          rule {rule} delivers to queue {queue} (target {TARGET_ID})"
                )
            }
            Step::RemoveTarget => format!("RemoveTargets       target {TARGET_ID} of rule {rule}"),
            Step::DeleteRule => format!("DeleteRule          rule {rule}"),
            Step::DeleteQueue => {
                format!("DeleteQueue         SQS queue {queue} and the messages it holds")
            }
        }
    }
}

/// Setup's calls, in order, from `cur`: only what is missing or different.
pub fn setup_steps(cur: &Current) -> Vec<Step> {
    let mut steps = Vec::new();
    if cur.queue.is_none() {
        steps.push(Step::CreateQueue);
    }
    if !cur.rule_current() {
        steps.push(Step::PutRule);
    }
    if !cur.policy_current() {
        steps.push(Step::SetQueuePolicy);
    }
    if !cur.target_current() {
        steps.push(Step::PutTarget);
    }
    steps
}

/// Teardown's calls from `cur`, and what it leaves because setup did not make it.
pub fn teardown_steps(cur: &Current, queue: &str, rule: &str) -> (Vec<Step>, Vec<String>) {
    let mut steps = Vec::new();
    let mut left = Vec::new();
    if cur.our_target().is_some() {
        steps.push(Step::RemoveTarget);
    }
    if cur.rule.is_some() {
        let others = cur.targets.iter().filter(|t| t.id != TARGET_ID).count();
        if !cur.rule_is_ours() {
            left.push(format!(
                "rule {rule} was not made by events setup (its description is not {RULE_MARKER:?}): left as it is"
            ));
        } else if others > 0 {
            left.push(format!(
                "rule {rule} has {others} other target(s): left, with them; remove them first (aws events list-targets-by-rule --rule {rule})"
            ));
        } else {
            steps.push(Step::DeleteRule);
        }
    }
    if let Some(q) = &cur.queue {
        if policy_is_ours(q.policy.as_deref()) {
            steps.push(Step::DeleteQueue);
        } else {
            left.push(format!(
                "queue {queue} was not made by events setup (its policy has no {POLICY_SID} statement): left as it is"
            ));
        }
    }
    (steps, left)
}

#[cfg(test)]
mod tests {
    use super::*;

    const Q: &str = "arn:aws:sqs:us-east-1:123456789012:ev";
    const R: &str = "arn:aws:events:us-east-1:123456789012:rule/quotatop-ev";

    fn done() -> Current {
        Current {
            queue: Some(QueueState {
                url: "u".into(),
                arn: Q.into(),
                policy: Some(policy_with(None, Q, R).unwrap()),
                ..QueueState::default()
            }),
            rule: Some(RuleState {
                name: "quotatop-ev".into(),
                arn: R.into(),
                pattern: Some(pattern()),
                enabled: true,
                description: Some(RULE_MARKER.into()),
            }),
            targets: vec![RuleTarget {
                id: TARGET_ID.into(),
                arn: Q.into(),
            }],
        }
    }

    #[test]
    fn nothing_exists_means_every_call_and_all_exist_means_none() {
        assert_eq!(
            setup_steps(&Current::default()),
            [
                Step::CreateQueue,
                Step::PutRule,
                Step::SetQueuePolicy,
                Step::PutTarget
            ]
        );
        assert!(setup_steps(&done()).is_empty());
    }

    #[test]
    fn a_disabled_rule_or_another_pattern_is_put_again() {
        let mut c = done();
        c.rule.as_mut().unwrap().enabled = false;
        assert_eq!(setup_steps(&c), [Step::PutRule]);
        let mut c = done();
        c.rule.as_mut().unwrap().pattern = Some(r#"{"source":["aws.batch"]}"#.into());
        assert_eq!(setup_steps(&c), [Step::PutRule]);
    }

    #[test]
    fn a_lost_statement_or_a_target_elsewhere_is_put_back_alone() {
        let mut c = done();
        c.queue.as_mut().unwrap().policy = None;
        assert_eq!(setup_steps(&c), [Step::SetQueuePolicy]);
        let mut c = done();
        let other = policy_with(None, Q, "arn:aws:events:us-east-1:123456789012:rule/other");
        c.queue.as_mut().unwrap().policy = Some(other.unwrap());
        assert_eq!(setup_steps(&c), [Step::SetQueuePolicy]);
        let mut c = done();
        c.targets[0].arn = "arn:aws:sqs:us-east-1:123456789012:elsewhere".into();
        assert_eq!(setup_steps(&c), [Step::PutTarget]);
    }

    #[test]
    fn the_policy_keeps_other_statements_and_replaces_its_own() {
        let other = r#"{"Version":"2012-10-17","Statement":[{"Sid":"theirs","Effect":"Allow","Principal":"*","Action":"sqs:ReceiveMessage","Resource":"*"},{"Sid":"quotatop-events","Effect":"Allow"}]}"#;
        let p = policy_with(Some(other), Q, R).unwrap();
        let s = statements(Some(&p));
        assert_eq!(s.len(), 2);
        assert_eq!(s[0]["Sid"], "theirs");
        assert_eq!(s[1], statement(Q, R));
        assert!(policy_with(Some("not json"), Q, R).is_err());
    }

    #[test]
    fn teardown_removes_only_what_setup_made() {
        let (steps, left) = teardown_steps(&done(), "ev", "quotatop-ev");
        assert_eq!(
            steps,
            [Step::RemoveTarget, Step::DeleteRule, Step::DeleteQueue]
        );
        assert!(left.is_empty());
        let mut c = done();
        c.rule.as_mut().unwrap().description = None;
        c.queue.as_mut().unwrap().policy = None;
        let (steps, left) = teardown_steps(&c, "ev", "quotatop-ev");
        assert_eq!(steps, [Step::RemoveTarget]);
        assert_eq!(left.len(), 2);
        assert!(teardown_steps(&Current::default(), "ev", "r").0.is_empty());
    }

    #[test]
    fn queue_names_are_checked_before_any_call() {
        assert_eq!(rule_name("ev-1_a").unwrap(), "quotatop-ev-1_a");
        assert!(rule_name("").is_err());
        assert!(rule_name("a.fifo").is_err());
        assert!(rule_name("x\u{1b}[2J").is_err());
        assert!(rule_name(&"a".repeat(56)).is_err());
        assert!(rule_name(&"a".repeat(55)).is_ok());
    }
}
