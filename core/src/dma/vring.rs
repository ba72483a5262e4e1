//! The vring: the host-resident, paged list of BDs a transfer is built into,
//! descriptor-handoff seed §2, and its relocation (`vring_addr_rewrite`, §2.4).
//!
//! libnrt's vring holds two directional blocks, TX at `vring+0x100` and RX at
//! `vring+0x120`, each `{count u32 @+0, first page @+8 (non-NULL = present),
//! already-lowered bool @+0x18}`; a `sealed` bool at `vring+0x20`; and the two ring
//! slots the lowering binds (TX `+0x158`, RX `+0x150`). Each block's BDs live in
//! pages of up to 0x10000 BDs chained through a pointer at `page + 0x100000`.
//!
//! Here a block is a [`DescBlock`] over **caller-provided pages**,
//! `&mut [[Bd; PAGE]]`: "chained at `page + 0x100000`" becomes the order of the
//! slice (page `k + 1` follows page `k`), so there is no link to corrupt and no
//! loop to bound but the slice's length, G-DMA-PAGES. `PAGE` is a const generic
//! that defaults to the seed's 0x10000 ([`VRING_PAGE_BDS`]); tests and small
//! controllers use smaller pages. A flat `&mut [Bd]` becomes pages with
//! `slice::as_chunks_mut::<PAGE>()`.

use super::bd::Bd;
use super::pring::PRing;
use super::{Direction, DmaError};

/// BDs per vring page (seed §2: "up to 0x10000 (64 Ki) BDs per page").
pub const VRING_PAGE_BDS: usize = 0x1_0000;
/// Byte offset of the next-page link in a libnrt vring page (seed §2.4,
/// `page + 0x100000` = 0x10000 BDs x 16 bytes). Documentation only: our chain is
/// the slice order.
pub const VRING_PAGE_LINK_OFFSET: usize = 0x10_0000;

const _: () = assert!(VRING_PAGE_BDS * super::bd::BD_SIZE == VRING_PAGE_LINK_OFFSET);

/// One directional block of a vring: its pages, BD count, and already-lowered flag
/// (seed §2.2: TX `vring+0x100..+0x118`, RX `vring+0x120..+0x138`).
#[derive(Debug)]
pub struct DescBlock<'a, const PAGE: usize = VRING_PAGE_BDS> {
    pages: &'a mut [[Bd; PAGE]],
    /// `+0x00`: number of BDs the block holds.
    count: u32,
    /// `+0x18`: already lowered into a ring (lowering skips it).
    lowered: bool,
}

impl<'a, const PAGE: usize> DescBlock<'a, PAGE> {
    const PAGE_NONZERO: () = assert!(PAGE > 0, "a vring page holds at least one BD");

    /// A block over `pages`, empty and not lowered. With no pages it is absent
    /// (the seed's NULL first page at `+0x08`).
    pub fn new(pages: &'a mut [[Bd; PAGE]]) -> Self {
        #[allow(clippy::let_unit_value)]
        let () = Self::PAGE_NONZERO;
        DescBlock { pages, count: 0, lowered: false }
    }

    /// An absent block (no pages).
    pub fn absent() -> Self {
        Self::new(&mut [])
    }

    /// `true` when the block has storage (the seed's present test at `+0x08`).
    pub fn present(&self) -> bool {
        !self.pages.is_empty()
    }

    /// The BD count (`+0x00`).
    pub fn count(&self) -> u32 {
        self.count
    }

    /// Set the BD count as a NEFF or a caller states it. It is not checked here:
    /// lowering reports a count its pages cannot back as an `ndesc` mismatch.
    pub fn set_count(&mut self, count: u32) {
        self.count = count;
    }

    /// `true` once lowered (`+0x18`).
    pub fn is_lowered(&self) -> bool {
        self.lowered
    }

    /// Mark lowered or not.
    pub fn set_lowered(&mut self, lowered: bool) {
        self.lowered = lowered;
    }

    /// How many BDs the pages hold.
    pub fn capacity(&self) -> u64 {
        (self.pages.len() as u64).saturating_mul(PAGE as u64)
    }

    /// BD `i`, if it is inside the pages (whether or not below the count).
    pub fn slot(&self, i: u32) -> Option<&Bd> {
        let i = i as usize;
        self.pages.get(i / PAGE)?.get(i % PAGE)
    }

    /// BD `i`, mutably, if it is inside the pages.
    pub fn slot_mut(&mut self, i: u32) -> Option<&mut Bd> {
        let i = i as usize;
        self.pages.get_mut(i / PAGE)?.get_mut(i % PAGE)
    }

    /// The block's BDs in order across pages: the first `count`, or fewer when the
    /// pages cannot back the count.
    pub fn bds(&self) -> impl Iterator<Item = &Bd> + '_ {
        self.pages.iter().flat_map(|p| p.iter()).take(self.count as usize)
    }

    /// The block's BDs as per-page runs (`min(remaining, PAGE)` BDs of each page, as
    /// the seed's walk does), mutably.
    fn runs_mut(&mut self) -> impl Iterator<Item = &mut [Bd]> + '_ {
        let mut remaining = self.count as usize;
        self.pages.iter_mut().map_while(move |page| {
            if remaining == 0 {
                return None;
            }
            let n = remaining.min(PAGE);
            remaining -= n;
            page.get_mut(..n)
        })
    }

    /// Room for `n` more BDs, or [`DmaError::VringFull`].
    pub fn check_room(&self, n: u32) -> Result<(), DmaError> {
        let needed = u64::from(self.count) + u64::from(n);
        let capacity = self.capacity().min(u64::from(u32::MAX));
        if needed > capacity {
            return Err(DmaError::VringFull { needed, capacity });
        }
        Ok(())
    }

    /// Append one BD after the last.
    pub fn push(&mut self, bd: Bd) -> Result<(), DmaError> {
        self.check_room(1)?;
        let i = self.count;
        let slot = self.slot_mut(i).ok_or(DmaError::VringFull { needed: u64::from(i) + 1, capacity: 0 })?;
        *slot = bd;
        self.count = i + 1;
        Ok(())
    }

    /// Relocate the block's BDs (see [`addr_rewrite`]).
    pub fn addr_rewrite(&mut self, reloc: &Relocation) {
        for run in self.runs_mut() {
            addr_rewrite(run, reloc);
        }
    }
}

/// The vring: TX and RX blocks, the sealed flag, and the rings lowering binds.
#[derive(Debug)]
pub struct VRing<'a, const PAGE: usize = VRING_PAGE_BDS> {
    pub(super) tx: DescBlock<'a, PAGE>,
    pub(super) rx: DescBlock<'a, PAGE>,
    /// `vring+0x20`: sealed; ring allocation and append are refused.
    pub(super) sealed: bool,
    /// `vring+0x158`: the TX (M2S) ring.
    pub(super) tx_ring: Option<PRing<'a>>,
    /// `vring+0x150`: the RX (S2M) ring.
    pub(super) rx_ring: Option<PRing<'a>>,
}

impl<'a, const PAGE: usize> VRing<'a, PAGE> {
    /// A vring whose TX BDs live in `tx_pages` and RX BDs in `rx_pages` (either may
    /// be empty: that block is absent).
    pub fn new(tx_pages: &'a mut [[Bd; PAGE]], rx_pages: &'a mut [[Bd; PAGE]]) -> Self {
        VRing {
            tx: DescBlock::new(tx_pages),
            rx: DescBlock::new(rx_pages),
            sealed: false,
            tx_ring: None,
            rx_ring: None,
        }
    }

    /// The block of direction `dir`.
    pub fn block(&self, dir: Direction) -> &DescBlock<'a, PAGE> {
        match dir {
            Direction::Tx => &self.tx,
            Direction::Rx => &self.rx,
        }
    }

    /// The block of direction `dir`, mutably.
    pub fn block_mut(&mut self, dir: Direction) -> &mut DescBlock<'a, PAGE> {
        match dir {
            Direction::Tx => &mut self.tx,
            Direction::Rx => &mut self.rx,
        }
    }

    /// `true` when sealed.
    pub fn is_sealed(&self) -> bool {
        self.sealed
    }

    /// Seal the vring: no more ring allocation, seed §2.1, or append.
    pub fn seal(&mut self) {
        self.sealed = true;
    }

    /// Append one BD to the block of `dir`; refused when sealed or full.
    pub fn push(&mut self, dir: Direction, bd: Bd) -> Result<(), DmaError> {
        if self.sealed {
            return Err(DmaError::Sealed);
        }
        self.block_mut(dir).push(bd)
    }

    /// The ring bound in direction `dir`, if any.
    pub fn ring(&self, dir: Direction) -> Option<&PRing<'a>> {
        match dir {
            Direction::Tx => self.tx_ring.as_ref(),
            Direction::Rx => self.rx_ring.as_ref(),
        }
    }

    /// The ring bound in direction `dir`, mutably.
    pub fn ring_mut(&mut self, dir: Direction) -> Option<&mut PRing<'a>> {
        match dir {
            Direction::Tx => self.tx_ring.as_mut(),
            Direction::Rx => self.rx_ring.as_mut(),
        }
    }

    /// Both rings, as `hw_exec_queue_add_descriptors` needs them (seed §3.2: both
    /// must be bound).
    pub fn rings_mut(&mut self) -> Result<(&mut PRing<'a>, &mut PRing<'a>), DmaError> {
        let tx = self.tx_ring.as_mut().ok_or(DmaError::NotBound(Direction::Tx))?;
        let rx = self.rx_ring.as_mut().ok_or(DmaError::NotBound(Direction::Rx))?;
        Ok((tx, rx))
    }

    /// `vring_addr_rewrite`, seed §2.4, on the host only: relocate every BD of both
    /// blocks whose `buf_ptr` lies in the window, across pages.
    ///
    /// A block already lowered has copies this cannot reach (the ring image and
    /// the device ring): the call is then refused with
    /// [`DmaError::RelocateAfterLower`] and nothing moves. The seed's order is
    /// lower, then relocate, §0, §7; for that, use [`VRing::relocate`], which
    /// moves the copies too, G-DMA-RELOC-LOWERED.
    pub fn addr_rewrite(&mut self, reloc: &Relocation) -> Result<(), DmaError> {
        for dir in [Direction::Tx, Direction::Rx] {
            if self.block(dir).is_lowered() {
                return Err(DmaError::RelocateAfterLower(dir));
            }
        }
        self.rewrite_blocks(reloc);
        Ok(())
    }

    /// Relocate both blocks (the host vring only).
    pub(super) fn rewrite_blocks(&mut self, reloc: &Relocation) {
        self.tx.addr_rewrite(reloc);
        self.rx.addr_rewrite(reloc);
    }
}

/// A rebased window: BD addresses in `[old_base, old_base + size)` move to the same
/// offset from `new_base` (by `delta = new_base - old_base`).
///
/// Both windows must fit in the 64-bit address space (`base + size <= 2^64`);
/// libnrt computes `old_base + size` in u64 and would wrap silently
/// ([`DmaError::WindowOverflow`] instead). Then no relocated address can overflow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Relocation {
    old_base: u64,
    size: u64,
    new_base: u64,
}

impl Relocation {
    /// The window `[old_base, old_base + size)` moved to `new_base`.
    pub const fn new(old_base: u64, size: u64, new_base: u64) -> Result<Relocation, DmaError> {
        const TOP: u128 = 1 << 64;
        if old_base as u128 + size as u128 > TOP || new_base as u128 + size as u128 > TOP {
            return Err(DmaError::WindowOverflow);
        }
        Ok(Relocation { old_base, size, new_base })
    }

    /// The window moved by a signed `delta` (the seed's `bd[0] += delta`).
    pub const fn by_delta(old_base: u64, size: u64, delta: i64) -> Result<Relocation, DmaError> {
        match old_base.checked_add_signed(delta) {
            Some(new_base) => Relocation::new(old_base, size, new_base),
            None => Err(DmaError::WindowOverflow),
        }
    }

    /// `true` when `addr` is inside the old window: one wrapping subtraction and
    /// one compare (`addr - old_base < size`, which is false below the base).
    #[inline(always)]
    pub const fn contains(&self, addr: u64) -> bool {
        addr.wrapping_sub(self.old_base) < self.size
    }

    /// Where `addr` goes: moved when inside the window, unchanged otherwise.
    #[inline(always)]
    pub const fn apply(&self, addr: u64) -> u64 {
        let off = addr.wrapping_sub(self.old_base);
        if off < self.size {
            // off < size and new_base + size <= 2^64: no overflow.
            self.new_base.wrapping_add(off)
        } else {
            addr
        }
    }
}

/// Relocate `bds` in place: every BD whose `buf_ptr` (+8) lies in the window moves;
/// the others, and every other byte, are untouched, seed §2.4.
///
/// Branch-free per BD (a select of the moved or the unchanged address), so the
/// loop vectorises; see `benches/dma.rs`.
#[inline]
pub fn addr_rewrite(bds: &mut [Bd], reloc: &Relocation) {
    let r = *reloc;
    for bd in bds.iter_mut() {
        let p = bd.buf_ptr.get();
        bd.buf_ptr.set(r.apply(p));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dma::bd::LenCtrl;
    use proptest::prelude::*;

    fn bd(addr: u64) -> Bd {
        Bd::new(LenCtrl::new().with_length(16), 0xAA55, addr)
    }

    #[test]
    fn page_constants_follow_the_seed() {
        assert_eq!(VRING_PAGE_BDS, 0x10000);
        assert_eq!(VRING_PAGE_LINK_OFFSET, 0x100000);
    }

    #[test]
    fn relocation_is_exact_at_the_window_edges() {
        let r = Relocation::new(0x1000, 0x100, 0x9000).unwrap();
        let mut bds = [bd(0xFFF), bd(0x1000), bd(0x1080), bd(0x10FF), bd(0x1100), bd(0)];
        addr_rewrite(&mut bds, &r);
        let got: Vec<u64> = bds.iter().map(Bd::addr).collect();
        assert_eq!(got, [0xFFF, 0x9000, 0x9080, 0x90FF, 0x1100, 0]);
        // Only buf_ptr (+8) changed.
        assert!(bds.iter().all(|b| b.meta_ctrl.get() == 0xAA55 && b.ctrl().length() == 16));
    }

    #[test]
    fn relocation_by_negative_delta_and_empty_window() {
        let r = Relocation::by_delta(0x5000, 0x10, -0x4000).unwrap();
        assert_eq!(r.apply(0x5008), 0x1008);
        assert_eq!(r.apply(0x5010), 0x5010);
        let r = Relocation::new(0x5000, 0, 0).unwrap();
        assert_eq!(r.apply(0x5000), 0x5000);
    }

    #[test]
    fn windows_that_overflow_are_refused() {
        assert_eq!(Relocation::new(u64::MAX, 2, 0), Err(DmaError::WindowOverflow));
        assert_eq!(Relocation::new(0, 2, u64::MAX), Err(DmaError::WindowOverflow));
        assert_eq!(Relocation::by_delta(1, 1, -2), Err(DmaError::WindowOverflow));
        assert_eq!(Relocation::by_delta(u64::MAX, 1, 1), Err(DmaError::WindowOverflow));
        // A window ending exactly at 2^64 is fine, and its last address moves.
        let r = Relocation::new(u64::MAX - 0xF, 0x10, 0).unwrap();
        assert_eq!(r.apply(u64::MAX), 0xF);
        assert_eq!(r.apply(u64::MAX - 0x10), u64::MAX - 0x10);
        let r = Relocation::new(0, 0x10, u64::MAX - 0xF).unwrap();
        assert_eq!(r.apply(0xF), u64::MAX);
    }

    #[test]
    fn relocation_crosses_page_boundaries_and_stops_at_the_count() {
        let mut tx = [[Bd::ZERO; 4]; 3];
        let mut rx = [[Bd::ZERO; 4]; 1];
        let mut v: VRing<'_, 4> = VRing::new(&mut tx, &mut rx);
        for i in 0..10u64 {
            v.push(Direction::Tx, bd(0x1000 + i * 0x10)).unwrap();
        }
        v.push(Direction::Rx, bd(0x1000)).unwrap();
        v.push(Direction::Rx, bd(0x1030)).unwrap();
        // Window covers BDs 2..=5 of TX: pages 0 and 1.
        let r = Relocation::new(0x1020, 0x40, 0x8000_0000).unwrap();
        v.addr_rewrite(&r).unwrap();
        let got: Vec<u64> = v.block(Direction::Tx).bds().map(Bd::addr).collect();
        let want: Vec<u64> = (0..10u64)
            .map(|i| if (2..6).contains(&i) { 0x8000_0000 + (i - 2) * 0x10 } else { 0x1000 + i * 0x10 })
            .collect();
        assert_eq!(got, want);
        // The RX block is relocated too.
        let rx: Vec<u64> = v.block(Direction::Rx).bds().map(Bd::addr).collect();
        assert_eq!(rx, [0x1000, 0x8000_0010]);
        // Slots past the count are not BDs and are not touched.
        assert_eq!(v.block(Direction::Tx).slot(10).unwrap(), &Bd::ZERO);
    }

    #[test]
    fn push_refuses_full_and_sealed() {
        let mut tx = [[Bd::ZERO; 2]; 1];
        let mut v: VRing<'_, 2> = VRing::new(&mut tx, &mut []);
        v.push(Direction::Tx, bd(1)).unwrap();
        v.push(Direction::Tx, bd(2)).unwrap();
        assert_eq!(v.push(Direction::Tx, bd(3)), Err(DmaError::VringFull { needed: 3, capacity: 2 }));
        assert_eq!(v.push(Direction::Rx, bd(3)), Err(DmaError::VringFull { needed: 1, capacity: 0 }));
        assert!(!v.block(Direction::Rx).present());
        v.seal();
        assert!(v.is_sealed());
        assert_eq!(v.push(Direction::Tx, bd(3)), Err(DmaError::Sealed));
    }

    #[test]
    fn a_count_beyond_the_pages_is_safe() {
        let mut tx = [[Bd::ZERO; 2]; 2];
        let mut v: VRing<'_, 2> = VRing::new(&mut tx, &mut []);
        v.block_mut(Direction::Tx).set_count(u32::MAX);
        assert_eq!(v.block(Direction::Tx).bds().count(), 4);
        v.addr_rewrite(&Relocation::new(0, u64::MAX, 1).unwrap()).unwrap();
        assert!(v.block(Direction::Tx).bds().all(|b| b.addr() == 1));
        assert!(v.block(Direction::Tx).slot(4).is_none());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 4 } else { 256 }))]

        /// Relocation changes exactly the BDs inside the window, by the delta, and
        /// nothing else, whatever the window and the addresses.
        #[test]
        fn relocation_matches_the_reference(
            addrs in proptest::collection::vec(any::<u64>(), 0..40),
            old_base in any::<u64>(),
            size in any::<u64>(),
            new_base in any::<u64>(),
            pick in any::<prop::sample::Index>(),
            count in 0u32..48,
        ) {
            // Make some addresses hit the window edges.
            let mut addrs = addrs;
            if !addrs.is_empty() {
                let i = pick.index(addrs.len());
                addrs[i] = old_base.wrapping_add(size).wrapping_sub(1);
                let j = (i + 1) % addrs.len();
                addrs[j] = old_base;
            }
            let Ok(r) = Relocation::new(old_base, size, new_base) else {
                prop_assert!(old_base as u128 + size as u128 > 1u128 << 64 || new_base as u128 + size as u128 > 1u128 << 64);
                return Ok(());
            };
            let mut pages = [[Bd::ZERO; 8]; 5];
            let mut v: VRing<'_, 8> = VRing::new(&mut pages, &mut []);
            for &a in &addrs {
                v.push(Direction::Tx, bd(a)).unwrap();
            }
            let stated = count.min(addrs.len() as u32);
            v.block_mut(Direction::Tx).set_count(stated);
            v.addr_rewrite(&r).unwrap();
            for (i, &a) in addrs.iter().enumerate() {
                let got = v.block(Direction::Tx).slot(i as u32).unwrap();
                let inside = (a as u128) >= old_base as u128 && (a as u128) < old_base as u128 + size as u128;
                let want = if (i as u32) < stated && inside { (a - old_base) + new_base } else { a };
                prop_assert_eq!(got.addr(), want);
                prop_assert_eq!(got.meta_ctrl.get(), 0xAA55);
            }
        }
    }
}
