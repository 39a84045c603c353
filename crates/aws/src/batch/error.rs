//! [`BatchError`]: every failure of a Batch call, sorted into what the console does about it.

use super::Op;
use aws_sdk_batch::error::{ProvideErrorMetadata, SdkError};

/// Error codes the SDK's retry classifier treats as throttling (reference §4), plus the HTTP
/// status Batch uses for it.
const THROTTLING_CODES: &[&str] = &[
    "Throttling",
    "ThrottlingException",
    "ThrottledException",
    "RequestThrottledException",
    "TooManyRequestsException",
    "ProvisionedThroughputExceededException",
    "RequestLimitExceeded",
    "BandwidthLimitExceeded",
    "LimitExceededException",
    "RequestThrottled",
    "SlowDown",
];

/// Codes that mean the credentials were refused or do not allow the call.
const DENIED_CODES: &[&str] = &[
    "AccessDenied",
    "AccessDeniedException",
    "UnrecognizedClientException",
    "InvalidSignatureException",
    "SignatureDoesNotMatch",
    "InvalidClientTokenId",
    "UnauthorizedOperation",
    "MissingAuthenticationToken",
];

/// Codes that mean the credentials were good but have expired (a session's token): refreshing
/// them is the fix, not another policy.
const EXPIRED_CODES: &[&str] = &["ExpiredToken", "ExpiredTokenException", "RequestExpired"];

/// What the console and the commands say of expired credentials.
pub const CREDENTIALS_EXPIRED: &str = "credentials expired — refresh them";

/// A failed AWS Batch call. `op` is the operation name (e.g. `DescribeServiceJob`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BatchError {
    /// The service throttled the call and the SDK's retries did not get through.
    #[error("{op}: throttled by {}: {message}", op.service())]
    Throttled { op: Op, message: String },
    /// Credentials are refused, or lack permission.
    #[error("{op}: access denied: {message}")]
    Denied { op: Op, message: String },
    /// The credentials' session expired (`ExpiredTokenException`): refresh them.
    #[error(
        "{op}: {CREDENTIALS_EXPIRED} (aws sso login, a new session token, or your credential process; {message})"
    )]
    Expired { op: Op, message: String },
    /// No credentials were found at all (nothing was sent).
    #[error("{op}: {NO_CREDENTIALS} ({message})")]
    NoCredentials { op: Op, message: String },
    /// The queue, share or job does not exist.
    #[error("{op}: not found: {message}")]
    NotFound { op: Op, message: String },
    /// No answer: connection refused, DNS, TLS, timeout.
    #[error("{op}: cannot reach the {} endpoint: {message}", op.service())]
    Unreachable { op: Op, message: String },
    /// Anything else (a server error after retries, a rejected parameter, a malformed answer).
    #[error("{op}: {message}")]
    Other { op: Op, message: String },
    /// The client could not be configured (no region, bad profile).
    #[error("AWS client configuration: {0}")]
    Config(String),
}

/// Why the AWS principal behind the credentials is not known (STS GetCallerIdentity).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdentityError {
    #[error("STS answered without an ARN")]
    NoArn,
    /// STS did not answer: the SDK's error with its causes, cleaned for a terminal.
    #[error("{0}")]
    Sts(String),
}

/// What the console and the commands say when the credential chain found nothing.
pub const NO_CREDENTIALS: &str =
    "no credentials found (AWS_PROFILE/AWS_ACCESS_KEY_ID/~/.aws; any keys work for the emulator)";

/// The kind of a [`BatchError`], for health accounting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    Throttled,
    Denied,
    Expired,
    NoCredentials,
    NotFound,
    Unreachable,
    Other,
}

impl BatchError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            BatchError::Throttled { .. } => ErrorKind::Throttled,
            BatchError::Denied { .. } => ErrorKind::Denied,
            BatchError::Expired { .. } => ErrorKind::Expired,
            BatchError::NoCredentials { .. } => ErrorKind::NoCredentials,
            BatchError::NotFound { .. } => ErrorKind::NotFound,
            BatchError::Unreachable { .. } => ErrorKind::Unreachable,
            BatchError::Other { .. } | BatchError::Config(_) => ErrorKind::Other,
        }
    }

    /// A malformed answer: a required field is missing.
    pub(crate) fn missing(op: Op, field: &str) -> Self {
        BatchError::Other {
            op,
            message: format!("response lacks {field}"),
        }
    }
}

pub(crate) fn is_throttling_code(code: &str) -> bool {
    THROTTLING_CODES.contains(&code)
}

/// Sorts an SDK error into a [`BatchError`]. `endpoint` is the `--endpoint-url` in use (`None`:
/// the region's AWS endpoint), named when an answer says nothing else.
pub(crate) fn classify<E>(op: Op, err: SdkError<E>, endpoint: Option<&str>) -> BatchError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    match &err {
        SdkError::ServiceError(ctx) => {
            let status = ctx.raw().status().as_u16();
            let e = ctx.err();
            let code = e.code().unwrap_or("");
            let message = e.message().unwrap_or("").to_string();
            let message = if code.is_empty() && message.trim().is_empty() {
                blank_answer(status, ctx.raw().body().bytes().unwrap_or(&[]), endpoint)
            } else {
                message
            };
            classify_service(op, status, code, message)
        }
        SdkError::TimeoutError(_) => BatchError::Unreachable {
            op,
            message: "timed out".to_string(),
        },
        SdkError::DispatchFailure(d) => {
            let message = chain(&err);
            // Identity resolution fails before anything is sent; the SDK reports it as a
            // dispatch failure that is neither I/O nor a timeout.
            if !d.is_io() && !d.is_timeout() && message.to_ascii_lowercase().contains("credential")
            {
                BatchError::NoCredentials { op, message }
            } else {
                BatchError::Unreachable {
                    op,
                    message: with_tls_hint(message),
                }
            }
        }
        // Each cause's Display once: DisplayErrorContext adds the SDK's Debug dump.
        _ => BatchError::Other {
            op,
            message: chain(&err),
        },
    }
}

/// `message` with what to do when it says the server's certificate was not trusted: its CA is
/// not one this machine trusts (a proxy's, a private endpoint's).
fn with_tls_hint(message: String) -> String {
    let lower = message.to_ascii_lowercase();
    if lower.contains("unknownissuer") || lower.contains("unknown issuer") {
        format!(
            "{message}; the endpoint's certificate is signed by a CA this machine does not trust: set AWS_CA_BUNDLE (or the profile's ca_bundle) to that CA's PEM file"
        )
    } else {
        message
    }
}

/// What to say about an answer with neither an error code nor a message (an empty body): its
/// HTTP status, who answered, and what to check. Such an answer comes from something that is
/// not the AWS Batch API: a wrong `--endpoint-url`, a proxy, a load balancer.
pub(crate) fn blank_answer(status: u16, body: &[u8], endpoint: Option<&str>) -> String {
    let (from, check) = match endpoint {
        Some(e) => (
            e.to_string(),
            "check --endpoint-url (or AWS_ENDPOINT_URL / the profile's endpoint_url)",
        ),
        None => (
            "the region's AWS endpoint".to_string(),
            "check --region and any proxy (HTTPS_PROXY) in between",
        ),
    };
    format!(
        "HTTP {status} with {} from {from}: is this an AWS Batch endpoint? {check}",
        what_body(body)
    )
}

/// An answer's body that carries no AWS error, in words: empty, an HTML page (its title), or
/// its first characters.
fn what_body(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.is_empty() {
        return "an empty body".to_string();
    }
    let short = |t: &str| {
        let t: String = t.split_whitespace().collect::<Vec<_>>().join(" ");
        let cut: String = t.chars().take(80).collect();
        quotatop_model::clean_text(&cut)
    };
    let lower = text.to_ascii_lowercase();
    if lower.starts_with('<') {
        let title = lower
            .find("<title>")
            .and_then(|a| Some((a + 7, lower[a + 7..].find("</title>")? + a + 7)))
            .and_then(|(a, b)| text.get(a..b))
            .map(short)
            .filter(|t| !t.is_empty());
        return match title {
            Some(t) => format!("an HTML page ({t:?}), not an AWS answer"),
            None => "an HTML page, not an AWS answer".to_string(),
        };
    }
    format!("a body that is no AWS answer ({:?})", short(text))
}

/// Error codes the SDK's retry classifier treats as transient.
const TRANSIENT_CODES: &[&str] = &[
    "RequestTimeout",
    "RequestTimeoutException",
    "PriorRequestNotComplete",
];

/// A failure worth retrying after a back-off that is not a throttle: a 5xx answer, a timeout,
/// an I/O error or an unreadable answer (what the SDK's standard retry classifiers retry).
pub(crate) fn is_transient<E>(err: &SdkError<E>) -> bool
where
    E: ProvideErrorMetadata,
{
    match err {
        SdkError::ServiceError(ctx) => {
            matches!(ctx.raw().status().as_u16(), 500 | 502 | 503 | 504)
                || ctx
                    .err()
                    .code()
                    .is_some_and(|c| TRANSIENT_CODES.contains(&c))
        }
        SdkError::TimeoutError(_) | SdkError::ResponseError(_) => true,
        SdkError::DispatchFailure(d) => d.is_io() || d.is_timeout(),
        _ => false,
    }
}

/// `outer: inner: innermost`, each cause's Display once (no Debug dump).
pub(crate) fn chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = cur {
        let text = e.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        cur = e.source();
    }
    parts.join(": ")
}

/// The part of [`classify`] that looks at a service's answer: pure, so it is unit-tested.
pub(crate) fn classify_service(op: Op, status: u16, code: &str, message: String) -> BatchError {
    let with_code = |m: String| {
        if code.is_empty() {
            m
        } else if m.is_empty() {
            code.to_string()
        } else {
            format!("{code}: {m}")
        }
    };
    if status == 429 || is_throttling_code(code) {
        BatchError::Throttled {
            op,
            message: with_code(message),
        }
    } else if EXPIRED_CODES.contains(&code) {
        BatchError::Expired {
            op,
            message: with_code(message),
        }
    } else if status == 401 || status == 403 || DENIED_CODES.contains(&code) {
        BatchError::Denied {
            op,
            message: with_code(message),
        }
    } else if (code == "ClientException" || code.ends_with("NotFoundException"))
        && looks_not_found(&message)
    {
        BatchError::NotFound { op, message }
    } else {
        BatchError::Other {
            op,
            message: with_code(message),
        }
    }
}

fn looks_not_found(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    m.contains("does not exist") || m.contains("not found") || m.contains("cannot be found")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_answers_are_sorted_by_status_and_code() {
        let k = |status, code: &str, msg: &str| {
            classify_service(Op::ListServiceJobs, status, code, msg.to_string()).kind()
        };
        assert_eq!(
            k(429, "TooManyRequestsException", "Too Many Requests"),
            ErrorKind::Throttled
        );
        assert_eq!(
            k(400, "ThrottlingException", "Rate exceeded"),
            ErrorKind::Throttled
        );
        assert_eq!(k(403, "", ""), ErrorKind::Denied);
        assert_eq!(
            k(
                403,
                "ExpiredTokenException",
                "The security token included in the request is expired"
            ),
            ErrorKind::Expired
        );
        assert_eq!(
            k(400, "UnrecognizedClientException", "bad token"),
            ErrorKind::Denied
        );
        assert_eq!(
            k(400, "ClientException", "Job queue q does not exist"),
            ErrorKind::NotFound
        );
        assert_eq!(
            k(
                400,
                "ClientException",
                "maxResults must be between 1 and 100"
            ),
            ErrorKind::Other
        );
        assert_eq!(k(500, "ServerException", "boom"), ErrorKind::Other);
    }

    #[test]
    fn an_answer_without_an_error_says_what_came() {
        let e = Some("http://127.0.0.1:5000");
        assert!(blank_answer(404, b"", e).contains("HTTP 404 with an empty body"));
        let moto =
            b"<!doctype html>\n<html lang=en>\n<title>404 Not Found</title>\n<h1>Not Found</h1>";
        let m = blank_answer(404, moto, e);
        assert!(
            m.starts_with("HTTP 404 with an HTML page (\"404 Not Found\"), not an AWS answer from http://127.0.0.1:5000"),
            "{m}"
        );
        let other = blank_answer(502, b"Bad gateway\x1b[2J", None);
        assert!(other.contains("a body that is no AWS answer"), "{other}");
        assert!(!other.contains('\u{1b}'), "{other}");
    }

    #[test]
    fn messages_keep_the_code_and_the_operation() {
        let e = classify_service(Op::ListServiceJobs, 500, "ServerException", "boom".into());
        assert_eq!(e.to_string(), "ListServiceJobs: ServerException: boom");
    }
}
