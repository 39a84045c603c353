//! Bounded fuzzing (proptest) of everything that reads untrusted input: the emulator's request
//! handling over real HTTP, scenario and replay-config TOML, both trace formats, and the audit
//! log reader. The property everywhere: no panic, an answer or a clear error, and the emulator
//! keeps serving. Runs in CI; raise PROPTEST_CASES for a longer run.

use std::time::Duration;

use proptest::prelude::*;
use quotatop::emulator::Scenario;
use quotatop::replay::{ReplayConfig, philly, trace_csv};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The operations served at `POST /v1/<op>` (the tag operations live under `/v1/tags/`).
fn ops() -> Vec<&'static str> {
    quotatop::emulator::OPERATIONS
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
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
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

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

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
        let _ = Scenario::parse(&text);
        let _ = ReplayConfig::parse(&text, "fuzz.toml", "fuzz");
        let demo = include_str!("../../scenarios/demo.toml");
        let mutated = mutate(demo, cut, &insert);
        let _ = Scenario::parse(&mutated);
        let _ = ReplayConfig::parse(&mutated, "fuzz.toml", "fuzz");
    }

    #[test]
    fn trace_parsers_never_panic(text in "[0-9a-z_,.\\-\n ]{0,300}", cut in 0usize..300, insert in "[\\PC\n]{0,10}") {
        let _ = trace_csv::parse(&text, "fuzz.csv");
        let _ = philly::parse_trace_text(&text, "vc", "fuzz.csv");
        let _ = philly::parse_nodes(&text, "nodes.csv");
        let good = "submit_s,share,instance_type,instance_count,work_s,priority,checkpoint_s,retries\n0,a,ml.m5.large,1,10,5,2,1\n";
        let _ = trace_csv::parse(&mutate(good, cut, &insert), "fuzz.csv");
        let philly_good = "app_id,submit_time,service,num_jobs,sleep_time,model_name,duration_s\n0,0.0,57.0,1,0.0,M,57\n";
        let _ = philly::parse_trace_text(&mutate(philly_good, cut, &insert), "vc", "fuzz.csv");
    }

    #[test]
    fn audit_reader_never_panics(lines in prop::collection::vec("[\\PC]{0,80}", 0..6)) {
        let dir = std::env::temp_dir().join(format!("quotatop-fuzz-audit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("audit.jsonl");
        std::fs::write(&path, lines.join("\n")).unwrap();
        let _ = quotatop::audit::read_records(&path);
        let _ = quotatop::audit::verify(&path);
    }
}
