//! Numbers for objects (QPNs, CQNs, MR indices, PDs): each handed out once until freed.
use std::cell::RefCell;
use std::collections::VecDeque;

/// A pool of the numbers `0..capacity`.
///
/// Numbers never used come first, in order; freed numbers are reused oldest first, so a
/// number goes back into use as late as possible. For MR indices that matters: a stale
/// STag can only match again once its index has come round often enough for the 8-bit
/// key to wrap.
#[derive(Debug)]
pub(crate) struct IndexPool {
    capacity: u32,
    state: RefCell<PoolState>,
}

#[derive(Debug, Default)]
struct PoolState {
    /// Numbers below this have been handed out at least once.
    fresh: u32,
    freed: VecDeque<u32>,
}

impl IndexPool {
    pub(crate) fn new(capacity: u32) -> Self {
        IndexPool { capacity, state: RefCell::default() }
    }

    /// A free number, or `None` when all are in use.
    pub(crate) fn alloc(&self) -> Option<u32> {
        let mut s = self.state.borrow_mut();
        if let Some(n) = s.freed.pop_front() {
            return Some(n);
        }
        (s.fresh < self.capacity).then(|| {
            s.fresh += 1;
            s.fresh - 1
        })
    }

    /// Gives `n` back. Only the owner of a number frees it, once.
    pub(crate) fn free(&self, n: u32) {
        let mut s = self.state.borrow_mut();
        debug_assert!(n < s.fresh && !s.freed.contains(&n), "number {n} freed twice or never allocated");
        s.freed.push_back(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hands_out_each_number_once_then_reuses_oldest_freed_first() {
        let pool = IndexPool::new(3);
        assert_eq!([pool.alloc(), pool.alloc(), pool.alloc()], [Some(0), Some(1), Some(2)]);
        assert_eq!(pool.alloc(), None);
        pool.free(2);
        pool.free(0);
        assert_eq!(pool.alloc(), Some(2));
        assert_eq!(pool.alloc(), Some(0));
        assert_eq!(pool.alloc(), None);
    }
}
