//! The console's log pane reader: an attempt's training log through the CloudWatch Logs reader
//! `quotatop logs` uses (`BatchClient::log_events`: paginated, bounded, paced, retried and
//! counted like the Batch reads), for the console's one source or, with several, the source of
//! the queue's key.

use quotatop_aws::batch::{BatchClient, BatchError, LogQuery};
use quotatop_tui::effects::Cancel;
use quotatop_tui::logs::{LogReadError, LogReader, LogText};

/// Reads logs through the client of each source (`None`: the console's one source).
pub struct ApiLogs {
    pub clients: Vec<(Option<String>, BatchClient)>,
    /// The runtime the clients run on (the work runs on a blocking thread).
    pub runtime: tokio::runtime::Handle,
}

impl ApiLogs {
    fn client(&self, queue: &str) -> Option<&BatchClient> {
        let (source, _) = quotatop_model::split_queue_key(queue);
        self.clients
            .iter()
            .find(|(n, _)| n.is_none() || n.as_deref() == source)
            .map(|(_, c)| c)
    }
}

/// The pane's words for the API's error.
pub fn read_error(e: &BatchError) -> LogReadError {
    let text = quotatop_model::clean_text(&e.to_string());
    match e {
        BatchError::Denied { .. } | BatchError::NoCredentials { .. } => LogReadError::Denied(text),
        BatchError::NotFound { .. } => LogReadError::NoLogGroup(text),
        _ => LogReadError::Unavailable(text),
    }
}

impl LogReader for ApiLogs {
    fn read(
        &self,
        queue: &str,
        stream_prefix: &str,
        max: usize,
        cancel: &Cancel,
    ) -> Result<LogText, LogReadError> {
        let Some(client) = self.client(queue) else {
            return Err(LogReadError::Unavailable(format!(
                "queue {} belongs to no source of this console",
                quotatop_model::clean_text(queue)
            )));
        };
        let query = LogQuery {
            stream_prefix: Some(stream_prefix.to_string()),
            max_events: max,
            ..LogQuery::default()
        };
        // The read pages through FilterLogEvents; dropping it when cancelled asks no page more.
        let page = self
            .runtime
            .block_on(async {
                tokio::select! {
                    page = client.log_events(&query) => Some(page),
                    () = cancel.cancelled() => None,
                }
            })
            .ok_or(LogReadError::Cancelled)?
            .map_err(|e| read_error(&e))?;
        Ok(LogText {
            events: page
                .lines
                .into_iter()
                .map(|l| (l.time, l.message))
                .collect(),
            truncated: page.truncated,
            not_utf8: page.not_utf8,
        })
    }
}
