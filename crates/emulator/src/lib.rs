//! The embedded AWS Batch emulator: the quota-share [`quotatop_engine`] behind an HTTP server that
//! speaks the Batch restJson1 protocol as the unmodified `aws_sdk_batch` client expects.
//!
//! - [`start`] binds 127.0.0.1 (port 0 for any free port; another address only if it is loopback
//!   or explicitly allowed) and returns an [`EmulatorHandle`] with
//!   the address, a clock hook for tests, and `shutdown`.
//! - The world comes from a [`Scenario`] (`scenarios/*.toml`): one quota-management job queue, its
//!   service environment and scheduling policy, quota shares, and workload generators.
//! - Time is simulated ([`ClockMode`]): a background task advances the engine at the chosen speed
//!   and every request first brings the engine up to the clock, so timestamps in responses are the
//!   simulated ones.
//! - Faults ([`FaultSpec`]) add latency, throttling, server errors and dropped connections per
//!   operation, seeded.
//!
//! This module uses no AWS SDK types: it reads and writes JSON (see `wire.rs`).

mod account;
mod auth;
mod bus;
mod bus_events;
mod clock;
mod error;
mod faults;
mod hash;
mod job_view;
mod ops_cloudtrail;
mod ops_eventbridge;
mod ops_jobs;
mod ops_list_jobs;
mod ops_logs;
mod ops_queue;
mod ops_resources;
mod ops_s3;
mod ops_setup;
mod ops_shares;
mod ops_sqs;
mod ops_sts;
mod ops_tags;
mod paging;
mod rate_limit;
mod routes;
mod runs;
mod scenario;
mod scenario_check;
mod server;
mod state;
mod training;
mod wire;
mod wire_errors;
mod workload;

use std::collections::VecDeque;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub use account::valid_region;
pub use bus::DeliveryStats;
pub use clock::{ACCELERATED_FOR, ClockMode, SimClock};
pub use error::{ApiError, EmulatorError};
pub use faults::{DeliveryFaults, FaultSpec, FaultStats, Faults, RateLimit};
pub use ops_jobs::{CHECKPOINT_TAG, RESTORE_TAG, WORK_TAG};
pub use routes::OPERATIONS;
pub use scenario::{CapacitySpec, GeneratorSpec, PriorityWeight, Scenario, ScriptedJob, ShareSpec};
pub use scenario_check::{MAX_SPEED, SpeedError, check_speed};
pub use server::MAX_BODY;
pub use server::ServerLimits;
pub use state::ACCOUNT;
pub use training::CHECKPOINT_FAULT_TAG;
pub use workload::{Workload, advance};

use account::Accounts;
use faults::FaultInjector;
use quotatop_engine::{Engine, Event};
use quotatop_model::Millis;

/// How to start an emulator.
#[derive(Debug, Clone)]
pub struct EmulatorConfig {
    pub scenario: Scenario,
    /// Address to listen on: 127.0.0.1 unless set; anything but a loopback address is refused
    /// unless `allow_remote` is set.
    pub bind: IpAddr,
    /// Permits a non-loopback `bind` (the emulator checks a signature's shape, not its secret).
    pub allow_remote: bool,
    /// 0 picks a free port.
    pub port: u16,
    pub clock: ClockMode,
    pub faults: FaultSpec,
    /// Simulated start time (epoch ms); `None`: for a scaled clock far enough behind the wall
    /// clock to run accelerated for a day ([`ClockMode::default_start`]), else the wall clock.
    pub start_ms: Option<Millis>,
    pub region: String,
    /// How often the background task advances the engine (real time).
    pub tick: Duration,
    /// Per-connection timeouts and the caps that bound the server's memory.
    pub limits: ServerLimits,
    /// Preload the scenario's world (its environment, policy, queue, shares and workload) into
    /// the home region. Off (`quotatop emulator --empty`): the account starts empty, for clients
    /// that build their own with the setup operations; the scenario still gives the delays and
    /// seed of the queues they create.
    pub preload: bool,
    /// The account id in every ARN and in STS answers.
    pub account: String,
    /// Refuse requests without a SigV4-shaped signature for the right service, as AWS does
    /// (403 `MissingAuthenticationToken` and the like; the secret is not checked). Off
    /// (`quotatop emulator --no-auth-check`): unsigned requests are served by the home region.
    pub auth_check: bool,
    /// Job ids, training-job names and request ids the same on every run with the same seed
    /// (for tests). Off by default: ids are unique across runs, so a journal kept across two
    /// emulator runs never conflates different jobs; the seeded schedule is the same either way.
    pub deterministic_ids: bool,
}

impl EmulatorConfig {
    /// The scenario's own speed and faults, any free port, region us-east-1.
    pub fn from_scenario(scenario: Scenario) -> Result<Self, EmulatorError> {
        let faults = match &scenario.faults {
            Some(spec) => FaultSpec::parse(spec)?,
            None => FaultSpec::none(),
        };
        Ok(Self {
            bind: IpAddr::V4(Ipv4Addr::LOCALHOST),
            allow_remote: false,
            port: 0,
            clock: ClockMode::Scaled(scenario.speed),
            faults,
            start_ms: None,
            region: "us-east-1".to_string(),
            tick: Duration::from_millis(100),
            limits: ServerLimits::default(),
            deterministic_ids: false,
            auth_check: true,
            preload: true,
            account: state::ACCOUNT.to_string(),
            scenario,
        })
    }
}

/// A running emulator.
pub struct EmulatorHandle {
    addr: SocketAddr,
    world: Arc<Mutex<Accounts>>,
    faults: Arc<FaultInjector>,
    shutdown: CancellationToken,
    server: Option<JoinHandle<()>>,
    ticker: Option<JoinHandle<()>>,
}

/// Starts the emulator on `config.bind` (127.0.0.1 by default) and returns once it accepts
/// connections. A non-loopback address is refused unless `config.allow_remote` is set.
pub async fn start(config: EmulatorConfig) -> Result<EmulatorHandle, EmulatorError> {
    if !config.bind.is_loopback() && !config.allow_remote {
        return Err(EmulatorError::RemoteBind(config.bind));
    }
    let addr = SocketAddr::new(config.bind, config.port);
    let start_ms = config
        .start_ms
        .unwrap_or_else(|| config.clock.default_start(quotatop_model::wall_clock_ms()));
    let clock = SimClock::new(config.clock, start_ms);
    // Ids come from their own stream, seeded afresh each run unless asked to be reproducible.
    let id_seed = (!config.deterministic_ids).then(fresh_seed);
    let world = Accounts::new(
        &config.scenario,
        config.preload,
        clock,
        start_ms,
        &config.region,
        &config.account,
        id_seed,
    )?;
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| EmulatorError::Bind { addr, source })?;
    let addr = listener
        .local_addr()
        .map_err(|source| EmulatorError::Bind { addr, source })?;
    let mut world = world;
    world.endpoint = format!("http://{addr}");
    world.delivery = config.faults.delivery();
    let world = Arc::new(Mutex::new(world));
    let faults = Arc::new(FaultInjector::new(config.faults));
    let shutdown = CancellationToken::new();
    let app = Arc::new(server::App::new(
        world.clone(),
        faults.clone(),
        config.limits.body_timeout,
        id_seed.unwrap_or(0),
        config.account.clone(),
        config.auth_check,
    ));
    let server = tokio::spawn(server::serve(
        listener,
        server::router(app),
        config.limits,
        shutdown.clone(),
    ));
    let ticker = match config.clock {
        ClockMode::Manual => None,
        ClockMode::Scaled(_) => Some(tokio::spawn(tick(
            world.clone(),
            config.tick,
            shutdown.clone(),
        ))),
    };
    Ok(EmulatorHandle {
        addr,
        world,
        faults,
        shutdown,
        server: Some(server),
        ticker,
    })
}

/// A seed no other run shares (from the operating system's random source).
fn fresh_seed() -> u64 {
    uuid::Uuid::new_v4().as_u64_pair().0
}

/// Advances the engine to the clock every `every` until shutdown.
async fn tick(world: Arc<Mutex<Accounts>>, every: Duration, shutdown: CancellationToken) {
    let mut interval = tokio::time::interval(every);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = interval.tick() => {
                let Ok(mut w) = world.lock() else { return };
                // An engine refusal here would be a clock bug; the next request reports it.
                let _ = w.catch_up();
            }
            _ = shutdown.cancelled() => return,
        }
    }
}

impl EmulatorHandle {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:<port>`: what `AWS_ENDPOINT_URL` must be.
    pub fn endpoint_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn world(&self) -> Result<std::sync::MutexGuard<'_, Accounts>, EmulatorError> {
        self.world.lock().map_err(|_| EmulatorError::Poisoned)
    }

    /// The simulated time, with every region's engines brought up to it.
    pub fn now(&self) -> Result<Millis, EmulatorError> {
        let mut w = self.world()?;
        let now = w.clock.now();
        w.catch_up()?;
        Ok(now)
    }

    /// Moves simulated time forward by `ms` and runs the engines (and workloads) up to it. With
    /// [`ClockMode::Manual`] this is the only way time moves: deterministic tests.
    pub fn advance(&self, ms: Millis) -> Result<Millis, EmulatorError> {
        let mut w = self.world()?;
        w.clock.advance(ms);
        let now = w.clock.now();
        w.catch_up()?;
        Ok(now)
    }

    /// Warnings for the emulator's log since the last call, oldest first.
    pub fn take_warnings(&self) -> Result<Vec<String>, EmulatorError> {
        Ok(self
            .world()?
            .queues_mut()
            .flat_map(|q| q.warnings.drain(..))
            .collect())
    }

    // What follows is for the integration tests and benches only (`tests/it`, `tests/postgres`,
    // `tests/soak`, `benches/`: other crates, so it is public and not `#[cfg(test)]`): each
    // reads or sets state the handle keeps private, so it cannot live in their support modules.
    // The program uses none of it.

    /// Read-only access to the home region's first queue's engine (the scenario's): tests read
    /// the emulator's jobs through it.
    pub fn with_engine<R>(&self, f: impl FnOnce(&Engine) -> R) -> Result<R, EmulatorError> {
        let w = self.world()?;
        let q = w.home_queue().ok_or(EmulatorError::NoQueue)?;
        Ok(f(&q.engine))
    }

    /// The most recent engine events of that queue (at most 10 000), oldest first: tests score
    /// or check the schedule the emulator ran from them.
    pub fn recent_events(&self) -> Result<VecDeque<Event>, EmulatorError> {
        let w = self.world()?;
        let q = w.home_queue().ok_or(EmulatorError::NoQueue)?;
        Ok(q.recent_events.clone())
    }

    /// The counts of injected faults so far: tests check that faults fired.
    pub fn fault_stats(&self) -> FaultStats {
        self.faults.stats()
    }

    /// Calls of `op` (lower-case API name) refused by its rate limit: `benches/cold_start.rs`
    /// reports the list operation's.
    pub fn rate_limited(&self, op: &str) -> u64 {
        self.faults.rate_limited(op)
    }

    /// Replaces the fault spec while running (e.g. faults on, then off to check recovery).
    pub fn set_faults(&self, spec: FaultSpec) {
        if let Ok(mut w) = self.world.lock() {
            w.delivery = spec.delivery();
        }
        self.faults.set_spec(spec);
    }

    /// What happened to EventBridge's deliveries so far (every region): tests check that the
    /// delivery faults fired.
    pub fn delivery_stats(&self) -> Result<DeliveryStats, EmulatorError> {
        Ok(self.world()?.delivery_stats())
    }

    /// Requests received for an operation (lowercase name as in the URL path, e.g.
    /// `describeservicejob`), faulted or not: tests count the calls a client made.
    pub fn calls(&self, op: &str) -> u64 {
        self.faults.calls(op)
    }

    /// Stops accepting, lets open requests finish (at most 5 s), and stops the clock.
    pub async fn shutdown(mut self) -> Result<(), EmulatorError> {
        self.shutdown.cancel();
        for task in [self.server.take(), self.ticker.take()]
            .into_iter()
            .flatten()
        {
            task.await.map_err(|e| EmulatorError::Join(e.to_string()))?;
        }
        Ok(())
    }
}

impl Drop for EmulatorHandle {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}
