//! A region's event plumbing, as EventBridge's default bus, SQS and CloudTrail's event history
//! hold it: rules and their targets, queues and their messages, and the record of the Batch
//! calls served. [`Bus::publish`] delivers an event to the SQS queues that are targets of every
//! enabled rule whose pattern matches it, when the queue's policy lets EventBridge send to it,
//! through the delivery faults ([`DeliveryFaults`]).
//!
//! Visibility, delays and long polls run on real time (as SQS's do), not the simulated clock;
//! the times in events and messages are the simulated clock's.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use serde_json::Value;

use quotatop_engine::Rng;
use quotatop_model::Millis;

use super::faults::DeliveryFaults;

/// Messages one queue holds at most; beyond it the oldest is dropped (and counted).
pub const MAX_MESSAGES: usize = 100_000;
/// Bytes of message bodies a region's queues hold at most together; beyond it the sending
/// queue's oldest messages are dropped (and counted), so deliveries cannot grow the emulator
/// without bound.
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;
/// CloudTrail records kept per region (the newest).
pub const MAX_TRAIL: usize = 10_000;
/// Bytes of CloudTrail records a region keeps at most (a SubmitServiceJob's record carries its
/// request, up to 30 KiB).
pub const MAX_TRAIL_BYTES: usize = 16 * 1024 * 1024;
/// How much later (real time) a reordered delivery becomes visible than it would have: the
/// deliveries of the next second overtake it.
pub const REORDER_HOLD: Duration = Duration::from_secs(1);

/// An EventBridge rule on the default bus.
#[derive(Debug, Clone)]
pub struct Rule {
    pub name: String,
    pub arn: String,
    pub pattern: Value,
    pub pattern_text: String,
    pub enabled: bool,
    pub description: Option<String>,
    pub targets: Vec<Target>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub id: String,
    pub arn: String,
    /// A constant JSON text delivered instead of the event.
    pub input: Option<String>,
}

/// A message of an SQS queue.
#[derive(Debug, Clone)]
pub struct Message {
    pub seq: u64,
    pub id: String,
    pub body: String,
    /// Simulated time it was sent.
    pub sent_at: Millis,
    /// Real time from which a receive may return it.
    pub visible_at: Instant,
    pub receives: u32,
    pub first_received: Option<Millis>,
    /// The receipt handle of its latest receive, while received.
    pub receipt: Option<String>,
}

/// A standard SQS queue.
#[derive(Debug, Clone)]
pub struct SqsQueue {
    pub name: String,
    pub arn: String,
    /// The attributes set by CreateQueue and SetQueueAttributes.
    pub attributes: BTreeMap<String, String>,
    pub created: Millis,
    pub modified: Millis,
    pub messages: VecDeque<Message>,
}

impl SqsQueue {
    /// An attribute as a number of seconds (its default when unset).
    pub fn seconds(&self, name: &str, default: u64) -> u64 {
        self.attributes
            .get(name)
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    }
}

/// What happened to deliveries, over the emulator's life.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeliveryStats {
    /// Messages put on a queue (a duplicate counts twice).
    pub delivered: u64,
    /// Deliveries the drop fault lost.
    pub dropped: u64,
    /// Deliveries the duplicate fault sent twice.
    pub duplicated: u64,
    /// Deliveries the reorder fault held back.
    pub reordered: u64,
    /// Deliveries the delay fault held back.
    pub delayed: u64,
    /// Deliveries refused because the queue's policy does not let EventBridge send to it.
    pub refused_by_policy: u64,
    /// Messages dropped because their queue was full ([`MAX_MESSAGES`]) or the region's queues
    /// held [`MAX_MESSAGE_BYTES`].
    pub overflowed: u64,
}

impl DeliveryStats {
    pub fn add(&mut self, o: &Self) {
        self.delivered += o.delivered;
        self.dropped += o.dropped;
        self.duplicated += o.duplicated;
        self.reordered += o.reordered;
        self.delayed += o.delayed;
        self.refused_by_policy += o.refused_by_policy;
        self.overflowed += o.overflowed;
    }
}

pub struct Bus {
    pub rules: Vec<Rule>,
    pub queues: Vec<SqsQueue>,
    /// CloudTrail records of the calls served, oldest first (at most [`MAX_TRAIL`] and
    /// [`MAX_TRAIL_BYTES`]).
    pub trail: VecDeque<Value>,
    /// The size of each record of `trail`, and their sum.
    trail_sizes: VecDeque<usize>,
    trail_bytes: usize,
    /// The bytes of every queue's message bodies.
    message_bytes: usize,
    pub faults: DeliveryFaults,
    pub stats: DeliveryStats,
    /// The base of queue URLs (`http://127.0.0.1:<port>`).
    pub endpoint: String,
    ids: Rng,
    draws: Rng,
    seq: u64,
}

impl Bus {
    pub fn new(id_seed: u64) -> Self {
        Self {
            rules: Vec::new(),
            queues: Vec::new(),
            trail: VecDeque::new(),
            trail_sizes: VecDeque::new(),
            trail_bytes: 0,
            message_bytes: 0,
            faults: DeliveryFaults::default(),
            stats: DeliveryStats::default(),
            endpoint: String::new(),
            ids: Rng::new(id_seed ^ 0x6576_656e_7473),
            draws: Rng::new(0),
            seq: 0,
        }
    }

    /// Takes the emulator's endpoint and delivery faults (the faults' draws start again from
    /// the spec's seed when they change).
    pub fn configure(&mut self, endpoint: &str, faults: DeliveryFaults) {
        if self.endpoint != endpoint {
            self.endpoint = endpoint.to_string();
        }
        if faults != self.faults {
            self.draws = Rng::new(faults.seed ^ 0x0064_656c_6976_6572);
            self.faults = faults;
        }
    }

    /// A fresh id (events, messages, receipts, CloudTrail records).
    pub fn id(&mut self) -> String {
        self.ids.uuid()
    }

    /// Whether any enabled rule could take an event: events are built only then.
    pub fn listening(&self) -> bool {
        self.rules
            .iter()
            .any(|r| r.enabled && !r.targets.is_empty())
    }

    pub fn queue_index(&self, name: &str) -> Option<usize> {
        self.queues.iter().position(|q| q.name == name)
    }

    /// Gives `event` an id and delivers it to the targets of every enabled rule it matches.
    pub fn publish(&mut self, mut event: Value, now: Millis) {
        event["id"] = Value::String(self.id());
        let text = event.to_string();
        let mut sends: Vec<(usize, String)> = Vec::new();
        for rule in self.rules.iter().filter(|r| r.enabled) {
            if !matches(&rule.pattern, &event) {
                continue;
            }
            for target in &rule.targets {
                let Some(qi) = self.queues.iter().position(|q| q.arn == target.arn) else {
                    continue;
                };
                let q = &self.queues[qi];
                if !policy_allows(q.attributes.get("Policy"), &q.arn, &rule.arn) {
                    self.stats.refused_by_policy += 1;
                    continue;
                }
                sends.push((qi, target.input.clone().unwrap_or_else(|| text.clone())));
            }
        }
        for (qi, body) in sends {
            self.deliver(qi, body, now);
        }
    }

    /// Puts `body` on queue `qi`, through the delivery faults (each drawn on every delivery,
    /// in this order: drop, reorder, duplicate).
    fn deliver(&mut self, qi: usize, body: String, now: Millis) {
        let f = self.faults;
        let (drop, reorder, duplicate) = (
            self.draws.unit() < f.drop,
            self.draws.unit() < f.reorder,
            self.draws.unit() < f.duplicate,
        );
        if drop {
            self.stats.dropped += 1;
            return;
        }
        let Some(q) = self.queues.get(qi) else { return };
        let mut at = Instant::now() + Duration::from_secs(q.seconds("DelaySeconds", 0));
        if f.delay_ms > 0 {
            at += Duration::from_millis(f.delay_ms);
            self.stats.delayed += 1;
        }
        if reorder {
            at += REORDER_HOLD;
            self.stats.reordered += 1;
        }
        if duplicate {
            self.stats.duplicated += 1;
        }
        for _ in 0..if duplicate { 2 } else { 1 } {
            self.send(qi, body.clone(), now, at);
        }
    }

    /// Appends a message to queue `qi`, visible from `at`.
    pub fn send(&mut self, qi: usize, body: String, now: Millis, at: Instant) {
        self.seq += 1;
        let id = self.id();
        let Some(q) = self.queues.get_mut(qi) else {
            return;
        };
        while q.messages.len() >= MAX_MESSAGES
            || self.message_bytes + body.len() > MAX_MESSAGE_BYTES
        {
            let Some(old) = q.messages.pop_front() else {
                // The other queues hold the bytes: this message is the one dropped.
                self.stats.overflowed += 1;
                return;
            };
            self.message_bytes -= old.body.len();
            self.stats.overflowed += 1;
        }
        self.message_bytes += body.len();
        q.messages.push_back(Message {
            seq: self.seq,
            id,
            body,
            sent_at: now,
            visible_at: at,
            receives: 0,
            first_received: None,
            receipt: None,
        });
        self.stats.delivered += 1;
    }

    /// Removes message `i` of queue `qi`.
    pub fn remove_message(&mut self, qi: usize, i: usize) {
        if let Some(m) = self.queues.get_mut(qi).and_then(|q| q.messages.remove(i)) {
            self.message_bytes -= m.body.len();
        }
    }

    /// Removes queue `qi` and its messages.
    pub fn remove_queue(&mut self, qi: usize) {
        if qi < self.queues.len() {
            let q = self.queues.remove(qi);
            self.message_bytes -= q.messages.iter().map(|m| m.body.len()).sum::<usize>();
        }
    }

    /// Keeps a CloudTrail record (the oldest forgotten beyond [`MAX_TRAIL`] records or
    /// [`MAX_TRAIL_BYTES`]).
    pub fn record(&mut self, record: Value) {
        let size = record.to_string().len();
        while !self.trail.is_empty()
            && (self.trail.len() >= MAX_TRAIL || self.trail_bytes + size > MAX_TRAIL_BYTES)
        {
            self.trail.pop_front();
            self.trail_bytes -= self.trail_sizes.pop_front().unwrap_or(0);
        }
        self.trail.push_back(record);
        self.trail_sizes.push_back(size);
        self.trail_bytes += size;
    }
}

/// Whether `event` matches an EventBridge event pattern ([`check_pattern`]'s subset): every
/// field of the pattern matches, a nested object field by field, a list when any of its values
/// does (an array in the event when any element does).
pub fn matches(pattern: &Value, event: &Value) -> bool {
    let Value::Object(fields) = pattern else {
        return false;
    };
    fields.iter().all(|(key, want)| {
        let got = event.get(key);
        match want {
            Value::Object(_) => got.is_some_and(|g| matches(want, g)),
            Value::Array(options) => options.iter().any(|o| value_matches(o, got)),
            _ => false,
        }
    })
}

fn value_matches(option: &Value, got: Option<&Value>) -> bool {
    if let Value::Object(m) = option {
        return match m.iter().next() {
            Some((k, Value::Bool(b))) if k == "exists" => got.is_some() == *b,
            Some((k, Value::String(p))) if k == "prefix" => any_of(got, |v| {
                v.as_str().is_some_and(|s| s.starts_with(p.as_str()))
            }),
            Some((k, but)) if k == "anything-but" => {
                let excluded = |v: &Value| match but {
                    Value::Array(list) => list.contains(v),
                    one => one == v,
                };
                got.is_some() && !any_of(got, excluded)
            }
            _ => false,
        };
    }
    any_of(got, |v| v == option)
}

/// Whether `got` (or, when it is an array, any of its elements) passes `test`.
fn any_of(got: Option<&Value>, test: impl Fn(&Value) -> bool) -> bool {
    match got {
        Some(Value::Array(items)) => items.iter().any(&test),
        Some(v) => test(v),
        None => false,
    }
}

/// Checks an event pattern is in the subset [`matches`] understands: an object whose fields are
/// objects (nested) or non-empty lists of literal values and `{"prefix": "…"}`,
/// `{"exists": bool}` or `{"anything-but": value or [values]}` matchers.
pub fn check_pattern(pattern: &Value) -> Result<(), String> {
    let Value::Object(fields) = pattern else {
        return Err("Event pattern is not a JSON object".into());
    };
    if fields.is_empty() {
        return Err("Event pattern must not be empty".into());
    }
    for (key, value) in fields {
        match value {
            Value::Object(_) => check_pattern(value)?,
            Value::Array(options) if !options.is_empty() => {
                for o in options {
                    check_option(key, o)?;
                }
            }
            _ => {
                return Err(format!(
                    "Event pattern field {key:?} must be an object or a non-empty list"
                ));
            }
        }
    }
    Ok(())
}

fn check_option(key: &str, option: &Value) -> Result<(), String> {
    let Value::Object(m) = option else {
        return Ok(());
    };
    let ok = m.len() == 1
        && match m.iter().next() {
            Some((k, Value::String(_))) if k == "prefix" => true,
            Some((k, Value::Bool(_))) if k == "exists" => true,
            Some((k, v)) if k == "anything-but" => match v {
                Value::Array(list) => list.iter().all(|v| !v.is_object() && !v.is_array()),
                v => !v.is_object(),
            },
            _ => false,
        };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "Event pattern field {key:?}: the emulator matches literal values and the prefix, exists and anything-but matchers only"
        ))
    }
}

/// Whether the queue's access policy lets EventBridge (`events.amazonaws.com`) send the rule's
/// events: a statement allowing `sqs:SendMessage` (or `sqs:*`) to that principal, on the queue
/// (or `*`), whose conditions, if any, are `aws:SourceArn` (ArnEquals/ArnLike/StringEquals/
/// StringLike) naming the rule and `aws:SourceAccount` naming its account. A queue without a
/// policy refuses, as SQS does for another service.
pub fn policy_allows(policy: Option<&String>, queue_arn: &str, rule_arn: &str) -> bool {
    let Some(policy) = policy.and_then(|p| serde_json::from_str::<Value>(p).ok()) else {
        return false;
    };
    let statements = match &policy["Statement"] {
        Value::Array(list) => list.clone(),
        one @ Value::Object(_) => vec![one.clone()],
        _ => return false,
    };
    let account = rule_arn.split(':').nth(4).unwrap_or("");
    statements.iter().any(|s| {
        s["Effect"] == "Allow"
            && names(&s["Principal"]["Service"]).contains(&"events.amazonaws.com")
            && names(&s["Action"])
                .iter()
                .any(|a| matches!(*a, "sqs:SendMessage" | "sqs:*" | "*"))
            && (s.get("Resource").is_none()
                || names(&s["Resource"]).iter().any(|r| glob(r, queue_arn)))
            && conditions_hold(s.get("Condition"), rule_arn, account)
    })
}

fn conditions_hold(condition: Option<&Value>, rule_arn: &str, account: &str) -> bool {
    let Some(Value::Object(ops)) = condition else {
        return condition.is_none();
    };
    ops.iter().all(|(op, keys)| {
        let Value::Object(keys) = keys else {
            return false;
        };
        keys.iter().all(|(key, want)| {
            let (like, value) = match (op.as_str(), key.as_str()) {
                ("ArnEquals" | "StringEquals", "aws:SourceArn") => (false, rule_arn),
                ("ArnLike" | "StringLike", "aws:SourceArn") => (true, rule_arn),
                ("StringEquals", "aws:SourceAccount") => (false, account),
                _ => return false,
            };
            names(want)
                .iter()
                .any(|w| if like { glob(w, value) } else { *w == value })
        })
    })
}

/// A policy value's strings: one string or a list of them.
fn names(v: &Value) -> Vec<&str> {
    match v {
        Value::String(s) => vec![s.as_str()],
        Value::Array(list) => list.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// IAM's `*` wildcard (any run of characters).
fn glob(pattern: &str, s: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == s,
        Some((head, rest)) => {
            s.starts_with(head)
                && (0..=s.len() - head.len())
                    .filter(|&i| s.is_char_boundary(head.len() + i))
                    .any(|i| glob(rest, &s[head.len() + i..]))
        }
    }
}

#[cfg(test)]
mod tests;
