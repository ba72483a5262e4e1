use super::*;
use crate::dma::COMPLETION_SENTINEL;
use crate::hal::{ErrorKind, ErrorType};
use crate::testutil::EventLog;
use std::collections::BTreeMap;
use std::vec::Vec;

const HANDLE: u64 = 0x9000;
const DONE: u64 = 0x9100;
const BASE: u64 = 0x3000_0000;
/// Bytes of device memory the fake copies when the M2S doorbell rings (the
/// data and the marker).
const COPY: u64 = 256;

/// A device that keeps its memory and registers, fails its `fail_at`-th
/// platform call (1-based) if asked, and, when the M2S doorbell rings,
/// "runs" the copy: the data, then the done word over the handle.
#[derive(Default)]
struct Dev {
    mem: BTreeMap<u64, u8>,
    regs: Vec<(u64, u32)>,
    calls: u32,
    fail_at: Option<u32>,
    /// The device does not copy.
    idle: bool,
    /// What `device_heads` answers instead of the default.
    heads: Option<Result<(DeviceHead, DeviceHead), SubmitError>>,
    next_ring: u64,
}

impl Dev {
    fn call(&mut self) -> Result<(), ErrorKind> {
        self.calls += 1;
        if self.fail_at == Some(self.calls) {
            return Err(ErrorKind::Io);
        }
        Ok(())
    }

    fn word(&self, addr: u64) -> u32 {
        let b = |i| self.mem.get(&(addr + i)).copied().unwrap_or(0);
        u32::from_le_bytes([b(0), b(1), b(2), b(3)])
    }
}

impl ErrorType for Dev {
    type Error = ErrorKind;
}

impl DeviceMemory for Dev {
    fn copy_in(&mut self, addr: u64, data: &[u8]) -> Result<(), ErrorKind> {
        self.call()?;
        for (i, b) in data.iter().enumerate() {
            self.mem.insert(addr + i as u64, *b);
        }
        Ok(())
    }
    fn copy_out(&mut self, addr: u64, out: &mut [u8]) -> Result<(), ErrorKind> {
        self.call()?;
        for (i, b) in out.iter_mut().enumerate() {
            *b = self.mem.get(&(addr + i as u64)).copied().unwrap_or(0);
        }
        Ok(())
    }
}

impl RingBacking for Dev {
    fn alloc_ring(&mut self, _: Direction, _: u32) -> Result<u64, ErrorKind> {
        self.call()?;
        self.next_ring += 0x1_0000;
        Ok(self.next_ring)
    }
}

impl Registers for Dev {
    fn read32(&mut self, _: u64) -> Result<u32, ErrorKind> {
        self.call()?;
        Ok(0)
    }
    fn write32(&mut self, offset: u64, value: u32) -> Result<(), ErrorKind> {
        self.call()?;
        self.regs.push((offset, value));
        let m2s = UdmaLayout::of(Arch::Sunda).tail_inc_offset(BASE, 0, Direction::Tx).unwrap();
        if offset == m2s && !self.idle {
            for i in 0..COPY {
                let v = self.mem.get(&(0xA000 + i)).copied().unwrap_or(0);
                self.mem.insert(0xB000 + i, v);
            }
            let done = self.word(DONE).to_le_bytes();
            for (i, b) in done.iter().enumerate() {
                self.mem.insert(HANDLE + i as u64, *b);
            }
        }
        Ok(())
    }
}

impl SubmitTarget for Dev {
    fn device_heads(
        &mut self,
        _plan: &Submission,
        tx: &PRing<'_>,
        rx: &PRing<'_>,
        txq: &SwDmaQueue,
        rxq: &SwDmaQueue,
    ) -> Result<(DeviceHead, DeviceHead), SubmitError> {
        assert_eq!((tx.dev_addr(), rx.dev_addr()), (0x1_0000, 0x2_0000), "called with the lowered rings");
        match self.heads {
            Some(h) => h,
            None => Ok((DeviceHead::caught_up(txq), DeviceHead::caught_up(rxq))),
        }
    }
}

struct NoFence;
impl Fence for NoFence {}

/// A delay that moves nothing (the fake copies at the doorbell).
struct NoDelay;
impl Delay for NoDelay {
    fn delay_us(&mut self, _: u32) {}
}

fn plan() -> Submission {
    Submission {
        arch: Arch::Sunda,
        // 64 elements of 4 bytes in 16-element BDs: four 64-byte descriptors.
        data: Transfer { op: OP_COPY, elem_count: 64, granule: 16, elem_bytes: 4, src: 0xA000, dst: 0xB000 },
        handle: CompletionHandle::new(HANDLE),
        done_word: DONE,
        engine_base: BASE,
        queue: 0,
        write_barrier: false,
        platform: PlatformType::HARDWARE,
    }
}

type Bufs = SubmitBuffers<4, 2, 8>;

fn queues() -> (SwDmaQueue, SwDmaQueue) {
    (SwDmaQueue::new(8).unwrap(), SwDmaQueue::new(8).unwrap())
}

fn run(dev: &mut Dev, plan: &Submission, q: &mut (SwDmaQueue, SwDmaQueue)) -> Result<Submitted, SubmitError> {
    let mut sink = EventLog::<DmaEvent>::default();
    submit(dev, &mut NoFence, &mut NoDelay, &mut sink, plan, (&mut q.0, &mut q.1), &mut Bufs::new())
}

/// The M2S descriptor at `slot` of the ring at `ring`, as staged: its
/// `meta_ctrl` word.
fn meta_ctrl(dev: &Dev, ring: u64, slot: u64) -> u32 {
    dev.word(ring + 16 * slot + 4)
}

#[test]
fn a_submit_lowers_stages_rings_s2m_then_m2s_and_waits_for_the_marker() {
    let mut dev = Dev::default();
    for i in 0..COPY {
        dev.mem.insert(0xA000 + i, i as u8);
    }
    dev.mem.insert(DONE, 1);
    let mut q = queues();
    let mut sink = EventLog::<DmaEvent>::default();
    let done = submit(&mut dev, &mut NoFence, &mut NoDelay, &mut sink, &plan(), (&mut q.0, &mut q.1), &mut Bufs::new())
        .unwrap();
    let map = UdmaLayout::of(Arch::Sunda);
    let doorbells =
        (map.tail_inc_offset(BASE, 0, Direction::Tx).unwrap(), map.tail_inc_offset(BASE, 0, Direction::Rx).unwrap());
    assert_eq!(done, Submitted { descriptors: 5, rings: (0x1_0000, 0x2_0000), ring_depth: 8, doorbells });
    assert_eq!(dev.regs, [(doorbells.1, 5), (doorbells.0, 5)], "S2M, then M2S, once each");
    assert_eq!((q.0.next_desc_idx(), q.1.next_desc_idx()), (5, 5), "the cursors advanced");
    assert_eq!(dev.word(HANDLE), COMPLETION_SENTINEL, "re-armed after the marker");
    assert!(sink.events.iter().any(|e| matches!(e, DmaEvent::Completed { descriptors: 5, .. })));
    // The marker's descriptors copy the done word over the handle.
    assert_eq!(dev.word(0x1_0000 + 16 * 4 + 8), DONE as u32);
    assert_eq!(dev.word(0x2_0000 + 16 * 4 + 8), HANDLE as u32);
    assert_eq!(meta_ctrl(&dev, 0x1_0000, 3) & M2S_WRITE_BARRIER, 0, "no barrier unless asked");
    // The next submit goes to the next slots (the device caught up).
    let again = run(&mut Dev { next_ring: 0, ..Dev::default() }, &plan(), &mut q);
    assert_eq!(again.map(|s| s.descriptors), Ok(5));
    assert_eq!((q.0.next_desc_idx(), q.1.next_desc_idx()), (2, 2), "10 slots on in rings of 8");
}

#[test]
fn the_write_barrier_goes_on_the_last_data_descriptor_only() {
    let mut dev = Dev::default();
    dev.mem.insert(DONE, 1);
    let plan = Submission { write_barrier: true, ..plan() };
    run(&mut dev, &plan, &mut queues()).unwrap();
    let with: Vec<bool> = (0..5).map(|i| meta_ctrl(&dev, 0x1_0000, i) & M2S_WRITE_BARRIER != 0).collect();
    assert_eq!(with, [false, false, false, true, false]);
    // RX descriptors never carry it.
    assert!((0..5).all(|i| meta_ctrl(&dev, 0x2_0000, i) & M2S_WRITE_BARRIER == 0));
}

/// Each platform call of a good submit, failed in turn, fails the step that
/// made it, with the platform's kind; nothing after it runs.
#[test]
fn a_failing_platform_call_names_its_step() {
    let mut good = Dev::default();
    good.mem.insert(DONE, 1);
    run(&mut good, &plan(), &mut queues()).unwrap();
    let calls = good.calls;
    let mut steps = Vec::new();
    for k in 1..=calls {
        let mut dev = Dev { fail_at: Some(k), ..Dev::default() };
        dev.mem.insert(DONE, 1);
        let mut q = queues();
        let r = run(&mut dev, &plan(), &mut q);
        if k == calls {
            // The re-arm's sentinel write, which the wait tries once more.
            assert!(r.is_ok() && dev.calls == calls + 1, "{r:?}");
            continue;
        }
        let e = r.unwrap_err();
        assert_eq!(e.error, DmaError::Platform(ErrorKind::Io), "call {k}");
        assert_eq!(e.rung.is_some(), e.step == SubmitStep::Wait, "call {k}");
        assert_eq!(dev.calls, k, "call {k}: nothing after the failure");
        // Handed back before the doorbells, kept from them on.
        let kept = matches!(e.step, SubmitStep::Doorbell(_) | SubmitStep::Wait);
        let want = if kept { 5 } else { 0 };
        assert_eq!((q.0.next_desc_idx(), q.1.next_desc_idx()), (want, want), "call {k}: {:?}", e.step);
        if steps.last() != Some(&e.step) {
            steps.push(e.step);
        }
    }
    use Direction::{Rx, Tx};
    assert_eq!(
        steps,
        [
            SubmitStep::Arm,
            SubmitStep::Lower,
            SubmitStep::Stage(Tx),
            SubmitStep::Stage(Rx),
            SubmitStep::Doorbell(Rx),
            SubmitStep::Doorbell(Tx),
            SubmitStep::Wait,
        ]
    );
}

#[test]
fn a_refused_step_names_it_with_cores_error() {
    let fail = |dev: &mut Dev, plan: &Submission| run(dev, plan, &mut queues()).unwrap_err();
    let at = |step, error| SubmitError { step, error, rung: None };
    // The data: 63 elements do not split into 16-element BDs.
    let bad = Submission { data: Transfer { elem_count: 63, ..plan().data }, ..plan() };
    assert_eq!(
        fail(&mut Dev::default(), &bad),
        at(SubmitStep::AppendData, DmaError::GranuleRemainder { elem_count: 63, granule: 16 })
    );
    // The marker: the data fills the vring's two 4-BD pages.
    let full = Submission { data: Transfer { elem_count: 128, ..plan().data }, ..plan() };
    assert!(matches!(fail(&mut Dev::default(), &full), SubmitError { step: SubmitStep::AppendMarker, .. }));
    // The platform's own step.
    let mine = at(SubmitStep::Platform("queue init"), DmaError::Platform(ErrorKind::Other));
    assert_eq!(fail(&mut Dev { heads: Some(Err(mine)), ..Dev::default() }, &plan()), mine);
    // A device head ahead of the producer.
    let ahead = DeviceHead { idx: 3, ring_id: 1 };
    let e = fail(&mut Dev { heads: Some(Ok((ahead, ahead))), ..Dev::default() }, &plan());
    assert_eq!(e.step, SubmitStep::Reserve);
    assert!(matches!(e.error, DmaError::BadHead { .. }), "{e:?}");
    // A queue the engine has not.
    let e = fail(&mut Dev::default(), &Submission { queue: 99, ..plan() });
    assert_eq!(e.step, SubmitStep::DoorbellOffset);
    // The device never copies: the wait times out, with what was rung.
    let mut dev = Dev { idle: true, ..Dev::default() };
    let e = fail(&mut dev, &plan());
    assert_eq!((e.step, e.error), (SubmitStep::Wait, DmaError::Timeout));
    assert_eq!(e.rung.map(|s| s.descriptors), Some(5));
    assert_eq!(dev.regs.len(), 2, "both doorbells rung before the wait");
}

#[test]
fn a_submit_error_prints_its_step_and_cores_error_and_is_their_source() {
    let e = SubmitError::at(SubmitStep::Stage(Direction::Rx), DmaError::Timeout);
    assert_eq!(std::format!("{e}"), std::format!("stage rx: {}", DmaError::Timeout));
    let source = core::error::Error::source(&e).map(|s| std::format!("{s}"));
    assert_eq!(source, Some(std::format!("{}", DmaError::Timeout)));
    let names: Vec<&str> = [
        SubmitStep::Arm,
        SubmitStep::AppendData,
        SubmitStep::AppendMarker,
        SubmitStep::Lower,
        SubmitStep::Rings,
        SubmitStep::Platform("head pointer"),
        SubmitStep::Reserve,
        SubmitStep::Set(Direction::Tx),
        SubmitStep::Set(Direction::Rx),
        SubmitStep::Stage(Direction::Tx),
        SubmitStep::DoorbellOffset,
        SubmitStep::Doorbell(Direction::Tx),
        SubmitStep::Doorbell(Direction::Rx),
        SubmitStep::Wait,
    ]
    .iter()
    .map(|s| s.name())
    .collect();
    assert_eq!(
        names,
        [
            "arm completion handle",
            "append data",
            "append marker",
            "lower",
            "rings",
            "head pointer",
            "reserve",
            "set tx",
            "set rx",
            "stage tx",
            "doorbell offset",
            "doorbell tx",
            "doorbell rx",
            "completion wait",
        ]
    );
}
