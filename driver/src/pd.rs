//! Protection domains: a QP reaches only the memory regions of its own PD.
use crate::error::{DriverError, Resource};
use crate::{Device, Hal};

/// A protection domain. The device keeps no PD table: the number is written into the
/// contexts of the QPs and MRs created with it, and the driver only makes sure that two
/// live PDs never share one.
pub struct ProtectionDomain<'d, H: Hal> {
    dev: &'d Device<H>,
    pdn: u16,
}

impl<'d, H: Hal> ProtectionDomain<'d, H> {
    /// A PD with a number no other live PD of `dev` has.
    pub fn new(dev: &'d Device<H>) -> Result<Self, DriverError> {
        let pdn = dev.alloc_number(Resource::ProtectionDomain)?;
        Ok(ProtectionDomain { dev, pdn: pdn as u16 })
    }

    /// The PD number.
    pub fn pdn(&self) -> u16 {
        self.pdn
    }

    /// The device it belongs to.
    pub fn device(&self) -> &'d Device<H> {
        self.dev
    }
}

impl<H: Hal> Drop for ProtectionDomain<'_, H> {
    fn drop(&mut self) {
        self.dev.free_number(Resource::ProtectionDomain, self.pdn.into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::model_device;

    #[test]
    fn live_pds_have_distinct_numbers_and_numbers_come_back() {
        let dev = model_device();
        let a = ProtectionDomain::new(&dev).expect("pd");
        let b = ProtectionDomain::new(&dev).expect("pd");
        assert_ne!(a.pdn(), b.pdn());
        let freed = a.pdn();
        drop(a);
        let more: Vec<_> = (0..u16::MAX).map(|_| ProtectionDomain::new(&dev).expect("pd")).collect();
        assert!(more.iter().any(|pd| pd.pdn() == freed));
        assert!(matches!(ProtectionDomain::new(&dev), Err(DriverError::Exhausted(Resource::ProtectionDomain))));
    }
}
