//! Reading back a termination or a requeue whose outcome was never written: a termination by
//! the job's state, a requeue by its copy (found by its tags among the jobs of the original's
//! name) and the original's state.

use quotatop_store::audit::{AuditRecord, Verdict};

use super::read_back::CannotReadBack;
use crate::JobLookup;
use crate::terminate::judge_terminated;

/// A termination: terminated → landed; alive or ended otherwise → did not land; gone → job
/// gone.
pub(super) async fn terminated<L: JobLookup>(
    lookup: &L,
    target: &str,
) -> Result<(Verdict, String), CannotReadBack> {
    if target.is_empty() {
        return Err(CannotReadBack::NoJob);
    }
    Ok(judge_terminated(target, lookup.job_state(target).await?))
}

/// A requeue: copy found and original terminated → landed; no copy and the original not
/// terminated → did not land; a copy but the original not terminated → did not land (half
/// made: both run), said so; no copy but the original terminated → undecidable; original gone
/// → job gone.
pub(super) async fn requeued<L: JobLookup>(
    lookup: &L,
    intent: &AuditRecord,
    target: &str,
) -> Result<(Verdict, String), CannotReadBack> {
    if target.is_empty() {
        return Err(CannotReadBack::NoJob);
    }
    let copy = crate::find_copy(
        lookup,
        &intent.queue,
        &intent.job.name,
        target,
        &intent.change_id,
    )
    .await?;
    let (original, seen) = judge_terminated(target, lookup.job_state(target).await?);
    let copy_words = match &copy {
        Some(id) => format!("copy {id} found by its tags"),
        None => "no copy found by its tags".to_string(),
    };
    let words = format!("{copy_words}; {seen}");
    Ok(match (copy.is_some(), original) {
        (_, Verdict::JobGone) => (Verdict::JobGone, words),
        (true, Verdict::Landed) => (Verdict::Landed, words),
        (true, _) => (
            Verdict::DidNotLand,
            format!(
                "{words}: half made, the copy and the original both run; terminate one (quotatop terminate {target})"
            ),
        ),
        (false, Verdict::Landed) => (Verdict::Undecidable, words),
        (false, _) => (Verdict::DidNotLand, words),
    })
}
