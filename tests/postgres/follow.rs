//! One poller, many consoles: a `record --store` against the emulator holding 10,000 jobs, and
//! consoles following the store through `journal::follow` (what `tui --store` runs on its
//! follower thread). The AWS calls are counted at the emulator with one follower and with
//! five: the same, since only the recorder polls. The delay from the recorder's write to a
//! follower's decoded snapshot is measured per snapshot (P50/P95 printed).

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use quotatop_emulator::{ClockMode, EmulatorConfig, OPERATIONS};
use quotatop_store::journal::{FollowState, Followed, JournalHandle, follow};
use quotatop_store::pg::StoreUrl;

use crate::Test;
use crate::cluster::Cluster;

pub fn tests() -> Vec<Test> {
    vec![
        (
            "follow::five_consoles_on_one_recorder_cost_the_api_calls_of_one".into(),
            Box::new(five_consoles_on_one_recorder_cost_the_api_calls_of_one),
        ),
        (
            "follow::five_consoles_get_each_snapshot_within_a_second".into(),
            Box::new(five_consoles_get_each_snapshot_within_a_second),
        ),
        (
            "follow::tui_store_shows_the_recorder_s_snapshots_without_polling".into(),
            Box::new(tui_store_shows_the_recorder_s_snapshots_without_polling),
        ),
        (
            "follow::a_reader_role_follows_and_a_wrong_password_stops_tui_store".into(),
            Box::new(a_reader_role_follows_and_a_wrong_password_stops_tui_store),
        ),
        (
            "follow::a_follower_survives_the_store_going_away".into(),
            Box::new(a_follower_survives_the_store_going_away),
        ),
    ]
}

const JOBS: u64 = 10_000;
const QUEUE: &str = "soak-training";

/// What one follower saw.
#[derive(Default)]
struct Seen {
    /// Recorder write → decoded here, per live snapshot (ms).
    delays: Vec<i64>,
    /// Recorder write → its row read here, before decoding (ms).
    fetch_delays: Vec<i64>,
    /// The recorder's snapshot taken → decoded here (ms): its age when a console gets it.
    ages: Vec<i64>,
    /// `taken_at` of every snapshot received, in order.
    taken: Vec<i64>,
    complete: bool,
    jobs: usize,
}

/// A follower thread on `url` recording into the returned cell.
fn follower(url: &StoreUrl) -> (Arc<FollowState>, Arc<Mutex<Seen>>) {
    let state = FollowState::new();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let (st, sn, url) = (state.clone(), seen.clone(), url.clone());
    std::thread::spawn(move || {
        follow(&url, &st, &mut |f: Followed| {
            let now = quotatop_model::wall_clock_ms();
            let mut s = sn.lock().unwrap();
            if let Some(w) = f.written_at {
                s.delays.push(now - w);
                s.fetch_delays.push(f.fetched_at - w);
                s.ages.push(now - f.snapshot.taken_at);
            }
            s.taken.push(f.snapshot.taken_at);
            s.complete = f.snapshot.is_complete();
            s.jobs = f.snapshot.queues.iter().map(|q| q.jobs.len()).sum();
            true
        });
    });
    (state, seen)
}

fn percentile(sorted: &[i64], p: f64) -> i64 {
    if sorted.is_empty() {
        return -1;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

/// The emulator's calls so far, every operation.
fn calls(h: &quotatop_emulator::EmulatorHandle) -> u64 {
    OPERATIONS.iter().map(|op| h.calls(op)).sum()
}

/// The calls the recorder made during a window (counted at the emulator) and its refreshes
/// meanwhile (the live snapshot's sequence number, one per refresh).
struct Window {
    calls: u64,
    refreshes: usize,
    secs: f64,
}

fn window(
    h: &quotatop_emulator::EmulatorHandle,
    admin: &mut postgres::Client,
    secs: u64,
) -> Window {
    let sequence = |admin: &mut postgres::Client| -> i64 {
        admin
            .query_one("SELECT sequence FROM live_snapshot", &[])
            .unwrap()
            .get(0)
    };
    let start_calls = calls(h);
    let start_seq = sequence(admin);
    let started = Instant::now();
    std::thread::sleep(Duration::from_secs(secs));
    let calls = calls(h) - start_calls;
    let refreshes = sequence(admin) - start_seq;
    Window {
        calls,
        refreshes: refreshes as usize,
        secs: started.elapsed().as_secs_f64(),
    }
}

fn five_consoles_on_one_recorder_cost_the_api_calls_of_one(c: &Cluster) {
    let db = c.database("follow");
    let dir = tempfile::TempDir::new().unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let h = rt.block_on(async {
        let mut config =
            EmulatorConfig::from_scenario(crate::soak_world::world(JOBS)).expect("config");
        config.clock = ClockMode::Manual;
        let h = quotatop_emulator::start(config).await.expect("emulator");
        // Twenty simulated minutes: every job has arrived.
        for _ in 0..20 {
            h.advance(60_000).expect("advance");
        }
        h
    });
    let url = c.admin_url(&db);
    let (rec, _lines) = crate::record::recorder_of(
        &h.endpoint_url(),
        &url,
        dir.path(),
        &["--queue", QUEUE, "--interval", "5"],
    );
    let store = StoreUrl::parse(&url).unwrap();
    let first = follower(&store);
    // The recorder's first complete view: every job listed and described once.
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let s = first.1.lock().unwrap();
        if s.complete && s.jobs as u64 >= JOBS {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no complete view of {JOBS} jobs in the store after 600 s ({} jobs, complete {})",
            s.jobs,
            s.complete
        );
        drop(s);
        std::thread::sleep(Duration::from_millis(500));
    }
    let mut admin = c.admin(&db);
    let one = window(&h, &mut admin, 60);
    let mut all = vec![first];
    for _ in 0..4 {
        all.push(follower(&store));
    }
    std::thread::sleep(Duration::from_secs(3));
    let seen: Vec<_> = all.iter().map(|(_, s)| s.clone()).collect();
    let delays_from: Vec<usize> = seen
        .iter()
        .map(|s| s.lock().unwrap().delays.len())
        .collect();
    let five = window(&h, &mut admin, 60);
    let blob: i32 = admin
        .query_one("SELECT length(data) FROM live_snapshot", &[])
        .unwrap()
        .get(0);
    drop(rec);
    for (st, _) in &all {
        st.stop.store(true, Ordering::Relaxed);
    }
    let sorted = |pick: fn(&Seen) -> &Vec<i64>| {
        let mut v: Vec<i64> = seen
            .iter()
            .zip(&delays_from)
            .flat_map(|(s, &from)| pick(&s.lock().unwrap())[from..].to_vec())
            .collect();
        v.sort_unstable();
        v
    };
    let delays = sorted(|s| &s.delays);
    let fetch = sorted(|s| &s.fetch_delays);
    let ages = sorted(|s| &s.ages);
    let per = |w: &Window| w.calls as f64 / w.refreshes.max(1) as f64;
    println!(
        "  {JOBS} jobs: 1 follower {} calls in {:.0} s over {} refreshes ({:.0}/refresh); \
         5 followers {} calls in {:.0} s over {} refreshes ({:.0}/refresh); delay recorder → \
         follower over {} deliveries: row read P50 {} ms, P95 {} ms; decoded P50 {} ms, \
         P95 {} ms, max {} ms; snapshot age when decoded P50 {} ms, P95 {} ms; live snapshot \
         {blob} bytes (gzip)",
        one.calls,
        one.secs,
        one.refreshes,
        per(&one),
        five.calls,
        five.secs,
        five.refreshes,
        per(&five),
        delays.len(),
        percentile(&fetch, 0.5),
        percentile(&fetch, 0.95),
        percentile(&delays, 0.5),
        percentile(&delays, 0.95),
        delays.last().copied().unwrap_or(-1),
        percentile(&ages, 0.5),
        percentile(&ages, 0.95),
    );
    for (i, s) in seen.iter().enumerate() {
        let s = s.lock().unwrap();
        assert!(
            s.jobs as u64 >= JOBS && s.complete,
            "follower {i} has {} jobs",
            s.jobs
        );
    }
    // Every follower got snapshots in the five-follower window.
    assert!(five.refreshes >= 2, "only {} refreshes", five.refreshes);
    for (s, &from) in seen.iter().zip(&delays_from) {
        assert!(
            s.lock().unwrap().delays.len() > from,
            "a follower got nothing"
        );
    }
    // The calls follow the recorder's refreshes, not the consoles: five followers cost what
    // one did, per snapshot (within a quarter: refreshes differ in what changed).
    assert!(
        per(&five) <= per(&one) * 1.25 + 5.0,
        "5 followers: {:.0} calls per snapshot, 1 follower: {:.0}",
        per(&five),
        per(&one)
    );
    rt.block_on(async { h.shutdown().await.ok() });
}

/// A follower whose store goes away (its database's connections terminated) reports it, and
/// picks up again with the next snapshot once the store is back.
fn a_follower_survives_the_store_going_away(c: &Cluster) {
    let db = c.database("follow_gone");
    let url = StoreUrl::parse(&c.admin_url(&db)).unwrap();
    let location = quotatop_store::StoreLocation::Postgres(url.clone());
    let journal = JournalHandle::start_at(&location, Default::default());
    let snap = |t: i64| quotatop_model::Snapshot {
        taken_at: t,
        ..Default::default()
    };
    journal.record(snap(1_000));
    let (state, seen) = follower(&url);
    let wait_for = |n: usize, within: u64| {
        let deadline = Instant::now() + Duration::from_secs(within);
        while seen.lock().unwrap().taken.len() < n {
            assert!(
                Instant::now() < deadline,
                "follower stuck at {:?}",
                seen.lock().unwrap().taken
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    wait_for(1, 30);
    journal.record(snap(2_000));
    wait_for(2, 30);
    // Every other session of the database is ended: the follower's, the recorder's.
    c.admin("postgres")
        .execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
             WHERE datname = $1 AND pid <> pg_backend_pid()",
            &[&db],
        )
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while state.problem().is_none() {
        assert!(
            Instant::now() < deadline,
            "the lost connection was never reported"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let problem = state.problem().unwrap();
    assert!(problem.contains("trying again"), "{problem}");
    assert!(!problem.contains(&c.password), "{problem}");
    // The recorder's live write fails on its dead session and is made again on a new one.
    journal.record(snap(3_000));
    wait_for(3, 60);
    assert_eq!(seen.lock().unwrap().taken, [1_000, 2_000, 3_000]);
    assert!(state.problem().is_none());
    state.stop.store(true, Ordering::Relaxed);
    journal.shutdown();
}

/// The delay on its own, where neither the recorder nor the consoles are short of CPU: the
/// demo world (a few dozen jobs), a refresh a second, five followers for 20 s. Each gets every
/// snapshot within a second of its write.
fn five_consoles_get_each_snapshot_within_a_second(c: &Cluster) {
    let db = c.database("follow_small");
    let dir = tempfile::TempDir::new().unwrap();
    let (emulator, endpoint) = crate::emulator_support::spawn_emulator_binary(&["--speed", "60"]);
    let _emulator = crate::metrics_support::Kill(emulator);
    let url = c.admin_url(&db);
    let (rec, _lines) = crate::record::recorder(&endpoint, &url, dir.path(), &[]);
    let store = StoreUrl::parse(&url).unwrap();
    let all: Vec<_> = (0..5).map(|_| follower(&store)).collect();
    std::thread::sleep(Duration::from_secs(20));
    drop(rec);
    let mut delays = Vec::new();
    for (st, seen) in &all {
        st.stop.store(true, Ordering::Relaxed);
        let s = seen.lock().unwrap();
        assert!(
            s.delays.len() >= 5,
            "a follower got {} snapshots",
            s.delays.len()
        );
        // In order, none twice.
        assert!(s.taken.windows(2).all(|w| w[0] < w[1]), "{:?}", s.taken);
        delays.extend(s.delays.iter().copied());
    }
    delays.sort_unstable();
    println!(
        "  demo world, 5 followers, 20 s: {} deliveries, delay write → decoded P50 {} ms, \
         P95 {} ms, max {} ms",
        delays.len(),
        percentile(&delays, 0.5),
        percentile(&delays, 0.95),
        delays.last().copied().unwrap_or(-1)
    );
    assert!(
        percentile(&delays, 0.95) < 1_000,
        "P95 {} ms",
        percentile(&delays, 0.95)
    );
}

/// The real console in a pseudo-terminal (util-linux `script`), `tui --store` with the
/// password in the URL (QUOTATOP_STORE) and an AWS endpoint nothing listens on: it shows the
/// recorder's queue, names the store without the password and the snapshot's age, and is
/// healthy — it never called that endpoint.
fn tui_store_shows_the_recorder_s_snapshots_without_polling(c: &Cluster) {
    let db = c.database("follow_tui");
    let dir = tempfile::TempDir::new().unwrap();
    let home = tempfile::TempDir::new().unwrap();
    let (emulator, endpoint) = crate::emulator_support::spawn_emulator_binary(&["--speed", "60"]);
    let _emulator = crate::metrics_support::Kill(emulator);
    let url = c.admin_url(&db);
    let (_rec, _lines) = crate::record::recorder(&endpoint, &url, dir.path(), &[]);
    crate::record::wait_for_count(
        c,
        &db,
        "SELECT COUNT(*) FROM live_snapshot",
        1,
        Duration::from_secs(60),
    );
    let bin = env!("CARGO_BIN_EXE_quotatop");
    let inner = format!(
        "sh -c 'stty cols 200 rows 40; timeout --foreground -s TERM 8 {bin} tui \
         --endpoint-url http://127.0.0.1:9 --queue ml-training; echo EXIT=$?'"
    );
    let out = std::process::Command::new("timeout")
        .args(["60", "script", "-qfec", &inner, "/dev/null"])
        .env("QUOTATOP_STORE", &url)
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .env("XDG_DATA_HOME", home.path().join("data"))
        .env("XDG_STATE_HOME", home.path().join("state"))
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_REGION", "us-east-1")
        .output()
        .expect("script runs");
    let screen = String::from_utf8_lossy(&out.stdout);
    let shown = format!("postgresql://postgres@127.0.0.1:{}/{db}", c.port);
    assert!(screen.contains("EXIT=124"), "{screen}");
    assert!(screen.contains(&shown), "the store is not named: {screen}");
    assert!(screen.contains("snapshot"), "{screen}");
    assert!(screen.contains("healthy"), "{screen}");
    assert!(
        screen.contains("research"),
        "no share of the recorder's queue: {screen}"
    );
    assert!(
        !screen.contains(&c.password),
        "the password reached the terminal"
    );
    assert!(!screen.contains("unreachable"), "{screen}");
}

/// A role with SELECT only follows the store; `tui --store` with a wrong password exits
/// non-zero before taking the terminal, with the server's reason and the URL without it.
fn a_reader_role_follows_and_a_wrong_password_stops_tui_store(c: &Cluster) {
    let db = c.database("follow_reader");
    let owner = StoreUrl::parse(&c.admin_url(&db)).unwrap();
    let journal = JournalHandle::start_at(
        &quotatop_store::StoreLocation::Postgres(owner),
        Default::default(),
    );
    journal.record(quotatop_model::Snapshot {
        taken_at: 5_000,
        ..Default::default()
    });
    journal.flush();
    let mut admin = c.admin(&db);
    admin
        .batch_execute(&format!(
            "CREATE ROLE follow_reader LOGIN PASSWORD 'reader-pw-9';
             GRANT CONNECT ON DATABASE {db} TO follow_reader;
             GRANT USAGE ON SCHEMA public TO follow_reader;
             GRANT SELECT ON ALL TABLES IN SCHEMA public TO follow_reader;"
        ))
        .unwrap();
    let reader = StoreUrl::parse(&format!(
        "postgresql://follow_reader:reader-pw-9@127.0.0.1:{}/{db}",
        c.port
    ))
    .unwrap();
    let (state, seen) = follower(&reader);
    let deadline = Instant::now() + Duration::from_secs(30);
    while seen.lock().unwrap().taken != [5_000] {
        assert!(Instant::now() < deadline, "{:?}", state.problem());
        std::thread::sleep(Duration::from_millis(50));
    }
    state.stop.store(true, Ordering::Relaxed);
    journal.shutdown();

    let wrong = format!(
        "postgresql://follow_reader:not-the-pw-77@127.0.0.1:{}/{db}",
        c.port
    );
    // In a pseudo-terminal: without one the console refuses before looking at the store.
    let inner = format!(
        "sh -c '{} tui --endpoint-url http://127.0.0.1:9; echo EXIT=$?'",
        env!("CARGO_BIN_EXE_quotatop")
    );
    let home = tempfile::TempDir::new().unwrap();
    let out = std::process::Command::new("timeout")
        .args(["60", "script", "-qfec", &inner, "/dev/null"])
        .env("QUOTATOP_STORE", &wrong)
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .env("XDG_STATE_HOME", home.path().join("state"))
        .env("XDG_DATA_HOME", home.path().join("data"))
        .env("AWS_REGION", "us-east-1")
        .output()
        .unwrap();
    let screen = String::from_utf8_lossy(&out.stdout);
    assert!(screen.contains("EXIT=1"), "{screen}");
    assert!(
        screen.contains(&format!(
            "cannot follow the store postgresql://follow_reader@127.0.0.1:{}/{db}",
            c.port
        )),
        "{screen}"
    );
    assert!(
        screen.contains("password authentication failed"),
        "{screen}"
    );
    assert!(!screen.contains("not-the-pw-77"), "{screen}");
    // The terminal was never taken over.
    assert!(!screen.contains("\u{1b}[?1049h"), "{screen}");
}
