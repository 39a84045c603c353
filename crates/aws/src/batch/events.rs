//! Batch's event stream: the SQS queue and the EventBridge rule that deliver it
//! (`aws-sdk-sqs`, `aws-sdk-eventbridge`), what `events setup|status|teardown` read and write.
//! Only domain types leave this module; every failure is a [`BatchError`] naming its call.

use std::time::Duration;

use aws_sdk_batch::config::Region;
use aws_sdk_batch::config::retry::RetryConfig;
use aws_sdk_batch::config::timeout::TimeoutConfig;
use aws_sdk_sqs::types::QueueAttributeName;

use super::error::classify;
use super::{BatchClient, BatchError, Op, WireStats};

/// The longest ReceiveMessage long poll SQS allows, in seconds.
pub const LONGEST_POLL_S: i32 = 20;

/// The SQS and EventBridge clients of a connection: standard retries, and an attempt timeout
/// longer than the longest long poll.
pub(super) fn clients(
    shared: &aws_config::SdkConfig,
    region: &Region,
    stats: &WireStats,
) -> (aws_sdk_sqs::Client, aws_sdk_eventbridge::Client) {
    let timeouts = TimeoutConfig::builder()
        .connect_timeout(Duration::from_secs(3))
        .operation_attempt_timeout(Duration::from_secs(LONGEST_POLL_S as u64 + 10))
        .operation_timeout(Duration::from_secs(60))
        .build();
    let sqs = aws_sdk_sqs::config::Builder::from(shared)
        .region(region.clone())
        .timeout_config(timeouts.clone())
        .retry_config(RetryConfig::standard())
        .interceptor(super::stats::StatsInterceptor(stats.clone()))
        .build();
    let events = aws_sdk_eventbridge::config::Builder::from(shared)
        .region(region.clone())
        .timeout_config(timeouts)
        .retry_config(RetryConfig::standard())
        .interceptor(super::stats::StatsInterceptor(stats.clone()))
        .build();
    (
        aws_sdk_sqs::Client::from_conf(sqs),
        aws_sdk_eventbridge::Client::from_conf(events),
    )
}

/// An SQS queue as GetQueueAttributes shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueueState {
    pub url: String,
    pub arn: String,
    /// Messages waiting (ApproximateNumberOfMessages).
    pub visible: u64,
    /// Messages received and not yet deleted (ApproximateNumberOfMessagesNotVisible).
    pub in_flight: u64,
    /// The queue's access policy (JSON), if any.
    pub policy: Option<String>,
}

/// An EventBridge rule on the default bus, as DescribeRule shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuleState {
    pub name: String,
    pub arn: String,
    pub pattern: Option<String>,
    pub enabled: bool,
    pub description: Option<String>,
}

/// One target of a rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleTarget {
    pub id: String,
    pub arn: String,
}

/// A message taken from a queue: its body, and the receipt that deletes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueMessage {
    pub message_id: String,
    pub receipt: String,
    pub body: String,
}

fn not_found<E>(e: &aws_sdk_sqs::error::SdkError<E>, is: impl Fn(&E) -> bool) -> bool {
    e.as_service_error().is_some_and(is)
}

impl BatchClient {
    /// GetQueueUrl: the URL of queue `name`, `None` when there is no such queue.
    pub async fn queue_url(&self, name: &str) -> Result<Option<String>, BatchError> {
        const OP: Op = Op::GetQueueUrl;
        match self.sqs.get_queue_url().queue_name(name).send().await {
            Ok(out) => out
                .queue_url()
                .map(|u| Some(u.to_string()))
                .ok_or_else(|| BatchError::missing(OP, "QueueUrl")),
            Err(e) if not_found(&e, |s| s.is_queue_does_not_exist()) => Ok(None),
            Err(e) => Err(classify(OP, e, self.endpoint())),
        }
    }

    /// CreateQueue (idempotent for the same attributes): the queue's URL.
    pub async fn create_queue(&self, name: &str) -> Result<String, BatchError> {
        const OP: Op = Op::CreateQueue;
        let out = self
            .sqs
            .create_queue()
            .queue_name(name)
            .send()
            .await
            .map_err(|e| classify(OP, e, self.endpoint()))?;
        out.queue_url()
            .map(str::to_string)
            .ok_or_else(|| BatchError::missing(OP, "QueueUrl"))
    }

    /// GetQueueAttributes (All) of the queue at `url`.
    pub async fn queue_state(&self, url: &str) -> Result<QueueState, BatchError> {
        const OP: Op = Op::GetQueueAttributes;
        let out = self
            .sqs
            .get_queue_attributes()
            .queue_url(url)
            .attribute_names(QueueAttributeName::All)
            .send()
            .await
            .map_err(|e| classify(OP, e, self.endpoint()))?;
        let attrs = out.attributes();
        let get = |k: QueueAttributeName| attrs.and_then(|a| a.get(&k)).cloned();
        let count = |k: QueueAttributeName| get(k).and_then(|v| v.parse().ok()).unwrap_or(0);
        Ok(QueueState {
            url: url.to_string(),
            arn: get(QueueAttributeName::QueueArn)
                .ok_or_else(|| BatchError::missing(OP, "QueueArn"))?,
            visible: count(QueueAttributeName::ApproximateNumberOfMessages),
            in_flight: count(QueueAttributeName::ApproximateNumberOfMessagesNotVisible),
            policy: get(QueueAttributeName::Policy).filter(|p| !p.trim().is_empty()),
        })
    }

    /// SetQueueAttributes: the queue's access policy.
    pub async fn set_queue_policy(&self, url: &str, policy: &str) -> Result<(), BatchError> {
        const OP: Op = Op::SetQueueAttributes;
        self.sqs
            .set_queue_attributes()
            .queue_url(url)
            .attributes(QueueAttributeName::Policy, policy)
            .send()
            .await
            .map_err(|e| classify(OP, e, self.endpoint()))?;
        Ok(())
    }

    /// DeleteQueue, with the messages it holds.
    pub async fn delete_queue(&self, url: &str) -> Result<(), BatchError> {
        const OP: Op = Op::DeleteQueue;
        self.sqs
            .delete_queue()
            .queue_url(url)
            .send()
            .await
            .map_err(|e| classify(OP, e, self.endpoint()))?;
        Ok(())
    }

    /// ReceiveMessage: up to 10 messages, waiting up to `wait_s` seconds for one (long
    /// polling), each hidden from other receivers for `visibility_s` seconds (0: not hidden,
    /// a look without taking).
    pub async fn receive_messages(
        &self,
        url: &str,
        wait_s: i32,
        visibility_s: i32,
    ) -> Result<Vec<QueueMessage>, BatchError> {
        const OP: Op = Op::ReceiveMessage;
        let out = self
            .sqs
            .receive_message()
            .queue_url(url)
            .max_number_of_messages(10)
            .wait_time_seconds(wait_s.clamp(0, LONGEST_POLL_S))
            .visibility_timeout(visibility_s)
            .send()
            .await
            .map_err(|e| classify(OP, e, self.endpoint()))?;
        Ok(out
            .messages()
            .iter()
            .filter_map(|m| {
                Some(QueueMessage {
                    message_id: m.message_id()?.to_string(),
                    receipt: m.receipt_handle()?.to_string(),
                    body: m.body().unwrap_or_default().to_string(),
                })
            })
            .collect())
    }

    /// DeleteMessage: the message received with `receipt` is gone for good.
    pub async fn delete_message(&self, url: &str, receipt: &str) -> Result<(), BatchError> {
        const OP: Op = Op::DeleteMessage;
        self.sqs
            .delete_message()
            .queue_url(url)
            .receipt_handle(receipt)
            .send()
            .await
            .map_err(|e| classify(OP, e, self.endpoint()))?;
        Ok(())
    }

    /// DescribeRule on the default bus: `None` when there is no rule of that name.
    pub async fn describe_rule(&self, name: &str) -> Result<Option<RuleState>, BatchError> {
        const OP: Op = Op::DescribeRule;
        match self.events.describe_rule().name(name).send().await {
            Ok(out) => Ok(Some(RuleState {
                name: out.name().unwrap_or(name).to_string(),
                arn: out
                    .arn()
                    .map(str::to_string)
                    .ok_or_else(|| BatchError::missing(OP, "Arn"))?,
                pattern: out.event_pattern().map(str::to_string),
                enabled: out
                    .state()
                    .is_some_and(|s| *s == aws_sdk_eventbridge::types::RuleState::Enabled),
                description: out.description().map(str::to_string),
            })),
            Err(e) if not_found(&e, |s| s.is_resource_not_found_exception()) => Ok(None),
            Err(e) => Err(classify(OP, e, self.endpoint())),
        }
    }

    /// PutRule: rule `name` on the default bus, enabled, with `pattern`; its ARN.
    pub async fn put_rule(
        &self,
        name: &str,
        pattern: &str,
        description: &str,
    ) -> Result<String, BatchError> {
        const OP: Op = Op::PutRule;
        let out = self
            .events
            .put_rule()
            .name(name)
            .event_pattern(pattern)
            .state(aws_sdk_eventbridge::types::RuleState::Enabled)
            .description(description)
            .send()
            .await
            .map_err(|e| classify(OP, e, self.endpoint()))?;
        out.rule_arn()
            .map(str::to_string)
            .ok_or_else(|| BatchError::missing(OP, "RuleArn"))
    }

    /// ListTargetsByRule: every target of rule `name`.
    pub async fn rule_targets(&self, name: &str) -> Result<Vec<RuleTarget>, BatchError> {
        const OP: Op = Op::ListTargetsByRule;
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        let mut pager = super::Pager::new(OP);
        loop {
            let page = self
                .events
                .list_targets_by_rule()
                .rule(name)
                .set_next_token(token.clone())
                .send()
                .await
                .map_err(|e| classify(OP, e, self.endpoint()))?;
            out.extend(page.targets().iter().map(|t| RuleTarget {
                id: t.id().to_string(),
                arn: t.arn().to_string(),
            }));
            match pager.next(page.next_token(), &token, page.targets().len())? {
                Some(t) => token = Some(t),
                None => break,
            }
        }
        Ok(out)
    }

    /// PutTargets: target `id` of rule `rule` delivers to the SQS queue `queue_arn`.
    pub async fn put_queue_target(
        &self,
        rule: &str,
        id: &str,
        queue_arn: &str,
    ) -> Result<(), BatchError> {
        const OP: Op = Op::PutTargets;
        let target = aws_sdk_eventbridge::types::Target::builder()
            .id(id)
            .arn(queue_arn)
            .build()
            .map_err(|e| BatchError::Other {
                op: OP,
                message: e.to_string(),
            })?;
        let out = self
            .events
            .put_targets()
            .rule(rule)
            .targets(target)
            .send()
            .await
            .map_err(|e| classify(OP, e, self.endpoint()))?;
        refused_entries(
            OP,
            out.failed_entries().iter().map(|f| {
                (
                    f.error_code().unwrap_or(""),
                    f.error_message().unwrap_or(""),
                )
            }),
        )
    }

    /// RemoveTargets `ids` of rule `rule`.
    pub async fn remove_targets(&self, rule: &str, ids: &[String]) -> Result<(), BatchError> {
        const OP: Op = Op::RemoveTargets;
        let out = self
            .events
            .remove_targets()
            .rule(rule)
            .set_ids(Some(ids.to_vec()))
            .send()
            .await
            .map_err(|e| classify(OP, e, self.endpoint()))?;
        refused_entries(
            OP,
            out.failed_entries().iter().map(|f| {
                (
                    f.error_code().unwrap_or(""),
                    f.error_message().unwrap_or(""),
                )
            }),
        )
    }

    /// DeleteRule `name` (it must have no targets left).
    pub async fn delete_rule(&self, name: &str) -> Result<(), BatchError> {
        const OP: Op = Op::DeleteRule;
        self.events
            .delete_rule()
            .name(name)
            .send()
            .await
            .map_err(|e| classify(OP, e, self.endpoint()))?;
        Ok(())
    }
}

/// PutTargets and RemoveTargets answer 200 with the entries they refused: an error when any.
fn refused_entries<'a>(
    op: Op,
    failed: impl Iterator<Item = (&'a str, &'a str)>,
) -> Result<(), BatchError> {
    let refused: Vec<String> = failed
        .map(|(code, message)| quotatop_model::clean_text(&format!("{code}: {message}")))
        .collect();
    if refused.is_empty() {
        Ok(())
    } else {
        Err(BatchError::Other {
            op,
            message: format!("refused: {}", refused.join("; ")),
        })
    }
}
