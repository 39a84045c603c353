//! Reading a request body within [`MAX_BODY`] and the body timeout, draining what is too large.

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, header};

use super::super::error::ApiError;
use super::MAX_BODY;

/// Bodies up to this size are read (and thrown away) even when too large, so that the client
/// has sent everything before it reads the 400: closing a socket with unread data resets the
/// connection and can destroy the response before the client sees it.
const DRAIN_LIMIT: usize = 1024 * 1024;

/// Reads the whole body, refusing more than [`MAX_BODY`] bytes with a ClientException. At most
/// `MAX_BODY` bytes are ever held: the rest of a larger body (up to [`DRAIN_LIMIT`]) is read and
/// dropped piece by piece. A body that does not arrive within `timeout` is refused too.
pub(super) async fn read_body(
    headers: &HeaderMap,
    body: Body,
    timeout: Duration,
) -> Result<Bytes, ApiError> {
    use futures_util::StreamExt;
    let too_big = || ApiError::client(format!("Request body is larger than {MAX_BODY} bytes"));
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > DRAIN_LIMIT as u64) {
        return Err(too_big());
    }
    let read = async {
        let mut stream = body.into_data_stream();
        let mut kept: Vec<u8> = Vec::new();
        let mut seen = 0usize;
        while let Some(chunk) = stream.next().await {
            let chunk =
                chunk.map_err(|e| ApiError::client(format!("Cannot read request body: {e}")))?;
            seen += chunk.len();
            if seen > DRAIN_LIMIT {
                return Err(too_big());
            }
            if seen <= MAX_BODY {
                kept.extend_from_slice(&chunk);
            } else if !kept.is_empty() {
                // Too big: stop keeping anything, read on only to drain.
                kept = Vec::new();
            }
        }
        if seen > MAX_BODY {
            Err(too_big())
        } else {
            Ok(Bytes::from(kept))
        }
    };
    match tokio::time::timeout(timeout, read).await {
        Ok(result) => result,
        Err(_) => Err(ApiError::client(format!(
            "Request body not received within {} s",
            timeout.as_secs()
        ))),
    }
}
