//! A 9-bit value per connection (QP): where its stream stands against the 512-octet
//! marker grid, kept between its FPDUs while other connections' FPDUs use the framer or
//! deframer (RFC 5044 §4.3: markers count from each connection's own Full Operation).
//!
//! Block RAM with one write port; a connection cleared (its QP written in RESET) reads 0
//! until it is written again, through a valid bit per connection, so a clear never takes
//! the write port from an FPDU that ends in the same cycle. The RAM reads `read_qp` one
//! cycle late, so `read_qp` must be held a cycle before `value` is used; a write in the
//! previous cycle to that connection is forwarded. `held` is the same value from a
//! register, a cycle later, with that cycle's write and clear in: with `read_qp` held two
//! cycles it is the connection's value as it stands, and its user starts from a register.
use rust_hdl::prelude::*;

/// `QB` = connection index bits, `Q` = connections.
#[derive(LogicBlock)]
pub struct Positions<const QB: usize, const Q: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub read_qp: Signal<In, Bits<QB>>,
    pub value: Signal<Out, Bits<9>>,
    pub held: Signal<Out, Bits<9>>,
    pub write: Signal<In, Bit>,
    pub write_qp: Signal<In, Bits<QB>>,
    pub write_value: Signal<In, Bits<9>>,
    pub clear: Signal<In, Bit>,
    pub clear_qp: Signal<In, Bits<QB>>,
    ram: RAM<Bits<9>, QB>,
    valid: DFF<Bits<Q>>,
    last_write: DFF<Bit>,
    last_qp: DFF<Bits<QB>>,
    last_value: DFF<Bits<9>>,
    held_value: DFF<Bits<9>>,
    set_bits: Signal<Local, Bits<Q>>,
    clear_bits: Signal<Local, Bits<Q>>,
    one: Constant<Bits<Q>>,
}

impl<const QB: usize, const Q: usize> Default for Positions<QB, Q> {
    fn default() -> Self {
        const { assert!(Q <= 1 << QB && QB <= 16) };
        Positions {
            clock: Default::default(),
            reset: Default::default(),
            read_qp: Default::default(),
            value: Default::default(),
            held: Default::default(),
            write: Default::default(),
            write_qp: Default::default(),
            write_value: Default::default(),
            clear: Default::default(),
            clear_qp: Default::default(),
            ram: Default::default(),
            valid: Default::default(),
            last_write: Default::default(),
            last_qp: Default::default(),
            last_value: Default::default(),
            held_value: Default::default(),
            set_bits: Default::default(),
            clear_bits: Default::default(),
            one: Constant::new(1.into()),
        }
    }
}

impl<const QB: usize, const Q: usize> Logic for Positions<QB, Q> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, valid, last_write, last_qp, last_value, held_value);
        self.ram.read_clock.next = self.clock.val();
        self.ram.write_clock.next = self.clock.val();
        self.ram.read_address.next = self.read_qp.val();
        self.ram.write_address.next = self.write_qp.val();
        self.ram.write_data.next = self.write_value.val();
        self.ram.write_enable.next = self.write.val();

        self.value.next = 0.into();
        if (self.valid.q.val() & (self.one.val() << bit_cast::<Q, QB>(self.read_qp.val()))).any() {
            self.value.next = self.ram.read_data.val();
        }
        if self.last_write.q.val() & (self.last_qp.q.val() == self.read_qp.val()) {
            self.value.next = self.last_value.q.val();
        }
        // A clear wins over a write to the same connection in the same cycle.
        self.held_value.d.next = self.value.val();
        if self.write.val() & (self.write_qp.val() == self.read_qp.val()) {
            self.held_value.d.next = self.write_value.val();
        }
        if self.clear.val() & (self.clear_qp.val() == self.read_qp.val()) {
            self.held_value.d.next = 0.into();
        }
        self.held.next = self.held_value.q.val();

        // A write sets its connection's valid bit, a clear resets its own (and wins over a
        // write to the same connection).
        self.last_write.d.next = self.write.val() & !(self.clear.val() & (self.clear_qp.val() == self.write_qp.val()));
        self.last_qp.d.next = self.write_qp.val();
        self.last_value.d.next = self.write_value.val();
        self.set_bits.next = 0.into();
        if self.write.val() {
            self.set_bits.next = self.one.val() << bit_cast::<Q, QB>(self.write_qp.val());
        }
        self.clear_bits.next = 0.into();
        if self.clear.val() {
            self.clear_bits.next = self.one.val() << bit_cast::<Q, QB>(self.clear_qp.val());
        }
        self.valid.d.next = (self.valid.q.val() | self.set_bits.val()) & !self.clear_bits.val();
        if self.reset.val() {
            self.valid.d.next = 0.into();
            self.last_write.d.next = false;
            self.held_value.d.next = 0.into();
        }
    }
}
