//! CloudTrail's event history (`aws-sdk-cloudtrail`, `LookupEvents`): the last 90 days of
//! management calls, no trail needed. Read for Batch's calls (`EventSource` =
//! `batch.amazonaws.com`) where no trail delivers them as events, or where an event was
//! missed. Only domain types ([`ApiCall`]) leave this module.

use std::time::Duration;

use aws_sdk_batch::config::Region;
use aws_sdk_batch::config::retry::RetryConfig;
use aws_sdk_cloudtrail::types::{LookupAttribute, LookupAttributeKey};
use aws_smithy_types::DateTime;

use quotatop_model::{ApiCall, Millis};

use super::error::classify;
use super::{BatchClient, BatchError, Op, WireStats};

/// LookupEvents' largest page.
const PAGE: i32 = 50;
/// LookupEvents allows 2 calls a second per account and region: one page every 0.5 s.
const PACE: Duration = Duration::from_millis(500);

/// The CloudTrail client of a connection: standard retries.
pub(super) fn client(
    shared: &aws_config::SdkConfig,
    region: &Region,
    stats: &WireStats,
) -> aws_sdk_cloudtrail::Client {
    let conf = aws_sdk_cloudtrail::config::Builder::from(shared)
        .region(region.clone())
        .retry_config(RetryConfig::standard())
        .interceptor(super::stats::StatsInterceptor(stats.clone()))
        .build();
    aws_sdk_cloudtrail::Client::from_conf(conf)
}

/// What the event history held of Batch's calls in a time range.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrailCalls {
    /// Oldest first.
    pub calls: Vec<ApiCall>,
    /// Listed events whose `CloudTrailEvent` was not a Batch call record (left out).
    pub unreadable: usize,
    /// Whether `max_pages` ran out before the history did (older calls not read).
    pub truncated: bool,
}

impl BatchClient {
    /// LookupEvents of Batch's calls from `since` (ms) to now, newest pages first, at most
    /// `max_pages` pages of 50, paced at CloudTrail's 2 calls a second.
    pub async fn batch_calls(
        &self,
        since: Millis,
        max_pages: usize,
    ) -> Result<TrailCalls, BatchError> {
        const OP: Op = Op::LookupEvents;
        let source = LookupAttribute::builder()
            .attribute_key(LookupAttributeKey::EventSource)
            .attribute_value("batch.amazonaws.com")
            .build()
            .map_err(|e| BatchError::Other {
                op: OP,
                message: e.to_string(),
            })?;
        let mut out = TrailCalls::default();
        let mut token: Option<String> = None;
        for page in 0..max_pages {
            if page > 0 {
                tokio::time::sleep(PACE).await;
            }
            let answer = self
                .trail
                .lookup_events()
                .lookup_attributes(source.clone())
                .start_time(DateTime::from_millis(since))
                .max_results(PAGE)
                .set_next_token(token.take())
                .send()
                .await
                .map_err(|e| classify(OP, e, self.endpoint()))?;
            for e in answer.events() {
                let call = e
                    .cloud_trail_event()
                    .and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok())
                    .and_then(|r| ApiCall::from_record(&r));
                match call {
                    Some(c) => out.calls.push(c),
                    None => out.unreadable += 1,
                }
            }
            token = answer.next_token().map(str::to_string);
            if token.is_none() {
                break;
            }
        }
        out.truncated = token.is_some();
        out.calls
            .sort_by(|a, b| (a.time, &a.event_id).cmp(&(b.time, &b.event_id)));
        Ok(out)
    }
}
