//! What the two stream ring benches share: the design's ports by name and its register
//! page (`host/ring_regs`).
use std::collections::HashMap;

use rnic_sim::{Model, Port};

pub struct Dut {
    pub m: Model,
    ports: HashMap<&'static str, Port>,
    page: u64,
    /// Handshake inputs held low in a register write's cycle, so that no handshake of the
    /// bench's happens in it unseen.
    quiet: &'static [&'static str],
}

impl Dut {
    /// Opens `design`, resets it, and sets its ring's page to `page`.
    pub fn new(design: &str, names: &[&'static str], page: u64, quiet: &'static [&'static str]) -> Dut {
        let mut m = Model::new(design).unwrap_or_else(|e| panic!("{design} model: {e}"));
        let registers = ["wr_en", "wr_addr", "wr_data", "rd_addr", "rd_data", "page"];
        let ports = names.iter().chain(&registers).map(|&n| (n, m.port(n))).collect();
        m.reset_for(4);
        let mut dut = Dut { m, ports, page, quiet };
        dut.set("page", page);
        dut
    }

    pub fn port(&self, name: &str) -> Port {
        self.ports[name]
    }

    pub fn set(&mut self, name: &str, v: u64) {
        self.m.set(self.ports[name], v);
    }

    pub fn get(&self, name: &str) -> u64 {
        self.m.get(self.ports[name])
    }

    /// A register write on a cycle of its own.
    pub fn write_reg(&mut self, reg: u64, value: u32) {
        for quiet in self.quiet {
            self.set(quiet, 0);
        }
        self.set("wr_en", 1);
        self.set("wr_addr", self.page << 5 | reg << 2);
        self.set("wr_data", u64::from(value));
        self.m.tick();
        self.set("wr_en", 0);
    }

    pub fn read_reg(&mut self, reg: u64) -> u32 {
        self.set("rd_addr", self.page << 5 | reg << 2);
        self.m.eval();
        self.get("rd_data") as u32
    }
}
