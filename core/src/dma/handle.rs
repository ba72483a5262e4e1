//! The completion handle: the load/stage-time per-DMA completion marker
//! (`dma_alloc_completion_handle` / `dma_wait_for_completion_handle`,
//! descriptor-handoff seed §5.1).
//!
//! An 8-byte device word, armed with 0xABCDEF01. The DMA engine overwrites it when
//! the staged descriptors are done. The wait copies the word out, sleeps 10 us while
//! it still reads the sentinel, and gives up after `handle_idx * 0x190` polls
//! (`x 10000` on the emulation platform) with `NRT_TIMEOUT` and an event. On
//! completion it re-arms the word with two separate 4-byte writes, **0 then the
//! sentinel**: the seed's GOTCHA says the other order (or one fused store) can leave
//! a stale done value that the next wait would take for an immediate completion.
//!
//! G-DMA-HANDLE-WIDTH: the word is 8 bytes but the seed's wait copies out and
//! re-arms 4. We keep the seed: [`CompletionHandle::arm`] writes all 8 bytes
//! (sentinel little-endian in the low 4, zero above), the wait and the re-arm touch
//! the low 4 only.

use super::{DmaError, DmaEvent};
use crate::hal::{Delay, DeviceMemory, EventSink};
use crate::trace::emit;

/// The armed value, seed §5.1: `movl $0xabcdef01`, driver §5's completion marker.
pub const COMPLETION_SENTINEL: u32 = 0xABCD_EF01;
/// Bytes of device memory a handle occupies (`dmem_alloc(size=8, "completion marker")`, §5.1).
pub const COMPLETION_HANDLE_BYTES: usize = 8;
/// Bytes each poll copies out and each re-arm step copies in (§5.1: `copyout(.., 4)`).
pub const COMPLETION_WORD_BYTES: usize = 4;
/// Sleep between polls, in microseconds (§5.1: `usleep(10)`).
pub const COMPLETION_POLL_US: u32 = 10;
/// Polls per unit of `handle_idx` (§5.1: `timeout = handle_idx * 0x190`).
pub const COMPLETION_LOOPS_PER_IDX: u64 = 0x190;
/// The emulation platform's poll multiplier (§5.1: `imul $0x2710` = 10000).
pub const EMULATION_LOOP_SCALE: u64 = 0x2710;

/// `tdrv_get_platform_type()`'s value.
///
/// G-DMA-PLATFORM: the seed gives only that type 1 scales the budget by 10000
/// (an emulation platform, where the device runs far slower); the other values are
/// not named. We call 0 hardware and keep any value as-is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct PlatformType(pub u32);

impl PlatformType {
    /// Real hardware (our name for 0).
    pub const HARDWARE: PlatformType = PlatformType(0);
    /// The emulation platform: the only value the seed compares (`== 1`).
    pub const EMULATION: PlatformType = PlatformType(1);
}

/// The poll budget for `handle_idx` descriptors on `platform`: `handle_idx * 0x190`,
/// times 10000 on emulation, saturating (it cannot overflow for a u32 index, but
/// the arithmetic says so rather than relying on it).
pub const fn completion_poll_budget(handle_idx: u32, platform: PlatformType) -> u64 {
    let base = (handle_idx as u64).saturating_mul(COMPLETION_LOOPS_PER_IDX);
    if platform.0 == PlatformType::EMULATION.0 {
        base.saturating_mul(EMULATION_LOOP_SCALE)
    } else {
        base
    }
}

/// A completion marker at a device address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompletionHandle {
    addr: u64,
}

impl CompletionHandle {
    /// The handle at device address `addr` (8 bytes of device memory).
    pub const fn new(addr: u64) -> CompletionHandle {
        CompletionHandle { addr }
    }

    /// Its device address.
    pub const fn addr(&self) -> u64 {
        self.addr
    }

    /// Arm it: write the 8-byte word `sentinel (LE) | 0 << 32`
    /// (`dma_alloc_completion_handle`'s copy-in of the seed value).
    pub fn arm<M: DeviceMemory + ?Sized>(&self, mem: &mut M) -> Result<(), DmaError> {
        let word = u64::from(COMPLETION_SENTINEL).to_le_bytes();
        mem.copy_in(self.addr, &word).map_err(DmaError::platform)
    }

    /// `dma_wait_for_completion_handle`, seed §5.1. Polls at most
    /// [`completion_poll_budget`]`(handle_idx, platform)` times; each poll copies the
    /// low 4 bytes out and, while they read [`COMPLETION_SENTINEL`], sleeps 10 us.
    /// On any other value: re-arm (write 0, then the sentinel), report
    /// [`DmaEvent::Completed`], `Ok`. When the budget runs out:
    /// [`DmaEvent::CompletionTimeout`] and [`DmaError::Timeout`] (`NRT_TIMEOUT`).
    /// A device-memory failure is reported ([`DmaEvent::HandleIoFailed`]) and returned.
    ///
    /// A `handle_idx` of 0 gives a budget of 0: the seed's loop never polls and
    /// times out at once; we keep that.
    pub fn wait<M, D, S>(
        &self,
        mem: &mut M,
        delay: &mut D,
        sink: &mut S,
        handle_idx: u32,
        platform: PlatformType,
    ) -> Result<(), DmaError>
    where
        M: DeviceMemory + ?Sized,
        D: Delay + ?Sized,
        S: EventSink<DmaEvent> + ?Sized,
    {
        let loops = completion_poll_budget(handle_idx, platform);
        let handle = self.addr;
        let io_failed = |sink: &mut S, e: M::Error| {
            let kind = crate::hal::Error::kind(&e);
            emit(sink, DmaEvent::HandleIoFailed { handle, kind });
            DmaError::Platform(kind)
        };
        let mut polls: u64 = 0;
        while polls < loops {
            let mut word = [0u8; COMPLETION_WORD_BYTES];
            mem.copy_out(handle, &mut word).map_err(|e| io_failed(sink, e))?;
            if u32::from_le_bytes(word) == COMPLETION_SENTINEL {
                delay.delay_us(COMPLETION_POLL_US);
                polls += 1;
                continue;
            }
            // Re-arm: 0 first, then the sentinel, as two writes, seed §5.1 GOTCHA.
            mem.copy_in(handle, &0u32.to_le_bytes()).map_err(|e| io_failed(sink, e))?;
            // A word left at 0 would read as "done" on the next wait: if the
            // sentinel write fails, try it once more before reporting the error
            // (the caller must then `arm` the handle again before reusing it).
            let sentinel = COMPLETION_SENTINEL.to_le_bytes();
            if mem.copy_in(handle, &sentinel).is_err() {
                mem.copy_in(handle, &sentinel).map_err(|e| io_failed(sink, e))?;
            }
            emit(sink, DmaEvent::Completed { descriptors: handle_idx, polls });
            return Ok(());
        }
        emit(sink, DmaEvent::CompletionTimeout { handle, descriptors: handle_idx, loops });
        Err(DmaError::Timeout)
    }
}

/// `dma_wait_for_completion_handle` as a free function (see [`CompletionHandle::wait`]).
pub fn wait_for_completion_handle<M, D, S>(
    mem: &mut M,
    delay: &mut D,
    sink: &mut S,
    handle_addr: u64,
    handle_idx: u32,
    platform: PlatformType,
) -> Result<(), DmaError>
where
    M: DeviceMemory + ?Sized,
    D: Delay + ?Sized,
    S: EventSink<DmaEvent> + ?Sized,
{
    CompletionHandle::new(handle_addr).wait(mem, delay, sink, handle_idx, platform)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hal::{ErrorKind, ErrorType};
    use crate::status::NrtStatus;

    const MAX_TEST_READS: u64 = 100_000;

    /// Device memory holding one word; records every access in order. The device
    /// "completes" after `done_after` reads by writing `done_value`.
    struct Mem {
        word: [u8; 8],
        reads: u64,
        done_after: Option<u64>,
        done_value: u32,
        log: Vec<(char, u64, Vec<u8>)>,
        fail_read: bool,
        /// Fail this many writes of the sentinel before accepting one.
        fail_sentinel_writes: u32,
    }
    impl Mem {
        fn new(done_after: Option<u64>) -> Mem {
            Mem {
                word: [0; 8],
                reads: 0,
                done_after,
                done_value: 0x600D,
                log: Vec::new(),
                fail_read: false,
                fail_sentinel_writes: 0,
            }
        }
    }
    impl ErrorType for Mem {
        type Error = ErrorKind;
    }
    impl DeviceMemory for Mem {
        fn copy_in(&mut self, addr: u64, data: &[u8]) -> Result<(), ErrorKind> {
            if data == COMPLETION_SENTINEL.to_le_bytes() && self.fail_sentinel_writes > 0 {
                self.fail_sentinel_writes -= 1;
                self.log.push(('x', addr, data.to_vec()));
                return Err(ErrorKind::Io);
            }
            self.word[..data.len()].copy_from_slice(data);
            self.log.push(('w', addr, data.to_vec()));
            Ok(())
        }
        fn copy_out(&mut self, addr: u64, out: &mut [u8]) -> Result<(), ErrorKind> {
            // Every test's budget is far below this: a poll loop that does not
            // stop is a failure here, not a test that eats memory until killed.
            assert!(self.reads < MAX_TEST_READS, "the poll loop ran away");
            if self.fail_read {
                return Err(ErrorKind::NotMapped);
            }
            if self.done_after == Some(self.reads) {
                self.word[..4].copy_from_slice(&self.done_value.to_le_bytes());
            }
            self.reads += 1;
            out.copy_from_slice(&self.word[..out.len()]);
            self.log.push(('r', addr, out.to_vec()));
            Ok(())
        }
    }
    #[derive(Default)]
    struct Sleeps(Vec<u32>);
    impl Delay for Sleeps {
        fn delay_us(&mut self, us: u32) {
            self.0.push(us);
        }
    }
    type Sink = crate::testutil::EventLog<DmaEvent>;

    #[test]
    fn constants_are_the_seeds() {
        assert_eq!(COMPLETION_SENTINEL, 0xABCDEF01);
        assert_eq!(COMPLETION_POLL_US, 10);
        assert_eq!(COMPLETION_LOOPS_PER_IDX, 400);
        assert_eq!(EMULATION_LOOP_SCALE, 10_000);
        assert_eq!(completion_poll_budget(3, PlatformType::HARDWARE), 1200);
        assert_eq!(completion_poll_budget(3, PlatformType(2)), 1200);
        assert_eq!(completion_poll_budget(3, PlatformType::EMULATION), 12_000_000);
        assert_eq!(completion_poll_budget(u32::MAX, PlatformType::EMULATION), u64::from(u32::MAX) * 400 * 10_000);
        assert_eq!(completion_poll_budget(0, PlatformType::EMULATION), 0);
    }

    #[test]
    fn arm_writes_the_8_byte_word() {
        let mut mem = Mem::new(None);
        let h = CompletionHandle::new(0x40);
        assert_eq!(h.addr(), 0x40);
        h.arm(&mut mem).unwrap();
        assert_eq!(mem.log, [('w', 0x40, vec![0x01, 0xEF, 0xCD, 0xAB, 0, 0, 0, 0])]);
    }

    #[test]
    fn completion_re_arms_with_0_then_the_sentinel() {
        let mut mem = Mem::new(Some(3));
        let h = CompletionHandle::new(0x40);
        h.arm(&mut mem).unwrap();
        mem.log.clear();
        let (mut d, mut sink) = (Sleeps::default(), Sink::default());
        h.wait(&mut mem, &mut d, &mut sink, 1, PlatformType::HARDWARE).unwrap();
        // Three sentinel reads, each followed by a 10 us sleep, then the done read.
        assert_eq!(d.0, [10, 10, 10]);
        let sent = COMPLETION_SENTINEL.to_le_bytes().to_vec();
        assert_eq!(
            mem.log,
            [
                ('r', 0x40, sent.clone()),
                ('r', 0x40, sent.clone()),
                ('r', 0x40, sent.clone()),
                ('r', 0x40, 0x600Du32.to_le_bytes().to_vec()),
                ('w', 0x40, vec![0, 0, 0, 0]),
                ('w', 0x40, sent),
            ]
        );
        assert_eq!(&mem.word[..4], &COMPLETION_SENTINEL.to_le_bytes());
        assert_eq!(sink.events, [DmaEvent::Completed { descriptors: 1, polls: 3 }]);
    }

    #[test]
    fn timeout_after_handle_idx_times_0x190_polls() {
        let mut mem = Mem::new(None);
        let h = CompletionHandle::new(0x80);
        h.arm(&mut mem).unwrap();
        let (mut d, mut sink) = (Sleeps::default(), Sink::default());
        let e = h.wait(&mut mem, &mut d, &mut sink, 2, PlatformType::HARDWARE).unwrap_err();
        assert_eq!(e, DmaError::Timeout);
        assert_eq!(e.status(), NrtStatus::Timeout);
        assert_eq!(mem.reads, 2 * 0x190);
        assert_eq!(d.0.len(), 800);
        assert_eq!(sink.events, [DmaEvent::CompletionTimeout { handle: 0x80, descriptors: 2, loops: 800 }]);
        // No write happened after arming: a timed-out handle is not re-armed.
        assert_eq!(mem.log.iter().filter(|(k, _, _)| *k == 'w').count(), 1);
    }

    #[test]
    fn emulation_scales_the_budget_and_idx_0_times_out_at_once() {
        // Completes on poll 500, beyond the hardware budget of 400 for idx 1.
        let mut mem = Mem::new(Some(500));
        mem.copy_in(0, &COMPLETION_SENTINEL.to_le_bytes()).unwrap();
        let (mut d, mut sink) = (Sleeps::default(), Sink::default());
        assert_eq!(
            wait_for_completion_handle(&mut mem, &mut d, &mut sink, 0, 1, PlatformType::HARDWARE),
            Err(DmaError::Timeout)
        );
        let mut mem = Mem::new(Some(500));
        mem.copy_in(0, &COMPLETION_SENTINEL.to_le_bytes()).unwrap();
        wait_for_completion_handle(&mut mem, &mut d, &mut sink, 0, 1, PlatformType::EMULATION).unwrap();
        let mut mem = Mem::new(Some(0));
        assert_eq!(
            wait_for_completion_handle(&mut mem, &mut d, &mut sink, 0, 0, PlatformType::EMULATION),
            Err(DmaError::Timeout)
        );
        assert_eq!(mem.reads, 0);
    }

    #[test]
    fn read_failures_are_reported() {
        let mut mem = Mem::new(None);
        mem.fail_read = true;
        let (mut d, mut sink) = (Sleeps::default(), Sink::default());
        assert_eq!(
            wait_for_completion_handle(&mut mem, &mut d, &mut sink, 8, 1, PlatformType::HARDWARE),
            Err(DmaError::Platform(ErrorKind::NotMapped))
        );
        assert_eq!(sink.events, [DmaEvent::HandleIoFailed { handle: 8, kind: ErrorKind::NotMapped }]);
    }

    #[test]
    fn a_failed_sentinel_write_is_retried_once_so_the_word_is_not_left_at_0() {
        let mut mem = Mem::new(Some(1));
        mem.fail_sentinel_writes = 1;
        let (mut d, mut sink) = (Sleeps::default(), Sink::default());
        assert_eq!(wait_for_completion_handle(&mut mem, &mut d, &mut sink, 8, 1, PlatformType::HARDWARE), Ok(()));
        assert_eq!(u32::from_le_bytes(mem.word[..4].try_into().unwrap()), COMPLETION_SENTINEL, "re-armed");
        // Both failing: reported, not hidden.
        let mut mem = Mem::new(Some(1));
        mem.fail_sentinel_writes = 2;
        let (mut d, mut sink) = (Sleeps::default(), Sink::default());
        assert_eq!(
            wait_for_completion_handle(&mut mem, &mut d, &mut sink, 8, 1, PlatformType::HARDWARE),
            Err(DmaError::Platform(ErrorKind::Io))
        );
    }
}
