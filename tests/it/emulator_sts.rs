//! STS GetCallerIdentity on the emulator: quotatop's client learns the principal of its static
//! keys, and says why when nothing answers. (boto3 and the AWS CLI parse the same answer; see
//! docs/emulator.md.)

use crate::emulator_support::*;
use quotatop_aws::batch::{BatchClient, ConnectOptions, StaticCredentials};

async fn connect(url: String, key: &str) -> BatchClient {
    BatchClient::connect(ConnectOptions {
        profile: None,
        region: Some("eu-west-1".into()),
        endpoint_url: Some(url),
        credentials: Some(StaticCredentials {
            access_key_id: key.into(),
            secret_access_key: "secret".into(),
        }),
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_caller_is_the_user_of_the_access_key() {
    let h = start(&[(M5, 1)], "").await;
    let arn = connect(h.endpoint_url(), "AKIDALICE")
        .await
        .caller_identity()
        .await;
    assert_eq!(
        arn.as_deref(),
        Ok("arn:aws:iam::123456789012:user/AKIDALICE")
    );
    let other = connect(h.endpoint_url(), "bob")
        .await
        .caller_identity()
        .await;
    assert_eq!(other.as_deref(), Ok("arn:aws:iam::123456789012:user/bob"));
    h.shutdown().await.ok();

    // Nothing listening: an error with a reason, quickly.
    let t = std::time::Instant::now();
    let err = connect("http://127.0.0.1:9".into(), "AKIDALICE")
        .await
        .caller_identity()
        .await
        .unwrap_err();
    assert!(!err.to_string().is_empty());
    assert!(
        t.elapsed() < std::time::Duration::from_secs(15),
        "{:?}",
        t.elapsed()
    );
}
