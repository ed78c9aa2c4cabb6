//! AXI-Stream bus models: a source that presents queued beats with random gaps and a sink
//! that takes beats with random back-pressure, both obeying the handshake rules (a
//! presented beat stays unchanged until taken; `tready` may change freely).
//!
//! Per clock cycle a bench calls, in order: [`AxisSource::drive`] and [`AxisSink::drive`],
//! `Model::eval`, [`AxisSource::observe`] and [`AxisSink::observe`] (which see whether
//! the handshake completes at the coming edge), then `Model::tick`.
use std::collections::VecDeque;

use rand::Rng;

use crate::{Model, Port};

/// One beat: byte lanes, `keep` bit i for lane i (at most 64 lanes), `last`, `user`.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Beat {
    pub data: Vec<u8>,
    pub keep: u64,
    pub last: bool,
    pub user: u64,
}

impl Beat {
    /// The bytes of the lanes marked valid, in lane order.
    pub fn kept_bytes(&self) -> impl Iterator<Item = u8> + '_ {
        self.data.iter().enumerate().filter(|(i, _)| self.keep >> i & 1 != 0).map(|(_, &b)| b)
    }
}

/// Splits `bytes` into beats of `lanes`, lane 0 first, the last beat partial and marked
/// `last`, carrying `user` on every beat. An empty packet is one beat with no lanes valid.
pub fn packet_beats(bytes: &[u8], lanes: usize, user: u64) -> Vec<Beat> {
    if bytes.is_empty() {
        return vec![Beat { data: vec![0; lanes], keep: 0, last: true, user }];
    }
    let chunks: Vec<&[u8]> = bytes.chunks(lanes).collect();
    let n = chunks.len();
    chunks
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            let mut data = c.to_vec();
            data.resize(lanes, 0);
            Beat { data, keep: lane_mask(c.len()), last: i + 1 == n, user }
        })
        .collect()
}

/// Keep bits for lanes `0..n`.
pub fn lane_mask(n: usize) -> u64 {
    if n >= 64 {
        u64::MAX
    } else {
        (1u64 << n) - 1
    }
}

/// The ports of one stream interface, found by prefix (`s_axis`, `m_axis`).
struct Ports {
    tdata: Port,
    tkeep: Option<Port>,
    tvalid: Port,
    tready: Port,
    tlast: Option<Port>,
    tuser: Option<Port>,
}

impl Ports {
    fn new(model: &Model, prefix: &str) -> Self {
        Ports {
            tdata: model.port(&format!("{prefix}_tdata")),
            tkeep: model.try_port(&format!("{prefix}_tkeep")),
            tvalid: model.port(&format!("{prefix}_tvalid")),
            tready: model.port(&format!("{prefix}_tready")),
            tlast: model.try_port(&format!("{prefix}_tlast")),
            tuser: model.try_port(&format!("{prefix}_tuser")),
        }
    }
}

/// Drives a slave stream port of the model (`s_axis_*`).
pub struct AxisSource {
    ports: Ports,
    lanes: usize,
    queue: VecDeque<Beat>,
    presenting: bool,
    taken: bool,
    /// Probability of presenting the next beat on a cycle when one is waiting.
    pub valid_rate: f64,
    /// Beats accepted so far.
    pub beats: u64,
}

impl AxisSource {
    pub fn new(model: &Model, prefix: &str) -> Self {
        let ports = Ports::new(model, prefix);
        let lanes = ports.tdata.width() as usize / 8;
        AxisSource { ports, lanes, queue: VecDeque::new(), presenting: false, taken: false, valid_rate: 1.0, beats: 0 }
    }

    /// Byte lanes of the interface.
    pub fn lanes(&self) -> usize {
        self.lanes
    }

    /// Queues beats to send.
    pub fn push(&mut self, beats: impl IntoIterator<Item = Beat>) {
        self.queue.extend(beats);
    }

    /// Beats still to be accepted.
    pub fn pending(&self) -> usize {
        self.queue.len()
    }

    pub fn drive(&mut self, model: &mut Model, rng: &mut impl Rng) {
        if !self.presenting && !self.queue.is_empty() && rng.gen_bool(self.valid_rate) {
            self.presenting = true;
        }
        model.set_bit(self.ports.tvalid, self.presenting);
        if let Some(beat) = self.queue.front().filter(|_| self.presenting) {
            model.set_bytes(self.ports.tdata, &beat.data);
            if let Some(p) = self.ports.tkeep {
                model.set(p, beat.keep);
            }
            if let Some(p) = self.ports.tlast {
                model.set_bit(p, beat.last);
            }
            if let Some(p) = self.ports.tuser {
                model.set(p, beat.user);
            }
        }
    }

    /// Call after `eval`: notes whether the presented beat goes at the coming edge.
    pub fn observe(&mut self, model: &Model) {
        self.taken = self.presenting && model.get_bit(self.ports.tready);
    }

    /// Call after the edge.
    pub fn advance(&mut self) {
        if self.taken {
            self.queue.pop_front();
            self.presenting = false;
            self.taken = false;
            self.beats += 1;
        }
    }
}

/// Drives a master stream port of the model (`m_axis_*`) and collects what it sends.
pub struct AxisSink {
    ports: Ports,
    lanes: usize,
    ready: bool,
    /// Probability of `tready` on a cycle.
    pub ready_rate: f64,
    /// Beats received, oldest first.
    pub received: VecDeque<Beat>,
}

impl AxisSink {
    pub fn new(model: &Model, prefix: &str) -> Self {
        let ports = Ports::new(model, prefix);
        let lanes = ports.tdata.width() as usize / 8;
        AxisSink { ports, lanes, ready: true, ready_rate: 1.0, received: VecDeque::new() }
    }

    pub fn drive(&mut self, model: &mut Model, rng: &mut impl Rng) {
        self.ready = self.ready_rate >= 1.0 || rng.gen_bool(self.ready_rate);
        model.set_bit(self.ports.tready, self.ready);
    }

    /// Call after `eval`: takes the beat on offer if the handshake completes.
    pub fn observe(&mut self, model: &Model) {
        if self.ready && model.get_bit(self.ports.tvalid) {
            let mut data = vec![0u8; self.lanes];
            model.get_bytes(self.ports.tdata, &mut data);
            self.received.push_back(Beat {
                data,
                keep: self.ports.tkeep.map_or(lane_mask(self.lanes), |p| model.get(p)),
                last: self.ports.tlast.is_some_and(|p| model.get_bit(p)),
                user: self.ports.tuser.map_or(0, |p| model.get(p)),
            });
        }
    }

    /// Removes and returns the next complete packet, if one has arrived.
    pub fn pop_packet(&mut self) -> Option<Packet> {
        let end = self.received.iter().position(|b| b.last)?;
        Some(Packet { beats: self.received.drain(..=end).collect() })
    }
}

/// The beats of one packet, the last with `last` set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packet {
    pub beats: Vec<Beat>,
}

impl Packet {
    /// The bytes of the valid lanes, in order.
    pub fn bytes(&self) -> Vec<u8> {
        self.beats.iter().flat_map(|b| b.kept_bytes().collect::<Vec<_>>()).collect()
    }

    /// `tuser` of the last beat.
    pub fn user(&self) -> u64 {
        self.beats.last().map_or(0, |b| b.user)
    }

    /// Checks the packet shape the RNIC's streams promise: every beat's valid lanes start
    /// at lane 0 and are contiguous, whole multiples of `granule` lanes, and only the last
    /// beat is partial. Returns a description of the first violation.
    pub fn check_shape(&self, lanes: usize, granule: usize) -> Result<(), String> {
        for (i, b) in self.beats.iter().enumerate() {
            let n = b.keep.count_ones() as usize;
            if b.keep != lane_mask(n) {
                return Err(format!("beat {i}: keep {:#x} is not contiguous from lane 0", b.keep));
            }
            if !n.is_multiple_of(granule) {
                return Err(format!("beat {i}: {n} lanes is not a multiple of {granule}"));
            }
            if i + 1 < self.beats.len() && n != lanes {
                return Err(format!("beat {i}: partial ({n} lanes) before the last beat"));
            }
        }
        Ok(())
    }
}
