//! `quotatop logs JOB`: the log of the SageMaker training job behind each attempt of a service
//! job, from CloudWatch Logs (`/aws/sagemaker/TrainingJobs`, streams `<training job>/algo-…`),
//! each attempt's end marked (a preemption with its reason). `--follow` keeps reading the
//! newest attempt, and the next one when the job runs again, until the job ends.

use std::time::Duration;

use anyhow::{Context as _, bail};

use crate::cli::LogsArgs;
use quotatop_analysis::{
    LogRow, NumberedAttempt, attempts_of, log_rows, not_utf8_note, stream_prefix,
};
use quotatop_aws::batch::{BatchClient, LogLine, LogQuery};
use quotatop_model::{Millis, QueueSnapshot, ServiceJob, clean_text};

/// How often `--follow` asks for new lines (and, every [`DESCRIBE_EVERY`] polls, for the job).
const FOLLOW_EVERY: Duration = Duration::from_secs(2);
const DESCRIBE_EVERY: u32 = 3;

pub fn run(args: &LogsArgs) -> anyhow::Result<()> {
    let rt = super::runtime()?;
    rt.block_on(async {
        let (client, snapshot) = super::snapshot::connect_and_refresh(&args.aws, &args.queues).await?;
        let (job, now) = find_job(&snapshot.queues, &args.job)?;
        let since = match &args.since {
            Some(s) => Some(
                quotatop_model::parse_since(s, now)
                    .map_err(|e| anyhow::anyhow!("--since: {e}"))?,
            ),
            None => None,
        };
        let attempts = attempts_of(&job);
        let chosen = choose(&attempts, args, &job)?;
        let mut shown = 0usize;
        let mut position = (None, 0);
        for a in &chosen {
            let lines = print_attempt(&client, a, since, args.max_lines).await?;
            shown += lines.len();
            let (fresh, at_newest) = new_lines(&lines, None, 0);
            position = (fresh.last().map(|l| l.0), at_newest);
        }
        if args.follow {
            let current = chosen.last().cloned();
            return follow(&client, &job.id, current, position, args.max_lines).await;
        }
        if shown == 0 {
            bail!(
                "no log lines for {} in /aws/sagemaker/TrainingJobs{}: SageMaker writes a training job's log once it starts; check the region (--region) or widen --since",
                which(&chosen),
                since.map_or(String::new(), |s| format!(" since {}", quotatop_model::format_utc(s)))
            );
        }
        Ok(())
    })
}

/// The job named by id, ARN or name among the watched queues, and the service's clock.
fn find_job(queues: &[QueueSnapshot], key: &str) -> anyhow::Result<(ServiceJob, Millis)> {
    let mut by_name = Vec::new();
    for q in queues {
        let now = quotatop_analysis::now_of(q).unwrap_or_else(quotatop_model::wall_clock_ms);
        for j in &q.jobs {
            if j.job.id == key || j.arn == key {
                return Ok(((*j.job).clone(), now));
            }
            if j.job.name == key {
                by_name.push(((*j.job).clone(), now));
            }
        }
    }
    match by_name.len() {
        1 => Ok(by_name.remove(0)),
        0 => bail!(
            "no job {:?} among the jobs of the watched queues (give its id or ARN, or --queue)",
            clean_text(key)
        ),
        n => bail!(
            "{n} jobs are named {:?} ({}): give the job id",
            clean_text(key),
            by_name
                .iter()
                .map(|(j, _)| j.id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn choose(
    attempts: &[NumberedAttempt],
    args: &LogsArgs,
    job: &ServiceJob,
) -> anyhow::Result<Vec<NumberedAttempt>> {
    if attempts.is_empty() {
        bail!(
            "job {} ({}) has no attempt yet ({}): no training job has started, so there is no log",
            clean_text(&job.name),
            job.id,
            job.status.as_str()
        );
    }
    if args.all {
        return Ok(attempts.to_vec());
    }
    match args.attempt {
        None => Ok(attempts.last().cloned().into_iter().collect()),
        Some(n) => match attempts.iter().find(|a| a.number == n) {
            Some(a) => Ok(vec![a.clone()]),
            None => bail!(
                "job {} has {} attempt(s); --attempt takes 1 to {}",
                clean_text(&job.name),
                attempts.len(),
                attempts.len()
            ),
        },
    }
}

fn which(attempts: &[NumberedAttempt]) -> String {
    let names: Vec<String> = attempts
        .iter()
        .map(|a| {
            format!(
                "attempt {} (training job {})",
                a.number,
                clean_text(quotatop_analysis::training_job_name(&a.row.resource_id))
            )
        })
        .collect();
    names.join(", ")
}

/// Prints one attempt's log (FilterLogEvents over its streams), its end marked; the log lines
/// printed.
async fn print_attempt(
    client: &BatchClient,
    a: &NumberedAttempt,
    since: Option<Millis>,
    max: usize,
) -> anyhow::Result<Vec<LogLine>> {
    let page = client
        .log_events(&LogQuery {
            stream_prefix: Some(stream_prefix(&a.row.resource_id)),
            since,
            max_events: max,
            ..LogQuery::default()
        })
        .await
        .with_context(|| format!("reading the log of {}", which(std::slice::from_ref(a))))?;
    let events: Vec<(Millis, String)> = page
        .lines
        .iter()
        .map(|l| (l.time, l.message.clone()))
        .collect();
    print_rows(&log_rows(a, &events))?;
    if let Some(note) = not_utf8_note(a.number, page.not_utf8) {
        super::write_stdout(&format!("{note}\n"))?;
    }
    if page.truncated {
        super::write_stdout(&format!(
            "… attempt {}: more than {max} lines; the first {max} shown (--max-lines, or --since to start later)\n",
            a.number
        ))?;
    }
    Ok(page.lines)
}

/// `--follow`: new lines of the newest attempt every [`FOLLOW_EVERY`], the job described every
/// few polls to notice the attempt's end (marked) and its next attempt (followed from its
/// start), until the job ends. `position`: the newest time already shown of `current` and how
/// many lines at that time were shown.
async fn follow(
    client: &BatchClient,
    job_id: &str,
    mut current: Option<NumberedAttempt>,
    position: (Option<Millis>, usize),
    max: usize,
) -> anyhow::Result<()> {
    let (mut last_time, mut seen_at_last) = position;
    // An attempt already stopped when following began had its end marked by the first print.
    let mut marked = current.as_ref().is_some_and(|a| a.row.stopped_at.is_some());
    for poll_n in 0u32.. {
        if poll_n > 0 && poll_n % DESCRIBE_EVERY == 0 {
            let described = client.describe_service_job(job_id).await?;
            let attempts = attempts_of(&described.job);
            if let Some(a) = &current
                && let Some(now) = attempts.iter().find(|n| n.number == a.number)
                && now.row.stopped_at.is_some()
                && !marked
            {
                print_rows(&log_rows(now, &[]))?;
                marked = true;
            }
            let newest = attempts.last().cloned();
            if newest.as_ref().map(|a| a.number) != current.as_ref().map(|a| a.number) {
                current = newest;
                (last_time, seen_at_last, marked) = (None, 0, false);
            }
            if described.job.status.is_terminal() {
                return super::write_stdout(&format!(
                    "── job {} is {}: nothing more to follow ──\n",
                    clean_text(&described.job.name),
                    described.job.status.as_str()
                ));
            }
        }
        if let Some(a) = &current {
            let page = client
                .log_events(&LogQuery {
                    stream_prefix: Some(stream_prefix(&a.row.resource_id)),
                    since: last_time,
                    max_events: max,
                    ..LogQuery::default()
                })
                .await?;
            let (fresh, at_newest) = new_lines(&page.lines, last_time, seen_at_last);
            if let Some(t) = fresh.last().map(|l| l.0) {
                last_time = Some(t);
                seen_at_last = at_newest;
            }
            // Lines only: the attempt's end is marked once, when the job shows it.
            let open = NumberedAttempt {
                number: a.number,
                row: quotatop_analysis::AttemptRow {
                    stopped_at: None,
                    ..a.row.clone()
                },
            };
            print_rows(&log_rows(&open, &fresh))?;
            if let Some(note) = not_utf8_note(a.number, page.not_utf8) {
                super::write_stdout(&format!("{note}\n"))?;
            }
        }
        tokio::time::sleep(FOLLOW_EVERY).await;
    }
    Ok(())
}

fn print_rows(rows: &[LogRow]) -> anyhow::Result<()> {
    let mut out = String::new();
    for r in rows {
        out.push_str(&r.render());
        out.push('\n');
    }
    super::write_stdout(&out)
}

/// The lines of a read from `last` on that were not shown yet: those after `last`, and those at
/// `last` beyond the `seen` already shown. Returns them and how many lines are at the newest
/// time shown.
fn new_lines(
    lines: &[LogLine],
    last: Option<Millis>,
    seen: usize,
) -> (Vec<(Millis, String)>, usize) {
    let mut skipped = 0usize;
    let fresh: Vec<(Millis, String)> = lines
        .iter()
        .filter(|l| {
            if Some(l.time) == last && skipped < seen {
                skipped += 1;
                false
            } else {
                true
            }
        })
        .map(|l| (l.time, l.message.clone()))
        .collect();
    let newest = fresh.last().map(|l| l.0).or(last);
    let at_newest = lines.iter().filter(|l| Some(l.time) == newest).count();
    (fresh, at_newest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(t: Millis, m: &str) -> LogLine {
        LogLine {
            stream: "s".into(),
            time: t,
            message: m.into(),
        }
    }

    #[test]
    fn follow_shows_each_line_once_even_at_one_instant() {
        let first = [line(1, "a"), line(2, "b"), line(2, "c")];
        let (fresh, at) = new_lines(&first, None, 0);
        assert_eq!(fresh.len(), 3);
        assert_eq!(at, 2);
        // The next read starts at time 2: b and c again, then d.
        let next = [line(2, "b"), line(2, "c"), line(2, "d"), line(3, "e")];
        let (fresh, at) = new_lines(&next, Some(2), at);
        let texts: Vec<&str> = fresh.iter().map(|l| l.1.as_str()).collect();
        assert_eq!(texts, vec!["d", "e"]);
        assert_eq!(at, 1);
    }
}
