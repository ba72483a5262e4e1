//! The device's layout as the public driver states it: each NeuronCore's DMA
//! engines, the BAR0 windows, and the v3 logical-to-physical core map.
//!
//! No hardware offset is written anywhere else: the binding, the simulator and
//! the driver model all take it from here. Each fact names the driver file and
//! function, aws-neuron-driver at fca19f7. What no public source gives is an
//! [`Unknown`], reported and never guessed; see `docs/driver-conformance.md`.
//! The NOTIFIC blocks alone live in `nrt_core::arch`, for the no_std harvest.

use nrt_core::arch::{Arch, NOTIFIC_BLOCK_BYTES};

/// DMA engines each NeuronCore owns, from `16n`. Driver: neuron_dhal_v*.c,
/// `ndmar_quiesce_queues_v2`, `_v3`.
pub const ENGINES_PER_NC: u32 = 16;

/// The DMA engines NeuronCore `nc` owns, `None` past the device's cores.
pub const fn engines_of(arch: Arch, nc: u8) -> Option<core::ops::Range<u32>> {
    if nc >= arch.nc_per_device() {
        return None;
    }
    let first = nc as u32 * ENGINES_PER_NC;
    Some(first..first + ENGINES_PER_NC)
}

/// The NeuronCore that owns DMA engine `eng`; `None` for the driver's own H2T
/// engines and ids past the device.
pub const fn owner_of(arch: Arch, eng: u32) -> Option<u8> {
    let nc = eng / ENGINES_PER_NC;
    if nc < arch.nc_per_device() as u32 {
        Some(nc as u8)
    } else {
        None
    }
}

/// Whether a core's DMA engine `eng` reaches host memory: all on v2, engines
/// 4-7 and 12-15 of each 16 on v3; mariana as v3, G-DRV-ARCH4. Driver:
/// neuron_dhal_v*.c, `ndma_get_engines_with_host_connectivity_v2`, `_v3`.
pub const fn host_connected(arch: Arch, eng: u32) -> bool {
    if owner_of(arch, eng).is_none() {
        return false;
    }
    match arch {
        Arch::Sunda => true,
        Arch::Cayman | Arch::Mariana => eng % 8 >= 4,
    }
}

/// The HBM, a device allocation's `dram_channel`, of DMA engine `eng`: 16
/// engines per HBM on v2, 32 on v3. Driver: neuron_dhal_v*.c,
/// `ndma_get_engines_with_host_connectivity_v2`, `_v3`.
pub const fn hbm_of(arch: Arch, eng: u32) -> u32 {
    match arch {
        Arch::Sunda => eng / 16,
        Arch::Cayman | Arch::Mariana => eng / 32,
    }
}

/// The DMA engine a session on NeuronCore `nc` stages host copies on: the
/// core's first [`host_connected`] engine. Only the core's owner uses it, so
/// sessions on two cores never share a queue.
pub const fn host_engine(arch: Arch, nc: u8) -> Option<u32> {
    let Some(r) = engines_of(arch, nc) else { return None };
    let mut e = r.start;
    while e < r.end {
        if host_connected(arch, e) {
            return Some(e);
        }
        e += 1;
    }
    None
}

/// Bytes of one UDMA engine's register window, the stride between engines.
/// Driver: v2|v3/address_map.h.
pub const fn udma_window_bytes(arch: Arch) -> u64 {
    match arch {
        Arch::Sunda => 0x4_0000,
        Arch::Cayman | Arch::Mariana => 0x10_0000,
    }
}

/// BAR0 offsets of the v3 SDMA engine groups, 32 engines each. Driver:
/// v3/address_map.h, `V3_APB_SE_n_SDMA_0_BASE`.
const V3_SDMA_GROUPS: [u64; 4] = [0x8200_0000, 0x9400_0000, 0xA200_0000, 0xB400_0000];
/// BAR0 offsets of v2's two groups of 16 core engines. Driver: v2/address_map.h,
/// `V2_APB_SENG_n_UDMA_0_BASE`.
const V2_CORE_GROUPS: [u64; 2] = [V2_APB, V2_APB + 0x70_0000];

/// BAR0 offsets of the driver's own DMA engines past the cores': v2 D2H and
/// H2D, v3 two of each. Driver: v2|v3/address_map.h, `ndma_init_v2`, `_v3`.
const fn driver_engines(arch: Arch) -> &'static [u64] {
    match arch {
        Arch::Sunda => &[0x3060_0000, 0x30D0_0000],
        Arch::Cayman | Arch::Mariana => &[0x0680_0000, 0x0690_0000, 0x4680_0000, 0x4690_0000],
    }
}

/// DMA engines a device has, its cores' and the driver's own.
pub const fn engine_count(arch: Arch) -> u32 {
    arch.nc_per_device() as u32 * ENGINES_PER_NC + driver_engines(arch).len() as u32
}

/// BAR0 offset of DMA engine `eng`'s register window, `None` past the device.
/// Driver: `ndma_init_v2`, `_v3`.
pub const fn udma_base(arch: Arch, eng: u32) -> Option<u64> {
    let cores = arch.nc_per_device() as u32 * ENGINES_PER_NC;
    if eng >= cores {
        let own = driver_engines(arch);
        let i = (eng - cores) as usize;
        return if i < own.len() { Some(own[i]) } else { None };
    }
    Some(match arch {
        Arch::Sunda => V2_CORE_GROUPS[(eng / 16) as usize] + (eng % 16) as u64 * 0x4_0000,
        Arch::Cayman | Arch::Mariana => V3_SDMA_GROUPS[(eng / 32) as usize] + (eng % 32) as u64 * 0x10_0000,
    })
}

/// A window of BAR0: its offset and size in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// BAR0 offset of its first byte.
    pub base: u64,
    /// Its size in bytes.
    pub bytes: u64,
}

impl Window {
    /// Whether `off .. off + len` lies inside the window.
    pub const fn holds(self, off: u64, len: u64) -> bool {
        off >= self.base && len <= self.bytes && off - self.base <= self.bytes - len
    }
}

/// Top-SP blocks a device exposes: v2 6 (`V2_TS_PER_DEVICE`), v3 16, two per
/// NC (`V3_TS_PER_DEVICE`) (v2/v3 address_map.h).
pub const fn top_sp_count(arch: Arch) -> u8 {
    match arch {
        Arch::Sunda => 6,
        Arch::Cayman | Arch::Mariana => 16,
    }
}

/// BAR0 window of top-SP `n`, 4 MiB each, the one definition the simulator and
/// the binding derive theirs from. v2: 0x1000_0000 + n * 0x40_0000,
/// `V2_PCIE_BAR0_TOPSP_0_OFFSET` and `V2_TOP_SP_0_SIZE`. v3: 0..=7 from
/// 0xF000_0000, `V3_PCIE_BAR0_TOP_SP_0_OFFSET` written with 15 hex digits and
/// so not 0x0F00_0000; 8..=15 from 0xF280_0000, `V3_PCIE_BAR0_TOP_SP_10_OFFSET`
/// on die 1. Driver: v2/address_map.h, v3/address_map.h.
pub const fn top_sp(arch: Arch, n: u8) -> Option<Window> {
    if n >= top_sp_count(arch) {
        return None;
    }
    let base = match arch {
        Arch::Sunda => 0x1000_0000 + n as u64 * TOP_SP_BYTES,
        Arch::Cayman | Arch::Mariana if n < 8 => 0xF000_0000 + n as u64 * TOP_SP_BYTES,
        Arch::Cayman | Arch::Mariana => 0xF280_0000 + (n - 8) as u64 * TOP_SP_BYTES,
    };
    Some(Window { base, bytes: TOP_SP_BYTES })
}
/// Bytes of one top-SP window (4 MiB, v2 and v3).
pub const TOP_SP_BYTES: u64 = 0x40_0000;

/// Bytes at the start of each top-SP window and each TPB semaphore block
/// that the driver's mmap table names the SEMAPHORE resource: events, then
/// the semaphore aliases (`dm_mmap_special_v2`, `_v3`).
pub const SEMAPHORE_RESOURCE_BYTES: u64 = 0x2000;
/// Semaphore READ alias within a semaphore resource (`V*_MMAP_NC_SEMA_READ_OFFSET`).
pub const SEMA_READ: u64 = 0x1000;
/// Semaphore SET alias (`V*_MMAP_NC_SEMA_SET_OFFSET`).
pub const SEMA_SET: u64 = 0x1400;
/// Semaphore INCR alias (`V*_MMAP_NC_SEMA_INCR_OFFSET`).
pub const SEMA_INCR: u64 = 0x1800;
/// Semaphore DECR alias (`V*_MMAP_NC_SEMA_DECR_OFFSET`).
pub const SEMA_DECR: u64 = 0x1C00;
/// BAR0 offset of v2's APB register block (`V2_PCIE_BAR0_APB_OFFSET`,
/// v2/address_map.h): the cores' UDMA engines, NOTIFIC blocks and misc RAM.
pub const V2_APB: u64 = 0x3000_0000;

/// The firmware mailbox words of misc RAM a BAR write may not touch, at
/// `FW_IO_REG_*_OFFSET` from the misc-RAM base. Driver: neuron_dhal_v*.c,
/// `ncdev_bar0_write_blocked_addrs_v2`, `_v3`.
pub const fn mailbox_words(arch: Arch) -> [(u64, &'static str); 5] {
    let misc = match arch {
        Arch::Sunda => V2_APB + 0xE0_0000 + 0x1A_0000,
        Arch::Cayman | Arch::Mariana => 0x680_0000 + 0x48_4000,
    };
    [
        (misc + 0x1F0, "firmware mailbox request base high"),
        (misc + 0x1F4, "firmware mailbox request base low"),
        (misc + 0x1F8, "firmware mailbox response base high"),
        (misc + 0x1FC, "firmware mailbox response base low"),
        (misc + 0x800, "firmware mailbox trigger interrupt (no-sec)"),
    ]
}

/// Semaphores per block, `V2_SEMAPHORE_COUNT`.
pub const SEMAPHORES: u32 = 256;

/// BAR0 offset of TPB `nc`'s semaphore and event block, for any `nc`;
/// [`tpb_semaphores`] checks the core. Driver: v2|v3/address_map.h,
/// `V*_PCIE_BAR0_TPB_0_OFFSET`, `V*_MMAP_NC_EVENT_OFFSET`.
pub const fn semaphore_block(arch: Arch, nc: u32) -> u64 {
    let tpb = match arch {
        Arch::Sunda => nc as u64 * 0x400_0000,
        Arch::Cayman | Arch::Mariana => 0xD000_0000 + nc as u64 * 0x400_0000,
    };
    tpb + 0x270_0000
}

/// NeuronCore `nc`'s semaphore and event block, `None` past the device's
/// cores. Driver: `dm_mmap_special_v2`, `_v3`.
pub const fn tpb_semaphores(arch: Arch, nc: u8) -> Option<Window> {
    if nc >= arch.nc_per_device() {
        return None;
    }
    Some(Window { base: semaphore_block(arch, nc as u32), bytes: SEMAPHORE_RESOURCE_BYTES })
}

/// What a BAR0 offset is, by the driver's map.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Region {
    /// NeuronCore `0`'s NOTIFIC block: its NQ registers (`nrt_core::arch::nq_head_register`).
    Notific(u8),
    /// DMA engine `0`'s registers (past the cores' engines: the driver's own).
    Udma(u32),
    /// NeuronCore `0`'s semaphore/event block.
    TpbSemaphores(u8),
    /// Top-SP `0`'s SEMAPHORE resource (its first [`SEMAPHORE_RESOURCE_BYTES`]).
    TopSpSemaphores(u8),
    /// Top-SP `0`'s window past its semaphores: no register the public map names.
    TopSp(u8),
}

/// The region of BAR0 holding `off .. off + len`, `None` where the driver's
/// map names nothing (a runtime has no register to touch there).
pub fn region_of(arch: Arch, off: u64, len: u64) -> Option<Region> {
    let nc_count = arch.nc_per_device();
    for nc in 0..nc_count {
        if let Some(base) = arch.notific_base(nc) {
            if (Window { base, bytes: NOTIFIC_BLOCK_BYTES }).holds(off, len) {
                return Some(Region::Notific(nc));
            }
        }
        if let Some(w) = tpb_semaphores(arch, nc) {
            if w.holds(off, len) {
                return Some(Region::TpbSemaphores(nc));
            }
        }
    }
    let stride = udma_window_bytes(arch);
    for eng in 0..engine_count(arch) {
        if let Some(base) = udma_base(arch, eng) {
            if (Window { base, bytes: stride }).holds(off, len) {
                return Some(Region::Udma(eng));
            }
        }
    }
    for n in 0..top_sp_count(arch) {
        if let Some(w) = top_sp(arch, n) {
            if w.holds(off, len) {
                let sem = Window { base: w.base, bytes: SEMAPHORE_RESOURCE_BYTES };
                return Some(if sem.holds(off, len) { Region::TopSpSemaphores(n) } else { Region::TopSp(n) });
            }
        }
    }
    None
}

/// Host-wide logical cores the v3 map has, `NC_MAPPING_MAX_CORE_COUNT_V3`.
pub const LOGICAL_CORES: u32 = 128;

/// The four rows of v3's `nc_mapping_v0_seng_swap`: the device core of each of
/// a device's logical positions. Driver: v3/neuron_dhal_v3.c.
const V3_ROWS: [[u8; 8]; 4] =
    [[4, 5, 6, 7, 2, 3, 0, 1], [2, 3, 0, 1, 4, 5, 6, 7], [0, 1, 2, 3, 6, 7, 4, 5], [6, 7, 4, 5, 0, 1, 2, 3]];

/// The row of device `d`.
const fn v3_row(device: u32) -> usize {
    ((device & 1) + 2 * ((device >> 2) & 1)) as usize
}

/// Whether the driver answers `GET_LOGICAL_TO_PHYSICAL_NC_MAP`: v3 sets
/// `ncdev_logical_to_physical_nc_map`, v1 and v2 leave it NULL. Driver:
/// v2/neuron_dhal_v2.c, v3/neuron_dhal_v3.c, `ndhal_register_funcs_v*`.
pub const fn has_core_map(arch: Arch) -> bool {
    !matches!(arch, Arch::Sunda)
}

/// HBM channels of a device: `V2_MAX_DRAM_CHANNELS` 2, `V3_MAX_DRAM_CHANNELS` 4.
/// Driver: v2/address_map.h, v3/address_map.h.
pub const fn dram_channels(arch: Arch) -> u32 {
    if has_core_map(arch) {
        4
    } else {
        2
    }
}

/// Where host-wide logical core `k` is, `(device, device core)`, as
/// `GET_LOGICAL_TO_PHYSICAL_NC_MAP` answers on v3 outside ultraserver pods.
/// v2 has no map: `k / 2`, `k % 2`. Driver: `ncdev_logical_to_physical_nc_map_v3`.
pub const fn logical_to_physical(arch: Arch, k: u32) -> Option<(u32, u8)> {
    let per = arch.nc_per_device() as u32;
    if !has_core_map(arch) {
        return Some((k / per, (k % per) as u8));
    }
    if k >= LOGICAL_CORES {
        return None;
    }
    let device = k / per;
    Some((device, V3_ROWS[v3_row(device)][(k % per) as usize]))
}

/// A fact the real path needs and no public source gives: the binding reports
/// it on a real driver instead of guessing (the simulator names its own
/// choice through its hint query).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unknown {
    /// The INTC error-trigger cause register the overflow test reads (the
    /// seed's `aws_hal_intc_read_cause(block, 61)`): no public BAR0 offset.
    IntcCause,
    /// The NX-local block of the top-SP where the host trigger (+0x15A0)
    /// goes: no public offset inside the top-SP window, whose first
    /// [`SEMAPHORE_RESOURCE_BYTES`] are its semaphores.
    HostTrigger,
}

impl Unknown {
    /// What is unknown and what the real path does about it, in one line.
    pub const fn what(self) -> &'static str {
        match self {
            Unknown::IntcCause => {
                "no public source gives the INTC cause register's address: bit 29 is not read (the seed's fallback: \
                 no overflow)"
            }
            Unknown::HostTrigger => {
                "no public source gives the top-SP's NX-local block: the host trigger is not written (the window's \
                 first 0x2000 bytes are its semaphores)"
            }
        }
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::vec::Vec;

    const ARCHES: [Arch; 3] = [Arch::Sunda, Arch::Cayman, Arch::Mariana];

    /// Each core's staging engine is on the HBM the driver groups it with:
    /// trn1's two cores one each, trn2's eight cores two per HBM.
    #[test]
    fn only_v3_and_later_have_the_core_map_and_four_hbm_channels() {
        assert_eq!((has_core_map(Arch::Sunda), dram_channels(Arch::Sunda)), (false, 2));
        for arch in [Arch::Cayman, Arch::Mariana] {
            assert_eq!((has_core_map(arch), dram_channels(arch)), (true, 4), "{arch:?}");
        }
        assert_eq!(logical_to_physical(Arch::Sunda, 3), Some((1, 1)), "v2: k / 2, k % 2");
        assert_eq!(logical_to_physical(Arch::Cayman, 0), Some((0, 4)), "v3: the driver's row 0");
        assert_eq!(logical_to_physical(Arch::Cayman, LOGICAL_CORES), None);
    }

    #[test]
    fn the_staging_engine_of_each_core_is_on_its_hbm() {
        let hbms = |arch: Arch| -> Vec<u32> {
            (0..arch.nc_per_device()).map(|nc| hbm_of(arch, host_engine(arch, nc).unwrap())).collect()
        };
        assert_eq!(hbms(Arch::Sunda), [0, 1]);
        assert_eq!(hbms(Arch::Cayman), [0, 0, 1, 1, 2, 2, 3, 3]);
        assert_eq!((hbm_of(Arch::Sunda, 15), hbm_of(Arch::Sunda, 16)), (0, 1));
        assert_eq!((hbm_of(Arch::Cayman, 31), hbm_of(Arch::Cayman, 32)), (0, 1));
    }

    #[test]
    fn each_core_owns_sixteen_engines_and_the_h2t_engines_are_nobodys() {
        assert_eq!(engines_of(Arch::Sunda, 1), Some(16..32));
        assert_eq!(engines_of(Arch::Cayman, 7), Some(112..128));
        assert_eq!(engines_of(Arch::Sunda, 2), None);
        for arch in ARCHES {
            for eng in 0..140 {
                let owner = owner_of(arch, eng);
                assert_eq!(owner.is_some(), eng < u32::from(arch.nc_per_device()) * 16, "{arch:?} {eng}");
                if let Some(nc) = owner {
                    assert!(engines_of(arch, nc).unwrap().contains(&eng));
                }
            }
        }
        // The driver's H2T engines: v2 32 and 33, v3 128..=131.
        assert_eq!(owner_of(Arch::Sunda, 32), None);
        assert_eq!(owner_of(Arch::Cayman, 128), None);
    }

    #[test]
    fn host_connectivity_is_the_drivers() {
        assert!((0..32).all(|e| host_connected(Arch::Sunda, e)));
        let v3: Vec<u32> = (0..32).filter(|e| host_connected(Arch::Cayman, *e)).collect();
        assert_eq!(v3, [4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31]);
        assert!(!host_connected(Arch::Cayman, 128) && !host_connected(Arch::Sunda, 33));
        assert_eq!(host_engine(Arch::Sunda, 0), Some(0));
        assert_eq!(host_engine(Arch::Sunda, 1), Some(16));
        assert_eq!(host_engine(Arch::Cayman, 0), Some(4));
        assert_eq!(host_engine(Arch::Cayman, 3), Some(52));
        assert_eq!(host_engine(Arch::Sunda, 2), None);
        for arch in ARCHES {
            for nc in 0..arch.nc_per_device() {
                let e = host_engine(arch, nc).unwrap();
                assert_eq!(owner_of(arch, e), Some(nc));
                assert!(host_connected(arch, e));
            }
        }
    }

    #[test]
    fn engine_bases_are_the_address_maps() {
        assert_eq!(udma_base(Arch::Sunda, 0), Some(0x3000_0000));
        assert_eq!(udma_base(Arch::Sunda, 15), Some(0x303C_0000));
        assert_eq!(udma_base(Arch::Sunda, 16), Some(0x3070_0000));
        assert_eq!(udma_base(Arch::Sunda, 32), Some(0x3060_0000));
        assert_eq!(udma_base(Arch::Sunda, 34), None);
        assert_eq!(udma_base(Arch::Cayman, 4), Some(0x8240_0000));
        assert_eq!(udma_base(Arch::Cayman, 33), Some(0x9410_0000));
        assert_eq!(udma_base(Arch::Cayman, 16), Some(0x8300_0000));
        assert_eq!(udma_base(Arch::Cayman, 64), Some(0xA200_0000));
        assert_eq!(udma_base(Arch::Cayman, 129), Some(0x0690_0000));
        assert_eq!(udma_base(Arch::Cayman, 132), None);
        assert_eq!((engine_count(Arch::Sunda), engine_count(Arch::Cayman)), (34, 132));
        // No two engine windows overlap, and none overlaps a driver engine.
        for arch in ARCHES {
            let w = udma_window_bytes(arch);
            let mut bases: Vec<u64> = (0..200).filter_map(|e| udma_base(arch, e)).collect();
            assert_eq!(bases.len() as u32, engine_count(arch), "{arch:?}");
            bases.sort_unstable();
            bases.dedup();
            assert!(bases.windows(2).all(|p| p[0] + w <= p[1]), "{arch:?}");
        }
    }

    #[test]
    fn the_top_sp_windows_start_with_their_semaphores() {
        assert_eq!(top_sp(Arch::Sunda, 0), Some(Window { base: 0x1000_0000, bytes: 0x40_0000 }));
        assert_eq!(top_sp(Arch::Sunda, 5).map(|w| w.base), Some(0x1140_0000));
        assert_eq!(top_sp(Arch::Sunda, 6), None);
        assert_eq!(top_sp(Arch::Cayman, 0).map(|w| w.base), Some(0xF000_0000));
        assert_eq!(top_sp(Arch::Cayman, 7).map(|w| w.base), Some(0xF1C0_0000));
        assert_eq!(top_sp(Arch::Cayman, 8).map(|w| w.base), Some(0xF280_0000));
        assert_eq!(top_sp(Arch::Cayman, 9).map(|w| w.base), Some(0xF2C0_0000));
        assert_eq!(top_sp(Arch::Cayman, 16), None);
        assert_eq!(semaphore_block(Arch::Sunda, 0), 0x270_0000);
        assert_eq!(semaphore_block(Arch::Sunda, 1), 0x670_0000);
        assert_eq!(semaphore_block(Arch::Cayman, 1), 0xD670_0000);
        // The old misreading of V3_PCIE_BAR0_TOP_SP_0_OFFSET is no top-SP window.
        assert_eq!(region_of(Arch::Cayman, 0x0F00_15A0, 4), None);
        // The host trigger at the window's start would be a semaphore SET (104).
        let t = top_sp(Arch::Sunda, 0).unwrap().base + 0x15A0;
        assert_eq!(region_of(Arch::Sunda, t, 4), Some(Region::TopSpSemaphores(0)));
        assert_eq!((0x15A0 - SEMA_SET) / 4, 104);
        assert_eq!(region_of(Arch::Sunda, 0x1000_2000, 4), Some(Region::TopSp(0)));
    }

    #[test]
    fn regions_name_the_registers_a_host_touches_and_nothing_else() {
        for arch in ARCHES {
            for nc in 0..arch.nc_per_device() {
                let head = nrt_core::arch::nq_head_register(arch, nc, 8).unwrap();
                assert_eq!(region_of(arch, head, 4), Some(Region::Notific(nc)));
                let s = tpb_semaphores(arch, nc).unwrap();
                assert_eq!(region_of(arch, s.base + SEMA_INCR + 4 * 255, 4), Some(Region::TpbSemaphores(nc)));
                let e = host_engine(arch, nc).unwrap();
                assert_eq!(region_of(arch, udma_base(arch, e).unwrap() + 0x1038, 4), Some(Region::Udma(e)));
            }
            // The simulator's old status window and INTC guess are unnamed space.
            assert_eq!(region_of(arch, 0x3055_5F40, 4), None, "{arch:?}");
            // A word straddling a window's end is in none.
            let w = top_sp(arch, 0).unwrap();
            assert_eq!(region_of(arch, w.base + w.bytes - 2, 4), None);
        }
    }

    #[test]
    fn the_v3_core_map_is_the_drivers_table() {
        let row = |d: u32| (0..8).map(|j| logical_to_physical(Arch::Cayman, d * 8 + j).unwrap().1).collect::<Vec<_>>();
        for d in [0, 2, 8, 10] {
            assert_eq!(row(d), [4, 5, 6, 7, 2, 3, 0, 1], "device {d}");
        }
        for d in [1, 3, 9, 11] {
            assert_eq!(row(d), [2, 3, 0, 1, 4, 5, 6, 7], "device {d}");
        }
        for d in [4, 6, 12, 14] {
            assert_eq!(row(d), [0, 1, 2, 3, 6, 7, 4, 5], "device {d}");
        }
        for d in [5, 7, 13, 15] {
            assert_eq!(row(d), [6, 7, 4, 5, 0, 1, 2, 3], "device {d}");
        }
        for k in 0..LOGICAL_CORES {
            assert_eq!(logical_to_physical(Arch::Cayman, k).map(|p| p.0), Some(k / 8));
            // The two cores of one SEng stay together, in order.
            if k % 2 == 0 {
                let (a, b) =
                    (logical_to_physical(Arch::Cayman, k).unwrap(), logical_to_physical(Arch::Cayman, k + 1).unwrap());
                assert_eq!((a.1 % 2, b.1), (0, a.1 + 1));
            }
        }
        assert_eq!(logical_to_physical(Arch::Cayman, 128), None);
        assert_eq!(logical_to_physical(Arch::Sunda, 3), Some((1, 1)));
        assert_eq!(logical_to_physical(Arch::Sunda, 4), Some((2, 0)));
        assert_eq!(logical_to_physical(Arch::Sunda, 5), Some((2, 1)));
    }

    #[test]
    fn unknowns_say_what_the_real_path_does() {
        assert!(Unknown::IntcCause.what().contains("not read"));
        assert!(Unknown::HostTrigger.what().contains("not written"));
    }
}
