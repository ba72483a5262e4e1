//! BAR access, `BAR_READ` and `BAR_WRITE`, and the simulator's hint query,
//! which no driver answers, G-DRV-SIMHINTS. driver: neuron_cdev.c,
//! `ncdev_bar_rw`, `ncdev_bar_read`, `ncdev_bar_write`; v2/neuron_dhal_v2.c,
//! `ncdev_bar_write_data_v2`; neuron_dma.c for the blocked UDMA registers.

use std::sync::atomic::Ordering;

use nrt_abi::devmap::{self, Region};
use nrt_abi::ioctl as abi;
use nrt_abi::sim::{self as simabi, Line};
use nrt_core::arch::Arch;

use super::{Answer, Errno, Model, TargetMem, BAR_READ_MAX, DMA_QUEUES, KMALLOC_MAX};

pub use nrt_abi::devmap::mailbox_words;

/// The UDMA engines whose queue registers a BAR write may not touch, as BAR0
/// offsets: every engine of the device map, [`devmap::udma_base`] over
/// [`devmap::engine_count`]. On v2 the 16 engines of NC0 and of NC1, D2H and
/// H2D; on v3 and mariana the 32 SDMA engines of each of the 4 SE groups,
/// then IO0/IO1 D2H and H2D. driver: neuron_dma.c, `ndma_is_bar0_write_blocked_v2`, `_v3`.
fn blocked_engines(arch: Arch) -> impl Iterator<Item = u64> {
    (0..devmap::engine_count(arch)).filter_map(move |e| devmap::udma_base(arch, e))
}

/// What only the simulator has at the 4 bytes at BAR0 offset `off`, if
/// anything: the top-SP host trigger at `nrt_abi::sim::xt_local_reg + 0x15A0`,
/// and the INTC cause registers of [`simabi::intc_cause_offset`], `cause` and
/// `cause_set` of every line of every block of every core. A host reaches
/// them only where the hint query says so, BAR-8.
pub fn sim_register(arch: Arch, off: u64) -> Option<&'static str> {
    if off == simabi::xt_local_reg(arch) + nrt_core::dma::HOST_TRIGGER_OFFSET {
        return Some("the simulator's top-SP host trigger");
    }
    let span = u64::from(simabi::INTC_BLOCKS) * simabi::INTC_BLOCK_STRIDE;
    let intc = (0..arch.nc_per_device())
        .filter_map(|c| simabi::intc_cause_offset(arch, c, 0, 0))
        .any(|base| off >= base && off - base < span);
    intc.then_some("the simulator's INTC cause registers")
}

/// What a BAR write may not touch, if `off` is one, BARW-5: the ring base,
/// the completion ring base, both halves, and the tail-pointer increment of
/// every queue, M2S and S2M, of every engine of `blocked_engines`; and the
/// firmware [`mailbox_words`]. driver: neuron_dma.c, `ndma_bar0_blocked_one_engine`.
pub fn blocked_register(arch: Arch, off: u64) -> Option<&'static str> {
    const REGS: [(u64, &str); 5] = [
        (0x28, "UDMA ring base low (drbp_low)"),
        (0x2C, "UDMA ring base high (drbp_high)"),
        (0x38, "UDMA tail-pointer increment (drtp_inc)"),
        (0x44, "UDMA completion ring base low (crbp_low)"),
        (0x48, "UDMA completion ring base high (crbp_high)"),
    ];
    for base in blocked_engines(arch) {
        for dir in [0x1000u64, 0x2_1000] {
            let q0 = base + dir;
            if off < q0 || off >= q0 + u64::from(DMA_QUEUES) * 0x1000 {
                continue;
            }
            let within = (off - q0) % 0x1000;
            if let Some((_, name)) = REGS.iter().find(|(r, _)| *r == within) {
                return Some(name);
            }
        }
    }
    mailbox_words(arch).iter().find(|(a, _)| *a == off).map(|(_, name)| *name)
}

const CDEV: &str = "neuron_cdev.c: ncdev_bar_rw";

impl Model {
    /// BAR0 register `off` as a BAR_READ sees it: the word of the device
    /// file's BAR region. Every register is a plain word; the simulator
    /// publishes no register outside the real map, G-DRV-PROBES.
    pub fn bar_word(&self, off: u64) -> Option<u32> {
        self.file.bar_u32(off).map(|a| a.load(Ordering::Acquire))
    }

    /// BAR-8: a BAR access the driver performs unchecked but a runtime must
    /// not make is a conformance violation: at an offset no window of the
    /// device map names, where [`devmap::region_of`] is `None`; a write into a
    /// top-SP's or a TPB's SEMAPHORE resource, since semaphores go through the
    /// semaphore ioctls; or a [`sim_register`] while the hint query is refused,
    /// since a real driver's device has none there.
    fn check_bar_access(&mut self, pid: u32, name: &'static str, off: u64, write: bool) {
        const SRC: &str = "neuron_cdev.c: ncdev_bar_rw (unchecked); nrt_abi::devmap::region_of";
        let what = if write { "write" } else { "read" };
        if let Some(reg) = sim_register(self.arch, off) {
            if !self.hints {
                self.violate(
                    pid,
                    name,
                    format!(
                        "BAR-8: {what} of BAR0 offset 0x{off:x}, {reg}: reachable only with the hint query answered \
                         (--no-sim-hints plays a real driver, whose map has no register there)"
                    ),
                    SRC,
                );
            }
            return;
        }
        match devmap::region_of(self.arch, off, 4) {
            None => self.violate(
                pid,
                name,
                format!("BAR-8: {what} of BAR0 offset 0x{off:x}, outside every window the device map names"),
                SRC,
            ),
            Some(r @ (Region::TopSpSemaphores(_) | Region::TpbSemaphores(_))) if write => self.violate(
                pid,
                name,
                format!(
                    "BAR-8: write of BAR0 offset 0x{off:x}, in {r:?}'s SEMAPHORE resource: semaphores go through the \
                     semaphore ioctls"
                ),
                SRC,
            ),
            Some(_) => {}
        }
    }

    /// BAR-1/2: the address array, `count` addresses for BAR0 and one for any
    /// other BAR, or the driver's answer when it cannot be had.
    fn bar_addresses(
        &mut self,
        pid: u32,
        name: &'static str,
        a: &abi::BarRwWire,
        mem: &mut dyn TargetMem,
    ) -> Result<Vec<u64>, Answer> {
        let count = if a.bar == 0 { u64::from(a.count) } else { 1 };
        if count * 8 > KMALLOC_MAX {
            return Err(self.refuse(
                pid,
                name,
                Errno::ENOMEM,
                "BAR-1: the address array is larger than kmalloc gives",
                CDEV,
            ));
        }
        let mut bytes = vec![0u8; (count * 8) as usize];
        if mem.read(a.address, &mut bytes).is_err() {
            return Err(self.positive(
                pid,
                name,
                bytes.len() as i64,
                "BAR-2: the address array could not be copied in (copy_from_user's count)",
                CDEV,
            ));
        }
        Ok(bytes.chunks_exact(8).map(|c| u64::from_le_bytes(<[u8; 8]>::try_from(c).unwrap_or_default())).collect())
    }

    pub(super) fn bar_read(
        &mut self,
        pid: u32,
        name: &'static str,
        a: &mut abi::BarRwWire,
        mem: &mut dyn TargetMem,
    ) -> Answer {
        let addrs = match self.bar_addresses(pid, name, a, mem) {
            Ok(v) => v,
            Err(ans) => return ans,
        };
        // ncdev_bar_read takes the BAR as a u8: 256 reads as BAR0 with one address copied.
        let bar = a.bar as u8;
        if bar != 0 && bar != 2 {
            return self.refuse(
                pid,
                name,
                Errno::EINVAL,
                &format!("BAR-5: BAR {} (as u8: {bar}): only BAR0 and BAR2 are read", a.bar),
                "neuron_cdev.c: ncdev_bar_read",
            );
        }
        if a.count > BAR_READ_MAX {
            return self.refuse(
                pid,
                name,
                Errno::EINVAL,
                "BAR-3: more than 100 registers in one read",
                "v2/neuron_dhal_v2.c: reg_read32_array",
            );
        }
        if (a.count as usize) > addrs.len() {
            // BAR-4: one address copied for a BAR other than 0, `count` read.
            return self.bug(
                pid,
                name,
                &format!(
                    "BAR-4: BAR {} with count {}: one address is copied in, {} are read from the 8-byte array (past \
                     the kmalloc)",
                    a.bar, a.count, a.count
                ),
                "neuron_cdev.c: ncdev_bar_rw",
            );
        }
        let bar_len = self.file.layout().bar_len;
        let mut out = Vec::with_capacity(addrs.len() * 4);
        for &addr in addrs.iter().take(a.count as usize) {
            // BAR-6: the driver reads each address as given with readl, unchecked.
            let off = addr.wrapping_sub(simabi::SIM_BAR0_PA);
            if off.checked_add(4).is_none_or(|e| e > bar_len) {
                return self.bug(
                    pid,
                    name,
                    &format!("BAR-6: address 0x{addr:x} is outside BAR0: the driver reads it unchecked (readl)"),
                    "neuron_fw_io.c",
                );
            }
            if off % 4 != 0 {
                return self.refuse(
                    pid,
                    name,
                    Errno::EINVAL,
                    "BAR-6: unaligned register address (G-DRV-BAR-ALIGN)",
                    "sim",
                );
            }
            self.check_bar_access(pid, name, off, false);
            out.extend_from_slice(&self.bar_word(off).unwrap_or(0).to_le_bytes());
        }
        if mem.write(a.data, &out).is_err() {
            return self.positive(
                pid,
                name,
                out.len() as i64,
                "BAR-7: the data array could not be copied back (copy_to_user's count)",
                "neuron_cdev.c: ncdev_bar_read",
            );
        }
        Ok(0)
    }

    pub(super) fn bar_write(
        &mut self,
        pid: u32,
        name: &'static str,
        a: &mut abi::BarRwWire,
        mem: &mut dyn TargetMem,
    ) -> Answer {
        let addrs = match self.bar_addresses(pid, name, a, mem) {
            Ok(v) => v,
            Err(ans) => return ans,
        };
        const W: &str = "v2/neuron_dhal_v2.c: ncdev_bar_write_data_v2";
        let count = u64::from(a.count);
        if count * 4 > KMALLOC_MAX {
            return self.refuse(pid, name, Errno::ENOMEM, "BARW-1: the data array is larger than kmalloc gives", CDEV);
        }
        let mut data = vec![0u8; (count * 4) as usize];
        if mem.read(a.data, &mut data).is_err() {
            return self.positive(
                pid,
                name,
                data.len() as i64,
                "BARW-2: the data array could not be copied in (copy_from_user's count)",
                "neuron_cdev.c: ncdev_bar_write",
            );
        }
        if a.bar as u8 != 0 {
            return self.refuse(pid, name, Errno::EINVAL, "BARW-3: only BAR0 is written", W);
        }
        if (a.count as usize) > addrs.len() {
            // BAR-4's twin: a BAR of 256 is BAR0 as a u8, but one address was copied.
            return self.bug(
                pid,
                name,
                &format!(
                    "BARW-3: BAR {} with count {}: one address is copied in, {} are written from the 8-byte array",
                    a.bar, a.count, a.count
                ),
                "neuron_cdev.c: ncdev_bar_rw",
            );
        }
        let bar_len = self.file.layout().bar_len;
        // BARW-4..6, in order; an error stops the rest.
        for (i, &addr) in addrs.iter().enumerate().take(a.count as usize) {
            let off = addr.wrapping_sub(simabi::SIM_BAR0_PA);
            if off > bar_len {
                return self.refuse(pid, name, Errno::EINVAL, &format!("BARW-4: address 0x{addr:x} past BAR0"), W);
            }
            if let Some(reg) = blocked_register(self.arch, off) {
                return self.refuse(
                    pid,
                    name,
                    Errno::EINVAL,
                    &format!(
                        "BARW-5: BAR0 offset 0x{off:x} is a {reg}: writes are blocked (DMA goes through DMA_QUEUE_COPY_START)"
                    ),
                    "neuron_dma.c: ndma_is_bar0_write_blocked",
                );
            }
            if off + 4 > bar_len {
                return self.bug(
                    pid,
                    name,
                    &format!(
                        "BARW-6: offset 0x{off:x} passes the `off > bar0_size` check and writes past the BAR mapping"
                    ),
                    W,
                );
            }
            let v = data
                .get(i * 4..i * 4 + 4)
                .map_or(0, |b| u32::from_le_bytes(<[u8; 4]>::try_from(b).unwrap_or_default()));
            if off % 4 != 0 {
                return self.refuse(
                    pid,
                    name,
                    Errno::EINVAL,
                    "BARW-6: unaligned register address (G-DRV-BAR-ALIGN)",
                    "sim",
                );
            }
            self.check_bar_access(pid, name, off, true);
            if let Some(w) = self.file.bar_u32(off) {
                w.store(v, Ordering::Release);
            }
        }
        Ok(0)
    }

    /// SIM-1: the simulator's hint query, `nrt_abi::sim::SIM_HINTS`: what only
    /// the simulated device can say. `size` must be the struct's. G-DRV-SIMHINTS.
    pub(super) fn sim_hints(&mut self, pid: u32, name: &'static str, h: &mut simabi::SimHints) -> Answer {
        if !self.hints {
            // SIM-2: playing a real driver, an 'N' request it does not define
            // falls to its misc dispatch. driver: neuron_cdev.c, ncdev_misc_ioctl.
            return self.refuse(
                pid,
                "NRT_SIM_IOCTL_HINTS",
                Errno::EINVAL,
                "SIM-2: the model plays a real driver (--no-sim-hints): an unknown misc request",
                "neuron_cdev.c: ncdev_misc_ioctl",
            );
        }
        let want = core::mem::size_of::<simabi::SimHints>() as u32;
        if h.size != want {
            return self.refuse(
                pid,
                "NRT_SIM_IOCTL_HINTS",
                Errno::EINVAL,
                &format!("SIM-1: size {} is not the struct's {want}", h.size),
                "sim",
            );
        }
        let _ = name;
        let lines = [Line::BarrierDone, Line::BarrierFail, Line::NetproxyFail, Line::Hbm, Line::DmaAbort];
        let mut out = simabi::SimHints {
            magic: simabi::SIM_HINTS_MAGIC,
            version: simabi::SIM_HINTS_VERSION,
            size: want,
            model_cores: u32::from(self.sim_cores),
            ring_entries: self.file.layout().ring_bytes / crate::layout::ENTRY_BYTES,
            device_cores: u32::from(self.sim_cores),
            clock_origin_ns: self.file.origin_ns(),
            heartbeat_ns: self.file.heartbeat_ns(),
            lines: [[0; simabi::LINES]; simabi::SIM_HINT_CORES],
            host_trigger: simabi::xt_local_reg(self.arch) + nrt_core::dma::HOST_TRIGGER_OFFSET,
        };
        for core in 0..self.sim_cores.min(simabi::SIM_HINT_CORES as u8) {
            for l in lines {
                out.lines[usize::from(core)][l as usize] =
                    self.file.line(l, core).map_or(0, |a| a.load(Ordering::Acquire));
            }
        }
        *h = out;
        Ok(0)
    }
}
