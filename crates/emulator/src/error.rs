//! The emulator's errors: [`EmulatorError`] for starting and configuring it, [`ApiError`] for
//! what a request gets back on the wire.

use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use quotatop_engine::EngineError;

/// Why the emulator could not be set up or run. Messages do not repeat their `source`: the
/// chain (anyhow's `{:#}`, [`quotatop_model::error_chain`]) names each cause once.
#[derive(Debug, thiserror::Error)]
pub enum EmulatorError {
    #[error("cannot read scenario {path}")]
    ReadScenario {
        path: String,
        source: std::io::Error,
    },
    #[error("invalid scenario {path}: {message}")]
    ParseScenario { path: String, message: String },
    #[error("invalid scenario: {0}")]
    Scenario(String),
    #[error("invalid fault spec: {0}")]
    Faults(String),
    #[error("cannot bind {addr}")]
    Bind {
        addr: std::net::SocketAddr,
        source: std::io::Error,
    },
    #[error(
        "refusing to bind {0}: it is not a loopback address, and the emulator checks a signature's shape, not its secret (anyone who can reach it can submit, change and terminate jobs); allow it explicitly (--allow-remote) only on a network you trust"
    )]
    RemoteBind(std::net::IpAddr),
    #[error("the emulator's state is unusable after a panic in a request handler")]
    Poisoned,
    #[error("the emulator holds no job queue in its home region (started --empty, or deleted)")]
    NoQueue,
    #[error("the engine refused the scenario")]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Api(#[from] ApiError),
    #[error("server task failed: {0}")]
    Join(String),
}

/// An error response in the Batch restJson1 shape.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApiError {
    /// HTTP 400 `ClientException`: bad input, unknown resource, refused operation.
    #[error("{0}")]
    Client(String),
    /// HTTP 500 `ServerException`.
    #[error("{0}")]
    Server(String),
    /// HTTP 429 `TooManyRequestsException`, which the SDK classifies as throttling and retries.
    #[error("Too Many Requests")]
    Throttled,
    /// HTTP 404 for a path that is no Batch operation.
    #[error("{0}")]
    UnknownOperation(String),
    /// HTTP 403 `AccessDeniedException` (injected by the `deny` fault).
    #[error("{0}")]
    AccessDenied(String),
    /// HTTP 403 `ExpiredTokenException` (injected by the `expired-token` fault).
    #[error("{0}")]
    ExpiredToken(String),
    /// An error another service (CloudWatch Logs, S3) names its own way.
    #[error("{message}")]
    Service {
        status: u16,
        code: &'static str,
        message: String,
    },
    /// HTTP 403 for a request not signed as AWS requires (`auth.rs`): the code says how.
    #[error("{message}")]
    Unauthenticated { code: &'static str, message: String },
}

impl ApiError {
    pub fn client(message: impl Into<String>) -> Self {
        Self::Client(message.into())
    }

    pub fn status(&self) -> StatusCode {
        match self {
            Self::Client(_) => StatusCode::BAD_REQUEST,
            Self::Server(_) => StatusCode::INTERNAL_SERVER_ERROR,
            Self::Throttled => StatusCode::TOO_MANY_REQUESTS,
            Self::UnknownOperation(_) => StatusCode::NOT_FOUND,
            Self::AccessDenied(_) | Self::ExpiredToken(_) | Self::Unauthenticated { .. } => {
                StatusCode::FORBIDDEN
            }
            Self::Service { status, .. } => {
                StatusCode::from_u16(*status).unwrap_or(StatusCode::BAD_REQUEST)
            }
        }
    }

    /// The error code sent as `x-amzn-ErrorType` and `__type`.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Client(_) => "ClientException",
            Self::Server(_) => "ServerException",
            Self::Throttled => "TooManyRequestsException",
            Self::UnknownOperation(_) => "UnknownOperationException",
            Self::AccessDenied(_) => "AccessDeniedException",
            Self::ExpiredToken(_) => "ExpiredTokenException",
            Self::Service { code, .. } => code,
            Self::Unauthenticated { code, .. } => code,
        }
    }
}

impl From<EngineError> for ApiError {
    fn from(e: EngineError) -> Self {
        match e {
            EngineError::ClockBackwards { .. } => ApiError::Server(e.to_string()),
            other => ApiError::Client(capitalize(&other.to_string())),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({ "__type": self.code(), "message": self.to_string() });
        let mut response = (self.status(), axum::Json(body)).into_response();
        response
            .headers_mut()
            .insert("x-amzn-ErrorType", HeaderValue::from_static(self.code()));
        response
    }
}

/// Engine messages start in lower case; AWS messages start with a capital.
fn capitalize(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_errors_become_client_exceptions_with_capitalised_messages() {
        let e: ApiError = EngineError::UnknownShare("qs".into()).into();
        assert_eq!(e, ApiError::Client("Quota share qs does not exist".into()));
        assert_eq!(e.status(), StatusCode::BAD_REQUEST);
        let e: ApiError = EngineError::ClockBackwards { now: 2, to: 1 }.into();
        assert_eq!(e.code(), "ServerException");
    }
}
