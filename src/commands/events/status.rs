//! `events status`: what setup made, as it is now. Changes nothing; a stream not completely
//! set up is the command's failure, with the command that completes it.

use anyhow::{anyhow, bail};

use super::spec::{self, Current};
use super::{current, failed};
use crate::cli::EventsStatusArgs;
use quotatop_aws::batch::{BatchClient, QueueMessage};

/// What CloudTrail's API-call events need, and the fallback, in the status's words.
pub const CLOUDTRAIL_NOTE: &str = "\"AWS API Call via CloudTrail\" events reach EventBridge only from a CloudTrail trail with logging enabled (see `aws cloudtrail describe-trails` and `get-trail-status`), on a best-effort basis; without one, CloudTrail's event history (LookupEvents: the last 90 days of management calls, no trail needed) still names who called what: `quotatop audit list --lookup-events` reads it";

pub fn run(args: &EventsStatusArgs) -> anyhow::Result<()> {
    let queue = args.target.queue.as_str();
    let rule = spec::rule_name(queue).map_err(|e| anyhow!(e))?;
    let rt = crate::commands::runtime()?;
    rt.block_on(async {
        let client =
            BatchClient::connect(crate::commands::snapshot::connect_options(&args.target.aws))
                .await?;
        let cur = current(&client, queue, &rule).await?;
        let newest = match &cur.queue {
            // A look without taking: visibility 0 leaves the messages to the recorder.
            Some(q) => newest_event(&client.receive_messages(&q.url, 0, 0).await.map_err(failed)?),
            None => None,
        };
        let now = chrono::Utc::now().timestamp_millis();
        crate::commands::print_clean_lines(&text(&cur, queue, &rule, newest, now))?;
        let missing = spec::setup_steps(&cur);
        if missing.is_empty() {
            Ok(())
        } else {
            bail!(
                "the event stream is not completely set up ({} call(s) missing): run `quotatop events setup --queue {queue}`",
                missing.len()
            )
        }
    })
}

/// The newest event among `messages`: its time (ms) and detail type.
fn newest_event(messages: &[QueueMessage]) -> Option<(i64, String)> {
    messages
        .iter()
        .filter_map(|m| {
            let v: serde_json::Value = serde_json::from_str(&m.body).ok()?;
            let time = chrono::DateTime::parse_from_rfc3339(v.get("time")?.as_str()?).ok()?;
            let kind = v.get("detail-type")?.as_str()?.to_string();
            Some((time.timestamp_millis(), kind))
        })
        .max_by_key(|(t, _)| *t)
}

/// The status lines.
fn text(cur: &Current, queue: &str, rule: &str, newest: Option<(i64, String)>, now: i64) -> String {
    let mut out = String::new();
    let mut line = |label: &str, value: String| out.push_str(&format!("{label:<12} {value}\n"));
    line(
        "rule",
        match &cur.rule {
            None => format!("{rule}: missing"),
            Some(r) => format!(
                "{rule}: {}, {}{}",
                if r.enabled { "ENABLED" } else { "DISABLED" },
                if cur.rule_current() {
                    "the pattern setup writes"
                } else {
                    "a pattern other than setup's"
                },
                if cur.rule_is_ours() {
                    ""
                } else {
                    " (not made by events setup)"
                }
            ),
        },
    );
    line(
        "target",
        match cur.our_target() {
            None => format!("{}: missing", spec::TARGET_ID),
            Some(t) if cur.target_current() => format!("{} -> {}", t.id, t.arn),
            Some(t) => format!("{} -> {} (not queue {queue})", t.id, t.arn),
        },
    );
    match &cur.queue {
        None => line("queue", format!("{queue}: missing")),
        Some(q) => {
            line(
                "queue",
                format!(
                    "{} ({} waiting, {} in flight)",
                    q.url, q.visible, q.in_flight
                ),
            );
            line(
                "policy",
                if cur.policy_current() {
                    "events.amazonaws.com may send from the rule".to_string()
                } else {
                    "no statement letting the rule send: events are not delivered".to_string()
                },
            );
        }
    }
    line(
        "last event",
        match newest {
            Some((t, kind)) => format!("{} ago ({kind}), the newest waiting", age((now - t).max(0))),
            None => "none yet waiting in the queue (a running `record --events-queue` takes them as they come)".to_string(),
        },
    );
    line("cloudtrail", CLOUDTRAIL_NOTE.to_string());
    out
}

/// `42 s`, `5 min`, `3 h`, `2 d`.
fn age(ms: i64) -> String {
    let s = ms / 1000;
    match s {
        0..120 => format!("{s} s"),
        120..7200 => format!("{} min", s / 60),
        7200..172_800 => format!("{} h", s / 3600),
        _ => format!("{} d", s / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_event_is_found_among_the_waiting_ones() {
        let m = |time: &str, kind: &str| QueueMessage {
            message_id: "m".into(),
            receipt: "r".into(),
            body: serde_json::json!({"time": time, "detail-type": kind}).to_string(),
        };
        let got = newest_event(&[
            m("2026-01-01T00:00:05Z", "b"),
            m("2026-01-01T00:00:09Z", "a"),
            QueueMessage {
                message_id: "x".into(),
                receipt: "r".into(),
                body: "not json".into(),
            },
        ]);
        assert_eq!(got.unwrap().1, "a");
        assert_eq!(age(42_000), "42 s");
        assert_eq!(age(600_000), "10 min");
    }
}
