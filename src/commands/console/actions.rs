//! The console's terminations and requeues: the actions crate's, through the Batch client of
//! the console or of each source, audited in the console's log.

use std::path::PathBuf;
use std::sync::Arc;

use super::{Through, change_rules};
use crate::config::Loaded;
use crate::services;
use quotatop_aws::batch::BatchClient;
use quotatop_store::audit::{AuditLog, AwsContext, ChangeLog, Operator};

/// Terminations and requeues through `client`, audited in `log` with the source's name.
pub fn api_actions(
    client: &BatchClient,
    name: Option<&str>,
    loaded: &Loaded,
    log: ChangeLog,
) -> Arc<dyn quotatop_tui::effects::JobActions> {
    let source = client.source().clone();
    Arc::new(services::job_actions::ApiActions {
        api: Arc::new(client.clone()),
        log,
        operator: Operator::current(),
        aws: AwsContext::of(&source, name),
        policy: Some(loaded.config.priority.describe(&loaded.policy_source())),
        rules: change_rules(loaded),
    })
}

/// Terminations and requeues audited in the log at `path`, through the client or each
/// source's.
pub(super) fn job_actions(
    through: Through,
    loaded: &Loaded,
    path: PathBuf,
) -> Arc<dyn quotatop_tui::effects::JobActions> {
    let log: ChangeLog = AuditLog::new(path).into();
    match through {
        Through::Client(client) => api_actions(client, None, loaded, log),
        Through::Sources(sources) => Arc::new(services::job_actions::ActionsBySource {
            services: sources
                .iter()
                .map(|s| {
                    let a = api_actions(&s.client, Some(&s.name), loaded, log.clone());
                    (s.name.clone(), a)
                })
                .collect(),
        }),
    }
}
