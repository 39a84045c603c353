//! `quotatop sweep`: per workload class, the trace replayed under every combination of a
//! checkpoint interval and a retry limit (the rest of the configuration held fixed), a table per
//! class and a recommendation by the stated rule (`quotatop_replay::sweep`).

use std::collections::BTreeSet;
use std::io::{IsTerminal, Write};
use std::time::Instant;

use anyhow::{Context, bail};

use crate::cli::{ReplayArgs, ReportFormat, SweepArgs, SweepFormat};
use quotatop_analysis::scorecard::{PriorityBand, s3_price};
use quotatop_replay::sweep::{self, CheckpointModel, Plan, Setting, SweepClass};
use quotatop_replay::{ClassMembers, ReplayConfig, TraceJob};
use quotatop_tui::sweep_chart::{SweepClassChart, SweepPoint};

pub fn run(args: &SweepArgs) -> anyhow::Result<()> {
    quotatop_replay::fix_mmap_threshold();
    if args.chart {
        // Refused before the replays run, not after.
        quotatop_tui::require_terminal()?;
        let (swept, _) = compute(args, std::io::stderr().is_terminal())?;
        return Ok(quotatop_tui::sweep_chart::run(&charts(&swept))?);
    }
    let text = execute(args, std::io::stderr().is_terminal())?;
    super::print_clean_lines(&text)
}

/// The console chart's classes: each class's `chart_points`, the rows of its table, as the
/// report's SVG draws them.
pub fn charts(swept: &[sweep::ClassSweep]) -> Vec<SweepClassChart> {
    swept
        .iter()
        .map(|c| SweepClassChart {
            name: quotatop_model::clean_text(&c.class.name),
            points: sweep::chart_points(c)
                .into_iter()
                .map(|p| SweepPoint {
                    interval: p.interval,
                    limit: p.limit,
                    x: p.x,
                    waste_gpu_hours: p.waste_gpu_hours,
                    chosen: p.chosen,
                })
                .collect(),
        })
        .collect()
}

/// `replay`'s arguments for the same inputs: the trace, the configuration held fixed and the
/// rules are read exactly as `replay` reads them.
fn as_replay(args: &SweepArgs) -> ReplayArgs {
    ReplayArgs {
        trace: args.trace.clone(),
        journal: args.journal.clone(),
        window: args.window.clone(),
        baseline_at_since: false,
        config: args.config.iter().cloned().collect(),
        preset: false,
        protect: None,
        horizon: None,
        rules: args.rules.clone(),
        policy: args.policy.clone(),
        jobs_out: None,
        default_nodes: args.default_nodes,
        capacity_scale: args.capacity_scale,
        sensitivity: false,
        format: ReportFormat::Md,
    }
}

/// The settings: every interval with every retry limit, the limits outermost.
fn settings(args: &SweepArgs) -> anyhow::Result<Vec<Setting>> {
    let mut intervals = Vec::new();
    for s in &args.checkpoint_interval {
        let s = s.trim();
        intervals.push(if s == "none" {
            None
        } else {
            let ms = quotatop_model::parse_duration(s)
                .ok()
                .filter(|&ms| ms >= 1000)
                .with_context(|| {
                    format!("--checkpoint-interval {s:?}: not a duration of at least 1 s (e.g. 30m, 2h) or none")
                })?;
            Some(ms as u64)
        });
    }
    let mut limits = Vec::new();
    for s in &args.retry_limit {
        let s = s.trim();
        limits.push(if s == "unlimited" {
            None
        } else {
            Some(s.parse::<u32>().ok().with_context(|| {
                format!("--retry-limit {s:?}: not a whole number (0, 1, …) or unlimited")
            })?)
        });
    }
    let mut out = Vec::new();
    for &retry_limit in &limits {
        for &checkpoint_interval_ms in &intervals {
            let s = Setting {
                checkpoint_interval_ms,
                retry_limit,
            };
            if out.contains(&s) {
                bail!(
                    "checkpoint interval {} with retry limit {} is given twice: give each once",
                    s.interval_label(),
                    s.limit_label()
                );
            }
            out.push(s);
        }
    }
    Ok(out)
}

/// The classes: the policy's (those with jobs in the trace), else the bands with jobs; only
/// those `--class` names when given.
fn classes(
    args: &SweepArgs,
    jobs: &[TraceJob],
    by_policy: &std::collections::BTreeMap<(std::sync::Arc<str>, i64), u16>,
) -> anyhow::Result<(Vec<SweepClass>, String)> {
    let mut all: Vec<SweepClass> = Vec::new();
    let source = if let Some(path) = &args.policy {
        let policy = quotatop_policy::read(path)?;
        let rules = quotatop_policy::class_rules(&policy);
        for (k, class) in policy.classes.iter().enumerate() {
            let pairs: BTreeSet<(String, i64)> = by_policy
                .iter()
                .filter(|(_, i)| usize::from(**i) == k)
                .map(|((share, priority), _)| (share.to_string(), *priority))
                .collect();
            if pairs.is_empty() {
                continue;
            }
            all.push(SweepClass {
                name: class.name.clone(),
                members: ClassMembers::Pairs(pairs),
                budget_class: rules
                    .get(k)
                    .filter(|r| r.budget.is_some())
                    .map(|r| r.name.clone()),
            });
        }
        format!(
            "Classes: those of policy {} (sha256 {}) with jobs in the trace, each job's class by its share and its priority as submitted, as replay --policy reads them; a class's interruption budget judges it.",
            policy.origin,
            policy.short_hash()
        )
    } else {
        for band in PriorityBand::ALL {
            let members = ClassMembers::Band(band);
            if jobs.iter().any(|j| members.holds(j)) {
                all.push(SweepClass {
                    name: band.as_str().to_string(),
                    members,
                    budget_class: None,
                });
            }
        }
        "Classes: the priority bands the trace's jobs were submitted in (no --policy); bands have no interruption budget.".to_string()
    };
    if all.is_empty() {
        bail!(
            "no class has jobs in the trace: check --policy's shares and priorities against the trace"
        );
    }
    if args.classes.is_empty() {
        return Ok((all, source));
    }
    let names: Vec<String> = all.iter().map(|c| c.name.clone()).collect();
    for n in &args.classes {
        if !names.contains(n) {
            bail!(
                "--class {n}: no such class with jobs in the trace (classes: {})",
                names.join(", ")
            );
        }
    }
    all.retain(|c| args.classes.contains(&c.name));
    Ok((all, source))
}

/// The checkpoint model from the flags and the rules' prices.
fn model(
    args: &SweepArgs,
    rules: &quotatop_analysis::scorecard::decision::Rules,
) -> anyhow::Result<CheckpointModel> {
    let write_ms = quotatop_model::parse_duration(&args.checkpoint_write)
        .ok()
        .filter(|&ms| ms >= 0)
        .with_context(|| {
            format!(
                "--checkpoint-write {:?}: not a duration (e.g. 30s, 2m)",
                args.checkpoint_write
            )
        })?;
    let gb = args.checkpoint_gb_per_gpu;
    if !gb.is_finite() || gb < 0.0 {
        bail!("--checkpoint-gb-per-gpu {gb}: must be a finite number of GB, 0 or more");
    }
    Ok(CheckpointModel {
        write_s: write_ms as f64 / 1000.0,
        gb_per_gpu: gb,
        s3_gb_month: s3_price(&rules.prices),
        currency: rules.currency.clone(),
    })
}

/// Runs the sweep and renders it (`progress` draws a bar on stderr).
pub fn execute(args: &SweepArgs, progress: bool) -> anyhow::Result<String> {
    let (swept, notes) = compute(args, progress)?;
    Ok(match args.format {
        SweepFormat::Md => sweep::markdown(&swept, &notes),
        SweepFormat::Json => sweep::json(&swept, &notes),
    })
}

/// Runs the sweep: per class its figures and recommendation, and the notes the report states.
pub fn compute(
    args: &SweepArgs,
    progress: bool,
) -> anyhow::Result<(Vec<sweep::ClassSweep>, Vec<String>)> {
    let rargs = as_replay(args);
    let settings = settings(args)?;
    let (loaded, journal_base) = super::replay::load(&rargs)?;
    let (configs, _) =
        super::replay::configs_at(&rargs, &loaded, journal_base.as_ref(), args.capacity_scale)?;
    let mut base: ReplayConfig = match configs.into_iter().next() {
        Some(c) => c,
        None => super::replay::scale(
            loaded
                .philly_base
                .clone()
                .context("nothing to hold fixed: give --config, --journal or Philly traces")?,
            args.capacity_scale,
        )?,
    };
    // A journal's baseline carries no restart overhead: where its logs measured restores,
    // their mean is held fixed instead.
    let held_measured = journal_base
        .is_some()
        .then(|| sweep::held_restart_s(&loaded.restores))
        .flatten();
    if let Some(s) = held_measured {
        base.workload.restart_overhead_s = s;
    }
    let (cmp, notes) =
        super::replay::comparison(&rargs, std::slice::from_ref(&base), &loaded.jobs, None)?;
    let (classes, class_note) = classes(args, &loaded.jobs, &cmp.class_by_policy)?;
    let model = model(args, &cmp.rules)?;
    let threads = match args.threads {
        Some(0) => bail!("--threads 0: give at least 1"),
        Some(n) => n,
        None => std::thread::available_parallelism().map_or(1, usize::from),
    };
    let plan = Plan {
        trace: &loaded.jobs,
        base: &base,
        cmp: &cmp,
        classes: &classes,
        settings: &settings,
        model: &model,
    };
    let began = Instant::now();
    let bar = |done: usize, total: usize| {
        if progress {
            let width = 30;
            let filled = done * width / total.max(1);
            eprint!(
                "\rsweep [{}{}] {done}/{total} replays",
                "#".repeat(filled),
                ".".repeat(width - filled)
            );
            let _ = std::io::stderr().flush();
        }
    };
    let swept = sweep::sweep(&plan, threads, &bar)?;
    if progress {
        eprintln!();
    }
    eprintln!(
        "{} replays of {} jobs on {threads} thread(s) in {:.2} s",
        plan.runs(),
        loaded.jobs.len(),
        began.elapsed().as_secs_f64()
    );
    let mut notes = sweep_notes(&base, &plan, class_note, notes);
    notes.push(restart_note(
        &base,
        &classes,
        &loaded.restores,
        held_measured,
    ));
    Ok((swept, notes))
}

/// What the report states first: what was held fixed, the classes, what is measured and what
/// modelled, and the deadlines the promise is judged by.
fn sweep_notes(
    base: &ReplayConfig,
    plan: &Plan<'_>,
    class_note: String,
    replay_notes: Vec<String>,
) -> Vec<String> {
    let m = plan.model;
    let mut notes = vec![
        format!(
            "Held fixed: configuration {} ({}), restart overhead {} s per re-run; {} jobs; {} replays: the class as configured (the reference) and one per class and setting, each setting given to the class's jobs alone.",
            base.name,
            base.capacity_summary(),
            base.workload.restart_overhead_s,
            plan.trace.len(),
            plan.runs()
        ),
        class_note,
        "Measured (the engine's replay of the trace, the ledger replay's report uses): productive GPU-h, preemptions and the lost work they cause (lost after the last checkpoint of the interval), jobs failed at the retry limit, completion times, missed deadlines and budget breaches.".to_string(),
        format!(
            "Modelled: checkpoint overhead = checkpoints written × {} s per write (--checkpoint-write) × the job's GPUs: nothing measures how long a checkpoint write takes (the journal records checkpoint objects and restores, not writes), and the overhead is counted, not scheduled (a replayed job does not run longer for it); checkpoint storage = checkpoints written × {} GB per GPU (--checkpoint-gb-per-gpu), every checkpoint kept a month, {}; restart overhead is restart_overhead_s per re-run, measured or modelled as the next note says per class.",
            m.write_s,
            m.gb_per_gpu,
            match m.s3_gb_month {
                Some(p) => format!(
                    "priced at [prices] s3_gb_month = {p} {}",
                    m.currency.as_deref().unwrap_or("")
                )
                .trim_end()
                .to_string(),
                None => "unpriced (no [prices] s3_gb_month)".to_string(),
            }
        ),
    ];
    notes.extend(
        replay_notes
            .into_iter()
            .filter(|n| n.starts_with("Deadlines:")),
    );
    notes
}

/// Per class, whether its restart overhead was measured (n restores in the journal's logs) or
/// modelled, and what the replays hold fixed.
fn restart_note(
    base: &ReplayConfig,
    classes: &[SweepClass],
    restores: &[sweep::MeasuredRestore],
    held_measured: Option<u64>,
) -> String {
    let modelled_s = base.workload.restart_overhead_s;
    let per_class: Vec<String> = classes
        .iter()
        .map(|c| {
            let basis = match held_measured {
                Some(_) => sweep::RestartBasis::of_class(&c.members, restores, modelled_s),
                None => sweep::RestartBasis::Modelled { s: modelled_s },
            };
            format!("{} {}", c.name, basis.text())
        })
        .collect();
    let held = match held_measured {
        Some(s) => format!(
            "the replays hold {s} s per re-run, the mean of the journal's {} measured restores (a re-run's start to its log's restore line), for every class",
            restores.len()
        ),
        None => format!(
            "no restore measured (trace files, or no log said when a re-run restored): the replays hold the configuration's restart_overhead_s = {modelled_s} s"
        ),
    };
    format!(
        "Restart overhead per class: {}; {held}.",
        per_class.join("; ")
    )
}
