//! The session against a driver in this process: `fake_driver`, served through `sys::fake`.

use super::fake_driver;
use super::*;
use nrt_core::dma::submit::M2S_WRITE_BARRIER;
use nrt_core::dma::Bd;
use nrt_core::dma::DmaError;

#[test]
fn the_runtime_version_is_checked_against_both_ends_and_named() {
    assert_eq!(check_compatible(Arch::Sunda, CompatibleVersion { max: 7, min: 5 }), Ok(7));
    assert_eq!(check_compatible(Arch::Cayman, CompatibleVersion { max: 11, min: 10 }), Ok(11));
    let old = CompatibleVersion { max: 7, min: 5 };
    let e = check_compatible(Arch::Cayman, old).unwrap_err();
    assert_eq!(e, IncompatibleDriver { arch: Arch::Cayman, driver: old, ours: 11 });
    assert_eq!(
        e.to_string(),
        format!(
            "incompatible driver: it serves runtime versions 5 to 7 on arch {} (cayman), this binding speaks version 11",
            Arch::Cayman.arch_type()
        )
    );
    let e = check_compatible(Arch::Sunda, CompatibleVersion { max: 11, min: 10 }).unwrap_err();
    assert_eq!((e.arch, e.ours), (Arch::Sunda, 7));
    assert!(e.to_string().contains("10 to 11") && e.to_string().contains("version 7"), "{e}");
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
    let e = validate(Arch::Sunda, 0, 64).unwrap_err();
    assert_eq!(e, ShapeError::Cores { max: 2, got: 0 });
    assert_eq!(e.to_string(), "cores must be 1 to 2, got 0");
    assert_eq!(validate_cores(Arch::Sunda, 3), Err(ShapeError::Cores { max: 2, got: 3 }));
    assert!(validate(Arch::Cayman, 3, 64).is_err(), "the harvest state holds one logical core");
    let e = validate(Arch::Sunda, 1, 48).unwrap_err();
    assert_eq!(e, ShapeError::RingEntries { max: MAX_RING_ENTRIES, got: 48 });
    assert_eq!(e.to_string(), "ring entries must be a power of two from 2 to 65536, got 48");
    assert!(matches!(validate(Arch::Sunda, 1, 1 << 17), Err(ShapeError::RingEntries { got: 0x2_0000, .. })));
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

/// Doorbell registers that keep what is written and ring nothing.
#[derive(Default)]
struct NoDoorbell(Vec<(u64, u32)>);

impl ErrorType for NoDoorbell {
    type Error = LinuxError;
}

impl hal::Registers for NoDoorbell {
    fn read32(&mut self, _: u64) -> Result<u32, LinuxError> {
        Ok(0)
    }
    fn write32(&mut self, offset: u64, value: u32) -> Result<(), LinuxError> {
        self.0.push((offset, value));
        Ok(())
    }
}

/// A delay that does not wait (the marker never lands in these chunks).
struct NoDelay;

impl hal::Delay for NoDelay {
    fn delay_us(&mut self, _: u32) {}
}

/// A copy of `src` from a buffer's first page to its second through
/// [`submit_piece`], the handle on its third page.
#[allow(clippy::too_many_arguments)]
fn submit_staging<R: hal::Registers<Error = LinuxError>, W: hal::Delay>(
    mem: &mut ChunkMemory<'_>,
    doorbell: &mut R,
    delay: &mut W,
    arch: Arch,
    engine_base: u64,
    buf: u64,
    src: &[u8],
    q: (&mut SwDmaQueue, &mut SwDmaQueue),
    events: &mut Vec<Event>,
) -> Result<nrt_core::dma::Submitted, staging::StagingFailure> {
    hal::DeviceMemory::copy_in(mem, buf, src)?;
    hal::DeviceMemory::copy_in(mem, buf + COPY_BYTES as u64, &vec![0; src.len()])?;
    // 1024 elements of 4 bytes in 256-element BDs: four 1 KiB descriptors.
    let t = Transfer {
        op: nrt_core::dma::build::OP_COPY,
        elem_count: (src.len() / 4) as u32,
        granule: 256,
        elem_bytes: 4,
        src: buf,
        dst: buf + COPY_BYTES as u64,
    };
    let mut bufs = Box::new(staging::StagingBuffers::new());
    submit_piece(mem, doorbell, delay, arch, engine_base, buf + 2 * COPY_BYTES as u64, t, q, &mut bufs, events)
}

/// The staging of step 9 lands in the mapped chunks: the buffer filled and
/// the handle armed, five copy descriptors per ring at the chunks' physical
/// addresses (four 1 KiB data BDs, then the 4-byte marker), at the queue
/// cursors, which advance for the next inference.
#[test]
fn staging_lowers_the_copy_and_its_marker_into_the_mapped_rings() {
    let dev = NeuronDevice::open("/dev/null").unwrap();
    let ring = u64::from(STAGING_RING_DEPTH) * 16;
    let chunks = [chunk("tx", 0x10_0000, ring), chunk("rx", 0x20_0000, ring), chunk("buf", 0x30_0000, 3 * 4096)];
    let mut mem = ChunkMemory { dev: &dev, chunks: &chunks };
    let src: Vec<u8> = (0..COPY_BYTES).map(|i| i as u8).collect();
    let (mut txq, mut rxq) =
        (SwDmaQueue::new(STAGING_RING_DEPTH).unwrap(), SwDmaQueue::new(STAGING_RING_DEPTH).unwrap());
    let mut events = Vec::new();
    let mut db = NoDoorbell::default();
    let s = submit_staging(
        &mut mem,
        &mut db,
        &mut NoDelay,
        Arch::Sunda,
        0x3000_0000,
        0x30_0000,
        &src,
        (&mut txq, &mut rxq),
        &mut events,
    )
    .unwrap();
    assert_eq!((s.descriptors, s.rings, s.ring_depth), (5, (0x10_0000, 0x20_0000), STAGING_RING_DEPTH));
    // Rung S2M, then M2S, five descriptors each; the marker never landed.
    assert_eq!(db.0, [(s.doorbells.1, 5), (s.doorbells.0, 5)]);
    assert!(!events.iter().any(|e| matches!(e, Event::Dma(DmaEvent::Completed { .. }))));
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
    let q = (&mut txq, &mut rxq);
    submit_staging(&mut mem, &mut db, &mut NoDelay, Arch::Sunda, 0x3000_0000, 0x30_0000, &src, q, &mut events).unwrap();
    assert_eq!(bd_at(tx, 9).addr(), 0x30_2100);
    assert_eq!(txq.next_desc_idx(), 10);
    // Memory outside every chunk is refused, naming it.
    let e = hal::DeviceMemory::copy_in(&mut mem, 0x40_0000, &[0; 4]).unwrap_err();
    assert!(e.to_string().contains("0x400000+4 is in no mapped chunk"), "{e}");
}

fn cfg(cores: Option<u8>) -> SessionConfig {
    SessionConfig { cores, ring_entries: Some(64), timeout_s: 2, ..SessionConfig::default() }
}

fn bring_up_calls(calls: &[String]) -> Vec<&str> {
    calls.iter().map(String::as_str).filter(|c| !c.starts_with("NEURON_IOCTL_BAR_")).collect()
}

/// Steps 1-10 against a real driver (the hint query refused): the ownership
/// sequence a runtime uses (the range mark, the reset of those cores, the
/// model switched in under the writer lock, downgraded, released in reverse),
/// host allocations with align 0, the staged copy executed with the write
/// barrier before its marker, an inference harvested to NRT_SUCCESS with HEAD
/// at the engine_index slots, the host trigger in the top-SP window, no
/// simulator-only register read, the ring chunks left to close.
#[test]
fn the_bring_up_runs_the_contracts_sequence_and_an_inference() {
    let (p, st) = fake_driver::install("seq");
    let mut s = Session::open(&p, cfg(Some(2))).unwrap();
    assert_eq!((s.arch(), s.first_core(), s.cores(), s.ring_entries()), (Arch::Sunda, 0, 2, 64));
    let r = s.run_inference().unwrap();
    assert_eq!((r.status, r.step), (NrtStatus::Success, Step::Done(NrtStatus::Success)), "{:?}", r.events);
    assert!(r.staging().unwrap().copy_verified, "the copy ran through the mapped rings");
    assert!(r.staging().unwrap().handle_polls.is_some(), "the marker arrived");
    // One 4 KiB data descriptor and the marker.
    assert_eq!(r.staging().unwrap().descriptors, 2);
    assert_eq!(s.last_status(), Some(NrtStatus::Success));
    s.close().unwrap();
    fake_driver::uninstall(&p);
    let st = st.borrow();
    assert!(st.bugs.is_empty(), "{:?}", st.bugs);
    let mut want: Vec<String> = [
        "NEURON_IOCTL_DRIVER_INFO_GET",
        "NEURON_IOCTL_COMPATIBLE_VERSION",
        "NEURON_IOCTL_DEVICE_INFO",
        "NRT_SIM_IOCTL_HINTS",
        "NEURON_IOCTL_CRWL_NC_RANGE_MARK",
        "NEURON_IOCTL_NC_RESET",
        "NEURON_IOCTL_NC_RESET_READY",
        "NEURON_IOCTL_CRWL_WRITER_ENTER 0",
        "NEURON_IOCTL_CRWL_WRITER_ENTER 1",
    ]
    .map(String::from)
    .to_vec();
    for _ in 0..3 {
        want.push("NEURON_IOCTL_MEM_ALLOC_V2MT".into());
        want.push("NEURON_IOCTL_MEM_GET_EXTENDED_INFO".into());
    }
    want.push("NEURON_IOCTL_DMA_QUEUE_INIT".into());
    want.extend((0..2 * (1 + ENGINES_PER_CORE)).map(|_| "NEURON_IOCTL_NOTIFICATIONS_INIT_V2".to_string()));
    want.extend(["0", "1"].map(|c| format!("NEURON_IOCTL_CRWL_WRITER_DOWNGRADE {c}")));
    want.push("NEURON_IOCTL_ACQUIRE_NEURON_DS".into());
    // The self-test copy's source and destination, made at the first inference.
    for _ in 0..2 {
        want.push("NEURON_IOCTL_MEM_ALLOC_V2MT".into());
        want.push("NEURON_IOCTL_MEM_GET_EXTENDED_INFO".into());
    }
    want.push("NEURON_IOCTL_DMA_QUEUE_COPY_START".into());
    want.extend((0..2).map(|_| "NEURON_IOCTL_SEMAPHORE_INCREMENT".to_string()));
    // The datastore is released (its mapping gone) with the harvest's device, first.
    want.push("NEURON_IOCTL_RELEASE_NEURON_DS".into());
    // Then the self-test memory, source first.
    want.extend(["4", "5"].map(|h| format!("NEURON_IOCTL_MEM_FREE {h}")));
    want.push("NEURON_IOCTL_DMA_QUEUE_RELEASE".into());
    // The copy buffer is freed; the TX and RX ring chunks (1, 2) are left to close.
    want.push("NEURON_IOCTL_MEM_FREE 3".into());
    want.extend(["1", "0"].map(|c| format!("NEURON_IOCTL_CRWL_READER_EXIT {c}")));
    want.push("NEURON_IOCTL_CRWL_NC_RANGE_UNMARK 0x3".into());
    assert_eq!(bring_up_calls(&st.calls), want.iter().map(String::as_str).collect::<Vec<_>>());
    // The inference's counters were in the datastore, at the driver's offsets,
    // when the session released it: each core one completion, its duration.
    use nrt_core::counters::id;
    let ds = st.released_datastore.expect("the session released its datastore");
    for (core, nc) in ds.iter().enumerate() {
        assert_eq!(
            (nc[id::INFER_COMPLETED], nc[id::INFERENCE_COUNT], nc[id::INFER_TIMED_OUT]),
            (1, 1, 0),
            "core {core}"
        );
        assert_eq!(nc[id::LATENCY_DEVICE], r.request.out_info().tpb_duration_us[core], "core {core}");
        assert_eq!(nc[id::LATENCY_SAMPLES_WRITTEN], 1);
    }
    assert!(st.datastore.is_none(), "released: cleared");
    // No host trigger on a real driver (its block is not public: the top-SP
    // window starts with its semaphores), said in the inference's notes;
    // then HEAD of every INFER_STATUS ring at slot = engine_index.
    assert_eq!(r.staging().unwrap().host_trigger, 0);
    assert!(r.notes.iter().any(|n| n.contains("host trigger is not written")), "{:?}", r.notes);
    assert!(st.heads.iter().all(|(o, _)| matches!(
        nrt_abi::devmap::region_of(Arch::Sunda, *o, 4),
        Some(nrt_abi::devmap::Region::Notific(_))
    )));
    for core in 0..2u8 {
        for nq in INFER_STATUS_NQS {
            let reg = nrt_core::arch::nq_head_register(Arch::Sunda, core, nq).unwrap();
            assert_eq!(st.heads.iter().rev().find(|(o, _)| *o == reg).map(|h| h.1), Some(32), "core {core} nq {nq}");
        }
    }
    // The write barrier on the last data descriptor (the one), not on the marker.
    let barrier: Vec<bool> = st.tx_meta.iter().map(|m| m & M2S_WRITE_BARRIER != 0).collect();
    assert_eq!(barrier, [true, false], "{:x?}", st.tx_meta);
    // Every core left as it was found: no reader, no writer lock, no mark.
    assert!(st.crwl.iter().all(|l| l.reader_count == 0 && !l.writer_acquired));
    assert_eq!(st.range_pids, [0; 8]);
    // The mark and the unmark, and only they, through the write-only
    // descriptor, closed once after the unmark.
    assert_eq!(st.free_access_calls, ["NEURON_IOCTL_CRWL_NC_RANGE_MARK", "NEURON_IOCTL_CRWL_NC_RANGE_UNMARK"]);
    assert_eq!(st.misc_flushes, 1);
}

/// The descriptors of `p` this process has open, write-only ones apart:
/// `(read-write, write-only)`.
fn descriptors_of(p: &std::path::Path) -> (usize, usize) {
    let mut n = (0, 0);
    for e in std::fs::read_dir("/proc/self/fd").unwrap().flatten() {
        if std::fs::read_link(e.path()).is_ok_and(|t| t == p) {
            let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{}", e.file_name().to_string_lossy()))
                .unwrap_or_default();
            let flags = info.lines().find_map(|l| l.strip_prefix("flags:")).map(str::trim).unwrap_or("0");
            match i32::from_str_radix(flags, 8).unwrap_or(0) & libc::O_ACCMODE {
                libc::O_WRONLY => n.1 += 1,
                _ => n.0 += 1,
            }
        }
    }
    n
}

/// neuron_cdev.c: a write-only descriptor reaches only the misc requests
/// (`ncdev_misc_ioctl`), and its close drops every mark of the process
/// (`ncdev_misc_flush`). So the marks of a process go through one write-only
/// descriptor per node, shared by its devices and closed only when the last of
/// them is gone: closing it while another still marks would drop that one's
/// cores too.
#[test]
fn one_write_only_descriptor_carries_the_marks_of_every_device_of_the_process() {
    let (p, st) = fake_driver::install("wronly");
    let a = NeuronDevice::open(&p).unwrap();
    let b = NeuronDevice::open(&p).unwrap();
    assert_eq!(descriptors_of(&p), (2, 0), "no write-only descriptor before a mark");
    assert_eq!(a.crwl_nc_range_mark(1, 0, 0).unwrap(), 0b01);
    assert_eq!(b.crwl_nc_range_mark(1, 1, 1).unwrap(), 0b10);
    assert_eq!(descriptors_of(&p), (2, 1), "one write-only descriptor, shared");
    // `a` gives its core back and goes: `b`'s mark stays, so does the descriptor.
    a.crwl_nc_range_unmark(0b01).unwrap();
    drop(a);
    assert_eq!(descriptors_of(&p), (1, 1));
    assert_eq!((st.borrow().misc_flushes, st.borrow().range_pids[1]), (0, fake_driver::me()));
    // `b` goes without its unmark: the last user closes the descriptor, and
    // the driver's flush drops the mark left behind.
    drop(b);
    assert_eq!(descriptors_of(&p), (0, 0));
    assert_eq!(st.borrow().misc_flushes, 1);
    assert_eq!(st.borrow().range_pids, [0; 8]);
    assert_eq!(
        st.borrow().free_access_calls,
        ["NEURON_IOCTL_CRWL_NC_RANGE_MARK", "NEURON_IOCTL_CRWL_NC_RANGE_MARK", "NEURON_IOCTL_CRWL_NC_RANGE_UNMARK"]
    );
    // The other requests stay on the read-write descriptor: the driver would
    // refuse them on the write-only one (EINVAL, as the fake does).
    let c = NeuronDevice::open(&p).unwrap();
    c.crwl_nc_range_mark(1, 0, 0).unwrap();
    c.device_info().unwrap();
    c.crwl_writer_enter(0, [3; 32]).unwrap();
    c.crwl_writer_downgrade(0, [3; 32]).unwrap();
    c.crwl_reader_exit(0, [3; 32]).unwrap();
    c.crwl_nc_range_unmark(0b01).unwrap();
    c.release_free_access();
    assert_eq!(descriptors_of(&p), (1, 0), "released: the write-only descriptor closed at once");
    drop(c);
    fake_driver::uninstall(&p);
    let st = st.borrow();
    assert_eq!(st.misc_flushes, 2);
    assert_eq!(st.free_access_calls.len(), 5, "{:?}", st.free_access_calls);
}

/// The close of any write-only descriptor drops the process's marks on every
/// device, so none closes while a device of another node still uses its own.
#[test]
fn no_write_only_descriptor_closes_while_another_node_still_marks() {
    let (p, st) = fake_driver::install("wronly-two-nodes");
    // A second node (a plain file, outside the fake: its mark is ENOTTY, but
    // its write-only descriptor is opened and it counts as a user).
    let q = std::env::temp_dir().join(format!("nrt-fake-neuron-{}-second-node", std::process::id()));
    std::fs::write(&q, b"").unwrap();
    let other = NeuronDevice::open(&q).unwrap();
    assert_eq!(other.crwl_nc_range_mark(1, 0, 0).unwrap_err().errno(), Some(libc::ENOTTY));
    let dev = NeuronDevice::open(&p).unwrap();
    dev.crwl_nc_range_mark(1, 0, 0).unwrap();
    drop(dev);
    assert_eq!(descriptors_of(&p), (0, 1), "kept open: the other node's device still uses the registry");
    assert_eq!((st.borrow().misc_flushes, st.borrow().range_pids[0]), (0, fake_driver::me()));
    drop(other);
    assert_eq!((descriptors_of(&p), descriptors_of(&q)), ((0, 0), (0, 0)));
    assert_eq!(st.borrow().misc_flushes, 1);
    assert_eq!(st.borrow().range_pids, [0; 8]);
    fake_driver::uninstall(&p);
    std::fs::remove_file(q).unwrap();
}

/// A session whose unmark failed: its close of the write-only descriptor (the
/// process's last) drops the mark all the same, as a killed process's exit does.
#[test]
fn a_mark_the_unmark_missed_is_dropped_by_the_write_only_close() {
    let (p, st) = fake_driver::install("unmark-fails");
    st.borrow_mut().fail = Some((ioctl::CRWL_NC_RANGE_UNMARK.code(), 1, libc::EIO));
    let s = Session::open(&p, cfg(Some(2))).unwrap();
    assert_eq!(st.borrow().range_pids[..2], [fake_driver::me(), fake_driver::me()]);
    let errors = s.close().unwrap_err();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!((errors[0].call, errors[0].errno()), ("NEURON_IOCTL_CRWL_NC_RANGE_UNMARK", Some(libc::EIO)));
    assert_eq!(descriptors_of(&p), (0, 0));
    fake_driver::uninstall(&p);
    let st = st.borrow();
    assert_eq!(st.misc_flushes, 1);
    assert_eq!(st.range_pids, [0; 8]);
}

/// Any other refusal of a writer enter (here EBUSY: the lock stayed taken
/// past the driver's wait) fails the bring-up, and that core, whose lock this
/// session never had, is not downgraded nor exited; the one before it is.
#[test]
fn a_writer_enter_refused_otherwise_fails_and_leaves_that_core_alone() {
    let (p, st) = fake_driver::install("writer-ebusy");
    st.borrow_mut().fail = Some((ioctl::CRWL_WRITER_ENTER.code(), 2, libc::EBUSY));
    let e = Session::open(&p, cfg(Some(2))).unwrap_err();
    fake_driver::uninstall(&p);
    assert_eq!((e.call, e.errno()), ("NEURON_IOCTL_CRWL_WRITER_ENTER", Some(libc::EBUSY)), "{e}");
    let st = st.borrow();
    let calls = bring_up_calls(&st.calls);
    let at = calls.iter().position(|c| *c == "NEURON_IOCTL_CRWL_WRITER_ENTER 1").unwrap();
    assert_eq!(
        &calls[at + 1..],
        [
            "NEURON_IOCTL_CRWL_WRITER_DOWNGRADE 0",
            "NEURON_IOCTL_CRWL_READER_EXIT 0",
            "NEURON_IOCTL_CRWL_NC_RANGE_UNMARK 0x3",
        ]
    );
    assert!(st.crwl.iter().all(|l| l.reader_count == 0 && !l.writer_acquired));
    assert_eq!(st.range_pids, [0; 8]);
}

/// neuron_crwl.c `ncrwl_writer_enter`: EALREADY (this process already the
/// core's writer with this uuid) comes after the writer lock is set. The
/// session records the core as writer-held and downgrades it, so the core is
/// left unlocked at close.
#[test]
fn a_writer_enter_answered_ealready_is_downgraded_as_held() {
    let (p, st) = fake_driver::install("ealready");
    st.borrow_mut().already_writer = Some(0);
    let s = Session::open(&p, cfg(Some(2))).unwrap();
    {
        let st = st.borrow();
        assert!(st.crwl[..2].iter().all(|l| !l.writer_acquired && l.reader_count == 1), "downgraded");
        let calls = bring_up_calls(&st.calls);
        assert!(calls.contains(&"NEURON_IOCTL_CRWL_WRITER_DOWNGRADE 0"), "{calls:?}");
    }
    s.close().unwrap();
    fake_driver::uninstall(&p);
    let st = st.borrow();
    assert!(st.crwl.iter().all(|l| l.reader_count == 0 && !l.writer_acquired));
    assert_eq!(st.range_pids, [0; 8]);
}

/// Teardown after an error: a failed ring creation (under the writer lock)
/// releases the queue, the buffer, the writer locks (downgraded, then exited)
/// and the mark, in reverse order, and names the failed call.
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
            "NEURON_IOCTL_CRWL_WRITER_DOWNGRADE 1",
            "NEURON_IOCTL_CRWL_READER_EXIT 1",
            "NEURON_IOCTL_CRWL_WRITER_DOWNGRADE 0",
            "NEURON_IOCTL_CRWL_READER_EXIT 0",
            "NEURON_IOCTL_CRWL_NC_RANGE_UNMARK 0x3",
        ]
    );
    assert!(st.bugs.is_empty(), "{:?}", st.bugs);
    assert!(st.crwl.iter().all(|l| l.reader_count == 0 && !l.writer_acquired));
}

/// Cores another process holds: the mark is refused with EBUSY, and the error
/// names the holder's pid and its command; nothing else is attempted.
#[test]
fn cores_held_by_another_process_name_the_holder() {
    let (p, st) = fake_driver::install("held");
    // Process 1 (init, always there) holds core 1 and is its writer.
    {
        let mut s = st.borrow_mut();
        s.range_pids[1] = 1;
        s.crwl[1] = fake_driver::CoreLock { uuid: [7; 32], writer_pid: 1, writer_acquired: false, reader_count: 1 };
    }
    let e = Session::open(&p, cfg(Some(2))).unwrap_err();
    fake_driver::uninstall(&p);
    assert_eq!((e.call, e.errno()), ("NEURON_IOCTL_CRWL_NC_RANGE_MARK", Some(libc::EBUSY)), "{e}");
    let comm = std::fs::read_to_string("/proc/1/comm").map(|c| c.trim().to_string()).unwrap_or_default();
    let msg = e.to_string();
    assert!(msg.contains(&format!("cores 0-1 are held by pid 1 ({comm})")), "{msg}");
    let st = st.borrow();
    assert!(!st.calls.iter().any(|c| c.contains("NC_RESET") || c.contains("WRITER")), "{:?}", st.calls);
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
    let want = IncompatibleDriver { arch: Arch::Sunda, driver: CompatibleVersion { max: 11, min: 10 }, ours: 7 };
    assert!(matches!(e.cause, Cause::Incompatible(w) if w == want), "the typed reason is kept: {e:?}");
    assert!(!st.borrow().calls.iter().any(|c| c.contains("CRWL")), "{:?}", st.borrow().calls);
}

/// The shape a refusal gives as its cause, if it is one.
fn shape_of(e: &LinuxError) -> Option<ShapeError> {
    match e.cause {
        Cause::Shape(s) => Some(s),
        _ => None,
    }
}

/// Too many cores, or ring entries off the powers of two, are refused at open,
/// and ring entries at a resize, with the typed [`ShapeError`] as the cause,
/// its text the same, before any core is marked.
#[test]
fn a_bad_shape_is_refused_at_open_with_its_typed_reason() {
    let (p, st) = fake_driver::install("shape");
    let e = Session::open(&p, cfg(Some(3))).unwrap_err();
    assert_eq!((e.call, e.subject), ("session", Subject::Cores), "{e}");
    assert_eq!(shape_of(&e), Some(ShapeError::Cores { max: 2, got: 3 }), "{e}");
    assert!(e.to_string().contains("cores must be 1 to 2, got 3"), "{e}");
    let e = Session::open(&p, SessionConfig { ring_entries: Some(48), ..cfg(Some(1)) }).unwrap_err();
    assert_eq!(e.call, "session", "{e}");
    assert_eq!(shape_of(&e), Some(ShapeError::RingEntries { max: MAX_RING_ENTRIES, got: 48 }), "{e}");
    assert!(st.borrow().marks.is_empty(), "no mark made");
    let mut s = Session::open(&p, cfg(Some(1))).unwrap();
    let e = s.set_ring_entries(48).unwrap_err();
    assert_eq!(shape_of(&e), Some(ShapeError::RingEntries { max: MAX_RING_ENTRIES, got: 48 }), "{e}");
    assert_eq!(s.ring_entries(), 64, "the size is kept");
    drop(s);
    fake_driver::uninstall(&p);
}

/// Positive returns are errors naming the call and the value: NC_RESET's +1
/// (a reset already pending), a memory call's +8, BAR_READ's leftover count.
#[test]
fn positive_returns_are_errors_naming_the_call_and_the_value() {
    for (code, rc, call, why) in [
        (ioctl::NC_RESET.code(), 1, "NEURON_IOCTL_NC_RESET", "already pending"),
        (ioctl::MEM_GET_EXTENDED_INFO.code(), 8, "NEURON_IOCTL_MEM_GET_EXTENDED_INFO", "failed copy"),
        (ioctl::MEM_GET_EXTENDED_INFO.code(), 22, "NEURON_IOCTL_MEM_GET_EXTENDED_INFO", "bad handle"),
        (ioctl::DMA_QUEUE_INIT.code(), 8, "NEURON_IOCTL_DMA_QUEUE_INIT", "failed copy"),
    ] {
        let (p, st) = fake_driver::install("positive");
        st.borrow_mut().positive = Some((code, 1, rc));
        let e = Session::open(&p, cfg(Some(1))).unwrap_err();
        fake_driver::uninstall(&p);
        let msg = e.to_string();
        assert_eq!(e.call, call, "{msg}");
        assert!(msg.contains(&format!("returned +{rc} where 0 is success")) && msg.contains(why), "{msg}");
        assert!(st.borrow().bugs.is_empty(), "{:?}", st.borrow().bugs);
    }
    // BAR_WRITE's leftover count, at the host trigger (the simulator's hint
    // gives it): the inference fails naming it.
    let (p, st) = fake_driver::install("positive-bar");
    st.borrow_mut().hints = Some(fake_driver::sim_hints(1));
    let mut s = Session::open(&p, cfg(Some(1))).unwrap();
    st.borrow_mut().positive = Some((ioctl::BAR_WRITE.code(), 1, 4));
    let e = s.run_inference().unwrap_err();
    drop(s);
    fake_driver::uninstall(&p);
    assert_eq!(e.call, "NEURON_IOCTL_BAR_WRITE", "{e}");
    assert!(e.to_string().contains("returned +4 where 0 is success"), "{e}");
}

/// A real driver refuses the hint query: the core count and ring entries come
/// from the caller's configuration (its fallback when it gives none), and no
/// probe is read. The simulator's hints are taken when it answers.
#[test]
fn the_hints_come_from_the_query_or_the_configuration_never_from_bar_space() {
    let (p, st) = fake_driver::install("hints-real");
    let c = SessionConfig { fallback_cores: 1, fallback_ring_entries: 32, ..cfg(None) };
    let c = SessionConfig { ring_entries: None, ..c };
    let mut s = Session::open(&p, c).unwrap();
    assert_eq!((s.cores(), s.ring_entries()), (1, 32));
    let r = s.run_inference().unwrap();
    assert_eq!(r.status, NrtStatus::Success, "{:?}", r.events);
    drop(s);
    fake_driver::uninstall(&p);
    assert!(st.borrow().bugs.is_empty(), "{:?}", st.borrow().bugs);
    assert!(!st.borrow().calls.iter().any(|c| c == "NEURON_IOCTL_BAR_READ"), "{:?}", st.borrow().calls);

    let (p, st) = fake_driver::install("hints-sim");
    let mut h = fake_driver::sim_hints(1);
    h.ring_entries = 16;
    st.borrow_mut().hints = Some(h);
    let s = Session::open(&p, SessionConfig { ring_entries: None, ..cfg(None) }).unwrap();
    assert_eq!((s.cores(), s.ring_entries()), (1, 16));
    drop(s);
    fake_driver::uninstall(&p);
}

/// The same ring size again keeps the cursors (the driver reuses the rings
/// and the device its place): the next inference reads its own records, HEAD
/// advances past both inferences' entries. A new size goes through
/// WITH_REALLOC_V2 with force_alloc_mem 1, each ring unmapped first, and the
/// next inference runs on the new rings.
#[test]
fn a_ring_size_change_keeps_or_restarts_the_cursors_as_the_driver_does() {
    let (p, st) = fake_driver::install("realloc");
    st.borrow_mut().hints = Some(fake_driver::sim_hints(1));
    let mut s = Session::open(&p, cfg(None)).unwrap();
    assert_eq!(s.cores(), 1);
    assert_eq!(s.run_inference().unwrap().status, NrtStatus::Success);
    s.set_ring_entries(64).unwrap();
    let r = s.run_inference().unwrap();
    assert_eq!(r.status, NrtStatus::Success, "{:?}", r.events);
    let reg = nrt_core::arch::nq_head_register(Arch::Sunda, 0, INFER_STATUS_NQS[0]).unwrap();
    let last_head = |st: &fake_driver::State| st.heads.iter().rev().find(|(o, _)| *o == reg).map(|h| h.1);
    assert_eq!(last_head(&st.borrow()), Some(64), "the second inference's two entries follow the first's");
    s.set_ring_entries(128).unwrap();
    assert_eq!(s.ring_entries(), 128);
    let r = s.run_inference().unwrap();
    drop(s);
    fake_driver::uninstall(&p);
    assert_eq!(r.status, NrtStatus::Success, "{:?}", r.events);
    let st = st.borrow();
    assert_eq!(st.realloc_forced, 1 + ENGINES_PER_CORE, "the error ring and the engines' rings of one core");
    assert_eq!(last_head(&st), Some(32), "the new ring starts at its first slot");
    assert!(st.bugs.is_empty(), "{:?}", st.bugs);
    assert!(st.calls.iter().any(|c| c == "NEURON_IOCTL_CRWL_READER_EXIT 0"), "dropped: released");
}

/// A resize that fails half-way leaves rings of both sizes: the session is
/// then unusable, and every later inference fails naming why.
#[test]
fn a_failed_resize_makes_the_session_unusable() {
    let (p, st) = fake_driver::install("resize-fail");
    let mut s = Session::open(&p, cfg(Some(1))).unwrap();
    st.borrow_mut().fail = Some((ioctl::NOTIFICATIONS_INIT_WITH_REALLOC_V2.code(), 3, libc::ENOMEM));
    let e = s.set_ring_entries(128).unwrap_err();
    assert_eq!(e.errno(), Some(libc::ENOMEM), "{e}");
    let e = s.run_inference().unwrap_err();
    assert!(e.to_string().contains("unusable") && e.to_string().contains("from 64 to 128 entries"), "{e}");
    let before = st.borrow().calls.len();
    assert!(s.set_ring_entries(64).is_err());
    assert_eq!(st.borrow().calls.len(), before, "nothing reaches the driver");
    drop(s);
    fake_driver::uninstall(&p);
    assert!(st.borrow().bugs.is_empty(), "{:?}", st.borrow().bugs);
}

/// A device file whose every call fails after the kickoff (the simulator's
/// supervisor killed) ends the harvest with a device-gone error well within
/// its budget, not with NRT_TIMEOUT after spinning through it.
#[test]
fn a_dead_device_ends_the_harvest_with_device_gone() {
    let (p, st) = fake_driver::install("gone");
    st.borrow_mut().hints = Some(fake_driver::sim_hints(1));
    let mut s = Session::open(&p, SessionConfig { timeout_s: 60, ..cfg(Some(1)) }).unwrap();
    st.borrow_mut().die_after_kickoffs = Some(1);
    let e = s.run_inference().unwrap_err();
    assert_eq!(e.call, "harvest", "{e}");
    let msg = e.to_string();
    assert!(msg.contains("is gone") && msg.contains("ENOSYS"), "{msg}");
    drop(s);
    fake_driver::uninstall(&p);
}

/// A staging copy the device did not make never ends as a success: a
/// marker that never came is NRT_TIMEOUT (and the session, whose queue state
/// is unknown, refuses the next inference), a marker without the data is
/// NRT_HW_ERROR; neither kicks the cores off, and the note names the queue.
#[test]
fn a_failed_staging_copy_ends_the_inference_before_its_kickoff() {
    for (drop, status) in [(true, NrtStatus::Timeout), (false, NrtStatus::HwError)] {
        let (p, st) = fake_driver::install(if drop { "no-copy" } else { "no-data" });
        let mut s = Session::open(&p, cfg(Some(1))).unwrap();
        {
            let mut b = st.borrow_mut();
            b.drop_copies = drop;
            b.skip_data = !drop;
        }
        let r = s.run_inference().unwrap();
        assert_eq!((r.status, r.step.code()), (status, 2), "drop {drop}");
        assert!(r.notes.iter().any(|n| n.contains("DMA engine 0 queue 0")), "{:?}", r.notes);
        assert_eq!(s.last_status(), Some(status));
        assert!(!st.borrow().calls.iter().any(|c| c == "NEURON_IOCTL_SEMAPHORE_INCREMENT"), "no kickoff");
        let again = s.run_inference();
        assert_eq!(again.is_err(), drop, "drop {drop}: the next inference after a timed-out copy is refused");
        drop_session(s, &p);
    }
}

fn drop_session(s: Session, p: &std::path::Path) {
    drop(s);
    fake_driver::uninstall(p);
}

/// Handles are the allocation's: the info struct's `mem_handle` comes back as
/// a kernel pointer, and MEM_FREE gets the handle MEM_ALLOC_V2MT wrote.
#[test]
fn handles_are_kept_from_the_allocation() {
    let (p, st) = fake_driver::install("handles");
    let s = Session::open(&p, cfg(Some(1))).unwrap();
    drop(s);
    fake_driver::uninstall(&p);
    let st = st.borrow();
    assert!(st.calls.iter().any(|c| c == "NEURON_IOCTL_MEM_FREE 3"), "{:?}", st.calls);
    assert!(!st.calls.iter().any(|c| c.starts_with("NEURON_IOCTL_MEM_FREE 0xffff")), "{:?}", st.calls);
    assert!(st.bugs.is_empty(), "{:?}", st.bugs);
}

/// Host memory with an alignment is refused before the driver sees it (the
/// driver's EINVAL, named).
#[test]
fn host_memory_with_an_alignment_is_refused() {
    let dev = NeuronDevice::open("/dev/null").unwrap();
    let a = MemAllocV2Mt { size: 4096, align: 4096, host_memory: 1, ..MemAllocV2Mt::default() };
    let e = dev.mem_alloc_v2mt(a).unwrap_err();
    assert!(matches!(e.cause, Cause::Refused(_)), "{e}");
    assert!(e.to_string().contains("align 4096") && e.to_string().contains("mc_alloc_internal"), "{e}");
}

#[test]
fn core_lists_read_as_ranges() {
    use super::bringup::core_list;
    assert_eq!(core_list(0b11), "cores 0-1");
    assert_eq!(core_list(0b1), "core 0");
    assert_eq!(core_list(0b101), "cores 0,2");
    assert_eq!(core_list(0b1100), "cores 2-3");
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
    assert!(text.contains("staging: 2 descriptors each way lowered into 256-deep rings"), "{text}");
    assert!(text.contains("4096 B copy verified"), "{text}");
    assert!(text.contains("arch sunda, 2 cores"), "{text}");
    let json = nrt_abi::report::json(&report, None);
    assert_eq!(json["status"], 0);
    assert_eq!(json["status_name"], "NRT_SUCCESS");
    assert_eq!(json["return_code"], 0);
    assert_eq!(json["cores"].as_array().map(Vec::len), Some(2));
}

#[test]
fn the_environments_config_takes_the_cores_and_the_timeout_from_the_variables() {
    use crate::config::{RtEnv, VISIBLE_CORES};
    let env = |v: &[(&str, &str)]| {
        let v: Vec<(String, String)> = v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
        RtEnv::from_lookup(|k| v.iter().find(|(n, _)| n == k).map(|(_, x)| x.clone())).unwrap()
    };
    let c = SessionConfig::from_rt_env(&env(&[])).unwrap();
    assert_eq!((c.cores, c.timeout_s), (None, 600), "nothing set: the session's cores, the documented default");
    for arch in [Arch::Sunda, Arch::Cayman, Arch::Mariana] {
        assert_eq!(c.timeout_s, crate::config::default_exec_timeout_s(arch), "{arch:?}: the default needs no arch");
    }
    let c = SessionConfig::from_rt_env(&env(&[("NEURON_RT_EXEC_TIMEOUT", "7"), ("NEURON_RT_NUM_CORES", "1")])).unwrap();
    assert_eq!((c.cores, c.timeout_s), (Some(1), 7));
    let c =
        SessionConfig::from_rt_env(&env(&[("NEURON_RT_VISIBLE_CORES", "0-1"), ("NEURON_RT_NUM_CORES", "1")])).unwrap();
    assert_eq!(c.cores, Some(2), "VISIBLE_CORES beats NUM_CORES");
    assert_eq!(c.ring_entries, SessionConfig::default().ring_entries, "the rest is the default");
    assert_eq!(c.first_core, 0);
    // A run from any core: its first is the session's logical core 0.
    for (v, first, n) in [("1", 1, 1), ("2-3", 2, 2), ("2,3", 2, 2)] {
        let c = SessionConfig::from_rt_env(&env(&[("NEURON_RT_VISIBLE_CORES", v)])).unwrap();
        assert_eq!((c.first_core, c.host_wide, c.cores), (first, true, Some(n)), "{v}");
    }
    // A set with a gap is refused, naming the variable and the value.
    let e = SessionConfig::from_rt_env(&env(&[("NEURON_RT_VISIBLE_CORES", "0,2")])).unwrap_err();
    assert_eq!((e.var.as_str(), e.value.as_str()), (VISIBLE_CORES, "0,2"));
    assert!(e.accepted.contains("one run of consecutive NeuronCores"), "{e}");
    let d = SessionConfig::default();
    assert_eq!((d.first_core, d.cores, d.timeout_s), (0, None, 5), "the default reads no variable");
}

/// A session from the device's core 1 (`NEURON_RT_VISIBLE_CORES=1`) speaks of
/// the device's core 1 in every call and register: the range mark of 1..=1,
/// the reset of that core only (the fake records a reset of a core not
/// claimed as a bug), the writer enter, downgrade and reader exit of nc 1,
/// the NQs of core 1, the kickoff semaphore 1 of core 1, HEAD in core 1's
/// NOTIFIC block, the counters in the datastore's NC 1; the harvest itself
/// speaks of its logical core 0.
#[test]
fn a_session_from_core_1_speaks_of_the_devices_core_1_to_the_driver() {
    let (p, st) = fake_driver::install("first1");
    let mut s = Session::open(&p, SessionConfig { first_core: 1, ..cfg(Some(1)) }).unwrap();
    assert_eq!((s.first_core(), s.cores()), (1, 1));
    let r = s.run_inference().unwrap();
    assert_eq!((r.status, r.step), (NrtStatus::Success, Step::Done(NrtStatus::Success)), "{:?}", r.events);
    let ram = s.counters().and_then(|c| c.core(0)).map(|b| b.get(nrt_core::counters::id::INFER_COMPLETED));
    assert_eq!(ram, Some(1), "the RAM counters are the logical core's");
    s.close().unwrap();
    fake_driver::uninstall(&p);
    let st = st.borrow();
    assert!(st.bugs.is_empty(), "{:?}", st.bugs);
    assert_eq!(st.marks, [(1, 1, 1)]);
    for call in ["CRWL_WRITER_ENTER", "CRWL_WRITER_DOWNGRADE", "CRWL_READER_EXIT"] {
        let ncs: Vec<&str> = st.calls.iter().filter_map(|c| c.strip_prefix(&format!("NEURON_IOCTL_{call} "))).collect();
        assert_eq!(ncs, ["1"], "{call}");
    }
    assert!(st.calls.iter().any(|c| c == "NEURON_IOCTL_CRWL_NC_RANGE_UNMARK 0x2"), "{:?}", st.calls);
    let rings: Vec<(u32, u32)> = harvest_rings().iter().map(|(nq, _)| (1, u32::from(*nq))).collect();
    assert_eq!(st.nq_inits, rings, "the NQs of the device's core 1");
    assert_eq!(st.kicks, [(1, 1)], "the kickoff semaphore 1 of core 1");
    for nq in INFER_STATUS_NQS {
        let reg = nrt_core::arch::nq_head_register(Arch::Sunda, 1, nq).unwrap();
        assert_eq!(st.heads.iter().rev().find(|(o, _)| *o == reg).map(|h| h.1), Some(32), "nq {nq}");
        let core0 = nrt_core::arch::nq_head_register(Arch::Sunda, 0, nq).unwrap();
        assert!(st.heads.iter().all(|(o, _)| *o != core0), "core 0's HEAD written: nq {nq}");
    }
    use nrt_core::counters::id;
    let ds = st.released_datastore.expect("the session released its datastore");
    assert_eq!((ds[1][id::INFER_COMPLETED], ds[1][id::INFERENCE_COUNT], ds[1][id::LATENCY_SAMPLES_WRITTEN]), (1, 1, 1));
    assert_eq!(ds[1][id::LATENCY_DEVICE], r.request.out_info().tpb_duration_us[0]);
    assert!(ds[0].iter().all(|v| *v == 0), "nothing at NC 0: {:?}", ds[0]);
    assert_eq!(st.range_pids, [0; 8]);
}

/// A run past the device's cores (cores 1-2 of a two-core sunda) is refused at
/// open, about the cores, naming them and the device's cores, before any mark.
#[test]
fn a_run_off_the_device_is_refused_before_any_mark() {
    let (p, st) = fake_driver::install("offdev");
    let e = Session::open(&p, SessionConfig { first_core: 1, ..cfg(Some(2)) }).unwrap_err();
    fake_driver::uninstall(&p);
    assert_eq!(e.subject, Subject::Cores);
    let m = e.to_string();
    assert!(m.contains("cores 1-2 asked, off the device: a sunda device has 2 NeuronCores (0-1)"), "{m}");
    let why = shape_of(&e);
    assert_eq!(why, Some(ShapeError::OffDevice { arch: Arch::Sunda, first: 1, cores: 2 }), "the typed reason is kept");
    assert!(st.borrow().marks.is_empty(), "no mark made");
    assert_eq!(validate_placement(Arch::Cayman, 2, 2), Ok(()));
    assert_eq!(validate_placement(Arch::Cayman, 6, 2), Ok(()));
    let m = validate_placement(Arch::Cayman, 7, 2).unwrap_err();
    assert_eq!(m, ShapeError::OffDevice { arch: Arch::Cayman, first: 7, cores: 2 });
    assert_eq!(m.to_string(), "cores 7-8 asked, off the device: a cayman device has 8 NeuronCores (0-7)");
    let m = validate_placement(Arch::Sunda, 2, 1).unwrap_err();
    assert!(m.to_string().starts_with("core 2 asked"), "{m}");
    assert_eq!(
        validate_placement(Arch::Sunda, 255, 2),
        Err(ShapeError::OffDevice { arch: Arch::Sunda, first: 255, cores: 2 }),
        "no overflow"
    );
    assert!(validate_placement(Arch::Sunda, 255, 2).unwrap_err().to_string().starts_with("cores 255-256 asked"));
}

/// With host-wide cores (`NEURON_RT_VISIBLE_CORES`'s reading), index `i` is
/// core `i % 2` of device `i / 2` on sunda: a node named `neuron1` takes
/// index 2 as its core 0 and 3 as its core 1; index 1 (device 0's) is refused
/// on it, naming the device the set means and this one; a run over two
/// devices is refused on either; a node whose name says no index is refused.
/// Each refusal is about the cores and comes before any mark.
#[test]
fn host_wide_cores_are_placed_on_the_device_of_their_index() {
    let dir = std::env::temp_dir().join(format!("nrt-fake-host-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let host = |first: u8, n: u8| SessionConfig { first_core: first, host_wide: true, ..cfg(Some(n)) };
    for (first, n, local) in [(2, 1, 0), (3, 1, 1), (2, 2, 0)] {
        let (p, st) = fake_driver::install_at(dir.join("neuron1"));
        let s = Session::open(&p, host(first, n)).unwrap();
        assert_eq!((s.first_core(), s.cores()), (local, n), "index {first}");
        s.close().unwrap();
        fake_driver::uninstall(&p);
        assert_eq!(st.borrow().marks, [(u32::from(n), u32::from(local), u32::from(local + n - 1))], "index {first}");
    }
    let refused = |name: &str, first: u8, n: u8| {
        let (p, st) = fake_driver::install_at(dir.join(name));
        let e = Session::open(&p, host(first, n)).unwrap_err();
        fake_driver::uninstall(&p);
        assert_eq!(e.subject, Subject::Cores, "{e}");
        assert!(st.borrow().marks.is_empty(), "no mark made: {e}");
        e.to_string()
    };
    let m = refused("neuron1", 1, 1);
    assert!(m.contains("core 1 (device 0's core 1) asked") && m.contains("/dev/neuron0, and this is device 1"), "{m}");
    let m = refused("neuron0", 2, 1);
    assert!(m.contains("core 2 (device 1's core 0) asked") && m.contains("/dev/neuron1, and this is device 0"), "{m}");
    for name in ["neuron0", "neuron1"] {
        let m = refused(name, 1, 2);
        assert!(m.contains("cores 1-2 are on devices 0 to 1") && m.contains("a session is one device"), "{m}");
    }
    let m = refused("not-a-node", 0, 1);
    assert!(m.contains("that is /dev/neuron0, and this node's device index is not known"), "{m}");
    // Without the host-wide reading, the index is the device's own.
    let (p, _) = fake_driver::install_at(dir.join("neuron1"));
    let s = Session::open(&p, SessionConfig { first_core: 1, ..cfg(Some(1)) }).unwrap();
    assert_eq!(s.first_core(), 1);
    s.close().unwrap();
    fake_driver::uninstall(&p);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(super::bringup::device_index(std::path::Path::new("/dev/neuron12")), Some(12));
    assert_eq!(super::bringup::device_index(std::path::Path::new("/dev/neuron")), None);
    assert_eq!(super::bringup::device_index(std::path::Path::new("/dev/neuron1x")), None);
}

/// A session from the device's core 1 reads the simulator's status lines of
/// the device's core 1 for its logical core 0: a barrier failure, then a
/// network-proxy failure, raised on core 1 only (core 0's lines healthy),
/// end its harvest with that status, reported on its core 0.
/// One inference of a session on the device's core 1, with the simulator's
/// status line `line` of device core `on` set to `code`.
fn core_1_session_with_line(line: Line, on: usize, code: u32) -> Inference {
    let (p, st) = fake_driver::install(&format!("lines{on}-{}", line as usize));
    let mut h = fake_driver::sim_hints(2);
    h.lines[on][line as usize] = code;
    st.borrow_mut().hints = Some(h);
    let mut s = Session::open(&p, SessionConfig { first_core: 1, ..cfg(Some(1)) }).unwrap();
    let r = s.run_inference().unwrap();
    drop(s);
    fake_driver::uninstall(&p);
    r
}

#[test]
fn a_session_from_core_1_reads_core_1s_status_lines() {
    use nrt_core::event::Event;
    use nrt_core::exec::ExecEvent;
    for (line, name, code) in [
        (Line::BarrierFail, "barrier", NrtStatus::ExecHwErrCollectives.code()),
        (Line::NetproxyFail, "network proxy", NrtStatus::NetworkProxyFailure.code()),
    ] {
        let r = core_1_session_with_line(line, 1, code);
        assert_ne!(r.status, NrtStatus::Success, "{name}: {:?}", r.events);
        let failed = r.events.iter().any(|e| match (line, e) {
            (Line::BarrierFail, Event::Exec(ExecEvent::BarrierProxyFailed { core, .. })) => *core == 0,
            (Line::NetproxyFail, Event::Exec(ExecEvent::NetworkProxyFailed { core, .. })) => *core == 0,
            _ => false,
        });
        assert!(failed, "{name}: {:?}", r.events);
        // The same lines on core 0 only: the session on core 1 does not see them.
        let r = core_1_session_with_line(line, 0, code);
        assert_eq!(r.status, NrtStatus::Success, "{name} on core 0 only: {:?}", r.events);
    }
}

/// A failed staging step keeps its message ("DMA staging on <dev> failed:
/// <step>: <core's error>"), and core's typed error is its cause: as
/// `LinuxError::dma`, as the `source()`, and in the kind core sees.
#[test]
fn a_staging_failure_keeps_its_message_and_cores_typed_error() {
    let dev = NeuronDevice::open("/dev/null").unwrap();
    let io_err = DmaError::Platform(hal::ErrorKind::Io);
    let e = staging_err(&dev, SubmitError::at(SubmitStep::Stage(Direction::Tx), io_err));
    assert_eq!(e.to_string(), format!("DMA staging on /dev/null failed: stage tx: {io_err}"));
    assert_eq!(e.dma(), Some(&SubmitError::at(SubmitStep::Stage(Direction::Tx), io_err)));
    let source = std::error::Error::source(&e).expect("a source");
    assert_eq!(source.to_string(), SubmitError::at(SubmitStep::Stage(Direction::Tx), io_err).to_string());
    assert_eq!(source.source().map(|s| s.to_string()), Some(io_err.to_string()), "core's error under the step");
    assert_eq!(hal::Error::kind(&e), hal::ErrorKind::Io, "the platform's kind, not OutOfRange");
    let t = staging_err(&dev, SubmitError::at(SubmitStep::Platform("queue"), DmaError::BadRingDepth(0)));
    assert_eq!(t.dma().map(|s| s.error), Some(DmaError::BadRingDepth(0)));
    assert_eq!(hal::Error::kind(&t), hal::ErrorKind::Other);
    assert!(t.to_string().ends_with(&format!("queue: {}", DmaError::BadRingDepth(0))), "{t}");
    let w = staging_err(&dev, SubmitError::at(SubmitStep::Wait, DmaError::Timeout));
    assert_eq!(w.dma().map(|s| (s.step, s.error)), Some((SubmitStep::Wait, DmaError::Timeout)));
    // Any other error has none.
    assert_eq!(refused(&dev, "staging", "no buffer".into()).dma(), None);
}

/// What [`crate::datastore::Datastore::own`] and `write_nc` put in the
/// driver's memory, read back word by word: the header's signature at
/// `nds::NDS_SIGNATURE_OFFSET` (0) and its version at `nds::NDS_VERSION_OFFSET`
/// (4), `nds_header_t`'s layout; each counter below `id::WRITTEN_END` of each
/// of the 16 NCs at `nds::nc_counter_offset` (the header's macros, checked for
/// every (NC, id) by nrt-abi's `every_counter_offset_is_the_header_macros`);
/// and no other word of the datastore written.
#[test]
fn the_datastore_header_and_every_written_counter_land_on_the_driver_headers_words() {
    use nrt_abi::nds;
    use nrt_core::counters::{id, NcCounterBlock};
    let (p, st) = fake_driver::install("dswords");
    let dev = Arc::new(NeuronDevice::open(&p).unwrap());
    let ds = crate::datastore::Datastore::own(dev).unwrap();
    let value = |nc: usize, c: usize| ((nc as u64 + 1) << 32) | (c as u64 + 1);
    for nc in 0..nds::NDS_NC_MAX {
        let block = NcCounterBlock::from_values(std::array::from_fn(|c| value(nc, c)));
        ds.write_nc(nc, &block).unwrap();
    }
    assert_eq!(ds.header().unwrap(), (*b"nds\0", 1));
    let (off, _) = st.borrow().datastore.expect("acquired");
    let mut want = std::collections::HashMap::new();
    for nc in 0..nds::NDS_NC_MAX {
        for c in 0..id::WRITTEN_END {
            want.insert(nds::nc_counter_offset(nc, c).unwrap(), value(nc, c));
        }
    }
    {
        let s = st.borrow();
        let m = s.map.as_ref().unwrap();
        let word32 = |o: usize| m.load32(off + o as u64, Ordering::Acquire).unwrap();
        assert_eq!(word32(0).to_le_bytes(), [b'n', b'd', b's', 0], "the signature at offset 0");
        assert_eq!(word32(4), 1, "the version at offset 4");
        for o in (nds::NDS_HEADER_SIZE..io_size()).step_by(8) {
            let got = m.load64(off + o as u64, Ordering::Acquire).unwrap();
            assert_eq!(got, want.get(&o).copied().unwrap_or(0), "the word at offset {o}");
        }
    }
    assert_eq!(want.len(), nds::NDS_NC_MAX * id::WRITTEN_END, "every written word is its own");
    drop(ds);
    fake_driver::uninstall(&p);
}

fn io_size() -> usize {
    crate::ioctl::NEURON_DATASTORE_SIZE as usize
}

/// A lane for a poller or an XU unit: core 0's five INFER_STATUS rings in
/// memory (a temp file), each holding its engine's START and END already, over
/// registers that keep what is written; counting into `target`.
fn played_lane(
    name: &str,
    target: crate::datastore::CounterTarget,
) -> (crate::rings::MappedDevice<NoDoorbell>, Notifications) {
    use crate::rings::{MappedDevice, MappedRings, RingWindow};
    use nrt_core::nq::ring::NqProducer;
    use nrt_core::nq::{RawEntry, Subtype};
    const RING: u32 = 1024;
    let p = std::env::temp_dir().join(format!("nrt-linux-lane-{}-{name}", std::process::id()));
    let f = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&p).unwrap();
    f.set_len(ENGINES_PER_CORE as u64 * u64::from(RING)).unwrap();
    let map = Arc::new(Mapping::map(&f, 0, ENGINES_PER_CORE * RING as usize).unwrap());
    std::fs::remove_file(&p).unwrap();
    let mut rings = MappedRings::new(Arch::Sunda, NoDoorbell::default());
    let mut nq = Notifications::new();
    for (eng, &id) in INFER_STATUS_NQS.iter().enumerate() {
        let base = eng as u64 * u64::from(RING);
        let mut prod = NqProducer::new(RING).unwrap();
        for (k, sub) in [Subtype::START, Subtype::END].into_iter().enumerate() {
            let mut e = RawEntry::new(sub, id, 0, 0, 1_000 + 100 * k as u64 + eng as u64).to_array();
            let at = base + u64::from(prod.push(&mut e).unwrap());
            map.store64(at + 8, u64::from_le_bytes(e[8..].try_into().unwrap()), Ordering::Relaxed).unwrap();
            map.store64(at, u64::from_le_bytes(e[..8].try_into().unwrap()), Ordering::Release).unwrap();
        }
        rings.bind(0, id, RingWindow { map: Arc::clone(&map), offset: base, size: RING }, id).unwrap();
        nq.bind(0, id, RING).unwrap();
    }
    (MappedDevice::new(rings).counting_into(target), nq)
}

/// A request harvested by a poller thread, and one by an XU unit, over
/// devices handed the session's counter target, count in the session's
/// datastore at the session's device core (NC 1 here), added to the
/// session's own inferences before and after them: none overwrites another's
/// counts, and every request leaves its latency sample.
#[test]
fn a_pollers_and_an_xu_units_requests_count_in_the_sessions_datastore() {
    use crate::poller::{Poller, PollerConfig, VecLanes};
    use nrt_core::counters::id;
    let (p, st) = fake_driver::install("lanecount");
    let mut s = Session::open(&p, SessionConfig { first_core: 1, ..cfg(Some(1)) }).unwrap();
    assert_eq!(s.run_inference().unwrap().status, NrtStatus::Success);
    let target = s.counter_target().expect("the session has a datastore");
    assert_eq!((target.first_nc(), target.cores()), (1, 1));

    let poller = Poller::spawn(VecLanes(vec![played_lane("poller", target.clone())]), PollerConfig::default()).unwrap();
    let polled = poller.submit(0, ExecConfig::new(Arch::Sunda, 1, 5)).unwrap().wait();
    let (lanes, _) = poller.shutdown();
    assert_eq!(polled, Step::Done(NrtStatus::Success));
    let lanes = lanes.expect("the poller's lanes back");
    assert!(lanes.0[0].0.counter_error.is_none(), "{:?}", lanes.0[0].0.counter_error);

    let pool = crate::xu::XuPool::start(vec![played_lane("xu", target.clone())], DelayKind::Adaptive).unwrap();
    let unit = pool.submit(0, ExecConfig::new(Arch::Sunda, 1, 5)).unwrap().wait();
    pool.shutdown();
    assert_eq!(unit, NrtStatus::Success);

    assert_eq!(s.run_inference().unwrap().status, NrtStatus::Success);
    let own = s.counters().and_then(|c| c.core(0)).map(|b| b.get(id::INFER_COMPLETED));
    assert_eq!(own, Some(2), "the session's own view counts its own two");
    let shared = target.counters().block(1).expect("NC 1");
    assert_eq!((shared.get(id::INFER_COMPLETED), shared.get(id::LATENCY_SAMPLES_WRITTEN)), (4, 4));
    drop((target, lanes));
    s.close().unwrap();
    fake_driver::uninstall(&p);
    let st = st.borrow();
    let ds = st.released_datastore.expect("the datastore released with the last holder");
    assert_eq!(
        (ds[1][id::INFER_COMPLETED], ds[1][id::INFERENCE_COUNT], ds[1][id::LATENCY_SAMPLES_WRITTEN]),
        (4, 4, 4),
        "the session's two, the poller's and the XU unit's"
    );
    assert!(ds[0].iter().all(|v| *v == 0), "nothing at NC 0: {:?}", ds[0]);
    assert_eq!(st.calls.iter().filter(|c| *c == "NEURON_IOCTL_ACQUIRE_NEURON_DS").count(), 1, "acquired once");
    assert!(st.bugs.is_empty(), "{:?}", st.bugs);
}

/// Two sessions of one process on one device, the second opened through a
/// symlink to the node, count in one [`crate::datastore::ProcessCounters`]:
/// acquired once, each session's inference at its own NC, released when the
/// second closes and not before.
#[test]
fn two_sessions_on_one_device_however_spelled_share_the_process_counters() {
    use nrt_core::counters::id;
    let (p, st) = fake_driver::install("twosessions");
    let link = p.with_extension("link");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&p, &link).unwrap();
    let mut a = Session::open(&p, SessionConfig { first_core: 0, ..cfg(Some(1)) }).unwrap();
    let mut b = Session::open(&link, SessionConfig { first_core: 1, ..cfg(Some(1)) }).unwrap();
    assert_eq!(b.path(), link.as_path());
    let (ta, tb) = (a.counter_target().expect("a's datastore"), b.counter_target().expect("b's datastore"));
    assert!(std::ptr::eq(ta.counters(), tb.counters()), "one ProcessCounters for the device");
    assert_eq!(a.run_inference().unwrap().status, NrtStatus::Success);
    assert_eq!(b.run_inference().unwrap().status, NrtStatus::Success);
    let done = |nc: usize| ta.counters().block(nc).map(|b| b.get(id::INFER_COMPLETED));
    assert_eq!((done(0), done(1)), (Some(1), Some(1)), "each session's inference at its own NC");
    drop((ta, tb));
    a.close().unwrap();
    assert!(st.borrow().datastore.is_some(), "b still holds the datastore");
    assert!(st.borrow().released_datastore.is_none(), "not released while b holds it");
    b.close().unwrap();
    fake_driver::uninstall(&p);
    let _ = std::fs::remove_file(&link);
    let st = st.borrow();
    let ds = st.released_datastore.expect("released with the last session");
    assert_eq!((ds[0][id::INFER_COMPLETED], ds[1][id::INFER_COMPLETED]), (1, 1), "both sessions' counts");
    assert_eq!(st.calls.iter().filter(|c| *c == "NEURON_IOCTL_ACQUIRE_NEURON_DS").count(), 1, "acquired once");
    assert!(st.bugs.is_empty(), "{:?}", st.bugs);
}

/// A runtime's copy is cut into submissions of at most eight 64 KiB
/// descriptors, the tail in one descriptor of its own, covering every byte
/// once and in order.
#[test]
fn a_copy_is_cut_into_whole_descriptors_then_its_tail() {
    let cut: Vec<_> = staging::pieces(0x1000, 0x9000_0000, 17 * 65536 + 100)
        .map(|t| (t.src, t.dst, t.elem_count, t.granule, t.elem_bytes))
        .collect();
    assert_eq!(
        cut,
        [
            (0x1000, 0x9000_0000, 8 * 65536, 65536, 1),
            (0x1000 + 8 * 65536, 0x9000_0000 + 8 * 65536, 8 * 65536, 65536, 1),
            (0x1000 + 16 * 65536, 0x9000_0000 + 16 * 65536, 65536, 65536, 1),
            (0x1000 + 17 * 65536, 0x9000_0000 + 17 * 65536, 100, 100, 1),
        ]
    );
    assert_eq!(staging::pieces(0, 0, 0).count(), 0);
    assert_eq!(staging::pieces(0, 0, 65536).map(|t| t.elem_count).collect::<Vec<_>>(), [65536]);
    assert_eq!(staging::pieces(0, 0, 3).map(|t| (t.elem_count, t.granule)).collect::<Vec<_>>(), [(3, 3)]);
}
