//! ListServiceJobs: the status filter, the five filters and their combination rules (reference
//! §3.3), newest-first ordering and cursor pagination.

use axum::response::Response;

use quotatop_model::{JobStatus, ServiceJob};

use super::error::ApiError;
use super::ops_jobs::summary;
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
                lower: base.to_lowercase(),
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

    fn matches(&self, job: &ServiceJob) -> bool {
        match self {
            Filter::JobName {
                prefix: true,
                lower,
            } => job.name.to_lowercase().starts_with(lower),
            Filter::JobName {
                prefix: false,
                lower,
            } => job.name.to_lowercase() == *lower,
            Filter::BeforeCreatedAt(t) => job.created_at < *t,
            Filter::AfterCreatedAt(t) => job.created_at > *t,
            // Jobs of a quota-share queue carry no share identifier.
            Filter::ShareIdentifier => false,
            Filter::QuotaShareName(s) => job.share == *s,
        }
    }
}

/// Status filter and filters per reference §3.3: without a filter only `jobStatus` (default
/// RUNNING) applies; `JOB_NAME`, `BEFORE_CREATED_AT` and `AFTER_CREATED_AT` ignore `jobStatus`;
/// `SHARE_IDENTIFIER` and `QUOTA_SHARE_NAME` combine with it. Results are newest first
/// (`createdAt` descending, then submission order descending), with or without a filter.
/// `jobQueue` is required (the model makes it optional; its absence is undocumented).
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
    let cursor = req
        .next_token
        .as_deref()
        .filter(|t| !t.is_empty())
        .map(paging::decode_cursor)
        .transpose()?;
    let mut hits: Vec<(i64, u32, ServiceJob)> = world
        .engine
        .jobs()
        .enumerate()
        .filter(|(_, j)| status.is_none_or(|s| j.status == s))
        .filter(|(_, j)| filter.as_ref().is_none_or(|f| f.matches(j)))
        .map(|(i, j)| (j.created_at, i as u32, j))
        .filter(|(c, i, _)| cursor.is_none_or(|cur| (*c, *i) < cur))
        .collect();
    hits.sort_by_key(|h| std::cmp::Reverse((h.0, h.1)));
    let more = hits.len() > size;
    hits.truncate(size);
    let next = if more {
        hits.last().map(|(c, i, _)| paging::encode_cursor(*c, *i))
    } else {
        None
    };
    let list: Vec<ServiceJobSummary> = hits
        .into_iter()
        .map(|(_, _, j)| summary(world, j))
        .collect();
    let mut out = serde_json::json!({ "jobSummaryList": list });
    if let Some(next) = next {
        out["nextToken"] = next.into();
    }
    ok(&out)
}
