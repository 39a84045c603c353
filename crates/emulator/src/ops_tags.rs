//! TagResource, UntagResource and ListTagsForResource on `/v1/tags/{resourceArn}`.
//!
//! Tags live in maps keyed by ARN: the account's (environments, policies, queues) and each
//! queue's (its jobs and quota shares); the Describe operations read them too.

use std::collections::HashMap;

use axum::response::Response;

use super::account::Account;
use super::error::ApiError;
use super::wire::{self, TagResourceRequest, Tags, ok, parse, required};

/// At most 50 tags per resource; keys 1–128 characters, values up to 256.
pub fn validate_tags(tags: &Tags) -> Result<(), ApiError> {
    if tags.len() > 50 {
        return Err(ApiError::client(format!(
            "A resource can have at most 50 tags, got {}",
            tags.len()
        )));
    }
    for (k, v) in tags {
        if k.is_empty() || k.chars().count() > 128 {
            return Err(ApiError::client(format!(
                "Tag key {k:?} must be 1 to 128 characters"
            )));
        }
        if k.to_ascii_lowercase().starts_with("aws:") {
            return Err(ApiError::client(format!(
                "Tag key {k:?} uses the reserved prefix aws:"
            )));
        }
        if v.chars().count() > 256 {
            return Err(ApiError::client(format!(
                "Tag value for {k:?} must be at most 256 characters"
            )));
        }
    }
    Ok(())
}

/// The tag map holding `arn`'s tags: the account's for environments, policies and queues, a
/// queue's for its jobs and quota shares.
fn tags_of<'a>(
    account: &'a mut Account,
    arn: &str,
) -> Result<&'a mut HashMap<String, Tags>, ApiError> {
    if arn.is_empty() {
        return Err(ApiError::client("resourceArn is required"));
    }
    if account.owns(arn) {
        return Ok(&mut account.tags);
    }
    account
        .queues
        .iter_mut()
        .find(|q| q.owns(arn))
        .map(|q| &mut q.tags)
        .ok_or_else(|| ApiError::client(format!("Resource {arn} does not exist")))
}

pub fn tag(account: &mut Account, arn: &str, body: &[u8]) -> Result<Response, ApiError> {
    let req: TagResourceRequest = parse(body)?;
    let tags = required(req.tags, "tags")?;
    if tags.is_empty() {
        return Err(ApiError::client("tags must have at least 1 entry"));
    }
    let map = tags_of(account, arn)?;
    let mut merged = map.get(arn).cloned().unwrap_or_default();
    merged.extend(tags);
    validate_tags(&merged)?;
    map.insert(arn.to_string(), merged);
    wire::ok_empty()
}

pub fn untag(account: &mut Account, arn: &str, keys: &[String]) -> Result<Response, ApiError> {
    if keys.is_empty() {
        return Err(ApiError::client("tagKeys is required"));
    }
    if let Some(tags) = tags_of(account, arn)?.get_mut(arn) {
        for k in keys {
            tags.remove(k);
        }
    }
    wire::ok_empty()
}

pub fn list(account: &mut Account, arn: &str) -> Result<Response, ApiError> {
    let tags = tags_of(account, arn)?.get(arn).cloned().unwrap_or_default();
    ok(&serde_json::json!({ "tags": tags }))
}
