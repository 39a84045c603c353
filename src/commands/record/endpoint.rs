//! `/metrics` while `record` runs: the endpoint, and the task that reads the class policy's
//! breaches from the journal for it.

use std::time::Duration;

use anyhow::Context;

use quotatop_store::StoreLocation;

use super::LOG_TARGET;

/// `/metrics` while `record` runs (`task` is `None` without `--metrics-addr`).
pub(super) struct Metrics {
    pub(super) task: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
    stop: tokio_util::sync::CancellationToken,
}

impl Metrics {
    /// Serves `latest` on `addr`, when given.
    pub(super) async fn start(
        addr: Option<std::net::SocketAddr>,
        latest: &crate::metrics::server::Latest,
        ctx: crate::metrics::Context,
    ) -> anyhow::Result<Self> {
        let stop = tokio_util::sync::CancellationToken::new();
        let Some(addr) = addr else {
            return Ok(Self { task: None, stop });
        };
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("cannot serve metrics on {addr}"))?;
        let bound = listener.local_addr()?;
        eprintln!("quotatop record: metrics on http://{bound}/metrics");
        tracing::info!(target: LOG_TARGET, %bound, "serving metrics");
        let task = tokio::spawn(crate::metrics::server::serve(
            listener,
            latest.clone(),
            ctx,
            stop.clone(),
        ));
        Ok(Self {
            task: Some(task),
            stop,
        })
    }

    /// Stops the endpoint (its connections are closed) and waits for it.
    pub(super) async fn stop(self) {
        self.stop.cancel();
        if let Some(task) = self.task {
            match task.await {
                Ok(Err(e)) => {
                    tracing::warn!(target: LOG_TARGET, error = %e, "the metrics endpoint failed")
                }
                Err(e) => {
                    tracing::warn!(target: LOG_TARGET, error = %e, "the metrics endpoint stopped")
                }
                Ok(Ok(())) => {}
            }
        }
    }
}

/// What the policy task of `record --metrics-addr` needs.
pub(super) struct PolicyLoop {
    pub(super) policy: quotatop_policy::Policy,
    /// The journal recorded into: a file or the team's store.
    pub(super) journal: StoreLocation,
    /// The scorecard window (`[scorecard] window_hours`), as `--since` reads it.
    pub(super) window: String,
    pub(super) latest: crate::metrics::server::Latest,
    pub(super) cell: crate::metrics::PolicyBreaches,
}

/// How often the policy's breaches are read again from the journal.
const POLICY_EVERY: Duration = Duration::from_secs(30);

/// Every [`POLICY_EVERY`] until `stop`: the breaches of the latest snapshot's queues, as
/// `policy check` counts them over the scorecard window, for the next scrapes.
pub(super) async fn policy_loop(p: PolicyLoop, stop: tokio_util::sync::CancellationToken) {
    let p = std::sync::Arc::new(p);
    loop {
        let queues = p.latest.queue_names();
        // Until the first snapshot names the queues, look again each second.
        let mut wait = Duration::from_secs(1);
        if !queues.is_empty() {
            let q = std::sync::Arc::clone(&p);
            let computed = tokio::task::spawn_blocking(move || {
                crate::commands::policy::breaches(&q.journal, None, &q.policy, &queues, &q.window)
            })
            .await;
            if let Ok(v) = computed {
                if !v.is_empty() {
                    wait = POLICY_EVERY;
                }
                p.cell.set(v);
            }
        }
        tokio::select! {
            () = stop.cancelled() => break,
            () = tokio::time::sleep(wait) => {}
        }
    }
}
