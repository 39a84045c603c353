//! ListServiceJobs: the status filter, the five filters and their combination rules (reference
//! §3.3), newest-first ordering and cursor pagination.

use axum::response::Response;

use serde::Serialize;

use quotatop_engine::{JobFacts, JobId};
use quotatop_model::JobStatus;

use super::error::ApiError;
use super::job_view::summary;
use super::paging;
use super::state::QueueWorld;
use super::wire::{self, ListServiceJobsRequest, ServiceJobSummary, ok, parse, required_str};

/// The one filter of a ListServiceJobs request.
enum Filter {
    JobName { prefix: bool, lower: String },
    BeforeCreatedAt(i64),
    AfterCreatedAt(i64),
    ShareIdentifier,
    QuotaShareName(String),
}

fn read_filter(filters: Option<Vec<wire::KeyValuesPair>>) -> Result<Option<Filter>, ApiError> {
    let mut filters = filters.unwrap_or_default();
    if filters.len() > 1 {
        return Err(ApiError::client(format!(
            "Only one filter can be used at a time, got {}",
            filters.len()
        )));
    }
    let Some(f) = filters.pop() else {
        return Ok(None);
    };
    let name = required_str(f.name, "filters[].name")?;
    let values = f.values.unwrap_or_default();
    let [value] = values.as_slice() else {
        return Err(ApiError::client(format!(
            "Filter {name} needs exactly one value, got {}",
            values.len()
        )));
    };
    let millis = |v: &str| {
        v.trim().parse::<i64>().map_err(|_| {
            ApiError::client(format!(
                "Filter {name} needs a time in epoch milliseconds, got {v:?}"
            ))
        })
    };
    Ok(Some(match name.as_str() {
        "JOB_NAME" => {
            let (prefix, base) = match value.strip_suffix('*') {
                Some(b) => (true, b),
                None => (false, value.as_str()),
            };
            Filter::JobName {
                prefix,
                lower: base.to_ascii_lowercase(),
            }
        }
        "BEFORE_CREATED_AT" => Filter::BeforeCreatedAt(millis(value)?),
        "AFTER_CREATED_AT" => Filter::AfterCreatedAt(millis(value)?),
        "SHARE_IDENTIFIER" => Filter::ShareIdentifier,
        "QUOTA_SHARE_NAME" => Filter::QuotaShareName(value.clone()),
        other => {
            return Err(ApiError::client(format!(
                "Unknown filter {other:?}: use JOB_NAME, BEFORE_CREATED_AT, AFTER_CREATED_AT, SHARE_IDENTIFIER or QUOTA_SHARE_NAME"
            )));
        }
    }))
}

impl Filter {
    /// Whether `jobStatus` still applies: only the share filters combine with it.
    fn keeps_status(&self) -> bool {
        matches!(self, Filter::ShareIdentifier | Filter::QuotaShareName(_))
    }

    /// Job names are ASCII (letters, digits, `-`, `_`), so an ASCII case-insensitive comparison
    /// is the case-insensitive one, without lowercasing every job's name.
    fn matches(&self, job: &JobFacts<'_>) -> bool {
        match self {
            Filter::JobName {
                prefix: true,
                lower,
            } => job
                .name
                .get(..lower.len())
                .is_some_and(|p| p.eq_ignore_ascii_case(lower)),
            Filter::JobName {
                prefix: false,
                lower,
            } => job.name.eq_ignore_ascii_case(lower),
            Filter::BeforeCreatedAt(t) => job.created_at < *t,
            Filter::AfterCreatedAt(t) => job.created_at > *t,
            // Jobs of a quota-share queue carry no share identifier.
            Filter::ShareIdentifier => false,
            Filter::QuotaShareName(s) => job.share == s,
        }
    }

    /// The filter as a page token's scope.
    fn scope_part(&self) -> String {
        match self {
            Filter::JobName { prefix, lower } => format!("name:{prefix}:{lower}"),
            Filter::BeforeCreatedAt(t) => format!("before:{t}"),
            Filter::AfterCreatedAt(t) => format!("after:{t}"),
            Filter::ShareIdentifier => "share-identifier".to_string(),
            Filter::QuotaShareName(s) => format!("share:{s}"),
        }
    }
}

/// The first job id whose `createdAt` is `t` or later (the job count when none is): jobs are
/// numbered in submission order with `createdAt` never decreasing, so those created before `t`
/// are exactly the ids below it.
fn first_created_at_or_after(world: &QueueWorld, t: i64) -> u32 {
    let engine = &world.engine;
    let (mut lo, mut hi) = (0u32, engine.job_count() as u32);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if engine.facts(JobId(mid)).is_some_and(|j| j.created_at < t) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// The page of a ListServiceJobs answer.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ListServiceJobsResponse {
    job_summary_list: Vec<ServiceJobSummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    next_token: Option<String>,
}

/// Status filter and filters per reference §3.3: without a filter only `jobStatus` (default
/// RUNNING) applies; `JOB_NAME`, `BEFORE_CREATED_AT` and `AFTER_CREATED_AT` ignore `jobStatus`;
/// `SHARE_IDENTIFIER` and `QUOTA_SHARE_NAME` combine with it. Results are newest first
/// (`createdAt` descending, then submission order descending), with or without a filter.
/// `jobQueue` is required (the model makes it optional; its absence is undocumented).
///
/// Jobs are numbered in submission order with `createdAt` never decreasing
/// ([`quotatop_engine::JobFacts`]), so newest first is a walk down from the highest id (or the
/// token's position) that stops once the page is full: through the engine's index of the
/// status when there is one ([`quotatop_engine::Engine::with_status`]), starting below the
/// time for `BEFORE_CREATED_AT` and stopping at it for `AFTER_CREATED_AT`. A page costs its
/// own jobs plus those a name or share filter passes over, never a sort or a scan of the
/// queue's other statuses.
pub fn list(world: &mut QueueWorld, body: &[u8]) -> Result<Response, ApiError> {
    let req: ListServiceJobsRequest = parse(body)?;
    let queue = required_str(req.job_queue, "jobQueue")?;
    world.check_queue(&queue)?;
    let size = wire::page_size(req.max_results)?;
    let status = req
        .job_status
        .as_deref()
        .map(|s| {
            JobStatus::parse(s).ok_or_else(|| {
                ApiError::client(format!(
                    "jobStatus must be one of SUBMITTED, PENDING, RUNNABLE, SCHEDULED, STARTING, RUNNING, SUCCEEDED, FAILED; got {s:?}"
                ))
            })
        })
        .transpose()?;
    let filter = read_filter(req.filters)?;
    let status = match &filter {
        Some(f) if !f.keeps_status() => None,
        _ => Some(status.unwrap_or(JobStatus::Running)),
    };
    let queue_arn = world.queue_arn();
    let filter_part = filter.as_ref().map_or_else(String::new, Filter::scope_part);
    let scope = paging::Scope::new(
        "jobs",
        &[
            &queue_arn,
            status.map_or("*", JobStatus::as_str),
            &filter_part,
        ],
    );
    let cursor = paging::decode_cursor(&scope, req.next_token.as_deref())?;
    let engine = &world.engine;
    let mut below = cursor.map_or(engine.job_count(), |(_, i)| {
        (i as usize).min(engine.job_count())
    }) as u32;
    if let Some(Filter::BeforeCreatedAt(t)) = &filter {
        below = below.min(first_created_at_or_after(world, *t));
    }
    // A status's jobs come from the engine's status index; without a status every job is a
    // candidate. Newest first either way.
    let candidates: Box<dyn Iterator<Item = JobId> + '_> = match status {
        Some(s) => Box::new(engine.with_status(s, below)),
        None => Box::new((0..below).rev().map(JobId)),
    };
    let mut ids = candidates
        .filter_map(|id| Some((id, engine.facts(id)?)))
        // Walking down, `createdAt` never increases: past the first job not after `t`, none is.
        .take_while(|(_, j)| match &filter {
            Some(Filter::AfterCreatedAt(t)) => j.created_at > *t,
            _ => true,
        })
        .filter(|(_, j)| {
            status.is_none_or(|s| j.status == s) && filter.as_ref().is_none_or(|f| f.matches(j))
        })
        .map(|(id, _)| id);
    let page: Vec<JobId> = ids.by_ref().take(size).collect();
    let next = match (page.last(), ids.next()) {
        (Some(&last), Some(_)) => engine
            .facts(last)
            .map(|j| paging::encode_cursor(&scope, j.created_at, last.0)),
        _ => None,
    };
    let job_summary_list = page
        .into_iter()
        .filter_map(|id| engine.job(id))
        .map(|j| summary(world, j))
        .collect();
    ok(&ListServiceJobsResponse {
        job_summary_list,
        next_token: next,
    })
}
