//! BAR0: the register map (AXI4-Lite slave, 32-bit data, 16-bit byte address, 64 KiB).
//!
//! Reads of write-only or unmapped offsets return 0; writes to read-only or
//! unmapped offsets are ignored. Both answer OKAY on AXI4-Lite, so a driver
//! bug never hangs the bus.
//!
//! Objects (QPs, CQs, MRs) are configured through one command interface: the
//! host fills `CMD_DATA` with a context, writes `CMD` (opcode and index),
//! polls `CMD_STATUS` until BUSY clears and reads the result (and, for a
//! query, `CMD_DATA`). Work is announced through per-queue doorbells that
//! carry absolute, free-running 32-bit producer or consumer indices.

use super::field::Field;

/// Size of BAR0 in octets (a 16-bit byte address).
pub const BAR0_LEN: u32 = 0x1_0000;

/// Identity: reads [`ID_VALUE`].
pub const ID: u32 = 0x000;
/// Interface version: `major << 16 | minor`, reads [`VERSION_VALUE`].
pub const VERSION: u32 = 0x004;
/// W, the octets per cycle of the datapath.
pub const DATAPATH_BYTES: u32 = 0x008;
/// Number of QPs.
pub const NUM_QPS: u32 = 0x00C;
/// Number of CQs.
pub const NUM_CQS: u32 = 0x010;
/// Number of MR table entries.
pub const NUM_MRS: u32 = 0x014;
/// Optional features, see [`features`].
pub const FEATURES: u32 = 0x018;
/// Octets of device memory (0: none), see [`DEVICE_MEMORY`].
pub const DM_SIZE: u32 = 0x01C;
/// Global control, see [`control`].
pub const CONTROL: u32 = 0x020;
/// Global status, see [`status`].
pub const STATUS: u32 = 0x024;
/// Low word of the device memory's IOVA (its first octet as the MR table names it).
pub const DM_BASE_LO: u32 = 0x028;
/// High word of the device memory's IOVA.
pub const DM_BASE_HI: u32 = 0x02C;
/// Command: writing it starts a command, see [`cmd`].
pub const CMD: u32 = 0x030;
/// Command status, see [`cmd_status`].
pub const CMD_STATUS: u32 = 0x034;
/// First of the [`CMD_DATA_WORDS`] command data words.
pub const CMD_DATA: u32 = 0x040;
/// Number of command data words.
pub const CMD_DATA_WORDS: usize = 16;

/// Offset of command data word `i` (0 to 15).
pub const fn cmd_data(i: u32) -> u32 {
    CMD_DATA + 4 * i
}

/// Base of the QP doorbells: `SQ_PI[qpn]` and `RQ_PI[qpn]`.
pub const QP_DOORBELLS: u32 = 0x1000;
/// Base of the CQ doorbells: `CQ_CI[cqn]` and `CQ_ARM[cqn]`.
pub const CQ_DOORBELLS: u32 = 0x2000;
/// Octets between the doorbell pairs of consecutive QPs or CQs.
pub const DOORBELL_STRIDE: u32 = 8;
/// Octets of each doorbell page.
pub const DOORBELL_PAGE: u32 = 0x1000;
/// Most QPs the doorbell window can address (its 4 KiB hold 512 pairs).
pub const MAX_QPS: u32 = DOORBELL_PAGE / DOORBELL_STRIDE;
/// Most CQs the doorbell window can address (its 4 KiB hold 512 pairs).
pub const MAX_CQS: u32 = DOORBELL_PAGE / DOORBELL_STRIDE;
/// The stream rings' registers (`TXR_*` and `RXR_*`): each ring has a 32-octet page, see
/// [`ring`].
pub const STREAM_RINGS: u32 = 0x3000;
/// The TX stream ring's page: the RNIC writes its transmit stream into host memory.
pub const TX_RING: u32 = STREAM_RINGS;
/// The RX stream ring's page: the RNIC reads its receive stream from host memory.
pub const RX_RING: u32 = STREAM_RINGS + 0x20;

/// Registers of a stream ring, as offsets within its page.
pub mod ring {
    /// Base IOVA, bits 31:0 (8-octet aligned).
    pub const BASE_LO: u32 = 0x00;
    /// Base IOVA, bits 63:32.
    pub const BASE_HI: u32 = 0x04;
    /// log2 of the ring's size in octets; writing it restarts the ring at position 0,
    /// and 0 turns it off (the stream then uses the RNIC's stream port).
    pub const SIZE_LOG2: u32 = 0x08;
    /// Producer position (free-running octets): the RNIC's on TX, the host's on RX.
    pub const PI: u32 = 0x0C;
    /// Consumer position (free-running octets): the host's on TX, the RNIC's on RX.
    pub const CI: u32 = 0x10;
    /// Bit 0: the ring stopped (a DMA error, or on RX a bad record).
    pub const STATUS: u32 = 0x14;
    /// Octets of a record's header (length, stream id, zero).
    pub const RECORD_HEADER: usize = 8;
    /// Smallest ring size the driver uses (log2 octets).
    pub const MIN_SIZE_LOG2: u32 = 12;
    /// Largest ring size the driver uses (log2 octets).
    pub const MAX_SIZE_LOG2: u32 = 28;
}

/// The device memory window: BAR0 offset `DEVICE_MEMORY + o` is octet `o` of the on-chip
/// memory (32-bit accesses), up to the end of BAR0 or of the memory.
pub const DEVICE_MEMORY: u32 = 0x8000;
/// Octets of device memory the window reaches.
pub const DEVICE_MEMORY_WINDOW: u32 = BAR0_LEN - DEVICE_MEMORY;

/// `SQ_PI[qpn]`: the SQ producer index of QP `qpn` (absolute, free-running).
pub const fn sq_pi(qpn: u32) -> u32 {
    QP_DOORBELLS + DOORBELL_STRIDE * qpn
}

/// `RQ_PI[qpn]`: the RQ producer index of QP `qpn`.
pub const fn rq_pi(qpn: u32) -> u32 {
    QP_DOORBELLS + DOORBELL_STRIDE * qpn + 4
}

/// `CQ_CI[cqn]`: the consumer index of CQ `cqn` (absolute, free-running).
pub const fn cq_ci(cqn: u32) -> u32 {
    CQ_DOORBELLS + DOORBELL_STRIDE * cqn
}

/// `CQ_ARM[cqn]`: arms CQ `cqn` for one interrupt, see [`cq_arm_bits`].
pub const fn cq_arm(cqn: u32) -> u32 {
    CQ_DOORBELLS + DOORBELL_STRIDE * cqn + 4
}

/// The value of `ID`: "RNIC" in ASCII.
pub const ID_VALUE: u32 = 0x524E_4943;
/// The value of `VERSION`: 1.0.
pub const VERSION_VALUE: u32 = 0x0001_0000;
/// Default datapath width W in octets.
pub const DEFAULT_DATAPATH_BYTES: u32 = 8;
/// Default number of QPs.
pub const DEFAULT_NUM_QPS: u32 = 64;
/// Default number of CQs.
pub const DEFAULT_NUM_CQS: u32 = 64;
/// Default number of MR table entries.
pub const DEFAULT_NUM_MRS: u32 = 256;
/// Default device memory: 32 KiB, all of it in the BAR0 window.
pub const DEFAULT_DM_SIZE: u32 = 0x8000;
/// The device memory's IOVA in the default build: 2^62, above the address width of any
/// IOMMU (57 bits at most), so no host mapping can ever have it.
pub const DEFAULT_DM_BASE: u64 = 1 << 62;

/// How the host may access a register.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    /// Read-only: writes are ignored.
    ReadOnly,
    /// Read-write.
    ReadWrite,
    /// Write-only: reads return 0.
    WriteOnly,
}

impl Access {
    /// The abbreviation the docs use: RO, RW or WO.
    pub fn as_str(self) -> &'static str {
        match self {
            Access::ReadOnly => "RO",
            Access::ReadWrite => "RW",
            Access::WriteOnly => "WO",
        }
    }
}

/// One fixed register: name, offset, access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegisterInfo {
    /// Name as in the docs.
    pub name: &'static str,
    /// Byte offset in BAR0.
    pub offset: u32,
    /// Host access.
    pub access: Access,
}

const fn reg(name: &'static str, offset: u32, access: Access) -> RegisterInfo {
    RegisterInfo { name, offset, access }
}

/// Every fixed-offset register, in address order (`CMD_DATA` as its first word).
pub const REGISTERS: &[RegisterInfo] = &[
    reg("ID", ID, Access::ReadOnly),
    reg("VERSION", VERSION, Access::ReadOnly),
    reg("DATAPATH_BYTES", DATAPATH_BYTES, Access::ReadOnly),
    reg("NUM_QPS", NUM_QPS, Access::ReadOnly),
    reg("NUM_CQS", NUM_CQS, Access::ReadOnly),
    reg("NUM_MRS", NUM_MRS, Access::ReadOnly),
    reg("FEATURES", FEATURES, Access::ReadOnly),
    reg("DM_SIZE", DM_SIZE, Access::ReadOnly),
    reg("CONTROL", CONTROL, Access::ReadWrite),
    reg("STATUS", STATUS, Access::ReadOnly),
    reg("DM_BASE_LO", DM_BASE_LO, Access::ReadOnly),
    reg("DM_BASE_HI", DM_BASE_HI, Access::ReadOnly),
    reg("CMD", CMD, Access::WriteOnly),
    reg("CMD_STATUS", CMD_STATUS, Access::ReadOnly),
    reg("CMD_DATA", CMD_DATA, Access::ReadWrite),
    reg("TXR_BASE_LO", TX_RING + ring::BASE_LO, Access::ReadWrite),
    reg("TXR_BASE_HI", TX_RING + ring::BASE_HI, Access::ReadWrite),
    reg("TXR_SIZE_LOG2", TX_RING + ring::SIZE_LOG2, Access::ReadWrite),
    reg("TXR_PI", TX_RING + ring::PI, Access::ReadOnly),
    reg("TXR_CI", TX_RING + ring::CI, Access::ReadWrite),
    reg("TXR_STATUS", TX_RING + ring::STATUS, Access::ReadOnly),
    reg("RXR_BASE_LO", RX_RING + ring::BASE_LO, Access::ReadWrite),
    reg("RXR_BASE_HI", RX_RING + ring::BASE_HI, Access::ReadWrite),
    reg("RXR_SIZE_LOG2", RX_RING + ring::SIZE_LOG2, Access::ReadWrite),
    reg("RXR_PI", RX_RING + ring::PI, Access::ReadWrite),
    reg("RXR_CI", RX_RING + ring::CI, Access::ReadOnly),
    reg("RXR_STATUS", RX_RING + ring::STATUS, Access::ReadOnly),
];

/// One array of per-object registers: `base + stride · n`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegisterArray {
    /// Name as in the docs, with the index in brackets.
    pub name: &'static str,
    /// Offset of element 0.
    pub base: u32,
    /// Octets between elements.
    pub stride: u32,
    /// Host access.
    pub access: Access,
}

/// The register arrays: command data and the doorbells.
pub const REGISTER_ARRAYS: &[RegisterArray] = &[
    RegisterArray { name: "CMD_DATA[i]", base: CMD_DATA, stride: 4, access: Access::ReadWrite },
    RegisterArray { name: "SQ_PI[qpn]", base: sq_pi(0), stride: DOORBELL_STRIDE, access: Access::WriteOnly },
    RegisterArray { name: "RQ_PI[qpn]", base: rq_pi(0), stride: DOORBELL_STRIDE, access: Access::WriteOnly },
    RegisterArray { name: "CQ_CI[cqn]", base: cq_ci(0), stride: DOORBELL_STRIDE, access: Access::WriteOnly },
    RegisterArray { name: "CQ_ARM[cqn]", base: cq_arm(0), stride: DOORBELL_STRIDE, access: Access::WriteOnly },
    RegisterArray { name: "DM[i]", base: DEVICE_MEMORY, stride: 4, access: Access::ReadWrite },
];

/// What lives at a BAR0 offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Register {
    /// A fixed register of [`REGISTERS`] (`CMD_DATA` decodes as [`Register::CmdData`]).
    Fixed(RegisterInfo),
    /// `CMD_DATA[i]`.
    CmdData(u32),
    /// `SQ_PI[qpn]`.
    SqPi(u32),
    /// `RQ_PI[qpn]`.
    RqPi(u32),
    /// `CQ_CI[cqn]`.
    CqCi(u32),
    /// `CQ_ARM[cqn]`.
    CqArm(u32),
    /// `DM[i]`: octets `4i … 4i+3` of device memory.
    DeviceMemory(u32),
}

impl Register {
    /// Decodes a byte offset for an RNIC with `num_qps` QPs and `num_cqs`
    /// CQs. `None` for unmapped offsets (including misaligned ones and
    /// doorbells of objects that do not exist).
    pub fn decode(offset: u32, num_qps: u32, num_cqs: u32) -> Option<Register> {
        if !offset.is_multiple_of(4) || offset >= BAR0_LEN {
            return None;
        }
        let data_end = cmd_data(CMD_DATA_WORDS as u32);
        if (CMD_DATA..data_end).contains(&offset) {
            return Some(Register::CmdData((offset - CMD_DATA) / 4));
        }
        if offset >= DEVICE_MEMORY {
            return Some(Register::DeviceMemory((offset - DEVICE_MEMORY) / 4));
        }
        if offset >= STREAM_RINGS {
            return REGISTERS.iter().find(|r| r.offset == offset).map(|r| Register::Fixed(*r));
        }
        if offset >= CQ_DOORBELLS {
            let n = (offset - CQ_DOORBELLS) / DOORBELL_STRIDE;
            let arm = !offset.is_multiple_of(DOORBELL_STRIDE);
            return (n < num_cqs).then_some(if arm { Register::CqArm(n) } else { Register::CqCi(n) });
        }
        if offset >= QP_DOORBELLS {
            let n = (offset - QP_DOORBELLS) / DOORBELL_STRIDE;
            let rq = !offset.is_multiple_of(DOORBELL_STRIDE);
            return (n < num_qps).then_some(if rq { Register::RqPi(n) } else { Register::SqPi(n) });
        }
        REGISTERS.iter().find(|r| r.offset == offset).map(|r| Register::Fixed(*r))
    }

    /// Host access to this register.
    pub fn access(&self) -> Access {
        match self {
            Register::Fixed(r) => r.access,
            Register::CmdData(_) | Register::DeviceMemory(_) => Access::ReadWrite,
            _ => Access::WriteOnly,
        }
    }
}

/// Bits of `VERSION`.
pub mod version {
    use super::Field;
    /// Minor version.
    pub const MINOR: Field = Field::at_word("minor", 0, 0, 16);
    /// Major version.
    pub const MAJOR: Field = Field::at_word("major", 0, 16, 16);
}

/// Bits of `FEATURES`.
pub mod features {
    use super::Field;
    /// MPA CRC32c generation and checking.
    pub const CRC: Field = Field::at_word("crc", 0, 0, 1);
    /// MPA markers.
    pub const MARKERS: Field = Field::at_word("markers", 0, 1, 1);
    /// RFC 7306 atomics.
    pub const ATOMICS: Field = Field::at_word("atomics", 0, 2, 1);
    /// RFC 7306 Immediate Data.
    pub const IMMEDIATE: Field = Field::at_word("immediate", 0, 3, 1);
    /// Device memory: MRs in on-chip RAM (`DM_SIZE`, `DM_BASE_*`).
    pub const DEVICE_MEMORY: Field = Field::at_word("device_memory", 0, 4, 1);
}

/// Bits of `CONTROL`.
pub mod control {
    use super::Field;
    /// Engines run; clearing it stops fetching new work.
    pub const ENABLE: Field = Field::at_word("enable", 0, 0, 1);
}

/// Bits of `STATUS`.
pub mod status {
    use super::Field;
    /// The engines are enabled.
    pub const ENABLED: Field = Field::at_word("enabled", 0, 0, 1);
    /// No work in flight.
    pub const IDLE: Field = Field::at_word("idle", 0, 1, 1);
}

/// Fields of `CMD`.
pub mod cmd {
    use super::Field;
    /// The command, see [`super::CmdOpcode`].
    pub const OPCODE: Field = Field::at_word("opcode", 0, 0, 8);
    /// The object number (QPN, CQN or MR index).
    pub const INDEX: Field = Field::at_word("index", 0, 8, 24);
}

/// Fields of `CMD_STATUS`.
pub mod cmd_status {
    use super::Field;
    /// A command is running.
    pub const BUSY: Field = Field::at_word("busy", 0, 0, 1);
    /// Result of the last command, see [`super::CmdResult`].
    pub const RESULT: Field = Field::at_word("result", 0, 8, 8);
}

/// Bits of `CQ_ARM[cqn]`.
pub mod cq_arm_bits {
    use super::Field;
    /// Interrupt at the next completion.
    pub const NEXT: Field = Field::at_word("next", 0, 0, 1);
    /// Interrupt at the next solicited completion only.
    pub const SOLICITED: Field = Field::at_word("solicited", 0, 1, 1);
}

/// Every register bit field, with the register it belongs to.
pub const REGISTER_FIELDS: &[(&str, Field)] = &[
    ("VERSION", version::MINOR),
    ("VERSION", version::MAJOR),
    ("FEATURES", features::CRC),
    ("FEATURES", features::MARKERS),
    ("FEATURES", features::ATOMICS),
    ("FEATURES", features::IMMEDIATE),
    ("FEATURES", features::DEVICE_MEMORY),
    ("CONTROL", control::ENABLE),
    ("STATUS", status::ENABLED),
    ("STATUS", status::IDLE),
    ("CMD", cmd::OPCODE),
    ("CMD", cmd::INDEX),
    ("CMD_STATUS", cmd_status::BUSY),
    ("CMD_STATUS", cmd_status::RESULT),
    ("CQ_ARM", cq_arm_bits::NEXT),
    ("CQ_ARM", cq_arm_bits::SOLICITED),
];

/// Command opcodes (`CMD` bits 7:0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum CmdOpcode {
    /// Write a QP context (CMD_DATA w0–w7).
    WriteQp = 0x01,
    /// Read a QP context (w0–w7) and its status (w8–w11).
    QueryQp = 0x02,
    /// Write a CQ context (w0–w3).
    WriteCq = 0x03,
    /// Read a CQ context (w0–w3) and its status (w4–w5).
    QueryCq = 0x04,
    /// Write an MR context (w0–w7).
    WriteMr = 0x05,
    /// Read an MR context (w0–w7).
    QueryMr = 0x06,
    /// Invalidate an MR; w0 bits 7:0 must hold its key.
    InvalidateMr = 0x07,
}

impl CmdOpcode {
    /// Every command with its docs name.
    pub const ALL: [(CmdOpcode, &'static str); 7] = [
        (CmdOpcode::WriteQp, "WRITE_QP"),
        (CmdOpcode::QueryQp, "QUERY_QP"),
        (CmdOpcode::WriteCq, "WRITE_CQ"),
        (CmdOpcode::QueryCq, "QUERY_CQ"),
        (CmdOpcode::WriteMr, "WRITE_MR"),
        (CmdOpcode::QueryMr, "QUERY_MR"),
        (CmdOpcode::InvalidateMr, "INVALIDATE_MR"),
    ];

    /// The opcode value.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The `CMD` word for this command on object `index`; `None` when the
    /// index does not fit the 24-bit field.
    pub fn word(self, index: u32) -> Option<u32> {
        cmd::INDEX.fits(u64::from(index)).then(|| {
            let mut w = [0u32];
            cmd::OPCODE.set_word(&mut w, u64::from(self.code()));
            cmd::INDEX.set_word(&mut w, u64::from(index));
            w[0]
        })
    }
}

impl TryFrom<u8> for CmdOpcode {
    type Error = u8;

    /// The command for an opcode value; the value itself when unknown.
    fn try_from(v: u8) -> Result<Self, u8> {
        CmdOpcode::ALL.iter().find(|(op, _)| op.code() == v).map(|(op, _)| *op).ok_or(v)
    }
}

/// Command results (`CMD_STATUS` bits 15:8).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum CmdResult {
    /// Done.
    Ok = 0,
    /// Unknown opcode.
    BadOpcode = 1,
    /// No such object.
    BadIndex = 2,
    /// Not allowed in the object's current state (or, for INVALIDATE_MR,
    /// the key differs or the MR is not valid).
    BadState = 3,
    /// The context holds a value the RNIC cannot use (see
    /// [`super::context::ContextError`]).
    BadValue = 4,
}

impl CmdResult {
    /// Every result with its docs name.
    pub const ALL: [(CmdResult, &'static str); 5] = [
        (CmdResult::Ok, "OK"),
        (CmdResult::BadOpcode, "BAD_OPCODE"),
        (CmdResult::BadIndex, "BAD_INDEX"),
        (CmdResult::BadState, "BAD_STATE"),
        (CmdResult::BadValue, "BAD_VALUE"),
    ];

    /// The result value.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The `CMD_STATUS` word with BUSY clear.
    pub fn status_word(self) -> u32 {
        let mut w = [0u32];
        cmd_status::RESULT.set_word(&mut w, u64::from(self.code()));
        w[0]
    }
}

impl TryFrom<u8> for CmdResult {
    type Error = u8;

    /// The result for a value; the value itself when unknown.
    fn try_from(v: u8) -> Result<Self, u8> {
        CmdResult::ALL.iter().find(|(r, _)| r.code() == v).map(|(r, _)| *r).ok_or(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doorbells_fill_their_windows_exactly() {
        assert_eq!(rq_pi(MAX_QPS - 1) + 4, CQ_DOORBELLS);
        assert_eq!(cq_arm(MAX_CQS - 1) + 4, CQ_DOORBELLS + DOORBELL_PAGE);
        const { assert!(CQ_DOORBELLS + DOORBELL_PAGE <= DEVICE_MEMORY) };
        assert_eq!(cmd_data(15), 0x07C);
    }

    #[test]
    fn decode_knows_every_register() {
        for r in REGISTERS {
            let d = Register::decode(r.offset, 64, 64).unwrap();
            assert_eq!(d.access(), r.access, "{}", r.name);
        }
        assert_eq!(Register::decode(0x044, 64, 64), Some(Register::CmdData(1)));
        assert_eq!(Register::decode(0x1000 + 8 * 63 + 4, 64, 64), Some(Register::RqPi(63)));
        assert_eq!(Register::decode(0x1000 + 8 * 64, 64, 64), None);
        assert_eq!(Register::decode(0x2008, 64, 64), Some(Register::CqCi(1)));
        assert_eq!(Register::decode(0x01C, 64, 64).map(|r| r.access()), Some(Access::ReadOnly));
        assert_eq!(Register::decode(0x038, 64, 64), None);
        assert_eq!(Register::decode(0x3000, 64, 64).map(|r| r.access()), Some(Access::ReadWrite));
        assert_eq!(Register::decode(0x300C, 64, 64).map(|r| r.access()), Some(Access::ReadOnly));
        assert_eq!(Register::decode(0x3018, 64, 64), None);
        assert_eq!(Register::decode(0x3040, 64, 64), None);
        assert_eq!(Register::decode(0x8004, 64, 64), Some(Register::DeviceMemory(1)));
        assert_eq!(Register::decode(0x002, 64, 64), None);
    }

    #[test]
    fn command_words() {
        assert_eq!(CmdOpcode::WriteMr.word(0x12_3456), Some(0x1234_5605));
        assert_eq!(CmdOpcode::WriteMr.word(1 << 24), None);
        assert_eq!(CmdResult::BadState.status_word(), 0x0300);
        assert_eq!(CmdOpcode::try_from(8), Err(8));
    }
}
