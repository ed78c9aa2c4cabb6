//! Driver errors as the errno values verbs programs test for.
use libc::c_int;
use rnic_driver::{DriverError, HalError};

/// Sets the calling thread's `errno` (for verbs that return a pointer or -1).
pub(crate) fn set(e: c_int) {
    // SAFETY: `__errno_location` returns the calling thread's errno, valid for writes.
    unsafe { *libc::__errno_location() = e };
}

/// The errno of a driver error: no room is ENOMEM, what the device lacks EOPNOTSUPP, a
/// request that names something wrong EINVAL, and a device that failed EIO.
pub(crate) fn of(e: &DriverError) -> c_int {
    match e {
        DriverError::Exhausted(_)
        | DriverError::QueueFull { .. }
        | DriverError::OutOfDeviceMemory { .. }
        | DriverError::Hal(HalError::OutOfDmaMemory(_)) => libc::ENOMEM,
        DriverError::Unsupported(_) => libc::EOPNOTSUPP,
        DriverError::QueueTooLarge { .. }
        | DriverError::BadRingSize { .. }
        | DriverError::InvalidQp(_)
        | DriverError::OutOfBounds { .. }
        | DriverError::BatchTooLarge { .. }
        | DriverError::WrongState { .. }
        | DriverError::ConnIdOutsideReset { .. }
        | DriverError::UnknownLkey { .. }
        | DriverError::WrongPd { .. }
        | DriverError::NoLocalWrite { .. }
        | DriverError::SgeOutOfBounds { .. }
        | DriverError::NoReadCredits { .. }
        | DriverError::IovaWraps { .. }
        | DriverError::IovaInDeviceMemory { .. }
        | DriverError::ForeignObject(_)
        | DriverError::Hal(HalError::EmptyDmaRequest) => libc::EINVAL,
        _ => libc::EIO,
    }
}
