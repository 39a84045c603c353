//! Deciding, as a console starts, the changes its audit log left with an unknown outcome.

use quotatop_aws::batch::BatchClient;
use quotatop_store::audit::ChangeLog;

/// Decides, before the console starts, the changes in the audit log at `path` whose outcome
/// was never written (`audit reconcile`), within 10 s; returns a line for the footer when it
/// did anything or failed. Nothing happens when the log does not exist or every change has an
/// outcome.
pub async fn reconcile_on_start(client: &BatchClient, path: &std::path::Path) -> Option<String> {
    reconcile_on_start_with(&[client], path).await
}

/// [`reconcile_on_start`] over several sources (the console's `[[sources]]`): each change is
/// decided by the client of the region, endpoint and account it was made against; a change is
/// left unknown only when no source's client could decide it.
pub async fn reconcile_on_start_with(
    clients: &[&BatchClient],
    path: &std::path::Path,
) -> Option<String> {
    use quotatop_actions::Decision;
    let pending = quotatop_store::audit::read_records(path)
        .ok()
        .map(|r| quotatop_store::audit::changes(&r))?
        .iter()
        .any(|c| c.outcome_unknown() && c.is_priority());
    if !pending || clients.is_empty() {
        return None;
    }
    let log: ChangeLog = quotatop_store::audit::AuditLog::new(path).into();
    let work = async {
        // Per change: decided by some source (true), or left unknown by every source so far
        // (false, with the last reason).
        let mut seen: Vec<(String, bool)> = Vec::new();
        let mut decided_ids: Vec<String> = Vec::new();
        for client in clients {
            let (operator, target) = quotatop_actions::reconciler(client).await;
            let done = quotatop_actions::reconcile(*client, &log, &operator, &target).await?;
            for r in done {
                let settled = !matches!(r.result, Decision::LeftUnknown(_));
                match seen.iter_mut().find(|(id, _)| *id == r.change_id) {
                    Some(entry) => entry.1 |= settled,
                    None => seen.push((r.change_id.clone(), settled)),
                }
                if matches!(r.result, Decision::Decided(..)) {
                    decided_ids.push(r.change_id);
                }
            }
        }
        let left = seen.iter().filter(|(_, settled)| !settled).count();
        Ok::<_, quotatop_store::audit::AuditError>((decided_ids.len(), left))
    };
    let line = match tokio::time::timeout(std::time::Duration::from_secs(10), work).await {
        Err(_) => "audit: deciding changes with an unknown outcome took over 10 s; run `quotatop audit reconcile`".to_string(),
        Ok(Err(e)) => format!("audit: could not reconcile unknown outcomes: {e}"),
        Ok(Ok((decided, left))) => {
            if decided == 0 && left == 0 {
                return None;
            }
            let mut line = format!(
                "audit: decided {decided} change(s) whose outcome was unknown (see `quotatop audit list`)"
            );
            if left > 0 {
                line.push_str(&format!(
                    "; {left} left unknown: run `quotatop audit reconcile` for the reason"
                ));
            }
            line
        }
    };
    Some(quotatop_model::clean_text(&line))
}
