//! The training job behind each attempt: its CloudWatch Logs (`aws-sdk-cloudwatchlogs`) and its
//! checkpoint objects in S3 (`aws-sdk-s3`). Every call goes through [`BatchClient::read_with`]:
//! paced per operation by the same pacer, counted in the same wire statistics and retried the
//! same way as the Batch reads.

use quotatop_model::Millis;

use super::{BatchClient, BatchError, Op, Pager};

/// The log group SageMaker writes training jobs' logs to.
pub const TRAINING_LOG_GROUP: &str = "/aws/sagemaker/TrainingJobs";
/// Most events one FilterLogEvents/GetLogEvents page may hold (AWS: 10,000).
const EVENTS_PAGE: i32 = 10_000;
/// Most streams one DescribeLogStreams page may hold (AWS: 50).
const STREAMS_PAGE: i32 = 50;

/// The most of one log event's message kept (CloudWatch Logs allows 1 MiB an event; a larger
/// one from a stand-in would be copied whole into every row shown).
pub const MAX_EVENT_BYTES: usize = 256 * 1024;

/// An event's message, cut at [`MAX_EVENT_BYTES`] (on a character boundary) with how much was
/// left out.
pub fn bounded_message(m: &str) -> String {
    if m.len() <= MAX_EVENT_BYTES {
        return m.to_string();
    }
    let mut end = MAX_EVENT_BYTES;
    while !m.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} more bytes not shown)", &m[..end], m.len() - end)
}

/// One log event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    pub stream: String,
    pub time: Millis,
    /// As the service sent it: may hold control characters; clean it before showing it.
    pub message: String,
}

/// A log stream of the training-job log group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogStream {
    pub name: String,
    pub first_event: Option<Millis>,
    pub last_event: Option<Millis>,
}

/// Which events of the training-job log group to read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogQuery {
    /// Stream name prefix (a training job's name and `/`); `None`: every stream.
    pub stream_prefix: Option<String>,
    /// Events at or after this time.
    pub since: Option<Millis>,
    /// Events before this time.
    pub until: Option<Millis>,
    /// A CloudWatch filter pattern (terms, or a quoted phrase).
    pub pattern: Option<String>,
    /// Stop after this many events.
    pub max_events: usize,
}

/// Events read, and whether more were left unread (`max_events` reached).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogPage {
    pub lines: Vec<LogLine>,
    pub truncated: bool,
    /// Answers of this read that were not all UTF-8: their invalid bytes show as U+FFFD.
    pub not_utf8: usize,
}

/// An object under a checkpoint prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointObject {
    pub key: String,
    pub last_modified: Millis,
    pub size: u64,
}

/// A checkpoint listing and whether it stopped at its bound.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckpointListing {
    pub objects: Vec<CheckpointObject>,
    pub truncated: bool,
}

/// `s3://bucket/prefix` as `(bucket, prefix)`.
pub fn split_s3_uri(uri: &str) -> Option<(String, String)> {
    let rest = uri.trim().strip_prefix("s3://")?;
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    (!bucket.is_empty()).then(|| (bucket.to_string(), prefix.to_string()))
}

fn millis(t: &aws_sdk_s3::primitives::DateTime) -> Millis {
    t.to_millis().unwrap_or(0)
}

impl BatchClient {
    /// DescribeLogStreams of the training-job log group whose names start with `prefix`, at
    /// most `max` streams.
    pub async fn log_streams(
        &self,
        prefix: &str,
        max: usize,
    ) -> Result<Vec<LogStream>, BatchError> {
        const OP: Op = Op::DescribeLogStreams;
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        let mut pager = Pager::new(OP);
        loop {
            let page = self
                .read_with(OP, &self.logs, |c| {
                    c.describe_log_streams()
                        .log_group_name(TRAINING_LOG_GROUP)
                        .log_stream_name_prefix(prefix)
                        .limit(STREAMS_PAGE)
                        .set_next_token(token.clone())
                        .send()
                })
                .await?;
            out.extend(page.log_streams().iter().map(|s| LogStream {
                name: s.log_stream_name().unwrap_or_default().to_string(),
                first_event: s.first_event_timestamp(),
                last_event: s.last_event_timestamp(),
            }));
            if out.len() >= max {
                out.truncate(max);
                break;
            }
            match pager.next(page.next_token(), &token, page.log_streams().len())? {
                Some(t) => token = Some(t),
                None => break,
            }
        }
        Ok(out)
    }

    /// FilterLogEvents over the training-job log group, paginated to the end or to
    /// `query.max_events`.
    pub async fn log_events(&self, query: &LogQuery) -> Result<LogPage, BatchError> {
        const OP: Op = Op::FilterLogEvents;
        let mut out = LogPage::default();
        let not_utf8 = self.stats.not_utf8_answers();
        let mut token: Option<String> = None;
        let mut pager = Pager::new(OP);
        loop {
            let left = query.max_events.saturating_sub(out.lines.len());
            let page = self
                .read_with(OP, &self.logs, |c| {
                    c.filter_log_events()
                        .log_group_name(TRAINING_LOG_GROUP)
                        .set_log_stream_name_prefix(query.stream_prefix.clone())
                        .set_start_time(query.since)
                        .set_end_time(query.until)
                        .set_filter_pattern(query.pattern.clone())
                        .limit(EVENTS_PAGE.min(left.max(1) as i32))
                        .set_next_token(token.clone())
                        .send()
                })
                .await?;
            out.lines.extend(page.events().iter().map(|e| LogLine {
                stream: e.log_stream_name().unwrap_or_default().to_string(),
                time: e.timestamp().unwrap_or(0),
                message: bounded_message(e.message().unwrap_or_default()),
            }));
            let more = pager.next(page.next_token(), &token, page.events().len())?;
            if out.lines.len() >= query.max_events {
                out.truncated = more.is_some() || out.lines.len() > query.max_events;
                out.lines.truncate(query.max_events);
                break;
            }
            match more {
                Some(t) => token = Some(t),
                None => break,
            }
        }
        // Another read at the same time may be counted too: this says "some", not which.
        out.not_utf8 = self.stats.not_utf8_answers().saturating_sub(not_utf8);
        Ok(out)
    }

    /// GetLogEvents of one stream from `token` (a forward token of an earlier call; `None`: the
    /// start), at most `max` events: the events and the token to continue from (the same token
    /// back means nothing new yet).
    pub async fn stream_events(
        &self,
        stream: &str,
        token: Option<&str>,
        max: usize,
    ) -> Result<(Vec<LogLine>, Option<String>), BatchError> {
        let page = self
            .read_with(Op::GetLogEvents, &self.logs, |c| {
                c.get_log_events()
                    .log_group_name(TRAINING_LOG_GROUP)
                    .log_stream_name(stream)
                    .start_from_head(true)
                    .limit(EVENTS_PAGE.min(max.max(1) as i32))
                    .set_next_token(token.map(str::to_string))
                    .send()
            })
            .await?;
        let lines = page
            .events()
            .iter()
            .map(|e| LogLine {
                stream: stream.to_string(),
                time: e.timestamp().unwrap_or(0),
                message: bounded_message(e.message().unwrap_or_default()),
            })
            .collect();
        Ok((lines, page.next_forward_token().map(str::to_string)))
    }

    /// ListObjectsV2 under `s3://bucket/prefix`, paginated, at most `max` objects.
    pub async fn list_checkpoints(
        &self,
        uri: &str,
        max: usize,
    ) -> Result<CheckpointListing, BatchError> {
        const OP: Op = Op::ListObjectsV2;
        let (bucket, prefix) = split_s3_uri(uri).ok_or_else(|| BatchError::Other {
            op: OP,
            message: format!(
                "checkpoint location {:?} is not s3://bucket/prefix",
                quotatop_model::clean_text(uri)
            ),
        })?;
        let mut out = CheckpointListing::default();
        let mut token: Option<String> = None;
        let mut pager = Pager::new(OP);
        loop {
            let left = max.saturating_sub(out.objects.len()).clamp(1, 1000) as i32;
            let page = self
                .read_with(OP, &self.s3, |c| {
                    c.list_objects_v2()
                        .bucket(&bucket)
                        .prefix(&prefix)
                        .max_keys(left)
                        .set_continuation_token(token.clone())
                        .send()
                })
                .await?;
            out.objects
                .extend(page.contents().iter().map(|o| CheckpointObject {
                    key: o.key().unwrap_or_default().to_string(),
                    last_modified: o.last_modified().map_or(0, millis),
                    size: o.size().unwrap_or(0).max(0) as u64,
                }));
            let more = if page.is_truncated().unwrap_or(false) {
                pager.next(
                    page.next_continuation_token(),
                    &token,
                    page.contents().len(),
                )?
            } else {
                None
            };
            if out.objects.len() >= max {
                out.truncated = more.is_some() || out.objects.len() > max;
                out.objects.truncate(max);
                break;
            }
            match more {
                Some(t) => token = Some(t),
                None => break,
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_huge_event_is_cut_saying_how_much_is_left_out() {
        assert_eq!(bounded_message("short"), "short");
        let huge = "é".repeat(MAX_EVENT_BYTES); // 2 bytes each: twice the bound
        let cut = bounded_message(&huge);
        assert!(cut.len() < MAX_EVENT_BYTES + 64, "{}", cut.len());
        assert!(cut.ends_with(&format!("… ({MAX_EVENT_BYTES} more bytes not shown)")));
    }

    #[test]
    fn s3_uris_split_into_bucket_and_prefix() {
        assert_eq!(
            split_s3_uri("s3://b/a/b/"),
            Some(("b".to_string(), "a/b/".to_string()))
        );
        assert_eq!(
            split_s3_uri("s3://b"),
            Some(("b".to_string(), String::new()))
        );
        assert_eq!(split_s3_uri("s3:///x"), None);
        assert_eq!(split_s3_uri("https://b/x"), None);
    }
}
