//! Links nrt-core into a freestanding host binary: no std, no C runtime.
#![no_std]
#![no_main]

use core::panic::PanicInfo;

use nrt_core::arch::Arch;
use nrt_core::exec::{ExecConfig, ExecRequest};
use nrt_core::nq::{Notification, Notifications};

#[panic_handler]
fn panic(_: &PanicInfo) -> ! {
    loop {}
}

/// The host's prebuilt `core` is compiled with unwinding tables; with
/// `panic = "abort"` nothing unwinds, but the symbol must exist to link.
#[no_mangle]
pub extern "C" fn rust_eh_personality() {}

/// The entry point: touch the harvest state and the decoder so they are linked.
#[no_mangle]
pub extern "C" fn _start() -> ! {
    let req = ExecRequest::new(ExecConfig::new(Arch::Sunda, 2, 5));
    let nq = Notifications::new();
    let n = Notification::decode(&[0u8; 16]);
    core::hint::black_box((&req, &nq, &n));
    loop {}
}
