//! A driver in this process for the session's unit tests, served through
//! `sys::fake`. Requests arrive parsed by the simulator's driver model
//! (`nrt_sim::driver::model::Request`), so a new ioctl is described once.
//!
//! It is at least as strict as the driver for every call the binding makes:
//! host-memory chunks in a temp file standing for the device node, rings, BAR
//! registers, the CRWL state of each core and the range marks (neuron_crwl.c),
//! the staging copy executed on copy start, START and END of every engine on
//! the kickoff. What the driver would refuse is refused with its errno. What it
//! would accept and a conformant runtime must not do is recorded in `bugs`: a
//! freed ring still programmed, a mapped ring freed by a forced re-init, a
//! simulator-only register read, a write into a DMA engine's registers.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use nrt_core::dma::LenCtrl;
use nrt_core::nq::ring::NqProducer;
use nrt_core::nq::{RawEntry, Subtype};
use nrt_sim::driver::model::Request;

use super::*;
use crate::ioctl::{self as io_, request_name, AppInfo, AppsInfoHeader, Crwl as CrwlArg};
use crate::sys::fake::{self, Driver};

pub const BAR0: u64 = 0x40_0000_0000;
const FILE_LEN: u64 = 1 << 20;

/// This process's pid as the driver sees it.
pub fn me() -> i32 {
    std::process::id() as i32
}

/// `struct neuron_crwl` of one core.
#[derive(Clone, Copy, Default)]
pub struct CoreLock {
    pub uuid: [u8; 32],
    pub writer_pid: i32,
    pub writer_acquired: bool,
    pub reader_count: u32,
}

/// A queue: TX ring offset, RX ring offset, depth, cursor, TX handle, RX handle.
type Queue = (u64, u64, u32, u32, u64, u64);

#[derive(Default)]
pub struct State {
    pub path: std::path::PathBuf,
    pub map: Option<Mapping>,
    /// Every call by name, with the handle or core of frees and CRWL calls.
    pub calls: Vec<String>,
    next: u64,
    chunks: HashMap<u64, (u64, u64)>,
    queues: HashMap<(u32, u32), Queue>,
    rings: HashMap<(u32, u32), (u64, NqProducer)>,
    pub heads: Vec<(u64, u32)>,
    pub compat: (u32, u32),
    /// The simulator's hints; `None`: a real driver, which refuses the query.
    pub hints: Option<nrt_abi::sim::SimHints>,
    /// Fail the n-th call, 1-based, of this request with this errno.
    pub fail: Option<(u32, usize, i32)>,
    /// Make the n-th call of this request return this positive value.
    pub positive: Option<(u32, usize, i32)>,
    /// After this many kickoffs every call fails with ENOSYS, as when the
    /// simulator's supervisor is killed; the engines never finish.
    pub die_after_kickoffs: Option<usize>,
    kickoffs: usize,
    pub realloc_forced: usize,
    pub bugs: Vec<String>,
    pub crwl: [CoreLock; 8],
    /// Range marks: the holder pid of each core, 0 when free.
    pub range_pids: [i32; 8],
    /// NC_RESET ids made and not yet waited for.
    pending_resets: Vec<u32>,
    /// Each kickoff's first timestamp, so inferences' records differ.
    stamp: u64,
    /// meta_ctrl of every TX descriptor copied, in order.
    pub tx_meta: Vec<u32>,
    /// The requests made on a write-only descriptor, by name, in order.
    pub free_access_calls: Vec<String>,
    /// Closes of a write-only descriptor, each the driver's misc flush.
    pub misc_flushes: usize,
    /// A core whose CRWL slot already has this process as its writer with
    /// the uuid the next WRITER_ENTER brings, so that it answers EALREADY.
    pub already_writer: Option<u32>,
    /// This process's datastore: its offset and owner.
    pub datastore: Option<(u64, i32)>,
    /// Copy starts move nothing: the device never copies.
    pub drop_copies: bool,
    /// Copy starts move only the 4-byte completion markers, not the data.
    pub skip_data: bool,
    /// The counters of NCs 0 and 1 as they were at the owner's release.
    pub released_datastore: Option<[[u64; 95]; 2]>,
    /// Each range mark's `(nc_count, start_nc_index, end_nc_index)`.
    pub marks: Vec<(u32, u32, u32)>,
    /// Each kickoff's `(nc_id, semaphore_index)`.
    pub kicks: Vec<(u32, u32)>,
    /// Each NQ initialisation's `(nq_dev_id, engine_index)`.
    pub nq_inits: Vec<(u32, u32)>,
}

impl State {
    fn read_datastore(&self, off: u64) -> [[u64; 95]; 2] {
        let mut v = [[0u64; 95]; 2];
        for (nc, row) in v.iter_mut().enumerate() {
            for (c, w) in row.iter_mut().enumerate() {
                let o = nrt_abi::nds::nc_counter_offset(nc, c).unwrap() as u64;
                *w = self.map.as_ref().unwrap().load64(off + o, Ordering::Acquire).unwrap();
            }
        }
        v
    }
    fn alloc(&mut self, size: u64) -> u64 {
        let off = self.next.max(4096);
        self.next = (off + size).next_multiple_of(4096);
        off
    }
    fn w32(&self, off: u64, v: u32) {
        self.map.as_ref().unwrap().store32(off, v, Ordering::Release).unwrap();
    }
    fn r32(&self, off: u64) -> u32 {
        self.map.as_ref().unwrap().load32(off, Ordering::Acquire).unwrap()
    }
    fn r64(&self, off: u64) -> u64 {
        u64::from(self.r32(off)) | (u64::from(self.r32(off + 4)) << 32)
    }
    /// Whether this process has the device file mapped at `off`.
    fn mapped_at(&self, off: u64) -> bool {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
        let name = self.path.display().to_string();
        maps.lines().any(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() >= 6 && f[5] == name && u64::from_str_radix(f[2], 16) == Ok(off)
        })
    }
    fn play_core(&mut self, nc: u32) {
        self.stamp += 1_000;
        for (eng, nq) in INFER_STATUS_NQS.iter().enumerate() {
            for (k, sub) in [Subtype::START, Subtype::END].into_iter().enumerate() {
                let ts = self.stamp + 10 * eng as u64 + k as u64;
                let Some((off, p)) = self.rings.get_mut(&(nc, u32::from(*nq))) else {
                    self.bugs.push(format!("no ring for core {nc} nq {nq}"));
                    return;
                };
                let mut e = RawEntry::new(sub, *nq, 0, 0, ts).to_array();
                let at = *off + u64::from(p.push(&mut e).expect("room"));
                let m = self.map.as_ref().unwrap();
                m.store64(at + 8, u64::from_le_bytes(e[8..].try_into().unwrap()), Ordering::Relaxed).unwrap();
                m.store64(at, u64::from_le_bytes(e[..8].try_into().unwrap()), Ordering::Release).unwrap();
            }
        }
    }
    fn copy_start(&mut self, c: &io_::DmaQueueCopyStart) -> Result<i32, i32> {
        let (eng, q, tx, rx) = (c.eng_id, c.qid, c.tx_desc_count, c.rx_desc_count);
        if rx == 0 {
            self.bugs.push("kernel BUG: copy start with rx 0".into());
            return Err(libc::EINVAL);
        }
        let Some(&(txr, rxr, depth, cursor, th, rh)) = self.queues.get(&(eng, q)) else {
            return Err(libc::EPERM);
        };
        for i in 0..tx.min(rx) {
            let slot = u64::from((cursor + i) % depth) * 16;
            self.tx_meta.push(self.r32(txr + slot + 4));
            let len = LenCtrl::from_bits(self.r32(txr + slot)).len_bytes();
            if self.drop_copies || (self.skip_data && len != 4) {
                continue;
            }
            let (src, dst) = (self.r64(txr + slot + 8), self.r64(rxr + slot + 8));
            for w in 0..u64::from(len / 4) {
                self.w32(dst + 4 * w, self.r32(src + 4 * w));
            }
        }
        self.queues.insert((eng, q), (txr, rxr, depth, cursor + tx, th, rh));
        Ok(0)
    }
    /// The core of a CRWL request, `EINVAL` past the fake's eight.
    fn crwl_core(a: &CrwlArg) -> Result<usize, i32> {
        Some(a.nc_id as usize).filter(|nc| *nc < 8).ok_or(libc::EINVAL)
    }
    /// neuron_crwl.c `ncrwl_validate_uuid`.
    fn validate(&self, nc: usize, uuid: &[u8; 32]) -> Result<(), i32> {
        let l = &self.crwl[nc];
        if l.uuid != *uuid || l.writer_pid != me() {
            return Err(libc::ENOENT);
        }
        Ok(())
    }
    fn reader_enter(&mut self, a: &CrwlArg) -> Result<i32, i32> {
        let nc = Self::crwl_core(a)?;
        self.validate(nc, &a.uuid)?;
        self.crwl[nc].reader_count += 1;
        Ok(0)
    }
    fn reader_exit(&mut self, a: &CrwlArg) -> Result<i32, i32> {
        let nc = Self::crwl_core(a)?;
        self.validate(nc, &a.uuid)?;
        if self.crwl[nc].reader_count == 0 {
            return Err(libc::EINVAL);
        }
        self.crwl[nc].reader_count -= 1;
        Ok(0)
    }
    fn writer_enter(&mut self, a: &CrwlArg) -> Result<i32, i32> {
        let nc = Self::crwl_core(a)?;
        let already = self.already_writer == Some(nc as u32);
        let l = &mut self.crwl[nc];
        if already {
            l.writer_pid = me();
            l.uuid = a.uuid;
        }
        if l.writer_acquired || l.reader_count != 0 {
            return Err(libc::EBUSY);
        }
        l.writer_acquired = true;
        if l.writer_pid == me() && l.uuid == a.uuid {
            return Err(libc::EALREADY);
        }
        l.writer_pid = me();
        l.uuid = a.uuid;
        Ok(0)
    }
    fn writer_downgrade(&mut self, a: &CrwlArg) -> Result<i32, i32> {
        let nc = Self::crwl_core(a)?;
        if !self.crwl[nc].writer_acquired {
            return Err(libc::EINVAL);
        }
        self.validate(nc, &a.uuid)?;
        self.crwl[nc].writer_acquired = false;
        self.crwl[nc].reader_count = 1;
        Ok(0)
    }
    fn range_mark(&mut self, m: &mut io_::CrwlNcMap) -> Result<i32, i32> {
        let (count, start, end) = (m.nc_count, m.start_nc_index, m.end_nc_index);
        self.marks.push((count, start, end));
        m.bitmap = 0;
        if start > end || end >= 8 {
            return Err(libc::EINVAL);
        }
        let range = start..start + count;
        if range.end > end + 1 || range.clone().any(|i| self.range_pids[i as usize] != 0) {
            return Err(libc::EBUSY);
        }
        for i in range {
            self.range_pids[i as usize] = me();
            m.bitmap |= 1 << i;
        }
        Ok(0)
    }
    fn nc_reset(&mut self, r: &mut io_::NcReset) -> Result<i32, i32> {
        let claimed = (0..8).filter(|i| self.range_pids[*i] == me()).fold(0u32, |m, i| m | 1 << i);
        if r.nc_map & !claimed != 0 {
            self.bugs.push(format!("NC_RESET of cores 0x{:x}, claimed 0x{claimed:x}", r.nc_map));
        }
        if self.pending_resets.contains(&(me() as u32)) {
            return Ok(1);
        }
        self.pending_resets.push(me() as u32);
        r.request_id = me() as u32;
        Ok(0)
    }
    fn mem_info(&mut self, i: &mut io_::MemGetExtendedInfo) -> Result<i32, i32> {
        // A bad handle: +EINVAL as a positive return (neuron_cdev.c).
        let Some(&(off, size)) = self.chunks.get(&i.mem_handle) else { return Ok(22) };
        // The whole struct rewritten: mem_handle becomes a kernel pointer.
        i.mem_handle = 0xffff_8880_0000_0000 | off;
        i.host_memory = 1;
        (i.mmap_offset, i.pa, i.size) = (off, off, size);
        Ok(0)
    }
    fn mem_free(&mut self, h: u64) -> Result<i32, i32> {
        if self.queues.values().any(|q| q.4 == h || q.5 == h) {
            self.bugs.push(format!("MEM_FREE of chunk {h}, a ring a DMA queue is still programmed on"));
        }
        self.chunks.remove(&h).ok_or(libc::EINVAL)?;
        Ok(0)
    }
    fn queue_init(&mut self, q: &io_::DmaQueueInit) -> Result<i32, i32> {
        let (tx, rx) = (self.chunks.get(&q.tx_handle).copied(), self.chunks.get(&q.rx_handle).copied());
        let ((txo, _), (rxo, _)) = (tx.ok_or(libc::EINVAL)?, rx.ok_or(libc::EINVAL)?);
        self.queues.insert((q.eng_id, q.qid), (txo, rxo, q.tx_desc_count, 0, q.tx_handle, q.rx_handle));
        Ok(0)
    }
    /// `NOTIFICATIONS_INIT_V2`, or `_WITH_REALLOC_V2` with `force`: the ring's offset.
    fn nq_init(&mut self, key: (u32, u32), size: u32, force: bool) -> Result<u64, i32> {
        self.nq_inits.push(key);
        if force {
            self.realloc_forced += 1;
        }
        let old = self.rings.get(&key).map(|(off, p)| (*off, p.size_bytes()));
        let off = match old {
            // Without force_alloc_mem the driver keeps the old chunk, and the
            // device its place in it.
            Some((off, old_size)) if !force => {
                if old_size != size {
                    self.bugs.push(format!("ring {key:?} re-initialised to {size} bytes in its old chunk"));
                }
                return Ok(off);
            }
            Some((off, _)) => {
                // Freed at once, no mmap reference count (neuron_nq.c: nnq_init).
                if self.mapped_at(off) {
                    self.bugs.push(format!("ring {key:?} freed by a forced re-init while still mapped"));
                }
                self.alloc(u64::from(size))
            }
            None => self.alloc(u64::from(size)),
        };
        self.rings.insert(key, (off, NqProducer::new(size).map_err(|_| libc::EINVAL)?));
        Ok(off)
    }
    fn kickoff(&mut self, s: &io_::SemaphoreArg) -> Result<i32, i32> {
        self.kicks.push((s.nc_id, s.semaphore_index));
        if self.die_after_kickoffs.is_some() {
            self.kickoffs += 1;
        } else {
            self.play_core(s.nc_id);
        }
        Ok(0)
    }
    /// The datastore (neuron_ds.c): this process's, made at its first
    /// acquire with pid 0, cleared at the owner's release.
    fn acquire_ds(&mut self, d: &mut io_::NeuronDsInfo) -> Result<i32, i32> {
        let off = match (d.pid, self.datastore) {
            (0, Some((off, _))) => off,
            (0, None) => {
                let off = self.alloc(u64::from(io_::NEURON_DATASTORE_SIZE));
                self.datastore = Some((off, me()));
                off
            }
            (p, Some((off, owner))) if p == owner => off,
            _ => return Err(libc::ENOENT),
        };
        (d.mmap_offset, d.size) = (off, io_::NEURON_DATASTORE_SIZE);
        Ok(0)
    }
    fn release_ds(&mut self, pid: i32) -> Result<i32, i32> {
        if let Some((off, owner)) = self.datastore {
            if pid == 0 || pid == owner {
                self.released_datastore = Some(self.read_datastore(off));
                self.datastore = None;
            }
        }
        Ok(0)
    }
    /// Log the call `line`, then the answer a test forces, if any: every
    /// call failing after the kickoffs, or the n-th of `code` failed or positive.
    fn forced(&mut self, code: u32, line: String) -> Option<Result<i32, i32>> {
        let name = line.split(' ').next().unwrap_or_default().to_string();
        let n = self.calls.iter().filter(|c| c.split(' ').next() == Some(name.as_str())).count() + 1;
        self.calls.push(line);
        if self.die_after_kickoffs.is_some_and(|k| self.kickoffs >= k) {
            return Some(Err(libc::ENOSYS));
        }
        match (self.fail, self.positive) {
            (Some((c, nth, errno)), _) if c == code && nth == n => Some(Err(errno)),
            (_, Some((c, nth, rc))) if c == code && nth == n => Some(Ok(rc)),
            _ => None,
        }
    }
    /// What the driver does with a parsed request; the handlers change
    /// `req` where the driver copies the argument back.
    fn serve(&mut self, req: &mut Request) -> Result<i32, i32> {
        match req {
            Request::DriverInfo(i) => i.architecture = 2,
            Request::CompatibleVersion(v) => (v.max, v.min) = self.compat,
            Request::DeviceInfo(i) => {
                i.architecture = 2;
                (i.bar_address[0], i.bar_size[0]) = (BAR0, 0x1_0000_0000);
            }
            Request::SimHints(h) => {
                let hints = self.hints.ok_or(libc::EINVAL)?;
                if h.size as usize != core::mem::size_of::<simabi::SimHints>() {
                    return Err(libc::EINVAL);
                }
                *h = simabi::SimHints { size: h.size, ..hints };
            }
            Request::RangeMark(m) => return self.range_mark(m),
            Request::RangeUnmark(m) => {
                for i in 0..8 {
                    if m.bitmap & (1 << i) != 0 && self.range_pids[i] == me() {
                        self.range_pids[i] = 0;
                    }
                }
            }
            Request::CrwlReaderEnter(a) => return self.reader_enter(a),
            Request::CrwlReaderExit(a) => return self.reader_exit(a),
            Request::CrwlWriterEnter(a) => return self.writer_enter(a),
            Request::CrwlWriterDowngrade(a) => return self.writer_downgrade(a),
            Request::NcReset(r) => return self.nc_reset(r),
            Request::NcResetReady(r) => {
                let known = self.pending_resets.contains(&r.request_id);
                self.pending_resets.retain(|id| *id != r.request_id);
                r.result = i32::from(!known);
            }
            Request::MemInfo(i) => return self.mem_info(i),
            Request::MemFree(f) => return self.mem_free(f.mem_handle),
            Request::DmaQueueInit(q) => return self.queue_init(q),
            // The driver's release changes nothing (neuron_ring.c: ndmar_queue_release).
            Request::DmaQueueRelease(_) => {}
            Request::DmaCopyStart(c) => return self.copy_start(c),
            Request::NqInit(a) => a.mmap_offset = self.nq_init((a.nq_dev_id, a.engine_index), a.size, false)?,
            Request::NqInitRealloc(a) => {
                let force = a.force_alloc_mem == 1;
                a.mmap_offset = self.nq_init((a.nq_dev_id, a.engine_index), a.size, force)?;
            }
            Request::Semaphore(code, s) if *code == io_::SEMAPHORE_INCREMENT.code() => return self.kickoff(s),
            Request::AcquireDs(d) => return self.acquire_ds(d),
            Request::ReleaseDs(d) => return self.release_ds(d.pid),
            _ => return Err(libc::EINVAL),
        }
        Ok(0)
    }
}

/// How a call is logged: its name, with the handle freed, the CRWL core or
/// the cores unmarked.
fn logged(name: &str, req: &Request) -> String {
    match req {
        Request::MemFree(f) => format!("{name} {}", f.mem_handle),
        Request::CrwlReaderEnter(a)
        | Request::CrwlReaderExit(a)
        | Request::CrwlWriterEnter(a)
        | Request::CrwlWriterDowngrade(a) => format!("{name} {}", a.nc_id),
        Request::RangeUnmark(m) => format!("{name} 0x{:x}", m.bitmap),
        _ => name.to_string(),
    }
}

pub struct Fake(pub Rc<RefCell<State>>);

impl Driver for Fake {
    fn misc_ioctl(&mut self, code: u32, req: &mut Request) -> Result<i32, i32> {
        self.0.borrow_mut().free_access_calls.push(request_name(code).unwrap_or("?").to_string());
        self.ioctl(code, req)
    }

    /// neuron_cdev.c `ncdev_misc_flush`: every core the process marked, unmarked.
    fn misc_flush(&mut self) {
        let mut s = self.0.borrow_mut();
        s.misc_flushes += 1;
        for pid in s.range_pids.iter_mut() {
            if *pid == me() {
                *pid = 0;
            }
        }
    }

    fn ioctl(&mut self, code: u32, req: &mut Request) -> Result<i32, i32> {
        let mut s = self.0.borrow_mut();
        let line = logged(request_name(code).unwrap_or("?"), req);
        s.forced(code, line).unwrap_or_else(|| s.serve(req))
    }

    /// The writers of cores 0..=3 by pid (neuron_cdev.c: ncdev_device_get_all_apps_info).
    fn apps_info(&mut self, header: &mut AppsInfoHeader, entries: &mut [AppInfo]) -> Result<i32, i32> {
        let mut s = self.0.borrow_mut();
        let code = io_::DEVICE_GET_ALL_APPS_INFO.code();
        if let Some(r) = s.forced(code, io_::DEVICE_GET_ALL_APPS_INFO.name().to_string()) {
            return r;
        }
        let mut pids: Vec<i32> = s.crwl.iter().map(|l| l.writer_pid).filter(|p| *p != 0).collect();
        pids.insert(0, me());
        pids.dedup();
        for (e, pid) in entries.iter_mut().zip(&pids) {
            e.pid = *pid;
            e.nc_lock_map = (0..4)
                .filter(|nc| {
                    let l = &s.crwl[*nc];
                    l.writer_pid == *pid && (l.writer_acquired || l.reader_count > 0)
                })
                .fold(0, |m, nc| m | 1 << nc);
        }
        header.size = pids.len().min(entries.len()) as u32;
        Ok(0)
    }

    fn bar_rw(&mut self, code: u32, _bar: u32, addresses: &[u64], data: &mut [u32]) -> Result<i32, i32> {
        let mut s = self.0.borrow_mut();
        let read = code == io_::BAR_READ.code();
        if let Some(r) = s.forced(code, request_name(code).unwrap_or("?").to_string()) {
            return r;
        }
        for (a, d) in addresses.iter().zip(data.iter_mut()) {
            let off = a.checked_sub(BAR0).ok_or(libc::EINVAL)?;
            if nrt_abi::devmap::region_of(Arch::Sunda, off, 4).is_none() {
                s.bugs.push(format!("BAR access at 0x{off:x}: no window of the driver's map"));
            }
            if s.hints.is_none()
                && matches!(
                    nrt_abi::devmap::region_of(Arch::Sunda, off, 4),
                    Some(nrt_abi::devmap::Region::TopSpSemaphores(_))
                )
            {
                s.bugs.push(format!("BAR access at 0x{off:x}: a top-SP's semaphores"));
            }
            // v2 DMA engines: NC0's at 0x3000_0000 + e * 0x4_0000 (16 of them), the
            // D2H/H2D engines from 0x3060_0000 (v2/address_map.h V2_APB_D2H_UDMA_BASE,
            // V2_APB_D2H_SDMA_BASE): the DMA ioctls' only.
            let dma = (0x3000_0000..0x3040_0000).contains(&off) || (0x3060_0000..0x3068_0000).contains(&off);
            if !read && dma {
                s.bugs.push(format!("BAR_WRITE at 0x{off:x}: a DMA engine's registers"));
            }
            if read {
                *d = 0;
            } else {
                s.heads.push((off, *d));
                let ring = s.rings.iter_mut().find(|((c, slot), _)| {
                    nrt_core::arch::nq_head_register(Arch::Sunda, *c as u8, *slot as u8) == Some(off)
                });
                if let Some((_, (_, p))) = ring {
                    p.on_head_write(*d);
                }
            }
        }
        Ok(0)
    }

    fn mem_alloc(&mut self, arg: &MemAllocV2Mt) -> Result<u64, i32> {
        let mut s = self.0.borrow_mut();
        s.calls.push("NEURON_IOCTL_MEM_ALLOC_V2MT".into());
        // neuron_mempool.c mc_alloc_internal: aligned host memory is not supported.
        if arg.host_memory != 0 && arg.align != 0 {
            return Err(libc::EINVAL);
        }
        let off = s.alloc(arg.size);
        let handle = (1..).find(|h| !s.chunks.contains_key(h)).unwrap_or(u64::MAX);
        s.chunks.insert(handle, (off, arg.size));
        Ok(handle)
    }
}

/// A device node, a temp file, served by a fresh fake on this thread.
pub fn install(name: &str) -> (std::path::PathBuf, Rc<RefCell<State>>) {
    install_at(std::env::temp_dir().join(format!("nrt-fake-neuron-{}-{name}", std::process::id())))
}

/// [`install`] at the path `p`, whose directory exists.
pub fn install_at(p: std::path::PathBuf) -> (std::path::PathBuf, Rc<RefCell<State>>) {
    let f = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&p).unwrap();
    f.set_len(FILE_LEN).unwrap();
    let state = Rc::new(RefCell::new(State {
        path: p.clone(),
        map: Some(Mapping::map(&f, 0, FILE_LEN as usize).unwrap()),
        compat: (7, 5),
        ..State::default()
    }));
    fake::install(p.clone(), Box::new(Fake(Rc::clone(&state))));
    (p, state)
}

pub fn uninstall(p: &std::path::Path) {
    fake::uninstall();
    let _ = std::fs::remove_file(p);
}

/// The simulator's hints with `cores` and every barrier done.
pub fn sim_hints(cores: u32) -> nrt_abi::sim::SimHints {
    let mut h = nrt_abi::sim::SimHints {
        magic: nrt_abi::sim::SIM_HINTS_MAGIC,
        version: nrt_abi::sim::SIM_HINTS_VERSION,
        size: core::mem::size_of::<nrt_abi::sim::SimHints>() as u32,
        model_cores: cores,
        device_cores: cores,
        host_trigger: nrt_abi::sim::xt_local_reg(Arch::Sunda) + nrt_core::dma::HOST_TRIGGER_OFFSET,
        ..Default::default()
    };
    for l in h.lines.iter_mut() {
        l[Line::BarrierDone as usize] = 1;
    }
    h
}
