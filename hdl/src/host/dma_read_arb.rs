//! Several clients on the DMA read engine: requests granted round robin, each tagged with
//! its client's number, and the returned octets steered back by that tag.
//!
//! The grant is decided a cycle ahead and held in a register, so a client's `s_req_ready`
//! is that register and the engine's ready (a register slice's) and nothing else: no path
//! runs from one client's request through the choice into another client's acceptance.
//! The choice for the next cycle is made among the clients asking now, starting after the
//! one granted now, so a client asking alone is granted every cycle. With no client asking
//! the grant stays parked on the last one, which is granted at once when it asks again; a
//! request raised while the grant is elsewhere waits one cycle more than a combinational
//! grant would make it wait. A granted client the engine cannot take yet keeps the grant.
//!
//! Data comes back in request order on one stream, so a client that stops taking its
//! octets holds up the others behind it: clients take their data at full rate (they have
//! their buffers behind this point), which is what keeps the engine's requests in flight
//! useful.
//!
//! Client `i`'s signals are bit `i` of the one-bit buses and slice `i` of the wide ones
//! (`N` = clients, `AN` = 64 `N`, `LN` = 32 `N`).
use rust_hdl::prelude::*;

use crate::common::{constant, RoundRobin};

#[derive(LogicBlock)]
pub struct DmaReadArb<const N: usize, const AN: usize, const LN: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub s_req_valid: Signal<In, Bits<N>>,
    pub s_req_ready: Signal<Out, Bits<N>>,
    pub s_req_addr: Signal<In, Bits<AN>>,
    pub s_req_len: Signal<In, Bits<LN>>,
    /// To the read engine; the tag is the client's number.
    pub m_req_valid: Signal<Out, Bit>,
    pub m_req_ready: Signal<In, Bit>,
    pub m_req_addr: Signal<Out, Bits<64>>,
    pub m_req_len: Signal<Out, Bits<32>>,
    pub m_req_tag: Signal<Out, Bits<8>>,
    /// From the read engine.
    pub s_rd_tdata: Signal<In, Bits<64>>,
    pub s_rd_tkeep: Signal<In, Bits<8>>,
    pub s_rd_tlast: Signal<In, Bit>,
    pub s_rd_tuser: Signal<In, Bits<9>>,
    pub s_rd_tvalid: Signal<In, Bit>,
    pub s_rd_tready: Signal<Out, Bit>,
    /// To the clients: one data bus, a valid and a ready each; `terror` as `tuser` bit 8.
    pub m_rd_tdata: Signal<Out, Bits<64>>,
    pub m_rd_tkeep: Signal<Out, Bits<8>>,
    pub m_rd_tlast: Signal<Out, Bit>,
    pub m_rd_terror: Signal<Out, Bit>,
    pub m_rd_tvalid: Signal<Out, Bits<N>>,
    pub m_rd_tready: Signal<In, Bits<N>>,
    /// The client granted this cycle; the next search starts after it. With no client
    /// asking, the grant stays where it is (parked), so that client is granted at once
    /// when it asks again.
    grant: DFF<Bits<8>>,
    pick: RoundRobin<N>,
    /// The granted client asks and the engine cannot take its request yet.
    hold: Signal<Local, Bit>,
    client: Signal<Local, Bits<8>>,
    one: Constant<Bits<N>>,
}

impl<const N: usize, const AN: usize, const LN: usize> Default for DmaReadArb<N, AN, LN> {
    fn default() -> Self {
        const { assert!(N >= 1 && N <= 64 && AN == 64 * N && LN == 32 * N) };
        DmaReadArb {
            clock: Default::default(),
            reset: Default::default(),
            s_req_valid: Default::default(),
            s_req_ready: Default::default(),
            s_req_addr: Default::default(),
            s_req_len: Default::default(),
            m_req_valid: Default::default(),
            m_req_ready: Default::default(),
            m_req_addr: Default::default(),
            m_req_len: Default::default(),
            m_req_tag: Default::default(),
            s_rd_tdata: Default::default(),
            s_rd_tkeep: Default::default(),
            s_rd_tlast: Default::default(),
            s_rd_tuser: Default::default(),
            s_rd_tvalid: Default::default(),
            s_rd_tready: Default::default(),
            m_rd_tdata: Default::default(),
            m_rd_tkeep: Default::default(),
            m_rd_tlast: Default::default(),
            m_rd_terror: Default::default(),
            m_rd_tvalid: Default::default(),
            m_rd_tready: Default::default(),
            grant: Default::default(),
            pick: Default::default(),
            hold: Default::default(),
            client: Default::default(),
            one: constant(1),
        }
    }
}

impl<const N: usize, const AN: usize, const LN: usize> Logic for DmaReadArb<N, AN, LN> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, grant);
        // This cycle's grant, from the registers.
        self.m_req_valid.next = self.s_req_valid.val().get_bit(self.grant.q.val().index());
        self.m_req_addr.next = self.s_req_addr.val().get_bits::<64>(self.grant.q.val().index() * 64);
        self.m_req_len.next = self.s_req_len.val().get_bits::<32>(self.grant.q.val().index() * 32);
        self.m_req_tag.next = self.grant.q.val();
        self.s_req_ready.next = 0.into();
        if self.m_req_ready.val() {
            self.s_req_ready.next = self.one.val() << self.grant.q.val();
        }
        // Next cycle's: the same while it waits for the engine or no client asks, else the
        // first client asking after this one (round robin).
        self.hold.next = self.m_req_valid.val() & !self.m_req_ready.val();
        self.pick.requests.next = self.s_req_valid.val();
        self.pick.start.next = self.grant.q.val() + 1;
        if !self.hold.val() & self.pick.found.val() {
            self.grant.d.next = self.pick.grant.val();
        }
        // The data goes to the client its tag names.
        self.client.next = self.s_rd_tuser.val().get_bits::<8>(0);
        self.m_rd_tdata.next = self.s_rd_tdata.val();
        self.m_rd_tkeep.next = self.s_rd_tkeep.val();
        self.m_rd_tlast.next = self.s_rd_tlast.val();
        self.m_rd_terror.next = self.s_rd_tuser.val().get_bit(8);
        self.m_rd_tvalid.next = 0.into();
        if self.s_rd_tvalid.val() {
            self.m_rd_tvalid.next = self.one.val() << self.client.val();
        }
        self.s_rd_tready.next = self.m_rd_tready.val().get_bit(self.client.val().index());
        if self.reset.val() {
            self.grant.d.next = 0.into();
        }
    }
}
