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

/// A reader whose answer changes with each computation of a queue (the journal grows between
/// them): the n-th computation says `n` jobs are outside delivery's range.
struct Growing(std::sync::Mutex<std::collections::HashMap<String, usize>>);

impl quotatop_tui::policy::PolicyReader for Growing {
    fn conformance(
        &self,
        queue: &str,
    ) -> Result<quotatop_tui::policy::PolicyView, quotatop_tui::policy::PolicyViewError> {
        let n = {
            let mut m = self.0.lock().unwrap();
            let n = m.entry(queue.to_string()).or_default();
            *n += 1;
            *n
        };
        Ok(quotatop_tui::policy::PolicyView {
            window: "24h".into(),
            heading: format!("Policy test (sha256 0), computation {n}"),
            classes: vec![quotatop_tui::policy::PolicyClass {
                name: "delivery".into(),
                jobs: 5,
                breaches: n,
                lines: vec![format!(
                    "range: 5 job(s) — breached: {n} job(s) outside 0-99"
                )],
            }],
            unclassified: vec![],
            items: vec![quotatop_tui::policy::PolicyItem {
                text: format!("delivery: {n} job(s) outside its range"),
                job: None,
                share: Some("research".into()),
            }],
        })
    }
}

/// The attention panel and the Policy screen say the same thing once the screen has loaded:
/// the panel's items were computed at the first snapshot (1 job), the screen computes again
/// (2 jobs), and the panel takes the screen's answer.
#[tokio::test]
async fn the_attention_panel_agrees_with_the_policy_screen_once_it_loads() {
    use crate::tui_support::{Step, drive_serving, options, screen_text, snapshot};
    let reader: std::sync::Arc<dyn quotatop_tui::policy::PolicyReader> =
        std::sync::Arc::new(Growing(Default::default()));
    let screens = quotatop_tui::registry::Screens::builtin().serving(reader);
    let (t, app) = drive_serving(
        160,
        40,
        options(),
        screens,
        Default::default(),
        snapshot(),
        vec![Step::Keys(":policy\n")],
    )
    .await;
    assert_eq!(app.screen_kind(), quotatop_tui::screen::Kind::Policy);
    let screen = screen_text(&t);
    assert!(
        screen.contains("breached: 2 job(s) outside 0-99"),
        "{screen}"
    );
    // The title says the window judged.
    assert!(screen.contains(" · last 24h"), "{screen}");
    let data = app.live_data();
    let (i, q) = data
        .queues()
        .iter()
        .enumerate()
        .find(|(_, q)| screen.contains(&format!("Policy · {}", q.key())))
        .expect("the screen names its queue");
    let panel: Vec<&str> = data.views[i]
        .attention
        .iter()
        .filter(|a| a.kind == quotatop_analysis::AttentionKind::PolicyBreach)
        .map(|a| a.text.as_str())
        .collect();
    assert_eq!(
        panel,
        vec!["delivery: 2 job(s) outside its range"],
        "the panel of {} disagrees with the screen:\n{screen}",
        q.key()
    );
}
