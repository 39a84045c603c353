//! `quotatop emulator` command-line definitions (clap) only; the work is in `commands/emulator.rs`.

#[derive(Debug, clap::Args)]
pub struct EmulatorArgs {
    /// Scenario file (TOML): queue, capacity, quota shares, workload generators, seed, speed
    /// [default: the built-in demo world, scenarios/demo.toml as shipped].
    #[arg(long)]
    pub scenario: Option<std::path::PathBuf>,
    /// Address to listen on. Only loopback addresses unless --allow-remote is given.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1")]
    pub bind: std::net::IpAddr,
    /// Permit a --bind address that is not loopback. The emulator checks no secret: anyone
    /// who can reach it can submit, change and terminate jobs.
    #[arg(long)]
    pub allow_remote: bool,
    /// Port (0 picks a free one).
    #[arg(long, default_value_t = 5566)]
    pub port: u16,
    /// Simulated seconds per real second [default: 1, real time, so timestamps agree with
    /// the client's clock]; more accelerates (the scenario's `speed` is the demo's: 60 for
    /// scenarios/demo.toml), 0 freezes the clock. See docs/emulator.md for what a fast clock
    /// breaks.
    #[arg(long)]
    pub speed: Option<f64>,
    /// Fault injection, e.g. "latency=20ms+30ms,throttle=5%;submitservicejob:error=0.1", or
    /// rate limits "rate=describeservicejob:10/s,burst=20" (default: the scenario's `faults`).
    /// See docs/emulator.md.
    #[arg(long)]
    pub faults: Option<String>,
    /// Connections served at once; more clients wait in the listen backlog.
    #[arg(long, value_name = "N", default_value_t = 128, value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub max_connections: u32,
    /// Seconds a client has to send a request's headers.
    #[arg(long, value_name = "SECONDS", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub header_timeout: u64,
    /// Seconds a client has to send a request's body once its headers arrived.
    #[arg(long, value_name = "SECONDS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub body_timeout: u64,
    /// Seconds a connection may sit idle (no request, no bytes) before it is closed.
    #[arg(long, value_name = "SECONDS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=86400))]
    pub idle_timeout: u64,
    /// The same job ids, training-job names and request ids on every run with the same seed
    /// (for tests). By default ids are new each run, so a journal kept across two runs never
    /// mixes up different jobs; the seeded schedule is the same either way.
    #[arg(long)]
    pub deterministic: bool,
    /// Start with an empty account (no environment, policy, queue or shares), for clients that
    /// create their own with the setup operations; the scenario still gives the delays and seed.
    #[arg(long)]
    pub empty: bool,
    /// The home region: the scenario's world lives there; requests signed for another region
    /// see that region's own (initially empty) world.
    #[arg(long, default_value = "us-east-1")]
    pub region: String,
    /// The account id in every ARN and in STS answers (12 digits).
    #[arg(long, default_value = "123456789012")]
    pub account: String,
    /// Serve requests without a SigV4 signature (for tools that send none). By default an
    /// unsigned request gets 403 MissingAuthenticationToken and one signed for another service
    /// is refused, as AWS does; the secret is never checked.
    #[arg(long)]
    pub no_auth_check: bool,
}
