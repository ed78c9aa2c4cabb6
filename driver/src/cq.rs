//! Completion queues: the device writes CQEs, the host consumes them by the phase rule.
use std::cell::Cell;
use std::sync::atomic::{fence, Ordering};
use std::time::Duration;

use rnic_proto::host::context::CqContext;
use rnic_proto::host::desc::{cqe_fields, ring_slot, CQE_LEN};
use rnic_proto::host::regs::{self, cq_arm_bits, CmdOpcode};
use rnic_proto::host::{cqe_phase, Cqe, CqeOpcode, CqeStatus};

use crate::error::{DriverError, Resource};
use crate::ring::check_log_size;
use crate::{Device, DmaBuffer, Hal};

/// A completed work request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    /// The work request's identifier.
    pub wr_id: u64,
    /// The local QP.
    pub qpn: u32,
    /// What completed; receives are [`CqeOpcode::Recv`].
    pub opcode: CqeOpcode,
    /// How it ended.
    pub status: CqeStatus,
    /// Receives: octets received; SQ: the request's length. 0 unless successful.
    pub byte_len: u32,
    /// The Send asked for a solicited event.
    pub solicited: bool,
    /// The STag a received Send with Invalidate invalidated.
    pub invalidated: Option<u32>,
    /// Immediate Data received ([`CqeOpcode::RecvImm`]), first octet first.
    pub imm: Option<[u8; 8]>,
}

impl Completion {
    /// Whether it succeeded.
    pub fn is_ok(&self) -> bool {
        self.status == CqeStatus::Success
    }
}

impl From<Cqe> for Completion {
    fn from(c: Cqe) -> Self {
        Completion {
            wr_id: c.wr_id,
            qpn: c.qpn.into(),
            opcode: c.opcode,
            status: c.status,
            byte_len: c.byte_len,
            solicited: c.solicited,
            invalidated: c.invalidated,
            imm: c.imm_valid.then(|| c.imm.to_le_bytes()),
        }
    }
}

/// A completion queue of `2^log_size` CQEs.
///
/// The consumer index is reported to the device (`CQ_CI`) once a quarter of the ring has
/// been consumed since the last report, and whenever a poll finds the CQ empty or the CQ
/// is armed. The device therefore never sees more than a quarter ring less free space
/// than there is, and always knows everything consumed before the host goes idle.
///
/// Methods take `&self` (the indices are `Cell`s) because QPs hold shared borrows of
/// their CQs.
pub struct CompletionQueue<'d, H: Hal> {
    dev: &'d Device<H>,
    ring: DmaBuffer<'d, H>,
    cqn: u32,
    log_size: u8,
    vector: u16,
    /// The next entry to consume (absolute).
    ci: Cell<u32>,
    /// The last value written to `CQ_CI`.
    reported: Cell<u32>,
}

impl<'d, H: Hal> CompletionQueue<'d, H> {
    /// A CQ of `2^log_size` entries that interrupts on `vector` when armed.
    pub fn new(dev: &'d Device<H>, log_size: u8, vector: u16) -> Result<Self, DriverError> {
        check_log_size("CQ", log_size)?;
        let ring = dev.alloc_dma(CQE_LEN << log_size)?;
        let cqn = dev.alloc_number(Resource::CompletionQueue)?;
        // Written with ENABLE clear first, which empties it (producer and consumer index,
        // OVERFLOW, arms): the RNIC keeps a CQ's indexes across a device reset, and from
        // power up they hold anything.
        let ctx = CqContext { log_size, enable: true, vector, base: ring.iova() };
        for ctx in [CqContext { enable: false, ..ctx }, ctx] {
            if let Err(e) = dev.command(CmdOpcode::WriteCq, cqn, &ctx.to_words()) {
                dev.free_number(Resource::CompletionQueue, cqn);
                return Err(e);
            }
        }
        Ok(CompletionQueue { dev, ring, cqn, log_size, vector, ci: Cell::new(0), reported: Cell::new(0) })
    }

    /// The CQ number.
    pub fn cqn(&self) -> u32 {
        self.cqn
    }

    /// Its interrupt vector.
    pub fn vector(&self) -> u16 {
        self.vector
    }

    /// Entries in the ring.
    pub fn capacity(&self) -> u32 {
        1 << self.log_size
    }

    /// The device it belongs to.
    pub fn device(&self) -> &'d Device<H> {
        self.dev
    }

    /// The next completion, if the device has written one.
    ///
    /// The entry at `ci` is new when its PHASE bit is the one of `ci`'s lap
    /// ([`cqe_phase`]). PHASE is read first (volatile), then an acquire fence orders the
    /// reads of the rest of the entry after it. An entry that does not decode is consumed
    /// and reported as [`DriverError::MalformedCqe`].
    pub fn poll(&self) -> Result<Option<Completion>, DriverError> {
        Ok(self.poll_cqe()?.map(Completion::from))
    }

    /// [`Self::poll`], the entry as the device wrote it (every field, PHASE included), for
    /// tests that compare it with the reference model's.
    pub fn poll_cqe(&self) -> Result<Option<Cqe>, DriverError> {
        let ci = self.ci.get();
        let offset = ring_slot(ci, self.log_size) as usize * CQE_LEN;
        let phase_octet = self.ring.read_u8(offset + cqe_fields::PHASE.byte() as usize);
        let phase = phase_octet >> (cqe_fields::PHASE.lsb % 8) & 1 != 0;
        if phase != cqe_phase(ci, self.log_size) {
            self.report();
            return Ok(None);
        }
        fence(Ordering::Acquire);
        let mut entry = [0u8; CQE_LEN];
        self.ring.read_bytes(offset, &mut entry);
        self.ci.set(ci.wrapping_add(1));
        if self.ci.get().wrapping_sub(self.reported.get()) >= (self.capacity() / 4).max(1) {
            self.report();
        }
        let cqe =
            Cqe::decode(&entry).map_err(|source| DriverError::MalformedCqe { cqn: self.cqn, index: ci, source })?;
        Ok(Some(cqe))
    }

    /// Whether a completion waits at the consumer index, without taking it: how a host
    /// that waits by interrupt checks, after arming, that no completion slipped in before
    /// the arm took effect (one whose CQE write the device issued before the arm and
    /// finished after the host's last poll raises no interrupt).
    pub fn has_completion(&self) -> bool {
        let ci = self.ci.get();
        let offset = ring_slot(ci, self.log_size) as usize * CQE_LEN;
        let phase_octet = self.ring.read_u8(offset + cqe_fields::PHASE.byte() as usize);
        (phase_octet >> (cqe_fields::PHASE.lsb % 8) & 1 != 0) == cqe_phase(ci, self.log_size)
    }

    /// Arms the CQ for one interrupt: at the next completion, or with `solicited_only`
    /// at the next completion of a Send with Solicited Event. Poll once more after
    /// arming: a completion written just before it raises no interrupt.
    pub fn arm(&self, solicited_only: bool) {
        self.report();
        let bit = if solicited_only { cq_arm_bits::SOLICITED } else { cq_arm_bits::NEXT };
        let mut w = [0u32];
        bit.set_word(&mut w, 1);
        self.dev.hal().write32(regs::cq_arm(self.cqn), w[0]);
    }

    /// The next completion, waiting up to `timeout` for the CQ's interrupt if there is
    /// none yet. `None` when nothing arrived (or the interrupt was another CQ's on a
    /// shared vector); callers loop.
    pub fn wait(&self, timeout: Duration) -> Result<Option<Completion>, DriverError> {
        if let Some(c) = self.poll()? {
            return Ok(Some(c));
        }
        self.arm(false);
        if let Some(c) = self.poll()? {
            return Ok(Some(c));
        }
        self.dev.hal().wait_irq(self.vector, timeout)?;
        self.poll()
    }

    /// Writes `CQ_CI` if it changed since the last report.
    fn report(&self) {
        let ci = self.ci.get();
        if ci != self.reported.get() {
            self.dev.hal().write32(regs::cq_ci(self.cqn), ci);
            self.reported.set(ci);
        }
    }

    /// Starts the consumer index elsewhere, to test the phase across laps and the wrap.
    #[cfg(test)]
    fn set_ci(&self, ci: u32) {
        self.ci.set(ci);
        self.reported.set(ci);
    }
}

impl<H: Hal> Drop for CompletionQueue<'_, H> {
    /// Disables the CQ (WRITE_CQ with ENABLE clear) before the ring is freed. If the
    /// device does not confirm, the CQN stays out of the pool; the ring is unmapped
    /// anyway, so a late CQE faults at the IOMMU rather than landing in freed memory.
    fn drop(&mut self) {
        let ctx = CqContext { log_size: self.log_size, enable: false, vector: self.vector, base: self.ring.iova() };
        if self.dev.command(CmdOpcode::WriteCq, self.cqn, &ctx.to_words()).is_ok() {
            self.dev.free_number(Resource::CompletionQueue, self.cqn);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::FakeHal;
    use crate::testing::model_device;

    /// Writes `cqe` where the device would write absolute entry `index`, phase included.
    fn device_writes(cq: &CompletionQueue<'_, FakeHal>, index: u32, mut cqe: Cqe) {
        cqe.phase = cqe_phase(index, cq.log_size);
        let offset = ring_slot(index, cq.log_size) as usize * CQE_LEN;
        cq.ring.write_bytes(offset, &cqe.encode());
    }

    fn send_done(wr_id: u64) -> Cqe {
        Cqe::new(wr_id, 3, CqeOpcode::Send, CqeStatus::Success)
    }

    fn ci_writes(dev: &Device<FakeHal>, cqn: u32) -> Vec<u32> {
        dev.hal().take_writes().into_iter().filter(|&(o, _)| o == regs::cq_ci(cqn)).map(|(_, v)| v).collect()
    }

    #[test]
    fn poll_follows_the_phase_over_several_laps() {
        let dev = model_device();
        let cq = CompletionQueue::new(&dev, 1, 0).expect("cq");
        assert_eq!(cq.poll().expect("poll"), None, "a zeroed ring holds no entry");
        for index in 0..6u32 {
            device_writes(&cq, index, send_done(index.into()));
            let c = cq.poll().expect("poll").expect("a new entry");
            assert_eq!((c.wr_id, c.qpn, c.opcode, c.status), (index.into(), 3, CqeOpcode::Send, CqeStatus::Success));
            // The slot now holds this lap's phase; the next lap's entry is not there yet.
            assert_eq!(cq.poll().expect("poll"), None, "entry {index} read twice");
        }
    }

    #[test]
    fn has_completion_sees_a_new_entry_without_taking_it() {
        let dev = model_device();
        let cq = CompletionQueue::new(&dev, 1, 0).expect("cq");
        for index in 0..5u32 {
            assert!(!cq.has_completion(), "lap {index}: nothing new yet");
            device_writes(&cq, index, send_done(index.into()));
            assert!(cq.has_completion(), "entry {index} is new");
            assert!(cq.has_completion(), "looking does not take it");
            assert_eq!(cq.poll().expect("poll").map(|c| c.wr_id), Some(index.into()));
        }
        assert!(!cq.has_completion());
    }

    #[test]
    fn poll_follows_the_phase_across_the_u32_wrap() {
        let dev = model_device();
        let cq = CompletionQueue::new(&dev, 2, 0).expect("cq");
        let start = u32::MAX - 1;
        cq.set_ci(start);
        // The stale entries of the previous lap must not look new.
        for index in start.wrapping_sub(4)..start {
            device_writes(&cq, index, send_done(0xdead));
        }
        assert_eq!(cq.poll().expect("poll"), None);
        for i in 0..4u32 {
            device_writes(&cq, start.wrapping_add(i), send_done(i.into()));
        }
        let ids: Vec<u64> = std::iter::from_fn(|| cq.poll().expect("poll")).map(|c| c.wr_id).collect();
        assert_eq!(ids, [0, 1, 2, 3]);
    }

    #[test]
    fn the_consumer_index_is_reported_per_quarter_ring_and_when_empty() {
        let dev = model_device();
        let cq = CompletionQueue::new(&dev, 3, 0).expect("cq");
        dev.hal().take_writes();
        for index in 0..3 {
            device_writes(&cq, index, send_done(0));
        }
        assert!(cq.poll().expect("poll").is_some());
        assert_eq!(ci_writes(&dev, cq.cqn()), [] as [u32; 0], "one entry is less than a quarter of 8");
        assert!(cq.poll().expect("poll").is_some());
        assert_eq!(ci_writes(&dev, cq.cqn()), [2]);
        assert!(cq.poll().expect("poll").is_some());
        assert_eq!(cq.poll().expect("poll"), None);
        assert_eq!(ci_writes(&dev, cq.cqn()), [3], "reported when found empty");
        assert_eq!(cq.poll().expect("poll"), None);
        assert_eq!(ci_writes(&dev, cq.cqn()), [] as [u32; 0], "not again while unchanged");
    }

    #[test]
    fn a_malformed_entry_is_consumed_and_reported() {
        let dev = model_device();
        let cq = CompletionQueue::new(&dev, 2, 0).expect("cq");
        let mut bytes = send_done(1).encode();
        bytes[cqe_fields::STATUS.byte() as usize] = 0x77;
        bytes[31] = 1; // phase of lap 0
        cq.ring.write_bytes(0, &bytes);
        device_writes(&cq, 1, send_done(2));
        let err = cq.poll().expect_err("status 0x77 is not a CQE status");
        assert!(matches!(err, DriverError::MalformedCqe { index: 0, .. }), "{err}");
        assert_eq!(cq.poll().expect("poll").map(|c| c.wr_id), Some(2));
    }

    #[test]
    fn completions_carry_the_optional_fields() {
        let dev = model_device();
        let cq = CompletionQueue::new(&dev, 2, 0).expect("cq");
        let mut cqe = Cqe::new(7, 9, CqeOpcode::Recv, CqeStatus::Success);
        cqe.byte_len = 100;
        cqe.solicited = true;
        cqe.invalidated = Some(0x1234_5601);
        device_writes(&cq, 0, cqe);
        let c = cq.poll().expect("poll").expect("entry");
        assert_eq!(
            c,
            Completion {
                wr_id: 7,
                qpn: 9,
                opcode: CqeOpcode::Recv,
                status: CqeStatus::Success,
                byte_len: 100,
                solicited: true,
                invalidated: Some(0x1234_5601),
                imm: None,
            }
        );
        assert!(c.is_ok());
    }

    #[test]
    fn wait_arms_then_takes_the_interrupt_and_polls() {
        let dev = model_device();
        let cq = CompletionQueue::new(&dev, 2, 1).expect("cq");
        dev.hal().take_writes();
        assert_eq!(cq.wait(Duration::ZERO).expect("wait"), None);
        let arm = dev.hal().take_writes();
        assert_eq!(arm, [(regs::cq_arm(cq.cqn()), 1)], "armed for the next completion");
        device_writes(&cq, 0, send_done(5));
        dev.hal().raise_irq(1);
        assert_eq!(cq.wait(Duration::ZERO).expect("wait").map(|c| c.wr_id), Some(5));
        cq.arm(true);
        assert_eq!(dev.hal().take_writes().last(), Some(&(regs::cq_arm(cq.cqn()), 2)), "solicited only");
    }

    #[test]
    fn the_context_names_the_ring_and_dropping_disables_it() {
        let dev = model_device();
        let cq = CompletionQueue::new(&dev, 4, 3).expect("cq");
        let cqn = cq.cqn();
        let (ctx, _) = dev.query_cq(cqn).expect("query");
        assert_eq!(ctx, CqContext { log_size: 4, enable: true, vector: 3, base: cq.ring.iova() });
        assert_eq!(dev.hal().live_regions(), 1);
        drop(cq);
        assert!(!dev.query_cq(cqn).expect("query").0.enable);
        assert_eq!(dev.hal().live_regions(), 0);
        assert_eq!(CompletionQueue::new(&dev, 4, 3).expect("cq").cqn(), cqn, "the CQN is free again");
    }

    #[test]
    fn cq_numbers_run_out_with_a_typed_error() {
        let dev = model_device();
        let cqs: Vec<_> = (0..dev.info().num_cqs).map(|_| CompletionQueue::new(&dev, 0, 0).expect("cq")).collect();
        let err = CompletionQueue::new(&dev, 0, 0).err().expect("no CQN left");
        assert!(matches!(err, DriverError::Exhausted(Resource::CompletionQueue)), "{err}");
        assert_eq!(dev.hal().live_regions(), cqs.len(), "the failed CQ's ring was freed");
    }
}
