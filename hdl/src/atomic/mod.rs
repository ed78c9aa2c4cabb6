//! The atomic unit of RFC 7306: masked FetchAdd and masked CmpSwap.
pub mod alu;
pub use alu::AtomicAlu;
