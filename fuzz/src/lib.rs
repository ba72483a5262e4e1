//! The bodies of the fuzz targets, so that a crash reproduces with a plain call
//! (and becomes a regression test in core).
//!
//! - [`decode`]: every 16 bytes through both decoders (completion-engine seed §3, §4).
//! - [`harvest`]: an arbitrary stream of device records, raw bytes, clock jumps,
//!   INTC bits and faults through the fake device and `progress_one_step` (seed
//!   §1, §2, §5), with the one-step contract checked at every step.
//! - [`dma`]: arbitrary descriptor operations (push, build, count, relocate,
//!   reserve/set, lower, doorbell offsets) over small caller-provided pages
//!   (descriptor-handoff seed §1-§4).

use nrt_core::arch::Arch;
use nrt_core::dma::bd::MAX_BD_LEN;
use nrt_core::dma::build::append_descs;
use nrt_core::dma::pring::RingBacking;
use nrt_core::dma::queue::reserve_descriptors;
use nrt_core::dma::{
    Bd, DeviceHead, Direction, LenCtrl, PRing, Relocation, SwDmaQueue, Transfer, UdmaCopyWriter, UdmaLayout, VRing,
};
use nrt_core::event::Event;
use nrt_core::exec::{ExecConfig, ExecEvent, ExecRequest, ExecState, Step, TpbEngState};
use nrt_core::hal::{DeviceMemory, ErrorKind, ErrorType, EventSink};
use nrt_core::nq::{ErrorEntry, Notification, RawEntry, Subtype, ERROR_NQ};
use nrt_core::testutil::FakeDevice;
use nrt_core::{NrtError, NrtStatus};

/// Values from the fuzzer's bytes; zeros once they run out.
struct Input<'a> {
    data: &'a [u8],
}

impl Input<'_> {
    fn more(&self) -> bool {
        !self.data.is_empty()
    }
    fn u8(&mut self) -> u8 {
        match self.data.split_first() {
            Some((b, rest)) => {
                self.data = rest;
                *b
            }
            None => 0,
        }
    }
    fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }
    fn u64(&mut self) -> u64 {
        u64::from(self.u32()) | u64::from(self.u32()) << 32
    }
    fn bytes16(&mut self) -> [u8; 16] {
        let mut b = [0u8; 16];
        for x in &mut b {
            *x = self.u8();
        }
        b
    }
}

/// Both decoders over the input read as consecutive 16-byte records (the last one
/// zero-padded, so that every input, however short, reaches them), each checked
/// against an independent reading of the seed's positions.
///
/// The checks branch on what was decoded, as the harvest does: the matcher's
/// subtype switch, the custom sub-id table, the error classes and their statuses,
/// the timestamp engine select, and the events each record leads to (their level,
/// kind and text). A target that only compared the decoders with themselves gave
/// libFuzzer nothing to learn from: the decode is straight-line code, the
/// comparisons folded away, and coverage stayed at 11-16 edges for millions of
/// runs. Here every kind of record the fuzzer finds is a new edge, and the
/// comparisons with the seed's values (2, 3, 6, 7, 8, 11, 26 ...) stay in the
/// binary for its comparison tracing.
pub fn decode(data: &[u8]) {
    let mut text = String::new();
    for chunk in data.chunks(16).take(64) {
        let mut b = [0u8; 16];
        b[..chunk.len()].copy_from_slice(chunk);
        decode_one(&b, &mut text);
    }
    std::hint::black_box(&text);
}

fn decode_one(b: &[u8; 16], text: &mut String) {
    use nrt_core::nq::entry::hw_subtype_engine_select;
    use nrt_core::nq::{CustomKind, Engine, ErrorClass, InferErrorSubtype};
    use std::fmt::Write as _;

    let le16 = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
    let ts = u64::from_le_bytes([b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]]);
    let subtype = le16(6);

    // The INFER_STATUS lane (seed §3).
    let raw = RawEntry::from_array(b);
    assert_eq!(raw.to_array(), *b);
    let n = std::hint::black_box(Notification::decode(b));
    assert_eq!(n.isa_line_lo, le16(0));
    assert_eq!(n.debug_hint, b[2] >> 4);
    assert_eq!(n.nq_tag, b[3] & 0x1F);
    assert_eq!(raw.phase(), b[3] & 0x80 != 0);
    assert_eq!(n.custom_sub_id, le16(4));
    assert_eq!(n.device_ts, ts);
    let engine = Engine::from_index(usize::from(n.nq_tag % 5)).expect("0..5");
    // The matcher's switch (seed §2) and the custom sub-id table (§3.1).
    let event = match (subtype, n.subtype) {
        (2, Subtype::Start) | (3, Subtype::End) | (7, Subtype::CcStart) | (8, Subtype::CcEnd) => None,
        (6, Subtype::Custom) => Some(match (le16(4), n.custom()) {
            (7, CustomKind::TensorCompletion { var_id }) => {
                assert_eq!(var_id, le16(0));
                Event::Exec(ExecEvent::TensorCompleted { core: 0, var_id, output: 0, count: 1 })
            }
            (s, CustomKind::Diagnostic { sub_id, payload }) if s < 11 && s != 7 => {
                assert_eq!((sub_id, payload), (s, le16(0)));
                Event::Exec(ExecEvent::CustomNotification { core: 0, engine, sub_id, payload, tag: n.nq_tag })
            }
            (s, CustomKind::Invalid { sub_id }) if s >= 11 => {
                assert_eq!(sub_id, s);
                Event::Exec(ExecEvent::BadCustomSubId { core: 0, engine, sub_id })
            }
            (s, k) => panic!("custom sub-id {s} decoded as {k:?}"),
        }),
        (v @ (0 | 1 | 4 | 5 | 9..), Subtype::Unexpected(u)) => {
            assert_eq!(u, v);
            Some(Event::Exec(ExecEvent::UnexpectedNotification {
                core: 0,
                engine,
                debug_hint: n.debug_hint,
                subtype: u,
            }))
        }
        (v, s) => panic!("subtype {v} decoded as {s:?}"),
    };
    assert_eq!(Subtype::parse(n.subtype.value()), n.subtype);
    assert!(!n.subtype.name().is_empty());
    // The rescaler's engine select, `(subtype + 26) & 0x1F` (seed §3).
    let want = match subtype.wrapping_add(26) & 0x1F {
        0 => Some(Engine::Pe),
        4 => Some(Engine::Act),
        8 => Some(Engine::Pool),
        0xC => Some(Engine::Dve),
        0x10 => Some(Engine::Sp),
        _ => None,
    };
    assert_eq!(hw_subtype_engine_select(subtype), want);

    // The ERROR lane (seed §4, G-ERR-LAYOUT): the same bytes, another layout.
    let e = ErrorEntry::from_array(b);
    assert_eq!(e.to_array(), *b);
    assert_eq!((e.error_id(), e.metadata(), e.subtype(), e.device_ts()), (b[0], le16(4), subtype, ts));
    let (class, status) = match subtype {
        1 => (ErrorClass::Numerical, Some(1003)),
        2 => (ErrorClass::Transient, Some(1004)),
        3 => (ErrorClass::EccCorrectable, None),
        4 => (ErrorClass::EccUncorrectable, Some(1202)),
        5 => (ErrorClass::HbmUe, Some(1201)),
        6 => (ErrorClass::HbmRepairableUe, Some(1205)),
        7 => (ErrorClass::DmaAbort, Some(1203)),
        8 => (ErrorClass::SwSequencer, Some(1004)),
        9 => (ErrorClass::Oob, Some(1006)),
        _ => (ErrorClass::Unknown, Some(1004)),
    };
    assert_eq!(e.class(), class, "error subtype {subtype}");
    assert_eq!(e.class().status().map(NrtStatus::code), status, "error subtype {subtype}");
    match e.infer_error_subtype() {
        InferErrorSubtype::Reserved(v) => assert!(v == 0 || (10..26).contains(&v), "{v}"),
        InferErrorSubtype::Invalid(v) => assert!(v >= 26, "{v}"),
        k => assert_eq!(k.value(), subtype),
    }
    assert_eq!(InferErrorSubtype::parse(subtype).value(), subtype);
    let status = e.class().status().unwrap_or(NrtStatus::Success);
    let record = Event::Exec(ExecEvent::ErrorRecord { core: 0, subtype, class, ts_cpu_us: ts / 1000, status });

    // What the harvest would report: level, kind and text of each event.
    for ev in event.iter().chain([&record]) {
        text.clear();
        write!(text, "{ev}").expect("an event's text");
        assert!(text.starts_with("core 0: "), "{text}");
        assert!(!ev.kind().is_empty());
        std::hint::black_box(ev.level());
    }
    match class {
        ErrorClass::EccUncorrectable => write!(text, "{}", Event::Exec(ExecEvent::UncorrectableEcc { core: 0 })),
        ErrorClass::EccCorrectable => write!(text, "{}", Event::Exec(ExecEvent::CorrectableEcc { core: 0 })),
        ErrorClass::SwSequencer => {
            write!(text, "{}", Event::Exec(ExecEvent::SequencerError { core: 0, code: e.metadata() }))
        }
        _ => Ok(()),
    }
    .expect("an event's text");
    assert!(!class.name().is_empty() && !e.infer_error_subtype().name().is_empty());
}

/// An arbitrary device through the harvest: 0/1/2 only, DONE terminal, substates
/// monotone in WAIT_CORE, the machine only moves forward, and the request ends by
/// its timeout at the latest.
pub fn harvest(data: &[u8]) {
    let mut inp = Input { data };
    let arch = [Arch::Sunda, Arch::Cayman, Arch::Mariana][usize::from(inp.u8() % 3)];
    let cores = 1 + inp.u8() % 2;
    let timeout_s = u32::from(inp.u8() % 4);
    let ring = 32u32 << (inp.u8() % 5);
    let mut dev = Box::new(FakeDevice::new(arch, ring));
    let mut nq = FakeDevice::notifications(ring);
    let mut req = ExecRequest::new(ExecConfig::new(arch, cores, timeout_s));
    let mut h = Harvest { done: None, prev: [[TpbEngState::StartPending; 5]; 2] };
    let mut ops = 0;
    while inp.more() && ops < 512 {
        ops += 1;
        match inp.u8() % 10 {
            0 => {
                let core = inp.u8() % 2;
                let q = [ERROR_NQ, 4, 5, 6, 7, 8][usize::from(inp.u8() % 6)];
                let b = inp.bytes16();
                dev.push_raw(core, q, b);
            }
            1 | 2 => {
                let core = inp.u8() % 2;
                let eng = usize::from(inp.u8() % 5);
                let sel = inp.u8();
                let subtype = match sel % 8 {
                    0..=2 => Subtype::START,
                    3..=5 => Subtype::END,
                    6 => [Subtype::CC_START, Subtype::CC_END][usize::from(sel >> 7)],
                    _ => inp.u16(),
                };
                let ts = u64::from(inp.u16());
                dev.record(core, eng, subtype, ts);
            }
            3 => {
                let core = inp.u8() % 2;
                let eng = usize::from(inp.u8() % 5);
                let sub_id = u16::from(inp.u8() % 13);
                let var = 100 + u16::from(inp.u8() % 10);
                dev.custom(core, eng, sub_id, var, 5);
            }
            4 => {
                let core = inp.u8() % 2;
                let sub = u16::from(inp.u8() % 30);
                let meta = inp.u16();
                dev.error(core, ErrorEntry::new(sub, 0, meta, u64::from(inp.u16())));
            }
            5 | 6 => h.step(&mut req, &mut dev, &mut nq),
            7 => dev.advance_ms(u64::from(inp.u16() % 3000)),
            8 => {
                let core = usize::from(inp.u8() % 2);
                dev.intc_cause[core] ^= 1 << (inp.u8() % 32);
            }
            _ => match inp.u8() % 8 {
                0 => dev.intc_fail = !dev.intc_fail,
                1 => {
                    dev.barrier_fail[usize::from(inp.u8() % 2)] =
                        Some(NrtError::failed(NrtStatus::from_code(u32::from(inp.u8()))))
                }
                2 => {
                    dev.network_fail[usize::from(inp.u8() % 2)] =
                        Some(NrtError::failed(NrtStatus::from_code(u32::from(inp.u8()))))
                }
                3 => dev.hbm[usize::from(inp.u8() % 2)] = Some(NrtStatus::ExecHwErrRepairableHbmUe),
                4 => dev.dma_abort[usize::from(inp.u8() % 2)] = true,
                5 => dev.fail_ring = Some((inp.u8() % 2, [ERROR_NQ, 4, 5, 6, 7, 8][usize::from(inp.u8() % 6)])),
                6 => dev.fail_ring = None,
                _ => dev.barrier_done_at_ns[usize::from(inp.u8() % 2)] = dev.now.get() + u64::from(inp.u32()),
            },
        }
    }
    // Two steps reach WAIT_CORE once the barriers clear; past the budget the next
    // sweep ends the request.
    for _ in 0..3 {
        h.step(&mut req, &mut dev, &mut nq);
    }
    dev.barrier_done_at_ns = [0; 2];
    for _ in 0..3 {
        h.step(&mut req, &mut dev, &mut nq);
    }
    dev.advance_ms(u64::from(timeout_s) * 1000 + 1);
    h.step(&mut req, &mut dev, &mut nq);
    assert!(h.done.is_some(), "not done after the timeout");
}

struct Harvest {
    done: Option<Step>,
    prev: [[TpbEngState; 5]; 2],
}

impl Harvest {
    fn step(&mut self, req: &mut ExecRequest, dev: &mut FakeDevice, nq: &mut nrt_core::nq::Notifications) {
        let was = req.state();
        let s = req.progress_one_step(dev, nq);
        assert!(s.code() <= 2);
        assert!(req.state() as u8 >= was as u8, "the machine moved backwards");
        if let Some(d) = self.done {
            assert_eq!(s, d, "DONE is not terminal");
        }
        match s.status() {
            None => assert_ne!(req.state(), ExecState::Done),
            Some(out) => {
                assert_eq!(req.state(), ExecState::Done);
                assert!(matches!(s, Step::Done(_)) || !out.is_success(), "2 with NRT_SUCCESS");
                self.done = Some(s);
            }
        }
        for (c, row) in self.prev.iter_mut().enumerate() {
            for (e, p) in row.iter_mut().enumerate() {
                let now = req.substate(c, e).expect("2 x 5 substates");
                if was == ExecState::WaitCore {
                    assert!(now >= *p, "a substate regressed");
                }
                *p = now;
            }
        }
    }
}

/// A device for lowering: rings allocated at 0x1_0000 steps, copies counted,
/// failures on demand.
struct Dev {
    next: u64,
    fail: u8,
    copies: u32,
}

impl ErrorType for Dev {
    type Error = ErrorKind;
}

impl RingBacking for Dev {
    fn alloc_ring(&mut self, _: Direction, _: u32) -> Result<u64, ErrorKind> {
        if self.fail & 1 != 0 {
            return Err(ErrorKind::Io);
        }
        self.next += 0x1_0000;
        Ok(self.next)
    }
}

impl DeviceMemory for Dev {
    fn copy_in(&mut self, _: u64, _: &[u8]) -> Result<(), ErrorKind> {
        if self.fail & 2 != 0 {
            return Err(ErrorKind::Io);
        }
        self.copies += 1;
        Ok(())
    }
    fn copy_out(&mut self, _: u64, out: &mut [u8]) -> Result<(), ErrorKind> {
        out.fill(0);
        Ok(())
    }
}

impl<E: Copy + Into<Event>> EventSink<E> for Dev {
    fn event(&mut self, _: &E) {}
}

const PAGE: usize = 4;

fn dir_of(b: u8) -> Direction {
    if b & 1 == 0 {
        Direction::Tx
    } else {
        Direction::Rx
    }
}

/// Arbitrary descriptor operations: nothing panics, counts stay within the pages,
/// relocation moves exactly the BDs in its window, reservations stay in their
/// rings and `set` writes only the reserved slots, lowering copies exactly the
/// block or refuses, doorbell offsets never wrap.
pub fn dma(data: &[u8]) {
    let mut inp = Input { data };
    let n_tx = usize::from(inp.u8() % 4);
    let n_rx = usize::from(inp.u8() % 3);
    let mut tx_img = [Bd::ZERO; 16];
    let mut rx_img = [Bd::ZERO; 16];
    let tx_depth = 1 + usize::from(inp.u8() % 16);
    let rx_depth = 1 + usize::from(inp.u8() % 16);
    let mut images = Some((&mut tx_img[..tx_depth], &mut rx_img[..rx_depth]));
    let mut tx_pages = [[Bd::ZERO; PAGE]; 3];
    let mut rx_pages = [[Bd::ZERO; PAGE]; 2];
    let mut vring: VRing<'_, PAGE> = VRing::new(&mut tx_pages[..n_tx], &mut rx_pages[..n_rx]);
    let mut dev = Dev { next: 0, fail: 0, copies: 0 };
    let mut ops = 0;
    while inp.more() && ops < 256 {
        ops += 1;
        match inp.u8() % 9 {
            0 => {
                let dir = dir_of(inp.u8());
                let bd = Bd::new(LenCtrl::from_bits(inp.u32()), inp.u32(), inp.u64());
                let before = vring.block(dir).count();
                match vring.push(dir, bd) {
                    Ok(()) => assert_eq!(vring.block(dir).count(), before + 1),
                    Err(_) => assert_eq!(vring.block(dir).count(), before),
                }
            }
            1 => {
                let granule = u32::from(inp.u8() % 5);
                let t = Transfer {
                    op: u32::from(inp.u8() % 8),
                    elem_count: granule * u32::from(inp.u8() % 6) + u32::from(inp.u8() % 2),
                    granule,
                    elem_bytes: [1, 2, 4, MAX_BD_LEN, 0][usize::from(inp.u8() % 5)],
                    src: inp.u64(),
                    dst: inp.u64(),
                };
                let arch = [Arch::Sunda, Arch::Cayman, Arch::Mariana][usize::from(inp.u8() % 3)];
                let counts = (vring.block(Direction::Tx).count(), vring.block(Direction::Rx).count());
                match append_descs(&mut vring, arch, &t, &mut UdmaCopyWriter) {
                    Ok(p) => {
                        assert_eq!(vring.block(Direction::Tx).count(), counts.0 + p.tx.ndesc);
                        assert_eq!(vring.block(Direction::Rx).count(), counts.1 + p.rx.ndesc);
                    }
                    Err(_) => assert_eq!(
                        (vring.block(Direction::Tx).count(), vring.block(Direction::Rx).count()),
                        counts,
                        "a refused build changed the counts"
                    ),
                }
            }
            2 => {
                let dir = dir_of(inp.u8());
                let c = if inp.u8() & 1 == 0 { u32::from(inp.u8() % 16) } else { inp.u32() };
                vring.block_mut(dir).set_count(c);
                assert!(vring.block(dir).bds().count() as u64 <= vring.block(dir).capacity());
            }
            3 => {
                let (old, size, new) = (inp.u64(), inp.u64() % 0x1_0000, inp.u64());
                let Ok(r) = Relocation::new(old, size, new) else { continue };
                let snap = |v: &VRing<'_, PAGE>, d| {
                    let mut s = [Bd::ZERO; 16];
                    let mut n = 0;
                    for (slot, bd) in s.iter_mut().zip(v.block(d).bds()) {
                        *slot = *bd;
                        n += 1;
                    }
                    (s, n)
                };
                let before = [snap(&vring, Direction::Tx), snap(&vring, Direction::Rx)];
                let lowered = vring.block(Direction::Tx).is_lowered() || vring.block(Direction::Rx).is_lowered();
                if vring.addr_rewrite(&r).is_err() {
                    // Refused after lowering (G-DMA-RELOC-LOWERED): nothing moved.
                    assert!(lowered);
                    assert_eq!(before, [snap(&vring, Direction::Tx), snap(&vring, Direction::Rx)]);
                    continue;
                }
                let after = [snap(&vring, Direction::Tx), snap(&vring, Direction::Rx)];
                for ((b, nb), (a, na)) in before.iter().zip(after.iter()) {
                    assert_eq!(nb, na);
                    for (x, y) in b.iter().zip(a.iter()).take(*nb) {
                        assert_eq!((x.len_ctrl, x.meta_ctrl), (y.len_ctrl, y.meta_ctrl));
                        let inside = u128::from(x.addr()) >= u128::from(old)
                            && u128::from(x.addr()) < u128::from(old) + u128::from(size);
                        let want = if inside { new + (x.addr() - old) } else { x.addr() };
                        assert_eq!(y.addr(), want);
                    }
                }
            }
            4 => {
                let depth = 1 + u32::from(inp.u8() % 12);
                let mut img = [Bd::ZERO; 12];
                let Ok(mut ring) = PRing::new(Direction::Tx, 0, 2, &mut img[..depth as usize]) else {
                    panic!("depth 1..=12 is a valid ring")
                };
                let mut txq = if inp.u8() & 3 == 0 {
                    SwDmaQueue::from_raw(inp.u32() % 16, u32::from(inp.u8() % 6), u32::from(inp.u8() % 14))
                } else {
                    SwDmaQueue::from_raw(u32::from(inp.u8()) % depth, u32::from(inp.u8() % 4), depth)
                };
                let mut rxq = SwDmaQueue::new(64).expect("a 64-deep queue");
                for _ in 0..(inp.u8() % 4) {
                    let n = u32::from(inp.u8() % 16);
                    let before = txq;
                    // The device has consumed everything produced: only the ring bounds apply.
                    let (th, rh) = (DeviceHead::caught_up(&txq), DeviceHead::caught_up(&rxq));
                    match reserve_descriptors(&mut txq, &mut rxq, th, rh, n) {
                        Ok((r, _)) => {
                            assert!(r.idx < before.desc_count());
                            assert_eq!(
                                u64::from(txq.next_desc_idx()),
                                (u64::from(before.next_desc_idx()) + u64::from(n)) % u64::from(before.desc_count())
                            );
                            let bds = [Bd::new(LenCtrl::new().with_length(1), 7, 0xABC); 16];
                            let fits = before.desc_count() == depth;
                            let res = ring.set_descriptors(&r, &bds[..n as usize]);
                            if fits {
                                assert!(res.is_ok());
                                for k in 0..n {
                                    let slot = ((r.idx + k) % depth) as usize;
                                    assert_eq!(ring.image()[slot].addr(), 0xABC);
                                }
                            }
                        }
                        Err(_) => assert_eq!(txq, before, "a refused reservation moved the cursor"),
                    }
                }
            }
            5 => {
                if let Some((tx, rx)) = images.take() {
                    dev.fail = inp.u8() % 4;
                    let counts = (vring.block(Direction::Tx).count(), vring.block(Direction::Rx).count());
                    let r = vring.create_prings(&mut dev, &mut Sink, tx, rx);
                    for d in [Direction::Tx, Direction::Rx] {
                        if vring.block(d).is_lowered() {
                            let ring = vring.ring(d).expect("a lowered block has a ring");
                            let n = vring.block(d).count() as usize;
                            assert!(n <= ring.depth() as usize);
                            for (i, bd) in ring.image().iter().enumerate() {
                                if i >= n {
                                    assert_eq!(*bd, Bd::ZERO, "padding is zero");
                                }
                            }
                        }
                    }
                    if r.is_ok() {
                        assert_eq!((vring.block(Direction::Tx).count(), vring.block(Direction::Rx).count()), counts);
                    }
                }
            }
            6 => {
                let arch = [Arch::Sunda, Arch::Cayman, Arch::Mariana][usize::from(inp.u8() % 3)];
                let (base, queue, dir) = (inp.u64(), u32::from(inp.u8() % 20), dir_of(inp.u8()));
                let l = UdmaLayout::of(arch);
                if let Ok(off) = l.tail_inc_offset(base, queue, dir) {
                    assert!(off >= base && off - base < l.engine_window);
                }
            }
            7 => vring.seal(),
            _ => {
                let dir = dir_of(inp.u8());
                let i = u32::from(inp.u8());
                let _ = vring.block(dir).slot(i);
            }
        }
    }
}

struct Sink;

impl<E: Copy + Into<Event>> EventSink<E> for Sink {
    fn event(&mut self, _: &E) {}
}

#[cfg(test)]
mod tests {
    //! The bodies over the committed seed corpus and a few thousand generated
    //! inputs: what `cargo test` checks where libFuzzer is not run.
    use super::*;

    fn corpus(target: &str) -> Vec<Vec<u8>> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus").join(target);
        let mut out = Vec::new();
        if let Ok(rd) = std::fs::read_dir(dir) {
            for e in rd.flatten() {
                if let Ok(b) = std::fs::read(e.path()) {
                    out.push(b);
                }
            }
        }
        out
    }

    /// xorshift64*: reproducible inputs without a dependency.
    fn inputs(seed: u64, n: usize) -> impl Iterator<Item = Vec<u8>> {
        let mut s = seed;
        (0..n).map(move |i| {
            let len = i % 700;
            (0..len)
                .map(|_| {
                    s ^= s >> 12;
                    s ^= s << 25;
                    s ^= s >> 27;
                    (s.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8
                })
                .collect()
        })
    }

    #[test]
    fn decode_corpus_and_generated() {
        for b in corpus("decode").into_iter().chain(inputs(1, 2000)) {
            decode(&b);
        }
    }

    #[test]
    fn harvest_corpus_and_generated() {
        for b in corpus("harvest").into_iter().chain(inputs(2, 2000)) {
            harvest(&b);
        }
    }

    #[test]
    fn dma_corpus_and_generated() {
        for b in corpus("dma").into_iter().chain(inputs(3, 2000)) {
            dma(&b);
        }
    }
}
