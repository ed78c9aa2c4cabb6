//! Several clients on the DMA write engine: requests granted round robin and tagged with
//! the client's number; each granted request's octets are then taken from its client, in
//! grant order (the engine expects data in request order); completions go back by tag.
//!
//! As in the read arbiter, the grant is decided a cycle ahead and registered, so a client's
//! `s_req_ready` depends on no client's request. A granted request joins the order queue
//! a cycle later (whether it has data is a register by then), and the queue's head, the
//! client whose data goes now, is a register kept a cycle ahead, so the data side's
//! select starts at a register. A request is granted only if the queue held at most five
//! the cycle before (`room`, a register): with the two that may join meanwhile, the eight
//! places always suffice.
//!
//! Client `i`'s signals are bit `i` of the one-bit buses and slice `i` of the wide ones
//! (`N` = clients, `AN` = 64 `N`, `LN` = 32 `N`, `DN` = 64 `N`, `KN` = 8 `N`).
use rust_hdl::prelude::*;

use crate::common::{constant, RoundRobin};

/// Granted requests whose data has not all gone yet.
const ORDER: usize = 8;

#[derive(LogicBlock)]
pub struct DmaWriteArb<const N: usize, const AN: usize, const LN: usize, const DN: usize, const KN: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub s_req_valid: Signal<In, Bits<N>>,
    pub s_req_ready: Signal<Out, Bits<N>>,
    pub s_req_addr: Signal<In, Bits<AN>>,
    pub s_req_len: Signal<In, Bits<LN>>,
    pub s_wr_tdata: Signal<In, Bits<DN>>,
    pub s_wr_tkeep: Signal<In, Bits<KN>>,
    pub s_wr_tlast: Signal<In, Bits<N>>,
    pub s_wr_tvalid: Signal<In, Bits<N>>,
    pub s_wr_tready: Signal<Out, Bits<N>>,
    /// Completions: one pulse to the client that asked, with the engine's error flag.
    pub m_done_valid: Signal<Out, Bits<N>>,
    pub m_done_error: Signal<Out, Bit>,
    /// To the write engine; the tag is the client's number.
    pub m_req_valid: Signal<Out, Bit>,
    pub m_req_ready: Signal<In, Bit>,
    pub m_req_addr: Signal<Out, Bits<64>>,
    pub m_req_len: Signal<Out, Bits<32>>,
    pub m_req_tag: Signal<Out, Bits<8>>,
    pub m_axis_tdata: Signal<Out, Bits<64>>,
    pub m_axis_tkeep: Signal<Out, Bits<8>>,
    pub m_axis_tlast: Signal<Out, Bit>,
    pub m_axis_tvalid: Signal<Out, Bit>,
    pub m_axis_tready: Signal<In, Bit>,
    pub s_done_valid: Signal<In, Bit>,
    pub s_done_tag: Signal<In, Bits<8>>,
    pub s_done_error: Signal<In, Bit>,
    /// The client granted this cycle; the next search starts after it. With no client
    /// asking, the grant stays where it is (parked), so that client is granted at once
    /// when it asks again.
    grant: DFF<Bits<8>>,
    /// The same, one-hot: the select of the request's length and valid, and of the ready.
    granted: DFF<Bits<N>>,
    /// Clients whose data is due, in grant order.
    order: [DFF<Bits<8>>; ORDER],
    head: DFF<Bits<4>>,
    tail: DFF<Bits<4>>,
    /// The order queue's head (the client whose data goes now) and whether there is one,
    /// kept in registers a cycle ahead so the data side's select starts at a register.
    sender: DFF<Bits<8>>,
    sending: DFF<Bit>,
    /// The request granted last cycle (`joining`), its client, and whether it has data:
    /// it joins the order queue this cycle, so no path runs from the grant through the
    /// request's length into the queue.
    joining: DFF<Bit>,
    joiner: DFF<Bits<8>>,
    joiner_data: DFF<Bit>,
    pick: RoundRobin<N>,
    queued: Signal<Local, Bits<4>>,
    /// The order queue has room for one more request beside those joining: it held at most
    /// five last cycle.
    room: DFF<Bit>,
    /// The granted client's request enters the engine this cycle.
    take: Signal<Local, Bit>,
    /// The granted client asks and its request cannot enter yet.
    hold: Signal<Local, Bit>,
    /// A granted request with data joins the order queue; the sender's last beat goes.
    push: Signal<Local, Bit>,
    pop: Signal<Local, Bit>,
    /// The entry behind the head.
    behind: Signal<Local, Bits<8>>,
    one: Constant<Bits<N>>,
}

impl<const N: usize, const AN: usize, const LN: usize, const DN: usize, const KN: usize> Default
    for DmaWriteArb<N, AN, LN, DN, KN>
{
    fn default() -> Self {
        const { assert!(N >= 1 && N <= 64 && AN == 64 * N && LN == 32 * N && DN == 64 * N && KN == 8 * N) };
        DmaWriteArb {
            clock: Default::default(),
            reset: Default::default(),
            s_req_valid: Default::default(),
            s_req_ready: Default::default(),
            s_req_addr: Default::default(),
            s_req_len: Default::default(),
            s_wr_tdata: Default::default(),
            s_wr_tkeep: Default::default(),
            s_wr_tlast: Default::default(),
            s_wr_tvalid: Default::default(),
            s_wr_tready: Default::default(),
            m_done_valid: Default::default(),
            m_done_error: Default::default(),
            m_req_valid: Default::default(),
            m_req_ready: Default::default(),
            m_req_addr: Default::default(),
            m_req_len: Default::default(),
            m_req_tag: Default::default(),
            m_axis_tdata: Default::default(),
            m_axis_tkeep: Default::default(),
            m_axis_tlast: Default::default(),
            m_axis_tvalid: Default::default(),
            m_axis_tready: Default::default(),
            s_done_valid: Default::default(),
            s_done_tag: Default::default(),
            s_done_error: Default::default(),
            grant: Default::default(),
            granted: Default::default(),
            order: Default::default(),
            head: Default::default(),
            tail: Default::default(),
            pick: Default::default(),
            queued: Default::default(),
            room: Default::default(),
            take: Default::default(),
            hold: Default::default(),
            sender: Default::default(),
            sending: Default::default(),
            joining: Default::default(),
            joiner: Default::default(),
            joiner_data: Default::default(),
            push: Default::default(),
            pop: Default::default(),
            behind: Default::default(),
            one: constant(1),
        }
    }
}

impl<const N: usize, const AN: usize, const LN: usize, const DN: usize, const KN: usize> Logic
    for DmaWriteArb<N, AN, LN, DN, KN>
{
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, grant, granted, head, tail, sender, sending, joining, joiner, joiner_data, room);
        for i in 0..ORDER {
            self.order[i].clock.next = self.clock.val();
            self.order[i].d.next = self.order[i].q.val();
        }
        // Round robin decided a cycle ahead, as for reads; a request enters only while its
        // data has a place in the order queue, beside the one joining it.
        self.queued.next = self.tail.q.val() - self.head.q.val();
        self.room.d.next = self.queued.val() < 6;
        self.m_req_valid.next = self.room.q.val() & (self.s_req_valid.val() & self.granted.q.val()).any();
        self.m_req_addr.next = self.s_req_addr.val().get_bits::<64>(self.grant.q.val().index() * 64);
        self.m_req_len.next = self.s_req_len.val().get_bits::<32>(self.grant.q.val().index() * 32);
        self.m_req_tag.next = self.grant.q.val();
        self.s_req_ready.next = 0.into();
        if self.room.q.val() & self.m_req_ready.val() {
            self.s_req_ready.next = self.granted.q.val();
        }
        self.take.next = self.m_req_valid.val() & self.m_req_ready.val();
        // An empty request sends no data.
        self.joining.d.next = self.take.val();
        self.joiner.d.next = self.grant.q.val();
        // (Each client's length is looked at beside the others and the one-hot grant
        // picks: no compare of the grant in front of the length's OR.)
        self.joiner_data.d.next = false;
        for i in 0..N {
            if self.granted.q.val().get_bit(i) & self.s_req_len.val().get_bits::<32>(i * 32).any() {
                self.joiner_data.d.next = true;
            }
        }
        self.push.next = self.joining.q.val() & self.joiner_data.q.val();
        if self.push.val() {
            for i in 0..ORDER {
                if self.tail.q.val().get_bits::<3>(0).index() == i {
                    self.order[i].d.next = self.joiner.q.val();
                }
            }
            self.tail.d.next = self.tail.q.val() + 1;
        }
        self.hold.next = (self.s_req_valid.val() & self.granted.q.val()).any() & !self.take.val();
        self.pick.requests.next = self.s_req_valid.val();
        self.pick.start.next = self.grant.q.val() + 1;
        if !self.hold.val() & self.pick.found.val() {
            self.grant.d.next = self.pick.grant.val();
            self.granted.d.next = self.one.val() << self.pick.grant.val();
        }
        // Data: from the client at the head of the order queue, up to its tlast.
        self.m_axis_tdata.next = self.s_wr_tdata.val().get_bits::<64>(self.sender.q.val().index() * 64);
        self.m_axis_tkeep.next = self.s_wr_tkeep.val().get_bits::<8>(self.sender.q.val().index() * 8);
        self.m_axis_tlast.next = self.s_wr_tlast.val().get_bit(self.sender.q.val().index());
        self.m_axis_tvalid.next = self.sending.q.val() & self.s_wr_tvalid.val().get_bit(self.sender.q.val().index());
        self.s_wr_tready.next = 0.into();
        if self.sending.q.val() & self.m_axis_tready.val() {
            self.s_wr_tready.next = self.one.val() << self.sender.q.val();
        }
        self.pop.next = self.sending.q.val()
            & self.m_axis_tready.val()
            & self.s_wr_tvalid.val().get_bit(self.sender.q.val().index())
            & self.s_wr_tlast.val().get_bit(self.sender.q.val().index());
        if self.pop.val() {
            self.head.d.next = self.head.q.val() + 1;
        }
        // Next cycle's head: the entry behind this one once it goes, the request joining
        // an empty queue (or one whose last entry goes), or the same.
        self.behind.next = self.order[0].q.val();
        for i in 1..ORDER {
            if self.head.q.val().get_bits::<3>(0).index() == i - 1 {
                self.behind.next = self.order[i].q.val();
            }
        }
        self.sending.d.next = self.push.val() | (self.queued.val() > 1) | (self.sending.q.val() & !self.pop.val());
        if self.pop.val() & (self.queued.val() > 1) {
            self.sender.d.next = self.behind.val();
        }
        if self.push.val() & (!self.sending.q.val() | (self.pop.val() & (self.queued.val() == 1))) {
            self.sender.d.next = self.joiner.q.val();
        }
        // Completions go back to their client.
        self.m_done_valid.next = 0.into();
        if self.s_done_valid.val() {
            self.m_done_valid.next = self.one.val() << self.s_done_tag.val();
        }
        self.m_done_error.next = self.s_done_error.val();
        if self.reset.val() {
            self.grant.d.next = 0.into();
            self.granted.d.next = self.one.val();
            self.head.d.next = 0.into();
            self.tail.d.next = 0.into();
            self.sending.d.next = false;
            self.joining.d.next = false;
            self.room.d.next = false;
        }
    }
}
