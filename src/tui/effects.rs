//! What the app asks the outside world to do, and the services that do it. The app never calls
//! the network or the disk from a key handler: it queues an [`Effect`]; the event loop hands it
//! to a service in a spawned task, and the result comes back as a message.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use super::scorecard::ScorecardResult;
use crate::actions::{self, ChangeContext, Preview, PriorityApi};
use crate::audit::{AuditLog, AwsContext, Operator, Outcome};

/// A confirmed priority change, as the dialog emits it.
#[derive(Debug, Clone)]
pub struct ChangeRequest {
    pub queue: String,
    pub justification: String,
    pub change_record: Option<String>,
    pub preview: Preview,
}

/// How a change ended: the API's outcome (success or its error, both audited), or why it could
/// not be made at all.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangeResult {
    pub job_id: String,
    pub job_name: String,
    pub new_priority: u32,
    pub result: Result<Outcome, String>,
}

/// Something for the event loop to start.
#[derive(Debug, Clone)]
pub enum Effect {
    ApplyChange(Box<ChangeRequest>),
    /// Ask the poller for a refresh now.
    RefreshNow,
    /// Compute the scorecard of this queue from the journal.
    ComputeScorecard {
        queue: String,
    },
}

pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// Runs confirmed priority changes (the Batch client in the console, a fake in tests).
pub trait ChangeRunner: Send + Sync {
    fn apply(&self, req: ChangeRequest) -> BoxFuture<ChangeResult>;
}

/// The real runner: [`actions::apply_change`] with an API and the audit log.
pub struct ApiRunner<A> {
    pub api: Arc<A>,
    pub log: AuditLog,
    pub operator: Operator,
    pub aws: AwsContext,
    pub read_only: bool,
}

impl<A: PriorityApi + Send + Sync + 'static> ChangeRunner for ApiRunner<A> {
    fn apply(&self, req: ChangeRequest) -> BoxFuture<ChangeResult> {
        let api = Arc::clone(&self.api);
        let log = self.log.clone();
        let ctx = ChangeContext {
            operator: self.operator.clone(),
            aws: self.aws.clone(),
            queue: req.queue.clone(),
            justification: req.justification.clone(),
            change_record: req.change_record.clone(),
            read_only: self.read_only,
        };
        Box::pin(async move {
            let result = actions::apply_change(api.as_ref(), &log, &ctx, &req.preview)
                .await
                .map_err(|e| e.to_string());
            ChangeResult {
                job_id: req.preview.job_id.clone(),
                job_name: req.preview.job_name.clone(),
                new_priority: req.preview.new_priority,
                result,
            }
        })
    }
}

/// The services the event loop runs effects with; `None`: not available (the app says so).
#[derive(Default)]
pub struct Services {
    pub changes: Option<Arc<dyn ChangeRunner>>,
    /// Asks the poller to refresh now.
    pub refresh: Option<Box<dyn Fn() + Send>>,
    /// Computes a queue's scorecard; blocking (it reads the journal), so the event loop runs it
    /// in `spawn_blocking`. `None`: no history (the screen says so).
    pub scorecard: Option<ScorecardFn>,
}

/// See [`Services::scorecard`].
pub type ScorecardFn = Arc<dyn Fn(&str) -> ScorecardResult + Send + Sync>;

/// The real scorecard service: [`super::scorecard::compute`] on the journal at `path`.
pub fn journal_scorecard(path: std::path::PathBuf) -> ScorecardFn {
    Arc::new(move |queue: &str| ScorecardResult {
        queue: queue.to_string(),
        result: super::scorecard::compute(&path, queue).map(Box::new),
    })
}
