//! `quotatop replay`: a trace under several configurations, side by side.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use crate::cli::{ReplayArgs, ReportFormat};
use quotatop_analysis::scorecard::decision::DeadlineRule;
use quotatop_model::{CapacityLimit, QuotaShare, SharingConfig};
use quotatop_replay::{
    Comparison, ReplayConfig, ReplayOutcome, StuckJob, TraceJob, Workload, philly, presets,
    replay_lean, report, trace_csv,
};

pub fn run(args: &ReplayArgs) -> anyhow::Result<()> {
    quotatop_replay::fix_mmap_threshold();
    let text = execute(args, std::io::stderr().is_terminal())?;
    // Share, configuration and instance-type names come from trace and config files: whatever
    // the format, no control character reaches the terminal (line breaks kept).
    super::print_clean_lines(&text)
}

/// Loaded traces, and the Philly entitlements when the traces came with them.
pub(crate) struct Loaded {
    pub(crate) jobs: Vec<TraceJob>,
    pub(crate) philly_base: Option<ReplayConfig>,
    /// From a journal: the restores its logs measured (none from trace files).
    pub(crate) restores: Vec<quotatop_replay::sweep::MeasuredRestore>,
}

fn is_philly(path: &Path) -> bool {
    philly::vc_of(path).is_some()
        && philly::read_text(path)
            .ok()
            .and_then(|t| t.lines().next().map(|h| h.contains("app_id")))
            .unwrap_or(false)
}

fn load_traces(paths: &[PathBuf], default_nodes: Option<u32>) -> anyhow::Result<Loaded> {
    let mut jobs = Vec::new();
    let mut shares: Vec<QuotaShare> = Vec::new();
    for p in paths {
        let philly_files: Vec<philly::VcTrace> = if p.is_dir() {
            philly::load_dir(p, default_nodes)?
        } else if is_philly(p) {
            vec![philly::load_file(p, default_nodes)?]
        } else {
            let text = quotatop_model::read_small_text(p, quotatop_model::MAX_TRACE_FILE)
                .with_context(|| format!("cannot read trace {}", p.display()))?;
            jobs.extend(trace_csv::parse(&text, &p.display().to_string())?);
            continue;
        };
        for t in philly_files {
            if t.defaulted_nodes {
                eprintln!(
                    "{}",
                    quotatop_model::clean_text(&format!(
                        "Philly VC {}: philly_vc_nodes.csv gives no node count; using --default-nodes {} ({} GPUs)",
                        t.vc,
                        t.gpus / philly::GPUS_PER_NODE,
                        t.gpus
                    ))
                );
            }
            shares.push(QuotaShare::new(
                t.vc,
                vec![CapacityLimit::new(philly::GPU_INSTANCE_TYPE, t.gpus)],
                SharingConfig::reserve(),
            ));
            jobs.extend(t.jobs);
        }
    }
    if jobs.is_empty() {
        bail!("the traces hold no jobs");
    }
    // Kept for every configuration: no spare capacity from the extends.
    jobs.shrink_to_fit();
    let philly_base = (!shares.is_empty()).then(|| ReplayConfig {
        name: "philly".to_string(),
        capacity: quotatop_replay::summed_limits(&shares),
        shares,
        workload: Workload::default(),
        rules: Default::default(),
    });
    Ok(Loaded {
        jobs,
        philly_base,
        restores: Vec::new(),
    })
}

/// `cfg` × `factor`, validated as the engine will take it; the scaled capacities go to stderr.
pub(crate) fn scale(cfg: ReplayConfig, factor: Option<f64>) -> anyhow::Result<ReplayConfig> {
    let Some(f) = factor else {
        return Ok(cfg);
    };
    let scaled = cfg.scaled(f);
    scaled
        .build_engine()
        .with_context(|| format!("configuration {:?} scaled by {f}", cfg.name))?;
    eprintln!(
        "{}",
        quotatop_model::clean_text(&format!(
            "capacity scaled by {f}: {}: {}",
            scaled.name,
            scaled.capacity_summary()
        ))
    );
    Ok(scaled)
}

/// How many trace jobs a configuration leaves stuck, named (up to [`NAMED_STUCK`]).
fn stuck_message(cfg: &str, stuck: &[StuckJob<'_>]) -> Option<String> {
    if stuck.is_empty() {
        return None;
    }
    let mut out = format!(
        "{cfg}: {} job(s) can never run (RUNNABLE with a MISCONFIGURATION reason; counted as unfinished):",
        stuck.len()
    );
    for s in stuck.iter().take(NAMED_STUCK) {
        out.push_str(&format!(
            "\n  {} ({}): {}",
            s.job.name, s.job.origin, s.reason
        ));
    }
    if stuck.len() > NAMED_STUCK {
        out.push_str(&format!("\n  … and {} more", stuck.len() - NAMED_STUCK));
    }
    Some(out)
}

/// Stuck jobs named per configuration on stderr; the rest are counted.
const NAMED_STUCK: usize = 10;

/// The trace, and the journal's baseline (unscaled) when the trace came from the journal.
pub(crate) fn load(args: &ReplayArgs) -> anyhow::Result<(Loaded, Option<ReplayConfig>)> {
    let Some(path) = &args.journal else {
        return Ok((load_traces(&args.trace, args.default_nodes)?, None));
    };
    let opts = super::journal::config_options(None)?;
    let t = super::journal::trace_from_journal(
        path.as_deref(),
        &args.window,
        &opts,
        if args.baseline_at_since {
            super::journal::Baseline::AtSince
        } else {
            super::journal::Baseline::LastSeen
        },
    )?;
    eprintln!(
        "{}",
        quotatop_model::clean_text(&format!(
            "{} job(s) from the journal{}; baseline: {}",
            t.trace.jobs.len(),
            super::journal::left_out_text(&t.trace)
                .map(|l| format!("; {l}"))
                .unwrap_or_default(),
            t.baseline.capacity_summary()
        ))
    );
    let loaded = Loaded {
        jobs: t.trace.jobs,
        philly_base: None,
        restores: t.restores,
    };
    Ok((loaded, Some(t.baseline)))
}

/// The configurations to compare at capacity scale `factor`: the journal's baseline, the
/// files, the presets; and the share the presets protect.
pub(crate) fn configs_at(
    args: &ReplayArgs,
    loaded: &Loaded,
    journal_base: Option<&ReplayConfig>,
    factor: Option<f64>,
) -> anyhow::Result<(Vec<ReplayConfig>, Option<presets::ProtectedChoice>)> {
    let mut configs: Vec<ReplayConfig> = Vec::new();
    if let Some(b) = journal_base {
        configs.push(scale(b.clone(), factor)?);
    }
    for p in &args.config {
        configs.push(scale(ReplayConfig::load(p)?, factor)?);
    }
    let mut protected = None;
    if args.preset {
        let base = match configs.first() {
            Some(c) => c.clone(),
            None => scale(
                loaded
                    .philly_base
                    .clone()
                    .context("--preset needs a base: give a --config, or Philly traces")?,
                factor,
            )?,
        };
        if let Some(p) = &args.protect
            && !base.shares.iter().any(|s| &s.name == p)
        {
            bail!("--protect {p}: no such share in the base configuration");
        }
        protected = presets::protected_share(&base, args.protect.as_deref(), &loaded.jobs);
        configs.extend(presets::product_presets(
            &base,
            args.protect.as_deref(),
            &loaded.jobs,
        ));
    }
    Ok((configs, protected))
}

/// Replays the trace under each configuration; stuck jobs are named on stderr when `loud`.
fn run_all(
    configs: &[ReplayConfig],
    jobs: &[TraceJob],
    cmp: &Comparison,
    progress: bool,
    loud: bool,
) -> anyhow::Result<Vec<ReplayOutcome>> {
    let mut outcomes: Vec<ReplayOutcome> = Vec::new();
    for cfg in configs {
        let mut bar = |done: usize, total: usize| {
            if progress {
                let width = 30;
                let filled = done * width / total.max(1);
                eprint!(
                    "\r{} [{}{}] {done}/{total} jobs",
                    quotatop_model::pad_right(&quotatop_model::clean_text(&cfg.name), 24),
                    "#".repeat(filled),
                    ".".repeat(width - filled)
                );
                let _ = std::io::stderr().flush();
            }
        };
        let (outcome, stuck) = replay_lean(jobs, cfg, cmp, &mut bar)?;
        if progress {
            eprintln!();
        }
        if let Some(m) = stuck_message(&cfg.name, &stuck).filter(|_| loud) {
            for line in m.lines() {
                eprintln!("{}", quotatop_model::clean_text(line));
            }
        }
        outcomes.push(outcome);
    }
    Ok(outcomes)
}

/// `--sensitivity`: every scenario's verdict at 0.75× and 1.25× the capacity, in one line.
fn sensitivity(
    args: &ReplayArgs,
    loaded: &Loaded,
    journal_base: Option<&ReplayConfig>,
    cmp: &Comparison,
) -> anyhow::Result<String> {
    let given = args.capacity_scale.unwrap_or(1.0);
    let mut parts = Vec::new();
    for f in SENSITIVITY {
        let (configs, _) = configs_at(args, loaded, journal_base, Some(given * f))?;
        let outcomes = run_all(&configs, &loaded.jobs, cmp, false, false)?;
        let judged = report::judge(&outcomes, &cmp.rules.decision);
        let verdicts: Vec<String> = outcomes
            .iter()
            .zip(&judged.verdicts)
            .filter_map(|(o, v)| Some(format!("{} {}", o.config, v.as_ref()?.kind.as_str())))
            .collect();
        parts.push(format!("at {f}× the capacity: {}", verdicts.join(", ")));
    }
    Ok(format!(
        "Sensitivity (--sensitivity; capacity scale {given} × 0.75 and × 1.25, the same rule): {}.",
        parts.join("; ")
    ))
}

/// The capacity factors of `--sensitivity`, against the given scale.
const SENSITIVITY: [f64; 2] = [0.75, 1.25];

/// Runs the replays and renders the report (`progress` draws a bar on stderr).
pub fn execute(args: &ReplayArgs, progress: bool) -> anyhow::Result<String> {
    let (loaded, journal_base) = load(args)?;
    let (configs, protected) =
        configs_at(args, &loaded, journal_base.as_ref(), args.capacity_scale)?;
    if let Some(choice) = &protected {
        eprintln!("{}", quotatop_model::clean_text(&choice.reason));
    }
    if configs.is_empty() {
        bail!("nothing to compare: give --config A.toml (one or more) and/or --preset");
    }
    unique_names(&configs, args)?;
    let (cmp, mut notes) = comparison(
        args,
        &configs,
        &loaded.jobs,
        protected.as_ref().map(|c| c.name.clone()),
    )?;
    if let Some(choice) = &protected {
        notes.insert(
            0,
            format!("The lending-protected preset's {}.", choice.reason),
        );
    }
    let outcomes = run_all(&configs, &loaded.jobs, &cmp, progress, true)?;
    if let Some(path) = &args.jobs_out {
        write_jobs(path, &outcomes)?;
    }
    if args.sensitivity {
        notes.push(sensitivity(args, &loaded, journal_base.as_ref(), &cmp)?);
    }
    let rule = &cmp.rules.decision;
    Ok(match args.format {
        ReportFormat::Md => report::markdown(&outcomes, rule, &notes),
        ReportFormat::Json => report::json(&outcomes, rule, &notes),
        ReportFormat::Csv => report::csv(&outcomes, rule),
    })
}

/// Refuses two scenarios of the same name: their columns, verdicts and `--jobs-out` rows could
/// not be told apart. The error says where each comes from and how to rename.
fn unique_names(configs: &[ReplayConfig], args: &ReplayArgs) -> anyhow::Result<()> {
    // Configurations come in order: the journal's baseline, the files, the presets.
    let mut origins: Vec<String> = Vec::new();
    if args.journal.is_some() {
        origins.push("--journal".to_string());
    }
    origins.extend(
        args.config
            .iter()
            .map(|f| format!("--config {}", f.display())),
    );
    while origins.len() < configs.len() {
        origins.push("--preset".to_string());
    }
    for (i, c) in configs.iter().enumerate() {
        if let Some(j) = configs[..i].iter().position(|p| p.name == c.name) {
            bail!(
                "two scenarios are named {:?} ({} and {}): rename one, e.g. name = \"{}-2\" at the top of its config file (the presets are named isolated, lending and lending-protected(<share>))",
                c.name,
                origins[j],
                origins[i],
                c.name
            );
        }
    }
    Ok(())
}

/// The default deadline rule when none is given: succeed within this many times the work.
pub const DEFAULT_DEADLINE_FACTOR: f64 = 2.0;

/// How every scenario is read (horizon, rules, important work), and the notes that state it.
pub(crate) fn comparison(
    args: &ReplayArgs,
    configs: &[ReplayConfig],
    jobs: &[TraceJob],
    protected: Option<String>,
) -> anyhow::Result<(Comparison, Vec<String>)> {
    let rules = match &args.rules {
        Some(p) => quotatop_replay::load_rules(p)?,
        None => configs.first().map(|c| c.rules.clone()).unwrap_or_default(),
    };
    let (mut cmp, mut notes) = comparison_with(
        args.horizon.as_deref(),
        rules,
        jobs,
        protected,
        args.jobs_out.is_some(),
    )?;
    if let Some(path) = &args.policy {
        let policy = quotatop_policy::read(path)?;
        with_policy(&mut cmp, &mut notes, &policy, jobs);
    }
    Ok((cmp, notes))
}

/// `--policy`: important work is the jobs of classes with a promise or protected (replacing
/// the band heuristic), and each job is judged by its class's promise and interruption budget
/// (its class by `quotatop_policy::class_of`, the one membership rule).
fn with_policy(
    cmp: &mut Comparison,
    notes: &mut Vec<String>,
    policy: &quotatop_policy::Policy,
    jobs: &[TraceJob],
) {
    cmp.rules.classes = quotatop_policy::class_rules(policy);
    let mut important = std::collections::BTreeSet::new();
    let mut promised: Vec<usize> = vec![0; policy.classes.len()];
    for j in jobs {
        let priority = j.priority.clamp(0, i64::from(quotatop_model::MAX_PRIORITY)) as u32;
        let Some(k) = quotatop_policy::class_index(policy, &j.share, priority) else {
            continue;
        };
        cmp.class_by_policy.insert((j.share.clone(), j.priority), k);
        let class = &policy.classes[usize::from(k)];
        if quotatop_policy::important(class) {
            important.insert((j.share.clone(), j.priority));
        }
        if !class.promise.is_empty() && j.extras.deadline_ms().is_none() {
            promised[usize::from(k)] += 1;
        }
    }
    cmp.important_by_policy = Some(important);
    let count = jobs.iter().filter(|j| cmp.important(j)).count();
    let by_class: Vec<String> = policy
        .classes
        .iter()
        .zip(&promised)
        .filter(|(_, n)| **n > 0)
        .map(|(c, n)| format!("{} {n}", c.name))
        .collect();
    let total: usize = promised.iter().sum();
    for n in notes.iter_mut().filter(|n| n.starts_with("Deadlines:")) {
        if let Some((own, rest)) = n.split_once("; the others ") {
            *n = format!(
                "{own}; {total} job(s) follow the promise of their policy class ({}; a deadline factor, else the max wait as a start-by deadline); the others {rest}",
                if by_class.is_empty() {
                    "none".to_string()
                } else {
                    by_class.join(", ")
                }
            );
        }
    }
    notes.retain(|n| !n.starts_with("Important work:"));
    notes.push(format!(
        "Important work: {count} of {} jobs, the same in every scenario: the jobs of the classes of policy {} (sha256 {}) with a promise or protected, replacing the band heuristic. A job's class is its share's, then by its priority as submitted (traces carry no tags; the rule policy check uses); its class's promise is its deadline and its class's interruption budget (over the class's jobs in every share) judges it, over [deadlines] and [budgets] of the rules.",
        jobs.len(),
        policy.origin,
        policy.short_hash()
    ));
}

/// How every scenario is read given `--horizon` and the rules (the default deadline rule
/// added when they have none), and the notes that state it: `replay` and `shares plan
/// --impact` alike.
pub fn comparison_with(
    horizon: Option<&str>,
    mut rules: quotatop_analysis::scorecard::decision::Rules,
    jobs: &[TraceJob],
    protected: Option<String>,
    per_job: bool,
) -> anyhow::Result<(Comparison, Vec<String>)> {
    let mut notes = Vec::new();
    if let Some(w) = rules.decision.migrate() {
        eprintln!("{}", quotatop_model::clean_text(&w));
        notes.push(w);
    }
    let horizon_ms = match horizon {
        Some(h) => {
            let ms =
                quotatop_model::parse_duration(h).map_err(|e| anyhow::anyhow!("--horizon: {e}"))?;
            if ms <= 0 {
                bail!("--horizon {h}: must be longer than 0");
            }
            notes.push(format!(
                "Horizon: the extra goodput column counts the work finished within {} of the first submission (--horizon); the verdict does not depend on it.",
                quotatop_analysis::scorecard::format::duration(Some(ms))
            ));
            Some(ms)
        }
        None => {
            let lo = jobs.iter().map(|j| j.submit_ms).min().unwrap_or(0);
            let hi = jobs.iter().map(|j| j.submit_ms).max().unwrap_or(0);
            notes.push(format!(
                "Horizon: the extra goodput column counts the work finished within {} of the first submission: the last submission + {} (--horizon to change); the verdict does not depend on it.",
                quotatop_analysis::scorecard::format::duration(Some(
                    hi - lo + quotatop_replay::DEFAULT_HORIZON_TAIL_MS
                )),
                quotatop_analysis::scorecard::format::duration(Some(
                    quotatop_replay::DEFAULT_HORIZON_TAIL_MS
                ))
            ));
            None
        }
    };
    let trace_deadlines = jobs
        .iter()
        .filter(|j| j.extras.deadline_ms().is_some())
        .count();
    if rules.deadlines.is_empty() {
        rules.deadlines.insert(
            "*".to_string(),
            DeadlineRule {
                deadline_factor: Some(DEFAULT_DEADLINE_FACTOR),
                max_wait_s: None,
            },
        );
        notes.push(format!(
            "Deadlines: {trace_deadlines} job(s) carry their own (trace column deadline_s); the others must succeed within {DEFAULT_DEADLINE_FACTOR} × their work after submission (default: no [deadlines] given).",
        ));
    } else {
        notes.push(format!(
            "Deadlines: {trace_deadlines} job(s) carry their own (trace column deadline_s); the others follow [deadlines] of the rules.",
        ));
    }
    let cmp = Comparison {
        horizon_ms,
        rules,
        protected,
        per_job,
        important_by_policy: None,
        class_by_policy: Default::default(),
    };
    let important = jobs.iter().filter(|j| cmp.important(j)).count();
    notes.push(format!(
        "Important work: {important} of {} jobs, the same in every scenario: the high and critical bands as submitted{}.",
        jobs.len(),
        match &cmp.protected {
            Some(p) => format!(", and share {p} (protected by the lending-protected preset)"),
            None => String::new(),
        }
    ));
    if cmp.rules.prices.is_empty() {
        notes.push("Cost: no [prices] given, so no cost lines.".to_string());
    }
    Ok((cmp, notes))
}

/// `--jobs-out`: one row per job and configuration, written whole or not at all.
fn write_jobs(path: &Path, outcomes: &[ReplayOutcome]) -> anyhow::Result<()> {
    let q = |s: &str| quotatop_model::csv_field(&quotatop_model::clean_text(s));
    let num = |v: Option<f64>| v.map_or(String::new(), |x| format!("{x:.3}"));
    let mut out = String::from(
        "config,name,origin,share,important,submit_s,attempts,held_from_s,stopped_s,outcome,ended_s,productive_gpu_hours,lost_gpu_hours,overhead_gpu_hours,deadline_met,lost_basis\n",
    );
    let mut rows = 0usize;
    for o in outcomes {
        for r in &o.jobs_rows {
            rows += 1;
            let starts: Vec<String> = r.attempts.iter().map(|a| num(a.0)).collect();
            let stops: Vec<String> = r.attempts.iter().map(|a| num(a.1)).collect();
            out.push_str(&format!(
                "{},{},{},{},{},{:.3},{},{},{},{},{},{},{},{},{},{}\n",
                q(&o.config),
                q(&r.name.to_string()),
                q(&r.origin
                    .as_ref()
                    .map(ToString::to_string)
                    .unwrap_or_default()),
                q(&r.share),
                r.important,
                r.submit_s,
                r.attempts.len(),
                q(&starts.join(";")),
                q(&stops.join(";")),
                r.outcome,
                num(r.ended_s),
                r.productive_gpu_hours,
                r.lost_gpu_hours,
                r.overhead_gpu_hours,
                r.deadline_met.map_or(String::new(), |m| m.to_string()),
                q(&r.lost_basis.label()),
            ));
        }
    }
    if rows == 0 {
        bail!("--jobs-out {}: no job rows to write", path.display());
    }
    // A name of this process's own: two replays writing the same file never mix their rows.
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".{}.partial", std::process::id()));
    let tmp = std::path::PathBuf::from(tmp);
    std::fs::write(&tmp, out)
        .with_context(|| format!("cannot write --jobs-out {}", tmp.display()))?;
    std::fs::rename(&tmp, path)
        .with_context(|| format!("cannot move {} to {}", tmp.display(), path.display()))?;
    eprintln!("wrote {rows} job rows to {}", path.display());
    Ok(())
}
