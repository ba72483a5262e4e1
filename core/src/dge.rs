//! The DGE DMA-priority gate, configured from the host, descriptor-handoff seed §6.
//!
//! On GPSIMD cores, the device's DGE (descriptor-generation engine) holds back DMA
//! queues for operations of low priority: per `nrtucode.h` (lines 504-505), "if DGE
//! operation priority > mailbox priority: apply (&) the mailbox's DMA bitmask"
//! ([`gate`]). The host programs that gate through two device-config blocks
//! relative to the core's SoC base:
//!
//! ```text
//!  base + 0x18  priority-class map   <= 4 x u32  (class 0 is the built-in default;
//!                                                 map[0] is ISA priority index 1)
//!  base + 0x28  dge_mailbox[4]       4 x 4 bytes {reserved u8, priority u8, bitmask u16}
//! ```
//!
//! Every accessor first applies the shared guards, §6.1: the core must be BOOTED
//! (`boot_state == 1`, else status 8) and its kind one of the five NX_POOL kinds,
//! the bits of 0x1_0202_0204 (2, 9, 17, 25, 32), with kinds above 0x20 refused
//! before the bit test. The device is reached through [`DeviceMemory`], the core-ops
//! READ/WRITE vtable of libnrtucode.

use core::fmt;

use zerocopy::byteorder::little_endian::U16;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::hal::{DeviceMemory, Error as _, ErrorKind, EventSink};
use crate::status::NrtStatus;
use crate::trace::{emit, Level, Traced};

/// `boot_state` of a booted core (§6.1: `cmpl $1, 0x30(core)`).
pub const BOOT_STATE_BOOTED: u32 = 1;
/// The NX_POOL core kinds as a bitmask over `core->kind` (§6.1: `movabs $0x102020204; bt`).
pub const NX_POOL_KIND_MASK: u64 = 0x1_0202_0204;
/// The largest kind the bit test is reached for (§6.1: `cmp $0x20` upper-bound guard).
pub const KIND_GUARD_MAX: u32 = 0x20;
/// Offset of the priority-class map from the core's base (§6.4: `add $0x18,%rsi`).
pub const PRIORITY_CLASS_MAP_OFFSET: u64 = 0x18;
/// Most priority classes the map takes (§6.4: `cmp $0x4,%rdx`; more is refused).
pub const MAX_PRIORITY_CLASSES: usize = 4;
/// Offset of the mailbox array from the core's base (§6.2/§6.3: `lea 0x28(,%r15,4)`).
pub const MAILBOX_OFFSET: u64 = 0x28;
/// Mailboxes in the array (§6.2: "4 entries x 4 bytes").
pub const MAILBOX_COUNT: u32 = 4;
/// Bytes per mailbox, §6.2, §6.3.
pub const MAILBOX_BYTES: u64 = 4;
/// The highest mailbox index (§6.3: `cmp $0x3,%rsi`, `idx > 3` refused).
pub const MAILBOX_MAX_INDEX: u32 = 3;
/// The per-mailbox scratch default of the address query's readback (§6.2: `movl $0xffffff00`).
pub const MAILBOX_READBACK_DEFAULT: u32 = 0xFFFF_FF00;
/// libnrtucode's return for a core that is not booted or a mailbox index above 3
/// (§6.1, §6.3: "8 = INVALID / NOT_BOOTED").
pub const UCODE_INVALID: u32 = 8;

/// The three fields of a core the DGE accessors read (`core + 0x10` kind, `core +
/// 0x20` SoC base, `core + 0x30` boot state; §6.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DgeCore {
    /// `nrtucode_coretype_t` of the core.
    pub kind: u32,
    /// 1 when booted.
    pub boot_state: u32,
    /// The core's SoC base address.
    pub base: u64,
}

/// One DGE mailbox (`nrtucode_dge_mailbox_t`, 4 bytes, §6).
///
/// G-DGE-MAILBOX: the seed gives the field order `{reserved, priority, bitmask}` in
/// 4 bytes, not the widths. We choose `u8, u8, u16` (little-endian): the only split
/// that gives a priority comparable to the ISA priority byte, §6.4, and a DMA
/// bitmask wider than a byte.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct DgeMailbox {
    /// Byte 0: reserved.
    pub reserved: u8,
    /// Byte 1: the mailbox priority the op's priority is compared with.
    pub priority: u8,
    /// Bytes 2-3: the DMA bitmask applied when the gate closes.
    pub bitmask: U16,
}

const _: () = assert!(core::mem::size_of::<DgeMailbox>() == MAILBOX_BYTES as usize);
const _: () = assert!(core::mem::offset_of!(DgeMailbox, priority) == 1);
const _: () = assert!(core::mem::offset_of!(DgeMailbox, bitmask) == 2);

impl DgeMailbox {
    /// A mailbox of `priority` and `bitmask`.
    pub const fn new(priority: u8, bitmask: u16) -> DgeMailbox {
        DgeMailbox { reserved: 0, priority, bitmask: U16::new(bitmask) }
    }

    /// The mailbox as the 4-byte little-endian value the device holds.
    pub fn to_u32(&self) -> u32 {
        let bytes: [u8; 4] = zerocopy::transmute!(*self);
        u32::from_le_bytes(bytes)
    }

    /// The mailbox of a 4-byte little-endian value.
    pub fn from_u32(v: u32) -> DgeMailbox {
        zerocopy::transmute!(v.to_le_bytes())
    }
}

/// The gate rule (`nrtucode.h` 504-505): when the op's priority exceeds the
/// mailbox's, the mailbox's DMA bitmask applies (`Some(mask)`); otherwise nothing
/// does (`None`).
pub fn gate(op_priority: u8, mailbox: &DgeMailbox) -> Option<u16> {
    if op_priority > mailbox.priority {
        Some(mailbox.bitmask.get())
    } else {
        None
    }
}

/// The DMA queues an op may use: `dma_mask`, ANDed with the mailbox's bitmask when
/// the gate applies.
pub fn apply_gate(op_priority: u8, mailbox: &DgeMailbox, dma_mask: u16) -> u16 {
    match gate(op_priority, mailbox) {
        Some(m) => dma_mask & m,
        None => dma_mask,
    }
}

/// `true` for the five NX_POOL kinds: `kind <= 0x20` and bit `kind` of 0x1_0202_0204.
pub const fn is_nx_pool_kind(kind: u32) -> bool {
    kind <= KIND_GUARD_MAX && (NX_POOL_KIND_MASK >> kind) & 1 != 0
}

/// Why a DGE accessor refused.
///
/// [`DgeError::code`] is libnrtucode's return value; [`DgeError::status`] the
/// `NRT_STATUS` the runtime reports. G-DGE-CODES: the seed gives 8 (INVALID /
/// NOT_BOOTED) for a core that is not booted and for a mailbox index above 3, and an
/// unnamed "ERR" for the kind guard and the class count; we return 8 for every
/// invalid argument (8 is libnrtucode's INVALID) and 1 for a platform failure. As
/// `NRT_STATUS`, invalid arguments are `NRT_INVALID` (2) and platform failures
/// `NRT_FAILURE` (1): 8 is not an `NRT_STATUS` value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum DgeError {
    /// `boot_state` is not BOOTED, §6.1.
    NotBooted(u32),
    /// The core kind is not an NX_POOL kind, §6.1.
    BadKind(u32),
    /// A mailbox index above 3, §6.3.
    BadMailboxIndex(u32),
    /// An address query for more than 4 mailboxes, §6.2.
    TooManyMailboxes(u64),
    /// No priority-class map (libnrtucode aborts, §6.4).
    NoClassMap,
    /// More than 4 priority classes, §6.4.
    TooManyClasses(usize),
    /// `base + offset` overflows u64.
    AddressOverflow,
    /// The core-ops READ or WRITE failed.
    Platform(ErrorKind),
}

impl DgeError {
    /// libnrtucode's return value (see the type's documentation).
    pub const fn code(&self) -> u32 {
        match self {
            DgeError::Platform(_) => 1,
            _ => UCODE_INVALID,
        }
    }

    /// The `NRT_STATUS` reported for it.
    pub const fn status(&self) -> NrtStatus {
        match self {
            DgeError::Platform(_) => NrtStatus::Failure,
            _ => NrtStatus::Invalid,
        }
    }
}

impl fmt::Display for DgeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            DgeError::NotBooted(s) => write!(f, "core is not booted (boot state {s})"),
            DgeError::BadKind(k) => write!(f, "core kind {k} is not an NX_POOL kind"),
            DgeError::BadMailboxIndex(i) => write!(f, "DGE mailbox index {i} above 3"),
            DgeError::TooManyMailboxes(n) => write!(f, "{n} DGE mailboxes requested, at most 4"),
            DgeError::NoClassMap => write!(f, "no priority-class map given"),
            DgeError::TooManyClasses(n) => write!(f, "{n} priority classes, at most 4"),
            DgeError::AddressOverflow => write!(f, "DGE config address overflows u64"),
            DgeError::Platform(k) => write!(f, "core-ops access failed: {k:?}"),
        }
    }
}

/// A DGE gate event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum DgeEvent {
    /// A guard refused the core (libnrtucode's `nrtucode_context_log`).
    GuardRefused {
        /// The core's kind.
        kind: u32,
        /// The core's boot state.
        boot_state: u32,
    },
    /// A mailbox read back by the address query (§6.2: logged per mailbox). When the
    /// read failed, `value` is the scratch default 0xFFFFFF00.
    MailboxReadback {
        /// The mailbox index.
        idx: u8,
        /// Its 4-byte value.
        value: u32,
        /// `false` when the read failed.
        read_ok: bool,
    },
    /// A mailbox was written.
    MailboxSet {
        /// The mailbox index.
        idx: u8,
        /// Its 4-byte value.
        value: u32,
    },
    /// The priority-class map was written.
    ClassMapSet {
        /// Classes written.
        classes: u8,
    },
}

impl DgeEvent {
    /// How loud the event is.
    pub fn level(&self) -> Level {
        match self {
            DgeEvent::GuardRefused { .. } => Level::Error,
            DgeEvent::MailboxReadback { read_ok: false, .. } => Level::Warn,
            _ => Level::Debug,
        }
    }

    /// A short machine-friendly name.
    pub fn kind(&self) -> &'static str {
        match self {
            DgeEvent::GuardRefused { .. } => "dge_guard_refused",
            DgeEvent::MailboxReadback { .. } => "dge_mailbox_readback",
            DgeEvent::MailboxSet { .. } => "dge_mailbox_set",
            DgeEvent::ClassMapSet { .. } => "dge_class_map_set",
        }
    }
}

impl Traced for DgeEvent {
    fn level(&self) -> Level {
        DgeEvent::level(self)
    }
    fn kind(&self) -> &'static str {
        DgeEvent::kind(self)
    }
}

impl fmt::Display for DgeEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            DgeEvent::GuardRefused { kind, boot_state } => {
                if boot_state != BOOT_STATE_BOOTED {
                    write!(f, "DGE: core (kind {kind}) is not booted (boot state {boot_state})")
                } else {
                    write!(f, "DGE: core kind {kind} is not an NX_POOL core")
                }
            }
            DgeEvent::MailboxReadback { idx, value, read_ok } => write!(
                f,
                "DGE mailbox {idx}: 0x{value:08x}{}",
                if read_ok { "" } else { " (read failed; scratch default)" }
            ),
            DgeEvent::MailboxSet { idx, value } => write!(f, "DGE mailbox {idx} set to 0x{value:08x}"),
            DgeEvent::ClassMapSet { classes } => write!(f, "DGE priority-class map set ({classes} classes)"),
        }
    }
}

impl DgeCore {
    /// The shared guards, §6.1: BOOTED, then an NX_POOL kind.
    pub const fn check(&self) -> Result<(), DgeError> {
        if self.boot_state != BOOT_STATE_BOOTED {
            return Err(DgeError::NotBooted(self.boot_state));
        }
        if !is_nx_pool_kind(self.kind) {
            return Err(DgeError::BadKind(self.kind));
        }
        Ok(())
    }

    fn guard<S: EventSink<DgeEvent> + ?Sized>(&self, sink: &mut S) -> Result<(), DgeError> {
        let r = self.check();
        if r.is_err() {
            emit(sink, DgeEvent::GuardRefused { kind: self.kind, boot_state: self.boot_state });
        }
        r
    }

    fn at(&self, off: u64) -> Result<u64, DgeError> {
        self.base.checked_add(off).ok_or(DgeError::AddressOverflow)
    }

    /// The device address of mailbox `idx` (`base + 0x28 + idx * 4`), `idx <= 3`.
    pub fn mailbox_addr(&self, idx: u32) -> Result<u64, DgeError> {
        if idx > MAILBOX_MAX_INDEX {
            return Err(DgeError::BadMailboxIndex(idx));
        }
        self.at(MAILBOX_OFFSET + u64::from(idx) * MAILBOX_BYTES)
    }

    /// `nrtucode_core_private_set_dge_mailbox`, §6.3: guards, `idx <= 3` (else 8),
    /// then one 4-byte WRITE at `base + 0x28 + idx * 4`.
    pub fn set_dge_mailbox<M: DeviceMemory + ?Sized, S: EventSink<DgeEvent> + ?Sized>(
        &self,
        mem: &mut M,
        sink: &mut S,
        idx: u32,
        mailbox: DgeMailbox,
    ) -> Result<(), DgeError> {
        self.guard(sink)?;
        let addr = self.mailbox_addr(idx)?;
        mem.copy_in(addr, mailbox.as_bytes()).map_err(|e| DgeError::Platform(e.kind()))?;
        emit(sink, DgeEvent::MailboxSet { idx: idx as u8, value: mailbox.to_u32() });
        Ok(())
    }

    /// `nrtucode_core_private_get_dge_mailbox_values`, §6.3: guards, `idx <= 3`, one
    /// 4-byte READ from the same address.
    pub fn get_dge_mailbox<M: DeviceMemory + ?Sized, S: EventSink<DgeEvent> + ?Sized>(
        &self,
        mem: &mut M,
        sink: &mut S,
        idx: u32,
    ) -> Result<DgeMailbox, DgeError> {
        self.guard(sink)?;
        let addr = self.mailbox_addr(idx)?;
        let mut mb = DgeMailbox::default();
        mem.copy_out(addr, mb.as_mut_bytes()).map_err(|e| DgeError::Platform(e.kind()))?;
        Ok(mb)
    }

    /// `nrtucode_core_get_dge_mailbox_addr`, §6.2: guards, `num_mailbox <= 4`, read
    /// back and report each of the 4 mailboxes (a failed read reports the scratch
    /// default 0xFFFFFF00, as libnrtucode logs it, and does not fail the query), and
    /// return the array's address `base + 0x28`.
    pub fn get_dge_mailbox_addr<M: DeviceMemory + ?Sized, S: EventSink<DgeEvent> + ?Sized>(
        &self,
        mem: &mut M,
        sink: &mut S,
        num_mailbox: u64,
    ) -> Result<u64, DgeError> {
        self.guard(sink)?;
        if num_mailbox > u64::from(MAILBOX_COUNT) {
            return Err(DgeError::TooManyMailboxes(num_mailbox));
        }
        for idx in 0..MAILBOX_COUNT {
            let addr = self.mailbox_addr(idx)?;
            let mut word = MAILBOX_READBACK_DEFAULT.to_le_bytes();
            let read_ok = mem.copy_out(addr, &mut word).is_ok();
            let value = if read_ok { u32::from_le_bytes(word) } else { MAILBOX_READBACK_DEFAULT };
            emit(sink, DgeEvent::MailboxReadback { idx: idx as u8, value, read_ok });
        }
        self.at(MAILBOX_OFFSET)
    }

    /// `nrtucode_core_dge_set_priority_class_map`, §6.4: guards, a map must be given
    /// ([`DgeError::NoClassMap`] where libnrtucode aborts), at most 4 classes, then
    /// one WRITE of `4 * n` bytes (little-endian u32s) at `base + 0x18`.
    /// `classes[0]` maps to ISA priority index 1 (class 0 is the built-in default).
    pub fn set_priority_class_map<M: DeviceMemory + ?Sized, S: EventSink<DgeEvent> + ?Sized>(
        &self,
        mem: &mut M,
        sink: &mut S,
        classes: Option<&[u32]>,
    ) -> Result<(), DgeError> {
        self.guard(sink)?;
        let classes = classes.ok_or(DgeError::NoClassMap)?;
        if classes.len() > MAX_PRIORITY_CLASSES {
            return Err(DgeError::TooManyClasses(classes.len()));
        }
        let mut buf = [0u8; MAX_PRIORITY_CLASSES * 4];
        for (chunk, c) in buf.chunks_exact_mut(4).zip(classes) {
            chunk.copy_from_slice(&c.to_le_bytes());
        }
        let bytes = buf.get(..classes.len() * 4).unwrap_or(&[]);
        let addr = self.at(PRIORITY_CLASS_MAP_OFFSET)?;
        mem.copy_in(addr, bytes).map_err(|e| DgeError::Platform(e.kind()))?;
        emit(sink, DgeEvent::ClassMapSet { classes: classes.len() as u8 });
        Ok(())
    }

    /// `nrtucode_core_dge_get_priority_class_map`, §6.4: guards, a buffer must be
    /// given, at most 4 classes; one READ of `4 * out.len()` bytes from `base + 0x18`.
    pub fn get_priority_class_map<M: DeviceMemory + ?Sized, S: EventSink<DgeEvent> + ?Sized>(
        &self,
        mem: &mut M,
        sink: &mut S,
        out: Option<&mut [u32]>,
    ) -> Result<(), DgeError> {
        self.guard(sink)?;
        let out = out.ok_or(DgeError::NoClassMap)?;
        if out.len() > MAX_PRIORITY_CLASSES {
            return Err(DgeError::TooManyClasses(out.len()));
        }
        let mut buf = [0u8; MAX_PRIORITY_CLASSES * 4];
        let n = out.len() * 4;
        let bytes = buf.get_mut(..n).ok_or(DgeError::TooManyClasses(out.len()))?;
        let addr = self.at(PRIORITY_CLASS_MAP_OFFSET)?;
        mem.copy_out(addr, bytes).map_err(|e| DgeError::Platform(e.kind()))?;
        for (c, chunk) in out.iter_mut().zip(bytes.chunks_exact(4)) {
            *c = u32::from_le_bytes(chunk.try_into().unwrap_or([0; 4]));
        }
        Ok(())
    }
}

#[cfg(any(kani, test))]
mod proofs;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hal::ErrorType;
    use std::collections::BTreeMap;

    /// Byte-addressed device memory with a log of accesses.
    #[derive(Default)]
    struct Mem {
        bytes: BTreeMap<u64, u8>,
        log: Vec<(char, u64, usize)>,
        fail_reads_at: Option<u64>,
    }
    impl ErrorType for Mem {
        type Error = ErrorKind;
    }
    impl DeviceMemory for Mem {
        fn copy_in(&mut self, addr: u64, data: &[u8]) -> Result<(), ErrorKind> {
            self.log.push(('w', addr, data.len()));
            for (i, b) in data.iter().enumerate() {
                self.bytes.insert(addr + i as u64, *b);
            }
            Ok(())
        }
        fn copy_out(&mut self, addr: u64, out: &mut [u8]) -> Result<(), ErrorKind> {
            self.log.push(('r', addr, out.len()));
            if self.fail_reads_at == Some(addr) {
                return Err(ErrorKind::Io);
            }
            for (i, b) in out.iter_mut().enumerate() {
                *b = self.bytes.get(&(addr + i as u64)).copied().unwrap_or(0);
            }
            Ok(())
        }
    }
    type Sink = crate::testutil::EventLog<DgeEvent>;

    const BASE: u64 = 0x7_0000;
    fn core() -> DgeCore {
        DgeCore { kind: 9, boot_state: 1, base: BASE }
    }

    #[test]
    fn exactly_the_five_nx_pool_kinds_pass() {
        assert_eq!(NX_POOL_KIND_MASK, (1 << 2) | (1 << 9) | (1 << 17) | (1 << 25) | (1 << 32));
        let passing: Vec<u32> = (0..=1000).filter(|&k| is_nx_pool_kind(k)).collect();
        assert_eq!(passing, [2, 9, 17, 25, 32]);
        for k in [33, 34, 63, 64, 66, 0x8000_0002, u32::MAX - 1, u32::MAX] {
            assert!(!is_nx_pool_kind(k), "kind {k}");
        }
        // Above the guard even where `kind mod 64` would hit a mask bit.
        assert!(!is_nx_pool_kind(64 + 2) && !is_nx_pool_kind(64 + 32));
    }

    #[test]
    fn guards_refuse_unbooted_and_non_nx_pool_cores_with_8() {
        let mut mem = Mem::default();
        let mut sink = Sink::default();
        let c = DgeCore { boot_state: 0, ..core() };
        let e = c.set_dge_mailbox(&mut mem, &mut sink, 0, DgeMailbox::new(1, 1)).unwrap_err();
        assert_eq!(e, DgeError::NotBooted(0));
        assert_eq!(e.code(), 8);
        assert_eq!(sink.events, [DgeEvent::GuardRefused { kind: 9, boot_state: 0 }]);
        let c = DgeCore { kind: 3, ..core() };
        assert_eq!(c.get_dge_mailbox(&mut mem, &mut sink, 0), Err(DgeError::BadKind(3)));
        assert_eq!(c.set_priority_class_map(&mut mem, &mut sink, Some(&[1])), Err(DgeError::BadKind(3)));
        assert_eq!(c.get_dge_mailbox_addr(&mut mem, &mut sink, 4), Err(DgeError::BadKind(3)));
        assert!(mem.log.is_empty(), "nothing touched the device");
        // Booted-ness is checked before the kind.
        assert_eq!(DgeCore { kind: 3, boot_state: 2, base: 0 }.check(), Err(DgeError::NotBooted(2)));
    }

    #[test]
    fn mailboxes_live_at_base_plus_0x28() {
        let (mut mem, mut sink) = (Mem::default(), Sink::default());
        let c = core();
        c.set_dge_mailbox(&mut mem, &mut sink, 3, DgeMailbox::new(5, 0x00F0)).unwrap();
        assert_eq!(mem.log, [('w', BASE + 0x28 + 3 * 4, 4)]);
        assert_eq!(mem.bytes.get(&(BASE + 0x28 + 12 + 1)), Some(&5));
        assert_eq!(c.get_dge_mailbox(&mut mem, &mut sink, 3).unwrap(), DgeMailbox::new(5, 0x00F0));
        let e = c.set_dge_mailbox(&mut mem, &mut sink, 4, DgeMailbox::default()).unwrap_err();
        assert_eq!(e, DgeError::BadMailboxIndex(4));
        assert_eq!(e.code(), 8);
        assert_eq!(c.get_dge_mailbox(&mut mem, &mut sink, u32::MAX), Err(DgeError::BadMailboxIndex(u32::MAX)));
        assert_eq!(DgeMailbox::from_u32(DgeMailbox::new(5, 0xBEEF).to_u32()), DgeMailbox::new(5, 0xBEEF));
        assert_eq!(DgeMailbox::new(5, 0xBEEF).to_u32(), 0xBEEF_0500);
    }

    #[test]
    fn mailbox_address_query_reads_back_all_four() {
        let (mut mem, mut sink) = (Mem::default(), Sink::default());
        let c = core();
        c.set_dge_mailbox(&mut mem, &mut sink, 1, DgeMailbox::new(2, 3)).unwrap();
        mem.log.clear();
        sink.events.clear();
        mem.fail_reads_at = Some(BASE + 0x28 + 2 * 4);
        assert_eq!(c.get_dge_mailbox_addr(&mut mem, &mut sink, 4), Ok(BASE + 0x28));
        assert_eq!(mem.log, (0..4).map(|i| ('r', BASE + 0x28 + i * 4, 4)).collect::<Vec<_>>());
        assert_eq!(
            sink.events,
            [
                DgeEvent::MailboxReadback { idx: 0, value: 0, read_ok: true },
                DgeEvent::MailboxReadback { idx: 1, value: 0x0003_0200, read_ok: true },
                DgeEvent::MailboxReadback { idx: 2, value: 0xFFFF_FF00, read_ok: false },
                DgeEvent::MailboxReadback { idx: 3, value: 0, read_ok: true },
            ]
        );
        // The read-back covers all four whatever `num_mailbox` says (§6.2: the loop
        // runs idx 0..3), not only `num_mailbox` of them.
        for num in [0, 1, 3] {
            mem.log.clear();
            sink.events.clear();
            assert_eq!(c.get_dge_mailbox_addr(&mut mem, &mut sink, num), Ok(BASE + 0x28));
            assert_eq!(mem.log, (0..4).map(|i| ('r', BASE + 0x28 + i * 4, 4)).collect::<Vec<_>>(), "num {num}");
            let idxs: Vec<u8> = sink
                .events
                .iter()
                .filter_map(|e| match e {
                    DgeEvent::MailboxReadback { idx, .. } => Some(*idx),
                    _ => None,
                })
                .collect();
            assert_eq!(idxs, [0, 1, 2, 3]);
        }
        mem.log.clear();
        assert_eq!(c.get_dge_mailbox_addr(&mut mem, &mut sink, 5), Err(DgeError::TooManyMailboxes(5)));
        assert!(mem.log.is_empty(), "a refused query reads nothing");
    }

    #[test]
    fn priority_class_map_at_base_plus_0x18() {
        let (mut mem, mut sink) = (Mem::default(), Sink::default());
        let c = core();
        c.set_priority_class_map(&mut mem, &mut sink, Some(&[7, 8, 9, 10])).unwrap();
        assert_eq!(mem.log, [('w', BASE + 0x18, 16)]);
        let mut out = [0u32; 4];
        c.get_priority_class_map(&mut mem, &mut sink, Some(&mut out)).unwrap();
        assert_eq!(out, [7, 8, 9, 10]);
        // Fewer classes read fewer words.
        mem.log.clear();
        let mut two = [0u32; 2];
        c.get_priority_class_map(&mut mem, &mut sink, Some(&mut two)).unwrap();
        assert_eq!((two, &mem.log[..]), ([7, 8], &[('r', BASE + 0x18, 8)][..]));
        let mut five = [0u32; 5];
        assert_eq!(c.get_priority_class_map(&mut mem, &mut sink, Some(&mut five)), Err(DgeError::TooManyClasses(5)));
        assert_eq!(c.set_priority_class_map(&mut mem, &mut sink, None), Err(DgeError::NoClassMap));
        assert_eq!(c.set_priority_class_map(&mut mem, &mut sink, Some(&[0; 5])), Err(DgeError::TooManyClasses(5)));
        assert_eq!(c.get_priority_class_map(&mut mem, &mut sink, None), Err(DgeError::NoClassMap));
        assert_eq!(DgeError::NoClassMap.status(), NrtStatus::Invalid);
        // The map (+0x18..+0x28) and the mailboxes (+0x28..) are adjacent and do not overlap.
        assert_eq!(PRIORITY_CLASS_MAP_OFFSET + MAX_PRIORITY_CLASSES as u64 * 4, MAILBOX_OFFSET);
    }

    #[test]
    fn addresses_that_overflow_are_refused() {
        let (mut mem, mut sink) = (Mem::default(), Sink::default());
        let c = DgeCore { base: u64::MAX - 0x20, ..core() };
        assert_eq!(c.set_dge_mailbox(&mut mem, &mut sink, 0, DgeMailbox::default()), Err(DgeError::AddressOverflow));
        assert!(c.set_priority_class_map(&mut mem, &mut sink, Some(&[1])).is_ok());
    }

    #[test]
    fn the_gate_applies_the_bitmask_only_above_the_mailbox_priority() {
        let mb = DgeMailbox::new(3, 0b1010);
        assert_eq!(gate(4, &mb), Some(0b1010));
        assert_eq!(gate(3, &mb), None);
        assert_eq!(gate(0, &mb), None);
        assert_eq!(apply_gate(9, &mb, 0b1111), 0b1010);
        assert_eq!(apply_gate(3, &mb, 0b1111), 0b1111);
    }

    /// Every refusal names the object and the reason, with its values; codes and
    /// statuses per G-DGE-CODES.
    #[test]
    fn every_error_message_names_what_and_why() {
        let cases: [(DgeError, &str, u32, NrtStatus); 8] = [
            (DgeError::NotBooted(0), "core is not booted (boot state 0)", 8, NrtStatus::Invalid),
            (DgeError::BadKind(3), "core kind 3 is not an NX_POOL kind", 8, NrtStatus::Invalid),
            (DgeError::BadMailboxIndex(4), "DGE mailbox index 4 above 3", 8, NrtStatus::Invalid),
            (DgeError::TooManyMailboxes(5), "5 DGE mailboxes requested, at most 4", 8, NrtStatus::Invalid),
            (DgeError::NoClassMap, "no priority-class map given", 8, NrtStatus::Invalid),
            (DgeError::TooManyClasses(6), "6 priority classes, at most 4", 8, NrtStatus::Invalid),
            (DgeError::AddressOverflow, "DGE config address overflows u64", 8, NrtStatus::Invalid),
            (DgeError::Platform(ErrorKind::Io), "core-ops access failed: Io", 1, NrtStatus::Failure),
        ];
        for (e, text, code, status) in cases {
            assert_eq!((e.to_string().as_str(), e.code(), e.status()), (text, code, status));
        }
        let events: [(DgeEvent, &str, &str, Level); 6] = [
            (
                DgeEvent::GuardRefused { kind: 9, boot_state: 0 },
                "dge_guard_refused",
                "DGE: core (kind 9) is not booted (boot state 0)",
                Level::Error,
            ),
            (
                DgeEvent::GuardRefused { kind: 3, boot_state: 1 },
                "dge_guard_refused",
                "DGE: core kind 3 is not an NX_POOL core",
                Level::Error,
            ),
            (
                DgeEvent::MailboxReadback { idx: 2, value: 0xFFFF_FF00, read_ok: false },
                "dge_mailbox_readback",
                "DGE mailbox 2: 0xffffff00 (read failed; scratch default)",
                Level::Warn,
            ),
            (
                DgeEvent::MailboxReadback { idx: 1, value: 0x0003_0200, read_ok: true },
                "dge_mailbox_readback",
                "DGE mailbox 1: 0x00030200",
                Level::Debug,
            ),
            (
                DgeEvent::MailboxSet { idx: 3, value: 0xBEEF_0500 },
                "dge_mailbox_set",
                "DGE mailbox 3 set to 0xbeef0500",
                Level::Debug,
            ),
            (
                DgeEvent::ClassMapSet { classes: 4 },
                "dge_class_map_set",
                "DGE priority-class map set (4 classes)",
                Level::Debug,
            ),
        ];
        for (e, kind, text, level) in events {
            assert_eq!((e.kind(), e.to_string().as_str(), e.level()), (kind, text, level));
        }
    }

    #[test]
    fn events() {
        let e = DgeEvent::GuardRefused { kind: 3, boot_state: 1 };
        assert_eq!(e.kind(), "dge_guard_refused");
        assert_eq!(e.level(), Level::Error);
        assert!(e.to_string().contains("NX_POOL"));
        assert!(DgeEvent::MailboxSet { idx: 1, value: 2 }.to_string().contains("mailbox 1"));
    }
}
