//! Declarations of the C ABI in `csrc/rnic_model.h`.
use std::ffi::{c_char, c_int, c_void};

/// Opaque handle to one Verilated model.
#[repr(C)]
pub struct RnicModelHandle {
    _private: [u8; 0],
}

extern "C" {
    pub fn rnic_model_new(name: *const c_char) -> *mut RnicModelHandle;
    pub fn rnic_model_free(model: *mut RnicModelHandle);
    pub fn rnic_model_port_count(model: *const RnicModelHandle) -> usize;
    pub fn rnic_model_port_name(model: *const RnicModelHandle, index: usize) -> *const c_char;
    pub fn rnic_model_port_width(model: *const RnicModelHandle, index: usize) -> u32;
    pub fn rnic_model_port_is_output(model: *const RnicModelHandle, index: usize) -> c_int;
    pub fn rnic_model_port_storage(model: *mut RnicModelHandle, index: usize) -> *mut c_void;
    pub fn rnic_model_eval(model: *mut RnicModelHandle);
    pub fn rnic_model_trace_open(model: *mut RnicModelHandle, path: *const c_char) -> c_int;
    pub fn rnic_model_trace_dump(model: *mut RnicModelHandle, time: u64);
    pub fn rnic_model_trace_flush(model: *mut RnicModelHandle);
    pub fn rnic_model_set_reset_seed(seed: u64);
}
