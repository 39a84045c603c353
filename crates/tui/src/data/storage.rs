//! Checkpoint storage and restores as the console saw them: the price of storage, each job's
//! last listing and its cost, and the restores its attempts' logs said.

use quotatop_analysis::scorecard::StoredObjects;
use quotatop_model::Snapshot;

use super::Data;

/// The price of checkpoint storage: `[prices] s3_gb_month` and the prices' currency.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StoragePrice {
    pub gb_month: Option<f64>,
    pub currency: Option<String>,
}

impl Data {
    /// The checkpoint storage of a job whose checkpoints were listed while the console ran:
    /// in words, with its cost ([`quotatop_analysis::scorecard::checkpoint_storage`]).
    pub fn checkpoint_storage(&self, queue: &str, job_id: &str) -> Option<String> {
        let stored = self.stored.get(&(queue.to_string(), job_id.to_string()))?;
        let s =
            quotatop_analysis::scorecard::checkpoint_storage(*stored, self.storage_price.gb_month);
        Some(s.text(self.storage_price.currency.as_deref()))
    }

    /// How long the attempt `attempt` (started at `started_at`) took to restore, when its log
    /// said it restored while the console ran ([`quotatop_analysis::scorecard::restore_time`]'s
    /// measured figure).
    pub fn measured_restore(
        &self,
        attempt: &str,
        started_at: quotatop_model::Millis,
    ) -> Option<quotatop_model::Millis> {
        let at = self.restored_at.get(attempt)?;
        Some(quotatop_analysis::scorecard::measured_restore_ms(
            started_at, *at,
        ))
    }

    /// Keeps each job's last checkpoint listing of `snapshot`, and the restores its attempts'
    /// logs said.
    pub(super) fn keep_listings(&mut self, snapshot: &Snapshot) {
        for q in &snapshot.queues {
            for m in q.training.iter().flat_map(|e| &e.marks) {
                if let (Some(true), Some(at)) = (m.restored, m.restored_at) {
                    self.restored_at.insert(m.attempt.clone(), at);
                }
            }
            for e in &q.training {
                if let Some(l) = &e.listing {
                    self.stored.insert(
                        (q.key(), e.job_id.clone()),
                        StoredObjects::of_listing(l.objects.iter().map(|o| o.size), l.truncated),
                    );
                }
            }
        }
    }
}
