//! The shape of a request's SigV4 signature, checked as AWS checks it before anything else
//! (the secret is not: any key signs). An unsigned request is refused with 403
//! `MissingAuthenticationToken`, a malformed `Authorization` header with 403
//! `IncompleteSignature`, and a request signed for another service (its credential scope names
//! `s3`, say) with 403 `InvalidSignature`. `EmulatorConfig::auth_check` off
//! (`quotatop emulator --no-auth-check`) serves unsigned requests too, for tools that send none.

use axum::http::{HeaderMap, header};

/// The signing algorithm every SigV4 `Authorization` header names.
const ALGORITHM: &str = "AWS4-HMAC-SHA256";

/// Why a request's signature is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthError {
    /// No `Authorization` header.
    Missing,
    /// An `Authorization` header without the SigV4 parts (what is wrong).
    Incomplete(String),
    /// Signed for `signed_for`, not for this service.
    WrongService { signed_for: String },
}

impl AuthError {
    /// The error code AWS sends: restJson1 services (Batch) add `Exception`, awsQuery (STS)
    /// does not.
    pub fn code(&self, json: bool) -> &'static str {
        match (self, json) {
            (AuthError::Missing, true) => "MissingAuthenticationTokenException",
            (AuthError::Missing, false) => "MissingAuthenticationToken",
            (AuthError::Incomplete(_), true) => "IncompleteSignatureException",
            (AuthError::Incomplete(_), false) => "IncompleteSignature",
            (AuthError::WrongService { .. }, true) => "InvalidSignatureException",
            (AuthError::WrongService { .. }, false) => "SignatureDoesNotMatch",
        }
    }

    /// AWS's message, for a request to `service`.
    pub fn message(&self, service: &str) -> String {
        match self {
            AuthError::Missing => "Missing Authentication Token".to_string(),
            AuthError::Incomplete(why) => {
                format!("{why} (the request must be signed with AWS Signature Version 4)")
            }
            AuthError::WrongService { signed_for } => format!(
                "Credential should be scoped to correct service: '{service}' (it is scoped to {:?})",
                quotatop_model::clean(signed_for)
            ),
        }
    }
}

/// What a well-formed SigV4 credential scope names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credential {
    pub access_key: String,
    pub region: String,
    pub service: String,
}

/// Checks the SigV4 shape of a request for `service` (`batch`, `sts`).
pub fn check(headers: &HeaderMap, service: &str) -> Result<Credential, AuthError> {
    let Some(auth) = headers.get(header::AUTHORIZATION) else {
        return Err(AuthError::Missing);
    };
    let auth = auth
        .to_str()
        .map_err(|_| AuthError::Incomplete("the Authorization header is not text".into()))?;
    let credential = parse(auth)?;
    let date = headers
        .get("x-amz-date")
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| AuthError::Incomplete("the request has no X-Amz-Date header".to_string()))?;
    if !is_amz_date(date) {
        return Err(AuthError::Incomplete(format!(
            "X-Amz-Date {:?} is not of the form YYYYMMDDTHHMMSSZ",
            quotatop_model::clean(date)
        )));
    }
    if credential.service != service {
        return Err(AuthError::WrongService {
            signed_for: credential.service,
        });
    }
    Ok(credential)
}

/// `AWS4-HMAC-SHA256 Credential=KEY/YYYYMMDD/REGION/SERVICE/aws4_request,
/// SignedHeaders=h1;h2, Signature=<64 hex digits>`.
fn parse(auth: &str) -> Result<Credential, AuthError> {
    let Some(rest) = auth.strip_prefix(ALGORITHM) else {
        return Err(AuthError::Incomplete(format!(
            "the Authorization header must start with {ALGORITHM}"
        )));
    };
    let field = |name: &str| {
        rest.split(',')
            .map(str::trim)
            .find_map(|part| part.strip_prefix(name)?.strip_prefix('='))
            .filter(|v| !v.is_empty())
            .ok_or_else(|| {
                AuthError::Incomplete(format!("Authorization header requires '{name}' parameter"))
            })
    };
    let scope = field("Credential")?;
    let signed = field("SignedHeaders")?;
    let signature = field("Signature")?;
    if !signed.split(';').any(|h| h == "host") {
        return Err(AuthError::Incomplete(
            "SignedHeaders must include host".to_string(),
        ));
    }
    if signature.len() != 64 || !signature.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(AuthError::Incomplete(
            "Signature must be 64 hexadecimal digits".to_string(),
        ));
    }
    let parts: Vec<&str> = scope.split('/').collect();
    let [key, day, region, service, "aws4_request"] = parts.as_slice() else {
        return Err(AuthError::Incomplete(format!(
            "Credential {:?} must be KEY/YYYYMMDD/REGION/SERVICE/aws4_request",
            quotatop_model::clean(scope)
        )));
    };
    if key.is_empty() || day.len() != 8 || !day.bytes().all(|b| b.is_ascii_digit()) {
        return Err(AuthError::Incomplete(format!(
            "Credential {:?} must be KEY/YYYYMMDD/REGION/SERVICE/aws4_request",
            quotatop_model::clean(scope)
        )));
    }
    Ok(Credential {
        access_key: key.to_string(),
        region: region.to_string(),
        service: service.to_string(),
    })
}

/// `20261201T142233Z`.
fn is_amz_date(d: &str) -> bool {
    let b = d.as_bytes();
    b.len() == 16
        && b[8] == b'T'
        && b[15] == b'Z'
        && b[..8].iter().chain(&b[9..15]).all(u8::is_ascii_digit)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(auth: Option<&'static str>, date: Option<&'static str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(a) = auth {
            h.insert(header::AUTHORIZATION, HeaderValue::from_static(a));
        }
        if let Some(d) = date {
            h.insert("x-amz-date", HeaderValue::from_static(d));
        }
        h
    }

    const SIG: &str = "AWS4-HMAC-SHA256 Credential=AKIDTEST/20261201/eu-west-1/batch/aws4_request, SignedHeaders=host;x-amz-date, Signature=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn a_sigv4_shaped_request_passes_and_others_are_told_why_not() {
        let ok = check(&headers(Some(SIG), Some("20261201T142233Z")), "batch").unwrap();
        assert_eq!(
            (ok.access_key.as_str(), ok.region.as_str()),
            ("AKIDTEST", "eu-west-1")
        );
        assert_eq!(
            check(&headers(None, None), "batch"),
            Err(AuthError::Missing)
        );
        assert_eq!(
            check(&headers(Some(SIG), Some("20261201T142233Z")), "sts"),
            Err(AuthError::WrongService {
                signed_for: "batch".into()
            })
        );
        assert!(matches!(
            check(&headers(Some(SIG), None), "batch"),
            Err(AuthError::Incomplete(_))
        ));
        assert!(matches!(
            check(
                &headers(Some("Bearer x"), Some("20261201T142233Z")),
                "batch"
            ),
            Err(AuthError::Incomplete(_))
        ));
        assert!(matches!(
            check(
                &headers(
                    Some(
                        "AWS4-HMAC-SHA256 Credential=K/20261201/us-east-1/batch/aws4_request, SignedHeaders=host, Signature=zz"
                    ),
                    Some("20261201T142233Z")
                ),
                "batch"
            ),
            Err(AuthError::Incomplete(_))
        ));
    }
}
