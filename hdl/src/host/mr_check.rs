//! The access check of a memory region (`rnic_proto::model::check_access`), in the same
//! order: the STag names a valid MR with its key, the PD matches, the right is granted, the
//! range does not wrap past 2^64, the range lies inside the region. The answer is the
//! first failing check (`ACCESS_*` codes) and the IOVA of the first octet.
//!
//! Combinational: the caller reads the MR from its own copy of the table and registers the
//! result where its timing needs. The copy holds each MR as an [`MrEntry`] makes it when
//! the MR is written (the sums every check would otherwise add), and the caller works out
//! the range's end a cycle ahead: what is left here are compares.
use rust_hdl::prelude::*;

use rnic_proto::host::context::mr_fields;
use rnic_proto::host::Field;

use crate::common::constant;

/// `error` codes, in check order.
pub const ACCESS_OK: u64 = 0;
pub const ACCESS_INVALID_STAG: u64 = 1;
pub const ACCESS_OTHER_PD: u64 = 2;
pub const ACCESS_NO_RIGHT: u64 = 3;
pub const ACCESS_TO_WRAP: u64 = 4;
pub const ACCESS_BOUNDS: u64 = 5;

/// `right` codes.
pub const RIGHT_LOCAL_READ: u64 = 0;
pub const RIGHT_LOCAL_WRITE: u64 = 1;
pub const RIGHT_REMOTE_READ: u64 = 2;
pub const RIGHT_REMOTE_WRITE: u64 = 3;
pub const RIGHT_REMOTE_ATOMIC: u64 = 4;

/// An MR table entry as the engines keep it: the context (CMD_DATA words 0..6) in bits
/// 0..224, then what every check would otherwise add, worked out as the MR is written: the
/// region's end, VA + LENGTH (65 bits), at `MR_AT_END`, and IOVA − VA at `MR_AT_OFFSET`.
pub const MR_ENTRY_BITS: usize = 353;
pub const MR_AT_END: usize = 224;
pub const MR_AT_OFFSET: usize = 289;

/// Makes an MR's table entry (see [`MR_ENTRY_BITS`]) from its context.
#[derive(LogicBlock)]
pub struct MrEntry {
    pub ctx: Signal<In, Bits<224>>,
    pub entry: Signal<Out, Bits<MR_ENTRY_BITS>>,
    va: Signal<Local, Bits<64>>,
    at_va: Constant<Bits<8>>,
    at_length: Constant<Bits<8>>,
    at_iova: Constant<Bits<8>>,
    at_end: Constant<Bits<9>>,
    at_offset: Constant<Bits<9>>,
}

impl Default for MrEntry {
    fn default() -> Self {
        const { assert!(MR_AT_END == 224 && MR_AT_OFFSET == MR_AT_END + 65 && MR_ENTRY_BITS == MR_AT_OFFSET + 64) };
        let at = |f: Field| constant(f.lsb.into());
        MrEntry {
            ctx: Default::default(),
            entry: Default::default(),
            va: Default::default(),
            at_va: at(mr_fields::VA),
            at_length: at(mr_fields::LENGTH),
            at_iova: at(mr_fields::IOVA),
            at_end: constant(MR_AT_END as u64),
            at_offset: constant(MR_AT_OFFSET as u64),
        }
    }
}

impl Logic for MrEntry {
    #[hdl_gen]
    fn update(&mut self) {
        self.va.next = self.ctx.val().get_bits::<64>(self.at_va.val().index());
        self.entry.next = bit_cast::<MR_ENTRY_BITS, 224>(self.ctx.val())
            | (bit_cast::<MR_ENTRY_BITS, 65>(
                bit_cast::<65, 64>(self.va.val())
                    + bit_cast::<65, 64>(self.ctx.val().get_bits::<64>(self.at_length.val().index())),
            ) << self.at_end.val())
            | (bit_cast::<MR_ENTRY_BITS, 64>(
                self.ctx.val().get_bits::<64>(self.at_iova.val().index()) - self.va.val(),
            ) << self.at_offset.val());
    }
}

#[derive(LogicBlock)]
pub struct MrCheck {
    /// The MR's table entry ([`MrEntry`]) and its live valid bit; `exists` if the STag's
    /// index is within the table.
    pub mr: Signal<In, Bits<MR_ENTRY_BITS>>,
    pub live: Signal<In, Bit>,
    pub exists: Signal<In, Bit>,
    pub stag: Signal<In, Bits<32>>,
    pub pd: Signal<In, Bits<16>>,
    /// The range: its first octet's TO, and TO + length (65 bits, from a register).
    pub to: Signal<In, Bits<64>>,
    pub range_end: Signal<In, Bits<65>>,
    pub right: Signal<In, Bits<3>>,
    pub error: Signal<Out, Bits<3>>,
    pub iova: Signal<Out, Bits<64>>,
    va: Signal<Local, Bits<64>>,
    region_end: Signal<Local, Bits<65>>,
    granted: Signal<Local, Bit>,
    at_key: Constant<Bits<9>>,
    at_local_write: Constant<Bits<9>>,
    at_remote_read: Constant<Bits<9>>,
    at_remote_write: Constant<Bits<9>>,
    at_remote_atomic: Constant<Bits<9>>,
    at_pd: Constant<Bits<9>>,
    at_va: Constant<Bits<9>>,
    at_end: Constant<Bits<9>>,
    at_offset: Constant<Bits<9>>,
}

impl Default for MrCheck {
    fn default() -> Self {
        let at = |f: Field| constant(f.lsb.into());
        MrCheck {
            mr: Default::default(),
            live: Default::default(),
            exists: Default::default(),
            stag: Default::default(),
            pd: Default::default(),
            to: Default::default(),
            range_end: Default::default(),
            right: Default::default(),
            error: Default::default(),
            iova: Default::default(),
            va: Default::default(),
            region_end: Default::default(),
            granted: Default::default(),
            at_key: at(mr_fields::KEY),
            at_local_write: at(mr_fields::LOCAL_WRITE),
            at_remote_read: at(mr_fields::REMOTE_READ),
            at_remote_write: at(mr_fields::REMOTE_WRITE),
            at_remote_atomic: at(mr_fields::REMOTE_ATOMIC),
            at_pd: at(mr_fields::PD),
            at_va: at(mr_fields::VA),
            at_end: constant(MR_AT_END as u64),
            at_offset: constant(MR_AT_OFFSET as u64),
        }
    }
}

impl Logic for MrCheck {
    #[hdl_gen]
    fn update(&mut self) {
        self.va.next = self.mr.val().get_bits::<64>(self.at_va.val().index());
        self.region_end.next = self.mr.val().get_bits::<65>(self.at_end.val().index());
        self.granted.next = true;
        if self.right.val() == 1 {
            self.granted.next = self.mr.val().get_bit(self.at_local_write.val().index());
        }
        if self.right.val() == 2 {
            self.granted.next = self.mr.val().get_bit(self.at_remote_read.val().index());
        }
        if self.right.val() == 3 {
            self.granted.next = self.mr.val().get_bit(self.at_remote_write.val().index());
        }
        if self.right.val() == 4 {
            self.granted.next = self.mr.val().get_bit(self.at_remote_atomic.val().index());
        }
        self.error.next = 0.into();
        if (self.to.val() < self.va.val()) | (self.range_end.val() > self.region_end.val()) {
            self.error.next = 5.into();
        }
        if self.range_end.val().get_bit(64) & self.range_end.val().get_bits::<64>(0).any() {
            self.error.next = 4.into();
        }
        if !self.granted.val() {
            self.error.next = 3.into();
        }
        if self.mr.val().get_bits::<16>(self.at_pd.val().index()) != self.pd.val() {
            self.error.next = 2.into();
        }
        if !self.exists.val()
            | !self.live.val()
            | (self.mr.val().get_bits::<8>(self.at_key.val().index()) != self.stag.val().get_bits::<8>(0))
        {
            self.error.next = 1.into();
        }
        self.iova.next = self.to.val() + self.mr.val().get_bits::<64>(self.at_offset.val().index());
    }
}
