//! A serial line (8N1) at a whole number of clock cycles per bit, as a model's pins see
//! it: [`UartSender`] turns octets into the level to drive in each cycle, [`UartReceiver`]
//! turns the level sampled in each cycle back into octets (sampling each bit in its
//! middle, as the board's receiver does).
use std::collections::VecDeque;

/// Octets out, one level per cycle, high when idle.
#[derive(Clone, Debug)]
pub struct UartSender {
    cycles_per_bit: u32,
    queue: VecDeque<u8>,
    /// The frame being sent (start bit first) and the cycle within it.
    frame: Option<(u16, u32)>,
}

impl UartSender {
    pub fn new(cycles_per_bit: u32) -> Self {
        UartSender { cycles_per_bit, queue: VecDeque::new(), frame: None }
    }

    /// Queues octets to send after those queued before.
    pub fn send(&mut self, octets: &[u8]) {
        self.queue.extend(octets);
    }

    /// Whether an octet is being sent or waits.
    pub fn busy(&self) -> bool {
        self.frame.is_some() || !self.queue.is_empty()
    }

    /// The line's level in this cycle.
    pub fn next_level(&mut self) -> bool {
        if self.frame.is_none() {
            // Start bit 0, eight data bits, stop bit 1, as a 10-bit shift value.
            self.frame = self.queue.pop_front().map(|b| ((u16::from(b) << 1) | 1 << 9, 0));
        }
        let Some((bits, cycle)) = &mut self.frame else { return true };
        let level = *bits >> (*cycle / self.cycles_per_bit) & 1 != 0;
        *cycle += 1;
        if *cycle == 10 * self.cycles_per_bit {
            self.frame = None;
        }
        level
    }
}

/// Levels in, octets out. A frame whose stop bit is low is dropped.
#[derive(Clone, Debug)]
pub struct UartReceiver {
    cycles_per_bit: u32,
    /// Cycles since the start bit's falling edge, and the bits so far.
    frame: Option<(u32, u16)>,
}

impl UartReceiver {
    pub fn new(cycles_per_bit: u32) -> Self {
        UartReceiver { cycles_per_bit, frame: None }
    }

    /// Takes the level of one cycle; an octet when this cycle ends its frame.
    pub fn observe(&mut self, level: bool) -> Option<u8> {
        let cpb = self.cycles_per_bit;
        match &mut self.frame {
            None => {
                if !level {
                    self.frame = Some((0, 0));
                }
                None
            }
            Some((cycle, bits)) => {
                *cycle += 1;
                // The middle of bit k is cycle k * cpb + cpb / 2 after the edge.
                if *cycle % cpb == cpb / 2 {
                    let k = *cycle / cpb;
                    *bits |= u16::from(level) << k;
                    if k == 9 {
                        let (bits, _) = (*bits, self.frame.take());
                        // Start bit low, stop bit high: a frame.
                        return (bits & 1 == 0 && bits >> 9 & 1 == 1).then_some((bits >> 1) as u8);
                    }
                }
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn octets_cross_the_line_back_to_back() {
        for cpb in [4, 5, 8] {
            let (mut tx, mut rx) = (UartSender::new(cpb), UartReceiver::new(cpb));
            let sent: Vec<u8> = (0..=255).collect();
            tx.send(&sent);
            let mut got = Vec::new();
            for _ in 0..(sent.len() as u32 + 2) * 10 * cpb {
                got.extend(rx.observe(tx.next_level()));
            }
            assert_eq!(got, sent, "{cpb} cycles per bit");
            assert!(!tx.busy());
        }
    }
}
