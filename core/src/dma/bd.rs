//! The 16-byte buffer descriptor (BD), in the public driver's UDMA layout.
//!
//! ```text
//!  byte:  0            4            8                          15
//!        +------------+------------+----------------------------+
//!        | len_ctrl   | meta_ctrl  | buf_ptr (u64)              |
//!        +------------+------------+----------------------------+
//!  len_ctrl: [15:0] length (65536 encoded as 0) . [25:24] ring id
//!            26 FIRST . 27 LAST . 28 INT_EN . 30 DMB
//! ```
//!
//! The seed's relocation (`vring_addr_rewrite`, seed §2.4) walks `bd = page + 8`
//! with a 16-byte stride and patches `bd[0]`; the driver's descriptor (`union
//! udma_desc`, `neuron-driver-facts.md` §5) has `buf_ptr` at **+8**. They are the
//! same bytes seen from different origins, `seed-vs-driver.md` point 2, so a [`Bd`]
//! is the driver's layout and relocation patches the u64 at +8 of each BD.
//!
//! All fields are little-endian; [`Bd`] is a zerocopy type whose size and field
//! offsets are pinned at compile time.

use bitfield_struct::bitfield;
use zerocopy::byteorder::little_endian::{U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// Size of one BD in bytes, seed §2: "each BD is 16 bytes", driver `union udma_desc`.
pub const BD_SIZE: usize = 16;
/// Byte offset of `len_ctrl`, driver §5.
pub const LEN_CTRL_OFFSET: usize = 0;
/// Byte offset of `meta_ctrl` (TX) / `buf2_ptr_lo` (RX), driver §5.
pub const META_CTRL_OFFSET: usize = 4;
/// Byte offset of `buf_ptr`, the address relocation patches (driver §5;
/// `seed-vs-driver.md` point 2: the seed's `page + 8` walk lands here).
pub const BUF_PTR_OFFSET: usize = 8;

/// The largest byte length one BD carries: 65536, encoded as 0 in `len_ctrl[15:0]`
/// (driver §5, "a length of 65536 is encoded as 0").
pub const MAX_BD_LEN: u32 = 0x1_0000;

/// Number of distinct ring ids, 2 bits, `len_ctrl[25:24]`, driver §5.
pub const RING_ID_COUNT: u8 = 4;
/// The ring id of the producer's first lap (driver `UDMA_INITIAL_RING_ID`;
/// `seed-vs-driver.md` point 2).
pub const INITIAL_RING_ID: u8 = 1;

/// The driver's default M2S `meta_ctrl` for a memory-to-memory copy: bits 0 and 1
/// (last/first block), bit 19 (copy source data), op `[25:23]` = 2, driver §5.
pub const M2S_COPY_META_CTRL: u32 = 0x0108_0003;

/// The ring id of the lap after `ring_id`: +1 mod 4, driver §5.
#[inline]
pub const fn next_ring_id(ring_id: u8) -> u8 {
    (ring_id.wrapping_add(1)) % RING_ID_COUNT
}

/// `len_ctrl`, the first word of a BD (driver §5, M2S layout; the S2M layout shares
/// length, ring id and INT_EN).
#[bitfield(u32)]
#[derive(PartialEq, Eq)]
pub struct LenCtrl {
    /// `[15:0]` byte length; 65536 is encoded as 0 (see [`LenCtrl::with_len_bytes`]).
    #[bits(16)]
    pub length: u16,
    #[bits(8)]
    __: u8,
    /// `[25:24]` ring id (phase) of the lap the BD was written in.
    #[bits(2)]
    pub ring_id: u8,
    /// 26: first BD of a packet (M2S).
    pub first: bool,
    /// 27: last BD of a packet (M2S).
    pub last: bool,
    /// 28: raise an interrupt on completion.
    pub int_en: bool,
    /// 29: STRONG_ORDER_WR on S2M (v3+); reserved on M2S.
    pub strong_order: bool,
    /// 30: data memory barrier (M2S).
    pub dmb: bool,
    #[bits(1)]
    __: u8,
}

impl LenCtrl {
    /// Set the byte length, `1..=65536` (65536 is stored as 0). `None` outside that range.
    pub const fn with_len_bytes(self, len: u32) -> Option<Self> {
        if len == 0 || len > MAX_BD_LEN {
            return None;
        }
        // 65536 & 0xFFFF == 0: the driver's encoding.
        Some(self.with_length((len & 0xFFFF) as u16))
    }

    /// The byte length this word carries (`0` decodes as 65536).
    pub const fn len_bytes(&self) -> u32 {
        match self.length() {
            0 => MAX_BD_LEN,
            n => n as u32,
        }
    }
}

/// One 16-byte buffer descriptor (driver `union udma_desc`, TX view; the RX view
/// calls the +4 word `buf2_ptr_lo` and the +8 word `buf1_ptr`).
///
/// 16-byte aligned like the driver's (`packed, aligned(16)`), which also lets the
/// relocation loop use aligned loads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C, align(16))]
pub struct Bd {
    /// +0: length and control bits ([`LenCtrl`]).
    pub len_ctrl: U32,
    /// +4: meta control (TX) or the second buffer's low address (RX).
    pub meta_ctrl: U32,
    /// +8: buffer address (TX source, RX destination); what relocation patches.
    pub buf_ptr: U64,
}

const _: () = assert!(core::mem::size_of::<Bd>() == BD_SIZE);
const _: () = assert!(core::mem::align_of::<Bd>() == BD_SIZE);
const _: () = assert!(core::mem::offset_of!(Bd, len_ctrl) == LEN_CTRL_OFFSET);
const _: () = assert!(core::mem::offset_of!(Bd, meta_ctrl) == META_CTRL_OFFSET);
const _: () = assert!(core::mem::offset_of!(Bd, buf_ptr) == BUF_PTR_OFFSET);

impl Bd {
    /// The all-zero BD, which pads a lowered ring to its depth, seed §2.3.
    pub const ZERO: Bd = Bd { len_ctrl: U32::ZERO, meta_ctrl: U32::ZERO, buf_ptr: U64::ZERO };

    /// A BD from its three words.
    pub const fn new(len_ctrl: LenCtrl, meta_ctrl: u32, buf_ptr: u64) -> Bd {
        Bd { len_ctrl: U32::new(len_ctrl.into_bits()), meta_ctrl: U32::new(meta_ctrl), buf_ptr: U64::new(buf_ptr) }
    }

    /// The decoded `len_ctrl` word.
    #[inline]
    pub fn ctrl(&self) -> LenCtrl {
        LenCtrl::from_bits(self.len_ctrl.get())
    }

    /// Replace the `len_ctrl` word.
    #[inline]
    pub fn set_ctrl(&mut self, ctrl: LenCtrl) {
        self.len_ctrl.set(ctrl.into_bits());
    }

    /// The buffer address at +8.
    #[inline]
    pub fn addr(&self) -> u64 {
        self.buf_ptr.get()
    }

    /// Set the buffer address at +8.
    #[inline]
    pub fn set_addr(&mut self, addr: u64) {
        self.buf_ptr.set(addr);
    }

    /// This BD with its ring id replaced by `ring_id & 3`.
    #[inline]
    pub fn with_ring_id(mut self, ring_id: u8) -> Bd {
        let c = self.ctrl().with_ring_id(ring_id & (RING_ID_COUNT - 1));
        self.set_ctrl(c);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_is_the_drivers() {
        let bd = Bd::new(
            LenCtrl::new().with_length(0x1234).with_ring_id(2).with_first(true).with_int_en(true),
            0x0108_0003,
            0x1122_3344_5566_7788,
        );
        let b = bd.as_bytes();
        assert_eq!(b.len(), 16);
        assert_eq!(&b[0..4], &(0x1234u32 | 2 << 24 | 1 << 26 | 1 << 28).to_le_bytes());
        assert_eq!(&b[4..8], &0x0108_0003u32.to_le_bytes());
        assert_eq!(&b[8..16], &0x1122_3344_5566_7788u64.to_le_bytes());
        let back = Bd::read_from_bytes(b).unwrap();
        assert_eq!(back, bd);
        let mut b2 = bd;
        b2.set_addr(0x42);
        b2.set_ctrl(LenCtrl::new().with_length(7));
        assert_eq!((b2.addr(), b2.len_ctrl.get(), b2.meta_ctrl.get()), (0x42, 7, 0x0108_0003));
    }

    #[test]
    fn len_ctrl_bits() {
        assert_eq!(LenCtrl::new().with_ring_id(3).into_bits(), 3 << 24);
        assert_eq!(LenCtrl::new().with_first(true).into_bits(), 1 << 26);
        assert_eq!(LenCtrl::new().with_last(true).into_bits(), 1 << 27);
        assert_eq!(LenCtrl::new().with_int_en(true).into_bits(), 1 << 28);
        assert_eq!(LenCtrl::new().with_dmb(true).into_bits(), 1 << 30);
        assert_eq!(LenCtrl::new().with_len_bytes(MAX_BD_LEN).unwrap().into_bits(), 0);
        assert_eq!(LenCtrl::new().with_len_bytes(MAX_BD_LEN).unwrap().len_bytes(), 65536);
        assert_eq!(LenCtrl::new().with_len_bytes(1).unwrap().len_bytes(), 1);
        assert!(LenCtrl::new().with_len_bytes(0).is_none());
        assert!(LenCtrl::new().with_len_bytes(MAX_BD_LEN + 1).is_none());
    }

    #[test]
    fn ring_id_starts_at_one_and_cycles_mod_4() {
        assert_eq!(INITIAL_RING_ID, 1);
        assert_eq!(next_ring_id(1), 2);
        assert_eq!(next_ring_id(2), 3);
        assert_eq!(next_ring_id(3), 0);
        assert_eq!(next_ring_id(0), 1);
        let bd = Bd::ZERO.with_ring_id(7);
        assert_eq!(bd.ctrl().ring_id(), 3);
    }
}

#[cfg(any(kani, test))]
mod proofs;
