//! `quotatop replay`: a trace under several configurations, side by side.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use crate::cli::{ReplayArgs, ReportFormat};
use crate::model::{CapacityLimit, QuotaShare, SharingConfig};
use crate::replay::{
    ReplayConfig, ReplayOutcome, TraceJob, Workload, philly, presets, replay, report, trace_csv,
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

fn load_traces(paths: &[PathBuf]) -> anyhow::Result<Loaded> {
    let mut jobs = Vec::new();
    let mut shares: Vec<QuotaShare> = Vec::new();
    for p in paths {
        let philly_files: Vec<(String, u32, Vec<TraceJob>)> = if p.is_dir() {
            philly::load_dir(p)?
        } else if is_philly(p) {
            let dir = p.parent().unwrap_or(Path::new("."));
            let nodes = std::fs::read_to_string(dir.join("philly_vc_nodes.csv"))
                .ok()
                .map(|t| philly::parse_nodes(&t, "philly_vc_nodes.csv"))
                .transpose()?
                .unwrap_or_default();
            let vc = philly::vc_of(p).unwrap_or_default();
            let n = nodes
                .iter()
                .find(|(v, _)| *v == vc)
                .map_or(philly::DEFAULT_NODES, |(_, n)| *n);
            vec![(vc, n * philly::GPUS_PER_NODE, philly::parse_trace(p)?)]
        } else {
            let text = std::fs::read_to_string(p)
                .with_context(|| format!("cannot read trace {}", p.display()))?;
            jobs.extend(trace_csv::parse(&text, &p.display().to_string())?);
            continue;
        };
        for (vc, gpus, trace) in philly_files {
            shares.push(QuotaShare::new(
                vc,
                vec![CapacityLimit::new(philly::GPU_INSTANCE_TYPE, gpus)],
                SharingConfig::reserve(),
            ));
            jobs.extend(trace);
        }
    }
    if jobs.is_empty() {
        bail!("the traces hold no jobs");
    }
    // Kept for every configuration: no spare capacity from the extends.
    jobs.shrink_to_fit();
    let philly_base = (!shares.is_empty()).then(|| ReplayConfig {
        name: "philly".to_string(),
        capacity: crate::replay::config::summed_limits(&shares),
        shares,
        workload: Workload::default(),
    });
    Ok(Loaded { jobs, philly_base })
}

/// Runs the replays and renders the report (`progress` draws a bar on stderr).
pub fn execute(args: &ReplayArgs, progress: bool) -> anyhow::Result<String> {
    let loaded = load_traces(&args.trace)?;
    let mut configs: Vec<ReplayConfig> = args
        .config
        .iter()
        .map(|p| ReplayConfig::load(p))
        .collect::<Result<_, _>>()?;
    if args.preset {
        let base = configs
            .first()
            .cloned()
            .or(loaded.philly_base.clone())
            .context("--preset needs a base: give a --config, or Philly traces")?;
        if let Some(p) = &args.protect
            && !base.shares.iter().any(|s| &s.name == p)
        {
            bail!("--protect {p}: no such share in the base configuration");
        }
        configs.extend(presets::product_presets(&base, args.protect.as_deref()));
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
        let (outcome, _engine) = replay(&loaded.jobs, cfg, &mut bar)?;
        if progress {
            eprintln!();
        }
        outcomes.push(outcome);
    }
    Ok(match args.format {
        ReportFormat::Md => report::markdown(&outcomes),
        ReportFormat::Json => report::json(&outcomes),
        ReportFormat::Csv => report::csv(&outcomes),
    })
}
