//! Unit-test support: a [`FakeHal`] that answers like an RNIC, through the reference
//! model's command interface (`rnic_proto::model::Rnic::command`).
use rnic_proto::host::regs;
use rnic_proto::model::{Rnic, RnicConfig};

use crate::fake::FakeHal;
use crate::{Device, Hal};

/// Interrupt vectors of the fake.
pub(crate) const VECTORS: u16 = 4;

/// A device on a fake whose identity registers and commands are the reference model's
/// (default configuration).
pub(crate) fn model_device() -> Device<FakeHal> {
    model_device_patched(|_, _| {})
}

/// As [`model_device`], with `patch` applied to what each command returns in `CMD_DATA`
/// (given the opcode): how a test plays the parts of the device the model leaves out,
/// such as the WQEs taken that QUERY_QP reports.
pub(crate) fn model_device_patched(patch: impl FnMut(u8, &mut [u32; 16]) + 'static) -> Device<FakeHal> {
    model_device_with(None, patch)
}

/// As [`model_device`], reporting `features` in FEATURES instead of the model's.
pub(crate) fn model_device_features(features: u32) -> Device<FakeHal> {
    model_device_with(Some(features), |_, _| {})
}

fn model_device_with(features: Option<u32>, mut patch: impl FnMut(u8, &mut [u32; 16]) + 'static) -> Device<FakeHal> {
    let hal = FakeHal::new(VECTORS);
    let mut rnic = Rnic::new(RnicConfig::default());
    for offset in [
        regs::ID,
        regs::VERSION,
        regs::DATAPATH_BYTES,
        regs::NUM_QPS,
        regs::NUM_CQS,
        regs::NUM_MRS,
        regs::FEATURES,
        regs::DM_SIZE,
        regs::DM_BASE_LO,
        regs::DM_BASE_HI,
    ] {
        hal.write32(offset, rnic.identity_register(offset).expect("identity register"));
    }
    if let Some(features) = features {
        hal.write32(regs::FEATURES, features);
    }
    hal.on_command(move |op, index, data| {
        let (result, mut out) = rnic.command(op, index, data);
        patch(op, &mut out);
        (result, out)
    });
    Device::open(hal).expect("the fake answers like an RNIC")
}
