//! The device: identity checks at open, global control, the command interface, and the
//! numbering of the objects (QPs, CQs, MRs, PDs) the other modules create.
use std::cell::RefCell;
use std::collections::HashMap;

use rnic_proto::host::context::{CqContext, CqStatus, MrContext, QpContext, QpStatus, MAX_MR_INDEX};
use rnic_proto::host::regs::{self, cmd, cmd_status, control, features, status, version, CmdOpcode};

use crate::dm::{DeviceMemory, DmAllocator};
use crate::error::{DriverError, Rejection, Resource};
use crate::pool::IndexPool;
use crate::wr::LocalBuffer;
use crate::{DmaBuffer, Hal};

/// How often the driver reads `CMD_STATUS` before it gives up on a command. A query
/// takes a few device cycles; a command that changes a context also waits for the DMA
/// already asked for to complete (the fence, docs/REGISTERS.md), at most the memory's
/// round trip for each request in flight (longer only while a payload read waits for a
/// stalled link to make room). One poll is a full register round trip
/// (hundreds of nanoseconds over PCIe, several cycles in simulation), so a few polls
/// normally find it done; the budget only bounds the wait on a wedged device.
const COMMAND_POLLS: u32 = 100_000;

/// Protection domain numbers are 16 bits in every context.
const NUM_PDS: u32 = 1 << 16;

/// What the identity and capability registers report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// `VERSION`: `major << 16 | minor`.
    pub version: u32,
    /// Octets per datapath cycle.
    pub datapath_bytes: u32,
    /// QPs: QPNs are `0..num_qps`.
    pub num_qps: u32,
    /// CQs: CQNs are `0..num_cqs`.
    pub num_cqs: u32,
    /// MR table entries.
    pub num_mrs: u32,
    /// Optional features.
    pub features: Features,
    /// Octets of device memory (0 without the feature).
    pub dm_size: u32,
    /// IOVA of the device memory's first octet.
    pub dm_base: u64,
}

/// The `FEATURES` bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Features {
    /// MPA CRC32c.
    pub crc: bool,
    /// MPA markers.
    pub markers: bool,
    /// RFC 7306 atomics.
    pub atomics: bool,
    /// RFC 7306 Immediate Data.
    pub immediate: bool,
    /// Device memory: MRs in on-chip RAM.
    pub device_memory: bool,
}

impl Features {
    fn from_word(w: u32) -> Self {
        let bit = |f: rnic_proto::host::Field| f.get_word(&[w]) != 0;
        Features {
            crc: bit(features::CRC),
            markers: bit(features::MARKERS),
            atomics: bit(features::ATOMICS),
            immediate: bit(features::IMMEDIATE),
            device_memory: bit(features::DEVICE_MEMORY),
        }
    }
}

/// The `STATUS` bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceStatus {
    /// The engines are enabled.
    pub enabled: bool,
    /// No work in flight.
    pub idle: bool,
}

/// What the driver knows of a live memory region: enough to check the local buffers of
/// posted work before the device sees them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LiveMr {
    /// Its protection domain.
    pub(crate) pd: u16,
    /// Tagged offset of its first octet.
    pub(crate) va: u64,
    /// Octets.
    pub(crate) len: u64,
    /// LOCAL_WRITE.
    pub(crate) local_write: bool,
}

/// An opened RNIC. Objects borrow it (`&Device`), so the borrow checker keeps the
/// device, and with it the backend and its DMA memory, alive as long as any object.
pub struct Device<H: Hal> {
    hal: H,
    info: DeviceInfo,
    qpns: IndexPool,
    cqns: IndexPool,
    mr_indices: IndexPool,
    pdns: IndexPool,
    /// The last key handed out per MR index (0: never used).
    mr_keys: RefCell<Vec<u8>>,
    /// The registered MRs by lkey. [`crate::Sge`]s are plain values that outlive their
    /// region, so posting checks them here: one hash lookup per local buffer.
    live_mrs: RefCell<HashMap<u32, LiveMr>>,
    dm: DmAllocator,
}

impl<H: Hal> Device<H> {
    /// Opens the RNIC behind `hal`: checks `ID` and the major `VERSION` (minor versions
    /// only add), and reads the geometry. The engines stay as they are; see
    /// [`Device::enable`].
    pub fn open(hal: H) -> Result<Self, DriverError> {
        let id = hal.read32(regs::ID);
        if id != regs::ID_VALUE {
            return Err(DriverError::NotAnRnic(id));
        }
        let v = hal.read32(regs::VERSION);
        if version::MAJOR.get_word(&[v]) != version::MAJOR.get_word(&[regs::VERSION_VALUE]) {
            return Err(DriverError::UnsupportedVersion { found: v, supported: regs::VERSION_VALUE });
        }
        let geometry = |register: &'static str, offset: u32, max: u32| {
            let value = hal.read32(offset);
            if value > max {
                return Err(DriverError::BadGeometry { register, value, max });
            }
            Ok(value)
        };
        let info = DeviceInfo {
            version: v,
            datapath_bytes: hal.read32(regs::DATAPATH_BYTES),
            num_qps: geometry("NUM_QPS", regs::NUM_QPS, regs::MAX_QPS)?,
            num_cqs: geometry("NUM_CQS", regs::NUM_CQS, regs::MAX_CQS)?,
            num_mrs: geometry("NUM_MRS", regs::NUM_MRS, MAX_MR_INDEX + 1)?,
            features: Features::from_word(hal.read32(regs::FEATURES)),
            dm_size: 0,
            dm_base: 0,
        };
        let info = match info.features.device_memory {
            true => DeviceInfo {
                dm_size: hal.read32(regs::DM_SIZE),
                dm_base: u64::from(hal.read32(regs::DM_BASE_HI)) << 32 | u64::from(hal.read32(regs::DM_BASE_LO)),
                ..info
            },
            false => info,
        };
        Ok(Device {
            hal,
            qpns: IndexPool::new(info.num_qps),
            cqns: IndexPool::new(info.num_cqs),
            mr_indices: IndexPool::new(info.num_mrs),
            pdns: IndexPool::new(NUM_PDS),
            info,
            mr_keys: RefCell::new(Vec::new()),
            live_mrs: RefCell::new(HashMap::new()),
            dm: DmAllocator::new(info.dm_size),
        })
    }

    /// The backend.
    pub fn hal(&self) -> &H {
        &self.hal
    }

    /// What the device reported at open.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// Lets the engines run (`CONTROL.ENABLE`).
    pub fn enable(&self) {
        self.hal.write32(regs::CONTROL, control_word(true));
    }

    /// Stops the engines fetching new work.
    pub fn disable(&self) {
        self.hal.write32(regs::CONTROL, control_word(false));
    }

    /// `STATUS`.
    pub fn status(&self) -> DeviceStatus {
        let w = [self.hal.read32(regs::STATUS)];
        DeviceStatus { enabled: status::ENABLED.get_word(&w) != 0, idle: status::IDLE.get_word(&w) != 0 }
    }

    /// `len` octets of zeroed DMA memory, freed when the buffer is dropped: for data
    /// buffers to register with [`crate::MemoryRegion::register`].
    pub fn alloc_dma(&self, len: usize) -> Result<DmaBuffer<'_, H>, DriverError> {
        Ok(DmaBuffer::new(&self.hal, len)?)
    }

    /// `len` octets of zeroed device memory (on-chip RAM), freed when dropped: for MRs
    /// that atomics, Reads and Writes reach without a host round trip
    /// ([`crate::MemoryRegion::register_device`]).
    pub fn alloc_device_memory(&self, len: usize) -> Result<DeviceMemory<'_, H>, DriverError> {
        if !self.info.features.device_memory {
            return Err(DriverError::Unsupported("device memory"));
        }
        DeviceMemory::alloc(self, len)
    }

    pub(crate) fn dm(&self) -> &DmAllocator {
        &self.dm
    }

    /// QUERY_QP: QP `qpn`'s context and status as the device holds them.
    pub fn query_qp(&self, qpn: u32) -> Result<(QpContext, QpStatus), DriverError> {
        let w = self.command(CmdOpcode::QueryQp, qpn, &[0; 16])?;
        Ok((QpContext::from_words(&w).map_err(DriverError::BadContext)?, QpStatus::from_words(&w)))
    }

    /// QUERY_CQ: CQ `cqn`'s context and status.
    pub fn query_cq(&self, cqn: u32) -> Result<(CqContext, CqStatus), DriverError> {
        let w = self.command(CmdOpcode::QueryCq, cqn, &[0; 16])?;
        Ok((CqContext::from_words(&w).map_err(DriverError::BadContext)?, CqStatus::from_words(&w)))
    }

    /// QUERY_MR: MR table entry `index`.
    pub fn query_mr(&self, index: u32) -> Result<MrContext, DriverError> {
        let w = self.command(CmdOpcode::QueryMr, index, &[0; 16])?;
        MrContext::from_words(&w).map_err(DriverError::BadContext)
    }

    /// Runs any command, opcode and data unchecked, for bring-up and tests. It bypasses
    /// the driver's bookkeeping: an object changed this way no longer matches what the
    /// driver's handle for it believes. Returns `CMD_DATA` afterwards.
    pub fn raw_command(&self, opcode: u8, index: u32, data: &[u32; 16]) -> Result<[u32; 16], DriverError> {
        self.run_command(opcode, index, data, true)
    }

    /// Runs a command: `CMD_DATA`, then `CMD`, then polls `CMD_STATUS` until BUSY clears.
    /// Returns `CMD_DATA` afterwards for a query, and `data` itself otherwise (reading
    /// 16 registers back is a round trip each, and only queries change them).
    pub(crate) fn command(&self, op: CmdOpcode, index: u32, data: &[u32; 16]) -> Result<[u32; 16], DriverError> {
        let query = matches!(op, CmdOpcode::QueryQp | CmdOpcode::QueryCq | CmdOpcode::QueryMr);
        self.run_command(op.code(), index, data, query)
    }

    fn run_command(&self, opcode: u8, index: u32, data: &[u32; 16], read_back: bool) -> Result<[u32; 16], DriverError> {
        if !cmd::INDEX.fits(index.into()) {
            return Err(DriverError::IndexTooLarge(index));
        }
        for (i, &w) in (0..).zip(data) {
            self.hal.write32(regs::cmd_data(i), w);
        }
        let mut word = [0u32];
        cmd::OPCODE.set_word(&mut word, opcode.into());
        cmd::INDEX.set_word(&mut word, index.into());
        self.hal.write32(regs::CMD, word[0]);
        let done = (0..COMMAND_POLLS)
            .map(|_| [self.hal.read32(regs::CMD_STATUS)])
            .find(|s| cmd_status::BUSY.get_word(s) == 0)
            .ok_or(DriverError::CommandTimeout { opcode, index, polls: COMMAND_POLLS })?;
        if let Some(reason) = Rejection::from_code(cmd_status::RESULT.get_word(&done) as u8) {
            return Err(DriverError::Rejected { opcode, index, reason });
        }
        if !read_back {
            return Ok(*data);
        }
        Ok(std::array::from_fn(|i| self.hal.read32(regs::cmd_data(i as u32))))
    }

    /// A random key for MR `index` that differs from the last one it had, so that STags of
    /// its earlier registrations stop matching and a peer cannot predict the next one
    /// (RFC 5040 §8.1.1, CHECKLIST SEC-08). Key 0 is skipped: a zeroed STag then never
    /// names a valid region.
    pub(crate) fn next_mr_key(&self, index: u32) -> u8 {
        let mut keys = self.mr_keys.borrow_mut();
        let i = index as usize;
        if keys.len() <= i {
            keys.resize(i + 1, 0);
        }
        let previous = keys[i];
        keys[i] = std::iter::repeat_with(random_octet).find(|&k| k != 0 && k != previous).expect("endless");
        keys[i]
    }

    /// Records a registered MR, for [`Device::check_local`].
    pub(crate) fn mr_registered(&self, lkey: u32, mr: LiveMr) {
        self.live_mrs.borrow_mut().insert(lkey, mr);
    }

    /// Forgets an MR that is being deregistered.
    pub(crate) fn mr_deregistered(&self, lkey: u32) {
        self.live_mrs.borrow_mut().remove(&lkey);
    }

    /// Checks a local buffer of work for QP `qpn` (of PD `pd`) against the live MRs, in
    /// the device's order: the lkey, the PD, the right, the bounds. The device checks the
    /// same again; this turns a user mistake into an error before anything is posted,
    /// instead of a LOCAL_PROTECTION completion and a QP in ERROR.
    pub(crate) fn check_local(&self, qpn: u32, pd: u16, buf: &LocalBuffer) -> Result<(), DriverError> {
        let lkey = buf.lkey;
        let mr = *self.live_mrs.borrow().get(&lkey).ok_or(DriverError::UnknownLkey { lkey })?;
        if mr.pd != pd {
            return Err(DriverError::WrongPd { qpn, lkey, mr_pd: mr.pd, qp_pd: pd });
        }
        if buf.write && !mr.local_write {
            return Err(DriverError::NoLocalWrite { lkey });
        }
        // In u128, so that a range running past 2^64 is simply out of bounds.
        let end = u128::from(buf.addr) + u128::from(buf.len);
        if buf.addr < mr.va || end > u128::from(mr.va) + u128::from(mr.len) {
            return Err(DriverError::SgeOutOfBounds { lkey, addr: buf.addr, len: buf.len, va: mr.va, size: mr.len });
        }
        Ok(())
    }

    /// A fresh number of `kind`.
    pub(crate) fn alloc_number(&self, kind: Resource) -> Result<u32, DriverError> {
        self.pool(kind).alloc().ok_or(DriverError::Exhausted(kind))
    }

    /// Gives a number back.
    pub(crate) fn free_number(&self, kind: Resource, n: u32) {
        self.pool(kind).free(n)
    }

    fn pool(&self, kind: Resource) -> &IndexPool {
        match kind {
            Resource::QueuePair => &self.qpns,
            Resource::CompletionQueue => &self.cqns,
            Resource::MemoryRegion => &self.mr_indices,
            Resource::ProtectionDomain => &self.pdns,
        }
    }

    /// Whether `other` is this very device (objects of two devices must not mix).
    pub(crate) fn is(&self, other: &Device<H>) -> bool {
        std::ptr::eq(self, other)
    }
}

fn control_word(enable: bool) -> u32 {
    let mut w = [0u32];
    control::ENABLE.set_word(&mut w, enable.into());
    w[0]
}

/// An octet no peer can predict: SipHash under the process's random keys (std's
/// `RandomState`, which moves its key on for every new state).
fn random_octet() -> u8 {
    use std::hash::{BuildHasher, Hasher, RandomState};
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u8(0);
    hasher.finish() as u8
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::FakeHal;
    use crate::testing::model_device;

    /// A fake with the identity registers of an RNIC and nothing answering commands.
    fn identity_only() -> FakeHal {
        let hal = FakeHal::new(1);
        for (offset, value) in [
            (regs::ID, regs::ID_VALUE),
            (regs::VERSION, regs::VERSION_VALUE),
            (regs::DATAPATH_BYTES, 8),
            (regs::NUM_QPS, 64),
            (regs::NUM_CQS, 32),
            (regs::NUM_MRS, 256),
            (regs::FEATURES, 0b0101),
        ] {
            hal.write32(offset, value);
        }
        hal
    }

    #[test]
    fn open_reads_the_geometry_and_features() {
        let dev = Device::open(identity_only()).expect("open");
        assert_eq!(
            *dev.info(),
            DeviceInfo {
                version: regs::VERSION_VALUE,
                datapath_bytes: 8,
                num_qps: 64,
                num_cqs: 32,
                num_mrs: 256,
                features: Features { crc: true, markers: false, atomics: true, immediate: false, device_memory: false },
                dm_size: 0,
                dm_base: 0,
            }
        );
    }

    #[test]
    fn a_boxed_backend_chosen_at_run_time_is_a_backend() {
        let hal: Box<dyn Hal> = Box::new(identity_only());
        let dev = Device::open(hal).expect("open");
        assert_eq!(dev.info().num_cqs, 32);
        let buf = dev.alloc_dma(64).expect("dma");
        buf.write_u32(0, 7);
        assert_eq!(buf.read_u32(0), 7);
    }

    #[test]
    fn open_refuses_another_device_or_major_version_and_accepts_a_newer_minor() {
        let hal = identity_only();
        hal.write32(regs::ID, 0xffff_ffff);
        assert!(matches!(Device::open(hal), Err(DriverError::NotAnRnic(0xffff_ffff))));
        let hal = identity_only();
        hal.write32(regs::VERSION, 0x0002_0000);
        assert!(matches!(Device::open(hal), Err(DriverError::UnsupportedVersion { found: 0x0002_0000, .. })));
        let hal = identity_only();
        hal.write32(regs::VERSION, 0x0001_0003);
        assert_eq!(Device::open(hal).expect("minor 3").info().version, 0x0001_0003);
    }

    #[test]
    fn open_refuses_more_objects_than_the_interface_addresses() {
        let hal = identity_only();
        hal.write32(regs::NUM_QPS, regs::MAX_QPS + 1);
        let err = Device::open(hal).err().expect("too many QPs");
        assert!(matches!(err, DriverError::BadGeometry { register: "NUM_QPS", .. }), "{err}");
    }

    #[test]
    fn enable_and_disable_write_control_and_status_is_decoded() {
        let dev = Device::open(identity_only()).expect("open");
        dev.enable();
        dev.disable();
        let control: Vec<_> = dev.hal().take_writes().into_iter().filter(|&(o, _)| o == regs::CONTROL).collect();
        assert_eq!(control, [(regs::CONTROL, 1), (regs::CONTROL, 0)]);
        dev.hal().write32(regs::STATUS, 0b10);
        assert_eq!(dev.status(), DeviceStatus { enabled: false, idle: true });
    }

    #[test]
    fn a_command_that_stays_busy_times_out() {
        let dev = Device::open(identity_only()).expect("open");
        dev.hal().write32(regs::CMD_STATUS, 1);
        let err = dev.query_mr(0).expect_err("busy forever");
        assert!(matches!(err, DriverError::CommandTimeout { opcode: 0x06, index: 0, polls: COMMAND_POLLS }), "{err}");
    }

    #[test]
    fn results_other_than_ok_are_typed_rejections() {
        let dev = Device::open(identity_only()).expect("open");
        dev.hal().write32(regs::CMD_STATUS, 0x0900);
        let err = dev.raw_command(0x01, 5, &[0; 16]).expect_err("result 9");
        assert!(matches!(err, DriverError::Rejected { opcode: 1, index: 5, reason: Rejection::Unknown(9) }), "{err}");

        let dev = model_device();
        let err = dev.raw_command(0x42, 0, &[0; 16]).expect_err("no such opcode");
        assert!(matches!(err, DriverError::Rejected { opcode: 0x42, reason: Rejection::BadOpcode, .. }), "{err}");
        let err = dev.query_mr(dev.info().num_mrs).expect_err("no such MR");
        assert!(matches!(err, DriverError::Rejected { reason: Rejection::BadIndex, .. }), "{err}");
        let err = dev.raw_command(CmdOpcode::InvalidateMr.code(), 0, &[0; 16]).expect_err("MR 0 is not valid");
        assert!(matches!(err, DriverError::Rejected { reason: Rejection::BadState, .. }), "{err}");
        let mut misaligned = CqContext { log_size: 2, enable: true, vector: 0, base: 0x1010 }.to_words();
        let err = dev.raw_command(CmdOpcode::WriteCq.code(), 0, &misaligned).expect_err("misaligned");
        assert!(matches!(err, DriverError::Rejected { reason: Rejection::BadValue, .. }), "{err}");
        misaligned[1] = 0x1000;
        dev.raw_command(CmdOpcode::WriteCq.code(), 0, &misaligned).expect("aligned");
    }

    #[test]
    fn a_command_writes_data_then_cmd_and_reads_data_back_only_for_queries() {
        let dev = crate::testing::model_device_patched(|_, out| out[15] = 0xabcd);
        dev.hal().take_writes();
        let data = MrContext { key: 1, valid: true, length: 8, ..MrContext::default() }.to_words();
        assert_eq!(dev.command(CmdOpcode::WriteMr, 3, &data).expect("write"), data, "a write's data is its own");
        let writes = dev.hal().take_writes();
        let expected: Vec<_> =
            (0..16).map(|i| (regs::cmd_data(i), data[i as usize])).chain([(regs::CMD, 0x305)]).collect();
        assert_eq!(writes, expected);
        assert_eq!(
            dev.command(CmdOpcode::QueryMr, 3, &[0; 16]).expect("query")[15],
            0xabcd,
            "a query's is the device's"
        );
        assert!(matches!(dev.raw_command(0, 1 << 24, &data), Err(DriverError::IndexTooLarge(0x100_0000))));
    }

    #[test]
    fn sec_08_mr_keys_change_on_every_registration_skip_zero_and_have_no_stride() {
        let dev = model_device();
        let keys: Vec<u8> = (0..10_000).map(|_| dev.next_mr_key(7)).collect();
        assert!(!keys.contains(&0));
        assert!(keys.windows(2).all(|w| w[0] != w[1]), "a new key every time");
        let strides: std::collections::HashSet<u8> = keys.windows(2).map(|w| w[1].wrapping_sub(w[0])).collect();
        let distinct: std::collections::HashSet<u8> = keys.iter().copied().collect();
        assert!(strides.len() > 200 && distinct.len() == 255, "{} strides, {} keys", strides.len(), distinct.len());
        let other: Vec<u8> = (0..64).map(|_| dev.next_mr_key(8)).collect();
        assert_ne!(other[..], keys[..64], "keys are per index and not a shared sequence");
    }
}
