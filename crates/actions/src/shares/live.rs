//! The Batch client's side of [`SharesApi`]: one queue's shares, called and read through it.

use std::collections::BTreeMap;

use quotatop_analysis::shares_plan::Step;
use quotatop_aws::batch::{BatchClient, ShareChange};
use quotatop_model::{QuotaShare, ShareState};

use super::{ApiFailure, SharesApi};

/// The Batch client on one queue, with the ARNs of its live shares.
pub struct LiveShares<'a> {
    pub client: &'a BatchClient,
    pub queue: String,
    /// Share name → ARN.
    pub arns: BTreeMap<String, String>,
}

impl LiveShares<'_> {
    fn arn(&self, name: &str) -> Result<&str, ApiFailure> {
        self.arns
            .get(name)
            .map(String::as_str)
            .ok_or_else(|| ApiFailure(format!("no ARN known for quota share {name}")))
    }
}

/// The UpdateQuotaShare fields of an update step: only those that change.
pub fn share_change(step: &Step) -> ShareChange {
    match step {
        Step::Update { after, fields, .. } => {
            let has = |f: &str| fields.iter().any(|c| c.field == f);
            ShareChange {
                capacity_limits: has("capacityLimits").then(|| after.capacity_limits.clone()),
                sharing: (has("strategy") || has("borrowLimit")).then_some(after.sharing),
                in_share_preemption: has("inSharePreemption")
                    .then(|| after.in_share_preemption.enabled()),
                state: has("state").then_some(after.state),
            }
        }
        Step::Disable(_) => ShareChange {
            state: Some(ShareState::Disabled),
            ..ShareChange::default()
        },
        Step::Create(_) | Step::Delete(_) => ShareChange::default(),
    }
}

impl SharesApi for LiveShares<'_> {
    async fn run_step(&self, step: &Step) -> Result<Option<String>, ApiFailure> {
        let fail = |e: quotatop_aws::batch::BatchError| ApiFailure(e.to_string());
        let id = match step {
            Step::Create(s) => self
                .client
                .create_quota_share(&self.queue, s)
                .await
                .map_err(fail)?,
            Step::Update { .. } | Step::Disable(_) => self
                .client
                .update_quota_share(self.arn(step.share())?, &share_change(step))
                .await
                .map_err(fail)?,
            Step::Delete(_) => self
                .client
                .delete_quota_share(self.arn(step.share())?)
                .await
                .map_err(fail)?,
        };
        Ok(Some(id).filter(|i| !i.is_empty()))
    }

    async fn caller_identity(&self) -> Result<Option<String>, ApiFailure> {
        self.client
            .caller_identity()
            .await
            .map(Some)
            .map_err(|e| ApiFailure(e.to_string()))
    }

    async fn read_share(&self, name: &str) -> Result<Option<QuotaShare>, ApiFailure> {
        let live = self
            .client
            .list_live_shares(&self.queue)
            .await
            .map_err(|e| ApiFailure(e.to_string()))?;
        Ok(live
            .into_iter()
            .find(|s| s.share.name == name)
            .map(|s| s.share))
    }
}
