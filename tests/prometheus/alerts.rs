//! End to end with a real Prometheus: the demo emulator, `record --metrics-addr`, and
//! `prometheus` scraping it on loopback with the shipped rules; the preemption-loop alert
//! fires for the demo's looping job (video-pretrain, in share vision).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::metrics_support::{Kill, recorder_with_metrics};

/// `GET path` over HTTP/1.0 (no chunking): the body, or `None` when nothing answers yet.
fn get(addr: &str, path: &str) -> Option<String> {
    let mut s = TcpStream::connect(addr).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut resp = String::new();
    s.read_to_string(&mut resp).ok()?;
    Some(resp.split_once("\r\n\r\n")?.1.to_string())
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn prometheus_fires_the_preemption_loop_alert_for_the_demo_looping_job() {
    let rules = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("deploy/prometheus/quotatop.rules.yml");
    let dir = tempfile::tempdir().unwrap();
    let (emu, url) = crate::emulator_support::spawn_emulator_binary(&["--speed", "60"]);
    let _emu = Kill(emu);
    let (_rec, metrics, _err) = recorder_with_metrics(&url, dir.path(), &[]);

    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
             rule_files:\n  - {}\n\
             scrape_configs:\n  - job_name: quotatop\n    static_configs:\n      - targets: [\"{metrics}\"]\n",
            rules.display()
        ),
    )
    .unwrap();
    let web = format!("127.0.0.1:{}", free_port());
    let prometheus = Command::new("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.path().join("data").display()
        ))
        .arg(format!("--web.listen-address={web}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let Ok(prometheus) = prometheus else {
        panic!(
            "`prometheus` is not installed: this test scrapes quotatop with it \
             (Debian/Ubuntu: apt-get install prometheus)"
        );
    };
    let _prometheus = Kill(prometheus);

    let deadline = Instant::now() + Duration::from_secs(90);
    let mut last = None;
    loop {
        if let Some(body) = get(&web, "/api/v1/alerts") {
            let firing = body.split("\"labels\":").any(|a| {
                a.contains("\"alertname\":\"QuotatopPreemptionLoop\"")
                    && a.contains("\"share\":\"vision\"")
                    && a.contains("\"state\":\"firing\"")
            });
            if firing {
                break;
            }
            last = Some(body);
        }
        assert!(
            Instant::now() < deadline,
            "QuotatopPreemptionLoop never fired for share vision; last /api/v1/alerts: {last:?}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    // The series Prometheus stored are the recorder's.
    let body = get(
        &web,
        "/api/v1/query?query=quotatop_capacity_borrowed_instances",
    )
    .unwrap();
    assert!(body.contains("\"status\":\"success\""), "{body}");
    assert!(body.contains("\"job\":\"quotatop\""), "{body}");
}
