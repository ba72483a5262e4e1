//! What a host must know about the *simulated* device that a real one would
//! tell it outside the ioctl ABI, shared by the simulator and the binding.
//!
//! Every item is a **sim** choice where no public source gives the value, each
//! named in `docs/spec-gaps.md`. The hardware's own layout is [`crate::devmap`]'s.
//!
//! Also the labels a host checks a run against: [`FAULT_NAMES`] and [`SCENARIO_LABELS`].

use nrt_core::arch::Arch;
use nrt_core::nq::TsCal;
use nrt_core::NrtStatus;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use crate::devmap;
use crate::ioctl::{Ioctl, IOC_READ, IOC_WRITE};

/// **sim**: offset of the INTC error-trigger blocks from the core's NOTIFIC block.
pub const INTC_FROM_NOTIFIC: u64 = 0x2_0000;
/// **sim**: stride of one core's error-trigger blocks, 64 IOFIC groups.
pub const INTC_BLOCK_STRIDE: u64 = 0x1000;
/// Bytes of one IOFIC group, driver §6.
pub const INTC_GROUP_BYTES: u64 = 0x40;
/// `cause` within an IOFIC group, driver §6.
pub const INTC_CAUSE: u64 = 0x00;
/// `cause_set` within an IOFIC group: write 1 bits to set them. Driver §6.
pub const INTC_CAUSE_SET: u64 = 0x08;
/// Lines, or IOFIC groups, per error-trigger block.
pub const INTC_LINES: u32 = 64;
/// Error-trigger blocks per core the simulator models: one per TPB of a
/// two-core logical core, G-ERRTRIG.
pub const INTC_BLOCKS: u32 = 2;

/// BAR0 offset of the top-SP (engine 4) NX-local register block, `xt_local_reg`
/// (**sim**, G-DMA-XTLOCAL: `aws_hal_arch_*_get_xt_local_reg_offset(4)` is not
/// public, [`devmap::Unknown::HostTrigger`]): top-SP 0's window just past its
/// SEMAPHORE resource, so the host trigger (`+ 0x15A0`) the simulated device
/// arms on is never a semaphore of any block ([`devmap::top_sp`]). A host
/// learns it from the hint query ([`SimHints::host_trigger`]), never on a
/// real driver.
pub const fn xt_local_reg(arch: Arch) -> u64 {
    match devmap::top_sp(arch, 0) {
        Some(w) => w.base + devmap::SEMAPHORE_RESOURCE_BYTES,
        None => 0,
    }
}

/// BAR0 offset of the semaphore and event block of TPB `tpb`.
pub const fn sema_page(arch: Arch, tpb: u32) -> u64 {
    devmap::semaphore_block(arch, tpb)
}
pub use devmap::{SEMAPHORES, SEMA_INCR, SEMA_READ};

/// **sim**: BAR0 offset of the INTC cause register of `line` in error-trigger
/// `block` of physical core `core`.
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

/// The expected timestamp increment of every simulated engine.
pub const CAL_EXPECTED_INC: u32 = 1000;

/// Timestamp calibration of `(core, engine)`: `notif->init_timestamp.tpb.<engine>`.
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
    /// 1 once the collectives barrier cleared.
    BarrierDone = 0,
    /// The barrier proxy's failure status, 0 for none.
    BarrierFail = 1,
    /// The network proxy's failure status, 0 for none.
    NetproxyFail = 2,
    /// HBM uncorrectable error status: 0, 1201 or 1205.
    Hbm = 3,
    /// 1 once a DMA engine serving the core aborted.
    DmaAbort = 4,
}

/// Status lines per core.
pub const LINES: usize = 5;

/// **sim**: the BAR0 physical address the driver model reports in
/// `DEVICE_INFO`; driver-abi.md point 7.
pub const SIM_BAR0_PA: u64 = 0x0000_0040_0000_0000;

/// The request number of [`SIM_HINTS`], which the real driver answers
/// `EINVAL`. Driver: neuron_cdev.c, `ncdev_misc_ioctl`.
pub const SIM_HINTS_NR: u32 = 0xE0;

/// `nrt_sim_hints.magic`: a caller zeroes it and trusts only an answer that
/// returned 0 **and** this.
pub const SIM_HINTS_MAGIC: u32 = u32::from_le_bytes(*b"NSIM");
/// The layout version the model writes into `version`.
pub const SIM_HINTS_VERSION: u32 = 2;
/// Cores whose probe words [`SimHints::lines`] holds: `MAX_NC_PER_DEVICE`.
pub const SIM_HINT_CORES: usize = 8;

/// **sim**: the answer of the hint query, G-DRV-HINTS, G-DRV-PROBES.
///
/// In: `size` is `size_of::<SimHints>()`, else `EINVAL`, and `magic` 0. The
/// model writes every other field:
///
/// | field | what |
/// |---|---|
/// | `magic`, `version` | [`SIM_HINTS_MAGIC`], [`SIM_HINTS_VERSION`] |
/// | `model_cores` | physical cores the inference uses, 0 if not said |
/// | `ring_entries` | the model's NQ ring entries, 0 if not said |
/// | `device_cores` | cores whose `lines` the device publishes |
/// | `clock_origin_ns` | the device clock's origin, `CLOCK_MONOTONIC` ns |
/// | `heartbeat_ns` | the device's last heartbeat, `CLOCK_MONOTONIC` ns |
/// | `lines[core][line]` | status [`Line`] `line` of `core`, 0 for none |
/// | `host_trigger` | BAR0 offset of the host trigger the device arms on ([`xt_local_reg`] `+ 0x15A0`) |
///
/// On a real driver the call fails, and a host takes these from its own
/// configuration and probes, or says they are absent.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct SimHints {
    /// In 0, out [`SIM_HINTS_MAGIC`].
    pub magic: u32,
    /// Out: [`SIM_HINTS_VERSION`].
    pub version: u32,
    /// In: `size_of::<SimHints>()`.
    pub size: u32,
    /// Out: the model's logical-core width, 0 if not said.
    pub model_cores: u32,
    /// Out: the model's NQ ring entries, 0 if not said.
    pub ring_entries: u32,
    /// Out: cores whose status lines the device publishes.
    pub device_cores: u32,
    /// Out: the device clock's origin, `CLOCK_MONOTONIC` ns.
    pub clock_origin_ns: u64,
    /// Out: the device's heartbeat, `CLOCK_MONOTONIC` ns.
    pub heartbeat_ns: u64,
    /// Out: `lines[core][line as usize]`, the status [`Line`]s.
    pub lines: [[u32; LINES]; SIM_HINT_CORES],
    /// Out: BAR0 offset of the top-SP host trigger (0: the device needs none).
    pub host_trigger: u64,
}
const _: () = assert!(core::mem::size_of::<SimHints>() == 208);

/// The simulator's hint query, `_IOWR('N', 0xE0, struct nrt_sim_hints)`,
/// answered only by `nrt-sim driver`'s model.
pub const SIM_HINTS: Ioctl<SimHints> = Ioctl::by_value(IOC_READ | IOC_WRITE, SIM_HINTS_NR, "NRT_SIM_IOCTL_HINTS");

/// The names of the faults `nrt-sim run --inject` takes, in the contract's
/// order; a host that only labels a run checks a name against this list.
pub const FAULT_NAMES: [&str; 16] = [
    "hang",
    "drop",
    "dup-start",
    "unexpected",
    "nan",
    "transient",
    "seq-error",
    "ecc-ue",
    "ecc-ce",
    "hbm-ue",
    "hbm-repairable",
    "barrier-delay",
    "barrier-fail",
    "netproxy-fail",
    "overflow",
    "corrupt",
];

/// A named scenario as a host sees it; `nrt_sim::scenario` is checked against it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScenarioLabel {
    /// Short kebab-case name.
    pub name: &'static str,
    /// One line: what happens and why the status follows.
    pub description: &'static str,
    /// The status it must end with.
    pub expected: NrtStatus,
    /// The one-step return code it must end with, 0 or 2.
    pub expected_rc: u8,
    /// Physical cores of its logical core.
    pub cores: u8,
    /// Entries per NQ ring.
    pub ring_entries: u32,
    /// Its injected faults, as canonical `--inject` specs.
    pub faults: &'static [&'static str],
    /// Where a host on a real driver ends otherwise, and why, G-DRV-REAL.
    pub real_path: Option<RealPath>,
}

/// A scenario's end on a real driver, where a fact it needs has no public
/// register or comes from a probe only the simulator answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RealPath {
    /// The status it ends with there.
    pub expected: NrtStatus,
    /// The one-step return code it ends with there.
    pub expected_rc: u8,
    /// Why, in one line.
    pub why: &'static str,
}

/// The INTC overflow bit is not read on a real driver: a drop looks like a hang.
const INTC_UNREAD: &str = "the INTC cause register has no public address: its overflow bit is not read";
/// A hint-only probe: a real runtime asks its collectives proxy or HBM counters.
const PROBE_UNREAD: &str = "the probe is the simulator's hint query, which a real driver refuses";

const fn real(expected: NrtStatus, expected_rc: u8, why: &'static str) -> Option<RealPath> {
    Some(RealPath { expected, expected_rc, why })
}

impl ScenarioLabel {
    /// The label of scenario `name`.
    pub fn find(name: &str) -> Option<&'static ScenarioLabel> {
        SCENARIO_LABELS.iter().find(|s| s.name == name)
    }
}

const fn label(
    name: &'static str,
    description: &'static str,
    expected: NrtStatus,
    expected_rc: u8,
    faults: &'static [&'static str],
) -> ScenarioLabel {
    ScenarioLabel { name, description, expected, expected_rc, cores: 2, ring_entries: 64, faults, real_path: None }
}

/// Every named scenario's label, in the order `nrt-sim scenarios` lists them.
pub static SCENARIO_LABELS: &[ScenarioLabel] = &[
    ScenarioLabel {
        cores: 1,
        ..label("healthy-1core", "one core, five engines START and END: clean", NrtStatus::Success, 0, &[])
    },
    label("healthy-2core", "two cores, ten engines, a CC pair on SP: clean", NrtStatus::Success, 0, &[]),
    label(
        "hang",
        "core 0 DVE starts and never ends: INTC bit 29 clear at the timeout -> NRT_TIMEOUT",
        NrtStatus::Timeout,
        2,
        &["hang:core=0,engine=DVE"],
    ),
    ScenarioLabel {
        real_path: real(NrtStatus::Timeout, 2, INTC_UNREAD),
        ..label(
            "drop-end-overflow",
            "core 0 PE's END is dropped with INTC bit 29 raised: overflow at the timeout -> 1204",
            NrtStatus::ExecSwNqOverflow,
            2,
            &["drop:core=0,engine=PE,record=end,overflow"],
        )
    },
    label(
        "drop-end",
        "core 1 SP's END is dropped without the overflow bit: indistinguishable from a hang -> 5",
        NrtStatus::Timeout,
        2,
        &["drop:core=1,engine=SP,record=end"],
    ),
    ScenarioLabel {
        ring_entries: 4,
        real_path: real(NrtStatus::Timeout, 2, INTC_UNREAD),
        ..label(
            "ring-overflow",
            "4-entry rings; core 0 POOL bursts 10 records with its END: the device drops, raises bit 29 -> 1204",
            NrtStatus::ExecSwNqOverflow,
            2,
            &["overflow:core=0,engine=POOL"],
        )
    },
    label(
        "dup-start",
        "core 1 ACT writes START twice, no overflow bit: out-of-order START -> NRT_FAILURE",
        NrtStatus::Failure,
        2,
        &["dup-start:core=1,engine=ACT"],
    ),
    ScenarioLabel {
        real_path: real(NrtStatus::Failure, 2, INTC_UNREAD),
        ..label(
            "dup-start-overflow",
            "as dup-start, with INTC bit 29 raised first: the duplicate is overflow evidence -> 1204",
            NrtStatus::ExecSwNqOverflow,
            2,
            &["dup-start:core=0,engine=PE,overflow"],
        )
    },
    label(
        "drop-start",
        "core 0 SP's START is dropped: its END arrives out of order, bit 29 clear -> NRT_FAILURE",
        NrtStatus::Failure,
        2,
        &["drop:core=0,engine=SP,record=start"],
    ),
    label(
        "nan",
        "core 0 reports a NaN on its error ring: clean harvest (return 0), status 1003",
        NrtStatus::ExecCompletedWithNumErr,
        0,
        &["nan:core=0"],
    ),
    label(
        "transient",
        "a TRANSIENT error record on core 0 -> 1004",
        NrtStatus::ExecCompletedWithErr,
        0,
        &["transient:core=0"],
    ),
    label(
        "seq-error",
        "a SW_SEQUENCER error record on core 1, with its code -> 1004",
        NrtStatus::ExecCompletedWithErr,
        0,
        &["seq-error:core=1"],
    ),
    label(
        "ecc-ue",
        "an uncorrectable ECC record on core 0 after a clean run -> 1202 (return 0)",
        NrtStatus::ExecHwErrNcUe,
        0,
        &["ecc-ue:core=0"],
    ),
    label(
        "ecc-ce",
        "a correctable ECC record on core 0: an event, status unchanged -> 0",
        NrtStatus::Success,
        0,
        &["ecc-ce:core=0"],
    ),
    label(
        "core1-nan",
        "core 0 healthy, core 1 NaN: priority reconciles the cores -> 1003",
        NrtStatus::ExecCompletedWithNumErr,
        0,
        &["nan:core=1"],
    ),
    label(
        "barrier-300s",
        "the collectives barrier clears after 300 s: warnings at 120 s and 240 s, never fatal -> 0",
        NrtStatus::Success,
        0,
        &["barrier-delay:secs=300"],
    ),
    label(
        "unexpected-subtype",
        "core 0 SP writes a record of subtype 9 mid-run: unexpected notification -> NRT_FAILURE",
        NrtStatus::Failure,
        2,
        &["unexpected:core=0,engine=SP,subtype=9"],
    ),
    label(
        "tensor-streaming",
        "core 0 ACT streams outputs (custom sub-id 7, var ids 100 101 100 102): waiters woken in order",
        NrtStatus::Success,
        0,
        &[],
    ),
    label(
        "cayman-fixup",
        "cayman; a custom record on engine index 2 (the binary's eng == 2, POOL in runtime order; the seed says \
         DVE) carries a stale NQ-id: the fixup forces tag 0xE",
        NrtStatus::Success,
        0,
        &[],
    ),
    label(
        "corrupt",
        "8 random entries on core 0 DVE's ring: the first one read decides; a random subtype is unexpected -> \
         NRT_FAILURE, never a panic",
        NrtStatus::Failure,
        2,
        &["corrupt:core=0,engine=DVE,count=8"],
    ),
    ScenarioLabel {
        real_path: real(NrtStatus::Timeout, 2, PROBE_UNREAD),
        ..label(
            "hbm-ue",
            "an unrepairable HBM UE stalls core 0: the timeout is reclassified by the HBM probe -> 1201",
            NrtStatus::ExecHwErrHbmUe,
            2,
            &["hbm-ue:core=0"],
        )
    },
    ScenarioLabel {
        real_path: real(NrtStatus::Timeout, 2, PROBE_UNREAD),
        ..label(
            "hbm-repairable",
            "a repairable HBM UE stalls core 1: reclassified at the timeout (COMPLETE-1) -> 1205",
            NrtStatus::ExecHwErrRepairableHbmUe,
            2,
            &["hbm-repairable:core=1"],
        )
    },
    ScenarioLabel {
        real_path: real(NrtStatus::Success, 0, PROBE_UNREAD),
        ..label(
            "barrier-fail",
            "core 1's barrier proxy fails: exec_fatal_status[1][5], finalized at once -> 1200",
            NrtStatus::ExecHwErrCollectives,
            2,
            &["barrier-fail:core=1"],
        )
    },
    ScenarioLabel {
        real_path: real(NrtStatus::Success, 0, PROBE_UNREAD),
        ..label(
            "netproxy-fail",
            "core 0's network proxy fails in WAIT_CORE: exec_fatal_status[0][4] -> 1206",
            NrtStatus::NetworkProxyFailure,
            2,
            &["netproxy-fail:core=0"],
        )
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_trigger_is_in_the_top_sp_window_past_its_semaphores() {
        use crate::devmap::{region_of, Region};
        for arch in [Arch::Sunda, Arch::Cayman, Arch::Mariana] {
            let t = xt_local_reg(arch) + nrt_core::dma::HOST_TRIGGER_OFFSET;
            assert_eq!(region_of(arch, t, 4), Some(Region::TopSp(0)), "{arch:?}");
            for core in 0..2u8 {
                let i = intc_cause_offset(arch, core, INTC_BLOCKS - 1, INTC_LINES - 1).unwrap();
                assert_ne!(region_of(arch, i, 4).map(|_| ()), Some(()), "{arch:?}: the INTC guess is unnamed space");
            }
        }
        assert_eq!(xt_local_reg(Arch::Cayman), 0xF000_2000);
    }

    #[test]
    fn the_hint_query_is_a_request_the_driver_does_not_define() {
        use crate::ioctl::{ioc_size, ALL_REQUESTS};
        assert_eq!(SIM_HINTS.code(), 0xC0D0_4EE0);
        assert_eq!(SIM_HINTS.nr(), SIM_HINTS_NR);
        assert_eq!(ioc_size(SIM_HINTS.code()) as usize, core::mem::size_of::<SimHints>());
        // The driver's numbers: 1..=124 and 133 (neuron_ioctl.h at fca19f7).
        let nr = SIM_HINTS.nr();
        assert!(nr > 124 && nr != 133);
        // No request of the driver's that this crate names has the number.
        for (nr, code, name) in ALL_REQUESTS {
            assert!(code == SIM_HINTS.code() || nr != SIM_HINTS_NR, "{name}");
        }
        assert_eq!(&SIM_HINTS_MAGIC.to_le_bytes(), b"NSIM");
        assert_eq!(core::mem::offset_of!(SimHints, clock_origin_ns), 24);
        assert_eq!(core::mem::offset_of!(SimHints, lines), 40);
    }

    #[test]
    fn calibration_is_the_simulators() {
        let c = calibration(1, 4);
        assert_eq!(c.init_timestamp, 0x2000_0000 + 0x40_0000);
        assert_eq!(c.actual_timestamp_inc, 1250 + 40 + 5);
        assert_eq!(c.expected_timestamp_inc, CAL_EXPECTED_INC);
    }
}
