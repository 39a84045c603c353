//! The emulator of the soak runs in a child process (this test binary run again with
//! `SOAK_CHILD_ENV` set), so the driver's memory and CPU figures are the console's alone: the
//! engine keeps every job it ever ran, which is the emulator's growth, not the poller's.
//!
//! Protocol: one command per line on the child's stdin, one answer line on its stdout, each
//! answer prefixed with [`MARK`] (the test harness may print on the same stream):
//! `advance MS` → `ok NOW` · `faults SPEC` (empty = none) → `ok` · `truth` → a [`Truth`] as JSON
//! · `quit` → `bye`. The first line the child prints is `endpoint URL`.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};

use quotatop_emulator::{
    self as emulator, ClockMode, EmulatorConfig, EmulatorHandle, FaultSpec, Scenario,
};
use serde::{Deserialize, Serialize};

pub const SOAK_CHILD_ENV: &str = "QUOTATOP_SOAK_EMULATOR_CHILD";
pub const SCENARIO: &str = "scenarios/soak.toml";
const MARK: &str = "SOAK> ";

/// An active job as the engine has it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrueJob {
    pub id: String,
    pub name: String,
    pub share: String,
    pub status: String,
    pub priority: u32,
    pub preemptions: u32,
}

/// The engine's state at one instant.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Truth {
    pub now: i64,
    /// Jobs submitted so far (all statuses).
    pub jobs_total: usize,
    pub active: Vec<TrueJob>,
    /// Dispatch order of the RUNNABLE jobs (ids).
    pub order: Vec<String>,
    /// (share, instance type) → (limit, used, borrowed).
    pub usage: Vec<(String, String, u32, u32, u32)>,
    pub throttled: u64,
    pub server_errors: u64,
    pub dropped: u64,
    pub delayed: u64,
}

fn truth(h: &EmulatorHandle) -> Result<Truth, String> {
    let stats = h.fault_stats();
    h.with_engine(|e| {
        let mut jobs_total = 0;
        let mut active = Vec::new();
        for j in e.jobs() {
            jobs_total += 1;
            if !j.status.is_terminal() {
                active.push(TrueJob {
                    preemptions: j.preemption_count(),
                    id: j.id,
                    name: j.name,
                    share: j.share,
                    status: j.status.as_str().to_string(),
                    priority: j.priority,
                });
            }
        }
        let order = e
            .queue_order()
            .into_iter()
            .filter_map(|id| e.job_uuid(id).map(str::to_string))
            .collect();
        let usage = e
            .usage()
            .into_iter()
            .flat_map(|s| {
                let name = s.share.name.clone();
                s.usage
                    .into_iter()
                    .map(move |u| (name.clone(), u.instance_type, u.limit, u.used, u.borrowed))
            })
            .collect();
        Truth {
            now: e.now(),
            jobs_total,
            active,
            order,
            usage,
            throttled: stats.throttled,
            server_errors: stats.server_errors,
            dropped: stats.dropped,
            delayed: stats.delayed,
        }
    })
    .map_err(|e| e.to_string())
}

/// The child's side: serve the soak scenario on a manual clock and obey stdin.
pub fn serve_child() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let scenario = Scenario::load(SCENARIO.as_ref()).unwrap();
        let mut config = EmulatorConfig::from_scenario(scenario).unwrap();
        config.clock = ClockMode::Manual;
        config.start_ms = Some(1_770_000_000_000);
        let h = emulator::start(config).await.unwrap();
        let say = |line: String| {
            let mut out = std::io::stdout().lock();
            writeln!(out, "\n{MARK}{line}").unwrap();
            out.flush().unwrap();
        };
        say(format!("endpoint {}", h.endpoint_url()));
        let (tx, mut rx) = tokio::sync::mpsc::channel::<String>(1);
        std::thread::spawn(move || {
            for line in std::io::stdin().lock().lines() {
                let Ok(line) = line else { return };
                if tx.blocking_send(line).is_err() {
                    return;
                }
            }
        });
        while let Some(line) = rx.recv().await {
            let (cmd, arg) = line.split_once(' ').unwrap_or((line.as_str(), ""));
            match cmd {
                "advance" => {
                    let now = h.advance(arg.parse().unwrap()).unwrap();
                    say(format!("ok {now}"));
                }
                "faults" => {
                    let spec = if arg.is_empty() {
                        FaultSpec::none()
                    } else {
                        FaultSpec::parse(arg).unwrap()
                    };
                    h.set_faults(spec);
                    say("ok".into());
                }
                "truth" => say(serde_json::to_string(&truth(&h).unwrap()).unwrap()),
                "quit" => break,
                other => panic!("unknown command {other:?}"),
            }
        }
        h.shutdown().await.unwrap();
        say("bye".into());
    });
}

struct Io {
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Io {
    fn answer(&mut self) -> String {
        loop {
            let mut line = String::new();
            let n = self.stdout.read_line(&mut line).unwrap();
            assert!(n > 0, "the emulator child exited");
            if let Some(i) = line.find(MARK) {
                return line[i + MARK.len()..].trim_end().to_string();
            }
        }
    }
}

/// The driver's side: the child process and a line-at-a-time channel to it.
#[derive(Clone)]
pub struct EmulatorChild {
    io: Arc<Mutex<Io>>,
    child: Arc<Mutex<Child>>,
    pub pid: String,
    pub endpoint: String,
}

impl EmulatorChild {
    /// Starts this test binary again, running only `child_test` with [`SOAK_CHILD_ENV`] set.
    pub fn spawn(child_test: &str) -> Self {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([child_test, "--exact", "--ignored", "--nocapture"])
            .arg("--test-threads=1")
            .env(SOAK_CHILD_ENV, "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut io = Io {
            stdin: child.stdin.take().unwrap(),
            stdout: BufReader::new(child.stdout.take().unwrap()),
        };
        let first = io.answer();
        let endpoint = first.strip_prefix("endpoint ").unwrap().to_string();
        Self {
            pid: child.id().to_string(),
            io: Arc::new(Mutex::new(io)),
            child: Arc::new(Mutex::new(child)),
            endpoint,
        }
    }

    /// Sends one command and waits for its answer (off the async workers).
    pub async fn call(&self, line: String) -> String {
        let io = self.io.clone();
        tokio::task::spawn_blocking(move || {
            let mut io = io.lock().unwrap();
            writeln!(io.stdin, "{line}").unwrap();
            io.stdin.flush().unwrap();
            io.answer()
        })
        .await
        .unwrap()
    }

    pub async fn advance(&self, ms: i64) {
        let a = self.call(format!("advance {ms}")).await;
        assert!(a.starts_with("ok"), "{a}");
    }

    pub async fn set_faults(&self, spec: &str) {
        assert_eq!(self.call(format!("faults {spec}")).await, "ok");
    }

    pub async fn truth(&self) -> Truth {
        serde_json::from_str(&self.call("truth".into()).await).unwrap()
    }

    /// Stops the child and waits for it.
    pub async fn quit(self) {
        assert_eq!(self.call("quit".into()).await, "bye");
        let child = self.child.clone();
        tokio::task::spawn_blocking(move || child.lock().unwrap().wait().unwrap())
            .await
            .unwrap();
    }
}
