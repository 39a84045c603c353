//! Quota-share operations as AWS documents them: capacity units checked by form, partial
//! updates keep what they do not name, and DeleteQuotaShare terminates the share's jobs.

use aws_sdk_batch::error::ProvideErrorMetadata as _;
use aws_sdk_batch::types::{
    QuotaShareCapacityLimit, QuotaShareInSharePreemptionState, QuotaSharePreemptionConfiguration,
    QuotaShareResourceSharingConfiguration as Sharing,
    QuotaShareResourceSharingStrategy as Strategy, QuotaShareState,
};

use crate::emulator_support::{G5, M5, QUEUE, SIGNED, client, create_share, start, submit};

async fn create_with_unit(c: &aws_sdk_batch::Client, unit: &str) -> Result<(), String> {
    c.create_quota_share()
        .quota_share_name("u")
        .job_queue(QUEUE)
        .capacity_limits(
            QuotaShareCapacityLimit::builder()
                .capacity_unit(unit)
                .max_capacity(1)
                .build(),
        )
        .resource_sharing_configuration(Sharing::builder().strategy(Strategy::Reserve).build())
        .preemption_configuration(
            QuotaSharePreemptionConfiguration::builder()
                .in_share_preemption(QuotaShareInSharePreemptionState::Disabled)
                .build(),
        )
        .send()
        .await
        .map(|_| ())
        .map_err(|e| {
            let e = e.into_service_error();
            format!(
                "{}: {}",
                e.code().unwrap_or("?"),
                e.message().unwrap_or("?")
            )
        })
}

#[tokio::test]
async fn capacity_units_are_checked_by_form_and_unknown_types_are_logged() {
    let emu = start(&[(M5, 4), ("ml.x9.huge", 2)], "").await;
    let c = client(&emu, 1);
    for bad in ["foo", "NUM_INSTANCES", "ml.p4d", "p4d.24xlarge"] {
        let err = create_with_unit(&c, bad).await.unwrap_err();
        assert!(
            err.starts_with(
                "ClientException: capacityUnit must be a SageMaker training instance type"
            ),
            "{bad}: {err}"
        );
    }
    assert!(emu.take_warnings().unwrap().is_empty());
    // Well formed but unknown to the GPU table: accepted (AWS adds types), and logged.
    create_with_unit(&c, "ml.x9.huge").await.unwrap();
    let warnings = emu.take_warnings().unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("ml.x9.huge is not in quotatop's GPU table"));
    assert!(emu.take_warnings().unwrap().is_empty());
}

#[tokio::test]
async fn a_strategy_update_without_a_borrow_limit_keeps_the_current_limit() {
    let emu = start(&[(M5, 4)], "").await;
    let c = client(&emu, 1);
    let arn = create_share(
        &c,
        "s",
        &[(M5, 2)],
        Strategy::LendAndBorrow,
        Some(150),
        false,
    )
    .await;
    c.update_quota_share()
        .quota_share_arn(&arn)
        .resource_sharing_configuration(
            Sharing::builder().strategy(Strategy::LendAndBorrow).build(),
        )
        .send()
        .await
        .unwrap();
    let d = c
        .describe_quota_share()
        .quota_share_arn(&arn)
        .send()
        .await
        .unwrap();
    let sharing = d.resource_sharing_configuration().unwrap();
    assert_eq!(sharing.borrow_limit(), Some(150));
    // Other fields not named are kept too.
    assert_eq!(d.capacity_limits().len(), 1);
    assert_eq!(d.capacity_limits()[0].max_capacity(), Some(2));
}

#[tokio::test]
async fn deleting_a_share_terminates_its_jobs() {
    let emu = start(&[(M5, 2), (G5, 1)], "").await;
    let c = client(&emu, 1);
    let arn = create_share(&c, "s", &[(M5, 1)], Strategy::Reserve, None, false).await;
    create_share(&c, "other", &[(G5, 1)], Strategy::Reserve, None, false).await;
    let running = submit(&c, "running", "s", M5, 1, 0).await;
    let waiting = submit(&c, "waiting", "s", M5, 1, 0).await;
    emu.advance(60_000).unwrap();
    c.update_quota_share()
        .quota_share_arn(&arn)
        .state(QuotaShareState::Disabled)
        .send()
        .await
        .unwrap();
    c.delete_quota_share()
        .quota_share_arn(&arn)
        .send()
        .await
        .unwrap();
    for id in [running, waiting] {
        let d = c.describe_service_job().job_id(&id).send().await.unwrap();
        assert_eq!(d.status().map(|s| s.as_str()), Some("FAILED"), "{id}");
        assert_eq!(d.is_terminated(), Some(true), "{id}");
        assert_eq!(d.status_reason(), Some("Quota share deleted"));
    }
}

#[tokio::test]
async fn a_capacity_out_of_range_is_named_with_its_range() {
    let emu = start(&[(M5, 4)], "").await;
    let addr = emu.addr();
    let body = r#"{"quotaShareName":"big","jobQueue":"qm-queue","capacityLimits":[{"maxCapacity":1099511627776,"capacityUnit":"ml.m5.large"}],"resourceSharingConfiguration":{"strategy":"RESERVE"},"preemptionConfiguration":{"inSharePreemption":"DISABLED"}}"#;
    let reply = post_raw(addr, "/v1/createquotashare", body).await;
    assert!(
        reply.contains(
            "maxCapacity for ml.m5.large must be between 1 and 2147483647, got 1099511627776"
        ),
        "{reply}"
    );
}

/// One POST on a fresh connection; the whole reply as text.
async fn post_raw(addr: std::net::SocketAddr, path: &str, body: &str) -> String {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\n{SIGNED}Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    String::from_utf8_lossy(&out).to_string()
}
