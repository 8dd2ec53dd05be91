//! A save is durable once its response is sent: the real binary is killed
//! with SIGKILL right after the last save response, restarted on the same
//! database, and every saved plan is still there, byte for byte.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Server {
    child: Child,
    addr: String,
}

fn start(db: &str) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_memplan"))
        .args(["serve", "--addr", "127.0.0.1:0", "--database", db])
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("memplan starts");
    let out = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(out).lines();
    let deadline = Instant::now() + Duration::from_secs(30);
    let addr = loop {
        assert!(Instant::now() < deadline, "server did not start");
        let line = lines
            .next()
            .expect("server exited before listening")
            .expect("line");
        if let Some(rest) = line.split("listening on http://").nth(1) {
            break rest.trim().to_string();
        }
    };
    // Keep draining stdout so the server never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    Server { child, addr }
}

/// One HTTP/1.1 request; returns (status, body).
fn request(addr: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).expect("response");
    let status = raw
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = raw
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

#[test]
fn sigkill_right_after_a_save_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite:{}", dir.path().join("plans.db").display());
    let plan = serde_json::to_value(cost_model::Plan::default()).unwrap();
    let mut saved = Vec::new();
    for round in 0..3 {
        let mut server = start(&db);
        for i in 0..5 {
            let title = format!("round {round} plan {i}");
            let body = serde_json::json!({"title": title, "plan": plan}).to_string();
            let (status, reply) = request(&server.addr, "POST", "/api/v1/plans", &body);
            assert_eq!(status, 201, "{reply}");
            let v: serde_json::Value = serde_json::from_str(&reply).unwrap();
            saved.push((v["id"].as_str().unwrap().to_string(), title));
        }
        // No graceful shutdown, no chance to flush anything.
        server.child.kill().expect("SIGKILL");
        server.child.wait().unwrap();
    }
    let mut server = start(&db);
    for (id, title) in &saved {
        let (status, reply) = request(&server.addr, "GET", &format!("/api/v1/plans/{id}"), "");
        assert_eq!(status, 200, "{id} lost: {reply}");
        let v: serde_json::Value = serde_json::from_str(&reply).unwrap();
        assert_eq!(v["title"], title.as_str());
        assert_eq!(v["plan"], plan);
    }
    let (_, list) = request(&server.addr, "GET", "/api/v1/plans", "");
    let v: serde_json::Value = serde_json::from_str(&list).unwrap();
    assert_eq!(v["total"], saved.len());
    server.child.kill().unwrap();
    server.child.wait().unwrap();
}

#[test]
fn a_broken_database_stops_the_server_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.db");
    std::fs::write(&junk, vec![7u8; 8192]).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_memplan"))
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--database",
            junk.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("junk.db"), "{err}");
    let out = Command::new(env!("CARGO_BIN_EXE_memplan"))
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--database",
            "postgres://nobody@127.0.0.1:1/none",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("PostgreSQL"), "{err}");
}
