//! The session against a driver in this process (`sys::fake`).

use super::*;

#[test]
fn the_runtime_version_is_checked_against_both_ends_and_named() {
    assert_eq!(check_compatible(Arch::Sunda, CompatibleVersion { max: 7, min: 5 }), Ok(7));
    assert_eq!(check_compatible(Arch::Cayman, CompatibleVersion { max: 11, min: 10 }), Ok(11));
    let e = check_compatible(Arch::Cayman, CompatibleVersion { max: 7, min: 5 }).unwrap_err();
    assert!(e.contains("runtime versions 5 to 7") && e.contains("speaks version 11"), "{e}");
    let e = check_compatible(Arch::Sunda, CompatibleVersion { max: 11, min: 10 }).unwrap_err();
    assert!(e.contains("10 to 11") && e.contains("version 7"), "{e}");
}

#[test]
fn the_harvest_rings_and_their_requests_follow_the_contract() {
    let r = harvest_rings();
    assert_eq!(r, [(2, nq_type::ERROR), (4, 1), (5, 1), (6, 1), (7, 1), (8, 1)]);
    let a = ring_request(1, 6, nq_type::NOTIFY, 64);
    assert_eq!((a.nq_dev_id, a.nq_dev_type, a.nq_type, a.engine_index), (1, 0, 1, 6));
    assert_eq!((a.size, a.on_host_memory), (1024, 1));
}

#[test]
fn cores_and_ring_entries_are_validated() {
    assert!(validate(Arch::Sunda, 2, 64).is_ok());
    assert!(validate(Arch::Cayman, 1, 2).is_ok());
    assert!(validate(Arch::Sunda, 0, 64).unwrap_err().contains("cores must be 1 to 2"));
    assert!(validate(Arch::Cayman, 3, 64).is_err(), "the harvest state holds one logical core");
    assert!(validate(Arch::Sunda, 1, 48).unwrap_err().contains("power of two"));
    assert!(validate(Arch::Sunda, 1, 1 << 17).is_err());
}

#[test]
fn udma_bases_are_the_drivers() {
    assert_eq!(udma_base(Arch::Sunda, 0), 0x3000_0000);
    assert_eq!(udma_base(Arch::Sunda, 1), 0x3004_0000);
    assert_eq!(udma_base(Arch::Cayman, 0), 0x8200_0000);
}

/// Not a device: the first driver call fails, named, with ENOTTY, and
/// nothing else is attempted.
#[test]
fn a_non_device_fails_at_driver_info_with_enotty() {
    let e = Session::open("/dev/null", SessionConfig::default()).unwrap_err();
    assert_eq!(e.call, "NEURON_IOCTL_DRIVER_INFO_GET");
    assert_eq!(e.errno(), Some(libc::ENOTTY));
    assert!(e.to_string().starts_with("NEURON_IOCTL_DRIVER_INFO_GET on /dev/null failed: ENOTTY"), "{e}");
    let e = Session::open("/nonexistent/neuron0", SessionConfig::default()).unwrap_err();
    assert_eq!((e.call, e.errno()), ("open", Some(libc::ENOENT)));
    assert!(e.to_string().contains("/nonexistent/neuron0"), "{e}");
}

fn chunk(name: &str, pa: u64, size: u64) -> Chunk {
    let p = std::env::temp_dir().join(format!("nrt-linux-session-{}-{name}", std::process::id()));
    let f = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&p).unwrap();
    f.set_len(size).unwrap();
    let map = Mapping::map(&f, 0, size as usize).unwrap();
    std::fs::remove_file(p).unwrap();
    Chunk { handle: pa >> 12, info: MemGetExtendedInfo { pa, size, ..Default::default() }, map: Some(map) }
}

fn bd_at(map: &Mapping, slot: u64) -> Bd {
    let w = |i: u64| map.load32(16 * slot + 4 * i, Ordering::Acquire).unwrap();
    let addr = u64::from(w(2)) | (u64::from(w(3)) << 32);
    Bd::new(nrt_core::dma::LenCtrl::from_bits(w(0)), w(1), addr)
}

/// The staging of step 9 lands in the mapped chunks: the buffer filled and
/// the handle armed, five copy descriptors per ring at the chunks' physical
/// addresses (four 1 KiB data BDs, then the 4-byte marker), at the queue
/// cursors, which advance for the next inference.
#[test]
fn staging_lowers_the_copy_and_its_marker_into_the_mapped_rings() {
    let dev = NeuronDevice::open("/dev/null").unwrap();
    let ring = u64::from(STAGING_RING_DEPTH) * 16;
    let chunks =
        [chunk("tx", 0x10_0000, ring), chunk("rx", 0x20_0000, ring), chunk("buf", 0x30_0000, COPY_BUFFER_BYTES)];
    let mut mem = ChunkMemory { dev: &dev, chunks: &chunks };
    let src: Vec<u8> = (0..COPY_BYTES).map(|i| i as u8).collect();
    let (mut txq, mut rxq) =
        (SwDmaQueue::new(STAGING_RING_DEPTH).unwrap(), SwDmaQueue::new(STAGING_RING_DEPTH).unwrap());
    let mut events = Vec::new();
    let (n, rings, depth) =
        lower_staging(&mut mem, Arch::Sunda, 0x30_0000, &src, (&mut txq, &mut rxq), &mut events).unwrap();
    assert_eq!((n, rings, depth), (5, (0x10_0000, 0x20_0000), STAGING_RING_DEPTH));
    let (tx, rx, buf) =
        (chunks[0].map.as_ref().unwrap(), chunks[1].map.as_ref().unwrap(), chunks[2].map.as_ref().unwrap());
    for i in 0..4u64 {
        assert_eq!(bd_at(tx, i).addr(), 0x30_0000 + 1024 * i, "tx {i}");
        assert_eq!(bd_at(rx, i).addr(), 0x30_1000 + 1024 * i, "rx {i}");
        assert_eq!(bd_at(tx, i).ctrl().len_bytes(), 1024);
    }
    assert_eq!(bd_at(tx, 4).addr(), 0x30_2100, "the marker reads the done word");
    assert_eq!(bd_at(rx, 4).addr(), 0x30_2000, "and writes the handle");
    assert!(bd_at(tx, 4).ctrl().last() && bd_at(tx, 3).ctrl().last() && !bd_at(tx, 2).ctrl().last());
    assert_eq!(bd_at(tx, 5), Bd::ZERO);
    assert_eq!(buf.load32(0, Ordering::Relaxed).unwrap(), u32::from_le_bytes([0, 1, 2, 3]));
    assert_eq!(buf.load32(0x1000, Ordering::Relaxed).unwrap(), 0);
    assert_eq!(buf.load32(0x2000, Ordering::Relaxed).unwrap(), nrt_core::dma::COMPLETION_SENTINEL);
    assert_eq!(buf.load32(0x2100, Ordering::Relaxed).unwrap(), DONE_WORD);
    assert_eq!((txq.next_desc_idx(), rxq.next_desc_idx()), (5, 5));
    // A second inference goes to the next slots.
    lower_staging(&mut mem, Arch::Sunda, 0x30_0000, &src, (&mut txq, &mut rxq), &mut events).unwrap();
    assert_eq!(bd_at(tx, 9).addr(), 0x30_2100);
    assert_eq!(txq.next_desc_idx(), 10);
    // Memory outside every chunk is refused, naming it.
    let e = hal::DeviceMemory::copy_in(&mut mem, 0x40_0000, &[0; 4]).unwrap_err();
    assert!(e.to_string().contains("0x400000+4 is in no mapped chunk"), "{e}");
}

/// A driver in this process (`sys::fake`): host-memory chunks in a temp
/// file standing for the device node, rings, BAR registers, the staging
/// copy executed on copy start, START/END of every engine on the kickoff.
mod fake_driver {
    use std::cell::RefCell;
    use std::collections::HashMap;
    use std::rc::Rc;

    use nrt_core::dma::LenCtrl;
    use nrt_core::nq::ring::NqProducer;
    use nrt_core::nq::{RawEntry, Subtype};

    use super::*;
    use crate::ioctl::{self as io_, request_name};
    use crate::sys::fake::{self, Driver};

    pub const BAR0: u64 = 0x40_0000_0000;
    const FILE_LEN: u64 = 1 << 20;

    fn g32(a: &[u8], o: usize) -> u32 {
        u32::from_le_bytes(a[o..o + 4].try_into().unwrap())
    }
    fn g64(a: &[u8], o: usize) -> u64 {
        u64::from_le_bytes(a[o..o + 8].try_into().unwrap())
    }
    fn p32(a: &mut [u8], o: usize, v: u32) {
        a[o..o + 4].copy_from_slice(&v.to_le_bytes());
    }
    fn p64(a: &mut [u8], o: usize, v: u64) {
        a[o..o + 8].copy_from_slice(&v.to_le_bytes());
    }

    #[derive(Default)]
    pub struct State {
        pub map: Option<Mapping>,
        /// Every call, by name (with the handle or core of frees and exits).
        pub calls: Vec<String>,
        next: u64,
        chunks: HashMap<u64, (u64, u64)>,
        queues: HashMap<(u32, u32), (u64, u64, u32, u32)>,
        rings: HashMap<(u32, u32), (u64, NqProducer)>,
        pub heads: Vec<(u64, u32)>,
        pub compat: (u32, u32),
        pub model_cores: u32,
        /// Fail the n-th call (1-based) of this request with this errno.
        pub fail: Option<(u32, usize, i32)>,
        pub realloc_forced: usize,
        pub bugs: Vec<String>,
    }

    impl State {
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
        fn play_core(&mut self, nc: u32) {
            for (eng, nq) in INFER_STATUS_NQS.iter().enumerate() {
                for (k, sub) in [Subtype::START, Subtype::END].into_iter().enumerate() {
                    let Some((off, p)) = self.rings.get_mut(&(nc, u32::from(*nq))) else {
                        self.bugs.push(format!("no ring for core {nc} nq {nq}"));
                        return;
                    };
                    let mut e = RawEntry::new(sub, *nq, 0, 0, 1_000 + 10 * eng as u64 + k as u64).to_array();
                    let at = *off + u64::from(p.push(&mut e).expect("room"));
                    let m = self.map.as_ref().unwrap();
                    m.store64(at + 8, u64::from_le_bytes(e[8..].try_into().unwrap()), Ordering::Relaxed).unwrap();
                    m.store64(at, u64::from_le_bytes(e[..8].try_into().unwrap()), Ordering::Release).unwrap();
                }
            }
        }
        fn copy_start(&mut self, eng: u32, q: u32, tx: u32, rx: u32) -> Result<i32, i32> {
            if rx == 0 {
                self.bugs.push("kernel BUG: copy start with rx 0".into());
                return Err(libc::EINVAL);
            }
            let Some(&(txr, rxr, depth, cursor)) = self.queues.get(&(eng, q)) else {
                return Err(libc::EINVAL);
            };
            for i in 0..tx.min(rx) {
                let slot = u64::from((cursor + i) % depth) * 16;
                let len = LenCtrl::from_bits(self.r32(txr + slot)).len_bytes();
                let (src, dst) = (self.r64(txr + slot + 8), self.r64(rxr + slot + 8));
                for w in 0..u64::from(len / 4) {
                    self.w32(dst + 4 * w, self.r32(src + 4 * w));
                }
            }
            self.queues.insert((eng, q), (txr, rxr, depth, cursor + tx));
            Ok(0)
        }
    }

    pub struct Fake(pub Rc<RefCell<State>>);

    impl Driver for Fake {
        fn ioctl(&mut self, code: u32, a: &mut [u8]) -> Result<i32, i32> {
            let mut s = self.0.borrow_mut();
            let name = request_name(code).unwrap_or("?");
            let n = s.calls.iter().filter(|c| c.split(' ').next() == Some(name)).count() + 1;
            let detail = match code {
                c if c == io_::MEM_FREE.code() => format!(" {}", g64(a, 0)),
                c if c == io_::CRWL_READER_EXIT.code() || c == io_::CRWL_READER_ENTER.code() => {
                    format!(" {}", g32(a, 0))
                }
                _ => String::new(),
            };
            s.calls.push(format!("{name}{detail}"));
            if let Some((c, nth, errno)) = s.fail {
                if c == code && nth == n {
                    return Err(errno);
                }
            }
            match code {
                c if c == io_::DRIVER_INFO_GET.code() => p32(a, 0, 2),
                c if c == io_::COMPATIBLE_VERSION.code() => {
                    let (max, min) = s.compat;
                    p32(a, 0, max);
                    p32(a, 4, min);
                }
                c if c == io_::DEVICE_INFO.code() => {
                    p32(a, 0, 2);
                    p64(a, 48, BAR0);
                    p64(a, 64, 0x1_0000_0000);
                }
                c if c == io_::NC_RESET.code() => p32(a, 4, 7),
                c if c == io_::NC_RESET_READY.code() => p32(a, 4, 0),
                c if c == io_::MEM_GET_EXTENDED_INFO.code() => {
                    let (off, size) = *s.chunks.get(&g64(a, 0)).ok_or(libc::EINVAL)?;
                    p32(a, 12, 1);
                    p64(a, 16, off);
                    p64(a, 24, off);
                    p64(a, 40, size);
                }
                c if c == io_::MEM_FREE.code() => {
                    s.chunks.remove(&g64(a, 0)).ok_or(libc::EINVAL)?;
                }
                c if c == io_::DMA_QUEUE_INIT.code() => {
                    let (tx, rx) = (s.chunks.get(&g64(a, 16)).copied(), s.chunks.get(&g64(a, 24)).copied());
                    let ((txo, _), (rxo, _)) = (tx.ok_or(libc::EINVAL)?, rx.ok_or(libc::EINVAL)?);
                    s.queues.insert((g32(a, 0), g32(a, 4)), (txo, rxo, g32(a, 8), 0));
                }
                c if c == io_::DMA_QUEUE_RELEASE.code() => {
                    s.queues.remove(&(g32(a, 0), g32(a, 4)));
                }
                c if c == io_::DMA_QUEUE_COPY_START.code() => {
                    return s.copy_start(g32(a, 0), g32(a, 4), g32(a, 8), g32(a, 12));
                }
                c if c == io_::NOTIFICATIONS_INIT_V2.code() || c == io_::NOTIFICATIONS_INIT_WITH_REALLOC_V2.code() => {
                    let realloc = c == io_::NOTIFICATIONS_INIT_WITH_REALLOC_V2.code();
                    let (key, size) = ((g32(a, 0), g32(a, 12)), g32(a, 16));
                    if realloc && g32(a, 32) == 1 {
                        s.realloc_forced += 1;
                    }
                    // Without force_alloc_mem the driver keeps the old chunk.
                    let force = realloc && g32(a, 32) == 1;
                    let old = s.rings.get(&key).map(|(off, p)| (*off, p.size_bytes()));
                    let off = match old {
                        Some((off, old_size)) if !force => {
                            if old_size != size {
                                s.bugs.push(format!("ring {key:?} re-initialised to {size} bytes in its old chunk"));
                            }
                            off
                        }
                        _ => s.alloc(u64::from(size)),
                    };
                    s.rings.insert(key, (off, NqProducer::new(size).map_err(|_| libc::EINVAL)?));
                    p64(a, if realloc { 40 } else { 32 }, off);
                }
                c if c == io_::SEMAPHORE_INCREMENT.code() => s.play_core(g32(a, 0)),
                _ => {}
            }
            Ok(0)
        }

        fn bar_rw(&mut self, code: u32, _bar: u32, addresses: &[u64], data: &mut [u32]) -> Result<i32, i32> {
            let mut s = self.0.borrow_mut();
            let read = code == io_::BAR_READ.code();
            s.calls.push(request_name(code).unwrap_or("?").to_string());
            for (a, d) in addresses.iter().zip(data.iter_mut()) {
                let off = a.checked_sub(BAR0).ok_or(libc::EINVAL)?;
                let window = simabi::status_window(Arch::Sunda);
                if read {
                    *d = if off == window + simabi::STATUS_MODEL_CORES {
                        s.model_cores
                    } else if (window..window + 8).contains(&off) {
                        1 // BarrierDone of cores 0 and 1
                    } else {
                        0
                    };
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
            let off = s.alloc(arg.size);
            let handle = (1..).find(|h| !s.chunks.contains_key(h)).unwrap_or(u64::MAX);
            s.chunks.insert(handle, (off, arg.size));
            Ok(handle)
        }
    }

    /// A device node (a temp file) served by a fresh fake on this thread.
    pub fn install(name: &str) -> (std::path::PathBuf, Rc<RefCell<State>>) {
        let p = std::env::temp_dir().join(format!("nrt-fake-neuron-{}-{name}", std::process::id()));
        let f = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&p).unwrap();
        f.set_len(FILE_LEN).unwrap();
        let state = Rc::new(RefCell::new(State {
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
}

fn cfg(cores: Option<u8>) -> SessionConfig {
    SessionConfig { cores, ring_entries: Some(64), timeout_s: 2, ..SessionConfig::default() }
}

fn bring_up_calls(calls: &[String]) -> Vec<&str> {
    calls.iter().map(String::as_str).filter(|c| !c.starts_with("NEURON_IOCTL_BAR_")).collect()
}

/// Steps 1-10 against a driver: the requests in the contract's order, the
/// staged copy executed, an inference harvested to NRT_SUCCESS with HEAD at
/// the engine_index slots, everything released in reverse.
#[test]
fn the_bring_up_runs_the_contracts_sequence_and_an_inference() {
    let (p, st) = fake_driver::install("seq");
    let mut s = Session::open(&p, cfg(Some(2))).unwrap();
    assert_eq!((s.arch(), s.cores(), s.ring_entries()), (Arch::Sunda, 2, 64));
    let r = s.run_inference().unwrap();
    assert_eq!((r.status, r.step), (NrtStatus::Success, Step::Done), "{:?}", r.events);
    assert!(r.staging.copy_verified, "the copy ran through the mapped rings");
    assert!(r.staging.handle_polls.is_some(), "the marker arrived");
    assert_eq!(r.staging.descriptors, 5);
    assert_eq!(s.last_status(), Some(NrtStatus::Success));
    s.close().unwrap();
    fake_driver::uninstall(&p);
    let st = st.borrow();
    assert!(st.bugs.is_empty(), "{:?}", st.bugs);
    let mut want: Vec<String> = [
        "NEURON_IOCTL_DRIVER_INFO_GET",
        "NEURON_IOCTL_COMPATIBLE_VERSION",
        "NEURON_IOCTL_DEVICE_INFO",
        "NEURON_IOCTL_CRWL_READER_ENTER 0",
        "NEURON_IOCTL_CRWL_READER_ENTER 1",
        "NEURON_IOCTL_NC_RESET",
        "NEURON_IOCTL_NC_RESET_READY",
    ]
    .map(String::from)
    .to_vec();
    for _ in 0..3 {
        want.push("NEURON_IOCTL_MEM_ALLOC_V2MT".into());
        want.push("NEURON_IOCTL_MEM_GET_EXTENDED_INFO".into());
    }
    want.push("NEURON_IOCTL_DMA_QUEUE_INIT".into());
    want.extend((0..12).map(|_| "NEURON_IOCTL_NOTIFICATIONS_INIT_V2".to_string()));
    want.push("NEURON_IOCTL_DMA_QUEUE_COPY_START".into());
    want.extend((0..2).map(|_| "NEURON_IOCTL_SEMAPHORE_INCREMENT".to_string()));
    want.push("NEURON_IOCTL_DMA_QUEUE_RELEASE".into());
    want.extend(["3", "2", "1"].map(|h| format!("NEURON_IOCTL_MEM_FREE {h}")));
    want.extend(["1", "0"].map(|c| format!("NEURON_IOCTL_CRWL_READER_EXIT {c}")));
    assert_eq!(bring_up_calls(&st.calls), want.iter().map(String::as_str).collect::<Vec<_>>());
    // The host trigger, then HEAD of every INFER_STATUS ring at slot = engine_index.
    let trigger = simabi::xt_local_reg(Arch::Sunda) + nrt_core::dma::HOST_TRIGGER_OFFSET;
    assert_eq!(st.heads.first(), Some(&(trigger, 1)));
    for core in 0..2u8 {
        for nq in INFER_STATUS_NQS {
            let reg = nrt_core::arch::nq_head_register(Arch::Sunda, core, nq).unwrap();
            assert_eq!(st.heads.iter().rev().find(|(o, _)| *o == reg).map(|h| h.1), Some(32), "core {core} nq {nq}");
        }
    }
}

/// Teardown after an error: a failed ring creation releases the queue, the
/// chunks and the cores, in reverse order, and names the failed call.
#[test]
fn a_failed_step_releases_what_was_acquired_in_reverse() {
    let (p, st) = fake_driver::install("fail");
    st.borrow_mut().fail = Some((ioctl::NOTIFICATIONS_INIT_V2.code(), 8, libc::ENOMEM));
    let e = Session::open(&p, cfg(Some(2))).unwrap_err();
    fake_driver::uninstall(&p);
    assert_eq!((e.call, e.errno()), ("NEURON_IOCTL_NOTIFICATIONS_INIT_V2", Some(libc::ENOMEM)), "{e}");
    assert!(e.to_string().contains(&p.display().to_string()), "{e}");
    let st = st.borrow();
    let calls = bring_up_calls(&st.calls);
    let at = calls.iter().rposition(|c| *c == "NEURON_IOCTL_NOTIFICATIONS_INIT_V2").unwrap();
    assert_eq!(
        &calls[at + 1..],
        [
            "NEURON_IOCTL_DMA_QUEUE_RELEASE",
            "NEURON_IOCTL_MEM_FREE 3",
            "NEURON_IOCTL_MEM_FREE 2",
            "NEURON_IOCTL_MEM_FREE 1",
            "NEURON_IOCTL_CRWL_READER_EXIT 1",
            "NEURON_IOCTL_CRWL_READER_EXIT 0",
        ]
    );
}

/// An incompatible driver is refused at COMPATIBLE_VERSION, both versions
/// named, before any core is taken.
#[test]
fn an_incompatible_driver_is_refused_before_any_core_is_taken() {
    let (p, st) = fake_driver::install("compat");
    st.borrow_mut().compat = (11, 10);
    let e = Session::open(&p, cfg(Some(1))).unwrap_err();
    fake_driver::uninstall(&p);
    assert_eq!(e.call, "NEURON_IOCTL_COMPATIBLE_VERSION");
    assert!(e.to_string().contains("runtime versions 10 to 11") && e.to_string().contains("version 7"), "{e}");
    assert!(!st.borrow().calls.iter().any(|c| c.contains("CRWL")), "{:?}", st.borrow().calls);
}

/// The model's core count is taken when the caller gives none; a new ring
/// size goes through WITH_REALLOC_V2 with force_alloc_mem 1 (point 8), and
/// the next inference runs on the new rings.
#[test]
fn the_models_cores_and_a_ring_size_change() {
    let (p, st) = fake_driver::install("realloc");
    st.borrow_mut().model_cores = 1;
    let mut s = Session::open(&p, cfg(None)).unwrap();
    assert_eq!(s.cores(), 1);
    s.set_ring_entries(128).unwrap();
    assert_eq!(s.ring_entries(), 128);
    let r = s.run_inference().unwrap();
    drop(s);
    fake_driver::uninstall(&p);
    assert_eq!(r.status, NrtStatus::Success, "{:?}", r.events);
    let st = st.borrow();
    assert_eq!(st.realloc_forced, 6, "the six rings of one core");
    assert!(st.bugs.is_empty(), "{:?}", st.bugs);
    assert!(st.calls.iter().any(|c| c == "NEURON_IOCTL_CRWL_READER_EXIT 0"), "dropped: released");
}

/// The report is `nrt-sim run`'s: the status line in the text, the same
/// JSON fields, the staging line with the copy verified.
#[cfg(feature = "sim")]
#[test]
fn the_report_is_nrt_sim_runs() {
    let (p, _st) = fake_driver::install("report");
    let mut s = Session::open(&p, cfg(Some(2))).unwrap();
    let r = s.run_inference().unwrap();
    let report = run_report(&s, &r, nrt_abi::report::ReportConfig::default());
    drop(s);
    fake_driver::uninstall(&p);
    let text = nrt_abi::report::text_with_heading(&report, "nrtctl run");
    assert!(text.contains("\nstatus: 0 NRT_SUCCESS ("), "{text}");
    assert!(text.contains("staging: 5 descriptors each way lowered into 256-deep rings"), "{text}");
    assert!(text.contains("4096 B copy verified"), "{text}");
    assert!(text.contains("arch sunda, 2 cores"), "{text}");
    let json = nrt_abi::report::json(&report, None);
    assert_eq!(json["status"], 0);
    assert_eq!(json["status_name"], "NRT_SUCCESS");
    assert_eq!(json["return_code"], 0);
    assert_eq!(json["cores"].as_array().map(Vec::len), Some(2));
}
