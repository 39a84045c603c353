//! S3 on the emulator's endpoint (REST-XML, path-style: `/<bucket>` and `/<bucket>/<key>`):
//! ListObjectsV2, HeadObject and GetObject over the checkpoint objects of the region's jobs
//! ([`super::runs`]). A bucket exists while some job's `CheckpointConfig.S3Uri` names it.
//! GetObject returns a checkpoint's manifest; a model shard's body is not kept (only its size).

use axum::body::Body;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::account::Account;
use super::error::ApiError;
use super::hash::fnv1a;
use super::runs::account_runs;
use super::training::Object;

const XMLNS: &str = "http://s3.amazonaws.com/doc/2006-03-01/";
const MAX_KEYS: usize = 1000;

/// The operation a request is, by method and path, or `None` when S3 has none here.
pub fn operation(method: &Method, path: &str, query: &str) -> Option<&'static str> {
    let rest = path.trim_start_matches('/');
    let has_key = rest.split_once('/').is_some_and(|(_, k)| !k.is_empty());
    match (method, has_key) {
        (&Method::GET, false) if !rest.is_empty() && is_v2(query) => Some("listobjectsv2"),
        (&Method::HEAD, true) => Some("headobject"),
        (&Method::GET, true) => Some("getobject"),
        _ => None,
    }
}

fn is_v2(query: &str) -> bool {
    form_urlencoded::parse(query.as_bytes()).any(|(k, v)| k == "list-type" && v == "2")
}

/// An S3 error as S3 sends it (XML).
pub fn error_response(e: &ApiError, request_id: &str, head: bool) -> Response {
    let (status, code) = match e {
        ApiError::Throttled => (StatusCode::SERVICE_UNAVAILABLE, "SlowDown"),
        ApiError::Client(_) => (StatusCode::BAD_REQUEST, "InvalidArgument"),
        ApiError::Server(_) => (StatusCode::INTERNAL_SERVER_ERROR, "InternalError"),
        other => (other.status(), other.code()),
    };
    let body = if head {
        String::new()
    } else {
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{code}</Code><Message>{}</Message><RequestId>{request_id}</RequestId></Error>",
            xml_escape(&e.to_string())
        )
    };
    xml(status, body)
}

fn missing(status: u16, code: &'static str, message: &str) -> ApiError {
    ApiError::Service {
        status,
        code,
        message: message.to_string(),
    }
}

fn xml(status: StatusCode, body: String) -> Response {
    let mut r = (status, body).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/xml"),
    );
    r
}

/// Every object of `bucket` in the region, by key; `None` when no job names the bucket.
fn bucket_objects(account: &Account, bucket: &str) -> Option<Vec<Object>> {
    let now = account.now;
    let mut known = false;
    let mut out = Vec::new();
    for run in account_runs(account) {
        if run.training.s3.as_ref().is_some_and(|(b, _)| b == bucket) {
            known = true;
            out.extend(run.objects(now));
        }
    }
    out.sort_by(|a, b| a.key.cmp(&b.key));
    known.then_some(out)
}

fn decode(s: &str) -> String {
    form_urlencoded::parse(format!("k={}", s.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

/// Serves one S3 request.
pub fn handle(account: &Account, op: &str, path: &str, query: &str) -> Result<Response, ApiError> {
    let rest = path.trim_start_matches('/');
    let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
    let (bucket, key) = (decode(bucket), decode(key));
    let objects = bucket_objects(account, &bucket)
        .ok_or_else(|| missing(404, "NoSuchBucket", "The specified bucket does not exist"))?;
    match op {
        "listobjectsv2" => list(&bucket, &objects, query),
        _ => {
            let o = objects
                .iter()
                .find(|o| o.key == key)
                .ok_or_else(|| missing(404, "NoSuchKey", "The specified key does not exist."))?;
            object(o, op == "headobject")
        }
    }
}

fn object(o: &Object, head: bool) -> Result<Response, ApiError> {
    let body = match (&o.body, head) {
        (_, true) => Body::empty(),
        (Some(b), false) => Body::from(b.clone()),
        (None, false) => {
            return Err(missing(
                501,
                "NotImplemented",
                "The emulator keeps only the size of a checkpoint's model shard; GetObject serves manifests",
            ));
        }
    };
    let mut r = (StatusCode::OK, body).into_response();
    let h = r.headers_mut();
    let ctype = if o.body.is_some() {
        "application/json"
    } else {
        "application/octet-stream"
    };
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(ctype));
    if let Ok(v) = HeaderValue::from_str(&o.size.to_string()) {
        h.insert(header::CONTENT_LENGTH, v);
    }
    if let Ok(v) = HeaderValue::from_str(&http_date(o.last_modified)) {
        h.insert(header::LAST_MODIFIED, v);
    }
    if let Ok(v) = HeaderValue::from_str(&etag(o)) {
        h.insert(header::ETAG, v);
    }
    Ok(r)
}

/// A stable ETag from the key, time and size.
fn etag(o: &Object) -> String {
    let h = fnv1a(
        o.key
            .bytes()
            .chain(o.last_modified.to_le_bytes())
            .chain(o.size.to_le_bytes()),
    );
    format!("\"{h:016x}{:016x}\"", h.rotate_left(29))
}

fn iso(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string())
        .unwrap_or_default()
}

fn http_date(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.format("%a, %d %b %Y %H:%M:%S GMT").to_string())
        .unwrap_or_default()
}

struct ListParams {
    prefix: String,
    delimiter: Option<String>,
    max_keys: usize,
    token: Option<String>,
    start_after: Option<String>,
    url: bool,
}

fn list_params(query: &str) -> Result<ListParams, ApiError> {
    let mut p = ListParams {
        prefix: String::new(),
        delimiter: None,
        max_keys: MAX_KEYS,
        token: None,
        start_after: None,
        url: false,
    };
    for (k, v) in form_urlencoded::parse(query.as_bytes()) {
        match k.as_ref() {
            "prefix" => p.prefix = v.into_owned(),
            "delimiter" if !v.is_empty() => p.delimiter = Some(v.into_owned()),
            "max-keys" => {
                p.max_keys = v
                    .parse::<usize>()
                    .map_err(|_| ApiError::client("max-keys must be a non-negative integer"))?
                    .min(MAX_KEYS);
            }
            "continuation-token" => p.token = Some(v.into_owned()),
            "start-after" => p.start_after = Some(v.into_owned()),
            "encoding-type" if v == "url" => p.url = true,
            "encoding-type" => {
                return Err(ApiError::client(
                    "Invalid Encoding Method specified in Request",
                ));
            }
            _ => {}
        }
    }
    Ok(p)
}

fn list(bucket: &str, objects: &[Object], query: &str) -> Result<Response, ApiError> {
    let p = list_params(query)?;
    let after = p
        .token
        .clone()
        .or(p.start_after.clone())
        .unwrap_or_default();
    // Entries in key order: an object, or a common prefix standing for the keys under it.
    let mut entries: Vec<(String, Option<&Object>)> = Vec::new();
    for o in objects.iter().filter(|o| o.key.starts_with(&p.prefix)) {
        let rolled = p.delimiter.as_deref().and_then(|d| {
            let tail = &o.key[p.prefix.len()..];
            tail.find(d)
                .map(|i| format!("{}{}", p.prefix, &tail[..i + d.len()]))
        });
        match rolled {
            Some(cp) => {
                if entries.last().is_none_or(|(k, _)| *k != cp) {
                    entries.push((cp, None));
                }
            }
            None => entries.push((o.key.clone(), Some(o))),
        }
    }
    let remaining: Vec<_> = entries.into_iter().filter(|(k, _)| *k > after).collect();
    let page = &remaining[..p.max_keys.min(remaining.len())];
    let truncated = page.len() < remaining.len();
    let enc = |s: &str| {
        if p.url { url_encode(s) } else { xml_escape(s) }
    };
    let mut xml_out = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListBucketResult xmlns=\"{XMLNS}\"><Name>{}</Name><Prefix>{}</Prefix><KeyCount>{}</KeyCount><MaxKeys>{}</MaxKeys><IsTruncated>{truncated}</IsTruncated>",
        xml_escape(bucket),
        enc(&p.prefix),
        page.len(),
        p.max_keys
    );
    if let Some(d) = &p.delimiter {
        xml_out.push_str(&format!("<Delimiter>{}</Delimiter>", enc(d)));
    }
    if p.url {
        xml_out.push_str("<EncodingType>url</EncodingType>");
    }
    if let Some(t) = &p.token {
        xml_out.push_str(&format!(
            "<ContinuationToken>{}</ContinuationToken>",
            xml_escape(t)
        ));
    }
    if let Some(s) = &p.start_after {
        xml_out.push_str(&format!("<StartAfter>{}</StartAfter>", enc(s)));
    }
    if truncated && let Some((last, _)) = page.last() {
        xml_out.push_str(&format!(
            "<NextContinuationToken>{}</NextContinuationToken>",
            xml_escape(last)
        ));
    }
    for (key, o) in page {
        match o {
            Some(o) => xml_out.push_str(&format!(
                "<Contents><Key>{}</Key><LastModified>{}</LastModified><ETag>{}</ETag><Size>{}</Size><StorageClass>STANDARD</StorageClass></Contents>",
                enc(key),
                iso(o.last_modified),
                xml_escape(&etag(o)),
                o.size
            )),
            None => xml_out.push_str(&format!(
                "<CommonPrefixes><Prefix>{}</Prefix></CommonPrefixes>",
                enc(key)
            )),
        }
    }
    xml_out.push_str("</ListBucketResult>");
    Ok(xml(StatusCode::OK, xml_out))
}

fn url_encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~/".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(key: &str) -> Object {
        Object {
            key: key.into(),
            last_modified: 1_700_000_000_123,
            size: 3,
            body: None,
        }
    }

    #[test]
    fn operations_by_method_and_path() {
        assert_eq!(
            operation(&Method::GET, "/b", "list-type=2"),
            Some("listobjectsv2")
        );
        assert_eq!(operation(&Method::GET, "/b", ""), None);
        assert_eq!(operation(&Method::HEAD, "/b/k", ""), Some("headobject"));
        assert_eq!(operation(&Method::GET, "/b/k/x", ""), Some("getobject"));
        assert_eq!(operation(&Method::POST, "/b/k", ""), None);
    }

    #[test]
    fn listing_pages_and_rolls_up_common_prefixes() {
        let objects = vec![obj("p/a/1"), obj("p/a/2"), obj("p/b/1"), obj("p/c")];
        let text = |r: Response| {
            let (_, body) = r.into_parts();
            let rt = tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap();
            let bytes = rt.block_on(axum::body::to_bytes(body, 1 << 20)).unwrap();
            String::from_utf8_lossy(&bytes).into_owned()
        };
        let r = list("b", &objects, "list-type=2&prefix=p/&delimiter=/").unwrap();
        let t = text(r);
        assert!(t.contains("<CommonPrefixes><Prefix>p/a/</Prefix></CommonPrefixes><CommonPrefixes><Prefix>p/b/</Prefix>"), "{t}");
        assert!(t.contains("<Key>p/c</Key>") && t.contains("<KeyCount>3</KeyCount>"));
        assert!(t.contains("<LastModified>2023-11-14T22:13:20.123Z</LastModified>"));
        let t = text(list("b", &objects, "list-type=2&max-keys=2").unwrap());
        assert!(
            t.contains("<IsTruncated>true</IsTruncated>")
                && t.contains("<NextContinuationToken>p/a/2<")
        );
        let t = text(list("b", &objects, "list-type=2&continuation-token=p/a/2").unwrap());
        assert!(t.contains("<Key>p/b/1</Key>") && !t.contains("<Key>p/a/2</Key>"));
        assert!(t.contains("<IsTruncated>false</IsTruncated>"));
        assert_eq!(url_encode("a b/c"), "a%20b/c");
    }
}
