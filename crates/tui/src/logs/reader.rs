//! What the log pane reads through: the [`LogReader`] (built outside the console), the text
//! and the errors it gives, and the work of one read (off the UI thread, as the screen's own).

use std::sync::Arc;
use std::time::Duration;

use super::super::effects::{Cancel, Effect, ScreenWork};
use super::super::screen::Kind;
use quotatop_analysis::{NumberedAttempt, stream_prefix};
use quotatop_model::Millis;

/// At most this many events of an attempt are read (more is said).
pub const MAX_LINES: usize = 10_000;

/// An attempt's log events (time, message) and whether more were left unread.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogText {
    pub events: Vec<(Millis, String)>,
    pub truncated: bool,
    /// Answers that were not all UTF-8 (their invalid bytes show as U+FFFD).
    pub not_utf8: usize,
}

/// Why an attempt's log could not be read, in words with the next step.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LogReadError {
    #[error(
        "this console has no API connection to read logs from; `quotatop logs JOB` reads them \
         from a shell"
    )]
    NoReader,
    /// The log group (or the stream) does not exist: the API's message.
    #[error(
        "no log for this attempt in /aws/sagemaker/TrainingJobs ({0}): SageMaker writes it once \
         the training job starts; check the region (--region), or press f to read it again"
    )]
    NoLogGroup(String),
    /// The credentials may not read the log: the API's message.
    #[error(
        "access denied reading CloudWatch Logs ({0}): the console's role needs \
         logs:FilterLogEvents on /aws/sagemaker/TrainingJobs"
    )]
    Denied(String),
    /// Stopped before its end: nobody wants the answer any more (it is never shown).
    #[error("the read was stopped: the log pane closed, or a newer read replaced it")]
    Cancelled,
    /// Anything else (throttled past the retries, unreachable): the reason.
    #[error("the log could not be read: {0}; press f to read it again")]
    Unavailable(String),
}

/// Reads an attempt's log: the events of the streams starting with `stream_prefix`, at most
/// `max`. Blocking (the API), so it runs as the screen's work; it stops between pages once
/// `cancel` is set (the pane closed, or a newer read asked), answering
/// [`LogReadError::Cancelled`].
pub trait LogReader: Send + Sync {
    fn read(
        &self,
        queue: &str,
        stream_prefix: &str,
        max: usize,
        cancel: &Cancel,
    ) -> Result<LogText, LogReadError>;
}

/// The answer for one attempt of one job.
#[derive(Debug, Clone, PartialEq)]
pub struct LogAnswer {
    pub queue: String,
    pub id: String,
    pub attempt: usize,
    pub result: Result<LogText, LogReadError>,
}

/// The work of reading `attempt`'s log, after `delay` (follow mode).
pub(super) fn work(queue: &str, id: &str, attempt: &NumberedAttempt, delay: Option<Duration>) -> Effect {
    let (queue, id, number) = (queue.to_string(), id.to_string(), attempt.number);
    let prefix = stream_prefix(&attempt.row.resource_id);
    Effect::Screen(
        ScreenWork::cancellable(
            Kind::Logs,
            move |reader: Option<&Arc<dyn LogReader>>, cancel: &Cancel| LogAnswer {
                queue: queue.clone(),
                id: id.clone(),
                attempt: number,
                result: match reader {
                    Some(r) => r.read(&queue, &prefix, MAX_LINES, cancel),
                    None => Err(LogReadError::NoReader),
                },
            },
        )
        .after(delay),
    )
}
