//! The Share screen shows the last audited change of the share's configuration (`quotatop
//! shares apply`), read from the audit log by the console's service.

use std::sync::Arc;

use crate::tui_support::*;
use quotatop::services::share_changes::AuditShareChanges;
use quotatop_actions::ApiFailure;
use quotatop_actions::{SharesApi, SharesContext, apply_plan};
use quotatop_analysis::shares_plan::{Step, plan};
use quotatop_model::{CapacityLimit, QuotaShare, SharingConfig};
use quotatop_store::audit::{AuditLog, AwsContext, Operator};
use quotatop_tui::effects::{Services, ShareChangeReader};
use quotatop_tui::registry::Screens;
use quotatop_tui::screen::Kind;

/// The console's screens, the Share screen's work reading `reader` (as the console serves it).
fn serving(reader: AuditShareChanges) -> Screens {
    Screens::builtin().serving(Arc::new(reader) as Arc<dyn ShareChangeReader>)
}

struct Ok_;

impl SharesApi for Ok_ {
    async fn run_step(&self, _step: &Step) -> Result<Option<String>, ApiFailure> {
        Ok(Some("req-1".into()))
    }

    /// Each share as the plan found it (the check just before each call passes).
    async fn read_share(&self, name: &str) -> Result<Option<QuotaShare>, ApiFailure> {
        Ok(Some(share(name, 200)))
    }
}

fn share(name: &str, borrow: i32) -> QuotaShare {
    QuotaShare::new(
        name,
        vec![CapacityLimit::new("ml.p4d.24xlarge", 4)],
        SharingConfig::lend_and_borrow(borrow),
    )
}

async fn audited(log: &std::path::Path, share_name: &str, record: &str) {
    let ctx = SharesContext {
        change: quotatop_actions::ChangeContext {
            operator: Operator {
                user: "ops".into(),
                host: "desk".into(),
                ..Default::default()
            },
            aws: AwsContext::default(),
            queue: "ml-training".into(),
            justification: "rebalance".into(),
            change_record: Some(record.into()),
            read_only: false,
            policy: None,
            class_policy: None,
            batch: None,
        },
        run_id: "run".into(),
    };
    let steps = plan(&[share(share_name, 200)], &[share(share_name, 100)]);
    let r = apply_plan(&Ok_, &AuditLog::new(log).into(), &ctx, &steps)
        .await
        .unwrap();
    assert!(r.complete());
}

#[tokio::test]
async fn the_share_screen_shows_its_last_audited_change() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.jsonl");
    audited(&log, "research", "CHG-9").await;
    // A later change of another share is not research's.
    audited(&log, "prod", "CHG-10").await;
    let screens = || serving(AuditShareChanges { path: log.clone() });
    let (t, app) = run_serving(
        120,
        30,
        options(),
        screens(),
        snapshot(),
        typed("j\n"),
        Services::default(),
    )
    .await;
    assert_eq!(app.screen_kind(), Kind::Share);
    let text = screen_text(&t);
    assert!(
        text.contains("last change ")
            && text.contains(
                "ops@desk UpdateQuotaShare borrowLimit: 200% -> 100% · succeeded · CHG-9"
            ),
        "{text}"
    );
    assert!(!text.contains("CHG-10"), "{text}");
    // Issue 29 §2.15: and why, also at 80 columns (on a line of its own).
    assert!(text.contains("why       rebalance"), "{text}");
    let (t, _) = run_serving(
        80,
        30,
        options(),
        screens(),
        snapshot(),
        typed("j\n"),
        Services::default(),
    )
    .await;
    let text = screen_text(&t);
    assert!(text.contains("last change "), "{text}");
    assert!(text.contains("why       rebalance"), "{text}");

    // No change audited: said; no audit log service: no line at all.
    let empty = dir.path().join("none.jsonl");
    let none = serving(AuditShareChanges { path: empty });
    let (t, _) = run_serving(
        120,
        30,
        options(),
        none,
        snapshot(),
        typed("j\n"),
        Services::default(),
    )
    .await;
    assert!(
        screen_text(&t).contains("last change none audited"),
        "{}",
        screen_text(&t)
    );
    let (t, _) = run_services(
        120,
        30,
        options(),
        snapshot(),
        typed("j\n"),
        Services::default(),
    )
    .await;
    assert!(!screen_text(&t).contains("last change"));
}
