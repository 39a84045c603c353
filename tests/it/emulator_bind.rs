//! Security: the emulator checks no secret (any key signs), so it listens on loopback only unless a
//! non-loopback address is asked for explicitly (`--bind ADDR --allow-remote`). No test here
//! opens a socket beyond loopback: the allowed remote case uses 192.0.2.1 (TEST-NET-1, RFC 5737),
//! which no interface has, so it gets past the refusal and then fails to bind.

use std::process::{Command, Output};
use std::time::Duration;

use quotatop_emulator::{self as emulator, EmulatorConfig, EmulatorError, Scenario};

fn emulator(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_quotatop"))
        .args([
            "emulator",
            "--scenario",
            "scenarios/demo.toml",
            "--port",
            "0",
        ])
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn non_loopback_bind_is_refused_without_allow_remote() {
    for addr in ["0.0.0.0", "192.0.2.1", "::"] {
        let out = emulator(&["--bind", addr]);
        assert!(!out.status.success(), "{addr} was accepted");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("refusing to bind {addr}")) && err.contains("--allow-remote"),
            "{addr}: {err}"
        );
        assert!(
            out.stdout.is_empty(),
            "nothing was served: {:?}",
            out.stdout
        );
    }
}

#[test]
fn allow_remote_lifts_the_refusal() {
    let out = emulator(&["--bind", "192.0.2.1", "--allow-remote"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("refusing"), "{err}");
    assert!(err.contains("cannot bind 192.0.2.1:0"), "{err}");
}

#[test]
fn a_bad_bind_address_is_a_usage_error() {
    let out = emulator(&["--bind", "localhost:80"]);
    assert_eq!(out.status.code(), Some(2), "clap usage error");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--bind"));
}

#[tokio::test]
async fn library_refuses_too_and_serves_any_loopback_address() {
    let scenario = Scenario::load("scenarios/demo.toml".as_ref()).unwrap();
    let mut config = EmulatorConfig::from_scenario(scenario).unwrap();
    assert!(config.bind.is_loopback(), "loopback by default");
    config.bind = "0.0.0.0".parse().unwrap();
    match emulator::start(config.clone()).await {
        Err(EmulatorError::RemoteBind(a)) => assert_eq!(a.to_string(), "0.0.0.0"),
        Err(e) => panic!("wrong error {e}"),
        Ok(_) => panic!("bound 0.0.0.0 without allow_remote"),
    }
    config.bind = "127.0.0.2".parse().unwrap();
    let h = emulator::start(config).await.unwrap();
    assert_eq!(h.addr().ip().to_string(), "127.0.0.2");
    let stream = tokio::time::timeout(
        Duration::from_secs(5),
        tokio::net::TcpStream::connect(h.addr()),
    )
    .await
    .unwrap();
    assert!(stream.is_ok());
    h.shutdown().await.unwrap();
}
