//! The model's own tests: one per rule of `docs/driver-conformance.md`, named
//! as the table cites them; the rule id is in each test's name or comment.

use std::sync::atomic::Ordering;

use nrt_abi::ioctl::{self as abi, nq_type, Ioctl};
use nrt_abi::sim::{self as simabi, Line};
use nrt_core::arch::Arch;
use nrt_core::dma::bd::LenCtrl;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use super::*;
use crate::shm::{ShmFile, ShmLayout};

/// The caller's memory: `bytes` at `base`, nothing else.
struct VecMem {
    base: u64,
    bytes: Vec<u8>,
}

impl VecMem {
    fn new() -> VecMem {
        VecMem { base: 0x10_0000, bytes: vec![0; 0x1000] }
    }
    fn range(&self, addr: u64, len: usize) -> Option<core::ops::Range<usize>> {
        let o = usize::try_from(addr.checked_sub(self.base)?).ok()?;
        let end = o.checked_add(len)?;
        (end <= self.bytes.len()).then_some(o..end)
    }
    fn u64_at(&self, addr: u64) -> u64 {
        let r = self.range(addr, 8).unwrap();
        u64::from_le_bytes(self.bytes[r].try_into().unwrap())
    }
    fn put(&mut self, addr: u64, b: &[u8]) {
        let r = self.range(addr, b.len()).unwrap();
        self.bytes[r].copy_from_slice(b);
    }
}

impl TargetMem for VecMem {
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), MemFault> {
        let r = self.range(addr, buf.len()).ok_or(MemFault)?;
        buf.copy_from_slice(&self.bytes[r]);
        Ok(())
    }
    fn write(&mut self, addr: u64, buf: &[u8]) -> Result<(), MemFault> {
        let r = self.range(addr, buf.len()).ok_or(MemFault)?;
        self.bytes[r].copy_from_slice(buf);
        Ok(())
    }
}

const PID: u32 = 4242;

fn model(arch: Arch, cores: u8) -> Model {
    model_with_pool(arch, cores, 16 << 20)
}

fn model_with_pool(arch: Arch, cores: u8, pool: u64) -> Model {
    let l = ShmLayout::new(arch, cores, 1024).unwrap();
    let p = std::env::temp_dir().join(format!("nrt-drv-unit-{}", std::process::id()));
    let f = ShmFile::create_with_extra(&p, l, 0, "", pool).unwrap();
    let mut m = Model::new(Arc::new(f));
    m.open(PID);
    m
}

fn call<T: FromBytes + IntoBytes + Immutable + KnownLayout + Copy>(
    m: &mut Model,
    req: Ioctl<T>,
    arg: &mut T,
    mem: &mut VecMem,
) -> Answer {
    call_as(m, PID, req, arg, mem)
}

fn call_as<T: FromBytes + IntoBytes + Immutable + KnownLayout + Copy>(
    m: &mut Model,
    pid: u32,
    req: Ioctl<T>,
    arg: &mut T,
    mem: &mut VecMem,
) -> Answer {
    let mut b = arg.as_bytes().to_vec();
    let r = m.handle(pid, req.code(), &mut b, mem);
    *arg = T::read_from_bytes(&b).unwrap();
    r
}

fn errno(e: Errno) -> Answer {
    Err(Refusal::Errno(e))
}

fn assert_bug(r: Answer, needle: &str, file: &str) {
    match r {
        Err(Refusal::KernelBug(v)) => {
            let s = v.to_string();
            assert!(s.starts_with("kernel BUG: ") && s.contains(needle) && s.contains(&format!("({file}")), "{s}");
        }
        other => panic!("expected a kernel BUG ({needle}), got {other:?}"),
    }
}

fn assert_logged(m: &Model, needle: &str) {
    assert!(m.log.iter().any(|l| l.text.contains(needle)), "{needle} not in {:#?}", m.log);
}

/// Two host chunks, and queue 0 of engine 0 initialised with `n` descriptors each way.
fn with_queue(m: &mut Model, mem: &mut VecMem, n: u32) -> (u64, u64) {
    with_queue_at(m, mem, 0, 0, n)
}

fn with_queue_at(m: &mut Model, mem: &mut VecMem, eng_id: u32, qid: u32, n: u32) -> (u64, u64) {
    let mut hs = [0u64; 2];
    for (i, h) in hs.iter_mut().enumerate() {
        let ptr = mem.base + 8 * i as u64;
        let mut a = abi::MemAllocV2Mt { size: 4096, host_memory: 1, mem_handle: ptr, ..Default::default() };
        assert_eq!(call(m, abi::MEM_ALLOC_V2MT, &mut a, mem), Ok(0));
        *h = mem.u64_at(ptr);
    }
    let mut q = abi::DmaQueueInit {
        eng_id,
        qid,
        tx_desc_count: n,
        rx_desc_count: n,
        tx_handle: hs[0],
        rx_handle: hs[1],
        ..Default::default()
    };
    assert_eq!(call(m, abi::DMA_QUEUE_INIT, &mut q, mem), Ok(0));
    (hs[0], hs[1])
}

#[test]
fn copy_start_with_rx_zero_is_a_kernel_bug() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    with_queue(&mut m, &mut mem, 64);
    let mut c = abi::DmaQueueCopyStart { eng_id: 0, qid: 0, tx_desc_count: 1, rx_desc_count: 0 };
    assert_bug(call(&mut m, abi::DMA_QUEUE_COPY_START, &mut c, &mut mem), "num == 0", "udma/udma_main.c");
    assert_eq!(m.kernel_bugs().count(), 1);
    let mut c = abi::DmaQueueCopyStart { eng_id: 0, qid: 0, tx_desc_count: 1, rx_desc_count: 1 };
    assert_eq!(call(&mut m, abi::DMA_QUEUE_COPY_START, &mut c, &mut mem), Ok(0));
}

#[test]
fn copy_start_before_queue_init_fails_as_the_driver_does() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    let mut c = abi::DmaQueueCopyStart { eng_id: 0, qid: 0, tx_desc_count: 1, rx_desc_count: 1 };
    assert_eq!(call(&mut m, abi::DMA_QUEUE_COPY_START, &mut c, &mut mem), errno(Errno::EPERM));
    assert_logged(&m, "never initialised (DMA_QUEUE_INIT)");
    // With nothing to count against, the zero RX count reaches the BUG_ON.
    let mut c = abi::DmaQueueCopyStart { eng_id: 0, qid: 0, tx_desc_count: 0, rx_desc_count: 0 };
    assert_bug(call(&mut m, abi::DMA_QUEUE_COPY_START, &mut c, &mut mem), "num == 0", "udma/udma_main.c");
}

#[test]
fn copy_start_counts_and_ids_are_checked_against_the_queue() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    with_queue(&mut m, &mut mem, 64);
    for (tx, rx) in [(65, 1), (1, 65)] {
        let mut c = abi::DmaQueueCopyStart { eng_id: 0, qid: 0, tx_desc_count: tx, rx_desc_count: rx };
        assert_eq!(call(&mut m, abi::DMA_QUEUE_COPY_START, &mut c, &mut mem), errno(Errno::EPERM));
    }
    let mut c = abi::DmaQueueCopyStart { eng_id: 132, qid: 0, tx_desc_count: 1, rx_desc_count: 1 };
    assert_eq!(call(&mut m, abi::DMA_QUEUE_COPY_START, &mut c, &mut mem), errno(Errno::EINVAL));
    let mut c = abi::DmaQueueCopyStart { eng_id: 0, qid: 16, tx_desc_count: 1, rx_desc_count: 1 };
    assert_eq!(call(&mut m, abi::DMA_QUEUE_COPY_START, &mut c, &mut mem), errno(Errno::EPERM));
}

#[test]
fn copy_start_on_a_queue_without_an_rx_ring_is_a_kernel_bug() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    let mut q = abi::DmaQueueInit { tx_desc_count: 64, rx_desc_count: 64, ..Default::default() };
    assert_eq!(call(&mut m, abi::DMA_QUEUE_INIT, &mut q, &mut mem), Ok(0));
    let mut c = abi::DmaQueueCopyStart { eng_id: 0, qid: 0, tx_desc_count: 1, rx_desc_count: 1 };
    assert_bug(call(&mut m, abi::DMA_QUEUE_COPY_START, &mut c, &mut mem), "NULL", "neuron_ring.c");
}

#[test]
fn bds_with_the_wrong_ring_id_are_a_warning() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    let (tx, _) = with_queue(&mut m, &mut mem, 64);
    let off = m.chunk(tx).unwrap().offset;
    // BD 0 with ring id 1, the first lap's; BD 1 with ring id 0.
    m.file().map().u32_at(off).unwrap().store(1 << 24, Ordering::Release);
    m.file().map().u32_at(off + 16).unwrap().store(0, Ordering::Release);
    let mut c = abi::DmaQueueCopyStart { eng_id: 0, qid: 0, tx_desc_count: 1, rx_desc_count: 1 };
    assert_eq!(call(&mut m, abi::DMA_QUEUE_COPY_START, &mut c, &mut mem), Ok(0));
    assert!(!m.log.iter().any(|l| l.text.contains("TX: BD")), "{:?}", m.log);
    assert_eq!(call(&mut m, abi::DMA_QUEUE_COPY_START, &mut c, &mut mem), Ok(0));
    assert_logged(&m, "TX: BD 1 has ring id 0, the lap's is 1");
    assert_eq!(m.kernel_bugs().count(), 0);
}

/// A host chunk of `size` bytes: its handle and `pa`.
fn alloc(m: &mut Model, mem: &mut VecMem, size: u64) -> (u64, u64) {
    let ptr = mem.base + 0x100;
    let mut a = abi::MemAllocV2Mt { size, host_memory: 1, mem_handle: ptr, ..Default::default() };
    assert_eq!(call(m, abi::MEM_ALLOC_V2MT, &mut a, mem), Ok(0));
    let h = mem.u64_at(ptr);
    let mut i = abi::MemGetExtendedInfo { version: 1, mem_handle: h, ..Default::default() };
    assert_eq!(call(m, abi::MEM_GET_EXTENDED_INFO, &mut i, mem), Ok(0));
    (h, i.pa)
}

/// Write BD `i` of the ring in chunk `ring`: `len` bytes at `addr`, ring id `id`.
fn put_bd(m: &Model, ring: u64, i: u64, len: u32, id: u8, addr: u64) {
    let off = m.chunk(ring).unwrap().offset + i * DESC_BYTES;
    let ctrl = LenCtrl::new().with_len_bytes(len).unwrap().with_ring_id(id);
    m.file().map().u32_at(off).unwrap().store(ctrl.into_bits(), Ordering::Release);
    m.file().map().u64_at(off + 8).unwrap().store(addr, Ordering::Release);
}

fn file_bytes(m: &Model, pa: u64, len: usize) -> Vec<u8> {
    use std::os::unix::fs::FileExt;
    let mut b = vec![0u8; len];
    m.file().file().read_exact_at(&mut b, pa - SIM_HOST_PA_BASE).unwrap();
    b
}

fn fill(m: &Model, pa: u64, b: &[u8]) {
    use std::os::unix::fs::FileExt;
    m.file().file().write_all_at(b, pa - SIM_HOST_PA_BASE).unwrap();
}

#[test]
fn a_copy_start_moves_exactly_the_bytes_the_bds_say() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    let (tx, rx) = with_queue(&mut m, &mut mem, 64);
    let (_, buf) = alloc(&mut m, &mut mem, 3 * 4096);
    let src: Vec<u8> = (0..4096u32).map(|i| (i * 131 % 251) as u8).collect();
    fill(&m, buf, &src);
    fill(&m, buf + 4096, &[0xEE; 8192]);
    // Two BDs each way: 1000 bytes from +0 to +4096, then 24 bytes from +1000 to +6000.
    put_bd(&m, tx, 0, 1000, 1, buf);
    put_bd(&m, tx, 1, 24, 1, buf + 1000);
    put_bd(&m, rx, 0, 1000, 1, buf + 4096);
    put_bd(&m, rx, 1, 24, 1, buf + 6000);
    let mut c = abi::DmaQueueCopyStart { eng_id: 0, qid: 0, tx_desc_count: 2, rx_desc_count: 2 };
    assert_eq!(call(&mut m, abi::DMA_QUEUE_COPY_START, &mut c, &mut mem), Ok(0));
    assert_eq!(m.violations, vec![], "{:?}", m.log);
    assert_eq!(m.dma_bytes, 1024);
    let got = file_bytes(&m, buf + 4096, 8192);
    let mut want = vec![0xEE; 8192];
    want[..1000].copy_from_slice(&src[..1000]);
    want[1904..1928].copy_from_slice(&src[1000..1024]);
    assert_eq!(got, want, "exactly the BDs' bytes, nothing around them");
    // The head advanced: DMA_QUEUE_GET_STATE says so.
    let (tp, rp) = (mem.base + 0x200, mem.base + 0x300);
    let mut st = abi::DmaQueueGetState { eng_id: 0, qid: 0, tx: tp, rx: rp };
    assert_eq!(call(&mut m, abi::DMA_QUEUE_GET_STATE, &mut st, &mut mem), Ok(0));
    for p in [tp, rp] {
        let s = abi::DmaQueueState::read_from_prefix(&mem.bytes[(p - mem.base) as usize..]).unwrap().0;
        assert_eq!((s.head_pointer, s.length), (2, 64));
    }
    // Length 0 is 65536 bytes.
    let ((_, big_src), (_, big_dst)) = (alloc(&mut m, &mut mem, 65536), alloc(&mut m, &mut mem, 65536));
    let pattern: Vec<u8> = (0..65536u32).map(|i| (i % 253) as u8).collect();
    fill(&m, big_src, &pattern);
    put_bd(&m, tx, 2, 65536, 1, big_src);
    put_bd(&m, rx, 2, 65536, 1, big_dst);
    assert_eq!(m.file().map().u32_at(m.chunk(tx).unwrap().offset + 32).unwrap().load(Ordering::Acquire) & 0xFFFF, 0);
    let mut c = abi::DmaQueueCopyStart { eng_id: 0, qid: 0, tx_desc_count: 1, rx_desc_count: 1 };
    assert_eq!(call(&mut m, abi::DMA_QUEUE_COPY_START, &mut c, &mut mem), Ok(0));
    assert_eq!(file_bytes(&m, big_dst, 65536), pattern);
    assert_eq!(m.dma_bytes, 1024 + 65536);
    // Unequal streams: TX 32 bytes against RX 16: the 16 that fit are copied, a warning.
    put_bd(&m, tx, 3, 32, 1, buf);
    put_bd(&m, rx, 3, 16, 1, buf + 8192);
    assert_eq!(call(&mut m, abi::DMA_QUEUE_COPY_START, &mut c, &mut mem), Ok(0));
    assert_logged(&m, "the TX descriptors carry 32 bytes, the RX descriptors 16: 16 copied");
    assert_eq!(file_bytes(&m, buf + 8192, 17), [&src[..16], &[0xEE][..]].concat());
    assert_eq!(m.dma_errors, 0);
}

/// G-DRV-COPY-FAULT: from the Nth copy start of data on, only each side's
/// last descriptor, the marker, moves; with `marker`, nothing; a copy start
/// of one descriptor a side is not counted.
#[test]
fn a_copy_fault_moves_only_the_markers_from_the_nth_copy_start_of_data() {
    for marker in [false, true] {
        let mut m = model(Arch::Sunda, 2).with_copy_fault(Some(super::CopyFault { from: 2, marker }));
        let mut mem = VecMem::new();
        let (tx, rx) = with_queue(&mut m, &mut mem, 64);
        let (_, buf) = alloc(&mut m, &mut mem, 3 * 4096);
        let src: Vec<u8> = (0..4096u32).map(|i| (i * 131 % 251) as u8).collect();
        fill(&m, buf, &src);
        let copy = |m: &mut Model, mem: &mut VecMem, first: u64, descs: u64| {
            fill(m, buf + 4096, &[0xEE; 8192]);
            for i in 0..descs {
                put_bd(m, tx, first + i, 16, 1, buf + 16 * i);
                put_bd(m, rx, first + i, 16, 1, buf + 4096 + 16 * i);
            }
            let n = descs as u32;
            let mut c = abi::DmaQueueCopyStart { eng_id: 0, qid: 0, tx_desc_count: n, rx_desc_count: n };
            assert_eq!(call(m, abi::DMA_QUEUE_COPY_START, &mut c, mem), Ok(0));
            file_bytes(m, buf + 4096, 48)
        };
        assert_eq!(copy(&mut m, &mut mem, 0, 3), src[..48], "the first copy start of data is made");
        assert_eq!(copy(&mut m, &mut mem, 3, 1), [&src[..16], &[0xEE; 32][..]].concat(), "one BD: not counted");
        let second = copy(&mut m, &mut mem, 4, 3);
        let third = copy(&mut m, &mut mem, 7, 3);
        let want = if marker { vec![0xEE; 48] } else { [&[0xEE; 32][..], &src[32..48]].concat() };
        assert_eq!((second, third), (want.clone(), want), "marker {marker}");
        assert_logged(&m, "copy start 3 of data (48 bytes)");
        assert_eq!(m.violations, vec![], "{:?}", m.log);
    }
}

/// DMAQ-13: the driver re-points a queue whoever owns it; the model records
/// a conformance violation naming both pids, the engine, the queue and the
/// core when the core is another process's mark, or the queue another live
/// process's. A queue whose owner is gone is not.
#[test]
fn dmaq13_a_queue_of_a_core_another_process_holds_is_a_conformance_violation() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    let other = PID + 1;
    m.open(other);
    let mut r = range(1, 1, 1);
    assert_eq!(call_as(&mut m, other, abi::CRWL_NC_RANGE_MARK, &mut r, &mut mem), Ok(0));
    // PID on engine 0, core 0, unmarked: nothing to say.
    with_queue_at(&mut m, &mut mem, 0, 0, 64);
    assert_eq!(m.conformance_violations().count(), 0, "{:?}", m.violations);
    // PID on engine 17 queue 3, core 1, marked by `other`: served, and a violation.
    with_queue_at(&mut m, &mut mem, 17, 3, 64);
    assert_eq!(m.queue(17, 3).map(|q| q.owner), Some(PID), "the driver re-points it");
    let v: Vec<String> = m.conformance_violations().map(|v| v.to_string()).collect();
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(
        v[0].starts_with(
            "conformance violation: NEURON_IOCTL_DMA_QUEUE_INIT: DMAQ-13: pid 4242 programs engine 17 \
                          queue 3 of core 1, which pid 4243 holds"
        ) && v[0].contains("(neuron_ring.c: ndmar_queue_init"),
        "{v:?}"
    );
    // `other` re-points PID's queue 0 of engine 0 while PID is attached.
    let (h, _) = with_queue_at(&mut m, &mut mem, 1, 1, 64);
    let mut q = abi::DmaQueueInit {
        eng_id: 0,
        qid: 0,
        tx_desc_count: 64,
        rx_desc_count: 64,
        tx_handle: h,
        rx_handle: h,
        ..Default::default()
    };
    assert_eq!(call_as(&mut m, other, abi::DMA_QUEUE_INIT, &mut q, &mut mem), Ok(0));
    assert_eq!(m.conformance_violations().count(), 2);
    assert_logged(&m, "DMAQ-13: pid 4243 re-points engine 0 queue 0 (core 0), which pid 4242 owns");
    // Once PID is gone, its queues are nobody's to protect.
    m.process_gone(PID);
    assert_eq!(call_as(&mut m, other, abi::DMA_QUEUE_INIT, &mut q, &mut mem), Ok(0));
    assert_eq!(m.conformance_violations().count(), 2, "{:?}", m.violations);
}

/// BAR-8: BAR accesses the driver performs unchecked: outside every window
/// of the device map, or a write into a semaphore resource, is a conformance
/// violation, and the access still happens; a named register is not; the
/// simulator's own registers only without the hint query.
#[test]
fn bar8_accesses_outside_the_map_and_semaphore_writes_are_conformance_violations() {
    for hints in [true, false] {
        let mut m = model(Arch::Cayman, 2);
        if !hints {
            m = m.without_hints();
        }
        let mut mem = VecMem::new();
        let head = nrt_core::arch::nq_head_register(Arch::Cayman, 1, 4).unwrap();
        let tpb = nrt_abi::devmap::semaphore_block(Arch::Cayman, 1) + nrt_abi::devmap::SEMA_SET;
        let top = nrt_abi::devmap::top_sp(Arch::Cayman, 0).unwrap().base + 0x1800;
        let trig = simabi::xt_local_reg(Arch::Cayman) + 0x15A0;
        let intc = simabi::intc_cause_offset(Arch::Cayman, 1, 1, 61).unwrap();
        let unnamed = 0x0F00_15A0;
        // The first word past core 1's INTC blocks is no longer the simulator's.
        let past_intc = simabi::intc_cause_offset(Arch::Cayman, 1, 0, 0).unwrap()
            + u64::from(simabi::INTC_BLOCKS) * simabi::INTC_BLOCK_STRIDE;
        for (off, write, want) in [
            (head, true, None),
            (head, false, None),
            (tpb, false, None),
            (tpb, true, Some("in TpbSemaphores(1)'s SEMAPHORE resource")),
            (top, true, Some("in TopSpSemaphores(0)'s SEMAPHORE resource")),
            (unnamed, false, Some("outside every window the device map names")),
            (unnamed, true, Some("outside every window the device map names")),
            (trig, true, (!hints).then_some("the simulator's top-SP host trigger")),
            (intc, false, (!hints).then_some("the simulator's INTC cause registers")),
            (past_intc, false, Some("outside every window the device map names")),
        ] {
            let before = m.conformance_violations().count();
            let pa = simabi::SIM_BAR0_PA + off;
            assert_eq!(bar(&mut m, &mut mem, !write, &[pa], &[7]), Ok(0), "0x{off:x}: performed");
            let got: Vec<String> = m.conformance_violations().skip(before).map(|v| v.to_string()).collect();
            match want {
                None => assert!(got.is_empty(), "hints {hints} 0x{off:x}: {got:?}"),
                Some(w) => {
                    assert_eq!(got.len(), 1, "hints {hints} 0x{off:x}: {got:?}");
                    assert!(got[0].contains("BAR-8: ") && got[0].contains(&format!("0x{off:x}, {w}")), "{got:?}");
                }
            }
            if write && off != unnamed {
                assert_eq!(m.bar_word(off), Some(7), "0x{off:x}: written");
            }
        }
    }
}

/// COPY-9: on cayman, engine 0, without host connectivity, faults a copy whose
/// source or destination is host memory: a DMA error naming the engine and
/// the rule, nothing copied. Engine 4, host-connected, copies the same BDs.
#[test]
fn copy9_an_engine_without_host_connectivity_faults_a_host_copy() {
    for (eng, reaches) in [(0u32, false), (4, true), (8, false), (12, true)] {
        let (mut m, mut mem) = (model(Arch::Cayman, 2), VecMem::new());
        let (tx, rx) = with_queue_at(&mut m, &mut mem, eng, 0, 64);
        let (_, buf) = alloc(&mut m, &mut mem, 2 * 4096);
        fill(&m, buf, &[0x5A; 4096]);
        put_bd(&m, tx, 0, 4096, 1, buf);
        put_bd(&m, rx, 0, 4096, 1, buf + 4096);
        let mut c = abi::DmaQueueCopyStart { eng_id: eng, qid: 0, tx_desc_count: 1, rx_desc_count: 1 };
        assert_eq!(call(&mut m, abi::DMA_QUEUE_COPY_START, &mut c, &mut mem), Ok(0));
        if reaches {
            assert_eq!((m.dma_errors, m.dma_bytes), (0, 4096), "engine {eng}: {:?}", m.log);
            assert_eq!(file_bytes(&m, buf + 4096, 4096), vec![0x5A; 4096]);
        } else {
            assert_eq!((m.dma_errors, m.dma_bytes), (1, 0), "engine {eng}");
            assert_logged(
                &m,
                &format!(
                    "DMA error: engine {eng} queue 0 TX: COPY-9: BD 0 source 0x{buf:x} is host memory, and engine \
                     {eng} has no host connectivity (v3/neuron_dhal_v3.c: ndma_get_engines_with_host_connectivity_v3"
                ),
            );
            assert_eq!(file_bytes(&m, buf + 4096, 4096), vec![0; 4096], "nothing copied");
        }
    }
    // Sunda: every core engine reaches host memory.
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    let (tx, rx) = with_queue_at(&mut m, &mut mem, 3, 0, 64);
    let (_, buf) = alloc(&mut m, &mut mem, 2 * 4096);
    put_bd(&m, tx, 0, 64, 1, buf);
    put_bd(&m, rx, 0, 64, 1, buf + 4096);
    let mut c = abi::DmaQueueCopyStart { eng_id: 3, qid: 0, tx_desc_count: 1, rx_desc_count: 1 };
    assert_eq!(call(&mut m, abi::DMA_QUEUE_COPY_START, &mut c, &mut mem), Ok(0));
    assert_eq!((m.dma_errors, m.dma_bytes), (0, 64));
}

#[test]
fn an_address_outside_the_chunks_is_a_dma_error_and_nothing_is_written() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    let (tx, rx) = with_queue(&mut m, &mut mem, 64);
    let (_, buf) = alloc(&mut m, &mut mem, 4096);
    fill(&m, buf, &[0x5A; 4096]);
    let before = file_bytes(&m, buf, 4096);
    let (cb, cl) = m.chunks.region();
    let end = SIM_HOST_PA_BASE | cb.saturating_add(cl);
    for (i, (src, dst, len)) in [
        (buf, buf + 2048, 4096u32),   // the destination runs past its chunk
        (buf, 0x1000, 16),            // a destination below every chunk
        (end, buf, 16),               // a source past the region
        (buf + 4000, buf + 100, 200), // the source runs past its chunk
        (u64::MAX - 4, buf, 16),      // the range wraps
        (buf, SIM_HOST_PA_BASE, 16),  // the file header is no chunk
    ]
    .into_iter()
    .enumerate()
    {
        let i = i as u64;
        put_bd(&m, tx, i, len, 1, src);
        put_bd(&m, rx, i, len, 1, dst);
        let mut c = abi::DmaQueueCopyStart { eng_id: 0, qid: 0, tx_desc_count: 1, rx_desc_count: 1 };
        assert_eq!(call(&mut m, abi::DMA_QUEUE_COPY_START, &mut c, &mut mem), Ok(0));
        assert_eq!(m.dma_errors as u64, i + 1, "{:?}", m.log);
    }
    assert_logged(&m, "DMA error: engine 0 queue 0 RX: BD 0 destination");
    assert_logged(&m, "is outside every chunk the driver handed out");
    assert_eq!(m.dma_bytes, 0);
    assert_eq!(file_bytes(&m, buf, 4096), before, "nothing written");
    assert_eq!(m.kernel_bugs().count(), 0);
    // A queue whose TX ring has no chunk: the descriptors cannot be fetched.
    let mut q = abi::DmaQueueInit { qid: 1, tx_desc_count: 64, rx_desc_count: 64, rx_handle: rx, ..Default::default() };
    assert_eq!(call(&mut m, abi::DMA_QUEUE_INIT, &mut q, &mut mem), Ok(0));
    let mut c = abi::DmaQueueCopyStart { eng_id: 0, qid: 1, tx_desc_count: 1, rx_desc_count: 1 };
    assert_eq!(call(&mut m, abi::DMA_QUEUE_COPY_START, &mut c, &mut mem), Ok(0));
    assert_logged(&m, "TX: BD 0: the queue has no ring chunk");
    // A stalled BD, of the wrong ring id, copies nothing either.
    put_bd(&m, tx, 6, 16, 0, buf);
    put_bd(&m, rx, 6, 16, 1, buf + 16);
    let mut c = abi::DmaQueueCopyStart { eng_id: 0, qid: 0, tx_desc_count: 1, rx_desc_count: 1 };
    assert_eq!(call(&mut m, abi::DMA_QUEUE_COPY_START, &mut c, &mut mem), Ok(0));
    // More descriptors than the model's bound: a DMA error, the positions still move.
    let n = COPY_DESCS_MAX + 16;
    let (big_tx, _) = alloc(&mut m, &mut mem, u64::from(n) * DESC_BYTES);
    let (big_rx, _) = alloc(&mut m, &mut mem, u64::from(n) * DESC_BYTES);
    let mut q = abi::DmaQueueInit {
        qid: 2,
        tx_desc_count: n,
        rx_desc_count: n,
        tx_handle: big_tx,
        rx_handle: big_rx,
        ..Default::default()
    };
    assert_eq!(call(&mut m, abi::DMA_QUEUE_INIT, &mut q, &mut mem), Ok(0));
    let mut c = abi::DmaQueueCopyStart { eng_id: 0, qid: 2, tx_desc_count: n - 1, rx_desc_count: n - 1 };
    assert_eq!(call(&mut m, abi::DMA_QUEUE_COPY_START, &mut c, &mut mem), Ok(0));
    assert_logged(&m, "descriptors in one copy start, past the model's bound");
    assert_eq!(m.queue(0, 2).map(|q| (q.tx.next, q.rx.next)), Some((n - 1, n - 1)));
    assert_logged(&m, "TX: BD 6 has ring id 0, the lap's is 1: the device stalls on it (nothing copied)");
    assert_eq!(file_bytes(&m, buf, 4096), before);
}

/// Hostile descriptors: random lengths, ring ids and addresses around the
/// chunks, random counts. Nothing panics, and nothing outside the chunks
/// handed out is written.
#[test]
fn random_descriptors_never_panic_or_write_outside_the_chunks() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    let (tx, rx) = with_queue(&mut m, &mut mem, 64);
    let (_, buf) = alloc(&mut m, &mut mem, 2 * 4096);
    let (base, _) = m.file().extra_region();
    let probe_at = |m: &Model| file_bytes(m, SIM_HOST_PA_BASE | (base - 4096), 4096);
    let header = probe_at(&m);
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..500 {
        let counts = [(next() % 12) as u32, (next() % 12) as u32];
        let q = *m.queue(0, 0).unwrap();
        for (ring, side, count) in [(tx, q.tx, counts[0]), (rx, q.rx, counts[1])] {
            let (mut i, mut lap) = (side.next, side.ring_id);
            for _ in 0..count {
                let len = if next() % 2 == 0 { (next() % 0x100) as u32 + 1 } else { (next() % 0x1_0000) as u32 + 1 };
                let addr = match next() % 8 {
                    0 => SIM_HOST_PA_BASE | (base - 4096 + next() % 0x2000),
                    1 => next(),
                    2 => buf.wrapping_sub(next() % 0x100),
                    _ => buf + next() % 0x2000,
                };
                let id = if next() % 16 == 0 { lap as u8 ^ 1 } else { lap as u8 };
                put_bd(&m, ring, u64::from(i), len, id, addr);
                i += 1;
                if i == 64 {
                    (i, lap) = (0, (lap + 1) % 4);
                }
            }
        }
        let mut c = abi::DmaQueueCopyStart { eng_id: 0, qid: 0, tx_desc_count: counts[0], rx_desc_count: counts[1] };
        let _ = call(&mut m, abi::DMA_QUEUE_COPY_START, &mut c, &mut mem);
    }
    assert!(m.dma_bytes > 0 && m.dma_errors > 0, "{} bytes, {} DMA errors", m.dma_bytes, m.dma_errors);
    assert_eq!(probe_at(&m), header, "the page before the chunk region was written");
    assert_eq!(m.kernel_bugs().filter(|v| !v.to_string().contains("num == 0")).count(), 0);
}

/// Messages name the errno, what a user reads first, and its number.
#[test]
fn errnos_are_named_in_messages() {
    let all = [
        (Errno::EPERM, "EPERM"),
        (Errno::ENOENT, "ENOENT"),
        (Errno::EFAULT, "EFAULT"),
        (Errno::EINVAL, "EINVAL"),
        (Errno::ENOMEM, "ENOMEM"),
        (Errno::EACCES, "EACCES"),
        (Errno::E2BIG, "E2BIG"),
        (Errno::ENOSYS, "ENOSYS"),
        (Errno::ENODEV, "ENODEV"),
        (Errno::EIO, "EIO"),
        (Errno(libc::ENOTTY), "ENOTTY"),
        (Errno::EBUSY, "EBUSY"),
        (Errno::EALREADY, "EALREADY"),
    ];
    for (e, name) in all {
        assert_eq!(e.name(), name);
        assert_eq!(e.to_string(), format!("{name} ({})", e.0));
    }
    assert_eq!(Errno(libc::EXDEV).name(), "errno");
    assert_eq!(Errno::EINVAL.to_string(), "EINVAL (22)");
}

/// The ring-size bounds of `udma_q_init_validate` at their edges, and the
/// DRAM channel bound per arch: 2 on v2, 4 on v3.
#[test]
fn ring_size_and_dram_channel_edges() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    // The largest ring passes with a warning for no chunk; 16 more is refused.
    let mut q = abi::DmaQueueInit { tx_desc_count: 16_777_200, rx_desc_count: 32, ..Default::default() };
    assert_eq!(call(&mut m, abi::DMA_QUEUE_INIT, &mut q, &mut mem), Ok(0));
    let mut q = abi::DmaQueueInit { qid: 1, tx_desc_count: 16_777_216, rx_desc_count: 32, ..Default::default() };
    assert_eq!(call(&mut m, abi::DMA_QUEUE_INIT, &mut q, &mut mem), errno(Errno::EINVAL));
    for (arch, last) in [(Arch::Sunda, 1u32), (Arch::Cayman, 3)] {
        let (mut m, mut mem) = (model(arch, 2), VecMem::new());
        let ptr = mem.base + 0x40;
        let mut a = abi::MemAllocV2Mt { size: 4096, dram_channel: last, mem_handle: ptr, ..Default::default() };
        assert_eq!(call(&mut m, abi::MEM_ALLOC_V2MT, &mut a, &mut mem), Ok(0), "{arch:?} channel {last}");
        let mut a = abi::MemAllocV2Mt { size: 4096, dram_channel: last + 1, mem_handle: ptr, ..Default::default() };
        assert_eq!(call(&mut m, abi::MEM_ALLOC_V2MT, &mut a, &mut mem), errno(Errno::EINVAL), "{arch:?}");
    }
}

#[test]
fn queue_init_rules() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    let mut q = abi::DmaQueueInit { tx_desc_count: 40, rx_desc_count: 64, ..Default::default() };
    assert_eq!(call(&mut m, abi::DMA_QUEUE_INIT, &mut q, &mut mem), errno(Errno::EPERM));
    let mut q = abi::DmaQueueInit { tx_desc_count: 16, rx_desc_count: 64, ..Default::default() };
    assert_eq!(call(&mut m, abi::DMA_QUEUE_INIT, &mut q, &mut mem), errno(Errno::EINVAL));
    // RX fails after TX was set up: TX stays initialised; udma_q_init goes TX then RX.
    let mut q = abi::DmaQueueInit { eng_id: 1, tx_desc_count: 64, rx_desc_count: 16, ..Default::default() };
    assert_eq!(call(&mut m, abi::DMA_QUEUE_INIT, &mut q, &mut mem), errno(Errno::EINVAL));
    assert_eq!(m.queue(1, 0).map(|q| (q.tx.size, q.rx.size)), Some((64, 0)));
    let mut q = abi::DmaQueueInit { qid: 16, tx_desc_count: 64, rx_desc_count: 64, ..Default::default() };
    assert_eq!(call(&mut m, abi::DMA_QUEUE_INIT, &mut q, &mut mem), errno(Errno::EINVAL));
    let mut q = abi::DmaQueueInit { eng_id: 132, tx_desc_count: 64, rx_desc_count: 64, ..Default::default() };
    assert_eq!(call(&mut m, abi::DMA_QUEUE_INIT, &mut q, &mut mem), errno(Errno::EINVAL));
    // An unknown handle is no ring: a warning, not an error.
    let mut q = abi::DmaQueueInit { tx_desc_count: 64, rx_desc_count: 64, rx_handle: 999, ..Default::default() };
    assert_eq!(call(&mut m, abi::DMA_QUEUE_INIT, &mut q, &mut mem), Ok(0));
    assert_logged(&m, "invalid RX memory handle 999");
    assert_eq!(m.queue(0, 0).unwrap().rx.chunk, None);
    // A completion ring is refused.
    let (tx, _) = with_queue(&mut m, &mut mem, 64);
    let mut q = abi::DmaQueueInit { tx_desc_count: 64, rx_desc_count: 64, rxc_handle: tx, ..Default::default() };
    assert_eq!(call(&mut m, abi::DMA_QUEUE_INIT, &mut q, &mut mem), errno(Errno::EPERM));
}

#[test]
fn gen1_only_the_opener_may_init_queues_rings_and_write_the_bar() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    let mut q = abi::DmaQueueInit { tx_desc_count: 64, rx_desc_count: 64, ..Default::default() };
    let mut b = q.as_bytes().to_vec();
    assert_eq!(m.handle(PID + 1, abi::DMA_QUEUE_INIT.code(), &mut b, &mut mem), errno(Errno::EACCES));
    m.process_gone(PID);
    assert_eq!(call(&mut m, abi::DMA_QUEUE_INIT, &mut q, &mut mem), errno(Errno::EACCES));
    assert_logged(&m, "pid not attached");
}

fn nq(dev: u32, ty: u32, eng: u32, size: u32) -> abi::NotificationsInitV2 {
    abi::NotificationsInitV2 {
        nq_dev_id: dev,
        nq_type: ty,
        engine_index: eng,
        size,
        on_host_memory: 1,
        ..Default::default()
    }
}

#[test]
fn notification_rings_are_the_devices_and_slots_stay_in_the_block() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    let mut a = nq(1, nq_type::NOTIFY, 4, 1024);
    assert_eq!(call(&mut m, abi::NOTIFICATIONS_INIT_V2, &mut a, &mut mem), Ok(0));
    assert_eq!(a.mmap_offset, m.file().layout().ring_offset(1, 4).unwrap());
    // The driver's chunk is the ring rounded up to a page: any length of one page maps, two do not.
    assert!(m.mmap_allowed(a.mmap_offset, 1024));
    assert!(m.mmap_allowed(a.mmap_offset, 4096));
    assert!(!m.mmap_allowed(a.mmap_offset, 8192));
    // nq id = type * 16 + index must stay below 96.
    let mut a = nq(0, nq_type::NOTIFY, 80, 1024);
    assert_eq!(call(&mut m, abi::NOTIFICATIONS_INIT_V2, &mut a, &mut mem), errno(Errno::EINVAL));
    assert_logged(&m, "MAX_NQ_SUPPORTED (96)");
    let mut a = nq(0, nq_type::TRACE, 96, 1024);
    assert_eq!(call(&mut m, abi::NOTIFICATIONS_INIT_V2, &mut a, &mut mem), errno(Errno::EINVAL));
    // Slot 95 of type 0 is in the block: a ring the device never writes, from the pool.
    let mut a = nq(0, nq_type::TRACE, 95, 1024);
    assert_eq!(call(&mut m, abi::NOTIFICATIONS_INIT_V2, &mut a, &mut mem), Ok(0));
    assert!(a.mmap_offset >= m.file().extra_region().0);
    // Freeing a ring's handle is allowed with a warning, and forgets the ring.
    let mut f = abi::MemFree { mem_handle: a.mem_handle };
    assert_eq!(call(&mut m, abi::MEM_FREE, &mut f, &mut mem), Ok(0));
    assert_logged(&m, "is a notification ring");
    // Size a power of two; core in range.
    let mut a = nq(0, nq_type::NOTIFY, 5, 1000);
    assert_eq!(call(&mut m, abi::NOTIFICATIONS_INIT_V2, &mut a, &mut mem), errno(Errno::EINVAL));
    assert_logged(&m, "not a power of 2");
    let mut a = nq(2, nq_type::NOTIFY, 5, 1024);
    assert_eq!(call(&mut m, abi::NOTIFICATIONS_INIT_V2, &mut a, &mut mem), errno(Errno::EINVAL));
    // The device's ring size is the device's; sim.
    let mut a = nq(0, nq_type::NOTIFY, 6, 2048);
    assert_eq!(call(&mut m, abi::NOTIFICATIONS_INIT_V2, &mut a, &mut mem), errno(Errno::EINVAL));
    assert_logged(&m, "G-DRV-RINGSIZE");
    let mut a = abi::NotificationsInitV2 { nq_dev_type: 7, ..nq(0, nq_type::NOTIFY, 4, 1024) };
    assert_eq!(call(&mut m, abi::NOTIFICATIONS_INIT_V2, &mut a, &mut mem), errno(Errno::ENOSYS));
}

#[test]
fn a_ring_keeps_its_chunk_unless_realloc_is_forced() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    let mut a = nq(0, nq_type::NOTIFY, 12, 4096);
    assert_eq!(call(&mut m, abi::NOTIFICATIONS_INIT_V2, &mut a, &mut mem), Ok(0));
    let first = a.mmap_offset;
    let mut b = nq(0, nq_type::NOTIFY, 12, 8192);
    assert_eq!(call(&mut m, abi::NOTIFICATIONS_INIT_V2, &mut b, &mut mem), Ok(0));
    assert_eq!(b.mmap_offset, first);
    assert_logged(&m, "keeps its 4096 bytes");
    let mut r = abi::NotificationsInitWithReallocV2 {
        nq_type: nq_type::NOTIFY,
        engine_index: 12,
        size: 8192,
        on_host_memory: 1,
        force_alloc_mem: 1,
        ..Default::default()
    };
    assert_eq!(call(&mut m, abi::NOTIFICATIONS_INIT_WITH_REALLOC_V2, &mut r, &mut mem), Ok(0));
    assert_eq!(m.chunk(r.mem_handle).map(|c| c.size), Some(8192));
}

#[test]
fn semaphores_index_and_core_bounds_and_the_kickoff_word() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    let mut s = abi::SemaphoreArg { nc_id: 0, semaphore_index: 256, value: 1 };
    assert_eq!(call(&mut m, abi::SEMAPHORE_INCREMENT, &mut s, &mut mem), errno(Errno::EINVAL));
    let mut s = abi::SemaphoreArg { nc_id: 2, semaphore_index: 0, value: 1 };
    assert_eq!(call(&mut m, abi::SEMAPHORE_INCREMENT, &mut s, &mut mem), errno(Errno::E2BIG));
    let mut s = abi::SemaphoreArg { nc_id: 1, semaphore_index: 1, value: 1 };
    assert_eq!(call(&mut m, abi::SEMAPHORE_INCREMENT, &mut s, &mut mem), Ok(0));
    assert_eq!(m.file().sema_incr(1, 1).unwrap().load(Ordering::Acquire), 1);
    // The index is a u16 in the driver: 65536 + 1 is semaphore 1.
    let mut s = abi::SemaphoreArg { nc_id: 1, semaphore_index: 65537, value: 2 };
    assert_eq!(call(&mut m, abi::SEMAPHORE_INCREMENT, &mut s, &mut mem), Ok(0));
    assert_eq!(m.file().sema_incr(1, 1).unwrap().load(Ordering::Acquire), 3);
    let mut s = abi::SemaphoreArg { nc_id: 1, semaphore_index: 1, value: 0 };
    assert_eq!(call(&mut m, abi::SEMAPHORE_READ, &mut s, &mut mem), Ok(0));
    assert_eq!(s.value, 3);
    // v3 has 8 cores: nc_id 7 is valid; not simulated, so accepted and noted.
    let (mut m3, mut mem3) = (model(Arch::Cayman, 2), VecMem::new());
    let mut s = abi::SemaphoreArg { nc_id: 7, semaphore_index: 0, value: 1 };
    assert_eq!(call(&mut m3, abi::SEMAPHORE_INCREMENT, &mut s, &mut mem3), Ok(0));
    // The event ioctls check their index but not nc_id, a warning.
    let mut e = abi::SemaphoreArg { nc_id: 9, semaphore_index: 3, value: 1 };
    assert_eq!(call(&mut m, abi::EVENT_SET, &mut e, &mut mem), Ok(0));
    assert_logged(&m, "does not check it");
    let mut e = abi::SemaphoreArg { nc_id: 0, semaphore_index: 257, value: 1 };
    assert_eq!(call(&mut m, abi::EVENT_SET, &mut e, &mut mem), errno(Errno::EINVAL));
}

#[test]
fn evt2_an_event_of_a_core_past_the_device_lands_in_another_block_or_leaves_bar0() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    let mut ev = |m: &mut Model, nc: u32| {
        let mut e = abi::SemaphoreArg { nc_id: nc, semaphore_index: 3, value: 1 };
        call(m, abi::EVENT_SET, &mut e, &mut mem)
    };
    // v2: nc 2 is a TPB window the device does not have, nc 4 the top-SP
    // region at 0x1000_0000 + 0x270_0000, nc 11 still at 0x2E70_000C; all 0, warned.
    for (nc, block) in [(2, "TPB window of a core"), (4, "top-SP region"), (11, "top-SP region")] {
        assert_eq!(ev(&mut m, nc), Ok(0), "nc {nc}");
        assert!(m.log.last().is_some_and(|l| l.text.contains(block)), "nc {nc}: {:?}", m.log.last());
    }
    assert_logged(&m, "BAR0 offset 0x1270000c");
    // nc 12: 0x3270_000C, past the BAR: a kernel BUG; nc 256 is nc 0 as a u8: served quietly.
    assert_bug(ev(&mut m, 12), "past the BAR mapping", "neuron_core.c");
    let before = m.violations.len();
    assert_eq!(ev(&mut m, 256), Ok(0));
    assert_eq!(m.violations.len(), before);
    assert_eq!(sema::event_offset(Arch::Cayman, 8, 0), 0xF270_0000);
    assert_eq!(sema::event_block(Arch::Sunda, 0x3000_0000), "the APB register block (V2_PCIE_BAR0_APB_OFFSET)");
}

fn bar(m: &mut Model, mem: &mut VecMem, read: bool, addrs: &[u64], data: &[u32]) -> Answer {
    let (a_ptr, d_ptr) = (mem.base + 0x100, mem.base + 0x800);
    let ab: Vec<u8> = addrs.iter().flat_map(|a| a.to_le_bytes()).collect();
    let db: Vec<u8> = data.iter().flat_map(|d| d.to_le_bytes()).collect();
    mem.put(a_ptr, &ab);
    mem.put(d_ptr, &db);
    let w = abi::BarRwWire { bar: 0, address: a_ptr, data: d_ptr, count: addrs.len() as u32, ..Default::default() };
    let mut b = w.as_bytes().to_vec();
    let code = if read { abi::BAR_READ.code() } else { abi::BAR_WRITE.code() };
    m.handle(PID, code, &mut b, mem)
}

#[test]
fn bar_writes_land_in_the_device_and_tail_increments_are_refused() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    let pa = simabi::SIM_BAR0_PA;
    let head = nrt_core::arch::nq_head_register(Arch::Sunda, 0, 4).unwrap();
    assert_eq!(bar(&mut m, &mut mem, false, &[pa + head], &[7]), Ok(0));
    assert_eq!(m.file().bar_u32(head).unwrap().load(Ordering::Acquire), 7);
    assert_eq!(bar(&mut m, &mut mem, true, &[pa + head], &[0]), Ok(0));
    assert_eq!(mem.bytes[0x800..0x804], 7u32.to_le_bytes());
    for reg in [0x38u64, 0x28, 0x2C, 0x44, 0x48] {
        let q3_s2m = nrt_abi::devmap::udma_base(Arch::Sunda, 2).unwrap() + 0x2_1000 + 3 * 0x1000 + reg;
        assert_eq!(bar(&mut m, &mut mem, false, &[pa + q3_s2m], &[1]), errno(Errno::EINVAL), "0x{reg:x}");
    }
    assert_logged(&m, "tail-pointer increment (drtp_inc)");
    // An earlier register of the same call is written before the refusal.
    let tail = nrt_abi::devmap::udma_base(Arch::Sunda, 0).unwrap() + 0x1000 + 0x38;
    assert_eq!(bar(&mut m, &mut mem, false, &[pa + head, pa + tail], &[9, 1]), errno(Errno::EINVAL));
    assert_eq!(m.file().bar_u32(head).unwrap().load(Ordering::Acquire), 9);
    let len = m.file().layout().bar_len;
    assert_eq!(bar(&mut m, &mut mem, false, &[pa + len + 4], &[1]), errno(Errno::EINVAL));
    assert_bug(bar(&mut m, &mut mem, false, &[pa + len - 2], &[1]), "past the BAR mapping", "v2/neuron_dhal_v2.c");
    assert_bug(bar(&mut m, &mut mem, true, &[pa - 4], &[0]), "outside BAR0", "neuron_fw_io.c");
    let many = vec![pa + head; 101];
    assert_eq!(bar(&mut m, &mut mem, true, &many, &[]), errno(Errno::EINVAL));
    // BAR-2: an address array that cannot be copied in: copy_from_user's count, positive.
    let w = abi::BarRwWire { bar: 0, address: 0xdead_0000, data: 0, count: 1, ..Default::default() };
    let mut b = w.as_bytes().to_vec();
    assert_eq!(m.handle(PID, abi::BAR_READ.code(), &mut b, &mut mem), Ok(8));
}

#[test]
fn barw5_the_firmware_mailbox_words_and_v3s_engine_list_are_blocked() {
    // The five mailbox words, on both arches; the words beside them are not.
    for (arch, misc) in [(Arch::Sunda, 0x30FA_0000u64), (Arch::Cayman, 0x06C8_4000), (Arch::Mariana, 0x06C8_4000)] {
        for w in [0x1F0u64, 0x1F4, 0x1F8, 0x1FC, 0x800] {
            let r = bar::blocked_register(arch, misc + w);
            assert!(r.is_some_and(|n| n.contains("firmware mailbox")), "{arch:?} 0x{w:x}: {r:?}");
        }
        for w in [0x1ECu64, 0x200, 0x804] {
            assert_eq!(bar::blocked_register(arch, misc + w), None, "{arch:?} 0x{w:x}");
        }
    }
    // v3: SE0..3, 32 SDMA engines each, and IO0/IO1 D2H/H2D; q5 M2S tail increment.
    for base in
        [0x8200_0000u64, 0x8200_0000 + 31 * 0x10_0000, 0x9400_0000, 0xA200_0000, 0xB400_0000, 0x0680_0000, 0x4690_0000]
    {
        let tail = base + 0x1000 + 5 * 0x1000 + 0x38;
        assert_eq!(
            bar::blocked_register(Arch::Cayman, tail),
            Some("UDMA tail-pointer increment (drtp_inc)"),
            "0x{base:x}"
        );
    }
    assert_eq!(bar::blocked_register(Arch::Cayman, 0x8200_0000 + 32 * 0x10_0000 + 0x1038), None, "SE0 has 32 engines");
    // Through BAR_WRITE on cayman: the trigger word is EINVAL, named.
    let (mut m, mut mem) = (model(Arch::Cayman, 2), VecMem::new());
    let off = 0x06C8_4000 + 0x800;
    assert!(m.file().layout().bar_len > off);
    assert_eq!(bar(&mut m, &mut mem, false, &[simabi::SIM_BAR0_PA + off], &[1]), errno(Errno::EINVAL));
    assert_logged(&m, "BARW-5: BAR0 offset 0x6c84800 is a firmware mailbox trigger interrupt");
}

#[test]
fn memory_handles() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    let ptr = mem.base + 0x40;
    let mut a = abi::MemAllocV2Mt { size: 5000, host_memory: 1, mem_handle: ptr, ..Default::default() };
    assert_eq!(call(&mut m, abi::MEM_ALLOC_V2MT, &mut a, &mut mem), Ok(0));
    let h = mem.u64_at(ptr);
    let mut i = abi::MemGetExtendedInfo { mem_handle: h, version: 1, ..Default::default() };
    assert_eq!(call(&mut m, abi::MEM_GET_EXTENDED_INFO, &mut i, &mut mem), Ok(0));
    assert_eq!((i.size, i.host_memory, i.pid), (8192, 1, u64::from(PID)));
    assert_eq!(i.mmap_offset, m.file().extra_region().0);
    assert!(m.mmap_allowed(i.mmap_offset, 8192));
    // A bad handle: MEM_GET_EXTENDED_INFO "succeeds" with +EINVAL; MEM_FREE refuses.
    let mut bad = abi::MemGetExtendedInfo { mem_handle: 777, ..Default::default() };
    assert_eq!(call(&mut m, abi::MEM_GET_EXTENDED_INFO, &mut bad, &mut mem), Ok(22));
    let mut f = abi::MemFree { mem_handle: 777 };
    assert_eq!(call(&mut m, abi::MEM_FREE, &mut f, &mut mem), errno(Errno::EINVAL));
    let mut f = abi::MemFree { mem_handle: h };
    assert_eq!(call(&mut m, abi::MEM_FREE, &mut f, &mut mem), Ok(0));
    assert_eq!(call(&mut m, abi::MEM_FREE, &mut f, &mut mem), errno(Errno::EINVAL));
    // An unwritable handle pointer: freed again, 8 bytes "not copied" returned.
    let mut a = abi::MemAllocV2Mt { size: 4096, host_memory: 1, mem_handle: 8, ..Default::default() };
    assert_eq!(call(&mut m, abi::MEM_ALLOC_V2MT, &mut a, &mut mem), Ok(8));
    let mut a = abi::MemAllocV2Mt { size: 4096, dram_channel: 2, mem_handle: ptr, ..Default::default() };
    assert_eq!(call(&mut m, abi::MEM_ALLOC_V2MT, &mut a, &mut mem), errno(Errno::EINVAL));
    let mut a = abi::MemAllocV2Mt { size: 1 << 40, mem_handle: ptr, ..Default::default() };
    assert_eq!(call(&mut m, abi::MEM_ALLOC_V2MT, &mut a, &mut mem), errno(Errno::ENOMEM));
}

#[test]
fn gen2_unknown_requests_and_short_arguments_are_refused() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    let mut b = vec![0u8; 64];
    assert_eq!(m.handle(PID, 0xC008_4EFF, &mut b, &mut mem), errno(Errno::EINVAL));
    let mut short = vec![0u8; 4];
    assert_eq!(m.handle(PID, abi::DEVICE_INFO.code(), &mut short, &mut mem), errno(Errno::EFAULT));
    assert_eq!(arg_size(abi::BAR_READ.code()), Some(32));
    assert_eq!(arg_size(abi::NOTIFICATIONS_INIT_WITH_REALLOC_V2.code()), Some(56));
    for (_, code, name) in abi::ALL_REQUESTS {
        // Every request nrt-abi names is served but the apps list, whose entries follow the header.
        assert_eq!(arg_size(code).is_some(), code != abi::DEVICE_GET_ALL_APPS_INFO.code(), "{name}");
    }
}

/// A hostile caller: random argument bytes for every request, random
/// pointers. Nothing panics; the model stays usable.
#[test]
fn random_arguments_never_panic() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for i in 0..4000 {
        let (_, code, _) = abi::ALL_REQUESTS[i % abi::ALL_REQUESTS.len()];
        let mut b: Vec<u8> = (0..arg_size(code).unwrap_or(16)).map(|_| next() as u8).collect();
        // Half the time, small counts and pointers into the caller's memory.
        if i % 2 == 0 {
            for (k, w) in b.chunks_exact_mut(8).enumerate() {
                let v = if k % 2 == 0 { next() % 300 } else { mem.base + next() % 0x1100 };
                w.copy_from_slice(&v.to_le_bytes());
            }
        }
        // Two processes, so that ownership rules see a stranger too.
        let _ = m.handle(if i % 3 == 0 { PID + 1 } else { PID }, code, &mut b, &mut mem);
    }
    let mut d = abi::DeviceInfo::default();
    assert_eq!(call(&mut m, abi::DEVICE_INFO, &mut d, &mut mem), Ok(0));
}

// ---- Identity: INFO ----

#[test]
fn info1_4_identity_and_versions() {
    let (mut m, mut mem) = (model(Arch::Cayman, 2), VecMem::new());
    let mut d = abi::DeviceInfo { revision: 77, ..Default::default() };
    assert_eq!(call(&mut m, abi::DEVICE_INFO, &mut d, &mut mem), Ok(0));
    assert_eq!((d.architecture, d.revision, d.bar_address[0]), (3, 0, simabi::SIM_BAR0_PA));
    assert_eq!(d.bar_size[0], m.file().layout().bar_len);
    let mut b = abi::DeviceBasicInfo::default();
    assert_eq!(call(&mut m, abi::DEVICE_BASIC_INFO, &mut b, &mut mem), Ok(0));
    assert_eq!(b.architecture, 3);
    let mut v = abi::CompatibleVersion::default();
    assert_eq!(call(&mut m, abi::COMPATIBLE_VERSION, &mut v, &mut mem), Ok(0));
    assert_eq!((v.max, v.min), (11, 10));
    let mut i = abi::DriverInfo::default();
    assert_eq!(call(&mut m, abi::DRIVER_INFO_GET, &mut i, &mut mem), Ok(0));
    assert_eq!((i.architecture, i.size, i.feature_flags1), (3, 24, 0xFF));
    let (mut m2, mut mem2) = (model(Arch::Sunda, 2), VecMem::new());
    assert_eq!(call(&mut m2, abi::COMPATIBLE_VERSION, &mut v, &mut mem2), Ok(0));
    assert_eq!((v.max, v.min), (7, 5));
}

// ---- GEN-3: an argument struct that cannot be copied in ----

#[test]
fn gen3_copy_in_failure_is_a_positive_count_or_eacces() {
    let (mut m, _) = (model(Arch::Sunda, 2), VecMem::new());
    assert_eq!(m.copy_in_failed(PID, abi::DMA_QUEUE_INIT.code(), 0), errno(Errno::EACCES));
    assert_eq!(m.copy_in_failed(PID, abi::MEM_FREE.code(), 0), Ok(8));
    assert_eq!(m.copy_in_failed(PID, abi::NC_RESET.code(), 4), Ok(4));
    assert_eq!(m.copy_in_failed(PID, 0xC008_4EFF, 0), errno(Errno::EINVAL));
    assert_logged(&m, "GEN-3");
}

// ---- GEN-4: a write-only "free access" descriptor ----

#[test]
fn gen4_a_write_only_descriptor_reaches_only_the_misc_requests() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    let on_free = |m: &mut Model, code: u32, b: &mut [u8], mem: &mut VecMem| m.handle_on(PID, code, true, b, mem);
    // Misc: served, the driver-info query matched by its number alone.
    let mut di = [0u8; core::mem::size_of::<abi::DriverInfo>()];
    assert_eq!(on_free(&mut m, abi::DRIVER_INFO_GET.code(), &mut di, &mut mem), Ok(0));
    let mut map = abi::CrwlNcMap { nc_count: 1, start_nc_index: 0, end_nc_index: 0, ..Default::default() };
    let mut b = map.as_bytes().to_vec();
    assert_eq!(on_free(&mut m, abi::CRWL_NC_RANGE_MARK.code(), &mut b, &mut mem), Ok(0));
    map = abi::CrwlNcMap::read_from_bytes(&b).unwrap();
    assert_eq!((map.bitmap, m.range_holder(0)), (1, PID));
    // Not misc: EINVAL before the argument is looked at; an empty one here.
    for code in [
        abi::DEVICE_INFO.code(),
        abi::CRWL_WRITER_ENTER.code(),
        abi::MEM_ALLOC_V2MT.code(),
        abi::DMA_QUEUE_INIT.code(),
        abi::DEVICE_GET_ALL_APPS_INFO.code(),
        abi::ACQUIRE_NEURON_DS.code(),
        abi::RELEASE_NEURON_DS.code(),
    ] {
        assert_eq!(on_free(&mut m, code, &mut [], &mut mem), errno(Errno::EINVAL), "0x{code:08X}");
    }
    assert_logged(&m, "GEN-4");
    // The same requests on an O_RDWR descriptor are served.
    let mut c = crwl(0, 7);
    assert_eq!(call(&mut m, abi::CRWL_WRITER_ENTER, &mut c, &mut mem), Ok(0));
    assert!(request::is_misc(abi::NC_PID_STATE_DUMP.code()) && !request::is_misc(abi::DEVICE_INFO.code()));
}

// ---- CRWL ----

fn uuid(b: u8) -> [u8; 32] {
    [b; 32]
}

fn crwl(nc: u32, u: u8) -> abi::Crwl {
    abi::Crwl { nc_id: nc, uuid: uuid(u) }
}

/// Claim core `nc` for model `u` as a runtime does: writer enter, downgrade;
/// the writer is then the core's one reader.
fn switch_in(m: &mut Model, mem: &mut VecMem, pid: u32, nc: u32, u: u8) {
    assert_eq!(call_as(m, pid, abi::CRWL_WRITER_ENTER, &mut crwl(nc, u), mem), Ok(0));
    assert_eq!(call_as(m, pid, abi::CRWL_WRITER_DOWNGRADE, &mut crwl(nc, u), mem), Ok(0));
}

#[test]
fn crwl1_core_index_past_8_is_einval() {
    let (mut m, mut mem) = (model(Arch::Cayman, 2), VecMem::new());
    for req in [abi::CRWL_READER_ENTER, abi::CRWL_READER_EXIT, abi::CRWL_WRITER_ENTER, abi::CRWL_WRITER_DOWNGRADE] {
        assert_eq!(call(&mut m, req, &mut crwl(8, 1), &mut mem), errno(Errno::EINVAL), "{req:?}");
    }
    assert_logged(&m, "CRWL-1");
}

#[test]
fn crwl3_reader_enter_on_a_fresh_core_is_enoent_whatever_the_uuid() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    // uuid 0 matches a fresh core's uuid, but the writer pid 0 is not the caller: CRWL-4.
    assert_eq!(call(&mut m, abi::CRWL_READER_ENTER, &mut crwl(0, 0), &mut mem), errno(Errno::ENOENT));
    assert_logged(&m, "CRWL-4");
    assert_eq!(call(&mut m, abi::CRWL_READER_ENTER, &mut crwl(0, 7), &mut mem), errno(Errno::ENOENT));
    assert_logged(&m, "CRWL-3: core 0 has no model switched in");
    // Exit without enter: the uuid check, ENOENT, comes before the count, EINVAL.
    assert_eq!(call(&mut m, abi::CRWL_READER_EXIT, &mut crwl(0, 7), &mut mem), errno(Errno::ENOENT));
}

#[test]
fn crwl4_a_reader_must_be_the_writers_process() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    m.open(PID + 1);
    switch_in(&mut m, &mut mem, PID, 0, 5);
    // Another process with the right uuid: ENOENT.
    assert_eq!(call_as(&mut m, PID + 1, abi::CRWL_READER_ENTER, &mut crwl(0, 5), &mut mem), errno(Errno::ENOENT));
    assert_logged(&m, "CRWL-4: core 0's writer is pid 4242");
    // The writer's process with another uuid: ENOENT.
    assert_eq!(call(&mut m, abi::CRWL_READER_ENTER, &mut crwl(0, 6), &mut mem), errno(Errno::ENOENT));
    assert_eq!(call(&mut m, abi::CRWL_READER_ENTER, &mut crwl(0, 5), &mut mem), Ok(0));
    assert_eq!(m.core_lock(0).unwrap().reader_count, 2);
}

#[test]
fn crwl2_reader_enter_while_a_writer_holds_the_lock_is_ebusy() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    assert_eq!(call(&mut m, abi::CRWL_WRITER_ENTER, &mut crwl(1, 3), &mut mem), Ok(0));
    assert_eq!(call(&mut m, abi::CRWL_READER_ENTER, &mut crwl(1, 3), &mut mem), errno(Errno::EBUSY));
    assert_logged(&m, "CRWL-2");
}

#[test]
fn crwl5_6_readers_count_and_exit_at_zero_is_einval() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    switch_in(&mut m, &mut mem, PID, 1, 9);
    assert_eq!(m.core_lock(1).unwrap().reader_count, 1);
    assert_eq!(call(&mut m, abi::CRWL_READER_ENTER, &mut crwl(1, 9), &mut mem), Ok(0));
    assert_eq!(m.core_lock(1).unwrap().reader_count, 2);
    for _ in 0..2 {
        assert_eq!(call(&mut m, abi::CRWL_READER_EXIT, &mut crwl(1, 9), &mut mem), Ok(0));
    }
    assert_eq!(call(&mut m, abi::CRWL_READER_EXIT, &mut crwl(1, 9), &mut mem), errno(Errno::EINVAL));
    assert_logged(&m, "CRWL-6: core 1's reader count is already 0");
}

#[test]
fn crwl7_writer_enter_with_readers_or_a_writer_is_ebusy() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    m.open(PID + 1);
    switch_in(&mut m, &mut mem, PID, 0, 1);
    // The downgraded writer is a reader inside: no new writer, of any process.
    assert_eq!(call(&mut m, abi::CRWL_WRITER_ENTER, &mut crwl(0, 2), &mut mem), errno(Errno::EBUSY));
    assert_eq!(call_as(&mut m, PID + 1, abi::CRWL_WRITER_ENTER, &mut crwl(0, 2), &mut mem), errno(Errno::EBUSY));
    assert_logged(&m, "CRWL-7");
    // Readers gone: a model switch by another process is allowed.
    assert_eq!(call(&mut m, abi::CRWL_READER_EXIT, &mut crwl(0, 1), &mut mem), Ok(0));
    assert_eq!(call_as(&mut m, PID + 1, abi::CRWL_WRITER_ENTER, &mut crwl(0, 2), &mut mem), Ok(0));
    assert_eq!(call(&mut m, abi::CRWL_WRITER_ENTER, &mut crwl(0, 3), &mut mem), errno(Errno::EBUSY));
}

#[test]
fn crwl8_writer_enter_of_the_same_model_is_ealready_with_the_lock_held() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    switch_in(&mut m, &mut mem, PID, 0, 4);
    assert_eq!(call(&mut m, abi::CRWL_READER_EXIT, &mut crwl(0, 4), &mut mem), Ok(0));
    assert_eq!(call(&mut m, abi::CRWL_WRITER_ENTER, &mut crwl(0, 4), &mut mem), errno(Errno::EALREADY));
    assert_logged(&m, "CRWL-8");
    // The lock was taken before the check: a downgrade releases it.
    assert!(m.core_lock(0).unwrap().writer_acquired);
    assert_eq!(call(&mut m, abi::CRWL_WRITER_DOWNGRADE, &mut crwl(0, 4), &mut mem), Ok(0));
    assert!(!m.core_lock(0).unwrap().writer_acquired);
}

#[test]
fn crwl9_13_the_runtime_sequence_switches_a_model_in_and_out() {
    let (mut m, mut mem) = (model(Arch::Cayman, 2), VecMem::new());
    for nc in 0..2 {
        assert_eq!(call(&mut m, abi::CRWL_WRITER_ENTER, &mut crwl(nc, 0x42), &mut mem), Ok(0));
        let l = *m.core_lock(nc).unwrap();
        assert_eq!((l.writer_pid, l.writer_acquired, l.uuid, l.reader_count), (PID, true, uuid(0x42), 0));
        assert_eq!(call(&mut m, abi::CRWL_WRITER_DOWNGRADE, &mut crwl(nc, 0x42), &mut mem), Ok(0));
        let l = *m.core_lock(nc).unwrap();
        assert_eq!((l.writer_acquired, l.reader_count), (false, 1));
    }
    for nc in (0..2).rev() {
        assert_eq!(call(&mut m, abi::CRWL_READER_EXIT, &mut crwl(nc, 0x42), &mut mem), Ok(0));
    }
    assert_eq!(m.kernel_bugs().count(), 0);
}

#[test]
fn crwl10_11_downgrade_without_enter_is_einval_with_another_uuid_enoent() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    assert_eq!(call(&mut m, abi::CRWL_WRITER_DOWNGRADE, &mut crwl(0, 1), &mut mem), errno(Errno::EINVAL));
    assert_logged(&m, "CRWL-10");
    assert_eq!(call(&mut m, abi::CRWL_WRITER_ENTER, &mut crwl(0, 1), &mut mem), Ok(0));
    assert_eq!(call(&mut m, abi::CRWL_WRITER_DOWNGRADE, &mut crwl(0, 2), &mut mem), errno(Errno::ENOENT));
    m.open(PID + 1);
    assert_eq!(call_as(&mut m, PID + 1, abi::CRWL_WRITER_DOWNGRADE, &mut crwl(0, 1), &mut mem), errno(Errno::ENOENT));
}

#[test]
fn crwl14_a_gone_process_frees_the_cores_it_switched() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    m.open(PID + 1);
    switch_in(&mut m, &mut mem, PID, 0, 1);
    switch_in(&mut m, &mut mem, PID + 1, 1, 2);
    m.process_gone(PID);
    assert_eq!(*m.core_lock(0).unwrap(), CoreLock::default());
    assert_eq!(m.core_lock(1).unwrap().writer_pid, PID + 1);
    assert_eq!(call_as(&mut m, PID + 1, abi::CRWL_WRITER_ENTER, &mut crwl(0, 3), &mut mem), Ok(0));
}

// ---- RANGE ----

fn range(count: u32, start: u32, end: u32) -> abi::CrwlNcMap {
    abi::CrwlNcMap { nc_count: count, start_nc_index: start, end_nc_index: end, max_nc_available: 99, bitmap: 0xFF00 }
}

#[test]
fn range3_bounds_past_the_driver_table_are_einval() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    for (s, e) in [(2, 1), (512, 512), (0, 512)] {
        let mut r = range(1, s, e);
        assert_eq!(call(&mut m, abi::CRWL_NC_RANGE_MARK, &mut r, &mut mem), errno(Errno::EINVAL), "{s}..{e}");
        // Copied back even so: bitmap and max cleared.
        assert_eq!((r.bitmap, r.max_nc_available), (0, 0));
    }
    assert_logged(&m, "RANGE-3");
}

#[test]
fn range4_a_second_process_gets_ebusy_naming_the_holder() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    m.open(PID + 1);
    let mut r = range(2, 0, 1);
    assert_eq!(call(&mut m, abi::CRWL_NC_RANGE_MARK, &mut r, &mut mem), Ok(0));
    assert_eq!(r.bitmap, 0b11);
    assert_eq!((m.range_holder(0), m.range_holder(1)), (PID, PID));
    let mut r = range(1, 0, 1);
    assert_eq!(call_as(&mut m, PID + 1, abi::CRWL_NC_RANGE_MARK, &mut r, &mut mem), errno(Errno::EBUSY));
    assert_eq!((r.bitmap, r.max_nc_available), (0, 0));
    assert_logged(&m, "held: nc0: pid 4242, nc1: pid 4242");
    // Free cores elsewhere: taken, and the longest free run is reported on failure.
    let mut r = range(3, 2, 5);
    assert_eq!(call_as(&mut m, PID + 1, abi::CRWL_NC_RANGE_MARK, &mut r, &mut mem), Ok(0));
    assert_eq!(r.bitmap, 0b11100);
    let mut r = range(2, 0, 7);
    assert_eq!(call_as(&mut m, PID + 1, abi::CRWL_NC_RANGE_MARK, &mut r, &mut mem), Ok(0));
    assert_eq!(r.bitmap, 0b1100000);
    let mut r = range(2, 0, 7);
    assert_eq!(call(&mut m, abi::CRWL_NC_RANGE_MARK, &mut r, &mut mem), errno(Errno::EBUSY));
    assert_eq!(r.max_nc_available, 1);
}

#[test]
fn range4_the_search_resumes_two_past_a_short_run_as_the_drivers_does() {
    let (mut m, mut mem) = (model(Arch::Cayman, 2), VecMem::new());
    m.open(PID + 1);
    // Core 1 taken: 0 is a run of 1; the driver resumes at 3, skipping 2, so
    // a run of 2 is found at 3..=4, not at 2..=3.
    let mut r = range(1, 1, 1);
    assert_eq!(call_as(&mut m, PID + 1, abi::CRWL_NC_RANGE_MARK, &mut r, &mut mem), Ok(0));
    let mut r = range(2, 0, 7);
    assert_eq!(call(&mut m, abi::CRWL_NC_RANGE_MARK, &mut r, &mut mem), Ok(0));
    assert_eq!(r.bitmap, 0b11000);
    // nc_count 0 marks nothing and succeeds.
    let mut r = range(0, 0, 7);
    assert_eq!(call(&mut m, abi::CRWL_NC_RANGE_MARK, &mut r, &mut mem), Ok(0));
    assert_eq!(r.bitmap, 0);
}

#[test]
fn range4_the_ext_form_marks_past_core_63() {
    let (mut m, mut mem) = (model(Arch::Cayman, 2), VecMem::new());
    let mut r = abi::CrwlNcMapExt { nc_count: 2, start_nc_index: 100, end_nc_index: 200, ..Default::default() };
    assert_eq!(call(&mut m, abi::CRWL_NC_RANGE_MARK_EXT0, &mut r, &mut mem), Ok(0));
    assert_eq!(r.bitmap[1], 0b11 << 36);
    assert_eq!(m.range_holder(101), PID);
    let mut u = abi::CrwlNcMapExt { bitmap: r.bitmap, ..Default::default() };
    assert_eq!(call(&mut m, abi::CRWL_NC_RANGE_UNMARK_EXT0, &mut u, &mut mem), Ok(0));
    assert_eq!(m.range_holder(101), 0);
}

#[test]
fn range5_unmark_frees_only_the_callers_cores() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    m.open(PID + 1);
    assert_eq!(call(&mut m, abi::CRWL_NC_RANGE_MARK, &mut range(1, 0, 0), &mut mem), Ok(0));
    assert_eq!(call_as(&mut m, PID + 1, abi::CRWL_NC_RANGE_MARK, &mut range(1, 1, 1), &mut mem), Ok(0));
    let mut u = abi::CrwlNcMap { bitmap: 0b11, ..Default::default() };
    assert_eq!(call(&mut m, abi::CRWL_NC_RANGE_UNMARK, &mut u, &mut mem), Ok(0));
    assert_eq!((m.range_holder(0), m.range_holder(1)), (0, PID + 1));
}

#[test]
fn range6_marks_outlive_a_process_without_a_write_only_descriptor() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    m.open(PID + 1);
    m.open(PID + 2);
    m.open_free_access(PID + 2);
    assert_eq!(call_as(&mut m, PID + 1, abi::CRWL_NC_RANGE_MARK, &mut range(1, 0, 0), &mut mem), Ok(0));
    assert_eq!(call_as(&mut m, PID + 2, abi::CRWL_NC_RANGE_MARK, &mut range(1, 1, 1), &mut mem), Ok(0));
    m.process_gone(PID + 1);
    m.process_gone(PID + 2);
    assert_eq!((m.range_holder(0), m.range_holder(1)), (PID + 1, 0));
    assert!(m.violations.iter().any(|v| v.to_string().contains("RANGE-6: cores [0] stay marked for pid 4243")));
}

#[test]
fn range7_pid_state_dump_logs_the_holder_and_returns_nothing() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    assert_eq!(call(&mut m, abi::CRWL_NC_RANGE_MARK, &mut range(1, 0, 0), &mut mem), Ok(0));
    let mut d = abi::NcPidStateDump { size: 16, nc_id: 0, ..Default::default() };
    assert_eq!(call(&mut m, abi::NC_PID_STATE_DUMP, &mut d, &mut mem), Ok(0));
    assert_eq!(d, abi::NcPidStateDump { size: 16, nc_id: 0, ..Default::default() });
    assert_logged(&m, "RANGE-7: nc 0 is marked by pid 4242");
    let mut d = abi::NcPidStateDump { nc_id: 512, ..Default::default() };
    assert_eq!(call(&mut m, abi::NC_PID_STATE_DUMP, &mut d, &mut mem), errno(Errno::ENOENT));
}

// ---- RESET ----

#[test]
fn reset2_3_7_request_ids_a_second_reset_and_the_waits() {
    let (mut m, mut mem) = (model(Arch::Cayman, 2), VecMem::new());
    let mut r = abi::NcReset { nc_map: 3, request_id: 0 };
    assert_eq!(call(&mut m, abi::NC_RESET, &mut r, &mut mem), Ok(0));
    assert_eq!(r.request_id, PID);
    // RESET-3: again before the wait: +1, nothing copied back.
    let mut again = abi::NcReset { nc_map: 3, request_id: 5 };
    assert_eq!(call(&mut m, abi::NC_RESET, &mut again, &mut mem), Ok(RESET_PENDING));
    assert_eq!(again.request_id, 5);
    let mut w = abi::NcResetReady { request_id: PID, result: 9 };
    assert_eq!(call(&mut m, abi::NC_RESET_READY, &mut w, &mut mem), Ok(0));
    assert_eq!(w.result, 0);
    // RESET-7: a second wait, and an id never requested: result 1.
    assert_eq!(call(&mut m, abi::NC_RESET_READY, &mut w, &mut mem), Ok(0));
    assert_eq!(w.result, 1);
    let mut w = abi::NcResetReady { request_id: 1, result: 0 };
    assert_eq!(call(&mut m, abi::NC_RESET_READY, &mut w, &mut mem), Ok(0));
    assert_eq!(w.result, 1);
    // After the wait a new reset is accepted.
    assert_eq!(call(&mut m, abi::NC_RESET, &mut r, &mut mem), Ok(0));
}

/// RESET-8: each reset asks the device to reset the simulated cores of the
/// map, moving their reset generation, and `NC_RESET_READY` waits until a
/// device stepping the file acknowledged them; a file no device steps is not
/// waited for.
#[test]
fn reset8_the_device_resets_the_cores_of_the_map_and_the_ready_waits_for_it() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    let gens = |m: &Model| (m.file().reset_requested(0), m.file().reset_requested(1));
    let mut r = abi::NcReset { nc_map: 2, request_id: 0 };
    assert_eq!(call(&mut m, abi::NC_RESET, &mut r, &mut mem), Ok(0));
    assert_eq!(gens(&m), (0, 1));
    // RESET-3: a request already pending resets nothing more.
    assert_eq!(call(&mut m, abi::NC_RESET, &mut r, &mut mem), Ok(RESET_PENDING));
    assert_eq!(gens(&m), (0, 1));
    // No device steps this file, since a fresh heartbeat on a file not ready
    // is not one: the wait returns without the device's acknowledgement.
    m.file().heartbeat();
    let beat = {
        let (file, stop) = (Arc::clone(m.file()), Arc::new(std::sync::atomic::AtomicBool::new(false)));
        let s = Arc::clone(&stop);
        let t = std::thread::spawn(move || {
            let t0 = std::time::Instant::now();
            // Bounded: 5 s at most.
            while !s.load(Ordering::Acquire) && t0.elapsed() < std::time::Duration::from_secs(5) {
                file.heartbeat();
                std::thread::sleep(std::time::Duration::from_micros(100));
            }
        });
        (t, stop)
    };
    let mut w = abi::NcResetReady { request_id: PID, result: 9 };
    assert_eq!(call(&mut m, abi::NC_RESET_READY, &mut w, &mut mem), Ok(0));
    beat.1.store(true, Ordering::Release);
    beat.0.join().unwrap();
    assert_eq!((w.result, m.file().reset_acknowledged(1)), (0, 0));
    assert!(m.violations.is_empty(), "no device, no wait: {:?}", m.violations);
    let mut all = abi::NcReset { nc_map: abi::NC_MAP_DEVICE, request_id: 0 };
    assert_eq!(call(&mut m, abi::NC_RESET, &mut all, &mut mem), Ok(0));
    assert_eq!(gens(&m), (1, 2));
    // A device that acknowledges 20 ms later: the wait returns after it.
    m.file().mark_ready(0);
    let (file, stop) = (Arc::clone(m.file()), Arc::new(std::sync::atomic::AtomicBool::new(false)));
    let device = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let t0 = std::time::Instant::now();
            // Bounded: 5 s at most.
            while !stop.load(Ordering::Acquire) && t0.elapsed() < std::time::Duration::from_secs(5) {
                file.heartbeat();
                if t0.elapsed() >= std::time::Duration::from_millis(20) {
                    for c in 0..2 {
                        file.acknowledge_reset(c, file.reset_requested(c));
                    }
                }
                std::thread::sleep(std::time::Duration::from_micros(100));
            }
        })
    };
    let mut w = abi::NcResetReady { request_id: PID, result: 9 };
    assert_eq!(call(&mut m, abi::NC_RESET_READY, &mut w, &mut mem), Ok(0));
    let acked = (m.file().reset_acknowledged(0), m.file().reset_acknowledged(1));
    stop.store(true, Ordering::Release);
    device.join().unwrap();
    assert_eq!((w.result, acked), (0, (1, 2)));
    assert!(m.violations.is_empty(), "{:?}", m.violations);
}

#[test]
fn reset4_destroys_every_processs_rings_of_the_cores() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    m.open(PID + 1);
    let mut a = nq(0, nq_type::NOTIFY, 4, 1024);
    assert_eq!(call_as(&mut m, PID + 1, abi::NOTIFICATIONS_INIT_V2, &mut a, &mut mem), Ok(0));
    let mut b = nq(1, nq_type::NOTIFY, 4, 1024);
    assert_eq!(call_as(&mut m, PID + 1, abi::NOTIFICATIONS_INIT_V2, &mut b, &mut mem), Ok(0));
    // PID resets core 0 only: PID + 1's ring of core 0 is gone, core 1's stays.
    let mut r = abi::NcReset { nc_map: 1, request_id: 0 };
    assert_eq!(call(&mut m, abi::NC_RESET, &mut r, &mut mem), Ok(0));
    assert!(m.chunk(a.mem_handle).is_none());
    assert!(m.chunk(b.mem_handle).is_some());
    let mut f = abi::MemFree { mem_handle: a.mem_handle };
    assert_eq!(call_as(&mut m, PID + 1, abi::MEM_FREE, &mut f, &mut mem), errno(Errno::EINVAL));
}

#[test]
fn reset4_a_ring_freed_with_mem_free_then_reset_is_a_kernel_bug() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    let mut a = nq(0, nq_type::NOTIFY, 4, 1024);
    assert_eq!(call(&mut m, abi::NOTIFICATIONS_INIT_V2, &mut a, &mut mem), Ok(0));
    let mut f = abi::MemFree { mem_handle: a.mem_handle };
    assert_eq!(call(&mut m, abi::MEM_FREE, &mut f, &mut mem), Ok(0));
    assert_logged(&m, "MEMF-4");
    let mut r = abi::NcReset { nc_map: 1, request_id: 0 };
    assert_bug(call(&mut m, abi::NC_RESET, &mut r, &mut mem), "RESET-4", "neuron_nq.c: nnq_destroy_nc");
}

#[test]
fn reset1_a_user_chunk_on_the_h2t_queue_is_freed_by_the_reset_and_a_freed_one_is_a_bug() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    let (tx, _) = alloc(&mut m, &mut mem, 4096);
    let (rx, _) = alloc(&mut m, &mut mem, 4096);
    // Sunda NC0's H2T queue is engine 32 queue 0.
    assert_eq!(dma::h2t_queue(Arch::Sunda, 0), (32, 0));
    let mut q = abi::DmaQueueInit {
        eng_id: 32,
        tx_desc_count: 64,
        rx_desc_count: 64,
        tx_handle: tx,
        rx_handle: rx,
        ..Default::default()
    };
    assert_eq!(call(&mut m, abi::DMA_QUEUE_INIT, &mut q, &mut mem), Ok(0));
    let mut r = abi::NcReset { nc_map: 1, request_id: 0 };
    assert_eq!(call(&mut m, abi::NC_RESET, &mut r, &mut mem), Ok(0));
    assert!(m.chunk(tx).is_none() && m.chunk(rx).is_none(), "the reset freed the user's chunks");
    assert_eq!(m.queue(32, 0).map(|q| q.tx.driver_ring), Some(true), "a new H2T ring");
    let mut w = abi::NcResetReady { request_id: PID, result: 0 };
    assert_eq!(call(&mut m, abi::NC_RESET_READY, &mut w, &mut mem), Ok(0));
    // Again, but the user frees the chunk first: the reset frees it twice.
    let (tx, _) = alloc(&mut m, &mut mem, 4096);
    let (rx, _) = alloc(&mut m, &mut mem, 4096);
    let mut q = abi::DmaQueueInit { tx_handle: tx, rx_handle: rx, ..q };
    assert_eq!(call(&mut m, abi::DMA_QUEUE_INIT, &mut q, &mut mem), Ok(0));
    let mut f = abi::MemFree { mem_handle: rx };
    assert_eq!(call(&mut m, abi::MEM_FREE, &mut f, &mut mem), Ok(0));
    assert_bug(call(&mut m, abi::NC_RESET, &mut r, &mut mem), "RESET-1", "neuron_ring.c: ndmar_h2t_ring_free");
}

// ---- MEM ----

#[test]
fn mem0_an_allocation_by_a_process_that_did_not_open_the_device_is_a_kernel_bug() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    let ptr = mem.base + 0x40;
    let mut a = abi::MemAllocV2Mt { size: 4096, host_memory: 1, mem_handle: ptr, ..Default::default() };
    let r = call_as(&mut m, PID + 5, abi::MEM_ALLOC_V2MT, &mut a, &mut mem);
    assert_bug(r, "MEM-0", "neuron_mempool.c: mpset_get_lifespan_head");
    assert_eq!((m.chunks.usage_of(PID + 5), mem.u64_at(ptr)), ((0, 0), 0), "no chunk kept, no handle written");
    // The opener's allocation is served.
    assert_eq!(call(&mut m, abi::MEM_ALLOC_V2MT, &mut a, &mut mem), Ok(0));
}

#[test]
fn mem8_device_memory_alignment_above_a_page_is_honoured_or_refused() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    alloc(&mut m, &mut mem, 4096);
    let ptr = mem.base + 0x40;
    let dev = |align: u64, mem_type: u32| abi::MemAllocV2Mt {
        size: 8192,
        align,
        mem_type,
        mem_handle: ptr,
        ..Default::default()
    };
    let pa_of = |m: &mut Model, mem: &mut VecMem| {
        let mut i = abi::MemGetExtendedInfo { version: 1, mem_handle: mem.u64_at(ptr), ..Default::default() };
        assert_eq!(call(m, abi::MEM_GET_EXTENDED_INFO, &mut i, mem), Ok(0));
        i.pa
    };
    for align in [1 << 16, 1 << 20] {
        assert_eq!(call(&mut m, abi::MEM_ALLOC_V2MT, &mut dev(align, 0), &mut mem), Ok(0));
        assert_eq!(pa_of(&mut m, &mut mem) % align, 0, "align {align}");
    }
    assert_eq!(call(&mut m, abi::MEM_ALLOC_V2MT, &mut dev(1 << 32, 0), &mut mem), errno(Errno::EINVAL));
    assert_logged(&m, "MEM-8: device memory align 4294967296 > INT_MAX");
    assert_eq!(call(&mut m, abi::MEM_ALLOC_V2MT, &mut dev(3 << 13, 0), &mut mem), errno(Errno::ENOMEM));
    assert_logged(&m, "MEM-8: 8192 bytes aligned to 24576");
    // Larger than the pool can align: ENOMEM, not a misaligned chunk.
    assert_eq!(call(&mut m, abi::MEM_ALLOC_V2MT, &mut dev(1 << 30, 0), &mut mem), errno(Errno::ENOMEM));
    // The contiguous scratchpad, mem_type 19, and align <= PAGE_SIZE ignore it.
    let mut a = dev(3 << 13, memory::CONTIGUOUS_SCRATCHPAD_DEVICE);
    assert_eq!(call(&mut m, abi::MEM_ALLOC_V2MT, &mut a, &mut mem), Ok(0));
    assert_eq!(call(&mut m, abi::MEM_ALLOC_V2MT, &mut dev(4096, 0), &mut mem), Ok(0));
}

#[test]
fn memf5_handles_are_reused_last_in_first_out_so_a_stale_free_frees_the_new_chunk() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    let (a, _) = alloc(&mut m, &mut mem, 4096);
    let (b, _) = alloc(&mut m, &mut mem, 4096);
    assert_eq!((a, b), (1, 2), "fresh handles count up from 1");
    let free =
        |m: &mut Model, mem: &mut VecMem, h: u64| call(m, abi::MEM_FREE, &mut abi::MemFree { mem_handle: h }, mem);
    assert_eq!(free(&mut m, &mut mem, a), Ok(0));
    assert_eq!(free(&mut m, &mut mem, b), Ok(0));
    // Without an allocation between, a second free finds no chunk, MEMF-1.
    assert_eq!(free(&mut m, &mut mem, a), errno(Errno::EINVAL));
    // Last freed, first issued.
    let (c, _) = alloc(&mut m, &mut mem, 8192);
    let (d, _) = alloc(&mut m, &mut mem, 4096);
    assert_eq!((c, d), (b, a));
    assert!(!m.log.iter().any(|l| l.text.contains("MEMF-5")), "{:?}", m.log);
    // The stale second free of `b` frees the new 8 KiB chunk, and answers 0.
    assert_eq!(free(&mut m, &mut mem, b), Ok(0));
    assert!(m.chunk(c).is_none() && m.chunk(d).is_some());
    assert_logged(&m, "MEMF-5: handle 2 was freed before and issued again");
    assert!(m.violations.is_empty(), "a note, not a violation: a correct program frees reused handles too");
}

#[test]
fn memf6_a_host_chunk_allocated_as_contiguous_scratchpad_oopses_at_its_free() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    let ptr = mem.base + 0x40;
    let mut a = abi::MemAllocV2Mt {
        size: 4096,
        host_memory: 1,
        mem_type: memory::CONTIGUOUS_SCRATCHPAD_DEVICE,
        mem_handle: ptr,
        ..Default::default()
    };
    // Accepted: mem_type is not checked against host memory...
    assert_eq!(call(&mut m, abi::MEM_ALLOC_V2MT, &mut a, &mut mem), Ok(0));
    let h = mem.u64_at(ptr);
    // ...and its free is a kernel BUG.
    let r = call(&mut m, abi::MEM_FREE, &mut abi::MemFree { mem_handle: h }, &mut mem);
    assert_bug(r, "MEMF-6", "neuron_mempool.c: mc_free");
    // A device chunk of that type, and a host chunk of another, free cleanly.
    a.host_memory = 0;
    assert_eq!(call(&mut m, abi::MEM_ALLOC_V2MT, &mut a, &mut mem), Ok(0));
    let d = mem.u64_at(ptr);
    assert_eq!(call(&mut m, abi::MEM_FREE, &mut abi::MemFree { mem_handle: d }, &mut mem), Ok(0));
    // Left to the flush, the same chunk oopses there.
    a.host_memory = 1;
    assert_eq!(call(&mut m, abi::MEM_ALLOC_V2MT, &mut a, &mut mem), Ok(0));
    let before = m.kernel_bugs().count();
    m.process_gone(PID);
    assert_eq!(m.kernel_bugs().count(), before + 1, "{:?}", m.log);
}

#[test]
fn mem5_host_memory_with_an_alignment_is_einval() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    let ptr = mem.base + 0x40;
    let mut a = abi::MemAllocV2Mt { size: 4096, align: 4096, host_memory: 1, mem_handle: ptr, ..Default::default() };
    assert_eq!(call(&mut m, abi::MEM_ALLOC_V2MT, &mut a, &mut mem), errno(Errno::EINVAL));
    assert_logged(&m, "MEM-5: align 4096 for host memory");
    // Device memory may ask for an alignment; host memory with 0 is page-aligned anyway.
    let mut a = abi::MemAllocV2Mt { size: 4096, align: 4096, mem_handle: ptr, ..Default::default() };
    assert_eq!(call(&mut m, abi::MEM_ALLOC_V2MT, &mut a, &mut mem), Ok(0));
    let (_, pa) = alloc(&mut m, &mut mem, 100);
    assert_eq!(pa % 4096, 0);
}

#[test]
fn mem3_nc_id_past_8_and_mem1_size_past_int64_are_einval() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    let ptr = mem.base + 0x40;
    let mut a = abi::MemAllocV2Mt { size: 4096, nc_id: 8, mem_handle: ptr, ..Default::default() };
    assert_eq!(call(&mut m, abi::MEM_ALLOC_V2MT, &mut a, &mut mem), errno(Errno::EINVAL));
    let mut a = abi::MemAllocV2Mt { size: 1 << 63, mem_handle: ptr, ..Default::default() };
    assert_eq!(call(&mut m, abi::MEM_ALLOC_V2MT, &mut a, &mut mem), errno(Errno::EINVAL));
    assert_logged(&m, "MEM-1");
    assert_logged(&m, "MEM-3");
}

#[test]
fn memx2_extended_info_rewrites_the_whole_struct_with_a_kernel_pointer() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    let (h, _) = alloc(&mut m, &mut mem, 4096);
    let mut i = abi::MemGetExtendedInfo { mem_handle: h, version: 1, ..Default::default() };
    assert_eq!(call(&mut m, abi::MEM_GET_EXTENDED_INFO, &mut i, &mut mem), Ok(0));
    assert_ne!(i.mem_handle, h, "the driver writes its kernel pointer, not the handle");
    assert!(i.mem_handle >= memory::SIM_KERNEL_POINTER_BASE);
    assert_eq!(i.version, 0);
    // That value is no handle.
    let mut f = abi::MemFree { mem_handle: i.mem_handle };
    assert_eq!(call(&mut m, abi::MEM_FREE, &mut f, &mut mem), errno(Errno::EINVAL));
    // MEMX-1: a bad handle: +22 and the struct untouched.
    let mut bad = abi::MemGetExtendedInfo { mem_handle: 777, version: 1, size: 5, ..Default::default() };
    assert_eq!(call(&mut m, abi::MEM_GET_EXTENDED_INFO, &mut bad, &mut mem), Ok(22));
    assert_eq!((bad.mem_handle, bad.size), (777, 5));
}

#[test]
fn memf3_freeing_a_programmed_ring_warns_and_a_correct_teardown_does_not() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    let (tx, rx) = with_queue(&mut m, &mut mem, 64);
    let mut rel = abi::DmaQueueRelease { eng_id: 0, qid: 0 };
    assert_eq!(call(&mut m, abi::DMA_QUEUE_RELEASE, &mut rel, &mut mem), Ok(0));
    // DMAR-1: release leaves the queue programmed: freeing its ring now warns.
    let mut f = abi::MemFree { mem_handle: tx };
    assert_eq!(call(&mut m, abi::MEM_FREE, &mut f, &mut mem), Ok(0));
    assert!(m.violations.iter().any(|v| v.to_string().contains("MEMF-3: chunk")), "{:?}", m.log);
    // A correct program leaves the ring chunks to the flush: no warning at all.
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    let (tx, rx2) = with_queue(&mut m, &mut mem, 64);
    let (buf, _) = alloc(&mut m, &mut mem, 4096);
    let mut f = abi::MemFree { mem_handle: buf };
    assert_eq!(call(&mut m, abi::MEM_FREE, &mut f, &mut mem), Ok(0));
    assert_eq!(call(&mut m, abi::DMA_QUEUE_RELEASE, &mut rel, &mut mem), Ok(0));
    m.process_gone(PID);
    assert_eq!(m.violations, vec![], "{:?}", m.log);
    // FLUSH-5: the process's chunks are freed; FLUSH-2: the queue is on the dummy ring.
    assert!(m.chunk(tx).is_none() && m.chunk(rx2).is_none());
    let q = *m.queue(0, 0).unwrap();
    assert_eq!((q.tx.size, q.tx.chunk, q.tx.driver_ring), (dma::DUMMY_RING_DESCS, None, true));
    let _ = rx;
}

#[test]
fn flush2_re_points_only_the_engines_below_dma_eng_per_nd_and_not_the_nx_queues() {
    for (arch, nx, past) in [(Arch::Sunda, (10, 14), (33, 1)), (Arch::Cayman, (8, 14), (128, 2))] {
        let (mut m, mut mem) = (model(arch, 2), VecMem::new());
        with_queue_at(&mut m, &mut mem, 0, 0, 64);
        let kept =
            [with_queue_at(&mut m, &mut mem, nx.0, nx.1, 64), with_queue_at(&mut m, &mut mem, past.0, past.1, 64)];
        // Queue 14 of an engine the NX cores do not reserve is re-pointed.
        let free_q14 = if arch == Arch::Sunda { 11 } else { 5 };
        with_queue_at(&mut m, &mut mem, free_q14, 14, 64);
        m.process_gone(PID);
        for (e, q) in [(0, 0), (free_q14, 14)] {
            let q = *m.queue(e, q).unwrap();
            assert_eq!((q.tx.size, q.tx.chunk, q.tx.driver_ring), (dma::DUMMY_RING_DESCS, None, true), "{arch:?}");
        }
        for ((e, q), (tx, rx)) in [nx, past].into_iter().zip(kept) {
            let q = *m.queue(e, q).unwrap();
            assert_eq!((q.tx.chunk, q.rx.chunk), (Some(tx), Some(rx)), "{arch:?}: ({e}, {q:?})");
            for h in [tx, rx] {
                let needle = format!("FLUSH-5: chunk {h} freed while DMA queue (engine {e}");
                assert!(m.violations.iter().any(|v| v.to_string().contains(&needle)), "{arch:?}: {:?}", m.log);
            }
        }
        assert_eq!(m.violations.len(), 4, "{arch:?}: {:?}", m.log);
        assert!(dma::is_nx_ring(arch, 16 + nx.0, 14) && !dma::is_nx_ring(arch, nx.0, 15));
    }
}

#[test]
fn flush2_5_a_gone_process_leaves_other_processes_chunks_and_rings() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    m.open(PID + 1);
    let (mine, _) = alloc(&mut m, &mut mem, 4096);
    let ptr = mem.base + 0x100;
    let mut a = abi::MemAllocV2Mt { size: 4096, host_memory: 1, mem_handle: ptr, ..Default::default() };
    assert_eq!(call_as(&mut m, PID + 1, abi::MEM_ALLOC_V2MT, &mut a, &mut mem), Ok(0));
    let theirs = mem.u64_at(ptr);
    let mut r = nq(0, nq_type::NOTIFY, 4, 1024);
    assert_eq!(call(&mut m, abi::NOTIFICATIONS_INIT_V2, &mut r, &mut mem), Ok(0));
    m.process_gone(PID);
    assert!(m.chunk(mine).is_none());
    assert!(m.chunk(theirs).is_some());
    assert!(m.chunk(r.mem_handle).is_some(), "a notification ring lives as long as the device");
    assert!(!m.attached(PID) && m.attached(PID + 1));
}

// ---- DMA queues ----

#[test]
fn dmaq11_a_queue_on_an_engine_the_driver_never_initialised_is_einval() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    // Sunda: engines 0..=33, 2 cores x 16 and D2H/H2D; 34 has no queues.
    let mut q = abi::DmaQueueInit { eng_id: 34, tx_desc_count: 64, rx_desc_count: 64, ..Default::default() };
    assert_eq!(call(&mut m, abi::DMA_QUEUE_INIT, &mut q, &mut mem), errno(Errno::EINVAL));
    assert_logged(&m, "DMAQ-11: TX: the driver never initialised this engine");
    // DMAQ-5: the queue is the caller's even so.
    assert_eq!(m.queue(34, 0).map(|q| q.owner), Some(PID));
    let mut q = abi::DmaQueueInit { eng_id: 33, ..q };
    assert_eq!(call(&mut m, abi::DMA_QUEUE_INIT, &mut q, &mut mem), Ok(0));
    // Cayman initialises all 132.
    let (mut m3, mut mem3) = (model(Arch::Cayman, 2), VecMem::new());
    let mut q = abi::DmaQueueInit { eng_id: 131, qid: 5, tx_desc_count: 64, rx_desc_count: 64, ..Default::default() };
    assert_eq!(call(&mut m3, abi::DMA_QUEUE_INIT, &mut q, &mut mem3), Ok(0));
}

#[test]
fn copy2_copy_start_on_an_engine_the_driver_never_initialised_is_eperm() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    let mut c = abi::DmaQueueCopyStart { eng_id: 40, qid: 0, tx_desc_count: 1, rx_desc_count: 1 };
    assert_eq!(call(&mut m, abi::DMA_QUEUE_COPY_START, &mut c, &mut mem), errno(Errno::EPERM));
    assert_logged(&m, "COPY-2: engine 40 was never initialised");
    assert_eq!(m.kernel_bugs().count(), 0);
}

#[test]
fn ack1_2_bounds_ack3_a_queue_not_a_power_of_two_is_a_kernel_bug() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    let mut a = abi::DmaAckCompleted { eng_id: 132, qid: 0, count: 1 };
    assert_eq!(call(&mut m, abi::DMA_ACK_COMPLETED, &mut a, &mut mem), errno(Errno::EINVAL));
    let mut a = abi::DmaAckCompleted { eng_id: 0, qid: 16, count: 1 };
    assert_eq!(call(&mut m, abi::DMA_ACK_COMPLETED, &mut a, &mut mem), errno(Errno::EINVAL));
    let mut a = abi::DmaAckCompleted { eng_id: 40, qid: 0, count: 1 };
    assert_eq!(call(&mut m, abi::DMA_ACK_COMPLETED, &mut a, &mut mem), errno(Errno::EINVAL));
    assert_logged(&m, "ACK-2: qid 0 >= the engine's num_of_queues (0)");
    // A queue never initialised has size 0: a power of two for the driver's macro.
    let mut a = abi::DmaAckCompleted { eng_id: 0, qid: 3, count: 1 };
    assert_eq!(call(&mut m, abi::DMA_ACK_COMPLETED, &mut a, &mut mem), Ok(0));
    // ACK-5: 64 descriptors: fine.
    with_queue(&mut m, &mut mem, 64);
    let mut a = abi::DmaAckCompleted { eng_id: 0, qid: 0, count: 70 };
    assert_eq!(call(&mut m, abi::DMA_ACK_COMPLETED, &mut a, &mut mem), Ok(0));
    assert_eq!(m.queue(0, 0).unwrap().acked, 6);
    // 48 descriptors, a multiple of 16 but not a power of two: BUG.
    let mut q = abi::DmaQueueInit { qid: 1, tx_desc_count: 64, rx_desc_count: 48, ..Default::default() };
    assert_eq!(call(&mut m, abi::DMA_QUEUE_INIT, &mut q, &mut mem), Ok(0));
    let mut a = abi::DmaAckCompleted { eng_id: 0, qid: 1, count: 1 };
    assert_bug(call(&mut m, abi::DMA_ACK_COMPLETED, &mut a, &mut mem), "ACK-3", "udma/udma.h");
    let mut q = abi::DmaQueueInit { qid: 2, tx_desc_count: 48, rx_desc_count: 64, ..Default::default() };
    assert_eq!(call(&mut m, abi::DMA_QUEUE_INIT, &mut q, &mut mem), Ok(0));
    let mut a = abi::DmaAckCompleted { eng_id: 0, qid: 2, count: 1 };
    assert_bug(call(&mut m, abi::DMA_ACK_COMPLETED, &mut a, &mut mem), "ACK-4", "udma/udma.h");
}

/// Work at scale: one copy start of 65,536 BDs over 15,000 chunks. Each BD's
/// buffer is found by one `O(log n)` interval lookup: the test counts them.
#[test]
fn copy8_65536_bds_over_15000_chunks_cost_one_lookup_each() {
    let (mut m, mut mem) = (model_with_pool(Arch::Sunda, 2, 64 << 20), VecMem::new());
    let n: u32 = 1 << 16;
    let (tx, _) = alloc(&mut m, &mut mem, u64::from(n) * DESC_BYTES);
    let (rx, _) = alloc(&mut m, &mut mem, u64::from(n) * DESC_BYTES);
    let mut pas = Vec::with_capacity(15_000);
    for _ in 0..15_000 {
        pas.push(alloc(&mut m, &mut mem, 4096).1);
    }
    assert!(m.chunks.len() >= 15_002);
    // Rings of n descriptors: copy n - 1, since a copy start may not exceed the ring.
    let mut q = abi::DmaQueueInit {
        qid: 3,
        tx_desc_count: n,
        rx_desc_count: n,
        tx_handle: tx,
        rx_handle: rx,
        ..Default::default()
    };
    assert_eq!(call(&mut m, abi::DMA_QUEUE_INIT, &mut q, &mut mem), Ok(0));
    let count = n - 1;
    for i in 0..u64::from(count) {
        let c = pas[(i % 15_000) as usize];
        put_bd(&m, tx, i, 32, 1, c);
        put_bd(&m, rx, i, 32, 1, c + 2048);
    }
    let before = m.chunks.lookups;
    let t0 = std::time::Instant::now();
    let mut c = abi::DmaQueueCopyStart { eng_id: 0, qid: 3, tx_desc_count: count, rx_desc_count: count };
    assert_eq!(call(&mut m, abi::DMA_QUEUE_COPY_START, &mut c, &mut mem), Ok(0));
    eprintln!("copy start of {count} BDs over 15000 chunks: {:?} (a measurement)", t0.elapsed());
    assert_eq!(m.dma_errors, 0, "{:?}", m.log.last());
    assert_eq!(m.dma_bytes, u64::from(count) * 32);
    assert_eq!(m.chunks.lookups - before, 2 * u64::from(count), "one interval lookup per BD");
    // Again from the ring's start, on pages the first copy touched: the first
    // copy's time includes the kernel's first-touch faults of the sparse file.
    assert_eq!(call(&mut m, abi::DMA_QUEUE_INIT, &mut q, &mut mem), Ok(0));
    let t1 = std::time::Instant::now();
    assert_eq!(call(&mut m, abi::DMA_QUEUE_COPY_START, &mut c, &mut mem), Ok(0));
    eprintln!("again, pages touched: {:?} (a measurement)", t1.elapsed());
    assert_eq!((m.dma_errors, m.dma_bytes), (0, 2 * u64::from(count) * 32));
}

// ---- NQ ----

#[test]
fn nq6_a_forced_reinit_of_a_ring_freed_with_mem_free_is_a_kernel_bug() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    let mut a = nq(0, nq_type::NOTIFY, 12, 4096);
    assert_eq!(call(&mut m, abi::NOTIFICATIONS_INIT_V2, &mut a, &mut mem), Ok(0));
    let mut f = abi::MemFree { mem_handle: a.mem_handle };
    assert_eq!(call(&mut m, abi::MEM_FREE, &mut f, &mut mem), Ok(0));
    let mut r = abi::NotificationsInitWithReallocV2 {
        nq_type: nq_type::NOTIFY,
        engine_index: 12,
        size: 4096,
        on_host_memory: 1,
        force_alloc_mem: 1,
        ..Default::default()
    };
    assert_bug(
        call(&mut m, abi::NOTIFICATIONS_INIT_WITH_REALLOC_V2, &mut r, &mut mem),
        "NQ-6",
        "neuron_nq.c: nnq_init",
    );
}

#[test]
fn nqi1_notifications_queue_info_is_always_eperm() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    let mut a = nq(0, nq_type::NOTIFY, 4, 1024);
    assert_eq!(call(&mut m, abi::NOTIFICATIONS_INIT_V2, &mut a, &mut mem), Ok(0));
    let mut i = abi::NotificationsQueueInfo { nq_type: 1, engine_index: 4, head: 7, ..Default::default() };
    assert_eq!(call(&mut m, abi::NOTIFICATIONS_QUEUE_INFO, &mut i, &mut mem), errno(Errno::EPERM));
    assert_eq!(i.head, 7, "nothing written");
}

// ---- BAR ----

fn bar_n(m: &mut Model, mem: &mut VecMem, read: bool, bar: u32, addrs: &[u64], count: u32) -> Answer {
    let (a_ptr, d_ptr) = (mem.base + 0x100, mem.base + 0x800);
    let ab: Vec<u8> = addrs.iter().flat_map(|a| a.to_le_bytes()).collect();
    mem.put(a_ptr, &ab);
    let w = abi::BarRwWire { bar, address: a_ptr, data: d_ptr, count, ..Default::default() };
    let mut b = w.as_bytes().to_vec();
    let code = if read { abi::BAR_READ.code() } else { abi::BAR_WRITE.code() };
    m.handle(PID, code, &mut b, mem)
}

#[test]
fn bar4_bar2_with_count_2_reads_past_the_one_address_copied_a_kernel_bug() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    let head = simabi::SIM_BAR0_PA + nrt_core::arch::nq_head_register(Arch::Sunda, 0, 4).unwrap();
    assert_eq!(bar_n(&mut m, &mut mem, true, 2, &[head, head], 1), Ok(0));
    assert_bug(bar_n(&mut m, &mut mem, true, 2, &[head, head], 2), "BAR-4", "neuron_cdev.c: ncdev_bar_rw");
    // 256 is BAR0 as a u8, with one address copied: the same BUG.
    assert_bug(bar_n(&mut m, &mut mem, true, 256, &[head, head], 2), "BAR-4", "neuron_cdev.c");
    assert_bug(bar_n(&mut m, &mut mem, false, 256, &[head, head], 2), "BARW-3", "neuron_cdev.c");
}

#[test]
fn bar5_other_bars_are_einval() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    let head = simabi::SIM_BAR0_PA + nrt_core::arch::nq_head_register(Arch::Sunda, 0, 4).unwrap();
    assert_eq!(bar_n(&mut m, &mut mem, true, 4, &[head], 1), errno(Errno::EINVAL));
    assert_eq!(bar_n(&mut m, &mut mem, false, 2, &[head], 1), errno(Errno::EINVAL));
    assert_logged(&m, "BAR-5");
    assert_logged(&m, "BARW-3");
}

// ---- SIM ----

#[test]
fn sim1_the_hint_query_answers_the_device_and_its_host_trigger() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    m.file().line(Line::Hbm, 1).unwrap().store(1201, Ordering::Release);
    m.file().mark_ready(0x1234_5678_9ABC);
    let mut h = simabi::SimHints { size: 208, ..Default::default() };
    assert_eq!(call(&mut m, simabi::SIM_HINTS, &mut h, &mut mem), Ok(0));
    assert_eq!(
        (h.magic, h.version, h.model_cores, h.ring_entries, h.device_cores),
        (simabi::SIM_HINTS_MAGIC, 2, 2, 64, 2)
    );
    assert_eq!(h.host_trigger, simabi::xt_local_reg(Arch::Sunda) + 0x15A0);
    assert_eq!(h.host_trigger, 0x1000_35A0, "top-SP 0's window past its 0x2000 bytes of semaphores");
    assert_eq!(h.clock_origin_ns, 0x1234_5678_9ABC);
    assert_eq!(h.heartbeat_ns, m.file().heartbeat_ns());
    assert_eq!(h.lines[1][Line::Hbm as usize], 1201);
    assert_eq!(h.lines[0][Line::Hbm as usize], 0);
    let mut bad = simabi::SimHints { size: 8, ..Default::default() };
    assert_eq!(call(&mut m, simabi::SIM_HINTS, &mut bad, &mut mem), errno(Errno::EINVAL));
    assert_eq!(bad.magic, 0);
    // Playing a real driver, the query is an unknown misc request: EINVAL.
    let (m2, mut mem2) = (model(Arch::Sunda, 2), VecMem::new());
    let mut m2 = m2.without_hints();
    let mut h2 = simabi::SimHints { size: 208, ..Default::default() };
    assert_eq!(call(&mut m2, simabi::SIM_HINTS, &mut h2, &mut mem2), errno(Errno::EINVAL));
    assert_eq!(h2.magic, 0);
}

// ---- DS ----

#[test]
fn ds5_the_last_openers_release_clears_every_entry() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    // A process that never opened the device, a forked child, gets an entry,
    // since ACQUIRE is not gated, and has no flush of its own to release it.
    let mut d = abi::NeuronDsInfo::default();
    assert_eq!(call_as(&mut m, PID + 7, abi::ACQUIRE_NEURON_DS, &mut d, &mut mem), Ok(0));
    m.open(PID + 1);
    m.process_gone(PID);
    assert_eq!(m.datastore().entries[0].pid, PID + 7, "another process still has the device open");
    m.process_gone(PID + 1);
    assert_eq!(m.datastore().entries[0].pid, 0, "the device's last release clears every entry");
    m.open(PID + 2);
    let mut mon = abi::NeuronDsInfo { pid: (PID + 7) as i32, ..Default::default() };
    assert_eq!(call_as(&mut m, PID + 2, abi::ACQUIRE_NEURON_DS, &mut mon, &mut mem), errno(Errno::ENOENT));
}

#[test]
fn ds5_the_clear_reticks_all_sixteen_entries_in_slot_order_and_zeroes_them() {
    use std::os::unix::fs::FileExt;
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    let mut d = abi::NeuronDsInfo::default();
    assert_eq!(call(&mut m, abi::ACQUIRE_NEURON_DS, &mut d, &mut mem), Ok(0));
    m.file().file().write_all_at(&[0xAB; 8], d.mmap_offset + 256).unwrap();
    m.process_gone(PID);
    let ticks: Vec<u64> = m.datastore().entries.iter().map(|e| e.clear_tick).collect();
    assert!(ticks.iter().all(|t| *t != 0), "every slot, in use or not: {ticks:?}");
    assert!(ticks.windows(2).all(|w| w[0] < w[1]), "in slot order: {ticks:?}");
    let mut b = [0xFFu8; 8];
    m.file().file().read_exact_at(&mut b, d.mmap_offset + 256).unwrap();
    assert_eq!(b, [0; 8], "zeroed");
    // The next process takes the oldest tick: slot 0.
    m.open(PID + 3);
    let mut d2 = abi::NeuronDsInfo::default();
    assert_eq!(call_as(&mut m, PID + 3, abi::ACQUIRE_NEURON_DS, &mut d2, &mut mem), Ok(0));
    assert_eq!(m.datastore().entries[0].pid, PID + 3);
    assert_eq!(d2.mmap_offset, d.mmap_offset);
}

#[test]
fn ds2_4_6_a_monitor_reads_the_owners_memory_until_the_owner_goes_and_only_pid_0_creates() {
    use std::os::unix::fs::FileExt;
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    m.open(PID + 1);
    // DS-2: naming one's own pid creates nothing.
    let mut own = abi::NeuronDsInfo { pid: PID as i32, ..Default::default() };
    assert_eq!(call(&mut m, abi::ACQUIRE_NEURON_DS, &mut own, &mut mem), errno(Errno::ENOENT));
    let mut neg = abi::NeuronDsInfo { pid: -1, ..Default::default() };
    assert_eq!(call(&mut m, abi::ACQUIRE_NEURON_DS, &mut neg, &mut mem), errno(Errno::ENOENT));
    let mut d = abi::NeuronDsInfo::default();
    assert_eq!(call(&mut m, abi::ACQUIRE_NEURON_DS, &mut d, &mut mem), Ok(0));
    // DS-6: the whole chunk is mappable at the offset, nothing longer.
    assert!(m.mmap_allowed(d.mmap_offset, u64::from(d.size)));
    assert!(!m.mmap_allowed(d.mmap_offset, u64::from(d.size) + 4096));
    // The owner writes a counter; a monitor's acquire hands the same memory.
    m.file().file().write_all_at(&7u64.to_le_bytes(), d.mmap_offset + 264).unwrap();
    let mut mon = abi::NeuronDsInfo { pid: PID as i32, ..Default::default() };
    assert_eq!(call_as(&mut m, PID + 1, abi::ACQUIRE_NEURON_DS, &mut mon, &mut mem), Ok(0));
    assert_eq!(mon.mmap_offset, d.mmap_offset);
    let mut b = [0u8; 8];
    m.file().file().read_exact_at(&mut b, mon.mmap_offset + 264).unwrap();
    assert_eq!(u64::from_le_bytes(b), 7);
    // DS-4: the owner goes; the monitor's memory reads zeros and its pid is gone.
    m.process_gone(PID);
    m.file().file().read_exact_at(&mut b, mon.mmap_offset + 264).unwrap();
    assert_eq!(u64::from_le_bytes(b), 0);
    assert_eq!(call_as(&mut m, PID + 1, abi::ACQUIRE_NEURON_DS, &mut mon, &mut mem), errno(Errno::ENOENT));
}

#[test]
fn ds1_2_3_the_datastore_of_a_process_and_a_monitor() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    m.open(PID + 1);
    let mut d = abi::NeuronDsInfo::default();
    assert_eq!(call(&mut m, abi::ACQUIRE_NEURON_DS, &mut d, &mut mem), Ok(0));
    assert_eq!(d.size, abi::NEURON_DATASTORE_SIZE);
    assert!(m.mmap_allowed(d.mmap_offset, u64::from(d.size)));
    let mine = d.mmap_offset;
    // Again: the same one.
    let mut d2 = abi::NeuronDsInfo::default();
    assert_eq!(call(&mut m, abi::ACQUIRE_NEURON_DS, &mut d2, &mut mem), Ok(0));
    assert_eq!(d2.mmap_offset, mine);
    // A monitor: PID's by pid; an unknown pid: ENOENT.
    let mut mon = abi::NeuronDsInfo { pid: PID as i32, ..Default::default() };
    assert_eq!(call_as(&mut m, PID + 1, abi::ACQUIRE_NEURON_DS, &mut mon, &mut mem), Ok(0));
    assert_eq!(mon.mmap_offset, mine);
    let mut none = abi::NeuronDsInfo { pid: 999, ..Default::default() };
    assert_eq!(call(&mut m, abi::ACQUIRE_NEURON_DS, &mut none, &mut mem), errno(Errno::ENOENT));
    // DS-3: only the owner's release counts.
    assert_eq!(call_as(&mut m, PID + 1, abi::RELEASE_NEURON_DS, &mut mon, &mut mem), Ok(0));
    assert_eq!(m.datastore().entries[0].pid, PID);
    assert_eq!(call(&mut m, abi::RELEASE_NEURON_DS, &mut abi::NeuronDsInfo::default(), &mut mem), Ok(0));
    assert_eq!(m.datastore().entries[0].pid, 0);
    assert_eq!(call_as(&mut m, PID + 1, abi::ACQUIRE_NEURON_DS, &mut mon, &mut mem), errno(Errno::ENOENT));
}

#[test]
fn ds1_sixteen_processes_then_enomem() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    for p in 0..16 {
        assert_eq!(
            call_as(&mut m, 100 + p, abi::ACQUIRE_NEURON_DS, &mut abi::NeuronDsInfo::default(), &mut mem),
            Ok(0)
        );
    }
    assert_eq!(
        call_as(&mut m, 200, abi::ACQUIRE_NEURON_DS, &mut abi::NeuronDsInfo::default(), &mut mem),
        errno(Errno::ENOMEM)
    );
    // DS-4: a gone process's entry is cleared and taken again.
    m.open(105);
    m.process_gone(105);
    assert_eq!(call_as(&mut m, 200, abi::ACQUIRE_NEURON_DS, &mut abi::NeuronDsInfo::default(), &mut mem), Ok(0));
}

// ---- APPS ----

#[test]
fn apps1_the_attached_processes_their_locked_cores_and_memory() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    m.open(PID + 1);
    switch_in(&mut m, &mut mem, PID + 1, 1, 0x33);
    let (_, _) = alloc(&mut m, &mut mem, 8192);
    let flags = abi::APP_INFO_PID_NC_LOCK_INFO | abi::APP_INFO_PID_MEM_USAGE;
    let h = abi::AppsInfoHeader { apps_info_flags: flags, capacity: 16, ..Default::default() };
    let (r, bytes) = m.apps_info(PID, &h);
    assert_eq!(r, Ok(0));
    let (hdr, rest) = abi::AppsInfoHeader::read_from_prefix(&bytes).unwrap();
    assert_eq!(hdr.size, 2);
    assert_eq!(rest.len(), 2 * core::mem::size_of::<abi::AppInfo>());
    let e: Vec<abi::AppInfo> = rest
        .chunks_exact(core::mem::size_of::<abi::AppInfo>())
        .map(|c| abi::AppInfo::read_from_bytes(c).unwrap())
        .collect();
    assert_eq!((e[0].pid, e[0].nc_lock_map, e[0].host_mem_size), (PID as i32, 0, 8192));
    assert_eq!((e[1].pid, e[1].nc_lock_map, e[1].uuid_data[1]), ((PID + 1) as i32, 0b10, uuid(0x33)));
    // capacity bounds the entries; without the flags, only pids.
    let (_, bytes) = m.apps_info(PID, &abi::AppsInfoHeader { capacity: 1, ..Default::default() });
    let (hdr, rest) = abi::AppsInfoHeader::read_from_prefix(&bytes).unwrap();
    assert_eq!((hdr.size, rest.len()), (1, core::mem::size_of::<abi::AppInfo>()));
    assert_eq!(abi::AppInfo::read_from_bytes(rest).unwrap().host_mem_size, 0);
}

// ---- The rows left: DMAQ-6, QST-1/2/3, BAR-7, BARW-2, FLUSH-1 ----

#[test]
fn dmaq6_a_completion_ring_smaller_than_the_rx_count_is_einval() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    let (c, _) = alloc(&mut m, &mut mem, 4096);
    // 4096 bytes hold 256 descriptors: 272 do not fit, EINVAL; 256 pass to DMAQ-10, EPERM.
    let mut q = abi::DmaQueueInit { tx_desc_count: 64, rx_desc_count: 272, rxc_handle: c, ..Default::default() };
    assert_eq!(call(&mut m, abi::DMA_QUEUE_INIT, &mut q, &mut mem), errno(Errno::EINVAL));
    assert_logged(&m, "DMAQ-6");
    let mut q = abi::DmaQueueInit { rx_desc_count: 256, ..q };
    assert_eq!(call(&mut m, abi::DMA_QUEUE_INIT, &mut q, &mut mem), errno(Errno::EPERM));
    assert_logged(&m, "DMAQ-10");
}

#[test]
fn qst1_3_queue_state_bounds_and_an_unwritable_pointer() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    let (tp, rp) = (mem.base + 0x200, mem.base + 0x300);
    let mut st = abi::DmaQueueGetState { eng_id: 132, qid: 0, tx: tp, rx: rp };
    assert_eq!(call(&mut m, abi::DMA_QUEUE_GET_STATE, &mut st, &mut mem), errno(Errno::EINVAL));
    let mut st = abi::DmaQueueGetState { eng_id: 0, qid: 16, tx: tp, rx: rp };
    assert_eq!(call(&mut m, abi::DMA_QUEUE_GET_STATE, &mut st, &mut mem), errno(Errno::EINVAL));
    let mut st = abi::DmaQueueGetState { eng_id: 0, qid: 0, tx: tp, rx: 8 };
    assert_eq!(call(&mut m, abi::DMA_QUEUE_GET_STATE, &mut st, &mut mem), Ok(48));
    assert_logged(&m, "QST-3");
}

#[test]
fn bar7_barw2_arrays_that_cannot_be_copied_are_positive_counts() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    let head = simabi::SIM_BAR0_PA + nrt_core::arch::nq_head_register(Arch::Sunda, 0, 4).unwrap();
    mem.put(mem.base + 0x100, &head.to_le_bytes());
    for (code, id) in [(abi::BAR_READ.code(), "BAR-7"), (abi::BAR_WRITE.code(), "BARW-2")] {
        let w = abi::BarRwWire { bar: 0, address: mem.base + 0x100, data: 16, count: 1, ..Default::default() };
        let mut b = w.as_bytes().to_vec();
        assert_eq!(m.handle(PID, code, &mut b, &mut mem), Ok(4), "{id}");
        assert_logged(&m, id);
    }
}

#[test]
fn flush1_a_gone_process_s_pending_reset_is_forgotten() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    let mut r = abi::NcReset { nc_map: 1, request_id: 0 };
    assert_eq!(call(&mut m, abi::NC_RESET, &mut r, &mut mem), Ok(0));
    m.process_gone(PID);
    m.open(PID);
    // A new process with the same pid is not refused with +1.
    assert_eq!(call(&mut m, abi::NC_RESET, &mut r, &mut mem), Ok(0));
}

#[test]
fn gen1_a_write_only_open_does_not_attach_and_opens_are_counted() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    // A "free access" O_WRONLY descriptor is not an attach in ncdev_open.
    m.open_free_access(PID + 1);
    assert!(!m.attached(PID + 1));
    let mut q = abi::DmaQueueInit { tx_desc_count: 64, rx_desc_count: 64, ..Default::default() };
    assert_eq!(call_as(&mut m, PID + 1, abi::DMA_QUEUE_INIT, &mut q, &mut mem), errno(Errno::EACCES));
    m.open(PID + 1);
    assert!(m.attached(PID + 1));
    assert_eq!(call_as(&mut m, PID + 1, abi::DMA_QUEUE_INIT, &mut q, &mut mem), Ok(0));
    // The summary's count: every open made, PID's and PID + 1's two.
    assert_eq!(m.opens(), 3);
}

/// MAP-1..3: the logical-to-physical core map: `ENOTSUPP` on v2; more than
/// 128 entries or a version but V0 `EINVAL`; on v3 the driver's table, as
/// many entries as asked, written with their count at the map's address; a
/// map the caller cannot take gets copy_to_user's positive count.
#[test]
fn the_core_map_is_the_drivers_on_v3_and_refused_on_v2() {
    let ask = |m: &mut Model, mem: &mut VecMem, max: u32, version: u32, map: u64| {
        let mut a = abi::GetNcMap { map, max_map_entries: max, mapping_version: version };
        call(m, abi::GET_LOGICAL_TO_PHYSICAL_NC_MAP, &mut a, mem)
    };
    let (mut m2, mut mem2) = (model(Arch::Sunda, 2), VecMem::new());
    let base2 = mem2.base;
    assert_eq!(ask(&mut m2, &mut mem2, 8, 0, base2), errno(Errno::ENOTSUPP));
    assert_eq!(mem2.bytes[..4], [0; 4], "nothing written on v2");
    let (mut m, mut mem) = (model(Arch::Cayman, 2), VecMem::new());
    let base = mem.base;
    assert_eq!(ask(&mut m, &mut mem, 129, 0, base), errno(Errno::EINVAL));
    assert_eq!(ask(&mut m, &mut mem, 8, 1, base), errno(Errno::EINVAL));
    assert_eq!(mem.bytes[..4], [0; 4], "nothing written when refused");
    let word = |mem: &VecMem, i: usize| u32::from_le_bytes(mem.bytes[4 * i..4 * i + 4].try_into().unwrap());
    assert_eq!(ask(&mut m, &mut mem, 128, 0, base), Ok(0));
    assert_eq!(word(&mem, 0), 128);
    let device0: Vec<u32> = (0..8).map(|k| word(&mem, 2 + 2 * k)).collect();
    assert_eq!(device0, [4, 5, 6, 7, 2, 3, 0, 1], "device 0's cores of logical 0-7 (nc_mapping_v0_seng_swap)");
    for k in 0..128u32 {
        let (d, nc) = (word(&mem, 1 + 2 * k as usize), word(&mem, 2 + 2 * k as usize));
        assert_eq!(Some((d, nc as u8)), nrt_abi::devmap::logical_to_physical(Arch::Cayman, k), "entry {k}");
    }
    mem.bytes.fill(0xEE);
    assert_eq!(ask(&mut m, &mut mem, 2, 0, base), Ok(0));
    assert_eq!((word(&mem, 0), word(&mem, 1), word(&mem, 2), word(&mem, 3)), (2, 0, 4, 0));
    assert_eq!(word(&mem, 5), 0xEEEE_EEEE, "only the header and the entries asked are written");
    assert_eq!(ask(&mut m, &mut mem, 8, 0, base + 0x1000 - 8), Ok(4 + 8 * 8), "the bytes not copied, positive");
}

/// A chunk of `size` bytes of `host` and `mem_type` allocated by `pid`: its handle and file offset.
fn chunk_at(m: &mut Model, mem: &mut VecMem, pid: u32, size: u64, host: u32, mem_type: u32) -> (u64, u64) {
    let ptr = mem.base + 0x80;
    let mut a = abi::MemAllocV2Mt { size, host_memory: host, mem_type, mem_handle: ptr, ..Default::default() };
    assert_eq!(call_as(m, pid, abi::MEM_ALLOC_V2MT, &mut a, mem), Ok(0));
    let h = mem.u64_at(ptr);
    (h, m.chunk(h).unwrap().offset)
}

fn mmap_rw(offset: u64, len: u64) -> MmapCall {
    MmapCall { offset, len, prot: (libc::PROT_READ | libc::PROT_WRITE) as u64, flags: libc::MAP_SHARED as u64 }
}

/// MMAP-3..5: only a whole chunk maps, from its start; part of one, its
/// middle, two of them or an offset in no chunk is EPERM, with no special
/// resource and no CAP_SYS_RAWIO. The middle with the chunk's length, which
/// the driver maps from the chunk's start: refused, and a conformance violation.
#[test]
fn mmap3_4_5_only_a_whole_chunk_from_its_start_maps() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    let (_, a) = chunk_at(&mut m, &mut mem, PID, 3 * 4096, 1, 0);
    let (_, b) = chunk_at(&mut m, &mut mem, PID, 4096, 0, 0);
    assert_eq!(b, a + 3 * 4096, "the pool puts the second chunk right after the first");
    let rw = OpenMode::RDWR;
    assert_eq!(m.mmap(PID, mmap_rw(a, 3 * 4096), rw), Ok(()));
    // A length in the chunk's last page still maps the whole chunk: the VMA is whole pages.
    assert_eq!(m.mmap(PID, mmap_rw(a, 2 * 4096 + 1), rw), Ok(()));
    assert_eq!(m.mmap(PID, mmap_rw(b, 4096), rw), Ok(()));
    let eperm = Err(Refusal::Errno(Errno::EPERM));
    for (what, off, len) in [
        ("part", a, 4096),
        ("middle", a + 4096, 4096),
        ("across two", a, 4 * 4096),
        ("offset 0", 0, 4096),
        ("past the pool", b + 4096, 4096),
    ] {
        assert_eq!(m.mmap(PID, mmap_rw(off, len), rw), eperm, "{what}");
    }
    assert_logged(&m, "MMAP-4: 4096 bytes at");
    assert_logged(&m, "MMAP-3: offset 0x0 is in no chunk");
    assert_eq!(m.conformance_violations().count(), 0);
    // The chunk's length from its middle: the driver would map the chunk's start.
    assert_eq!(m.mmap(PID, mmap_rw(a + 4096, 3 * 4096), rw), eperm);
    assert_eq!(m.conformance_violations().count(), 1);
    assert_logged(&m, "MMAP-5: offset");
    // Another process maps the chunk too: the driver only drops its write access.
    assert_eq!(m.mmap(PID + 1, mmap_rw(a, 3 * 4096), rw), Ok(()));
    assert!(m.mmap_allowed(a, 3 * 4096) && !m.mmap_allowed(a, 4096));
}

/// MMAP-1, MMAP-2: the kernel's own checks come first: a misaligned offset,
/// 0 bytes or no mapping type is EINVAL; a descriptor not open for reading,
/// or a shared writable mapping of one not open for writing, EACCES.
#[test]
fn mmap1_2_the_kernels_checks_come_before_the_drivers() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    let (_, a) = chunk_at(&mut m, &mut mem, PID, 4096, 1, 0);
    let rw = OpenMode::RDWR;
    let einval = Err(Refusal::Errno(Errno::EINVAL));
    assert_eq!(m.mmap(PID, mmap_rw(a + 8, 4096), rw), einval);
    assert_eq!(m.mmap(PID, mmap_rw(0, 0), rw), einval, "before the driver's EPERM");
    assert_eq!(m.mmap(PID, MmapCall { flags: 0, ..mmap_rw(a, 4096) }, rw), einval);
    let eacces = Err(Refusal::Errno(Errno::EACCES));
    let ro = OpenMode::from_flags(libc::O_RDONLY as u64);
    let wo = OpenMode::from_flags((libc::O_WRONLY | libc::O_CLOEXEC) as u64);
    assert_eq!(m.mmap(PID, mmap_rw(a, 4096), ro), eacces);
    assert_eq!(m.mmap(PID, MmapCall { prot: libc::PROT_READ as u64, ..mmap_rw(a, 4096) }, ro), Ok(()));
    assert_eq!(m.mmap(PID, MmapCall { flags: libc::MAP_PRIVATE as u64, ..mmap_rw(a, 4096) }, ro), Ok(()));
    assert_eq!(m.mmap(PID, MmapCall { prot: libc::PROT_READ as u64, ..mmap_rw(a, 4096) }, wo), eacces);
    assert_eq!(m.mmap(PID, mmap_rw(0, 4096), wo), eacces, "before the driver's EPERM");
    assert_eq!(m.refusals, 6);
}

/// MMAP-6: a contiguous-scratchpad chunk of device memory maps past its end up
/// to the pool's end; a host one oopses, its pool pointer being NULL.
#[test]
fn mmap6_a_scratchpad_maps_to_the_pools_end_and_a_host_one_oopses() {
    let (mut m, mut mem) = (model(Arch::Sunda, 2), VecMem::new());
    let sp = memory::CONTIGUOUS_SCRATCHPAD_DEVICE;
    let (_, d) = chunk_at(&mut m, &mut mem, PID, 4096, 0, sp);
    let (_, _next) = chunk_at(&mut m, &mut mem, PID, 4096, 0, sp);
    let (base, len) = m.chunks.region();
    assert_eq!(m.mmap(PID, mmap_rw(d, 2 * 4096), OpenMode::RDWR), Ok(()));
    assert_eq!(m.mmap(PID, mmap_rw(d, base + len - d), OpenMode::RDWR), Ok(()));
    assert_eq!(m.mmap(PID, mmap_rw(d, base + len - d + 4096), OpenMode::RDWR), Err(Refusal::Errno(Errno::EPERM)));
    let (_, h) = chunk_at(&mut m, &mut mem, PID, 4096, 1, sp);
    match m.mmap(PID, mmap_rw(h, 4096), OpenMode::RDWR) {
        Err(Refusal::KernelBug(v)) => assert!(v.to_string().contains("MMAP-6"), "{v}"),
        other => panic!("expected a kernel BUG, got {other:?}"),
    }
}

/// FOPS-1..4: the driver has no read, write, truncate or allocate: the VFS
/// answers EINVAL, EBADF for a mode that cannot, ENODEV for fallocate.
#[test]
fn fops_the_calls_the_driver_has_no_entry_for() {
    let (ro, wo, rw) = (OpenMode(0), OpenMode(1), OpenMode(2));
    let (einval, ebadf) = (Errno::EINVAL, Errno(libc::EBADF));
    let read = NoFop::Read { pos: None };
    let write = NoFop::Write { pos: None };
    assert_eq!(
        [read.errno(ro), read.errno(wo), read.errno(rw), read.errno(OpenMode(3))],
        [einval, ebadf, einval, ebadf]
    );
    assert_eq!([write.errno(ro), write.errno(wo), write.errno(rw)], [ebadf, einval, einval]);
    assert_eq!(NoFop::Read { pos: Some(-1) }.errno(wo), einval, "a negative position first");
    assert_eq!(NoFop::Write { pos: Some(0) }.errno(ro), ebadf);
    assert_eq!(NoFop::Write { pos: Some(-1) }.errno(ro), einval, "a negative position first");
    assert_eq!(NoFop::Fallocate { offset: -1, len: 4096 }.errno(rw), einval);
    assert_eq!(NoFop::Fallocate { offset: 4096, len: 4096 }.errno(rw), Errno::ENODEV);
    let names = [NoFop::Read { pos: None }, NoFop::Read { pos: Some(0) }, write, NoFop::Write { pos: Some(0) }];
    assert_eq!(names.map(NoFop::name), ["read", "pread", "write", "pwrite"]);
    assert_eq!([NoFop::Ftruncate.name(), NoFop::Fallocate { offset: 0, len: 1 }.name()], ["ftruncate", "fallocate"]);
    assert_eq!(NoFop::Ftruncate.errno(ro), einval);
    assert_eq!(NoFop::Fallocate { offset: 0, len: 0 }.errno(ro), einval);
    assert_eq!(NoFop::Fallocate { offset: 0, len: 4096 }.errno(ro), ebadf);
    assert_eq!(NoFop::Fallocate { offset: 0, len: 4096 }.errno(rw), Errno::ENODEV);
    assert!(wo.free_access() && OpenMode(3).free_access() && !rw.free_access() && !ro.free_access());
    assert_eq!(OpenMode::from_flags((libc::O_RDWR | libc::O_CLOEXEC | libc::O_CREAT) as u64), rw);
}
