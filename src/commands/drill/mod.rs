//! `quotatop drill`: the pilot procedure of the seed, automated and safe. Plan (and refusals)
//! first; then, confirmed, the repetitions ([`procedure`]); whatever ends the drill (its end,
//! Ctrl-C, SIGTERM, the timeout, an error) terminates every drill job it submitted, and says
//! so; the report is printed and kept in the journal. `drill cleanup --run ID` terminates a
//! killed drill's jobs later.

mod audited;
mod cleanup;
mod procedure;
mod render;
mod template;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, anyhow, bail};

use crate::cli::{DrillArgs, DrillCommand, DrillFormat, DrillRunArgs};
use crate::config;
use quotatop_analysis::drill::{self, DrillReport, DrillRequest};
use quotatop_analysis::{GpuTable, scorecard};
use quotatop_aws::batch::BatchClient;
use quotatop_aws::poll::{self, PollConfig};
use quotatop_model::{Millis, clean_text, parse_duration};
use quotatop_store::journal::{Journal, JournalConfig};

pub use procedure::name_prefix;
pub use template::{DRILL_TAG, LENGTH_ENV};

pub fn run(args: &DrillArgs) -> anyhow::Result<()> {
    match &args.command {
        Some(DrillCommand::Cleanup(c)) => cleanup::run(c),
        None => run_drill(&args.run),
    }
}

/// The config for a command that changes things: unreadable settings stop it, read-only
/// refuses it.
fn load_config(
    path: Option<std::path::PathBuf>,
    read_only: bool,
    what: &str,
) -> anyhow::Result<config::Loaded> {
    let loaded = config::load(&config::Overrides {
        config_path: path,
        read_only,
        ..config::Overrides::default()
    });
    if !loaded.warnings.is_empty() {
        bail!(
            "{what} submits nothing while its settings are in doubt: {}",
            loaded.warnings.join("; ")
        );
    }
    if loaded.config.read_only {
        bail!(
            "{}",
            loaded.read_only_refusal(what, "submit or terminate jobs")
        );
    }
    Ok(loaded)
}

fn required<'a, T>(v: &'a Option<T>, flag: &str) -> anyhow::Result<&'a T> {
    v.as_ref().ok_or_else(|| anyhow!("{flag} is required"))
}

fn lengths(text: &str) -> anyhow::Result<Vec<Millis>> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| parse_duration(s).map_err(|e| anyhow!("--lengths: {e}")))
        .collect()
}

/// A short id naming the run in job names, tags, the audit log and the journal.
fn new_run_id() -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    format!("drill-{}", &id[..8])
}

/// The drill's submissions against the class policy: the lender's priority job and the
/// borrower's jobs each enter a class, which must hold their priority and allow the operator.
/// A drill is its own record (its run id, audited), so a class needing a change record does
/// not refuse it. Every drill job carries the template's tags, so a `quotatop:class` tag there
/// classes them all, before share and priority.
async fn check_policy(
    client: &BatchClient,
    policy: &quotatop_policy::Policy,
    req: &DrillRequest,
    class_tag: Option<&str>,
) -> anyhow::Result<std::collections::BTreeMap<String, quotatop_store::audit::ClassPolicy>> {
    let mut operator = quotatop_store::audit::Operator::current();
    operator.aws_principal = Some(match client.caller_identity().await {
        Ok(arn) => arn,
        Err(why) => format!("unknown ({why})"),
    });
    let mut stamps = std::collections::BTreeMap::new();
    for (share, priority) in [
        (&req.lender, req.priority),
        (&req.borrower, req.borrower_priority),
    ] {
        let stamp =
            super::policy::judge_change(policy, class_tag, share, None, priority, &operator, true)
                .map_err(|e| anyhow!("drill refused: {e:#}"))?;
        stamps.insert(share.clone(), stamp);
    }
    Ok(stamps)
}

fn run_drill(a: &DrillRunArgs) -> anyhow::Result<()> {
    let loaded = load_config(a.config.clone(), a.read_only, "drill")?;
    required(&a.queue, "--queue")?;
    let template = template::Template::load(required(&a.template, "--template")?)?;
    let req = request(a, &template)?;
    let timeout = wall_timeout(a)?;
    let log = super::audit::open_log(&a.log)?;
    if !a.dry_run {
        log.check_tail()
            .map_err(|e| anyhow!(clean_text(&quotatop_model::error_chain(&e))))?;
    }
    let class_policy = super::policy::for_changes(loaded.path.as_deref())?;
    let cfg = loaded.config;
    let rt = super::runtime()?;
    rt.block_on(async {
        let client = BatchClient::connect(super::snapshot::connect_options(&a.aws)).await?;
        let asked = Asked {
            args: a,
            client: &client,
            req: &req,
            template: &template,
            cfg: &cfg,
        };
        let Some(planned) = plan_and_confirm(&asked, class_policy.as_ref()).await? else {
            return Ok(());
        };
        let timeout = timeout.unwrap_or(planned.plan.expected_ms.saturating_mul(3) + 10 * 60_000);
        let audit = audited::DrillAudit::new(log, &client, &planned.plan.queue, &planned.run_id)
            .await?
            .stamped(planned.stamps.clone());
        run_planned(&asked, (&planned, &audit), timeout).await
    })
}

/// The drill `a` asks for, its limits from `template`.
fn request(a: &DrillRunArgs, template: &template::Template) -> anyhow::Result<DrillRequest> {
    Ok(DrillRequest {
        queue: required(&a.queue, "--queue")?.clone(),
        lender: required(&a.lender, "--lender")?.clone(),
        borrower: required(&a.borrower, "--borrower")?.clone(),
        instance_types: a.instance_types.clone(),
        lengths_ms: lengths(&a.lengths)?,
        repeat: a.repeat,
        baseline: a.baseline,
        priority: a.priority,
        priority_length_ms: parse_duration(&a.priority_length)
            .map_err(|e| anyhow!("--priority-length: {e}"))?,
        borrower_priority: 0,
        preemption_retries: a.preemption_retries,
        allow_busy: a.allow_busy,
        max_runtime_ms: template.max_runtime_ms,
    })
}

/// `--timeout` (none: three times the plan's expected length and 10 minutes), after checking
/// `--poll-interval`.
fn wall_timeout(a: &DrillRunArgs) -> anyhow::Result<Option<Millis>> {
    if !(a.poll_interval.is_finite() && a.poll_interval > 0.0 && a.poll_interval <= 600.0) {
        bail!("--poll-interval must be above 0 and at most 600 seconds");
    }
    a.timeout
        .as_deref()
        .map(|t| parse_duration(t).map_err(|e| anyhow!("--timeout: {e}")))
        .transpose()
}

/// What the steps of one drill run read.
struct Asked<'a> {
    args: &'a DrillRunArgs,
    client: &'a BatchClient,
    req: &'a DrillRequest,
    template: &'a template::Template,
    cfg: &'a config::Config,
}

/// A drill planned and confirmed: what it will submit, the queue before it, the class
/// policy's stamps for the audit log, and its run id.
struct Planned {
    plan: drill::DrillPlan,
    snapshot: quotatop_model::Snapshot,
    stamps: std::collections::BTreeMap<String, quotatop_store::audit::ClassPolicy>,
    run_id: String,
}

/// Checks the class policy, plans the drill on the queue as it is now and prints the plan;
/// `None` on a dry run or when the operator does not confirm (nothing submitted).
async fn plan_and_confirm(
    asked: &Asked<'_>,
    class_policy: Option<&quotatop_policy::Policy>,
) -> anyhow::Result<Option<Planned>> {
    let (a, client, req) = (asked.args, asked.client, asked.req);
    let stamps = match class_policy {
        Some(p) => check_policy(client, p, req, asked.template.class_tag().as_deref()).await?,
        None => std::collections::BTreeMap::new(),
    };
    let snapshot = poll::refresh_once(
        client,
        PollConfig {
            queues: vec![req.queue.clone()],
            ..PollConfig::default()
        },
    )
    .await?;
    let q = snapshot
        .queues
        .first()
        .ok_or_else(|| anyhow!("queue {} was not found", req.queue))?;
    let plan = drill::plan(q, req, &asked.cfg.prices).map_err(|e| anyhow!("drill refused: {e}"))?;
    let run_id = new_run_id();
    let plan_text = render::plan_text(&plan, &run_id, asked.cfg.currency.as_deref());
    // With --format json, stdout is the JSON alone (the plan's, on a dry run).
    match a.format {
        DrillFormat::Md => print!("{plan_text}"),
        DrillFormat::Json => eprint!("{plan_text}"),
    }
    if a.dry_run {
        if a.format == DrillFormat::Json {
            println!(
                "{}",
                quotatop_model::escape_c1_in_json(serde_json::to_string_pretty(&plan)?)
            );
        }
        eprintln!("dry run: nothing submitted");
        return Ok(None);
    }
    if !a.yes
        && !crate::commands::confirm(
            "Run this drill?",
            "not on a terminal: pass --yes to run the drill",
        )?
    {
        println!("cancelled: nothing submitted");
        return Ok(None);
    }
    Ok(Some(Planned {
        plan,
        snapshot,
        stamps,
        run_id,
    }))
}

/// Runs the repetitions until they end, Ctrl-C/SIGTERM or `timeout`, terminates every drill
/// job, then prints the report, keeps it in the journal and fails when the drill did not
/// finish.
async fn run_planned(
    asked: &Asked<'_>,
    (planned, audit): (&Planned, &audited::DrillAudit),
    timeout: Millis,
) -> anyhow::Result<()> {
    let (a, client, cfg) = (asked.args, asked.client, asked.cfg);
    let (plan, run_id) = (&planned.plan, &planned.run_id);
    eprintln!(
        "drill {run_id} started: stop it with Ctrl-C (its jobs are terminated); after a kill, `quotatop drill cleanup --run {run_id}`"
    );
    let state = Arc::new(Mutex::new(procedure::State::default()));
    let checkpoints: std::collections::BTreeMap<String, u64> = cfg
        .scorecard
        .checkpoint_minutes
        .iter()
        .map(|(s, m)| (s.clone(), u64::from(*m) * 60_000))
        .collect();
    let d = procedure::Drill {
        client,
        audit,
        plan,
        template: asked.template,
        run_id: run_id.clone(),
        poll: Duration::from_secs_f64(a.poll_interval),
        checkpoint_check: a.checkpoint_check.clone(),
        ledger: drill::ledger_options(GpuTable::with_overrides(cfg.gpus.clone()), checkpoints),
        state: state.clone(),
    };
    let started_at = queue_clock(client, &plan.queue).await;
    let interrupted = tokio::select! {
        r = d.run_all() => r.err().map(|e| format!("error: {}", quotatop_model::error_chain(e.as_ref()))),
        _ = super::record::shutdown_signal() => Some("interrupted (Ctrl-C or SIGTERM)".to_string()),
        _ = tokio::time::sleep(Duration::from_millis(timeout.max(0) as u64)) => {
            Some(format!("timeout after {} of wall time", render::ms(timeout)))
        }
    };
    let ended = stop_all(&d, interrupted).await;
    let finished_at = queue_clock(client, &plan.queue).await;
    let (mut results, current) = {
        let mut st = procedure::lock(&state);
        (std::mem::take(&mut st.results), st.current.take())
    };
    if ended.interrupted.is_some()
        && let Some(r) = procedure::partial(client, current, &d.ledger, finished_at).await
    {
        results.push(r);
    }
    let mut report = DrillReport {
        run_id: run_id.clone(),
        queue: plan.queue.clone(),
        lender: plan.lender.clone(),
        borrower: plan.borrower.clone(),
        operator: audit.operator.describe(),
        started_at,
        finished_at,
        plan: plan.clone(),
        repetitions: results,
        aggregate: Default::default(),
        groups: Vec::new(),
        baseline: None,
        interrupted: ended.interrupted.clone(),
        terminated: ended.terminated,
        termination_errors: ended.errors,
    };
    report.summarise();
    print_and_keep(asked, &report, &planned.snapshot).await?;
    match ended.interrupted {
        Some(why) => bail!("drill {run_id} did not finish: {why}"),
        None => Ok(()),
    }
}

/// The queue's service clock (its last update), else the wall clock.
async fn queue_clock(client: &BatchClient, queue: &str) -> Millis {
    client
        .get_job_queue_snapshot(queue)
        .await
        .ok()
        .and_then(|f| f.last_updated_at)
        .unwrap_or_else(quotatop_model::wall_clock_ms)
}

/// How a drill's run ended: why it stopped early (none: it finished), the jobs terminated and
/// those that could not be.
struct Ended {
    interrupted: Option<String>,
    terminated: Vec<String>,
    errors: Vec<String>,
}

/// Terminates every job the drill submitted, and says so on stderr.
async fn stop_all(d: &procedure::Drill<'_>, interrupted: Option<String>) -> Ended {
    let (plan, run_id) = (d.plan, &d.run_id);
    let known = procedure::lock(&d.state).submitted.clone();
    // The API keeps the reason as the job's statusReason: it must not read as a
    // preemption (the attempts' analysis counts an attempt whose reason says "preempt" as
    // preempted); the cause is in the report and on stderr.
    let reason = match &interrupted {
        None => format!("quotatop drill {run_id}: finished"),
        Some(_) => format!("quotatop drill {run_id}: stopped early"),
    };
    let (at_end, errors) = procedure::terminate_everything(
        d.client,
        d.audit,
        &plan.queue,
        run_id,
        &known,
        &reason.chars().take(200).collect::<String>(),
    )
    .await;
    if let Some(why) = &interrupted {
        eprintln!("drill {run_id} stopped: {}", clean_text(why));
    }
    let mut terminated = std::mem::take(&mut procedure::lock(&d.state).terminated);
    let earlier = terminated.len();
    terminated.extend(at_end.iter().cloned());
    eprintln!(
        "{} drill job{} submitted; terminated {} now that the drill {} ({earlier} earlier, at the end of their repetition); {}",
        known.len(),
        if known.len() == 1 { "" } else { "s" },
        at_end.len(),
        if interrupted.is_some() {
            "stopped"
        } else {
            "ended"
        },
        if errors.is_empty() {
            "no drill job left alive".to_string()
        } else {
            format!(
                "NOT terminated: {} (run `quotatop drill cleanup --run {run_id}`)",
                clean_text(&errors.join("; "))
            )
        }
    );
    Ended {
        interrupted,
        terminated,
        errors,
    }
}

/// Prints the report (`--format`) and keeps it in the journal, with the queue as it was
/// `before`, unless `--no-journal`.
async fn print_and_keep(
    asked: &Asked<'_>,
    report: &DrillReport,
    before: &quotatop_model::Snapshot,
) -> anyhow::Result<()> {
    let a = asked.args;
    match a.format {
        DrillFormat::Md => print!("{}", render::report_md(report)),
        DrillFormat::Json => println!(
            "{}",
            quotatop_model::escape_c1_in_json(serde_json::to_string_pretty(report)?)
        ),
    }
    if a.no_journal {
        eprintln!("report not kept (--no-journal): `report` will not list this drill");
    } else {
        keep_after(
            asked.client,
            &report.queue,
            report,
            before,
            a.journal.clone(),
        )
        .await;
    }
    Ok(())
}

/// Keeps `report` in the journal (`path`, else the default) with the queue as it was before
/// (`before`) and is now, so `report` finds the queue (and its drills) even where no console or
/// `record` watched it; a failure is a warning (the report was printed).
async fn keep_after(
    client: &BatchClient,
    queue: &str,
    report: &DrillReport,
    before: &quotatop_model::Snapshot,
    path: Option<std::path::PathBuf>,
) {
    {
        let after = poll::refresh_once(
            client,
            PollConfig {
                queues: vec![queue.to_string()],
                ..PollConfig::default()
            },
        )
        .await
        .ok();
        let snapshots: Vec<quotatop_model::Snapshot> =
            std::iter::once(before.clone()).chain(after).collect();
        match keep(report, &snapshots, path) {
            Ok(path) => eprintln!("report kept in the journal {}", path.display()),
            Err(e) => eprintln!(
                "warning: the report could not be kept in the journal: {}",
                clean_text(&quotatop_model::error_chain(e.as_ref()))
            ),
        }
    }
}

fn keep(
    report: &DrillReport,
    snapshots: &[quotatop_model::Snapshot],
    path: Option<std::path::PathBuf>,
) -> anyhow::Result<std::path::PathBuf> {
    let path = match path {
        Some(p) => p,
        None => quotatop_store::journal::default_journal_path()?,
    };
    let mut j = Journal::open(&path, JournalConfig::default())
        .with_context(|| format!("journal {}", path.display()))?;
    j.record_all(snapshots)?;
    j.save_drill(report)?;
    Ok(path)
}

/// The drills of `queue` kept in `journal` since `since`, for `report`.
pub fn kept_drills(journal: &Journal, queue: &str, since: Millis) -> Vec<DrillReport> {
    journal.drills(queue, since).unwrap_or_default()
}

/// A short line per drill for `report`: id, when, repetitions, reclaim P50/P95, preempted.
pub fn drill_line(r: &DrillReport) -> String {
    let a = &r.aggregate;
    format!(
        "{} ({} / {}): {} repetition{}, reclaim P50 {} P95 {}, {} preempted, lost {} GPU-h{}",
        clean_text(&r.run_id),
        clean_text(&r.lender),
        clean_text(&r.borrower),
        a.repetitions,
        if a.repetitions == 1 { "" } else { "s" },
        scorecard::format::duration(a.reclaim_p50_ms),
        scorecard::format::duration(a.reclaim_p95_ms),
        a.preempted,
        a.lost_gpu_hours
            .map_or("-".to_string(), |h| format!("{h:.2}")),
        if r.interrupted.is_some() {
            ", stopped early"
        } else {
            ""
        }
    )
}
