//! `nextToken` pagination. Tokens are opaque to clients and bound to the query that returned
//! them: the operation and what selects its items (queue, status, filter, names asked for). A
//! token from another operation or another query is refused with a ClientException, as AWS
//! refuses it.

use super::error::ApiError;
use super::state::request_fingerprint;

/// What a token is valid for: an operation and the request members that select its items.
pub struct Scope {
    op: &'static str,
    fingerprint: u64,
}

impl Scope {
    /// `parts`: the members that select the items, in a fixed order (e.g. queue ARN, status,
    /// filter); page size and the token itself are not among them.
    pub fn new(op: &'static str, parts: &[&str]) -> Self {
        let joined = serde_json::to_vec(parts).unwrap_or_default();
        Self {
            op,
            fingerprint: request_fingerprint(&joined) & 0xffff_ffff,
        }
    }

    /// The position a token of this scope holds (`None` for no token): its dot-separated
    /// fields between the operation and the fingerprint.
    fn open<'t>(&self, token: Option<&'t str>) -> Result<Option<Vec<&'t str>>, ApiError> {
        let Some(t) = token.filter(|t| !t.is_empty()) else {
            return Ok(None);
        };
        let mut parts: Vec<&str> = t.split('.').collect();
        let fp = parts.pop().unwrap_or_default();
        if parts.first() != Some(&self.op) || parts.len() < 2 {
            return Err(invalid_token(token));
        }
        if u64::from_str_radix(fp, 16).ok() != Some(self.fingerprint) {
            return Err(ApiError::client(format!(
                "Invalid nextToken {:?}: it was returned for another query (a token is valid only with the same parameters as the request that returned it)",
                quotatop_model::clean(t)
            )));
        }
        Ok(Some(parts.split_off(1)))
    }

    fn seal(&self, fields: &[String]) -> String {
        format!("{}.{}.{:x}", self.op, fields.join("."), self.fingerprint)
    }
}

/// One page of `items` after the offset `token` encodes. Offsets suit the small, slowly changing
/// lists (queues, environments, policies, shares).
pub fn by_offset<T>(
    items: Vec<T>,
    token: Option<&str>,
    size: usize,
    scope: &Scope,
) -> Result<(Vec<T>, Option<String>), ApiError> {
    let start = match scope.open(token)? {
        None => 0,
        Some(fields) => match fields.as_slice() {
            [n] => usize::from_str_radix(n, 16).map_err(|_| invalid_token(token))?,
            _ => return Err(invalid_token(token)),
        },
    };
    let total = items.len();
    let page: Vec<T> = items.into_iter().skip(start).take(size).collect();
    let end = start + page.len();
    let next = (end < total).then(|| scope.seal(&[format!("{end:x}")]));
    Ok((page, next))
}

/// A position in a list sorted by `createdAt` descending, then submission order descending: the
/// key of the last item returned. Unlike an offset it stays right while new jobs arrive.
pub fn encode_cursor(scope: &Scope, created_at: i64, index: u32) -> String {
    scope.seal(&[format!("{created_at:x}"), format!("{index:x}")])
}

pub fn decode_cursor(scope: &Scope, token: Option<&str>) -> Result<Option<(i64, u32)>, ApiError> {
    let Some(fields) = scope.open(token)? else {
        return Ok(None);
    };
    let [c, i] = fields.as_slice() else {
        return Err(invalid_token(token));
    };
    match (i64::from_str_radix(c, 16), u32::from_str_radix(i, 16)) {
        (Ok(c), Ok(i)) => Ok(Some((c, i))),
        _ => Err(invalid_token(token)),
    }
}

fn invalid_token(token: Option<&str>) -> ApiError {
    ApiError::client(format!(
        "Invalid nextToken: {:?}",
        quotatop_model::clean(token.unwrap_or_default())
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_pages_walk_the_list_once() {
        let items: Vec<u32> = (0..5).collect();
        let scope = Scope::new("op", &["q"]);
        let (p1, t1) = by_offset(items.clone(), None, 2, &scope).unwrap();
        assert_eq!(p1, vec![0, 1]);
        let (p2, t2) = by_offset(items.clone(), t1.as_deref(), 2, &scope).unwrap();
        assert_eq!(p2, vec![2, 3]);
        let (p3, t3) = by_offset(items.clone(), t2.as_deref(), 2, &scope).unwrap();
        assert_eq!((p3, t3), (vec![4], None));
        assert!(by_offset(items.clone(), Some("other.2"), 2, &scope).is_err());
        // A token of the same operation for another query is refused.
        let elsewhere = Scope::new("op", &["r"]);
        assert!(by_offset(items, t1.as_deref(), 2, &elsewhere).is_err());
    }

    #[test]
    fn cursor_round_trips_and_rejects_garbage() {
        let scope = Scope::new("jobs", &["q", "RUNNING"]);
        let t = encode_cursor(&scope, 1_700_000_000_000, 42);
        assert_eq!(
            decode_cursor(&scope, Some(&t)).unwrap(),
            Some((1_700_000_000_000, 42))
        );
        assert_eq!(decode_cursor(&scope, None).unwrap(), None);
        assert!(decode_cursor(&Scope::new("jobs", &["q", "RUNNABLE"]), Some(&t)).is_err());
        assert!(decode_cursor(&scope, Some("jobs.zz.1.0")).is_err());
        assert!(decode_cursor(&scope, Some("nope")).is_err());
    }
}
