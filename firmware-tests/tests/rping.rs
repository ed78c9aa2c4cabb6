//! `rping` (rdma-core's rping protocol on a simulated RNIC over kernel TCP) against
//! itself: a server and a client process on loopback, with CRCs and with markers; each
//! ping's text travels by RDMA Read and back by RDMA Write and must come back the same.
#![cfg(feature = "sim")]
use std::net::TcpListener;
use std::process::Command;

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("address").port()
}

fn ping(extra: &[&str]) {
    let addr = format!("127.0.0.1:{}", free_port());
    let server = Command::new(env!("CARGO_BIN_EXE_rping"))
        .args(["--listen", &addr, "--count", "4", "--timeout", "60"])
        .args(extra)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("the server");
    // The client retries while the server is not listening yet.
    let mut client = None;
    for _ in 0..50 {
        let out = Command::new(env!("CARGO_BIN_EXE_rping"))
            .args(["--connect", &addr, "--count", "4", "--timeout", "60"])
            .args(extra)
            .output()
            .expect("the client");
        if out.status.success() || !String::from_utf8_lossy(&out.stderr).contains("refused") {
            client = Some(out);
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let client = client.expect("the server listened");
    let server = server.wait_with_output().expect("the server ends");
    let (c, s) = (String::from_utf8_lossy(&client.stdout), String::from_utf8_lossy(&server.stdout));
    assert!(
        client.status.success() && server.status.success(),
        "client: {c}{}\nserver: {s}",
        String::from_utf8_lossy(&client.stderr)
    );
    assert_eq!(c.lines().filter(|l| l.starts_with("ping data: rdma-ping-")).count(), 4, "{c}");
    assert!(c.contains("ping data: rdma-ping-3: DEFGHIJ"), "the fourth ping's text: {c}");
    assert_eq!(s.lines().filter(|l| l.starts_with("server ping ")).count(), 4, "{s}");
    let p2p = if extra.contains(&"--p2p") { "peer-to-peer on" } else { "peer-to-peer off" };
    assert!(c.contains(p2p) && s.contains(p2p), "{c}{s}");
}

#[test]
fn rping_client_and_server_over_loopback_tcp() {
    ping(&[]);
}

#[test]
fn rping_with_markers_and_without_crcs() {
    ping(&["--markers", "--no-crc", "--size", "1000"]);
}

#[test]
fn rping_in_peer_to_peer_mode_with_a_write_rtr() {
    ping(&["--p2p"]);
}
