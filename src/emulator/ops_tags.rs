//! TagResource, UntagResource and ListTagsForResource on `/v1/tags/{resourceArn}`.
//!
//! Every resource's tags live in one map keyed by ARN; the Describe operations read it too.

use axum::response::Response;

use super::error::ApiError;
use super::state::World;
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

fn check_resource(world: &World, arn: &str) -> Result<(), ApiError> {
    if arn.is_empty() {
        return Err(ApiError::client("resourceArn is required"));
    }
    if world.resource_exists(arn) {
        Ok(())
    } else {
        Err(ApiError::client(format!("Resource {arn} does not exist")))
    }
}

pub fn tag(world: &mut World, arn: &str, body: &[u8]) -> Result<Response, ApiError> {
    let req: TagResourceRequest = parse(body)?;
    let tags = required(req.tags, "tags")?;
    if tags.is_empty() {
        return Err(ApiError::client("tags must have at least 1 entry"));
    }
    check_resource(world, arn)?;
    let mut merged = world.tags.get(arn).cloned().unwrap_or_default();
    merged.extend(tags);
    validate_tags(&merged)?;
    world.tags.insert(arn.to_string(), merged);
    wire::ok_empty()
}

pub fn untag(world: &mut World, arn: &str, keys: &[String]) -> Result<Response, ApiError> {
    if keys.is_empty() {
        return Err(ApiError::client("tagKeys is required"));
    }
    check_resource(world, arn)?;
    if let Some(tags) = world.tags.get_mut(arn) {
        for k in keys {
            tags.remove(k);
        }
    }
    wire::ok_empty()
}

pub fn list(world: &mut World, arn: &str) -> Result<Response, ApiError> {
    check_resource(world, arn)?;
    let tags = world.tags.get(arn).cloned().unwrap_or_default();
    ok(&serde_json::json!({ "tags": tags }))
}
