//! `mpa/crc32c` in Verilator at every width against `rnic_proto::mpa::crc32c`
//! (CHECKLIST MPA-07): the RFC 3720 B.4 known answers (VECTORS V1) and 10 000 random
//! messages per width, back to back, starting at random lanes, with idle cycles, empty
//! beats and pipeline stalls between beats.
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rnic_proto::mpa::crc32c;
use rnic_sim::crc::{lane_mask, CrcDriver, CRC_LATENCY};
use rnic_sim::trace;

const WIDTHS: [usize; 4] = [8, 16, 32, 64];

/// VECTORS V1 (RFC 3720 Appendix B.4): input and CRC32c value.
fn v1_vectors() -> Vec<(Vec<u8>, u32)> {
    let read10: Vec<u8> = [
        0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x14, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18, 0x28, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    ]
    .to_vec();
    vec![
        (vec![0u8; 32], 0x8a9136aa),
        (vec![0xffu8; 32], 0x62a8ab43),
        ((0u8..32).collect(), 0x46dd794e),
        ((0u8..32).rev().collect(), 0x113fdb5c),
        (read10, 0xd9963a56),
        (b"123456789".to_vec(), 0xe3069283),
    ]
}

#[test]
fn mpa_07_crc32c_known_answers_at_every_width() {
    for lanes in WIDTHS {
        let mut crc = CrcDriver::new(lanes).expect("model");
        for (i, (data, want)) in v1_vectors().into_iter().enumerate() {
            for lead in [0, lanes / 2, lanes - 1] {
                assert_eq!(crc.message(&data, lead), want, "W={lanes} V1 row {i} lead {lead}");
            }
        }
        assert_eq!(crc.message(&[], 0), 0, "W={lanes}: empty message");
    }
}

fn random_messages(lanes: usize) {
    let name = format!("mpa_07_crc32c_random_w{lanes}");
    trace::on_failure(&name, || {
        let mut crc = CrcDriver::new(lanes).expect("model");
        let mut rng = StdRng::seed_from_u64(0x3720 + lanes as u64);
        let mut expected = Vec::new();
        for _ in 0..10_000 {
            let len = match rng.gen_range(0..10) {
                0 => rng.gen_range(0..4),
                1..=6 => rng.gen_range(0..4 * lanes),
                _ => rng.gen_range(0..600),
            };
            let message: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
            expected.push(crc32c(&message));
            let mut lane = if rng.gen_bool(0.5) { 0 } else { rng.gen_range(0..lanes) };
            let mut rest = &message[..];
            let mut first = true;
            loop {
                let n = rest.len().min(lanes - lane);
                // Garbage in invalid lanes must not matter.
                let mut data: Vec<u8> = (0..lanes).map(|_| rng.gen()).collect();
                data[lane..lane + n].copy_from_slice(&rest[..n]);
                rest = &rest[n..];
                let beat = (first, rest.is_empty(), &data[..], lane_mask(lane, lane + n));
                // A stalled cycle holds the beat on offer and everything inside.
                while rng.gen_range(0..8) == 0 {
                    crc.cycle(Some(beat), false);
                }
                crc.cycle(Some(beat), true);
                first = false;
                lane = 0;
                if rest.is_empty() {
                    break;
                }
                match rng.gen_range(0..8) {
                    0 => crc.cycle(None, true),
                    1 => crc.cycle(Some((false, false, &vec![0xa5; lanes], 0)), true), // empty beat
                    _ => {}
                }
            }
        }
        for _ in 0..=CRC_LATENCY {
            crc.cycle(None, true);
        }
        assert_eq!(crc.results.len(), expected.len(), "W={lanes}: one CRC per message");
        for (i, (got, want)) in crc.results.iter().zip(&expected).enumerate() {
            assert_eq!(got, want, "W={lanes} message {i}");
        }
    });
}

#[test]
fn mpa_07_crc32c_random_w8() {
    random_messages(8);
}

#[test]
fn mpa_07_crc32c_random_w16() {
    random_messages(16);
}

#[test]
fn mpa_07_crc32c_random_w32() {
    random_messages(32);
}

#[test]
fn mpa_07_crc32c_random_w64() {
    random_messages(64);
}
