//! nrt-core on a microcontroller: the device-side management controller's view.
//!
//! The rings of two cores x five engines (and each core's error ring) live in
//! RAM; the firmware plays the device (writing records through the producer side
//! of the ring protocol, `NqProducer`), runs the real harvest
//! (`exec_wait_round_robin` over `ExecRequest::progress_one_step`) to DONE, then a
//! timeout, a ring overflow (INTC cause bit 29), an out-of-order END, and a NaN on
//! the error ring; prints each status over semihosting with the stack the harvest
//! used; and exits QEMU with success only if every status is the seed's.
//!
//! `cargo run --release` (target and runner in `.cargo/config.toml`) or
//! `cargo xtask qemu`.
#![no_std]
#![no_main]

use core::cell::Cell;
use core::mem::size_of;

use nrt_core::arch::{Arch, ENGINES_PER_CORE, MAX_CORES};
use nrt_core::event::Event;
use nrt_core::exec::{exec_wait_round_robin, ExecConfig, ExecRequest, Step};
use nrt_core::hal::{self, ErrorKind, ErrorType};
use nrt_core::nq::entry::ENTRY_SIZE;
use nrt_core::nq::ring::NqProducer;
use nrt_core::nq::{ErrorEntry, Notifications, RawEntry, Subtype, ERROR_NQ, INFER_STATUS_NQS, NQ_PER_CORE};
use nrt_core::NrtStatus;

/// Bytes per ring: 16 entries.
const RING: u32 = 256;
const RING_BYTES: usize = RING as usize;

/// INTC cause bit 29: the software NQ overflowed (completion-engine seed §5).
const INTC_OVERFLOW: u32 = 1 << 29;

#[cfg(target_arch = "arm")]
mod plat {
    // Links cortex-m's single-core `critical-section` implementation.
    use cortex_m as _;
    pub use cortex_m_rt::entry;
    pub use cortex_m_semihosting::hprintln as println;

    pub fn exit(ok: bool) -> ! {
        use cortex_m_semihosting::debug;
        debug::exit(if ok { debug::EXIT_SUCCESS } else { debug::EXIT_FAILURE });
        #[allow(clippy::empty_loop)]
        loop {}
    }

    pub const NAME: &str = "thumbv7em-none-eabihf (Cortex-M4, QEMU mps2-an386)";
}

#[cfg(target_arch = "riscv32")]
mod plat {
    // Links riscv's single-hart `critical-section` implementation.
    use riscv as _;
    pub use riscv_rt::entry;
    pub use riscv_semihosting::hprintln as println;

    pub fn exit(ok: bool) -> ! {
        use riscv_semihosting::debug;
        debug::exit(if ok { debug::EXIT_SUCCESS } else { debug::EXIT_FAILURE });
        #[allow(clippy::empty_loop)]
        loop {}
    }

    pub const NAME: &str = "riscv32imac-unknown-none-elf (QEMU virt)";
}

use plat::println;

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    println!("PANIC: {}", info);
    plat::exit(false)
}

/// The stack pointer.
#[inline(always)]
fn sp() -> usize {
    let sp: usize;
    // SAFETY: reads a register; no memory is touched.
    unsafe {
        #[cfg(target_arch = "arm")]
        core::arch::asm!("mov {}, sp", out(reg) sp, options(nomem, nostack, preserves_flags));
        #[cfg(target_arch = "riscv32")]
        core::arch::asm!("mv {}, sp", out(reg) sp, options(nomem, nostack, preserves_flags));
    }
    sp
}

/// Bytes of stack painted below the caller's frame before a measured call.
const PAINT: usize = 32 * 1024;
const PAINT_WORD: u32 = 0xC0DE_57AC;

/// Run `f` on a painted stack and return its result and the bytes of stack it
/// used below the caller's stack pointer.
#[inline(never)]
fn measured<R>(f: impl FnOnce() -> R) -> (R, usize) {
    let top = sp() & !3;
    let bottom = top - PAINT;
    // Leave 256 bytes for this frame and the calls that paint.
    let mut a = bottom;
    while a < top - 256 {
        // SAFETY: [bottom, top - 256) is free stack below the current frame (RAM
        // holds 4 MiB above .bss; the firmware's own stack use is a few KiB).
        unsafe { core::ptr::write_volatile(a as *mut u32, PAINT_WORD) };
        a += 4;
    }
    let r = f();
    let mut low = bottom;
    // SAFETY: the same region, read back.
    while low < top && unsafe { core::ptr::read_volatile(low as *const u32) } == PAINT_WORD {
        low += 4;
    }
    (r, top - low)
}

/// The device, in RAM: ring memory and producers, the INTC cause per core, a clock
/// that advances on every read.
struct RamDevice {
    mem: [[[u8; RING_BYTES]; NQ_PER_CORE]; MAX_CORES],
    prod: [[Option<NqProducer>; NQ_PER_CORE]; MAX_CORES],
    intc: [u32; MAX_CORES],
    now: Cell<u64>,
    tick_ns: u64,
    events: u32,
    dropped: u32,
}

static mut DEVICE: RamDevice = RamDevice {
    mem: [[[0; RING_BYTES]; NQ_PER_CORE]; MAX_CORES],
    prod: [[None; NQ_PER_CORE]; MAX_CORES],
    intc: [0; MAX_CORES],
    now: Cell::new(0),
    tick_ns: 0,
    events: 0,
    dropped: 0,
};

impl RamDevice {
    /// Fresh rings (all stale), clock at 1 s advancing `tick_ns` per read.
    fn reset(&mut self, tick_ns: u64) {
        for core in self.mem.iter_mut() {
            for ring in core.iter_mut() {
                ring.fill(0);
            }
        }
        for core in self.prod.iter_mut() {
            for p in core.iter_mut() {
                *p = NqProducer::new(RING).ok();
            }
        }
        self.intc = [0; MAX_CORES];
        self.now.set(1_000_000_000);
        self.tick_ns = tick_ns;
        self.events = 0;
        self.dropped = 0;
    }

    /// Write a record as the device does, or drop it and raise bit 29 when full.
    fn push(&mut self, core: usize, nq: u8, mut entry: [u8; ENTRY_SIZE]) -> bool {
        let Some(p) = self.prod[core][usize::from(nq)].as_mut() else { return false };
        match p.push(&mut entry) {
            Some(off) => {
                let off = off as usize;
                self.mem[core][usize::from(nq)][off..off + ENTRY_SIZE].copy_from_slice(&entry);
                true
            }
            None => {
                self.dropped += 1;
                self.intc[core] |= INTC_OVERFLOW;
                false
            }
        }
    }

    fn record(&mut self, core: usize, eng: usize, subtype: u16, ts: u64) -> bool {
        let nq = INFER_STATUS_NQS[eng];
        self.push(core, nq, RawEntry::new(subtype, nq, 0, 0, ts).to_array())
    }

    /// START and END on every engine of `cores` cores, but not on `(skip_core, skip_eng)`.
    fn run_all(&mut self, cores: usize, skip: Option<(usize, usize)>) {
        for core in 0..cores {
            for eng in 0..ENGINES_PER_CORE {
                if Some((core, eng)) != skip {
                    self.record(core, eng, Subtype::START, 1_000 + eng as u64);
                    self.record(core, eng, Subtype::END, 9_000 + eng as u64);
                }
            }
        }
    }
}

impl ErrorType for RamDevice {
    type Error = ErrorKind;
}

impl hal::NqRings for RamDevice {
    fn read_slot(&mut self, core: u8, nq: u8, offset: u32, out: &mut [u8; 16]) -> Result<(), ErrorKind> {
        let off = offset as usize;
        let slot = self
            .mem
            .get(usize::from(core))
            .and_then(|c| c.get(usize::from(nq)))
            .and_then(|r| r.get(off..off + ENTRY_SIZE))
            .ok_or(ErrorKind::OutOfRange)?;
        out.copy_from_slice(slot);
        Ok(())
    }
    fn write_head(&mut self, core: u8, nq: u8, head: u32) -> Result<(), ErrorKind> {
        let p = self
            .prod
            .get_mut(usize::from(core))
            .and_then(|c| c.get_mut(usize::from(nq)))
            .and_then(|p| p.as_mut())
            .ok_or(ErrorKind::NotMapped)?;
        p.on_head_write(head);
        Ok(())
    }
}

impl hal::IntcCause for RamDevice {
    fn read_cause(&mut self, core: u8, _block: u32, _line: u32) -> Result<u32, ErrorKind> {
        self.intc.get(usize::from(core)).copied().ok_or(ErrorKind::OutOfRange)
    }
}

impl hal::Clock for RamDevice {
    fn now_ns(&self) -> u64 {
        let t = self.now.get();
        self.now.set(t + self.tick_ns);
        t
    }
}

impl hal::CollectivesProxy for RamDevice {}

impl hal::FaultProbe for RamDevice {}

impl<E: Copy + Into<Event>> hal::EventSink<E> for RamDevice {
    fn event(&mut self, _: &E) {
        self.events += 1;
    }
}

impl nrt_core::counters::CounterSink for RamDevice {}

impl hal::TensorNotify for RamDevice {}

/// The sync driver's `usleep(1)`: the clock moves on its own reads.
struct Spin;

impl hal::Delay for Spin {
    fn delay_us(&mut self, _: u32) {}
}

/// The harvest, kept out of line so that its whole frame is below the measuring
/// frame's stack pointer.
#[inline(never)]
fn harvest(req: &mut ExecRequest, dev: &mut RamDevice, nq: &mut Notifications) -> nrt_core::exec::SyncWait {
    exec_wait_round_robin(req, dev, nq, &mut Spin)
}

/// One case: set the device up, harvest to DONE, compare with the seed's status.
fn case(
    dev: &mut RamDevice,
    name: &str,
    cfg: ExecConfig,
    tick_ns: u64,
    setup: impl FnOnce(&mut RamDevice),
    want: Step,
    stack_max: &mut usize,
) -> bool {
    dev.reset(tick_ns);
    setup(dev);
    let mut nq = Notifications::new();
    for core in 0..MAX_CORES as u8 {
        if nq.bind_core(core, RING).is_err() {
            println!("case {}: could not bind the rings", name);
            return false;
        }
    }
    let mut req = ExecRequest::new(cfg);
    let (w, stack) = measured(|| harvest(&mut req, dev, &mut nq));
    *stack_max = (*stack_max).max(stack);
    let want_status = want.status().unwrap_or(NrtStatus::Success);
    let ok = w.step == want && w.status == want_status;
    println!(
        "case {}: step {} status {} ({}) expected {} ({}): {} [steps {}, events {}, dropped {}, harvest stack {} B]",
        name,
        w.step.code(),
        w.status.code(),
        w.status.name(),
        want_status.code(),
        want_status.name(),
        if ok { "ok" } else { "WRONG" },
        w.steps,
        dev.events,
        dev.dropped,
        stack
    );
    ok
}

#[plat::entry]
fn main() -> ! {
    println!("nrt-core firmware on {}", plat::NAME);
    println!(
        "size_of ExecRequest {} B (libnrt 472), Notifications {} B, ring memory {} B",
        size_of::<ExecRequest>(),
        size_of::<Notifications>(),
        size_of::<[[[u8; RING_BYTES]; NQ_PER_CORE]; MAX_CORES]>()
    );
    // SAFETY: the only reference to the device, taken once, before anything else runs.
    let dev = unsafe { &mut *core::ptr::addr_of_mut!(DEVICE) };
    let mut stack = 0usize;
    let mut ok = true;
    let two = ExecConfig::new(Arch::Sunda, 2, 5);

    // Completion-engine seed §1-§3: every engine of both cores STARTs and ENDs.
    ok &= case(dev, "healthy 2x5", two, 1_000, |d| d.run_all(2, None), Step::Done(NrtStatus::Success), &mut stack);

    // §5: an engine never ENDs, the INTC says no overflow: NRT_TIMEOUT (5) once
    // 1000 * timeout_s ms have passed (10 ms per clock read).
    ok &= case(
        dev,
        "timeout",
        ExecConfig::new(Arch::Sunda, 2, 1),
        10_000_000,
        |d| d.run_all(2, Some((1, 3))),
        Step::failed(NrtStatus::Timeout),
        &mut stack,
    );

    // §5: the ring of core 0's PE fills with CC records before its START and END
    // arrive; the device drops them and raises INTC bit 29: at the timeout the
    // probe says overflow, NRT_EXEC_SW_NQ_OVERFLOW (1204).
    ok &= case(
        dev,
        "ring overflow",
        ExecConfig::new(Arch::Sunda, 2, 1),
        10_000_000,
        |d| {
            while d.record(0, 0, Subtype::CC_START, 500) {}
            d.run_all(2, None);
        },
        Step::failed(NrtStatus::ExecSwNqOverflow),
        &mut stack,
    );

    // §2: an END before its START (the START was lost, bit 29 set): the matcher
    // probes at once and fails with 1204.
    ok &= case(
        dev,
        "out-of-order END",
        two,
        1_000,
        |d| {
            d.intc[0] |= INTC_OVERFLOW;
            d.record(0, 1, Subtype::END, 9_000);
            d.run_all(2, Some((0, 1)));
        },
        Step::failed(NrtStatus::ExecSwNqOverflow),
        &mut stack,
    );

    // §4: a healthy run whose error ring carries a NaN: the harvest returns 0 and
    // the status is NRT_EXEC_COMPLETED_WITH_NUM_ERR (1003).
    ok &= case(
        dev,
        "error ring NaN",
        two,
        1_000,
        |d| {
            d.run_all(2, None);
            d.push(1, ERROR_NQ, ErrorEntry::new(1, 0, 0, 7_000).to_array());
        },
        Step::Done(NrtStatus::ExecCompletedWithNumErr),
        &mut stack,
    );

    println!("harvest stack, deepest case: {} B", stack);
    println!("firmware: {}", if ok { "every status is the seed's" } else { "a status differs from the seed's" });
    plat::exit(ok)
}
