//! `host/dma_write_arb` in Verilator: four clients with random write requests (some
//! empty) and random data gaps in front of a write engine played by the bench. The engine
//! must receive each request with its client's tag and then exactly that request's
//! octets, in grant order; every completion must reach the client that asked, once. A
//! client's ready depends on no client's request: the grant is a register.
use std::collections::VecDeque;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rnic_sim::axis::{packet_beats, Beat};
use rnic_sim::{trace, Model};

const CLIENTS: usize = 4;

#[test]
fn dma_write_arb_keeps_data_with_its_request() {
    trace::on_failure("dma_write_arb_keeps_data_with_its_request", || {
        let mut rng = StdRng::seed_from_u64(0xa4c);
        // Each client's requests: address and octets.
        let requests: Vec<Vec<(u64, Vec<u8>)>> = (0..CLIENTS)
            .map(|c| {
                (0..rng.gen_range(40..120))
                    .map(|_| {
                        let len = if rng.gen_bool(0.1) { 0 } else { rng.gen_range(1..200) };
                        ((c as u64) << 40 | rng.gen_range(0..1 << 20), (0..len).map(|_| rng.gen()).collect())
                    })
                    .collect()
            })
            .collect();
        let mut m = Model::new("rnic_host_dma_write_arb").expect("rnic_host_dma_write_arb model");
        let p = |n: &str| m.port(n);
        let (req_valid, req_ready, req_addr, req_len) =
            (p("s_req_valid"), p("s_req_ready"), p("s_req_addr"), p("s_req_len"));
        let (wdata, wkeep, wlast, wvalid, wready) =
            (p("s_wr_tdata"), p("s_wr_tkeep"), p("s_wr_tlast"), p("s_wr_tvalid"), p("s_wr_tready"));
        let (done_out, m_valid, m_ready, m_addr, m_len, m_tag) =
            (p("m_done_valid"), p("m_req_valid"), p("m_req_ready"), p("m_req_addr"), p("m_req_len"), p("m_req_tag"));
        let (tdata, tkeep, tlast, tvalid, tready) =
            (p("m_axis_tdata"), p("m_axis_tkeep"), p("m_axis_tlast"), p("m_axis_tvalid"), p("m_axis_tready"));
        let (done_valid, done_tag) = (p("s_done_valid"), p("s_done_tag"));
        m.reset_for(4);

        let mut next = [0usize; CLIENTS];
        // Per client: beats of its granted, non-empty requests still to send.
        let mut sending: Vec<VecDeque<Beat>> = vec![VecDeque::new(); CLIENTS];
        // Engine: requests taken (client, index), data being assembled, completions due.
        let mut engine: VecDeque<(usize, usize)> = VecDeque::new();
        let mut assembling = Vec::new();
        let mut dones: VecDeque<(usize, u64)> = VecDeque::new();
        let mut completed = [0usize; CLIENTS];
        let total: usize = requests.iter().map(Vec::len).sum();
        // Regimes of 300 cycles: the engine taking requests from rarely to every cycle, the
        // clients' data and the engine's ready from sparse to every cycle, so that the order
        // queue runs empty, shallow and full.
        let regime = |rng: &mut StdRng| {
            (
                [0.05, 0.3, 0.6, 1.0][rng.gen_range(0..4)],
                [0.3, 0.7, 1.0][rng.gen_range(0..3)],
                [0.3, 0.7, 1.0][rng.gen_range(0..3)],
            )
        };
        let (mut req_rate, mut data_rate, mut ready_rate) = regime(&mut rng);
        for cycle in 0..1_000_000u64 {
            if cycle % 300 == 299 {
                (req_rate, data_rate, ready_rate) = regime(&mut rng);
            }
            let (mut valid, mut addrs, mut lens) = (0u64, vec![0u8; 8 * CLIENTS], vec![0u8; 4 * CLIENTS]);
            for c in 0..CLIENTS {
                if let Some((a, d)) = requests[c].get(next[c]) {
                    valid |= 1 << c;
                    addrs[8 * c..8 * c + 8].copy_from_slice(&a.to_le_bytes());
                    lens[4 * c..4 * c + 4].copy_from_slice(&(d.len() as u32).to_le_bytes());
                }
            }
            m.set(req_valid, valid);
            m.set_bytes(req_addr, &addrs);
            m.set_bytes(req_len, &lens);
            let (mut data, mut keep, mut last, mut present) = (vec![0u8; 8 * CLIENTS], vec![0u8; CLIENTS], 0u64, 0u64);
            for c in 0..CLIENTS {
                if let Some(b) = sending[c].front().filter(|_| rng.gen_bool(data_rate)) {
                    data[8 * c..8 * c + 8].copy_from_slice(&b.data);
                    keep[c] = b.keep as u8;
                    last |= u64::from(b.last) << c;
                    present |= 1 << c;
                }
            }
            m.set_bytes(wdata, &data);
            m.set_bytes(wkeep, &keep);
            m.set(wlast, last);
            m.set(wvalid, present);
            let (engine_ready, data_ready) = (rng.gen_bool(req_rate), rng.gen_bool(ready_rate));
            m.set_bit(m_ready, engine_ready);
            m.set_bit(tready, data_ready);
            let done = dones.front().copied().filter(|d| d.1 <= cycle);
            m.set_bit(done_valid, done.is_some());
            if let Some((c, _)) = done {
                m.set(done_tag, c as u64);
                dones.pop_front();
            }
            // The readies with no client asking first: they must not change when the
            // requests come.
            m.set(req_valid, 0);
            m.eval();
            let idle_ready = m.get(req_ready);
            m.set(req_valid, valid);
            m.eval();
            // Completions reach exactly their client.
            let to = m.get(done_out);
            match done {
                Some((c, _)) => {
                    assert_eq!(to, 1 << c, "completion for client {c}");
                    completed[c] += 1;
                }
                None => assert_eq!(to, 0),
            }
            let ready = m.get(req_ready);
            assert_eq!(ready, idle_ready, "a client's ready follows the requests combinationally");
            assert!(ready.count_ones() <= 1, "one client granted at a time: {ready:#x}");
            assert!(ready == 0 || engine_ready, "a grant while the engine is not ready");
            let granted = ready & valid;
            if engine_ready && m.get_bit(m_valid) {
                let c = m.get(m_tag) as usize;
                assert_eq!(granted, 1 << c);
                let (a, d) = &requests[c][next[c]];
                assert_eq!((m.get(m_addr), m.get(m_len) as usize), (*a, d.len()), "client {c}'s request forwarded");
                if d.is_empty() {
                    dones.push_back((c, cycle + rng.gen_range(1..20)));
                } else {
                    engine.push_back((c, next[c]));
                    sending[c].extend(packet_beats(d, 8, 0));
                }
                next[c] += 1;
            } else {
                assert_eq!(granted, 0);
            }
            if data_ready && m.get_bit(tvalid) {
                let (c, i) = *engine.front().expect("data before any request");
                assert!(m.get(wready) >> c & 1 == 1, "the data taken is client {c}'s");
                let mut beat = [0u8; 8];
                m.get_bytes(tdata, &mut beat);
                let k = m.get(tkeep);
                assembling.extend((0..8).filter(|b| k >> b & 1 == 1).map(|b| beat[b]));
                sending[c].pop_front();
                if m.get_bit(tlast) {
                    assert_eq!(assembling, requests[c][i].1, "client {c}, request {i}: octets");
                    assembling.clear();
                    engine.pop_front();
                    dones.push_back((c, cycle + rng.gen_range(1..20)));
                }
            }
            m.tick();
            if completed.iter().sum::<usize>() == total {
                for c in 0..CLIENTS {
                    assert_eq!(completed[c], requests[c].len(), "client {c}: completions");
                }
                return;
            }
        }
        panic!("not every write completed");
    });
}
