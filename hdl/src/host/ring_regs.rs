//! The registers of one stream ring (a 32-octet page of BAR0, `docs/REGISTERS.md`, "Stream
//! rings"), shared by [`super::StreamTxRing`] and [`super::StreamRxRing`]: base IOVA, size,
//! the host's position and the reads of the RNIC's position and status.
//!
//! Offsets in the page: 0x00/0x04 base, 0x08 log2 of the size (writing it is `restart`, a
//! pulse in the cycle of the write: the ring starts over at position 0; 0 turns it off),
//! 0x0C PI, 0x10 CI (one of them the host's, written here, the other the RNIC's, read
//! from `dev_index`), 0x14 status (`stopped`).
use rust_hdl::prelude::*;

use crate::common::constant;

#[derive(LogicBlock)]
pub struct RingRegs {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// The register bus; `rd_data` is 0 outside the page.
    pub wr_en: Signal<In, Bit>,
    pub wr_addr: Signal<In, Bits<16>>,
    pub wr_data: Signal<In, Bits<32>>,
    pub rd_addr: Signal<In, Bits<16>>,
    pub rd_data: Signal<Out, Bits<32>>,
    /// The page: BAR0 offset bits 15..5.
    pub page: Signal<In, Bits<11>>,
    /// Whether the host owns PI (the RX ring) rather than CI (the TX ring).
    pub host_pi: Signal<In, Bit>,
    /// The RNIC's position and whether the ring stopped, for reading.
    pub dev_index: Signal<In, Bits<32>>,
    pub stopped: Signal<In, Bit>,
    pub base: Signal<Out, Bits<64>>,
    /// Size in octets (0 while off) and size - 1.
    pub size: Signal<Out, Bits<32>>,
    pub mask: Signal<Out, Bits<32>>,
    /// The ring is on (its size is not 0): a register of its own, which steers streams.
    pub on: Signal<Out, Bit>,
    /// The host's position as it last wrote it (0 after a restart).
    pub host_index: Signal<Out, Bits<32>>,
    pub restart: Signal<Out, Bit>,
    base_q: DFF<Bits<64>>,
    size_log2: DFF<Bits<5>>,
    size_q: DFF<Bits<32>>,
    mask_q: DFF<Bits<32>>,
    on_q: DFF<Bit>,
    host_q: DFF<Bits<32>>,
    wr_hit: Signal<Local, Bit>,
    wr_reg: Signal<Local, Bits<3>>,
    rd_reg: Signal<Local, Bits<3>>,
    pi_word: Signal<Local, Bits<32>>,
    ci_word: Signal<Local, Bits<32>>,
    one: Constant<Bits<32>>,
}

impl Default for RingRegs {
    fn default() -> Self {
        RingRegs {
            clock: Default::default(),
            reset: Default::default(),
            wr_en: Default::default(),
            wr_addr: Default::default(),
            wr_data: Default::default(),
            rd_addr: Default::default(),
            rd_data: Default::default(),
            page: Default::default(),
            host_pi: Default::default(),
            dev_index: Default::default(),
            stopped: Default::default(),
            base: Default::default(),
            size: Default::default(),
            mask: Default::default(),
            on: Default::default(),
            host_index: Default::default(),
            restart: Default::default(),
            base_q: Default::default(),
            size_log2: Default::default(),
            size_q: Default::default(),
            mask_q: Default::default(),
            on_q: Default::default(),
            host_q: Default::default(),
            wr_hit: Default::default(),
            wr_reg: Default::default(),
            rd_reg: Default::default(),
            pi_word: Default::default(),
            ci_word: Default::default(),
            one: constant(1),
        }
    }
}

impl Logic for RingRegs {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, base_q, size_log2, size_q, mask_q, on_q, host_q);
        self.wr_hit.next = self.wr_en.val() & (self.wr_addr.val().get_bits::<11>(5) == self.page.val());
        self.wr_reg.next = self.wr_addr.val().get_bits::<3>(2);
        self.restart.next = self.wr_hit.val() & (self.wr_reg.val() == 2);
        if self.wr_hit.val() {
            if self.wr_reg.val() == 0 {
                self.base_q.d.next =
                    (self.base_q.q.val() & 0xffff_ffff_0000_0000_u64) | bit_cast::<64, 32>(self.wr_data.val());
            }
            if self.wr_reg.val() == 1 {
                self.base_q.d.next =
                    (self.base_q.q.val() & 0xffff_ffff_u64) | (bit_cast::<64, 32>(self.wr_data.val()) << 32);
            }
            if (self.wr_reg.val() == 3) & self.host_pi.val() {
                self.host_q.d.next = self.wr_data.val();
            }
            if (self.wr_reg.val() == 4) & !self.host_pi.val() {
                self.host_q.d.next = self.wr_data.val();
            }
        }
        if self.restart.val() {
            self.size_log2.d.next = self.wr_data.val().get_bits::<5>(0);
            self.size_q.d.next = 0.into();
            self.mask_q.d.next = 0.into();
            self.on_q.d.next = self.wr_data.val().get_bits::<5>(0).any();
            if self.wr_data.val().get_bits::<5>(0).any() {
                self.size_q.d.next = self.one.val() << self.wr_data.val().get_bits::<5>(0);
                self.mask_q.d.next = (self.one.val() << self.wr_data.val().get_bits::<5>(0)) - 1;
            }
            self.host_q.d.next = 0.into();
        }
        if self.reset.val() {
            self.size_log2.d.next = 0.into();
            self.size_q.d.next = 0.into();
            self.mask_q.d.next = 0.into();
            self.on_q.d.next = false;
            self.host_q.d.next = 0.into();
        }
        self.base.next = self.base_q.q.val();
        self.size.next = self.size_q.q.val();
        self.mask.next = self.mask_q.q.val();
        self.on.next = self.on_q.q.val();
        self.host_index.next = self.host_q.q.val();

        self.pi_word.next = self.dev_index.val();
        self.ci_word.next = self.host_q.q.val();
        if self.host_pi.val() {
            self.pi_word.next = self.host_q.q.val();
            self.ci_word.next = self.dev_index.val();
        }
        self.rd_reg.next = self.rd_addr.val().get_bits::<3>(2);
        self.rd_data.next = 0.into();
        if self.rd_addr.val().get_bits::<11>(5) == self.page.val() {
            if self.rd_reg.val() == 0 {
                self.rd_data.next = self.base_q.q.val().get_bits::<32>(0);
            }
            if self.rd_reg.val() == 1 {
                self.rd_data.next = self.base_q.q.val().get_bits::<32>(32);
            }
            if self.rd_reg.val() == 2 {
                self.rd_data.next = bit_cast::<32, 5>(self.size_log2.q.val());
            }
            if self.rd_reg.val() == 3 {
                self.rd_data.next = self.pi_word.val();
            }
            if self.rd_reg.val() == 4 {
                self.rd_data.next = self.ci_word.val();
            }
            if self.rd_reg.val() == 5 {
                self.rd_data.next = bit_cast::<32, 1>(self.stopped.val().into());
            }
        }
    }
}
