//! The atomic unit of RFC 7306: masked FetchAdd and masked CmpSwap.
pub mod alu;
pub mod unit;
pub use alu::AtomicAlu;
pub use unit::AtomicUnit;
