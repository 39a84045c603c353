//! `quotatop emulator`: the embedded AWS Batch emulator alone, until Ctrl-C.

use anyhow::Context as _;

use crate::cli::EmulatorArgs;
use quotatop_emulator::{self as emulator, ClockMode, EmulatorConfig, FaultSpec, Scenario};

/// `--speed`'s default: one simulated second per real second.
const REAL_TIME: f64 = 1.0;

pub fn run(args: &EmulatorArgs) -> anyhow::Result<()> {
    // Without --scenario, the demo world built into the binary: an installed binary runs from
    // any directory, not only from the source tree.
    let scenario = match &args.scenario {
        Some(path) => Scenario::load(path)?,
        None => Scenario::parse(crate::commands::demo::DEMO_SCENARIO)?,
    };
    let mut config = EmulatorConfig::from_scenario(scenario)?;
    config.port = args.port;
    config.bind = args.bind;
    config.allow_remote = args.allow_remote;
    config.deterministic_ids = args.deterministic;
    config.preload = !args.empty;
    config.auth_check = !args.no_auth_check;
    anyhow::ensure!(
        emulator::valid_region(&args.region),
        "--region must be a region name such as us-east-1, got {:?}",
        args.region
    );
    config.region = args.region.clone();
    anyhow::ensure!(
        args.account.len() == 12 && args.account.bytes().all(|b| b.is_ascii_digit()),
        "--account must be 12 digits, got {:?}",
        args.account
    );
    config.account = args.account.clone();
    config.limits = emulator::ServerLimits {
        max_connections: args.max_connections as usize,
        header_timeout: std::time::Duration::from_secs(args.header_timeout),
        body_timeout: std::time::Duration::from_secs(args.body_timeout),
        idle_timeout: std::time::Duration::from_secs(args.idle_timeout),
    };
    // A tool for other clients: real time unless acceleration is asked for (a fast clock
    // starts behind the wall clock, which a client filtering by its own clock does not expect).
    let speed = args.speed.unwrap_or(REAL_TIME);
    quotatop_emulator::check_speed(speed).map_err(|m| anyhow::anyhow!("--{m}"))?;
    config.clock = ClockMode::Scaled(speed);
    if let Some(spec) = &args.faults {
        config.faults = FaultSpec::parse(spec)?;
    }
    let runtime = super::runtime()?;
    runtime.block_on(serve(config, args))
}

async fn serve(config: EmulatorConfig, args: &EmulatorArgs) -> anyhow::Result<()> {
    let speed = match config.clock {
        ClockMode::Scaled(s) if s == REAL_TIME => format!("{s}x simulated time (real time)"),
        ClockMode::Scaled(s) => format!(
            "{s}x simulated time (accelerated: timestamps start behind the wall clock, see docs/emulator.md)"
        ),
        ClockMode::Manual => "manual clock".to_string(),
    };
    let queue = config.scenario.queue.name.clone();
    let name = config.scenario.name.clone();
    let (region, preload) = (config.region.clone(), config.preload);
    let faults = config.faults.clone();
    let remote = !config.bind.is_loopback();
    let handle = emulator::start(config).await?;
    let url = handle.endpoint_url();
    if preload {
        println!(
            "quotatop emulator: scenario {name} ({}), queue {queue} in {region}, {speed}",
            args.scenario
                .as_deref()
                .map_or_else(|| "built in".into(), |p| p.display().to_string())
        );
    } else {
        println!(
            "quotatop emulator: empty account in {region} (create environments, policies, queues and shares through the API), {speed}"
        );
    }
    if !faults.is_empty() {
        println!(
            "fault injection: {}",
            args.faults.as_deref().unwrap_or("from the scenario")
        );
    }
    if remote {
        println!(
            "listening on {url}: NOT loopback (--allow-remote); signatures are checked for shape only, anyone who can reach it can change jobs\n"
        );
    } else {
        println!("listening on {url} (loopback only)\n");
    }
    println!("Point a client at it with:");
    println!("  export AWS_ENDPOINT_URL={url}");
    println!("  export AWS_ACCESS_KEY_ID=test");
    println!("  export AWS_SECRET_ACCESS_KEY=test");
    println!("  export AWS_REGION={region}");
    if preload {
        println!("  aws batch get-job-queue-snapshot --job-queue {queue}");
    } else {
        println!("  aws batch describe-job-queues");
    }
    println!("(requests signed for another region see that region's own, initially empty, world)");
    println!("\nCtrl-C stops it.");
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    let mut every = tokio::time::interval(std::time::Duration::from_millis(500));
    loop {
        tokio::select! {
            r = &mut ctrl_c => {
                r.context("cannot listen for Ctrl-C")?;
                break;
            }
            _ = every.tick() => {
                for w in handle.take_warnings()? {
                    println!("{w}");
                }
            }
        }
    }
    println!("\nshutting down");
    handle.shutdown().await?;
    Ok(())
}
