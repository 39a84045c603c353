//! `nextToken` pagination. Tokens are opaque to clients; a token from one operation is refused by
//! another with a ClientException.

use super::error::ApiError;

/// One page of `items` after the offset `token` encodes. Offsets suit the small, slowly changing
/// lists (queues, environments, policies, shares).
pub fn by_offset<T>(
    items: Vec<T>,
    token: Option<&str>,
    size: usize,
    op: &str,
) -> Result<(Vec<T>, Option<String>), ApiError> {
    let start = match token {
        None | Some("") => 0,
        Some(t) => t
            .strip_prefix(op)
            .and_then(|rest| rest.strip_prefix('.'))
            .and_then(|n| usize::from_str_radix(n, 16).ok())
            .ok_or_else(|| invalid_token(t))?,
    };
    let total = items.len();
    let page: Vec<T> = items.into_iter().skip(start).take(size).collect();
    let end = start + page.len();
    let next = (end < total).then(|| format!("{op}.{end:x}"));
    Ok((page, next))
}

/// A position in a list sorted by `createdAt` descending, then submission order descending: the
/// key of the last item returned. Unlike an offset it stays right while new jobs arrive.
pub fn encode_cursor(created_at: i64, index: u32) -> String {
    format!("jobs.{created_at:x}.{index:x}")
}

pub fn decode_cursor(token: &str) -> Result<(i64, u32), ApiError> {
    let mut parts = token.split('.');
    let (Some("jobs"), Some(c), Some(i), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(invalid_token(token));
    };
    match (i64::from_str_radix(c, 16), u32::from_str_radix(i, 16)) {
        (Ok(c), Ok(i)) => Ok((c, i)),
        _ => Err(invalid_token(token)),
    }
}

fn invalid_token(token: &str) -> ApiError {
    ApiError::client(format!("Invalid nextToken: {token:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_pages_walk_the_list_once() {
        let items: Vec<u32> = (0..5).collect();
        let (p1, t1) = by_offset(items.clone(), None, 2, "op").unwrap();
        assert_eq!(p1, vec![0, 1]);
        let (p2, t2) = by_offset(items.clone(), t1.as_deref(), 2, "op").unwrap();
        assert_eq!(p2, vec![2, 3]);
        let (p3, t3) = by_offset(items.clone(), t2.as_deref(), 2, "op").unwrap();
        assert_eq!((p3, t3), (vec![4], None));
        assert!(by_offset(items, Some("other.2"), 2, "op").is_err());
    }

    #[test]
    fn cursor_round_trips_and_rejects_garbage() {
        let t = encode_cursor(1_700_000_000_000, 42);
        assert_eq!(decode_cursor(&t).unwrap(), (1_700_000_000_000, 42));
        assert!(decode_cursor("jobs.zz.1").is_err());
        assert!(decode_cursor("nope").is_err());
    }
}
