//! `quotatop replay`: a trace under several configurations, side by side.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use crate::cli::{ReplayArgs, ReportFormat};
use crate::model::{CapacityLimit, QuotaShare, SharingConfig};
use crate::replay::{
    ReplayConfig, ReplayOutcome, StuckJob, TraceJob, Workload, never_run, philly, presets, replay,
    report, trace_csv,
};

pub fn run(args: &ReplayArgs) -> anyhow::Result<()> {
    let text = execute(args, std::io::stderr().is_terminal())?;
    // Share, configuration and instance-type names come from trace and config files: whatever
    // the format, no control character reaches the terminal (line breaks kept).
    for line in text.lines() {
        println!("{}", crate::model::clean_text(line));
    }
    Ok(())
}

/// Loaded traces, and the Philly entitlements when the traces came with them.
struct Loaded {
    jobs: Vec<TraceJob>,
    philly_base: Option<ReplayConfig>,
}

fn is_philly(path: &Path) -> bool {
    philly::vc_of(path).is_some()
        && std::fs::read_to_string(path)
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
            let text = std::fs::read_to_string(p)
                .with_context(|| format!("cannot read trace {}", p.display()))?;
            jobs.extend(trace_csv::parse(&text, &p.display().to_string())?);
            continue;
        };
        for t in philly_files {
            if t.defaulted_nodes {
                eprintln!(
                    "{}",
                    crate::model::clean_text(&format!(
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
    let philly_base = (!shares.is_empty()).then(|| ReplayConfig {
        name: "philly".to_string(),
        capacity: crate::replay::config::summed_limits(&shares),
        shares,
        workload: Workload::default(),
    });
    Ok(Loaded { jobs, philly_base })
}

/// `cfg` × `factor`, validated as the engine will take it; the scaled capacities go to stderr.
fn scale(cfg: ReplayConfig, factor: Option<f64>) -> anyhow::Result<ReplayConfig> {
    let Some(f) = factor else {
        return Ok(cfg);
    };
    let scaled = cfg.scaled(f);
    scaled
        .build_engine()
        .with_context(|| format!("configuration {:?} scaled by {f}", cfg.name))?;
    eprintln!(
        "{}",
        crate::model::clean_text(&format!(
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

/// Runs the replays and renders the report (`progress` draws a bar on stderr).
pub fn execute(args: &ReplayArgs, progress: bool) -> anyhow::Result<String> {
    let loaded = load_traces(&args.trace, args.default_nodes)?;
    let mut configs: Vec<ReplayConfig> = Vec::new();
    for p in &args.config {
        configs.push(scale(ReplayConfig::load(p)?, args.capacity_scale)?);
    }
    if args.preset {
        let base = match configs.first() {
            Some(c) => c.clone(),
            None => scale(
                loaded
                    .philly_base
                    .clone()
                    .context("--preset needs a base: give a --config, or Philly traces")?,
                args.capacity_scale,
            )?,
        };
        if let Some(p) = &args.protect
            && !base.shares.iter().any(|s| &s.name == p)
        {
            bail!("--protect {p}: no such share in the base configuration");
        }
        if let Some(choice) = presets::protected_share(&base, args.protect.as_deref(), &loaded.jobs)
        {
            eprintln!("{}", crate::model::clean_text(&choice.reason));
        }
        configs.extend(presets::product_presets(
            &base,
            args.protect.as_deref(),
            &loaded.jobs,
        ));
    }
    if configs.is_empty() {
        bail!("nothing to compare: give --config A.toml (one or more) and/or --preset");
    }
    let mut outcomes: Vec<ReplayOutcome> = Vec::new();
    for cfg in &configs {
        let mut bar = |done: usize, total: usize| {
            if progress {
                let width = 30;
                let filled = done * width / total.max(1);
                eprint!(
                    "\r{:<24} [{}{}] {done}/{total} jobs",
                    crate::model::clean_text(&cfg.name),
                    "#".repeat(filled),
                    ".".repeat(width - filled)
                );
                let _ = std::io::stderr().flush();
            }
        };
        let (outcome, engine) = replay(&loaded.jobs, cfg, &mut bar)?;
        if progress {
            eprintln!();
        }
        if let Some(m) = stuck_message(&cfg.name, &never_run(&loaded.jobs, &engine)) {
            for line in m.lines() {
                eprintln!("{}", crate::model::clean_text(line));
            }
        }
        outcomes.push(outcome);
    }
    Ok(match args.format {
        ReportFormat::Md => report::markdown(&outcomes),
        ReportFormat::Json => report::json(&outcomes),
        ReportFormat::Csv => report::csv(&outcomes),
    })
}
