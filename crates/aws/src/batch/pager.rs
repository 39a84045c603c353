//! How far a listing follows `nextToken`: every paginated read goes through one [`Pager`], so a
//! server that answers every page with a fresh token — empty pages without end, or more pages
//! than any queue has — stops the listing with an error naming the operation, instead of
//! paging until something else kills it. A repeated token ends the listing quietly, as the
//! last page.

use super::{BatchError, Op};

/// Most pages one listing follows: 1,000,000 jobs at the API's largest page.
pub const MAX_PAGES: usize = 10_000;
/// Most empty pages in a row, each with a fresh token, before the listing is stopped. AWS may
/// return an empty page with a token now and then (a filter scanning past other jobs); a run
/// this long is a server that never ends its listing.
pub const MAX_EMPTY_RUN: usize = 50;

/// The paging state of one listing.
#[derive(Debug, Clone)]
pub struct Pager {
    op: Op,
    pages: usize,
    empty_run: usize,
}

impl Pager {
    pub fn new(op: Op) -> Self {
        Self {
            op,
            pages: 0,
            empty_run: 0,
        }
    }

    /// After a page of `items` entries whose answer named `new` as the next token (`old` was
    /// this page's): the next page's token, `None` when the listing is done (no token, an
    /// empty one, or the one just used), or the error that stops a listing which would not end.
    pub fn next(
        &mut self,
        new: Option<&str>,
        old: &Option<String>,
        items: usize,
    ) -> Result<Option<String>, BatchError> {
        self.pages += 1;
        self.empty_run = if items == 0 { self.empty_run + 1 } else { 0 };
        let Some(token) = new.filter(|t| !t.is_empty() && old.as_deref() != Some(*t)) else {
            return Ok(None);
        };
        if self.empty_run >= MAX_EMPTY_RUN {
            return Err(self.runaway(format!(
                "{} empty pages in a row, each with a new nextToken",
                self.empty_run
            )));
        }
        if self.pages >= MAX_PAGES {
            return Err(self.runaway(format!("{} pages, each with a new nextToken", self.pages)));
        }
        Ok(Some(token.to_string()))
    }

    fn runaway(&self, what: String) -> BatchError {
        BatchError::Other {
            op: self.op,
            message: format!(
                "the listing did not end: {what}; stopped paging, so what was listed is \
                 incomplete (the endpoint is misbehaving: check --endpoint-url, or retry later)"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tok(n: usize) -> Option<String> {
        Some(format!("t{n}"))
    }

    #[test]
    fn a_run_of_empty_pages_with_fresh_tokens_stops_with_an_error() {
        let mut p = Pager::new(Op::ListServiceJobs);
        let mut token = None;
        for n in 0..MAX_EMPTY_RUN - 1 {
            token = p.next(tok(n).as_deref(), &token, 0).unwrap();
            assert!(token.is_some());
        }
        let err = p.next(Some("last"), &token, 0).unwrap_err().to_string();
        assert!(err.contains("ListServiceJobs"), "{err}");
        assert!(err.contains("50 empty pages in a row"), "{err}");
    }

    #[test]
    fn a_page_with_items_resets_the_run_and_a_repeated_token_ends_quietly() {
        let mut p = Pager::new(Op::ListServiceJobs);
        let mut token = None;
        for n in 0..3 * MAX_EMPTY_RUN {
            let items = usize::from(n % (MAX_EMPTY_RUN - 1) == 0);
            token = p.next(tok(n).as_deref(), &token, items).unwrap();
        }
        assert_eq!(p.next(token.as_deref(), &token, 0).unwrap(), None);
        assert_eq!(p.next(None, &None, 5).unwrap(), None);
        assert_eq!(p.next(Some(""), &None, 5).unwrap(), None);
    }

    #[test]
    fn too_many_pages_stop_with_an_error() {
        let mut p = Pager::new(Op::DescribeLogStreams);
        let mut token = None;
        for n in 0..MAX_PAGES - 1 {
            token = p.next(tok(n).as_deref(), &token, 1).unwrap();
        }
        let err = p.next(Some("more"), &token, 1).unwrap_err().to_string();
        assert!(err.contains("10000 pages"), "{err}");
    }
}
