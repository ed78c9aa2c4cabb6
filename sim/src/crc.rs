//! Driver for the `rnic_mpa_crc32c_w<lanes>` models (hdl/src/mpa/crc32c.rs).
use crate::{Model, Port, SimError};

/// Enabled clock edges from a message's last beat to its CRC (hdl `CRC_LATENCY`).
pub const CRC_LATENCY: usize = 5;

/// A pipelined CRC32c unit of 8, 16, 32 or 64 byte lanes. Every call is one clock cycle;
/// CRCs that come out are collected in order.
pub struct CrcDriver {
    pub model: Model,
    lanes: usize,
    ce: Port,
    s_valid: Port,
    s_first: Port,
    s_last: Port,
    s_data: Port,
    s_keep: Port,
    m_valid: Port,
    m_crc: Port,
    /// CRCs that came out, oldest first.
    pub results: Vec<u32>,
}

impl CrcDriver {
    /// Opens the model for `lanes` byte lanes and resets it.
    pub fn new(lanes: usize) -> Result<Self, SimError> {
        let model = Model::new(&format!("rnic_mpa_crc32c_w{lanes}"))?;
        let reset = model.port("reset");
        let mut crc = CrcDriver {
            lanes,
            ce: model.port("ce"),
            s_valid: model.port("s_valid"),
            s_first: model.port("s_first"),
            s_last: model.port("s_last"),
            s_data: model.port("s_data"),
            s_keep: model.port("s_keep"),
            m_valid: model.port("m_valid"),
            m_crc: model.port("m_crc"),
            results: Vec::new(),
            model,
        };
        crc.model.set_bit(reset, true);
        crc.model.tick();
        crc.model.set_bit(reset, false);
        Ok(crc)
    }

    /// Byte lanes per beat.
    pub fn lanes(&self) -> usize {
        self.lanes
    }

    /// One cycle: a beat (`data` holds all lanes, `keep` bit i marks lane i valid) or none,
    /// with the pipeline advancing or (`ce` low) holding.
    pub fn cycle(&mut self, beat: Option<(bool, bool, &[u8], u64)>, ce: bool) {
        let m = &mut self.model;
        m.set_bit(self.ce, ce);
        m.set_bit(self.s_valid, beat.is_some());
        if let Some((first, last, data, keep)) = beat {
            m.set_bit(self.s_first, first);
            m.set_bit(self.s_last, last);
            m.set_bytes(self.s_data, data);
            m.set(self.s_keep, keep);
        }
        m.eval();
        if ce && m.get_bit(self.m_valid) {
            self.results.push(m.get(self.m_crc) as u32);
        }
        m.tick();
    }

    /// Feeds `message` from lane `lead` of its first beat on, then lets the pipeline run
    /// until its CRC comes out, and returns it.
    pub fn message(&mut self, message: &[u8], lead: usize) -> u32 {
        assert!(lead < self.lanes);
        let mut lane = lead;
        let mut rest = message;
        let mut first = true;
        loop {
            let n = rest.len().min(self.lanes - lane);
            let mut data = vec![0u8; self.lanes];
            data[lane..lane + n].copy_from_slice(&rest[..n]);
            rest = &rest[n..];
            self.cycle(Some((first, rest.is_empty(), &data, lane_mask(lane, lane + n))), true);
            first = false;
            lane = 0;
            if rest.is_empty() {
                break;
            }
        }
        let before = self.results.len();
        for _ in 0..=CRC_LATENCY {
            self.cycle(None, true);
        }
        assert_eq!(self.results.len(), before + 1, "one CRC per message");
        self.results[before]
    }
}

/// Keep bits for lanes `lo..hi`.
pub fn lane_mask(lo: usize, hi: usize) -> u64 {
    let upto = |n: usize| if n >= 64 { u64::MAX } else { (1u64 << n) - 1 };
    upto(hi) & !upto(lo)
}
