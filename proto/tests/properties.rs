//! Property tests: Framer → Deframer round trips (CHECKLIST MPA-06, MPA-11,
//! MPA-12, MPA-16) and segment encode → parse round trips.

use proptest::prelude::*;
use rnic_proto::mpa::{Deframer, Framer, FramingConfig};
use rnic_proto::rdmap::{parse_ulpdu, AtomicRequest, AtomicResponse, ReadRequest, Segment};

/// Deterministic filler so large ULPDUs cost nothing to generate.
fn filler(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn ulpdu_len() -> impl Strategy<Value = usize> {
    prop_oneof![
        12 => 0usize..=4200,
        2 => 4201usize..=65535,
        1 => Just(65535usize),
        1 => 0usize..=4,
    ]
}

fn config() -> impl Strategy<Value = FramingConfig> {
    (any::<bool>(), any::<bool>()).prop_map(|(markers, crc)| FramingConfig { markers, crc })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn mpa_prop_framer_deframer_round_trip(
        cfg in config(),
        lens in proptest::collection::vec(ulpdu_len(), 0..10),
        seed in any::<u64>(),
        chunks in proptest::collection::vec(1usize..3000, 1..8),
    ) {
        let ulpdus: Vec<Vec<u8>> =
            lens.iter().enumerate().map(|(i, &n)| filler(seed ^ i as u64, n)).collect();
        let mut framer = Framer::new(cfg);
        let mut stream = Vec::new();
        for u in &ulpdus {
            framer.frame(u, &mut stream).unwrap();
        }
        prop_assert_eq!(framer.position(), stream.len() as u64);
        prop_assert_eq!(stream.len() % 4, 0);

        let mut deframer = Deframer::new(cfg);
        let mut got = Vec::new();
        let mut rest = &stream[..];
        let mut i = 0;
        while !rest.is_empty() {
            let n = chunks[i % chunks.len()].min(rest.len());
            deframer.push(&rest[..n]);
            rest = &rest[n..];
            i += 1;
            while let Some(r) = deframer.pop() {
                got.push(r.unwrap());
            }
        }
        prop_assert_eq!(got.len(), ulpdus.len());
        prop_assert!(got == ulpdus);
        prop_assert_eq!(deframer.position(), stream.len() as u64);
        prop_assert_eq!(deframer.buffered(), 0);
    }

    #[test]
    fn mpa_prop_small_fpdus_octet_chunks(
        cfg in config(),
        lens in proptest::collection::vec(0usize..700, 1..30),
        seed in any::<u64>(),
    ) {
        let ulpdus: Vec<Vec<u8>> =
            lens.iter().enumerate().map(|(i, &n)| filler(seed ^ i as u64, n)).collect();
        let mut framer = Framer::new(cfg);
        let mut stream = Vec::new();
        for u in &ulpdus {
            framer.frame(u, &mut stream).unwrap();
        }
        let mut deframer = Deframer::new(cfg);
        let mut got = Vec::new();
        for chunk in stream.chunks(3) {
            deframer.push(chunk);
            while let Some(r) = deframer.pop() {
                got.push(r.unwrap());
            }
        }
        prop_assert!(got == ulpdus);
    }

    #[test]
    fn rdmap_prop_segment_round_trip(
        msn: u32, stag: u32, to: u64, inv: u32, data: [u8; 8],
        req_id: u32, a: u64, b: u64, c: u64, d: u64,
        payload in proptest::collection::vec(any::<u8>(), 0..300),
    ) {
        let rr = ReadRequest { sink_stag: stag, sink_to: to, size: msn, src_stag: inv, src_to: a };
        let segs = [
            Segment::write(stag, to, &payload),
            Segment::read_response(stag, to, &payload),
            Segment::send(msn, &payload),
            Segment::send_invalidate(msn, inv, &payload),
            Segment::read_request(msn, rr),
            Segment::immediate(msn, data, msn & 1 == 1),
            Segment::atomic_request(msn, AtomicRequest::cmp_swap(req_id, stag, to, a, b, c, d)),
            Segment::atomic_response(msn, AtomicResponse { request_id: req_id, original: a }),
        ];
        for s in segs {
            let wire = s.to_vec();
            prop_assert_eq!(wire.len(), s.encoded_len());
            prop_assert_eq!(parse_ulpdu(&wire), Ok(s));
        }
    }
}
