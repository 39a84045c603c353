//! The thin AWS Batch client: the only module that imports `aws_sdk_batch` and `aws_config`.
//!
//! - [`BatchClient::connect`] builds the SDK client from `aws-config` (standard credential chain,
//!   `--profile`, `--region`, `--endpoint-url` or `AWS_ENDPOINT_URL`) in **adaptive** retry mode
//!   (a client-side rate limiter that slows down on throttling, reference §4) for the writes,
//!   with connect and per-operation timeouts so a call never hangs a refresh.
//! - The poller's reads go through [`BatchClient::read`] instead: paced **per operation** by
//!   [`pacer::Pacer`] (the adaptive limiter is one bucket for every operation, so one
//!   operation's 429s slowed all others) and retried by us on throttling and transient errors.
//! - Every method returns domain types ([`quotatop_model`], [`types`]) or a [`BatchError`] that
//!   tells throttled, denied, not found and unreachable apart.
//! - Paginated operations are read to the end (or to a caller's limit).
//! - [`WireStats`] counts every HTTP attempt, retries included, for the console's health line.

mod capacity;
mod convert;
mod error;
mod events;
mod job_spec;
mod lossy;
mod op;
mod pacer;
pub(crate) mod pager;
mod pages;
mod profile;
mod read;
mod shares;
mod stats;
mod submit;
mod tls;
mod trail;
mod training;
mod types;

use std::collections::BTreeMap;
use std::time::Duration;

use aws_sdk_batch::config::retry::RetryConfig;
use aws_sdk_batch::config::timeout::TimeoutConfig;
use aws_sdk_batch::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_batch::types::ServiceJobStatus;

pub use capacity::resolve_from_share;
pub use error::{BatchError, ErrorKind, IdentityError};
pub use events::{LONGEST_POLL_S, QueueMessage, QueueState, RuleState, RuleTarget};
pub use job_spec::{
    EvaluateOnExit, JobSpec, MAX_TERMINATE_REASON, RetryStrategy, terminate_reason,
};
pub use op::Op;
pub use pages::JobPage;
pub use shares::{LiveShare, ShareChange};
pub use stats::{Attempt, WINDOW, WireCounts, WireStats};
pub use submit::{SubmitRequest, SubmittedJob, TERMINATE_CHUNK, TerminateFailure, TerminateResult};
pub use trail::TrailCalls;
pub use training::{
    CheckpointListing, CheckpointObject, LogLine, LogPage, LogQuery, LogStream, TRAINING_LOG_GROUP,
    split_s3_uri,
};
pub use types::{
    DescribedJob, JobFingerprint, JobQueueInfo, JobSummary, PolicyKind, QueueFront,
    SchedulingPolicyInfo, ServiceEnvironmentInfo,
};

use error::classify;
use pager::Pager;
use quotatop_model::{JobStatus, QuotaShare, Source};

/// Region used when an endpoint URL is given without any region (the emulator ignores it, but
/// SigV4 signing needs one).
pub const FALLBACK_REGION: &str = "us-east-1";
/// Largest page the list operations accept.
const PAGE: usize = 100;
/// At most this many names/ARNs per Describe* call.
const DESCRIBE_CHUNK: usize = 100;

/// Static credentials, for the embedded emulator and tests (anything else uses the standard
/// credential chain).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaticCredentials {
    pub access_key_id: String,
    pub secret_access_key: String,
}

/// How to reach AWS Batch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConnectOptions {
    /// Named profile (`--profile`); `None` uses `AWS_PROFILE` or the default profile.
    pub profile: Option<String>,
    /// `--region`; `None` uses `AWS_REGION` or the profile's region.
    pub region: Option<String>,
    /// `--endpoint-url`; `None` uses `AWS_ENDPOINT_URL` or the regional endpoint.
    pub endpoint_url: Option<String>,
    /// Skip the credential chain and sign with these (the emulator accepts any keys).
    pub credentials: Option<StaticCredentials>,
}

/// An endpoint URL the SDK can use: `http://` or `https://` and a host.
pub fn check_endpoint(url: &str) -> Result<(), BatchError> {
    let lower = url.trim().to_ascii_lowercase();
    let rest = lower
        .strip_prefix("http://")
        .or_else(|| lower.strip_prefix("https://"));
    if let Some(at) = url.find(['?', '#']) {
        // Refused, not stripped: the SDK would warn with the whole URL on every call (a token
        // in the query written to record.log hundreds of times a minute). Shown without it.
        return Err(BatchError::Config(format!(
            "endpoint {} has a query string or fragment ({}…): an endpoint is scheme, host, port and path; remove everything from the '{}'",
            quotatop_model::clean_text(&quotatop_model::without_userinfo(&url[..at])),
            &url[at..at + 1],
            &url[at..at + 1],
        )));
    }
    match rest {
        Some(host) if !host.is_empty() && !host.starts_with('/') => Ok(()),
        Some(_) => Err(BatchError::Config(format!(
            "endpoint {} has no host",
            quotatop_model::clean_text(&quotatop_model::without_userinfo(url))
        ))),
        // Shown without anything before an `@` (credentials written into it).
        None => Err(BatchError::Config(format!(
            "endpoint must start with http:// or https:// (got {}; e.g. http://127.0.0.1:5566)",
            quotatop_model::clean_text(url.rsplit('@').next().unwrap_or(url))
        ))),
    }
}

/// A region name the SDK can put in a host name (`us-east-1`), checked before it refuses it
/// on the first call with its internals.
fn check_region(region: &str) -> Result<(), BatchError> {
    let ok = !region.is_empty()
        && !region.starts_with('-')
        && region
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-');
    if ok {
        Ok(())
    } else {
        Err(BatchError::Config(format!(
            "region {:?} is not a region name (letters, digits and '-', e.g. us-east-1)",
            quotatop_model::clean_text(region)
        )))
    }
}

/// A connected Batch client. Cheap to clone (the SDK client is reference-counted).
#[derive(Debug, Clone)]
pub struct BatchClient {
    sdk: aws_sdk_batch::Client,
    sts: aws_sdk_sts::Client,
    /// The same client with the SDK's retries off, for [`BatchClient::read`].
    reads: aws_sdk_batch::Client,
    /// CloudWatch Logs and S3 of the same connection, retries off: read through
    /// [`BatchClient::read_with`].
    logs: aws_sdk_cloudwatchlogs::Client,
    s3: aws_sdk_s3::Client,
    /// SQS and EventBridge of the same connection, standard retries: Batch's event stream
    /// (`events setup|status|teardown`, `record --events-queue`).
    sqs: aws_sdk_sqs::Client,
    events: aws_sdk_eventbridge::Client,
    /// CloudTrail's event history (`LookupEvents`), standard retries.
    trail: aws_sdk_cloudtrail::Client,
    /// Attempts per read on transient failures (the SDK's configured `max_attempts`).
    read_attempts: u32,
    pacer: pacer::Pacer,
    source: Source,
    stats: WireStats,
}

/// The shared SDK configuration, loaded the way the AWS CLI does, with `opts` (profile, CA
/// bundle, region, endpoint, static credentials) over it.
async fn load_shared(opts: &ConnectOptions) -> Result<aws_config::SdkConfig, BatchError> {
    let mut loader = aws_config::defaults(BehaviorVersion::latest());
    let env = |v: &str| std::env::var(v).ok();
    if let Some(p) = &opts.profile {
        profile::check_profile(p, &env)?;
        loader = loader.profile_name(p);
    }
    let profile_name = opts
        .profile
        .clone()
        .or_else(|| env("AWS_PROFILE"))
        .unwrap_or_else(|| "default".to_string());
    if let Some((path, from)) = profile::ca_bundle(&profile_name, &env) {
        loader = loader.http_client(tls::trusting(&path, &from)?);
    }
    if let Some(r) = &opts.region {
        loader = loader.region(Region::new(r.clone()));
    }
    if let Some(u) = &opts.endpoint_url {
        loader = loader.endpoint_url(u);
    }
    if let Some(c) = &opts.credentials {
        loader = loader.credentials_provider(Credentials::new(
            &c.access_key_id,
            &c.secret_access_key,
            None,
            None,
            "quotatop-static",
        ));
    }
    Ok(loader.load().await)
}

/// The configured region; against an endpoint URL without one, a fallback (the emulator does
/// not care); against AWS, an error saying how to set it.
fn region_of(shared: &aws_config::SdkConfig, endpoint: Option<&str>) -> Result<Region, BatchError> {
    match (shared.region(), endpoint) {
        (Some(r), _) => Ok(r.clone()),
        (None, Some(_)) => Ok(Region::new(FALLBACK_REGION)),
        (None, None) => Err(BatchError::Config(
            "no AWS region: pass --region or set AWS_REGION (or a region in the profile)"
                .to_string(),
        )),
    }
}

impl BatchClient {
    /// Loads configuration the way the AWS CLI does and builds an adaptive-retry client. Nothing
    /// is sent yet: a wrong endpoint or missing credentials show on the first call.
    pub async fn connect(opts: ConnectOptions) -> Result<Self, BatchError> {
        let shared = load_shared(&opts).await?;
        // Checked here, not by the SDK: it reports a missing scheme on the first call, with
        // the request's internals.
        if let Some(u) = shared.endpoint_url() {
            check_endpoint(u)?;
        }
        // The endpoint is shown, journaled and audited: never with credentials written into it.
        let endpoint = shared.endpoint_url().map(quotatop_model::without_userinfo);
        let region = region_of(&shared, endpoint.as_deref())?;
        check_region(region.as_ref())?;
        let max_attempts = shared
            .retry_config()
            .map_or(RetryConfig::adaptive().max_attempts(), |r| r.max_attempts());
        let stats = WireStats::default();
        let base = aws_sdk_batch::config::Builder::from(&shared)
            .region(region.clone())
            .timeout_config(
                TimeoutConfig::builder()
                    .connect_timeout(Duration::from_secs(3))
                    .operation_attempt_timeout(Duration::from_secs(10))
                    .operation_timeout(Duration::from_secs(30))
                    .build(),
            )
            .interceptor(stats::StatsInterceptor(stats.clone()));
        let reads = base.clone().retry_config(RetryConfig::disabled()).build();
        let conf = base
            .retry_config(RetryConfig::adaptive().with_max_attempts(max_attempts))
            .build();
        let sts = aws_sdk_sts::config::Builder::from(&shared)
            .region(region.clone())
            .timeout_config(
                TimeoutConfig::builder()
                    .connect_timeout(Duration::from_secs(3))
                    .operation_timeout(Duration::from_secs(5))
                    .build(),
            )
            .build();
        let read_timeouts = TimeoutConfig::builder()
            .connect_timeout(Duration::from_secs(3))
            .operation_attempt_timeout(Duration::from_secs(10))
            .operation_timeout(Duration::from_secs(30))
            .build();
        // Logs are what a training script printed, in any bytes: its answers are made UTF-8.
        let logs = aws_sdk_cloudwatchlogs::config::Builder::from(&shared)
            .region(region.clone())
            .timeout_config(read_timeouts.clone())
            .retry_config(RetryConfig::disabled())
            .interceptor(stats::StatsInterceptor(stats.clone()))
            .http_client(lossy::LossyClient {
                inner: shared.http_client().unwrap_or_else(tls::default_client),
                stats: stats.clone(),
            })
            .build();
        // Path-style addressing against an endpoint URL (the emulator, a private endpoint):
        // a bucket name cannot be put in front of an IP address.
        let s3 = aws_sdk_s3::config::Builder::from(&shared)
            .region(region.clone())
            .timeout_config(read_timeouts)
            .retry_config(RetryConfig::disabled())
            .force_path_style(endpoint.is_some())
            .interceptor(stats::StatsInterceptor(stats.clone()))
            .build();
        let (sqs, events) = events::clients(&shared, &region, &stats);
        Ok(Self {
            trail: trail::client(&shared, &region, &stats),
            sqs,
            events,
            logs: aws_sdk_cloudwatchlogs::Client::from_conf(logs),
            s3: aws_sdk_s3::Client::from_conf(s3),
            sdk: aws_sdk_batch::Client::from_conf(conf),
            reads: aws_sdk_batch::Client::from_conf(reads),
            read_attempts: max_attempts.max(1),
            pacer: pacer::Pacer::default(),
            sts: aws_sdk_sts::Client::from_conf(sts),
            source: Source {
                endpoint,
                profile: opts.profile.clone(),
                region: Some(region.to_string()),
            },
            stats,
        })
    }

    /// The AWS principal these credentials act as (STS GetCallerIdentity's ARN), for the audit
    /// log; the error says why when STS cannot answer.
    pub async fn caller_identity(&self) -> Result<String, IdentityError> {
        match self.sts.get_caller_identity().send().await {
            Ok(out) => out
                .arn()
                .map(quotatop_model::clean_text)
                .ok_or(IdentityError::NoArn),
            Err(e) => Err(IdentityError::Sts(quotatop_model::clean_text(
                &error::chain(&e),
            ))),
        }
    }

    /// The `--endpoint-url` in use, without credentials; `None`: the region's AWS endpoint.
    fn endpoint(&self) -> Option<&str> {
        self.source.endpoint.as_deref()
    }

    /// Where the data comes from (for the status bar and snapshots).
    pub fn source(&self) -> &Source {
        &self.source
    }

    /// HTTP attempts of this client in the last minute.
    pub fn stats(&self) -> &WireStats {
        &self.stats
    }

    /// DescribeJobQueues: the named queues (names or ARNs), or every queue when `names` is
    /// empty. Unknown names are simply absent from the answer.
    pub async fn describe_job_queues(
        &self,
        names: &[String],
    ) -> Result<Vec<JobQueueInfo>, BatchError> {
        const OP: Op = Op::DescribeJobQueues;
        let mut out = Vec::new();
        if names.is_empty() {
            let mut token: Option<String> = None;
            let mut pager = Pager::new(OP);
            loop {
                let page = self
                    .read(OP, |c| {
                        c.describe_job_queues()
                            .max_results(PAGE as i32)
                            .set_next_token(token.clone())
                            .send()
                    })
                    .await?;
                out.extend(page.job_queues().iter().filter_map(convert::job_queue));
                match pager.next(page.next_token(), &token, page.job_queues().len())? {
                    Some(t) => token = Some(t),
                    None => break,
                }
            }
        } else {
            for chunk in names.chunks(DESCRIBE_CHUNK) {
                let page = self
                    .read(OP, |c| {
                        c.describe_job_queues()
                            .set_job_queues(Some(chunk.to_vec()))
                            .send()
                    })
                    .await?;
                out.extend(page.job_queues().iter().filter_map(convert::job_queue));
            }
        }
        Ok(out)
    }

    /// DescribeSchedulingPolicies for the given ARNs.
    pub async fn describe_scheduling_policies(
        &self,
        arns: &[String],
    ) -> Result<Vec<SchedulingPolicyInfo>, BatchError> {
        const OP: Op = Op::DescribeSchedulingPolicies;
        let mut out = Vec::new();
        for chunk in arns.chunks(DESCRIBE_CHUNK) {
            let page = self
                .read(OP, |c| {
                    c.describe_scheduling_policies()
                        .set_arns(Some(chunk.to_vec()))
                        .send()
                })
                .await?;
            out.extend(
                page.scheduling_policies()
                    .iter()
                    .filter_map(convert::scheduling_policy),
            );
        }
        Ok(out)
    }

    /// DescribeServiceEnvironments for the given names or ARNs.
    pub async fn describe_service_environments(
        &self,
        arns: &[String],
    ) -> Result<Vec<ServiceEnvironmentInfo>, BatchError> {
        const OP: Op = Op::DescribeServiceEnvironments;
        let mut out = Vec::new();
        for chunk in arns.chunks(DESCRIBE_CHUNK) {
            let mut token: Option<String> = None;
            let mut pager = Pager::new(OP);
            loop {
                let page = self
                    .read(OP, |c| {
                        c.describe_service_environments()
                            .set_service_environments(Some(chunk.to_vec()))
                            .set_next_token(token.clone())
                            .send()
                    })
                    .await?;
                out.extend(
                    page.service_environments()
                        .iter()
                        .filter_map(convert::service_environment),
                );
                match pager.next(page.next_token(), &token, page.service_environments().len())? {
                    Some(t) => token = Some(t),
                    None => break,
                }
            }
        }
        Ok(out)
    }

    /// ListQuotaShares of a queue, every page.
    pub async fn list_quota_shares(&self, queue: &str) -> Result<Vec<QuotaShare>, BatchError> {
        const OP: Op = Op::ListQuotaShares;
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        let mut pager = Pager::new(OP);
        loop {
            let page = self
                .read(OP, |c| {
                    c.list_quota_shares()
                        .job_queue(queue)
                        .max_results(PAGE as i32)
                        .set_next_token(token.clone())
                        .send()
                })
                .await?;
            out.extend(page.quota_shares().iter().filter_map(convert::quota_share));
            match pager.next(page.next_token(), &token, page.quota_shares().len())? {
                Some(t) => token = Some(t),
                None => break,
            }
        }
        Ok(out)
    }

    /// ListServiceJobs of one status: every page, or the first `limit` jobs (newest first).
    /// Entries without an id or with an unknown status are skipped.
    pub async fn list_service_jobs(
        &self,
        queue: &str,
        status: JobStatus,
        limit: Option<usize>,
    ) -> Result<Vec<JobSummary>, BatchError> {
        const OP: Op = Op::ListServiceJobs;
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        let page_size = limit.map_or(PAGE, |l| l.clamp(1, PAGE));
        let mut pager = Pager::new(OP);
        loop {
            let page = self
                .read(OP, |c| {
                    c.list_service_jobs()
                        .job_queue(queue)
                        .job_status(ServiceJobStatus::from(status.as_str()))
                        .max_results(page_size as i32)
                        .set_next_token(token.clone())
                        .send()
                })
                .await?;
            out.extend(
                page.job_summary_list()
                    .iter()
                    .filter_map(convert::job_summary),
            );
            if limit.is_some_and(|l| out.len() >= l) {
                out.truncate(limit.unwrap_or(usize::MAX));
                break;
            }
            match pager.next(page.next_token(), &token, page.job_summary_list().len())? {
                Some(t) => token = Some(t),
                None => break,
            }
        }
        Ok(out)
    }

    /// DescribeServiceJob: the job with its priority, preemption summary and attempts.
    pub async fn describe_service_job(&self, job_id: &str) -> Result<DescribedJob, BatchError> {
        const OP: Op = Op::DescribeServiceJob;
        let out = self
            .read(OP, |c| c.describe_service_job().job_id(job_id).send())
            .await?;
        convert::described_job(&out).ok_or_else(|| BatchError::missing(OP, "jobId or status"))
    }

    /// GetJobQueueSnapshot: front of queue, front of each share, utilisation.
    pub async fn get_job_queue_snapshot(&self, queue: &str) -> Result<QueueFront, BatchError> {
        const OP: Op = Op::GetJobQueueSnapshot;
        let out = self
            .read(OP, |c| c.get_job_queue_snapshot().job_queue(queue).send())
            .await?;
        Ok(convert::queue_front(&out))
    }

    /// UpdateServiceJob with a new scheduling priority; returns the request id (for the audit
    /// log), empty when the service sent none.
    pub async fn update_service_job_priority(
        &self,
        job_id: &str,
        priority: u32,
    ) -> Result<String, BatchError> {
        use aws_sdk_batch::operation::RequestId;
        const OP: Op = Op::UpdateServiceJob;
        let out = self
            .sdk
            .update_service_job()
            .job_id(job_id)
            .scheduling_priority(priority.min(i32::MAX as u32) as i32)
            .send()
            .await
            .map_err(|e| classify(OP, e, self.endpoint()))?;
        Ok(out.request_id().unwrap_or_default().to_string())
    }

    /// TagResource.
    pub async fn tag_resource(
        &self,
        arn: &str,
        tags: &BTreeMap<String, String>,
    ) -> Result<(), BatchError> {
        const OP: Op = Op::TagResource;
        self.sdk
            .tag_resource()
            .resource_arn(arn)
            .set_tags(Some(tags.clone().into_iter().collect()))
            .send()
            .await
            .map_err(|e| classify(OP, e, self.endpoint()))?;
        Ok(())
    }
}

/// The token of the next page, `None` when done (or when the server repeats a token).
fn next(new: Option<&str>, old: &Option<String>) -> Option<String> {
    match new {
        Some(t) if !t.is_empty() && old.as_deref() != Some(t) => Some(t.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod endpoint_tests {
    use super::check_endpoint;

    #[test]
    fn an_endpoint_with_a_query_or_fragment_is_refused_without_echoing_it() {
        assert!(check_endpoint("http://127.0.0.1:5566").is_ok());
        assert!(check_endpoint("https://batch.example/prefix").is_ok());
        for url in [
            "http://127.0.0.1:5566/?token=s3cret",
            "https://user:pw@batch.example?x=s3cret",
            "http://127.0.0.1:5566#s3cret",
        ] {
            let e = check_endpoint(url).unwrap_err().to_string();
            assert!(e.contains("query string or fragment"), "{url}: {e}");
            assert!(!e.contains("s3cret") && !e.contains("pw"), "{url}: {e}");
        }
    }
}
