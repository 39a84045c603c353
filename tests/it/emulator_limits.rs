//! The emulator bounds what clients can make it hold: 200 clients each uploading a 1 MiB body
//! leave its memory bounded (bodies are drained, never buffered whole), slow or silent clients
//! are closed by the header, body and idle timeouts, and it keeps serving throughout.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Child;
use std::time::{Duration, Instant};

use crate::emulator_support::SIGNED;

struct Emulator {
    child: Child,
    addr: String,
}

impl Drop for Emulator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start() -> Emulator {
    let (child, url) = crate::emulator_support::spawn_emulator_binary(&[
        "--speed",
        "0",
        "--max-connections",
        "64",
        "--header-timeout",
        "2",
        "--body-timeout",
        "2",
        "--idle-timeout",
        "3",
    ]);
    Emulator {
        child,
        addr: url.trim_start_matches("http://").to_string(),
    }
}

/// A `/proc/<pid>/status` field in KiB.
fn status_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// A well-formed request; returns the response's status line.
fn request(addr: &str, op: &str, body: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "POST /v1/{op} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n{SIGNED}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    text.lines().next().unwrap_or("").to_string()
}

/// Whether the server closed `s` (EOF or reset) within `within`.
fn closed_within(s: &mut TcpStream, within: Duration) -> bool {
    s.set_read_timeout(Some(within)).unwrap();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue, // a 400/408 answer first, then the close
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut =>
            {
                return false;
            }
            Err(_) => return true,
        }
    }
}

#[test]
fn memory_is_bounded_under_200_large_uploads() {
    let emu = start();
    let pid = emu.child.id();
    assert!(
        request(
            &emu.addr,
            "listservicejobs",
            r#"{"jobQueue":"ml-training"}"#
        )
        .contains("200")
    );
    let before = status_kib(pid, "VmRSS:");
    let body = vec![b'x'; 1024 * 1024];
    let threads: Vec<_> = (0..200)
        .map(|_| {
            let (addr, body) = (emu.addr.clone(), body.clone());
            std::thread::spawn(move || {
                let mut s = TcpStream::connect(&addr).unwrap();
                s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
                s.set_write_timeout(Some(Duration::from_secs(30))).unwrap();
                let head = format!(
                    "POST /v1/submitservicejob HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = s.write_all(head.as_bytes());
                let _ = s.write_all(&body);
                let mut text = String::new();
                let _ = s.read_to_string(&mut text);
                text
            })
        })
        .collect();
    let mut refused = 0;
    for t in threads {
        let text = t.join().unwrap();
        if text.contains("larger than") {
            refused += 1;
        }
    }
    assert!(refused >= 190, "{refused} of 200 uploads got the clear 400");
    let peak = status_kib(pid, "VmHWM:");
    eprintln!("emulator RSS before {before} KiB, peak after 200 × 1 MiB uploads {peak} KiB");
    assert!(
        peak < before + 24 * 1024,
        "peak RSS {peak} KiB after 200 × 1 MiB uploads (before: {before} KiB)"
    );
    // Still serving.
    assert!(
        request(
            &emu.addr,
            "listservicejobs",
            r#"{"jobQueue":"ml-training"}"#
        )
        .contains("200")
    );
}

#[test]
fn slow_and_idle_clients_are_closed_and_others_still_served() {
    let emu = start();
    // 200 clients that send half a request head and stop.
    let mut slow: Vec<TcpStream> = (0..200)
        .map(|_| {
            let mut s = TcpStream::connect(&emu.addr).unwrap();
            s.write_all(b"POST /v1/listservicejobs HTTP/1.1\r\nHost: x\r\n")
                .unwrap();
            s
        })
        .collect();
    // One that sends its head, then only part of the body it announced.
    let mut trickle = TcpStream::connect(&emu.addr).unwrap();
    trickle
        .write_all(
            b"POST /v1/listservicejobs HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"jobQ",
        )
        .unwrap();
    let t0 = Instant::now();
    // 200 over 64 slots, 2 s each: all closed well within 30 s.
    let deadline = Duration::from_secs(30);
    for (i, s) in slow.iter_mut().enumerate() {
        let left = deadline
            .saturating_sub(t0.elapsed())
            .max(Duration::from_millis(1));
        assert!(
            closed_within(s, left),
            "slow client {i} still open after {:?}",
            t0.elapsed()
        );
    }
    let mut answer = String::new();
    trickle
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let _ = trickle.read_to_string(&mut answer);
    assert!(answer.contains("not received within"), "{answer:?}");

    // An idle keep-alive connection: one request answered, then silence.
    let mut idle = TcpStream::connect(&emu.addr).unwrap();
    let body = r#"{"jobQueue":"ml-training"}"#;
    write!(
        idle,
        "POST /v1/listservicejobs HTTP/1.1\r\nHost: x\r\n{SIGNED}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let t1 = Instant::now();
    assert!(
        closed_within(&mut idle, Duration::from_secs(15)),
        "idle connection kept open"
    );
    assert!(
        t1.elapsed() >= Duration::from_secs(1),
        "closed too early: {:?}",
        t1.elapsed()
    );
    assert!(request(&emu.addr, "listservicejobs", body).contains("200"));
}
