//! BAR0: identity, control, the command mailbox and the doorbells
//! (`docs/REGISTERS.md`; offsets from `rnic_proto::host::regs`).
//!
//! The block owns only what the host reads back: CONTROL, the command status and the 16
//! CMD_DATA words. Everything else leaves as events: a doorbell write is one `db_*` pulse
//! (kind, index, value) for whichever engine owns that queue, and a write to CMD starts
//! the command unit, which answers with `cmd_done` and may load CMD_DATA with a queried
//! context. Doorbells are absolute indices, so the block never adds or merges anything.
use rust_hdl::prelude::*;

use rnic_proto::host::regs as map;
use rnic_proto::model::RnicConfig;

/// Doorbell kinds on `db_kind`.
pub const DB_SQ: u64 = 0;
pub const DB_RQ: u64 = 1;
pub const DB_CQ_CI: u64 = 2;
pub const DB_CQ_ARM: u64 = 3;

/// The register file. Build it with [`Regs::new`].
#[derive(LogicBlock)]
pub struct Regs {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// The register bus from the AXI4-Lite slave ([`super::AxilSlave`]).
    pub wr_en: Signal<In, Bit>,
    pub wr_addr: Signal<In, Bits<16>>,
    pub wr_data: Signal<In, Bits<32>>,
    pub wr_strb: Signal<In, Bits<4>>,
    pub rd_en: Signal<In, Bit>,
    pub rd_addr: Signal<In, Bits<16>>,
    pub rd_data: Signal<Out, Bits<32>>,
    /// CONTROL.ENABLE.
    pub enable: Signal<Out, Bit>,
    /// STATUS.IDLE, from the engines.
    pub idle: Signal<In, Bit>,
    /// Command start: one cycle, with the opcode and index written to CMD.
    pub cmd_start: Signal<Out, Bit>,
    pub cmd_op: Signal<Out, Bits<8>>,
    pub cmd_index: Signal<Out, Bits<24>>,
    /// CMD_DATA words 0..16, word i in bits 32i..32i+31.
    pub cmd_data: Signal<Out, Bits<512>>,
    /// Command end: its result code; with `cmd_load`, `cmd_result_data` replaces CMD_DATA.
    pub cmd_done: Signal<In, Bit>,
    pub cmd_result: Signal<In, Bits<8>>,
    pub cmd_load: Signal<In, Bit>,
    pub cmd_result_data: Signal<In, Bits<512>>,
    /// Doorbell write, one cycle: kind (`DB_*`), queue number, the index written.
    pub db_valid: Signal<Out, Bit>,
    pub db_kind: Signal<Out, Bits<2>>,
    pub db_index: Signal<Out, Bits<16>>,
    pub db_value: Signal<Out, Bits<32>>,
    control: DFF<Bit>,
    busy: DFF<Bit>,
    result: DFF<Bits<8>>,
    /// CMD_DATA, word i in bits 32i..32i+31.
    data: DFF<Bits<512>>,
    start: DFF<Bit>,
    op: DFF<Bits<8>>,
    index: DFF<Bits<24>>,
    db_pulse: DFF<Bit>,
    db_kind_q: DFF<Bits<2>>,
    db_index_q: DFF<Bits<16>>,
    db_value_q: DFF<Bits<32>>,
    byte_mask: Signal<Local, Bits<32>>,
    wr_shift: Signal<Local, Bits<9>>,
    wr_queue: Signal<Local, Bits<16>>,
    rd_shift: Signal<Local, Bits<9>>,
    status_word: Signal<Local, Bits<32>>,
    cmd_status_word: Signal<Local, Bits<32>>,
    // Identity and capability values, fixed at generation time.
    id: Constant<Bits<32>>,
    version: Constant<Bits<32>>,
    datapath: Constant<Bits<32>>,
    num_qps: Constant<Bits<32>>,
    num_cqs: Constant<Bits<32>>,
    num_mrs: Constant<Bits<32>>,
    features: Constant<Bits<32>>,
    dm_size: Constant<Bits<32>>,
    dm_base_lo: Constant<Bits<32>>,
    dm_base_hi: Constant<Bits<32>>,
    qp_limit: Constant<Bits<16>>,
    cq_limit: Constant<Bits<16>>,
    // Register offsets (rnic_proto::host::regs).
    at_id: Constant<Bits<16>>,
    at_version: Constant<Bits<16>>,
    at_datapath: Constant<Bits<16>>,
    at_num_qps: Constant<Bits<16>>,
    at_num_cqs: Constant<Bits<16>>,
    at_num_mrs: Constant<Bits<16>>,
    at_features: Constant<Bits<16>>,
    at_dm_size: Constant<Bits<16>>,
    at_dm_base_lo: Constant<Bits<16>>,
    at_dm_base_hi: Constant<Bits<16>>,
    at_control: Constant<Bits<16>>,
    at_status: Constant<Bits<16>>,
    at_cmd: Constant<Bits<16>>,
    at_cmd_status: Constant<Bits<16>>,
    /// CMD_DATA offset / 64, the doorbell pages' offset / 4096.
    cmd_data_block: Constant<Bits<10>>,
    qp_doorbells: Constant<Bits<4>>,
    cq_doorbells: Constant<Bits<4>>,
}

impl Regs {
    /// A register file reporting `config`'s width, features and device memory, with `qps`
    /// QPs, `cqs` CQs and `mrs` MRs.
    pub fn new(config: &RnicConfig, qps: u32, cqs: u32, mrs: u32) -> Self {
        assert!(qps <= 512 && cqs <= 512, "a doorbell page holds 512 queues");
        let word = |v: u32| Constant::new((v as u64).to_bits());
        let at = |offset: u32| Constant::new((offset as u64).to_bits());
        Regs {
            clock: Default::default(),
            reset: Default::default(),
            wr_en: Default::default(),
            wr_addr: Default::default(),
            wr_data: Default::default(),
            wr_strb: Default::default(),
            rd_en: Default::default(),
            rd_addr: Default::default(),
            rd_data: Default::default(),
            enable: Default::default(),
            idle: Default::default(),
            cmd_start: Default::default(),
            cmd_op: Default::default(),
            cmd_index: Default::default(),
            cmd_data: Default::default(),
            cmd_done: Default::default(),
            cmd_result: Default::default(),
            cmd_load: Default::default(),
            cmd_result_data: Default::default(),
            db_valid: Default::default(),
            db_kind: Default::default(),
            db_index: Default::default(),
            db_value: Default::default(),
            control: Default::default(),
            busy: Default::default(),
            result: Default::default(),
            data: Default::default(),
            start: Default::default(),
            op: Default::default(),
            index: Default::default(),
            db_pulse: Default::default(),
            db_kind_q: Default::default(),
            db_index_q: Default::default(),
            db_value_q: Default::default(),
            byte_mask: Default::default(),
            wr_shift: Default::default(),
            wr_queue: Default::default(),
            rd_shift: Default::default(),
            status_word: Default::default(),
            cmd_status_word: Default::default(),
            id: word(map::ID_VALUE),
            version: word(map::VERSION_VALUE),
            datapath: word(config.datapath_bytes),
            num_qps: word(qps),
            num_cqs: word(cqs),
            num_mrs: word(mrs),
            features: word(config.features),
            dm_size: word(config.dm_size),
            dm_base_lo: word(config.dm_base as u32),
            dm_base_hi: word((config.dm_base >> 32) as u32),
            qp_limit: Constant::new((qps as u64).to_bits()),
            cq_limit: Constant::new((cqs as u64).to_bits()),
            at_id: at(map::ID),
            at_version: at(map::VERSION),
            at_datapath: at(map::DATAPATH_BYTES),
            at_num_qps: at(map::NUM_QPS),
            at_num_cqs: at(map::NUM_CQS),
            at_num_mrs: at(map::NUM_MRS),
            at_features: at(map::FEATURES),
            at_dm_size: at(map::DM_SIZE),
            at_dm_base_lo: at(map::DM_BASE_LO),
            at_dm_base_hi: at(map::DM_BASE_HI),
            at_control: at(map::CONTROL),
            at_status: at(map::STATUS),
            at_cmd: at(map::CMD),
            at_cmd_status: at(map::CMD_STATUS),
            cmd_data_block: Constant::new(((map::CMD_DATA / 64) as u64).to_bits()),
            qp_doorbells: Constant::new(((map::QP_DOORBELLS >> 12) as u64).to_bits()),
            cq_doorbells: Constant::new(((map::CQ_DOORBELLS >> 12) as u64).to_bits()),
        }
    }
}

impl Logic for Regs {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, control, busy, result, data, start, op, index, db_pulse, db_kind_q, db_index_q, db_value_q
        );

        // Writes. CONTROL and CMD_DATA honour the byte strobes; CMD and the doorbells are
        // events and take the word as written.
        self.byte_mask.next = 0.into();
        if self.wr_strb.val().get_bit(0) {
            self.byte_mask.next = self.byte_mask.val() | 0xff_u64;
        }
        if self.wr_strb.val().get_bit(1) {
            self.byte_mask.next = self.byte_mask.val() | 0xff00_u64;
        }
        if self.wr_strb.val().get_bit(2) {
            self.byte_mask.next = self.byte_mask.val() | 0xff0000_u64;
        }
        if self.wr_strb.val().get_bit(3) {
            self.byte_mask.next = self.byte_mask.val() | 0xff000000_u64;
        }
        self.wr_shift.next = bit_cast::<9, 4>(self.wr_addr.val().get_bits::<4>(2)) << 5;
        self.wr_queue.next = bit_cast::<16, 9>(self.wr_addr.val().get_bits::<9>(3));
        self.start.d.next = false;
        self.db_pulse.d.next = false;
        if self.wr_en.val() {
            if (self.wr_addr.val() == self.at_control.val()) & self.wr_strb.val().get_bit(0) {
                self.control.d.next = self.wr_data.val().get_bit(0);
            }
            if (self.wr_addr.val() == self.at_cmd.val()) & !self.busy.q.val() {
                self.start.d.next = true;
                self.busy.d.next = true;
                self.op.d.next = self.wr_data.val().get_bits::<8>(0);
                self.index.d.next = self.wr_data.val().get_bits::<24>(8);
            }
            if self.wr_addr.val().get_bits::<10>(6) == self.cmd_data_block.val() {
                self.data.d.next = (self.data.q.val()
                    & !(bit_cast::<512, 32>(self.byte_mask.val()) << self.wr_shift.val()))
                    | (bit_cast::<512, 32>(self.wr_data.val() & self.byte_mask.val()) << self.wr_shift.val());
            }
            if (self.wr_addr.val().get_bits::<4>(12) == self.qp_doorbells.val())
                & (self.wr_queue.val() < self.qp_limit.val())
            {
                self.db_pulse.d.next = true;
                self.db_kind_q.d.next = bit_cast::<2, 1>(self.wr_addr.val().get_bits::<1>(2));
            }
            if (self.wr_addr.val().get_bits::<4>(12) == self.cq_doorbells.val())
                & (self.wr_queue.val() < self.cq_limit.val())
            {
                self.db_pulse.d.next = true;
                self.db_kind_q.d.next = bit_cast::<2, 1>(self.wr_addr.val().get_bits::<1>(2)) | 2;
            }
        }
        self.db_index_q.d.next = self.wr_queue.val();
        self.db_value_q.d.next = self.wr_data.val();
        if self.cmd_done.val() {
            self.busy.d.next = false;
            self.result.d.next = self.cmd_result.val();
        }
        if self.cmd_load.val() {
            self.data.d.next = self.cmd_result_data.val();
        }
        if self.reset.val() {
            self.control.d.next = false;
            self.busy.d.next = false;
            self.result.d.next = 0.into();
            self.start.d.next = false;
            self.db_pulse.d.next = false;
        }

        // Reads: a mux of the registers on `rd_addr` (held until the answer is taken).
        self.rd_shift.next = bit_cast::<9, 4>(self.rd_addr.val().get_bits::<4>(2)) << 5;
        self.rd_data.next = 0.into();
        if self.rd_addr.val() == self.at_id.val() {
            self.rd_data.next = self.id.val();
        }
        if self.rd_addr.val() == self.at_version.val() {
            self.rd_data.next = self.version.val();
        }
        if self.rd_addr.val() == self.at_datapath.val() {
            self.rd_data.next = self.datapath.val();
        }
        if self.rd_addr.val() == self.at_num_qps.val() {
            self.rd_data.next = self.num_qps.val();
        }
        if self.rd_addr.val() == self.at_num_cqs.val() {
            self.rd_data.next = self.num_cqs.val();
        }
        if self.rd_addr.val() == self.at_num_mrs.val() {
            self.rd_data.next = self.num_mrs.val();
        }
        if self.rd_addr.val() == self.at_features.val() {
            self.rd_data.next = self.features.val();
        }
        if self.rd_addr.val() == self.at_dm_size.val() {
            self.rd_data.next = self.dm_size.val();
        }
        if self.rd_addr.val() == self.at_dm_base_lo.val() {
            self.rd_data.next = self.dm_base_lo.val();
        }
        if self.rd_addr.val() == self.at_dm_base_hi.val() {
            self.rd_data.next = self.dm_base_hi.val();
        }
        self.status_word.next = 0.into();
        if self.control.q.val() {
            self.status_word.next = 1.into();
        }
        if self.control.q.val() & self.idle.val() {
            self.status_word.next = 3.into();
        }
        if !self.control.q.val() & self.idle.val() {
            self.status_word.next = 2.into();
        }
        self.cmd_status_word.next = bit_cast::<32, 8>(self.result.q.val()) << 8;
        if self.busy.q.val() {
            self.cmd_status_word.next = (bit_cast::<32, 8>(self.result.q.val()) << 8) | 1;
        }
        if self.rd_addr.val() == self.at_control.val() {
            self.rd_data.next = self.status_word.val() & 1;
        }
        if self.rd_addr.val() == self.at_status.val() {
            self.rd_data.next = self.status_word.val();
        }
        if self.rd_addr.val() == self.at_cmd_status.val() {
            self.rd_data.next = self.cmd_status_word.val();
        }
        if self.rd_addr.val().get_bits::<10>(6) == self.cmd_data_block.val() {
            self.rd_data.next = self.data.q.val().get_bits::<32>(self.rd_shift.val().index());
        }

        self.enable.next = self.control.q.val();
        self.cmd_start.next = self.start.q.val();
        self.cmd_op.next = self.op.q.val();
        self.cmd_index.next = self.index.q.val();
        self.cmd_data.next = self.data.q.val();
        self.db_valid.next = self.db_pulse.q.val();
        self.db_kind.next = self.db_kind_q.q.val();
        self.db_index.next = self.db_index_q.q.val();
        self.db_value.next = self.db_value_q.q.val();
    }
}
