//! One page of a listing at a time, for a caller that works on each page as it arrives (the
//! poller's progressive listings and its listings per quota share).

use super::Op;
use aws_sdk_batch::types::{KeyValuesPair, ServiceJobStatus};

use super::{BatchClient, BatchError, JobSummary, PAGE, convert, next};
use quotatop_model::JobStatus;

/// One ListServiceJobs page and the token of the next one.
#[derive(Debug, Clone, Default)]
pub struct JobPage {
    /// Entries without an id or with an unknown status are skipped.
    pub jobs: Vec<JobSummary>,
    /// `None` when this was the last page (or the server repeated the token it was given).
    pub next_token: Option<String>,
}

impl BatchClient {
    /// One ListServiceJobs page of `queue`'s jobs in `status`, of at most `page_size` jobs
    /// (at most 100), from `token` (`None`: the first page); with `quota_share`, only that
    /// share's jobs (the `QUOTA_SHARE_NAME` filter, which combines with the status).
    pub async fn list_service_jobs_page(
        &self,
        queue: &str,
        status: JobStatus,
        quota_share: Option<&str>,
        page_size: usize,
        token: Option<String>,
    ) -> Result<JobPage, BatchError> {
        const OP: Op = Op::ListServiceJobs;
        let filter = quota_share.map(|share| {
            KeyValuesPair::builder()
                .name("QUOTA_SHARE_NAME")
                .values(share)
                .build()
        });
        // Paced per operation and retried on throttling like every other read (`read`).
        let page = self
            .read(OP, |c| {
                c.list_service_jobs()
                    .job_queue(queue)
                    .job_status(ServiceJobStatus::from(status.as_str()))
                    .max_results(page_size.clamp(1, PAGE) as i32)
                    .set_filters(filter.clone().map(|f| vec![f]))
                    .set_next_token(token.clone())
                    .send()
            })
            .await?;
        Ok(JobPage {
            jobs: page
                .job_summary_list()
                .iter()
                .filter_map(convert::job_summary)
                .collect(),
            next_token: next(page.next_token(), &token),
        })
    }
}
