//! Drivers for the MPA framer and deframer models (hdl/src/mpa/tx.rs, rx.rs).
use rand::Rng;
use rnic_proto::mpa::FramingConfig;

use crate::axis::{packet_beats, AxisSink, AxisSource};
use crate::{Model, Port, SimError};

/// The framer `rnic_mpa_tx_w<lanes>`: ULPDUs in on `s_axis`, FPDUs out on `m_axis`.
pub struct MpaTxDriver {
    pub model: Model,
    pub source: AxisSource,
    pub sink: AxisSink,
    length_error: Port,
}

impl MpaTxDriver {
    /// Opens the model, sets the framing options and resets it (stream position 0).
    pub fn new(lanes: usize, cfg: FramingConfig) -> Result<Self, SimError> {
        let model = open(&format!("rnic_mpa_tx_w{lanes}"), cfg)?;
        Ok(MpaTxDriver {
            source: AxisSource::new(&model, "s_axis"),
            sink: AxisSink::new(&model, "m_axis"),
            length_error: model.port("length_error"),
            model,
        })
    }

    /// Queues one ULPDU (its length goes in `tuser`).
    pub fn send(&mut self, ulpdu: &[u8]) {
        let lanes = self.source.lanes();
        self.source.push(packet_beats(ulpdu, lanes, ulpdu.len() as u64));
    }

    /// One clock cycle with the bus models' random gaps and back-pressure.
    pub fn cycle(&mut self, rng: &mut impl Rng) {
        clock_streams(&mut self.model, &mut self.source, &mut self.sink, rng);
    }

    /// Whether a ULPDU's length disagreed with its `tuser`.
    pub fn length_error(&self) -> bool {
        self.model.get_bit(self.length_error)
    }
}

/// Opens an MPA model with its framing options set, and resets it: the stream position
/// is 0, the first octet of Full Operation.
fn open(design: &str, cfg: FramingConfig) -> Result<Model, SimError> {
    let mut model = Model::new(design)?;
    let (markers, crc, reset) = (model.port("markers_en"), model.port("crc_en"), model.port("reset"));
    model.set_bit(markers, cfg.markers);
    model.set_bit(crc, cfg.crc);
    model.set_bit(reset, true);
    model.tick();
    model.tick();
    model.set_bit(reset, false);
    Ok(model)
}

/// One clock of a model with one stream in and one stream out.
fn clock_streams(model: &mut Model, source: &mut AxisSource, sink: &mut AxisSink, rng: &mut impl Rng) {
    source.drive(model, rng);
    sink.drive(model, rng);
    model.eval();
    source.observe(model);
    sink.observe(model);
    model.tick();
    source.advance();
}

/// The deframer `rnic_mpa_rx_w<lanes>`: TCP octets in on `s_axis`, one packet per FPDU;
/// ULPDUs out on `m_axis`, `tuser` on the last beat the FPDU's MPA error code (0 good).
pub struct MpaRxDriver {
    pub model: Model,
    pub source: AxisSource,
    pub sink: AxisSink,
}

impl MpaRxDriver {
    /// Opens the model, sets the framing options and resets it (stream position 0).
    pub fn new(lanes: usize, cfg: FramingConfig) -> Result<Self, SimError> {
        let model = open(&format!("rnic_mpa_rx_w{lanes}"), cfg)?;
        Ok(MpaRxDriver { source: AxisSource::new(&model, "s_axis"), sink: AxisSink::new(&model, "m_axis"), model })
    }

    /// Queues one packet (an FPDU, if the stream is in step) as beats of `chunk()` octets
    /// each (clamped to 1..=lanes), the way TCP payload may arrive in pieces of any size,
    /// each beat starting in lane 0; its last beat ends the packet (an empty packet is one
    /// beat with no lanes).
    pub fn push_packet(&mut self, bytes: &[u8], chunk: impl FnMut() -> usize) {
        self.push_octets(bytes, chunk, true);
    }

    /// Queues octets of a packet that goes on (the rest comes with [`Self::push_packet`]).
    pub fn push_part(&mut self, bytes: &[u8], chunk: impl FnMut() -> usize) {
        self.push_octets(bytes, chunk, false);
    }

    fn push_octets(&mut self, bytes: &[u8], mut chunk: impl FnMut() -> usize, ends: bool) {
        let lanes = self.source.lanes();
        let mut rest = bytes;
        let mut beats = Vec::new();
        while !rest.is_empty() {
            let n = chunk().clamp(1, lanes).min(rest.len());
            let mut data = rest[..n].to_vec();
            data.resize(lanes, 0);
            beats.push(crate::axis::Beat { data, keep: crate::axis::lane_mask(n), last: false, user: 0 });
            rest = &rest[n..];
        }
        if ends {
            match beats.last_mut() {
                Some(b) => b.last = true,
                None => beats.push(crate::axis::Beat { data: vec![0; lanes], keep: 0, last: true, user: 0 }),
            }
        }
        self.source.push(beats);
    }

    /// Queues each FPDU of `fpdus` as its own packet.
    pub fn push_fpdus<'a>(&mut self, fpdus: impl IntoIterator<Item = &'a Vec<u8>>, mut chunk: impl FnMut() -> usize) {
        for fpdu in fpdus {
            self.push_packet(fpdu, &mut chunk);
        }
    }

    /// One clock cycle with the bus models' random gaps and back-pressure.
    pub fn cycle(&mut self, rng: &mut impl Rng) {
        clock_streams(&mut self.model, &mut self.source, &mut self.sink, rng);
    }
}
