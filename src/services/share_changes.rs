//! The Share screen's last audited configuration change of a share: the newest change with an
//! [`quotatop_store::audit::Action`] on the share (`quotatop shares apply`) in the audit log.

use std::path::PathBuf;

use quotatop_store::audit::{self, Change, Outcome};
use quotatop_tui::effects::{LastShareChange, ShareChangeError, ShareChangeReader};

/// Reads the audit log at `path`.
pub struct AuditShareChanges {
    pub path: PathBuf,
}

/// The newest configuration change of `share` on `queue` among `changes` (drills' job
/// submissions and priority changes are not a share's configuration).
pub fn last_share_change(changes: &[Change], queue: &str, share: &str) -> Option<LastShareChange> {
    changes
        .iter()
        .rev()
        .filter(|c| c.intent.queue == queue && c.intent.share == share)
        .find_map(|c| {
            let a = c.intent.action.as_ref()?;
            a.call.ends_with("QuotaShare").then(|| LastShareChange {
                time: c.intent.time.clone(),
                operator: format!("{}@{}", c.intent.operator.user, c.intent.operator.host),
                call: a.call.clone(),
                detail: a.detail.clone(),
                outcome: match c.outcome.as_ref().and_then(|o| o.outcome.as_ref()) {
                    Some(Outcome::Succeeded { .. }) => "succeeded".to_string(),
                    Some(Outcome::Failed { error }) => format!("failed: {error}"),
                    Some(Outcome::Reconciled { verdict, .. }) => verdict.as_str().to_string(),
                    None => "outcome unknown".to_string(),
                },
                change_record: c.intent.change_record.clone(),
                justification: c.intent.justification.clone(),
            })
        })
}

impl ShareChangeReader for AuditShareChanges {
    fn last_change(
        &self,
        queue: &str,
        share: &str,
    ) -> Result<Option<LastShareChange>, ShareChangeError> {
        if !self.path.exists() {
            return Ok(None);
        }
        let log = audit::read_log(&self.path)
            .map_err(|e| ShareChangeError::Unreadable(quotatop_model::error_chain(&e)))?;
        Ok(last_share_change(
            &audit::changes(&log.records),
            queue,
            share,
        ))
    }
}
