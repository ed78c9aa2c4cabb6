//! Driver for the `rnic_mpa_crc32c_w<lanes>` models (hdl/src/mpa/crc32c.rs).
use crate::{Model, Port, SimError};

/// A CRC32c unit of 8, 16, 32 or 64 byte lanes.
pub struct CrcDriver {
    pub model: Model,
    lanes: usize,
    s_valid: Port,
    s_first: Port,
    s_data: Port,
    s_keep: Port,
    crc: Port,
}

impl CrcDriver {
    /// Opens the model for `lanes` byte lanes and resets it.
    pub fn new(lanes: usize) -> Result<Self, SimError> {
        let model = Model::new(&format!("rnic_mpa_crc32c_w{lanes}"))?;
        let reset = model.port("reset");
        let mut crc = CrcDriver {
            lanes,
            s_valid: model.port("s_valid"),
            s_first: model.port("s_first"),
            s_data: model.port("s_data"),
            s_keep: model.port("s_keep"),
            crc: model.port("crc"),
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

    /// Feeds one beat: `data` holds all lanes (lane i = data[i]); `keep` bit i marks lane i
    /// valid.
    pub fn beat(&mut self, first: bool, data: &[u8], keep: u64) {
        self.model.set_bit(self.s_valid, true);
        self.model.set_bit(self.s_first, first);
        self.model.set_bytes(self.s_data, data);
        self.model.set(self.s_keep, keep);
        self.model.tick();
        self.model.set_bit(self.s_valid, false);
    }

    /// A cycle with no beat.
    pub fn idle(&mut self) {
        self.model.set_bit(self.s_valid, false);
        self.model.tick();
    }

    /// The CRC32c value of the message so far.
    pub fn crc(&self) -> u32 {
        self.model.get(self.crc) as u32
    }

    /// Feeds `message` from lane `lead` of a first beat on, in as many beats as it takes,
    /// and returns the CRC.
    pub fn message(&mut self, message: &[u8], lead: usize) -> u32 {
        assert!(lead < self.lanes);
        let mut lane = lead;
        let mut rest = message;
        let mut first = true;
        loop {
            let n = rest.len().min(self.lanes - lane);
            let mut data = vec![0u8; self.lanes];
            data[lane..lane + n].copy_from_slice(&rest[..n]);
            self.beat(first, &data, lane_mask(lane, lane + n));
            rest = &rest[n..];
            first = false;
            lane = 0;
            if rest.is_empty() {
                return self.crc();
            }
        }
    }
}

/// Keep bits for lanes `lo..hi`.
pub fn lane_mask(lo: usize, hi: usize) -> u64 {
    let upto = |n: usize| if n >= 64 { u64::MAX } else { (1u64 << n) - 1 };
    upto(hi) & !upto(lo)
}
