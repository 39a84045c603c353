//! STS `GetCallerIdentity` on the emulator's endpoint, so that a client pointed at the emulator
//! (quotatop's audit log, boto3, the AWS CLI) learns who it is, as it would from AWS.
//!
//! STS speaks the awsQuery protocol: `POST /` with a form body
//! (`Action=GetCallerIdentity&Version=2011-06-15`) and an XML answer. The caller is the IAM user
//! named after the access key id in the request's SigV4 `Authorization` header (any static key
//! works, as everywhere in the emulator), or for temporary credentials (`ASIA…`) a session of
//! the role [`ASSUMED_ROLE`]; a request without a signature, or signed for another service, is
//! refused as AWS refuses it.

use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::auth::{self, AuthError};
use super::hash::fnv1a;

const XMLNS: &str = "https://sts.amazonaws.com/doc/2011-06-15/";

/// The answer to an awsQuery request on `/`. With `auth_check`, the request must be signed
/// for `sts` (see `auth.rs`); without, any `Authorization` header naming a key will do.
pub fn handle(
    headers: &HeaderMap,
    body: &Bytes,
    request_id: &str,
    account: &str,
    auth_check: bool,
) -> Response {
    let params: Vec<(String, String)> = form_urlencoded::parse(body)
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let get = |k: &str| {
        params
            .iter()
            .find(|(name, _)| name == k)
            .map(|(_, v)| v.as_str())
    };
    match get("Action") {
        Some("GetCallerIdentity") => {}
        Some(other) => {
            return error(
                StatusCode::BAD_REQUEST,
                "InvalidAction",
                &format!(
                    "Could not find operation {} for version 2011-06-15",
                    xml_escape(other)
                ),
                request_id,
            );
        }
        None => {
            return error(
                StatusCode::BAD_REQUEST,
                "MissingAction",
                "Missing Action",
                request_id,
            );
        }
    }
    let key = if auth_check {
        auth::check(headers, "sts").map(|c| c.access_key)
    } else {
        access_key_id(headers).ok_or(AuthError::Missing)
    };
    let key = match key {
        Ok(key) => key,
        Err(e) => {
            return error(
                StatusCode::FORBIDDEN,
                e.code(false),
                &xml_escape(&e.message("sts")),
                request_id,
            );
        }
    };
    let (arn, user_id) = caller(&key, account);
    let body = format!(
        "<GetCallerIdentityResponse xmlns=\"{XMLNS}\">\n  <GetCallerIdentityResult>\n    <Arn>{arn}</Arn>\n    <UserId>{user_id}</UserId>\n    <Account>{account}</Account>\n  </GetCallerIdentityResult>\n  <ResponseMetadata>\n    <RequestId>{request_id}</RequestId>\n  </ResponseMetadata>\n</GetCallerIdentityResponse>\n"
    );
    xml(StatusCode::OK, body, request_id)
}

/// The role temporary (`ASIA…`) credentials of the emulated account belong to.
pub const ASSUMED_ROLE: &str = "emulator-role";

/// Who signed with `key`: an IAM user named after a long-term key (`AKIA…` and any other);
/// for temporary credentials (`ASIA…`), as AWS answers, a session of [`ASSUMED_ROLE`] named
/// after the key. Returns the ARN and the user id.
fn caller(key: &str, account: &str) -> (String, String) {
    let name = iam_name(key);
    if key.starts_with("ASIA") {
        let role_id = format!("AROA{}", &unique_id(key)[4..]);
        (
            format!("arn:aws:sts::{account}:assumed-role/{ASSUMED_ROLE}/{name}"),
            format!("{role_id}:{name}"),
        )
    } else {
        (
            format!("arn:aws:iam::{account}:user/{name}"),
            unique_id(key),
        )
    }
}

/// A CloudTrail record's `userIdentity` of the caller who signed with `key` (the principal
/// [`caller`] names, as GetCallerIdentity answers it).
pub fn user_identity(key: &str, account: &str) -> serde_json::Value {
    let (arn, principal) = caller(key, account);
    if key.starts_with("ASIA") {
        let role_id = principal.split(':').next().unwrap_or("").to_string();
        serde_json::json!({
            "type": "AssumedRole",
            "principalId": principal,
            "arn": arn,
            "accountId": account,
            "accessKeyId": key,
            "sessionContext": {"sessionIssuer": {
                "type": "Role",
                "principalId": role_id,
                "arn": format!("arn:aws:iam::{account}:role/{ASSUMED_ROLE}"),
                "accountId": account,
                "userName": ASSUMED_ROLE,
            }},
        })
    } else {
        serde_json::json!({
            "type": "IAMUser",
            "principalId": principal,
            "arn": arn,
            "accountId": account,
            "accessKeyId": key,
            "userName": iam_name(key),
        })
    }
}

/// The access key id of a SigV4 `Authorization` header (`… Credential=AKID/date/region/…`).
pub fn access_key_id(headers: &HeaderMap) -> Option<String> {
    let auth = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let cred = auth.split("Credential=").nth(1)?;
    let key = cred.split('/').next()?.trim();
    (!key.is_empty()).then(|| key.to_string())
}

/// An IAM user name from an access key id: the characters IAM allows (`\w+=,.@-`), at most 64.
fn iam_name(key: &str) -> String {
    let name: String = key
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || "_+=,.@-".contains(*c))
        .take(64)
        .collect();
    if name.is_empty() {
        "emulator-user".to_string()
    } else {
        name
    }
}

/// A stable, AWS-shaped unique id (`AIDA` + 17 upper-case characters) for an access key.
fn unique_id(key: &str) -> String {
    let h = fnv1a(key.bytes());
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let mut id = String::from("AIDA");
    for i in 0..17 {
        let v = (h.rotate_left(i * 5) & 31) as usize;
        id.push(ALPHABET[v] as char);
    }
    id
}

fn xml(status: StatusCode, body: String, request_id: &str) -> Response {
    let mut r = (status, body).into_response();
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/xml"));
    if let Ok(v) = HeaderValue::from_str(request_id) {
        r.headers_mut().insert("x-amzn-RequestId", v);
    }
    r
}

fn error(status: StatusCode, code: &str, message: &str, request_id: &str) -> Response {
    let body = format!(
        "<ErrorResponse xmlns=\"{XMLNS}\">\n  <Error>\n    <Type>Sender</Type>\n    <Code>{code}</Code>\n    <Message>{message}</Message>\n  </Error>\n  <RequestId>{request_id}</RequestId>\n</ErrorResponse>\n"
    );
    xml(status, body, request_id)
}

fn xml_escape(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '<' => "&lt;".to_string(),
            '>' => "&gt;".to_string(),
            '&' => "&amp;".to_string(),
            '"' => "&quot;".to_string(),
            '\'' => "&apos;".to_string(),
            c if c.is_control() => format!("&#x{:x};", c as u32),
            c => c.to_string(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_ids() {
        assert_eq!(iam_name("AKIDTEST"), "AKIDTEST");
        assert_eq!(iam_name("a b<c>"), "abc");
        assert_eq!(iam_name("<>"), "emulator-user");
        let id = unique_id("test");
        assert_eq!(id.len(), 21);
        assert!(id.starts_with("AIDA"));
        assert_eq!(id, unique_id("test"));
        assert_ne!(id, unique_id("other"));
        let (arn, user) = caller("ASIATEMP", "111122223333");
        assert_eq!(
            arn,
            "arn:aws:sts::111122223333:assumed-role/emulator-role/ASIATEMP"
        );
        assert!(
            user.starts_with("AROA") && user.ends_with(":ASIATEMP"),
            "{user}"
        );
        assert_eq!(caller("AKIDTEST", "1").0, "arn:aws:iam::1:user/AKIDTEST");
        let mut h = HeaderMap::new();
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static(
                "AWS4-HMAC-SHA256 Credential=AKID1/20261130/us-east-1/sts/aws4_request, SignedHeaders=host, Signature=x",
            ),
        );
        assert_eq!(access_key_id(&h).as_deref(), Some("AKID1"));
        assert_eq!(access_key_id(&HeaderMap::new()), None);
    }
}
