//! Amazon EventBridge on the emulator's endpoint (awsJson1_1: `POST /` with
//! `X-Amz-Target: AWSEvents.<Operation>`): rules on the default event bus (PutRule, DescribeRule,
//! ListRules, DeleteRule) and their targets (PutTargets, ListTargetsByRule, RemoveTargets).
//! Rules match the events the region publishes (`bus_events.rs`); SQS queues of the region are
//! the targets that receive them. Event patterns are the subset `bus::check_pattern` names;
//! schedule expressions and other buses are refused.

use serde::Deserialize;
use serde_json::{Value, json};

use super::account::Account;
use super::bus::{Rule, Target, check_pattern};
use super::error::ApiError;

/// Rules a region holds at most (AWS's default quota is 300 per bus).
const MAX_RULES: usize = 300;
/// Targets a rule holds at most (AWS: 5).
const MAX_TARGETS: usize = 5;
/// Largest page of ListRules and ListTargetsByRule.
const MAX_PAGE: usize = 100;

fn error(code: &'static str, message: impl Into<String>) -> ApiError {
    ApiError::Service {
        status: 400,
        code,
        message: message.into(),
    }
}

/// An error as EventBridge names it (a bad value is `ValidationException`, throttling
/// `ThrottlingException`, a server fault `InternalException`).
pub fn events_error(e: ApiError) -> ApiError {
    match e {
        ApiError::Client(m) => error("ValidationException", m),
        ApiError::Throttled => error("ThrottlingException", "Rate exceeded"),
        ApiError::Server(m) => ApiError::Service {
            status: 500,
            code: "InternalException",
            message: m,
        },
        other => other,
    }
}

fn parse<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    super::wire::parse(body).map_err(events_error)
}

fn required(v: Option<String>, name: &str) -> Result<String, ApiError> {
    v.ok_or_else(|| error("ValidationException", format!("{name} is required")))
}

/// Only the default bus (by name or ARN).
fn check_bus(account: &Account, bus: Option<&str>) -> Result<(), ApiError> {
    let default_arn = format!(
        "arn:aws:events:{}:{}:event-bus/default",
        account.base.region, account.base.account
    );
    match bus {
        None | Some("default") => Ok(()),
        Some(b) if b == default_arn => Ok(()),
        Some(b) => Err(error(
            "ResourceNotFoundException",
            format!(
                "Event bus {} does not exist (the emulator has the default bus only).",
                quotatop_model::clean(b)
            ),
        )),
    }
}

fn rule_index(account: &Account, name: &str) -> Result<usize, ApiError> {
    account
        .bus
        .rules
        .iter()
        .position(|r| r.name == name)
        .ok_or_else(|| {
            error(
                "ResourceNotFoundException",
                format!(
                    "Rule {} does not exist on EventBus default.",
                    quotatop_model::clean(name)
                ),
            )
        })
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct PutRule {
    name: Option<String>,
    schedule_expression: Option<String>,
    event_pattern: Option<String>,
    state: Option<String>,
    description: Option<String>,
    event_bus_name: Option<String>,
}

/// Creates the rule, or replaces the pattern, state and description of the one of that name
/// (keeping its targets), as PutRule does.
pub fn put_rule(account: &mut Account, body: &[u8]) -> Result<Value, ApiError> {
    let req: PutRule = parse(body)?;
    check_bus(account, req.event_bus_name.as_deref())?;
    let name = required(req.name, "Name")?;
    let valid = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if !valid {
        return Err(error(
            "ValidationException",
            "Name must be 1 to 64 letters, digits, '.', '-' or '_'",
        ));
    }
    if req.schedule_expression.is_some() {
        return Err(error(
            "ValidationException",
            "The emulator's rules match events; schedule expressions are not supported",
        ));
    }
    let text = required(req.event_pattern, "EventPattern")?;
    let pattern: Value = serde_json::from_str(&text).map_err(|e| {
        error(
            "InvalidEventPatternException",
            format!("Event pattern is not valid JSON: {e}"),
        )
    })?;
    check_pattern(&pattern).map_err(|m| error("InvalidEventPatternException", m))?;
    let enabled = match req.state.as_deref() {
        None | Some("ENABLED") => true,
        Some("DISABLED") => false,
        Some(other) => {
            return Err(error(
                "ValidationException",
                format!(
                    "State must be ENABLED or DISABLED, got {}",
                    quotatop_model::clean(other)
                ),
            ));
        }
    };
    let arn = format!(
        "arn:aws:events:{}:{}:rule/{name}",
        account.base.region, account.base.account
    );
    match account.bus.rules.iter_mut().find(|r| r.name == name) {
        Some(rule) => {
            rule.pattern = pattern;
            rule.pattern_text = text;
            rule.enabled = enabled;
            rule.description = req.description;
        }
        None => {
            if account.bus.rules.len() >= MAX_RULES {
                return Err(error(
                    "LimitExceededException",
                    format!("The emulator holds at most {MAX_RULES} rules per region"),
                ));
            }
            account.bus.rules.push(Rule {
                name,
                arn: arn.clone(),
                pattern,
                pattern_text: text,
                enabled,
                description: req.description,
                targets: Vec::new(),
            });
        }
    }
    Ok(json!({ "RuleArn": arn }))
}

fn rule_json(rule: &Rule) -> Value {
    let mut v = json!({
        "Name": rule.name,
        "Arn": rule.arn,
        "EventPattern": rule.pattern_text,
        "State": if rule.enabled { "ENABLED" } else { "DISABLED" },
        "EventBusName": "default",
    });
    if let Some(d) = &rule.description {
        v["Description"] = json!(d);
    }
    v
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ByName {
    name: Option<String>,
    rule: Option<String>,
    event_bus_name: Option<String>,
    name_prefix: Option<String>,
    next_token: Option<String>,
    limit: Option<i64>,
    ids: Option<Vec<String>>,
}

pub fn describe_rule(account: &mut Account, body: &[u8]) -> Result<Value, ApiError> {
    let req: ByName = parse(body)?;
    check_bus(account, req.event_bus_name.as_deref())?;
    let i = rule_index(account, &required(req.name, "Name")?)?;
    let mut v = rule_json(&account.bus.rules[i]);
    v["CreatedBy"] = json!(account.base.account);
    Ok(v)
}

/// A page of `items` from `token` (`i/<n>`), at most `limit` long: the page and the next token.
fn page<T: Clone>(
    items: &[T],
    token: Option<&str>,
    limit: Option<i64>,
) -> Result<(Vec<T>, Option<String>), ApiError> {
    let from = match token {
        None => 0,
        Some(t) => t
            .strip_prefix("i/")
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| error("ValidationException", "The NextToken is invalid."))?,
    };
    let take = match limit {
        None => MAX_PAGE,
        Some(n) if (1..=MAX_PAGE as i64).contains(&n) => n as usize,
        Some(n) => {
            return Err(error(
                "ValidationException",
                format!("Limit must be between 1 and {MAX_PAGE}, got {n}"),
            ));
        }
    };
    let out: Vec<T> = items.iter().skip(from).take(take).cloned().collect();
    let next = (from + take < items.len()).then(|| format!("i/{}", from + take));
    Ok((out, next))
}

pub fn list_rules(account: &mut Account, body: &[u8]) -> Result<Value, ApiError> {
    let req: ByName = parse(body)?;
    check_bus(account, req.event_bus_name.as_deref())?;
    let prefix = req.name_prefix.unwrap_or_default();
    let mut rules: Vec<Value> = account
        .bus
        .rules
        .iter()
        .filter(|r| r.name.starts_with(&prefix))
        .map(rule_json)
        .collect();
    rules.sort_by(|a, b| a["Name"].as_str().cmp(&b["Name"].as_str()));
    let (rules, next) = page(&rules, req.next_token.as_deref(), req.limit)?;
    let mut out = json!({ "Rules": rules });
    if let Some(t) = next {
        out["NextToken"] = json!(t);
    }
    Ok(out)
}

pub fn delete_rule(account: &mut Account, body: &[u8]) -> Result<Value, ApiError> {
    let req: ByName = parse(body)?;
    check_bus(account, req.event_bus_name.as_deref())?;
    let name = required(req.name, "Name")?;
    // Deleting a rule that does not exist succeeds, as EventBridge.
    if let Some(i) = account.bus.rules.iter().position(|r| r.name == name) {
        if !account.bus.rules[i].targets.is_empty() {
            return Err(error(
                "ValidationException",
                "Rule can't be deleted since it has targets.",
            ));
        }
        account.bus.rules.remove(i);
    }
    Ok(json!({}))
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct PutTargets {
    rule: Option<String>,
    event_bus_name: Option<String>,
    targets: Option<Vec<Value>>,
}

pub fn put_targets(account: &mut Account, body: &[u8]) -> Result<Value, ApiError> {
    let req: PutTargets = parse(body)?;
    check_bus(account, req.event_bus_name.as_deref())?;
    let i = rule_index(account, &required(req.rule, "Rule")?)?;
    let targets = req.targets.unwrap_or_default();
    if targets.is_empty() || targets.len() > 10 {
        return Err(error(
            "ValidationException",
            "Targets must have 1 to 10 entries",
        ));
    }
    let mut failed = Vec::new();
    for t in targets {
        let id = t["Id"].as_str().unwrap_or("").to_string();
        let arn = t["Arn"].as_str().unwrap_or("").to_string();
        if id.is_empty() || id.len() > 64 || !arn.starts_with("arn:") {
            return Err(error(
                "ValidationException",
                "Each target needs an Id (1 to 64 characters) and an Arn",
            ));
        }
        let unsupported = ["InputPath", "InputTransformer"]
            .iter()
            .find(|k| t.get(**k).is_some());
        if let Some(k) = unsupported {
            failed.push(json!({
                "TargetId": id, "ErrorCode": "ValidationException",
                "ErrorMessage": format!("The emulator delivers the event or a constant Input, not {k}"),
            }));
            continue;
        }
        let input = t["Input"].as_str().map(str::to_string);
        let rule = &mut account.bus.rules[i];
        let target = Target { id, arn, input };
        match rule.targets.iter().position(|x| x.id == target.id) {
            Some(k) => rule.targets[k] = target,
            None if rule.targets.len() >= MAX_TARGETS => failed.push(json!({
                "TargetId": target.id, "ErrorCode": "LimitExceededException",
                "ErrorMessage": format!("A rule has at most {MAX_TARGETS} targets"),
            })),
            None => rule.targets.push(target),
        }
    }
    Ok(json!({ "FailedEntryCount": failed.len(), "FailedEntries": failed }))
}

pub fn list_targets_by_rule(account: &mut Account, body: &[u8]) -> Result<Value, ApiError> {
    let req: ByName = parse(body)?;
    check_bus(account, req.event_bus_name.as_deref())?;
    let i = rule_index(account, &required(req.rule, "Rule")?)?;
    let targets: Vec<Value> = account.bus.rules[i]
        .targets
        .iter()
        .map(|t| {
            let mut v = json!({ "Id": t.id, "Arn": t.arn });
            if let Some(input) = &t.input {
                v["Input"] = json!(input);
            }
            v
        })
        .collect();
    let (targets, next) = page(&targets, req.next_token.as_deref(), req.limit)?;
    let mut out = json!({ "Targets": targets });
    if let Some(t) = next {
        out["NextToken"] = json!(t);
    }
    Ok(out)
}

pub fn remove_targets(account: &mut Account, body: &[u8]) -> Result<Value, ApiError> {
    let req: ByName = parse(body)?;
    check_bus(account, req.event_bus_name.as_deref())?;
    let i = rule_index(account, &required(req.rule, "Rule")?)?;
    let ids = req.ids.unwrap_or_default();
    if ids.is_empty() {
        return Err(error("ValidationException", "Ids must not be empty"));
    }
    account.bus.rules[i]
        .targets
        .retain(|t| !ids.contains(&t.id));
    Ok(json!({ "FailedEntryCount": 0, "FailedEntries": [] }))
}
