//! The Batch client as the priority change's API.

use quotatop_aws::batch::BatchClient;

use super::{ApiFailure, PriorityApi};

impl super::JobTagger for BatchClient {
    fn tag_job(
        &self,
        arn: String,
        tags: std::collections::BTreeMap<String, String>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), ApiFailure>> + Send + '_>>
    {
        Box::pin(async move {
            self.tag_resource(&arn, &tags)
                .await
                .map_err(|e| ApiFailure(e.to_string()))
        })
    }
}

/// The operator (with the STS principal, or why it is unknown) and the AWS target a
/// reconciling `client` acts as.
pub async fn reconciler(client: &BatchClient) -> (quotatop_store::audit::Operator, super::Target) {
    let mut operator = quotatop_store::audit::Operator::current();
    let principal = client.caller_identity().await;
    let account = principal
        .as_ref()
        .ok()
        .and_then(|arn| arn.split(':').nth(4))
        .filter(|a| !a.is_empty())
        .map(String::from);
    operator.aws_principal = Some(match principal {
        Ok(arn) => arn,
        Err(why) => format!("unknown ({why})"),
    });
    let source = client.source();
    let target = super::Target {
        region: source.region.clone(),
        endpoint: source.endpoint.clone(),
        account,
    };
    (operator, target)
}

impl super::JobLookup for BatchClient {
    async fn job_priority(&self, job_id: &str) -> Result<Option<u32>, ApiFailure> {
        match self.describe_service_job(job_id).await {
            Ok(d) => Ok(Some(d.job.priority)),
            Err(e) if e.kind() == quotatop_aws::batch::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(ApiFailure(e.to_string())),
        }
    }

    async fn share(
        &self,
        queue: &str,
        name: &str,
    ) -> Result<Option<quotatop_model::QuotaShare>, ApiFailure> {
        let live = self
            .list_quota_shares(queue)
            .await
            .map_err(|e| ApiFailure(e.to_string()))?;
        Ok(live.into_iter().find(|s| s.name == name))
    }

    async fn jobs_named(&self, queue: &str, name: &str) -> Result<Vec<String>, ApiFailure> {
        let mut ids = Vec::new();
        for status in quotatop_model::JobStatus::ALL {
            let jobs = self
                .list_service_jobs(queue, status, None)
                .await
                .map_err(|e| ApiFailure(e.to_string()))?;
            ids.extend(jobs.into_iter().filter(|j| j.name == name).map(|j| j.id));
        }
        Ok(ids)
    }

    async fn job_tags(
        &self,
        job_id: &str,
    ) -> Result<Option<std::collections::BTreeMap<String, String>>, ApiFailure> {
        match self.describe_job_spec(job_id).await {
            Ok(spec) => Ok(Some(spec.tags)),
            Err(e) if e.kind() == quotatop_aws::batch::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(ApiFailure(e.to_string())),
        }
    }

    async fn job_state(
        &self,
        job_id: &str,
    ) -> Result<Option<(quotatop_model::JobStatus, bool)>, ApiFailure> {
        match self.describe_service_job(job_id).await {
            Ok(d) => Ok(Some((d.job.status, d.job.is_terminated))),
            Err(e) if e.kind() == quotatop_aws::batch::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(ApiFailure(e.to_string())),
        }
    }
}

impl PriorityApi for BatchClient {
    async fn update_priority(
        &self,
        job_id: &str,
        priority: u32,
    ) -> Result<Option<String>, ApiFailure> {
        self.update_service_job_priority(job_id, priority)
            .await
            .map(|id| Some(id).filter(|i| !i.is_empty()))
            .map_err(|e| ApiFailure(e.to_string()))
    }

    async fn caller_identity(&self) -> Result<Option<String>, ApiFailure> {
        BatchClient::caller_identity(self)
            .await
            .map(Some)
            .map_err(|e| ApiFailure(e.to_string()))
    }

    async fn current_priority(&self, job_id: &str) -> Result<Option<u32>, ApiFailure> {
        self.describe_service_job(job_id)
            .await
            .map(|d| Some(d.job.priority))
            .map_err(|e| ApiFailure(e.to_string()))
    }
}

impl super::JobApi for BatchClient {
    async fn terminate_job(
        &self,
        job_id: &str,
        reason: &str,
    ) -> Result<Option<String>, ApiFailure> {
        self.terminate_service_job(job_id, reason)
            .await
            .map(|id| Some(id).filter(|i| !i.is_empty()))
            .map_err(|e| ApiFailure(e.to_string()))
    }

    async fn job_spec(
        &self,
        job_id: &str,
    ) -> Result<Option<quotatop_aws::batch::JobSpec>, ApiFailure> {
        match self.describe_job_spec(job_id).await {
            Ok(spec) => Ok(Some(spec)),
            Err(e) if e.kind() == quotatop_aws::batch::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(ApiFailure(e.to_string())),
        }
    }

    async fn submit_job(
        &self,
        req: &quotatop_aws::batch::SubmitRequest,
    ) -> Result<quotatop_aws::batch::SubmittedJob, ApiFailure> {
        self.submit_service_job(req)
            .await
            .map_err(|e| ApiFailure(e.to_string()))
    }

    async fn caller_identity(&self) -> Result<Option<String>, ApiFailure> {
        BatchClient::caller_identity(self)
            .await
            .map(Some)
            .map_err(|e| ApiFailure(e.to_string()))
    }
}
