//! [`BatchClient::read`]: every read the poller makes goes through here — paced per operation
//! by the [`Pacer`](super::pacer::Pacer) and retried by us, not by the SDK.
//!
//! The reads use a second SDK client with the SDK's retries off (one attempt per `send`), so
//! the SDK's adaptive limiter (one bucket for all operations) never holds them back; writes
//! keep the adaptive client and its retries unchanged. Every attempt, throttled or not, still
//! passes the [`WireStats`](super::WireStats) interceptor.

use super::Op;
use std::future::Future;
use std::time::{Duration, Instant};

use aws_sdk_batch::error::{ProvideErrorMetadata, SdkError};

use super::error::{classify, is_transient};
use super::{BatchClient, BatchError};

/// A throttled read is retried at the operation's next slot, up to this many attempts...
pub(crate) const MAX_THROTTLED_ATTEMPTS: u32 = 8;
/// ...or until this long has passed since its first attempt; then the throttle is returned.
pub(crate) const MAX_THROTTLED_SPELL: Duration = Duration::from_secs(60);
/// First back-off after a transient (non-throttling) failure; doubled each time.
const BACKOFF: Duration = Duration::from_millis(200);
/// Longest back-off after a transient failure.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

impl BatchClient {
    /// Runs one read call (`op` is its API name, e.g. `"DescribeServiceJob"`): waits for the
    /// operation's next slot, calls `call` with the retry-less read client, and
    ///
    /// - on a throttle, tells the pacer (which learns the operation's rate) and tries again at
    ///   the next slot, up to [`MAX_THROTTLED_ATTEMPTS`] attempts or [`MAX_THROTTLED_SPELL`]
    ///   (only the SDK's `max_attempts` while no call of the operation gets through at all);
    /// - on a transient failure (5xx, timeout, I/O), backs off and tries again, as many
    ///   attempts in all as the SDK's configured `max_attempts`;
    /// - otherwise returns the answer or the classified error.
    ///
    /// `call` builds and sends one request, e.g.
    /// `|c| c.describe_service_job().job_id(id).send()`; use this for every read (one page of
    /// a list is one call).
    pub(crate) async fn read<T, E, F, Fut>(&self, op: Op, call: F) -> Result<T, BatchError>
    where
        F: Fn(&aws_sdk_batch::Client) -> Fut,
        Fut: Future<Output = Result<T, SdkError<E>>>,
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    {
        self.read_with(op, &self.reads, call).await
    }

    /// [`BatchClient::read`] with another retry-less SDK client of this connection (CloudWatch
    /// Logs, S3): the same pacer, statistics and retries, so those calls count in the same
    /// budget as the Batch reads.
    pub(crate) async fn read_with<C, T, E, F, Fut>(
        &self,
        op: Op,
        client: &C,
        call: F,
    ) -> Result<T, BatchError>
    where
        F: Fn(&C) -> Fut,
        Fut: Future<Output = Result<T, SdkError<E>>>,
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    {
        let started = Instant::now();
        let mut throttled = 0u32;
        let mut transient = 0u32;
        loop {
            self.pacer.acquire(op).await;
            let err = match call(client).await {
                Ok(out) => {
                    self.pacer.answered(op);
                    return Ok(out);
                }
                Err(e) => e,
            };
            let answered = matches!(err, SdkError::ServiceError(_));
            let retry_transient = is_transient(&err);
            let err = classify(op, err, self.endpoint());
            if matches!(err, BatchError::Throttled { .. }) {
                self.pacer.throttled(op);
                throttled += 1;
                // Nothing of this operation gets through (a sustained throttle, not a rate to
                // fit): give up after as many attempts as the SDK would have made.
                let sustained = !self.pacer.getting_through(op) && throttled >= self.read_attempts;
                if sustained
                    || throttled >= MAX_THROTTLED_ATTEMPTS
                    || started.elapsed() >= MAX_THROTTLED_SPELL
                {
                    return Err(err);
                }
                continue;
            }
            if answered {
                self.pacer.answered(op);
            }
            transient += 1;
            if !retry_transient || transient >= self.read_attempts {
                return Err(err);
            }
            let backoff = BACKOFF
                .saturating_mul(1 << (transient - 1).min(8))
                .min(MAX_BACKOFF);
            tokio::time::sleep(backoff).await;
        }
    }

    /// The rate the pacer currently allows `op` (its API name, e.g. `"DescribeServiceJob"`),
    /// calls per second, learned from throttling; `None` while unlimited (no 429 met in the
    /// last minute).
    pub fn learned_rate(&self, op: Op) -> Option<f64> {
        self.pacer.rate(op)
    }
}
