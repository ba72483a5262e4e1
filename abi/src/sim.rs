//! What a host must know about the *simulated* device that a real driver or
//! device would tell it by means outside the ioctl ABI, shared by the simulator
//! (`nrt-sim`) and the binding (`nrt-linux`) so neither imports the other.
//!
//! Every item is a **sim** choice where no public source gives the real value
//! (`docs/spec-gaps.md` names each): the INTC error-trigger layout (G-ERRTRIG),
//! the top-SP NX-local base (G-DMA-XTLOCAL), the timestamp calibration, the
//! output var ids of the simulated model, and, for the driver path
//! (`nrt-sim driver`), the BAR0 physical address the model reports and the
//! status window where it publishes what the real runtime learns from its
//! proxies and probes (G-DRV-PROBES).

use nrt_core::arch::Arch;
use nrt_core::nq::TsCal;

/// Offset of the INTC error-trigger blocks from the core's NOTIFIC block (**sim**).
pub const INTC_FROM_NOTIFIC: u64 = 0x2_0000;
/// Stride of the error-trigger blocks of one core (**sim**): 64 IOFIC groups of 0x40.
pub const INTC_BLOCK_STRIDE: u64 = 0x1000;
/// Bytes of one IOFIC group (driver §6).
pub const INTC_GROUP_BYTES: u64 = 0x40;
/// `cause` within an IOFIC group (driver §6).
pub const INTC_CAUSE: u64 = 0x00;
/// `cause_set` within an IOFIC group: write 1 bits to set them (driver §6).
pub const INTC_CAUSE_SET: u64 = 0x08;
/// Lines (IOFIC groups) per error-trigger block.
pub const INTC_LINES: u32 = 64;
/// Error-trigger blocks per core the simulator models (blocks 0 and 1: the TPB
/// indices of a two-core logical core, G-ERRTRIG).
pub const INTC_BLOCKS: u32 = 2;

/// BAR0 offset of the top-SP (engine 4) NX-local register block, `xt_local_reg`
/// (**sim**: `aws_hal_arch_*_get_xt_local_reg_offset(4)` is not public, G-DMA-XTLOCAL).
pub const fn xt_local_reg(arch: Arch) -> u64 {
    match arch {
        Arch::Sunda => 0x3060_0000,
        Arch::Cayman | Arch::Mariana => 0x06A8_0000,
    }
}

/// BAR0 offset of the semaphore/event page of TPB `tpb` (driver §3: TPB base +
/// 0x270_0000; v2 TPB n at `n*0x400_0000`, v3 at `0xD000_0000 + n*0x400_0000`).
pub const fn sema_page(arch: Arch, tpb: u32) -> u64 {
    let tpb_base = match arch {
        Arch::Sunda => tpb as u64 * 0x400_0000,
        Arch::Cayman | Arch::Mariana => 0xD000_0000 + tpb as u64 * 0x400_0000,
    };
    tpb_base + 0x270_0000
}
/// Semaphore READ alias within the page (driver §3).
pub const SEMA_READ: u64 = 0x1000;
/// Semaphore INCR alias within the page (driver §3).
pub const SEMA_INCR: u64 = 0x1800;
/// Semaphores per TPB the simulator models (driver: 256 on v2+).
pub const SEMAPHORES: u32 = 256;

/// BAR0 offset of the INTC cause register of `line` in error-trigger `block` of
/// physical core `core` (**sim** layout, see the module table).
pub const fn intc_cause_offset(arch: Arch, core: u8, block: u32, line: u32) -> Option<u64> {
    if block >= INTC_BLOCKS || line >= INTC_LINES {
        return None;
    }
    match arch.notific_base(core) {
        Some(n) => {
            Some(n + INTC_FROM_NOTIFIC + block as u64 * INTC_BLOCK_STRIDE + line as u64 * INTC_GROUP_BYTES + INTC_CAUSE)
        }
        None => None,
    }
}

/// The expected timestamp increment of every simulated engine (the
/// simulator's `program::EXPECTED_INC`).
pub const CAL_EXPECTED_INC: u32 = 1000;

/// Timestamp calibration of `(core, engine)` (`notif->init_timestamp.tpb.<engine>`).
pub fn calibration(core: u8, eng: usize) -> TsCal {
    TsCal {
        init_timestamp: 0x1000_0000 * (u64::from(core) + 1) + 0x10_0000 * eng as u64,
        actual_timestamp_inc: 1250 + 10 * eng as u32 + 5 * u32::from(core),
        expected_timestamp_inc: CAL_EXPECTED_INC,
    }
}

/// Outputs the host's tensor table holds.
pub const MAX_OUTPUTS: usize = 8;
/// The var id of output 0; output `i` is var id `FIRST_VAR_ID + i`.
pub const FIRST_VAR_ID: u16 = 100;

/// The per-core status lines a host reads through its proxies and probes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Line {
    /// The collectives barrier cleared (1) or not (0).
    BarrierDone = 0,
    /// The barrier proxy failed with this status (0: no).
    BarrierFail = 1,
    /// The network proxy failed with this status (0: no).
    NetproxyFail = 2,
    /// HBM uncorrectable error status (0, 1201 or 1205).
    Hbm = 3,
    /// A DMA engine serving the core aborted (1) or not (0).
    DmaAbort = 4,
}

/// Status lines per core ([`Line`]).
pub const LINES: usize = 5;

/// BAR0 physical address the driver model reports in `DEVICE_INFO`
/// (`bar_address[0]`): BAR_READ / BAR_WRITE addresses are this plus the
/// register's BAR offset, and the model subtracts it (driver-abi.md point 7).
/// **sim**: a real device reports its PCI BAR address.
pub const SIM_BAR0_PA: u64 = 0x0000_0040_0000_0000;

/// BAR0 offset of the driver model's status window (**sim**, G-DRV-PROBES):
/// the words the shared-memory path reads from its file header, published by
/// the model where the driver path can read them with `BAR_READ`. A real
/// runtime learns these from its collectives proxy, the HBM ECC counters and
/// `DMA_QUEUE_GET_STATE`; no public source gives one register for them.
///
/// | offset in the window | what |
/// |---|---|
/// | `8 * line + 4 * core` | status line `line` of `core` ([`Line`]; 0: none) |
/// | `0x40` / `0x44` | the device clock's origin, `CLOCK_MONOTONIC` ns, low / high word |
/// | `0x48` / `0x4C` | the model's heartbeat, `CLOCK_MONOTONIC` ns, low / high word |
/// | `0x50` | the model's logical-core width: physical cores the inference uses (0: not said) |
/// | `0x54` | the model's NQ ring entries (0: not said) |
///
/// The last two stand for what a real runtime reads from the model (NEFF) it
/// loads: `nrtctl run` takes them when its `--cores` / `--ring-entries` are not
/// given, so that `nrt-sim driver --scenario NAME -- nrtctl run` needs no flags.
pub const fn status_window(arch: Arch) -> u64 {
    // One page below the top-SP NX-local block: no register of the map is there.
    xt_local_reg(arch) - STATUS_WINDOW_BYTES
}
/// Bytes of the status window.
pub const STATUS_WINDOW_BYTES: u64 = 0x1000;
/// Offset of status line `line` of `core` in the window.
pub const fn status_line_offset(line: Line, core: u8) -> u64 {
    8 * line as u64 + 4 * core as u64
}
/// Offset of the clock origin's low word in the window.
pub const STATUS_CLOCK_ORIGIN: u64 = 0x40;
/// Offset of the heartbeat's low word in the window.
pub const STATUS_HEARTBEAT: u64 = 0x48;
/// Offset of the model's logical-core width in the window (0: not said).
pub const STATUS_MODEL_CORES: u64 = 0x50;
/// Offset of the model's NQ ring entries in the window (0: not said).
pub const STATUS_MODEL_RING_ENTRIES: u64 = 0x54;
const _: () =
    assert!(STATUS_HEARTBEAT + 8 <= STATUS_MODEL_CORES && STATUS_MODEL_CORES + 4 <= STATUS_MODEL_RING_ENTRIES);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_window_overlaps_no_register_the_host_touches() {
        for arch in [Arch::Sunda, Arch::Cayman, Arch::Mariana] {
            let (lo, hi) = (status_window(arch), status_window(arch) + STATUS_WINDOW_BYTES);
            assert!(hi <= xt_local_reg(arch));
            for core in 0..2u8 {
                let n = arch.notific_base(core).unwrap();
                assert!(n + 0x1000 <= lo || n >= hi, "{arch:?} NOTIFIC {core}");
                let i = intc_cause_offset(arch, core, INTC_BLOCKS - 1, INTC_LINES - 1).unwrap();
                assert!(i < lo || i >= hi, "{arch:?} INTC {core}");
                assert!(sema_page(arch, u32::from(core)) + 0x2000 <= lo || sema_page(arch, u32::from(core)) >= hi);
            }
            assert!(status_line_offset(Line::DmaAbort, 1) + 4 <= STATUS_CLOCK_ORIGIN);
        }
    }

    #[test]
    fn calibration_is_the_simulators() {
        let c = calibration(1, 4);
        assert_eq!(c.init_timestamp, 0x2000_0000 + 0x40_0000);
        assert_eq!(c.actual_timestamp_inc, 1250 + 40 + 5);
        assert_eq!(c.expected_timestamp_inc, CAL_EXPECTED_INC);
    }
}
