//! The console's policy service: the conformance of a queue's history to the policy, computed
//! the one way `policy check` and `/metrics` compute it ([`crate::commands::policy::judge`]),
//! as the Policy screen and the attention panel show it.

use std::path::PathBuf;

use quotatop_store::journal::{Journal, JournalConfig};
use quotatop_tui::policy::{PolicyClass, PolicyItem, PolicyReader, PolicyView, PolicyViewError};

/// Reads the policy file and the journal on each request (so an edited policy shows at the
/// next refresh).
pub struct PolicyFromJournal {
    /// The policy file (beside the config, or the demo's).
    pub policy: PathBuf,
    /// The journal the console writes.
    pub journal: PathBuf,
    /// The audit log naming who changed priorities.
    pub audit_log: Option<PathBuf>,
    /// How far back from the queue's last observation, as `--since` reads it.
    pub window: String,
}

impl PolicyReader for PolicyFromJournal {
    fn conformance(&self, queue: &str) -> Result<PolicyView, PolicyViewError> {
        if !self.policy.exists() {
            return Err(PolicyViewError::NoPolicy(format!(
                "no policy file at {}: write one with `quotatop policy init --queue {queue} > {}` and edit it (docs/policy.md)",
                self.policy.display(),
                self.policy.display()
            )));
        }
        let policy = quotatop_policy::read(&self.policy)
            .map_err(|e| PolicyViewError::Unavailable(format!("{e:#}")))?;
        // A queue the journal has not recorded yet has no history to judge.
        let j = Journal::open_existing(&self.journal, JournalConfig::default())
            .map_err(|e| PolicyViewError::Unavailable(format!("{e:#}")))?;
        let seen = j
            .queue(queue)
            .map_err(|e| PolicyViewError::Unavailable(format!("{e:#}")))?;
        drop(j);
        if seen.is_none() {
            return Err(PolicyViewError::NoHistory(format!(
                "no history of queue {queue} yet: the policy is judged once the journal has recorded it"
            )));
        }
        let audit_log = self.audit_log.clone().filter(|p| p.exists());
        let args = crate::commands::policy::window_args(
            queue,
            &self.window,
            Some(self.journal.clone()),
            audit_log,
            None,
        );
        let c = crate::commands::policy::judge(&policy, &args)
            .map_err(|e| PolicyViewError::Unavailable(format!("{e:#}")))?;
        Ok(view(&c, &policy, &self.window))
    }
}

/// The screen's view of a conformance over the last `window` (as `--since` reads it): its
/// Markdown heading, each class's lines and the breach items, all from the policy crate's one
/// definition.
pub fn view(
    c: &quotatop_policy::Conformance,
    policy: &quotatop_policy::Policy,
    window: &str,
) -> PolicyView {
    let md = quotatop_policy::markdown(c, policy);
    // The paragraph under the Markdown title: which policy, the window, how classes are found.
    let heading = md
        .lines()
        .find(|l| l.starts_with("Policy "))
        .unwrap_or_default()
        .to_string();
    PolicyView {
        window: window.to_string(),
        heading,
        classes: c
            .classes
            .iter()
            .map(|k| PolicyClass {
                name: k.class.clone(),
                jobs: k.jobs,
                breaches: k.breaches(),
                lines: k.checks.iter().map(quotatop_policy::Check::line).collect(),
            })
            .collect(),
        unclassified: c.unclassified.clone(),
        items: quotatop_policy::breach_items(c, policy)
            .into_iter()
            .map(
                |quotatop_policy::BreachItem {
                     text, job, share, ..
                 }| PolicyItem { text, job, share },
            )
            .collect(),
    }
}
