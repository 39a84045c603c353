//! Bounded fuzzing (proptest) of everything that reads untrusted input: the emulator's request
//! handling over real HTTP, scenario and replay-config TOML, both trace formats, and the audit
//! log reader. The property everywhere: no panic, and each input is accepted or refused with an
//! error that names where the input is wrong (the file name the parser was given and/or a line,
//! or the scenario key at fault); the emulator answers with a Batch status and keeps serving.
//! Runs in CI; raise PROPTEST_CASES for a longer run.

use std::time::Duration;

use crate::emulator_support::SIGNED;
use proptest::prelude::*;
use quotatop_emulator::Scenario;
use quotatop_replay::{ReplayConfig, philly, trace_csv};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The operations served at `POST /v1/<op>` (the tag operations live under `/v1/tags/`).
fn ops() -> Vec<&'static str> {
    quotatop_emulator::OPERATIONS
        .iter()
        .copied()
        .filter(|op| !op.contains("tag"))
        .collect()
}

/// Valid-looking request bodies to mutate.
const SEEDS: [&str; 5] = [
    r#"{"jobQueue":"qm-queue","jobStatus":"RUNNING","filters":[{"name":"QUOTA_SHARE_NAME","values":["a"]}],"maxResults":5}"#,
    r#"{"quotaShareName":"a","jobQueue":"qm-queue","capacityLimits":[{"capacityUnit":"ml.m5.large","maxCapacity":2}],"resourceSharingConfiguration":{"strategy":"LEND_AND_BORROW","borrowLimit":100},"preemptionConfiguration":{"inSharePreemption":"ENABLED"}}"#,
    r#"{"jobName":"j","jobQueue":"qm-queue","serviceJobType":"SAGEMAKER_TRAINING","quotaShareName":"a","schedulingPriority":5,"serviceRequestPayload":"{\"ResourceConfig\":{\"InstanceType\":\"ml.m5.large\",\"InstanceCount\":1}}"}"#,
    r#"{"jobId":"00000000-0000-4000-8000-000000000000","schedulingPriority":10}"#,
    r#"{"jobQueues":["qm-queue"],"maxResults":1,"nextToken":"abc"}"#,
];

fn mutate(seed: &str, cut: usize, insert: &str) -> String {
    let mut s: Vec<char> = seed.chars().collect();
    let at = cut % (s.len() + 1);
    s.splice(at..at, insert.chars());
    s.into_iter().collect()
}

async fn raw(addr: std::net::SocketAddr, path: &str, body: &[u8]) -> Option<u16> {
    let mut s = TcpStream::connect(addr).await.ok()?;
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\n{SIGNED}Content-Length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).await.ok()?;
    s.write_all(body).await.ok()?;
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut out))
        .await
        .expect("the emulator answers instead of hanging")
        .ok()?;
    let text = String::from_utf8_lossy(&out);
    text.split(' ').nth(1)?.parse().ok()
}

/// Accepted, or refused with an error naming the input's location: one of `places` (a file
/// name, "line ", a key) must be in the message.
fn accepted_or_located<T, E: std::fmt::Display>(
    what: &str,
    r: Result<T, E>,
    places: &[&str],
) -> Result<(), TestCaseError> {
    if let Err(e) = r {
        let m = e.to_string();
        prop_assert!(
            places.iter().any(|p| m.contains(p)),
            "{}: the error names no location ({:?}): {}",
            what,
            places,
            m
        );
        prop_assert!(!m.trim().is_empty(), "{}: empty error", what);
    }
    Ok(())
}

/// Where a scenario error can be: a TOML position, or the key (or the share, generator or job
/// holding it) that is wrong.
const SCENARIO_PLACES: &[&str] = &[
    "line ",
    "share ",
    "job ",
    "speed",
    "seed",
    "capacity",
    "queue",
    "delays",
    "faults",
    "generator",
    "priorit",
];

proptest! {
    // 48 cases unless PROPTEST_CASES says otherwise (a literal `cases` would override it).
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(48),
        ..ProptestConfig::default()
    })]

    #[test]
    fn emulator_answers_any_body_and_keeps_serving(
        op in 0usize..16,
        seed in 0usize..SEEDS.len(),
        cut in 0usize..400,
        insert in "[\\PC]{0,12}",
        junk in prop::collection::vec(any::<u8>(), 0..64),
        use_junk in any::<bool>(),
    ) {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        rt.block_on(async {
            let handle = crate::emulator_support::start(&[(crate::emulator_support::M5, 4)], "").await;
            let addr = handle.addr();
            let body = if use_junk { junk.clone() } else { mutate(SEEDS[seed], cut, &insert).into_bytes() };
            let ops = ops();
            let status = raw(addr, &format!("/v1/{}", ops[op % ops.len()]), &body).await;
            // No faults are injected, so a missing answer would mean the handler died.
            let Some(s) = status else {
                return Err(TestCaseError::fail("no answer: the connection was dropped"));
            };
            prop_assert!([200, 400, 404, 413].contains(&s), "status {s}");
            // Still serving a well-formed request.
            let ok = raw(addr, "/v1/describejobqueues", b"{}").await;
            prop_assert_eq!(ok, Some(200));
            handle.shutdown().await.ok();
            Ok(())
        })?;
    }

    #[test]
    fn scenario_and_replay_config_parsers_never_panic(text in "[\\PC\n]{0,300}", cut in 0usize..2000, insert in "[\\PC\n]{0,20}") {
        let demo = include_str!("../../scenarios/demo.toml");
        let mutated = mutate(demo, cut, &insert);
        for input in [&text, &mutated] {
            accepted_or_located("scenario", Scenario::parse(input), SCENARIO_PLACES)?;
            accepted_or_located("replay config", ReplayConfig::parse(input, "fuzz.toml", "fuzz"), &["fuzz.toml"])?;
        }
    }

    #[test]
    fn trace_parsers_never_panic(text in "[0-9a-z_,.\\-\n ]{0,300}", cut in 0usize..300, insert in "[\\PC\n]{0,10}") {
        let good = "submit_s,share,instance_type,instance_count,work_s,priority,checkpoint_s,retries\n0,a,ml.m5.large,1,10,5,2,1\n";
        let philly_good = "app_id,submit_time,service,num_jobs,sleep_time,model_name,duration_s\n0,0.0,57.0,1,0.0,M,57\n";
        accepted_or_located("trace", trace_csv::parse(&text, "fuzz.csv"), &["fuzz.csv"])?;
        accepted_or_located("trace", trace_csv::parse(&mutate(good, cut, &insert), "fuzz.csv"), &["fuzz.csv"])?;
        accepted_or_located("philly", philly::parse_trace_text(&text, "vc", "fuzz.csv"), &["fuzz.csv"])?;
        accepted_or_located("philly", philly::parse_trace_text(&mutate(philly_good, cut, &insert), "vc", "fuzz.csv"), &["fuzz.csv"])?;
        accepted_or_located("nodes", philly::parse_nodes(&text, "nodes.csv"), &["nodes.csv"])?;
    }

    #[test]
    fn audit_reader_never_panics(lines in prop::collection::vec("[\\PC]{0,80}", 0..6)) {
        let dir = crate::temp_support::dir_path("fuzz-audit");
        let path = dir.join("audit.jsonl");
        std::fs::write(&path, lines.join("\n")).unwrap();
        let shown = path.display().to_string();
        accepted_or_located("audit read", quotatop_store::audit::read_records(&path), &[shown.as_str()])?;
        // verify names the 1-based line it stopped at.
        if let Err(e) = quotatop_store::audit::verify(&path) {
            prop_assert!(e.line >= 1 && e.line <= lines.len().max(1), "verify: line {} of {}: {}", e.line, lines.len(), e);
        }
    }
}
