//! `ddp/tx_segment` in Verilator against `rnic_proto::model::wire` (CHECKLIST DDP-08
//! segmentation at MULPDU, DDP-09 zero-length messages, RDMAP-07 the Read Request):
//! random Sends (all four kinds), RDMA Writes and Read Requests, payloads of 0..6000
//! octets at any alignment, random MULPDUs, and Sends whose header is followed by 0..=52
//! inline octets and a short payload (every header length mod 8, so every rotation of
//! the payload behind the header's last octets); the payload comes from a DMA read engine
//! played by the bench (random latency, in order) and the ULPDUs leave with random
//! back-pressure. Every ULPDU must equal the reference's octets, with its length in
//! `tuser`, and each message must report done once, in order. One message in ten is
//! dropped (`drop` raised at a random cycle of its walk and held, as for a QP reset): its
//! ULPDUs must be a prefix of the reference's, then none, and it still reports done.
use std::collections::VecDeque;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rnic_proto::model::wire::{tagged_ulpdus, untagged_ulpdus};
use rnic_proto::rdmap::{Opcode, ReadRequest, Segment};
use rnic_sim::axis::AxisSink;
use rnic_sim::{trace, Model, Port};

const MESSAGES: usize = 3_000;
const MEMORY: usize = 64 * 1024;

struct Job {
    opcode: Opcode,
    stag: u32,
    to: u64,
    msn: u32,
    addr: u64,
    len: usize,
    inline: Vec<u8>,
    mulpdu: u16,
    expected: Vec<Vec<u8>>,
    /// Dropped at some point of its walk.
    dropped: bool,
}

fn random_job(rng: &mut StdRng, memory: &[u8]) -> Job {
    if rng.gen_range(0..7) == 0 {
        return inline_job(rng, memory);
    }
    let opcode = [
        Opcode::Send,
        Opcode::SendInvalidate,
        Opcode::SendSolicited,
        Opcode::SendSolicitedInvalidate,
        Opcode::RdmaWrite,
        Opcode::ReadRequest,
    ][rng.gen_range(0..6)];
    let len = match rng.gen_range(0..10) {
        0 => 0,
        1..=4 => rng.gen_range(1..200),
        _ => rng.gen_range(200..6000),
    };
    let mulpdu = rng.gen_range(128..2000);
    let addr = rng.gen_range(0..(MEMORY - len)) as u64;
    let payload = &memory[addr as usize..addr as usize + len];
    let (stag, to, msn) = (rng.gen(), rng.gen(), rng.gen());
    let dropped = rng.gen_bool(0.1);
    let mut job = Job { opcode, stag, to, msn, addr, len, inline: Vec::new(), mulpdu, expected: Vec::new(), dropped };
    match opcode {
        Opcode::RdmaWrite => job.expected = tagged_ulpdus(opcode, stag, to, payload, mulpdu),
        Opcode::ReadRequest => {
            let rr = ReadRequest {
                sink_stag: rng.gen(),
                sink_to: rng.gen(),
                size: rng.gen(),
                src_stag: rng.gen(),
                src_to: rng.gen(),
            };
            job.inline = rr.to_bytes().to_vec();
            job.len = 0;
            job.stag = 0;
            job.expected = vec![Segment::read_request(msn, rr).to_vec()];
        }
        _ => {
            let inv = if matches!(opcode, Opcode::SendInvalidate | Opcode::SendSolicitedInvalidate) { stag } else { 0 };
            job.stag = inv;
            job.expected = untagged_ulpdus(opcode, msn, inv, payload, mulpdu);
        }
    }
    job
}

/// A Send whose header is followed by inline octets (as a Terminate's or Immediate Data's
/// body is) and then a payload, all in one segment: on the wire, the inline octets are
/// the first of the ULPDU's payload.
fn inline_job(rng: &mut StdRng, memory: &[u8]) -> Job {
    let mulpdu = rng.gen_range(128..2000);
    let inline: Vec<u8> = (0..rng.gen_range(0..=52)).map(|_| rng.gen()).collect();
    let room = usize::from(mulpdu) - 18 - inline.len();
    let len = if rng.gen_bool(0.3) { 0 } else { rng.gen_range(1..=room.min(300)) };
    let addr = rng.gen_range(0..(MEMORY - len)) as u64;
    let mut body = inline.clone();
    body.extend_from_slice(&memory[addr as usize..addr as usize + len]);
    let msn = rng.gen();
    let expected = untagged_ulpdus(Opcode::Send, msn, 0, &body, mulpdu);
    assert_eq!(expected.len(), 1, "an inline message is one segment");
    Job { opcode: Opcode::Send, stag: 0, to: 0, msn, addr, len, inline, mulpdu, expected, dropped: rng.gen_bool(0.1) }
}

struct Ports {
    job: [Port; 14],
    req_valid: Port,
    req_ready: Port,
    req_addr: Port,
    req_len: Port,
    rd: [Port; 5],
    done: Port,
    done_tag: Port,
    walking: Port,
    drop: Port,
}

#[test]
fn ddp_08_09_segmenter_matches_the_reference() {
    trace::on_failure("ddp_08_09_segmenter_matches_the_reference", || {
        let mut rng = StdRng::seed_from_u64(0xdd9);
        let memory: Vec<u8> = (0..MEMORY).map(|_| rng.gen()).collect();
        let jobs: Vec<Job> = (0..MESSAGES).map(|_| random_job(&mut rng, &memory)).collect();

        let mut m = Model::new("rnic_ddp_tx_segment").expect("rnic_ddp_tx_segment model");
        let q = |n: &str| m.port(n);
        let p = Ports {
            job: [
                "s_job_valid",
                "s_job_ready",
                "s_job_tagged",
                "s_job_opcode",
                "s_job_stag",
                "s_job_to",
                "s_job_qn",
                "s_job_msn",
                "s_job_addr",
                "s_job_len",
                "s_job_inline",
                "s_job_inline_len",
                "s_job_mulpdu",
                "s_job_tag",
            ]
            .map(q),
            req_valid: q("m_rd_req_valid"),
            req_ready: q("m_rd_req_ready"),
            req_addr: q("m_rd_req_addr"),
            req_len: q("m_rd_req_len"),
            rd: ["s_rd_tdata", "s_rd_tkeep", "s_rd_tlast", "s_rd_tvalid", "s_rd_tready"].map(q),
            done: q("m_done_valid"),
            done_tag: q("m_done_tag"),
            walking: q("walking"),
            drop: q("drop"),
        };
        let mut sink = AxisSink::new(&m, "m_axis");
        sink.ready_rate = 0.8;
        m.reset_for(4);

        let [valid, ready, tagged, opcode, stag, to, qn, msn, addr, len, inline, inline_len, mulpdu, tag] = p.job;
        let [tdata, tkeep, tlast, tvalid, tready] = p.rd;
        let mut next_job = 0;
        // The DMA engine: requests (address, length, ready at) and the octets of the head one.
        let mut reads: VecDeque<(usize, usize, u64)> = VecDeque::new();
        let mut read_pos = 0;
        let mut dones = Vec::new();
        let mut packets = Vec::new();
        // The job taken last (the one walked while `walking`), and whether its drop began.
        let (mut taken, mut dropping) = (None::<usize>, false);
        for cycle in 0..20_000_000u64 {
            let offer = next_job < jobs.len() && rng.gen_bool(0.6);
            m.set_bit(valid, offer);
            if offer {
                let j = &jobs[next_job];
                let untagged_qn = if j.opcode == Opcode::ReadRequest { 1 } else { 0 };
                m.set_bit(tagged, j.opcode == Opcode::RdmaWrite);
                m.set(opcode, j.opcode as u64);
                m.set(stag, j.stag.into());
                m.set(to, j.to);
                m.set(qn, untagged_qn);
                m.set(msn, j.msn.into());
                m.set(addr, 0x7000_0000 + j.addr);
                m.set(len, j.len as u64);
                let mut body = j.inline.clone();
                body.resize(52, 0xEE); // octets past the inline length must not leak out
                m.set_bytes(inline, &body);
                m.set(inline_len, j.inline.len() as u64);
                m.set(mulpdu, j.mulpdu.into());
                m.set(tag, next_job as u64 & 0xFFFF);
            }
            let req_ready_now = rng.gen_bool(0.7);
            m.set_bit(p.req_ready, req_ready_now);
            let due = reads.front().copied().filter(|r| r.2 <= cycle);
            let present = due.is_some() && rng.gen_bool(0.8);
            m.set_bit(tvalid, present);
            if let Some((a, l, _)) = due.filter(|_| present) {
                let n = (l - read_pos).min(8);
                let mut beat: Vec<u8> = memory[a + read_pos..a + read_pos + n].to_vec();
                beat.resize(8, 0xAB); // garbage past the keep lanes, as a real engine may leave
                m.set_bytes(tdata, &beat);
                m.set(tkeep, (1u64 << n) - 1);
                m.set_bit(tlast, read_pos + n == l);
            }
            // `walking` is a register: as of this cycle's start.
            let walked = taken.filter(|_| m.get_bit(p.walking));
            dropping = walked.is_some_and(|j| jobs[j].dropped && (dropping || rng.gen_bool(0.2)));
            m.set_bit(p.drop, dropping);
            sink.drive(&mut m, &mut rng);
            m.eval();
            if offer && m.get_bit(ready) {
                taken = Some(next_job);
                dropping = false;
                next_job += 1;
            }
            if req_ready_now && m.get_bit(p.req_valid) {
                let a = (m.get(p.req_addr) - 0x7000_0000) as usize;
                let l = m.get(p.req_len) as usize;
                assert!(l > 0 && a + l <= MEMORY, "payload read {a:#x}+{l} outside the message");
                reads.push_back((a, l, cycle + rng.gen_range(3..40)));
            }
            if let Some((_, l, _)) = due.filter(|_| present && m.get_bit(tready)) {
                read_pos += (l - read_pos).min(8);
                if read_pos == l {
                    reads.pop_front();
                    read_pos = 0;
                }
            }
            if m.get_bit(p.done) {
                dones.push(m.get(p.done_tag) as usize);
            }
            sink.observe(&m);
            m.tick();
            while let Some(pkt) = sink.pop_packet() {
                packets.push(pkt);
            }
            if dones.len() == jobs.len() && reads.is_empty() && cycle % 64 == 0 {
                // Let the last ULPDUs drain.
                for _ in 0..2000 {
                    sink.drive(&mut m, &mut rng);
                    m.eval();
                    sink.observe(&m);
                    m.tick();
                }
                while let Some(pkt) = sink.pop_packet() {
                    packets.push(pkt);
                }
                break;
            }
        }
        assert_eq!(dones, (0..jobs.len()).map(|i| i & 0xFFFF).collect::<Vec<_>>(), "done pulses, in order");
        // A dropped message sent a prefix of its ULPDUs: as many as match, in order.
        let mut expected: Vec<(usize, &Vec<u8>)> = Vec::new();
        let (mut at, mut cut_short) = (0, 0);
        for (i, j) in jobs.iter().enumerate() {
            let mut n = j.expected.len();
            if j.dropped {
                n = j
                    .expected
                    .iter()
                    .zip(&packets[at.min(packets.len())..])
                    .take_while(|(w, p)| p.bytes() == **w)
                    .count();
                cut_short += usize::from(n < j.expected.len());
            }
            expected.extend(j.expected[..n].iter().map(|u| (i, u)));
            at += n;
        }
        let dropped = jobs.iter().filter(|j| j.dropped).count();
        assert!(cut_short * 2 > dropped, "only {cut_short} of {dropped} dropped messages were cut short");
        assert_eq!(packets.len(), expected.len(), "number of ULPDUs");
        for (k, (pkt, (i, want))) in packets.iter().zip(&expected).enumerate() {
            let got = pkt.bytes();
            assert!(
                &got == *want,
                "ULPDU {k} (message {i}, {:?}, {} octets, MULPDU {}): got {} octets {:02x?}..., want {} octets {:02x?}...",
                jobs[*i].opcode,
                jobs[*i].len,
                jobs[*i].mulpdu,
                got.len(),
                &got[..got.len().min(24)],
                want.len(),
                &want[..want.len().min(24)]
            );
            assert_eq!(pkt.user() as usize, want.len(), "ULPDU {k}: tuser is its length");
            pkt.check_shape(8, 1).unwrap_or_else(|e| panic!("ULPDU {k}: {e}"));
        }
    });
}
