//! The class policy in the real console, in a real terminal (tmux): `quotatop tui` against the
//! emulator with `policy.toml` beside its config file. A priority change into a class the
//! operator may not use is refused with the rule and reaches neither the API nor the audit
//! log; a change into a class anyone may use is made, and its audit intent records the classes
//! before and after and the policy's hash.

use std::time::{Duration, Instant};

use crate::emulator_support::*;
use crate::tmux_support::Tmux;

const POLICY: &str = "version = 1\n\
    [[class]]\nname = \"sweep\"\npriority = [0, 9]\nshares = [\"research\"]\n\
    [[class]]\nname = \"paper\"\npriority = [10, 99]\nshares = [\"research\"]\noperators = [\"nobody\"]\n\
    [[class]]\nname = \"bulk\"\npriority = [100, 999]\nshares = [\"research\"]\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_and_an_allowed_change_in_the_console_in_tmux() {
    let h = start(&[(M5, 4)], "").await;
    let c = client(&h, 1);
    create_share(
        &c,
        "research",
        &[(M5, 4)],
        aws_sdk_batch::types::QuotaShareResourceSharingStrategy::Reserve,
        None,
        false,
    )
    .await;
    let id = submit(&c, "sweep-7", "research", M5, 1, 5).await;
    let dir = tempfile::tempdir().unwrap();
    let config_dir = dir.path().join("config");
    std::fs::create_dir_all(&config_dir).unwrap();
    std::fs::write(config_dir.join("config.toml"), "").unwrap();
    std::fs::write(config_dir.join("policy.toml"), POLICY).unwrap();
    let data = dir.path().join("data");
    let bin = env!("CARGO_BIN_EXE_quotatop");
    let command = format!(
        "env HOME={home} XDG_CONFIG_HOME={home}/xdg XDG_DATA_HOME={data} \
         AWS_ACCESS_KEY_ID=AKIDTEST AWS_SECRET_ACCESS_KEY=secret AWS_REGION=us-east-1 \
         {bin} tui --queue {QUEUE} --endpoint-url {url} --config {config} --refresh 1 \
         --journal {home}/j.sqlite3; sleep 30",
        home = dir.path().display(),
        data = data.display(),
        url = h.endpoint_url(),
        config = config_dir.join("config.toml").display(),
    );
    let tmux = Tmux::start(dir.path(), 200, 50, &command);
    let log = data.join("quotatop").join("audit.jsonl");
    let d = tokio::task::spawn_blocking(move || {
        tmux.wait_for("research");
        // Into paper (10-99), which only `nobody` may use: refused with the rule.
        tmux.keys(&[":job sweep-7", "Enter", "p"]);
        tmux.wait_for("sweep-7");
        tmux.keys(&["50", "Tab", "incident 4711 rerun now", "Enter", "Enter"]);
        let refused = tmux.wait_for("into class paper: the policy allows only nobody");
        let log_after_refusal = std::fs::read_to_string(&log).unwrap_or_default();
        // Into bulk (100-999), which anyone may use: made and audited.
        tmux.keys(&["Escape", "Escape", ":job sweep-7", "Enter", "p"]);
        tmux.keys(&[
            "500",
            "Tab",
            "backfill for the quarterly run",
            "Enter",
            "Enter",
        ]);
        let deadline = Instant::now() + Duration::from_secs(30);
        while quotatop_store::audit::read_records(&log)
            .map(|r| r.len() < 2)
            .unwrap_or(true)
        {
            assert!(
                Instant::now() < deadline,
                "no audited change:\n{}",
                tmux.screen()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        tmux.keys(&["Escape", "q"]);
        (refused, log_after_refusal, log)
    })
    .await
    .unwrap();
    let (refused, log_after_refusal, log) = d;
    assert!(
        refused.contains("refused by the policy") && refused.contains("may not move a job"),
        "{refused}"
    );
    assert!(
        log_after_refusal.is_empty(),
        "the refused change reached the audit log: {log_after_refusal}"
    );
    let records = quotatop_store::audit::read_records(&log).unwrap();
    let intent = &records[0].1;
    assert_eq!(intent.new_priority, 500, "{records:?}");
    let stamp = intent.class_policy.clone().expect("the class stamp");
    assert_eq!(stamp.hash, quotatop_policy::hash(POLICY));
    assert_eq!(
        (stamp.class_before.as_deref(), stamp.class_after.as_deref()),
        (Some("sweep"), Some("bulk"))
    );
    assert!(quotatop_store::audit::verify(&log).is_ok());
    // The API saw only the allowed change.
    let job = c.describe_service_job().job_id(&id).send().await.unwrap();
    assert_eq!(job.scheduling_priority(), Some(500));
    h.shutdown().await.unwrap();
}
