//! Changing quota shares: CreateQuotaShare, UpdateQuotaShare, DeleteQuotaShare, and the
//! share listing with ARNs the changes need (`quotatop shares apply`).

use super::Op;
use aws_sdk_batch::operation::RequestId;
use aws_sdk_batch::types::{
    QuotaShareCapacityLimit, QuotaShareInSharePreemptionState, QuotaSharePreemptionConfiguration,
    QuotaShareResourceSharingConfiguration, QuotaShareResourceSharingStrategy, QuotaShareState,
};

use quotatop_model::{CapacityLimit, QuotaShare, ShareState, SharingConfig};

use super::error::classify;
use super::{BatchClient, BatchError, PAGE, Pager, convert};

/// A live quota share with its ARN (UpdateQuotaShare and DeleteQuotaShare take the ARN).
#[derive(Debug, Clone, PartialEq)]
pub struct LiveShare {
    pub share: QuotaShare,
    pub arn: String,
}

/// The fields of an UpdateQuotaShare: `None` leaves the field as it is.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ShareChange {
    pub capacity_limits: Option<Vec<CapacityLimit>>,
    pub sharing: Option<SharingConfig>,
    pub in_share_preemption: Option<bool>,
    pub state: Option<ShareState>,
}

fn limits(ls: &[CapacityLimit]) -> Vec<QuotaShareCapacityLimit> {
    ls.iter()
        .map(|l| {
            QuotaShareCapacityLimit::builder()
                .capacity_unit(&l.instance_type)
                .max_capacity(l.max_capacity.min(i32::MAX as u32) as i32)
                .build()
        })
        .collect()
}

fn sharing(s: &SharingConfig) -> QuotaShareResourceSharingConfiguration {
    QuotaShareResourceSharingConfiguration::builder()
        .strategy(QuotaShareResourceSharingStrategy::from(s.strategy.as_str()))
        .set_borrow_limit(if s.strategy.borrows() {
            s.borrow_limit
        } else {
            None
        })
        .build()
}

fn preemption(on: bool) -> QuotaSharePreemptionConfiguration {
    QuotaSharePreemptionConfiguration::builder()
        .in_share_preemption(if on {
            QuotaShareInSharePreemptionState::Enabled
        } else {
            QuotaShareInSharePreemptionState::Disabled
        })
        .build()
}

fn state(s: ShareState) -> QuotaShareState {
    QuotaShareState::from(s.as_str())
}

impl BatchClient {
    /// ListQuotaShares of a queue with each share's ARN, every page.
    pub async fn list_live_shares(&self, queue: &str) -> Result<Vec<LiveShare>, BatchError> {
        const OP: Op = Op::ListQuotaShares;
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        let mut pager = Pager::new(OP);
        loop {
            let page = self
                .sdk
                .list_quota_shares()
                .job_queue(queue)
                .max_results(PAGE as i32)
                .set_next_token(token.clone())
                .send()
                .await
                .map_err(|e| classify(OP, e, self.endpoint()))?;
            out.extend(page.quota_shares().iter().filter_map(|d| {
                Some(LiveShare {
                    share: convert::quota_share(d)?,
                    arn: d.quota_share_arn()?.to_string(),
                })
            }));
            match pager.next(page.next_token(), &token, page.quota_shares().len())? {
                Some(t) => token = Some(t),
                None => break,
            }
        }
        Ok(out)
    }

    /// CreateQuotaShare on `queue`; returns the request id (empty when the service sent none).
    pub async fn create_quota_share(
        &self,
        queue: &str,
        share: &QuotaShare,
    ) -> Result<String, BatchError> {
        const OP: Op = Op::CreateQuotaShare;
        let out = self
            .sdk
            .create_quota_share()
            .quota_share_name(&share.name)
            .job_queue(queue)
            .set_capacity_limits(Some(limits(&share.capacity_limits)))
            .resource_sharing_configuration(sharing(&share.sharing))
            .preemption_configuration(preemption(share.in_share_preemption.enabled()))
            .state(state(share.state))
            .send()
            .await
            .map_err(|e| classify(OP, e, self.endpoint()))?;
        Ok(out.request_id().unwrap_or_default().to_string())
    }

    /// UpdateQuotaShare of the share at `arn` with the fields `change` names; returns the
    /// request id.
    pub async fn update_quota_share(
        &self,
        arn: &str,
        change: &ShareChange,
    ) -> Result<String, BatchError> {
        const OP: Op = Op::UpdateQuotaShare;
        let out = self
            .sdk
            .update_quota_share()
            .quota_share_arn(arn)
            .set_capacity_limits(change.capacity_limits.as_deref().map(limits))
            .set_resource_sharing_configuration(change.sharing.as_ref().map(sharing))
            .set_preemption_configuration(change.in_share_preemption.map(preemption))
            .set_state(change.state.map(state))
            .send()
            .await
            .map_err(|e| classify(OP, e, self.endpoint()))?;
        Ok(out.request_id().unwrap_or_default().to_string())
    }

    /// DeleteQuotaShare of the (disabled) share at `arn`; returns the request id.
    pub async fn delete_quota_share(&self, arn: &str) -> Result<String, BatchError> {
        const OP: Op = Op::DeleteQuotaShare;
        let out = self
            .sdk
            .delete_quota_share()
            .quota_share_arn(arn)
            .send()
            .await
            .map_err(|e| classify(OP, e, self.endpoint()))?;
        Ok(out.request_id().unwrap_or_default().to_string())
    }
}
