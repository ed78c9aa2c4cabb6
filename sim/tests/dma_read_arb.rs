//! `host/dma_read_arb` in Verilator: four clients with random requests and random
//! readiness in front of a read engine played by the bench (random latency, data in
//! request order, tagged). Each client must get exactly its own requests' octets, in its
//! order; with every client busy, grants go round. A client's ready depends on no client's
//! request: the grant is a register.
use std::collections::VecDeque;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rnic_sim::{trace, Model, Port};

const CLIENTS: usize = 4;

/// The octet at `addr` of the pretend host memory.
fn octet(addr: u64) -> u8 {
    (addr ^ (addr >> 8) ^ (addr >> 16)) as u8
}

struct Ports {
    req_valid: Port,
    req_ready: Port,
    req_addr: Port,
    req_len: Port,
    m_valid: Port,
    m_ready: Port,
    m_addr: Port,
    m_len: Port,
    m_tag: Port,
    tdata: Port,
    tkeep: Port,
    tlast: Port,
    tuser: Port,
    tvalid: Port,
    tready: Port,
    c_tdata: Port,
    c_tkeep: Port,
    c_tlast: Port,
    c_tvalid: Port,
    c_tready: Port,
}

fn ports(m: &Model) -> Ports {
    let p = |n: &str| m.port(n);
    Ports {
        req_valid: p("s_req_valid"),
        req_ready: p("s_req_ready"),
        req_addr: p("s_req_addr"),
        req_len: p("s_req_len"),
        m_valid: p("m_req_valid"),
        m_ready: p("m_req_ready"),
        m_addr: p("m_req_addr"),
        m_len: p("m_req_len"),
        m_tag: p("m_req_tag"),
        tdata: p("s_rd_tdata"),
        tkeep: p("s_rd_tkeep"),
        tlast: p("s_rd_tlast"),
        tuser: p("s_rd_tuser"),
        tvalid: p("s_rd_tvalid"),
        tready: p("s_rd_tready"),
        c_tdata: p("m_rd_tdata"),
        c_tkeep: p("m_rd_tkeep"),
        c_tlast: p("m_rd_tlast"),
        c_tvalid: p("m_rd_tvalid"),
        c_tready: p("m_rd_tready"),
    }
}

/// What a run gives back: each client's received packets, and the grants (client, cycle)
/// in order.
type Outcome = (Vec<Vec<Vec<u8>>>, Vec<(usize, u64)>);

/// Runs the clients' request lists with the engine ready to take a request with the given
/// probability each cycle.
fn run(seed: u64, requests: &[Vec<(u64, u32)>], client_ready: f64, engine_ready: f64) -> Outcome {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut m = Model::new("rnic_host_dma_read_arb").expect("rnic_host_dma_read_arb model");
    let p = ports(&m);
    m.reset_for(4);
    let mut next = [0usize; CLIENTS];
    // Engine: requests taken (tag, address, length, due cycle); position in the head one.
    let mut engine: VecDeque<(usize, u64, u32, u64)> = VecDeque::new();
    let mut pos = 0u32;
    let mut received: Vec<Vec<Vec<u8>>> = vec![Vec::new(); CLIENTS];
    let mut partial: Vec<Vec<u8>> = vec![Vec::new(); CLIENTS];
    let mut grants = Vec::new();
    let total: usize = requests.iter().map(Vec::len).sum();
    for cycle in 0..1_000_000u64 {
        let mut valid = 0u64;
        let (mut addrs, mut lens) = (vec![0u8; 8 * CLIENTS], vec![0u8; 4 * CLIENTS]);
        for c in 0..CLIENTS {
            if let Some(&(a, l)) = requests[c].get(next[c]) {
                valid |= 1 << c;
                addrs[8 * c..8 * c + 8].copy_from_slice(&a.to_le_bytes());
                lens[4 * c..4 * c + 4].copy_from_slice(&l.to_le_bytes());
            }
        }
        m.set(p.req_valid, valid);
        m.set_bytes(p.req_addr, &addrs);
        m.set_bytes(p.req_len, &lens);
        let engine_takes = rng.gen_bool(engine_ready);
        m.set_bit(p.m_ready, engine_takes);
        let due = engine.front().copied().filter(|e| e.3 <= cycle);
        let present = due.is_some() && rng.gen_bool(0.8);
        m.set_bit(p.tvalid, present);
        if let Some((tag, a, l, _)) = due.filter(|_| present) {
            let n = (l - pos).min(8);
            let beat: Vec<u8> = (0..8).map(|i| if i < n { octet(a + u64::from(pos + i)) } else { 0xEE }).collect();
            m.set_bytes(p.tdata, &beat);
            m.set(p.tkeep, (1 << n) - 1);
            m.set_bit(p.tlast, pos + n == l);
            m.set(p.tuser, tag as u64);
        }
        let readies: u64 = (0..CLIENTS).filter(|_| rng.gen_bool(client_ready)).map(|c| 1 << c).sum();
        m.set(p.c_tready, readies);
        // The readies with no client asking first: they must not change when the requests
        // come.
        m.set(p.req_valid, 0);
        m.eval();
        let idle_ready = m.get(p.req_ready);
        m.set(p.req_valid, valid);
        m.eval();
        let ready = m.get(p.req_ready);
        assert_eq!(ready, idle_ready, "a client's ready follows the requests combinationally");
        assert!(ready.count_ones() <= 1, "one client granted at a time: {ready:#x}");
        assert!(ready == 0 || engine_takes, "a grant while the engine is not ready");
        let granted = ready & valid;
        if engine_takes && m.get_bit(p.m_valid) {
            let tag = m.get(p.m_tag) as usize;
            assert_eq!(granted, 1 << tag, "the granted client is the tagged one");
            let (a, l) = requests[tag][next[tag]];
            assert_eq!((m.get(p.m_addr), m.get(p.m_len) as u32), (a, l), "client {tag}'s request forwarded");
            engine.push_back((tag, a, l, cycle + rng.gen_range(2..30)));
            next[tag] += 1;
            grants.push((tag, cycle));
        } else {
            assert_eq!(granted, 0, "no request taken without the engine taking it");
        }
        let to = m.get(p.c_tvalid);
        if present {
            let (tag, _, l, _) = due.expect("present");
            assert_eq!(to, 1 << tag, "data for client {tag} goes to it alone");
            if m.get_bit(p.tready) {
                assert!(readies >> tag & 1 == 1, "taken though client {tag} was not ready");
                let mut beat = [0u8; 8];
                m.get_bytes(p.c_tdata, &mut beat);
                let keep = m.get(p.c_tkeep);
                partial[tag].extend((0..8).filter(|i| keep >> i & 1 == 1).map(|i| beat[i]));
                pos += (l - pos).min(8);
                if m.get_bit(p.c_tlast) {
                    received[tag].push(std::mem::take(&mut partial[tag]));
                    engine.pop_front();
                    pos = 0;
                }
            }
        } else {
            assert_eq!(to, 0);
        }
        m.tick();
        if received.iter().map(Vec::len).sum::<usize>() == total {
            return (received, grants);
        }
    }
    panic!("not every request was answered");
}

#[test]
fn dma_read_arb_steers_every_clients_data_back() {
    trace::on_failure("dma_read_arb_steers_every_clients_data_back", || {
        let mut rng = StdRng::seed_from_u64(0xa4b);
        let requests: Vec<Vec<(u64, u32)>> = (0..CLIENTS)
            .map(|c| {
                (0..rng.gen_range(50..150))
                    .map(|_| ((c as u64) << 40 | rng.gen_range(0..1 << 20), rng.gen_range(1..300)))
                    .collect()
            })
            .collect();
        let (received, _) = run(1, &requests, 0.7, 0.6);
        for c in 0..CLIENTS {
            assert_eq!(received[c].len(), requests[c].len(), "client {c}: packets");
            for (i, ((a, l), got)) in requests[c].iter().zip(&received[c]).enumerate() {
                let want: Vec<u8> = (0..u64::from(*l)).map(|k| octet(a + k)).collect();
                assert_eq!(got, &want, "client {c}, request {i}");
            }
        }
    });
}

#[test]
fn dma_read_arb_takes_turns() {
    let requests: Vec<Vec<(u64, u32)>> = (0..CLIENTS).map(|c| vec![((c as u64) << 40, 8); 20]).collect();
    let (_, grants) = run(2, &requests, 1.0, 0.6);
    let grants: Vec<usize> = grants.iter().map(|g| g.0).collect();
    for w in grants.chunks(CLIENTS).take(20 * CLIENTS / CLIENTS - 1) {
        let mut seen = w.to_vec();
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), w.len(), "round robin broken: {grants:?}");
    }
}

#[test]
fn dma_read_arb_grants_a_client_asking_alone_every_cycle() {
    let mut requests: Vec<Vec<(u64, u32)>> = vec![Vec::new(); CLIENTS];
    requests[2] = (0..20).map(|i| (i << 12, 8)).collect();
    let (_, grants) = run(3, &requests, 1.0, 1.0);
    let cycles: Vec<u64> = grants.iter().map(|g| g.1).collect();
    assert!(grants.iter().all(|g| g.0 == 2));
    assert!(cycles.windows(2).all(|w| w[1] == w[0] + 1), "grants not back to back: {cycles:?}");
}
