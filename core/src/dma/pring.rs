//! The pring (the device ring image), ring allocation and binding, lowering, and
//! the completion-semaphore selector, descriptor-handoff seed §2.1-§2.3, §3.4.
//!
//! libnrt's pring is a 32-byte host object (`calloc(1, 0x20)`) naming a device
//! ring: its device address, depth, ring type, semaphore id (`pring + 0x10`) and
//! direction. Here [`PRing`] carries the same fields plus the host image of the
//! ring, a `&mut [Bd]` the caller provides (its length is the ring's depth). The
//! device backing comes from [`RingBacking`] (`dma_ring_alloc`); the bytes reach
//! the device through [`DeviceMemory`] (`dmem_buf_copyin`).
//!
//! Lowering (`dma_ring_create_prings_from_vring`, §2.2) takes TX then RX, each only
//! when the block is present and not yet lowered: check the `ndesc
//! actual/expected` invariant, §2.3, first, allocate and bind the ring (or reuse
//! the one a failed attempt left bound), copy the block's BDs into the image
//! stamped with the first lap's ring id, zero-pad to the depth, stage the image to
//! the device, mark lowered.
//!
//! G-DMA-LOWER-RINGID: the seed copies the vring's BDs as they are; a BD writer
//! leaves the ring id 0, but the device fetches the first lap with ring id 1
//! (driver §5, `UDMA_INITIAL_RING_ID`) and takes any other id for a prefetch
//! error. A lowered static ring is the ring's first lap from slot 0, so lowering
//! stamps every copied BD with [`INITIAL_RING_ID`]; the zero padding keeps ring id
//! 0 (it is not a descriptor, and a device that fetched it should fault).
//!
//! G-DMA-MISMATCH: a count the pages or the ring cannot hold is refused before
//! anything is allocated, bound, copied or staged, so a refused lowering leaves no
//! ring behind. A ring that was allocated and bound but not staged (the device
//! write failed) stays bound, and the next lowering of that direction reuses it
//! rather than allocating (and leaking) another backing.

use zerocopy::IntoBytes;

use super::bd::{Bd, INITIAL_RING_ID};
use super::vring::{addr_rewrite, DescBlock, Relocation, VRing};
use super::{Direction, DmaError, DmaEvent, ALLOC_DIR_RX, ALLOC_DIR_TX};
use crate::hal::{DeviceMemory, ErrorType, EventSink};
use crate::trace::emit;

/// Size of libnrt's pring object (`calloc(1, 0x20)`, seed §2.1).
pub const PRING_OBJECT_BYTES: usize = 0x20;
/// The ring type lowering allocates and semaphore selection requires (`r8d = 2`
/// at `dma_pring_alloc`, §2.2; the assert at `dma_ring.c:0x4fe`, §3.4).
pub const RING_TYPE_STATIC: u32 = 2;
/// A pring semaphore id meaning "use the per-direction table", seed §3.4.
pub const SEMA_FROM_TABLE: u32 = 0xFFFF_FFFF;
/// The largest UDMA ring, in descriptors, driver §5: `2^24 - 16`.
pub const UDMA_MAX_RING_DESCS: u32 = (1 << 24) - 16;

/// The device backing of rings, `dma_ring_alloc`, seed §2.1.
///
/// # For platform authors
///
/// Return the device address of memory for `depth` 16-byte descriptors. The
/// driver's rules (`neuron-driver-facts.md` §5: 256-byte aligned start and end, at
/// least 32 descriptors) are the platform's to enforce; core only bounds the depth
/// by [`UDMA_MAX_RING_DESCS`].
pub trait RingBacking: ErrorType {
    /// Allocate device memory for a ring of `depth` descriptors in direction `dir`.
    fn alloc_ring(&mut self, dir: Direction, depth: u32) -> Result<u64, Self::Error>;
}

impl<T: RingBacking + ?Sized> RingBacking for &mut T {
    fn alloc_ring(&mut self, dir: Direction, depth: u32) -> Result<u64, Self::Error> {
        T::alloc_ring(self, dir, depth)
    }
}

/// The per-direction completion semaphores a ring falls back to when its own id is
/// [`SEMA_FROM_TABLE`], `per_direction_sema_table[..][dir]`, seed §3.4.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SemaTable {
    /// The TX semaphore.
    pub tx: u32,
    /// The RX semaphore.
    pub rx: u32,
}

/// A physical (device) ring and its host image.
#[derive(Debug)]
pub struct PRing<'a> {
    dev_addr: u64,
    ring_type: u32,
    sema: u32,
    dir: Direction,
    pub(super) image: &'a mut [Bd],
    /// Slots `0..lowered` hold the BDs lowering copied from the vring (what a
    /// later relocation must move too, G-DMA-RELOC-LOWERED).
    pub(super) lowered: u32,
}

impl<'a> PRing<'a> {
    /// A ring at device address `dev_addr` whose host image is `image` (depth =
    /// `image.len()`, `1..=UDMA_MAX_RING_DESCS`), semaphore id [`SEMA_FROM_TABLE`].
    pub fn new(dir: Direction, dev_addr: u64, ring_type: u32, image: &'a mut [Bd]) -> Result<PRing<'a>, DmaError> {
        check_depth(image.len())?;
        Ok(PRing { dev_addr, ring_type, sema: SEMA_FROM_TABLE, dir, image, lowered: 0 })
    }

    /// The device address of the ring.
    pub fn dev_addr(&self) -> u64 {
        self.dev_addr
    }

    /// Depth in descriptors.
    pub fn depth(&self) -> u32 {
        // Bounded by UDMA_MAX_RING_DESCS at construction.
        self.image.len() as u32
    }

    /// The ring type.
    pub fn ring_type(&self) -> u32 {
        self.ring_type
    }

    /// The direction.
    pub fn direction(&self) -> Direction {
        self.dir
    }

    /// The ring's own semaphore id (`pring + 0x10`), [`SEMA_FROM_TABLE`] by default.
    pub fn semaphore(&self) -> u32 {
        self.sema
    }

    /// Set the ring's own semaphore id.
    pub fn set_semaphore(&mut self, sema: u32) {
        self.sema = sema;
    }

    /// The host image.
    pub fn image(&self) -> &[Bd] {
        self.image
    }

    /// BDs lowering copied into the image (slots `0..n`); 0 before lowering.
    pub fn lowered(&self) -> u32 {
        self.lowered
    }

    /// `dma_ring_get_sema_to_inc`, seed §3.4: the semaphore the device increments
    /// on this ring's completions. The ring type must be 2 ([`DmaError::BadRingType`]
    /// where libnrt asserts); the ring's own id unless it is 0xFFFFFFFF, else the
    /// table's entry for the ring's direction.
    pub fn sema_to_inc(&self, table: &SemaTable) -> Result<u32, DmaError> {
        if self.ring_type != RING_TYPE_STATIC {
            return Err(DmaError::BadRingType(self.ring_type));
        }
        if self.sema != SEMA_FROM_TABLE {
            return Ok(self.sema);
        }
        Ok(match self.dir {
            Direction::Tx => table.tx,
            Direction::Rx => table.rx,
        })
    }

    /// Copy the whole host image to the device ring.
    pub fn stage_all<M: DeviceMemory + ?Sized>(&self, mem: &mut M) -> Result<(), DmaError> {
        mem.copy_in(self.dev_addr, self.image.as_bytes()).map_err(DmaError::platform)
    }
}

fn check_depth(len: usize) -> Result<(), DmaError> {
    if len == 0 || len > UDMA_MAX_RING_DESCS as usize {
        return Err(DmaError::BadRingDepth(len as u64));
    }
    Ok(())
}

/// The `ndesc actual/expected` check of lowering `block` into a ring of `depth`,
/// seed §2.3, done before anything is copied: `actual` is what the copy would
/// move (the block's BDs its pages back, at most `depth`). A mismatch is reported
/// ([`DmaEvent::NdescMismatch`]) and refused ([`DmaError::CountMismatch`]).
fn check_count<const PAGE: usize, S: EventSink<DmaEvent> + ?Sized>(
    block: &DescBlock<'_, PAGE>,
    dir: Direction,
    depth: u32,
    sink: &mut S,
) -> Result<u32, DmaError> {
    let expected = block.count();
    let backed = block.capacity().min(u64::from(expected));
    // backed <= expected: fits in u32.
    let actual = (backed as u32).min(depth);
    if actual != expected {
        emit(sink, DmaEvent::NdescMismatch { dir, actual, expected });
        return Err(DmaError::CountMismatch { dir, actual, expected });
    }
    Ok(actual)
}

/// `vring_dump_to_pring_descriptors_padded` for one block: check the count, copy
/// (stamped with the first lap's ring id, G-DMA-LOWER-RINGID), zero-pad, stage.
/// Returns the BDs copied.
fn dump_padded<const PAGE: usize, M: DeviceMemory + ?Sized, S: EventSink<DmaEvent> + ?Sized>(
    block: &DescBlock<'_, PAGE>,
    ring: &mut PRing<'_>,
    mem: &mut M,
    sink: &mut S,
) -> Result<u32, DmaError> {
    let dir = ring.direction();
    let ndesc = check_count(block, dir, ring.depth(), sink)?;
    let mut src = block.bds();
    for slot in ring.image.iter_mut() {
        *slot = match src.next() {
            Some(bd) => bd.with_ring_id(INITIAL_RING_ID),
            None => Bd::ZERO,
        };
    }
    ring.lowered = ndesc;
    if let Err(e) = ring.stage_all(mem) {
        if let DmaError::Platform(kind) = e {
            emit(sink, DmaEvent::RingWriteFailed { dir, kind });
        }
        return Err(e);
    }
    emit(sink, DmaEvent::Lowered { dir, ndesc, depth: ring.depth() });
    Ok(ndesc)
}

impl<'a, const PAGE: usize> VRing<'a, PAGE> {
    /// `dma_pring_alloc`, seed §2.1: refuse a sealed vring, validate the direction
    /// (1 binds the TX slot, 2 the RX slot, anything else is
    /// [`DmaError::BadDirection`]) and the depth (`image.len()`), allocate the device
    /// backing, and bind the ring. An earlier ring in that slot is replaced.
    ///
    /// Unlike libnrt, the direction is checked before the device allocation, so a
    /// refused call allocates nothing.
    pub fn pring_alloc<B: RingBacking + ?Sized, S: EventSink<DmaEvent> + ?Sized>(
        &mut self,
        backing: &mut B,
        sink: &mut S,
        image: &'a mut [Bd],
        ring_type: u32,
        dir: u32,
    ) -> Result<(), DmaError> {
        if self.sealed {
            return Err(DmaError::Sealed);
        }
        let dir = Direction::from_alloc_dir(dir)?;
        check_depth(image.len())?;
        let depth = image.len() as u32;
        let dev_addr = match backing.alloc_ring(dir, depth) {
            Ok(a) => a,
            Err(e) => {
                let kind = crate::hal::Error::kind(&e);
                emit(sink, DmaEvent::RingAllocFailed { dir, kind });
                return Err(DmaError::Platform(kind));
            }
        };
        let ring = PRing::new(dir, dev_addr, ring_type, image)?;
        match dir {
            Direction::Tx => self.tx_ring = Some(ring),
            Direction::Rx => self.rx_ring = Some(ring),
        }
        Ok(())
    }

    /// `dma_ring_create_prings_from_vring`, seed §2.2: for TX then RX, when the
    /// block is present and not yet lowered, check that the ring can take the
    /// block's count (else [`DmaError::CountMismatch`] with nothing allocated or
    /// bound), allocate a type-2 ring over the direction's image and bind it, copy
    /// the block into it zero-padded to its depth, stage it to the device, and mark
    /// the block lowered. The image of a direction that is skipped is not used.
    ///
    /// A direction that already has a ring bound (an earlier attempt whose device
    /// write failed, or a caller's [`VRing::pring_alloc`]) lowers into that ring:
    /// nothing is allocated, and that direction's image argument is not used.
    ///
    /// Stops at the first failure (TX failing leaves RX untouched); a failed block
    /// stays not-lowered.
    pub fn create_prings<D, S>(
        &mut self,
        dev: &mut D,
        sink: &mut S,
        tx_image: &'a mut [Bd],
        rx_image: &'a mut [Bd],
    ) -> Result<(), DmaError>
    where
        D: RingBacking + DeviceMemory + ?Sized,
        S: EventSink<DmaEvent> + ?Sized,
    {
        for (dir, image) in [(Direction::Tx, tx_image), (Direction::Rx, rx_image)] {
            let block = self.block(dir);
            if !block.present() || block.is_lowered() {
                continue;
            }
            if self.ring(dir).is_none() {
                check_depth(image.len())?;
                // Bounded by UDMA_MAX_RING_DESCS above.
                check_count(self.block(dir), dir, image.len() as u32, sink)?;
                let raw = match dir {
                    Direction::Tx => ALLOC_DIR_TX,
                    Direction::Rx => ALLOC_DIR_RX,
                };
                self.pring_alloc(dev, sink, image, RING_TYPE_STATIC, raw)?;
            }
            self.dump_to_pring(dir, dev, sink)?;
            self.block_mut(dir).set_lowered(true);
        }
        Ok(())
    }

    /// `vring_addr_rewrite`, seed §2.4, in the seed's order, after lowering (§0,
    /// §7: lower, then relocate): relocate every BD of both blocks whose `buf_ptr`
    /// lies in the window, and the copies lowering made of them: the lowered run of
    /// each bound ring's image (slots `0..lowered()`, not the zero padding), which
    /// is then staged to the device again, G-DMA-RELOC-LOWERED. Before lowering
    /// it touches the host only, as [`VRing::addr_rewrite`].
    ///
    /// Host copies are all relocated first; then TX and RX are re-staged. A failed
    /// device write is reported ([`DmaEvent::RingWriteFailed`]) and the first such
    /// error returned; the other direction is still re-staged. The host side is
    /// then relocated (do not relocate again) and that ring's device copy is
    /// stale until [`PRing::stage_all`] succeeds.
    pub fn relocate<M, S>(&mut self, mem: &mut M, sink: &mut S, reloc: &Relocation) -> Result<(), DmaError>
    where
        M: DeviceMemory + ?Sized,
        S: EventSink<DmaEvent> + ?Sized,
    {
        self.rewrite_blocks(reloc);
        let mut result = Ok(());
        for ring in [self.tx_ring.as_mut(), self.rx_ring.as_mut()].into_iter().flatten() {
            if ring.lowered == 0 {
                continue;
            }
            let run = ring.image.get_mut(..ring.lowered as usize).unwrap_or(&mut []);
            addr_rewrite(run, reloc);
            if let Err(e) = ring.stage_all(mem) {
                if let DmaError::Platform(kind) = e {
                    emit(sink, DmaEvent::RingWriteFailed { dir: ring.direction(), kind });
                }
                if result.is_ok() {
                    result = Err(e);
                }
            }
        }
        result
    }

    /// `vring_dump_to_pring_descriptors` for one direction, seed §2.3: copy the
    /// block into its bound ring, each BD stamped with ring id 1, zero-padded to
    /// the depth, and stage the image; a block count its pages or the ring cannot
    /// hold is reported ([`DmaEvent::NdescMismatch`]) and refused
    /// ([`DmaError::CountMismatch`]) before the image or the device is touched.
    /// Returns the BDs copied.
    pub fn dump_to_pring<M, S>(&mut self, dir: Direction, mem: &mut M, sink: &mut S) -> Result<u32, DmaError>
    where
        M: DeviceMemory + ?Sized,
        S: EventSink<DmaEvent> + ?Sized,
    {
        let (block, ring) = match dir {
            Direction::Tx => (&self.tx, self.tx_ring.as_mut()),
            Direction::Rx => (&self.rx, self.rx_ring.as_mut()),
        };
        let ring = ring.ok_or(DmaError::NotBound(dir))?;
        dump_padded(block, ring, mem, sink)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dma::bd::LenCtrl;
    use crate::hal::ErrorKind;
    use proptest::prelude::*;

    /// A device: rings allocated at 0x10000 steps, memory as a log of copy-ins.
    #[derive(Default)]
    struct Dev {
        next: u64,
        allocs: Vec<(Direction, u32)>,
        writes: Vec<(u64, Vec<u8>)>,
        fail_alloc: bool,
        fail_write: bool,
    }
    impl ErrorType for Dev {
        type Error = ErrorKind;
    }
    impl RingBacking for Dev {
        fn alloc_ring(&mut self, dir: Direction, depth: u32) -> Result<u64, ErrorKind> {
            if self.fail_alloc {
                return Err(ErrorKind::Other);
            }
            self.allocs.push((dir, depth));
            self.next += 0x10000;
            Ok(self.next)
        }
    }
    impl DeviceMemory for Dev {
        fn copy_in(&mut self, addr: u64, data: &[u8]) -> Result<(), ErrorKind> {
            if self.fail_write {
                return Err(ErrorKind::Io);
            }
            self.writes.push((addr, data.to_vec()));
            Ok(())
        }
        fn copy_out(&mut self, _: u64, _: &mut [u8]) -> Result<(), ErrorKind> {
            Err(ErrorKind::NotMapped)
        }
    }
    type Sink = crate::testutil::EventLog<DmaEvent>;

    fn bd(i: u64) -> Bd {
        Bd::new(LenCtrl::new().with_length(64), 0, 0x100 + i)
    }

    #[test]
    fn lowering_copies_tx_then_rx_and_pads_to_the_depth() {
        let mut txp = [[Bd::ZERO; 4]; 2];
        let mut rxp = [[Bd::ZERO; 4]; 1];
        let mut v: VRing<'_, 4> = VRing::new(&mut txp, &mut rxp);
        for i in 0..5 {
            v.push(Direction::Tx, bd(i)).unwrap();
        }
        v.push(Direction::Rx, bd(9)).unwrap();
        let mut tx_img = [bd(77); 8];
        let mut rx_img = [bd(77); 3];
        let (mut dev, mut sink) = (Dev::default(), Sink::default());
        v.create_prings(&mut dev, &mut sink, &mut tx_img, &mut rx_img).unwrap();
        assert_eq!(dev.allocs, [(Direction::Tx, 8), (Direction::Rx, 3)]);
        let tx = v.ring(Direction::Tx).unwrap();
        assert_eq!(tx.dev_addr(), 0x10000);
        assert_eq!(tx.ring_type(), RING_TYPE_STATIC);
        assert_eq!(tx.depth(), 8);
        // Copied with the first lap's ring id, G-DMA-LOWER-RINGID, zero padding after.
        let want: Vec<Bd> = (0..5).map(|i| bd(i).with_ring_id(1)).chain([Bd::ZERO; 3]).collect();
        assert_eq!(tx.image(), &want[..]);
        assert_eq!(tx.lowered(), 5);
        assert_eq!(v.ring(Direction::Rx).unwrap().image(), &[bd(9).with_ring_id(1), Bd::ZERO, Bd::ZERO]);
        // Staged whole, TX first.
        assert_eq!(dev.writes.len(), 2);
        assert_eq!(dev.writes[0].0, 0x10000);
        assert_eq!(dev.writes[0].1.len(), 8 * 16);
        assert_eq!(&dev.writes[0].1[8..16], &0x100u64.to_le_bytes());
        assert_eq!(dev.writes[1].0, 0x20000);
        assert!(v.block(Direction::Tx).is_lowered() && v.block(Direction::Rx).is_lowered());
        assert_eq!(sink.events[0], DmaEvent::Lowered { dir: Direction::Tx, ndesc: 5, depth: 8 });
        // Lowered blocks are skipped the second time: nothing allocated or written.
        let (mut a, mut b) = ([Bd::ZERO; 8], [Bd::ZERO; 8]);
        v.create_prings(&mut dev, &mut sink, &mut a, &mut b).unwrap();
        assert_eq!(dev.allocs.len(), 2);
        assert_eq!(dev.writes.len(), 2);
    }

    /// A backing lent as `&mut B` (the blanket impl) allocates as `B` does.
    #[test]
    fn a_lent_backing_is_the_backing() {
        let mut txp = [[Bd::ZERO; 4]; 1];
        let mut v: VRing<'_, 4> = VRing::new(&mut txp, &mut []);
        v.push(Direction::Tx, bd(0)).unwrap();
        let (mut dev, mut sink) = (Dev { next: 0x70000, ..Dev::default() }, Sink::default());
        let mut img = [Bd::ZERO; 4];
        let mut lent: &mut Dev = &mut dev;
        v.pring_alloc(&mut lent, &mut sink, &mut img, 2, 1).unwrap();
        assert_eq!(v.ring(Direction::Tx).unwrap().dev_addr(), 0x80000);
        assert_eq!(dev.allocs, [(Direction::Tx, 4)]);
    }

    /// Ring depths: 1 up to the UDMA maximum, 2^24 - 16, driver §5; checked on
    /// the length alone (an image that large is 256 MiB).
    #[test]
    fn ring_depths_are_bounded_by_the_udma_maximum() {
        assert_eq!(check_depth(0), Err(DmaError::BadRingDepth(0)));
        assert_eq!(check_depth(1), Ok(()));
        assert_eq!(check_depth(0x00FF_FFF0), Ok(()));
        assert_eq!(check_depth(0x00FF_FFF1), Err(DmaError::BadRingDepth(0x00FF_FFF1)));
        assert_eq!(check_depth(usize::MAX), Err(DmaError::BadRingDepth(u64::MAX)));
    }

    #[test]
    fn absent_blocks_are_skipped() {
        let mut txp = [[Bd::ZERO; 4]; 1];
        let mut v: VRing<'_, 4> = VRing::new(&mut txp, &mut []);
        v.push(Direction::Tx, bd(0)).unwrap();
        let mut tx_img = [Bd::ZERO; 4];
        let (mut dev, mut sink) = (Dev::default(), Sink::default());
        v.create_prings(&mut dev, &mut sink, &mut tx_img, &mut []).unwrap();
        assert_eq!(dev.allocs, [(Direction::Tx, 4)]);
        assert!(v.ring(Direction::Rx).is_none() && v.ring_mut(Direction::Rx).is_none());
        // The bound ring, mutably: what is set through it is what the vring holds.
        v.ring_mut(Direction::Tx).unwrap().set_semaphore(9);
        assert_eq!(v.ring(Direction::Tx).map(PRing::semaphore), Some(9));
    }

    #[test]
    fn a_count_mismatch_is_reported_and_nothing_is_staged() {
        // The ring is shallower than the block.
        let mut txp = [[Bd::ZERO; 4]; 2];
        let mut v: VRing<'_, 4> = VRing::new(&mut txp, &mut []);
        for i in 0..6 {
            v.push(Direction::Tx, bd(i)).unwrap();
        }
        let mut tx_img = [Bd::ZERO; 4];
        let (mut dev, mut sink) = (Dev::default(), Sink::default());
        let e = v.create_prings(&mut dev, &mut sink, &mut tx_img, &mut []).unwrap_err();
        assert_eq!(e, DmaError::CountMismatch { dir: Direction::Tx, actual: 4, expected: 6 });
        assert_eq!(e.status().code(), 2);
        assert!(dev.writes.is_empty());
        assert_eq!(sink.events, [DmaEvent::NdescMismatch { dir: Direction::Tx, actual: 4, expected: 6 }]);
        assert!(!v.block(Direction::Tx).is_lowered());

        // The block's stated count is beyond its pages.
        let mut txp = [[Bd::ZERO; 2]; 1];
        let mut v: VRing<'_, 2> = VRing::new(&mut txp, &mut []);
        v.block_mut(Direction::Tx).set_count(1000);
        let mut tx_img = [Bd::ZERO; 64];
        let e = v.create_prings(&mut dev, &mut sink, &mut tx_img, &mut []).unwrap_err();
        assert_eq!(e, DmaError::CountMismatch { dir: Direction::Tx, actual: 2, expected: 1000 });
    }

    #[test]
    fn allocation_refuses_sealed_bad_directions_and_depths() {
        let mut txp = [[Bd::ZERO; 4]; 1];
        let mut imgs = [[Bd::ZERO; 4]; 6];
        let mut imgs = imgs.iter_mut();
        let mut v: VRing<'_, 4> = VRing::new(&mut txp, &mut []);
        let (mut dev, mut sink) = (Dev::default(), Sink::default());
        for bad in [0, 3, u32::MAX] {
            let img = imgs.next().unwrap();
            assert_eq!(v.pring_alloc(&mut dev, &mut sink, img, 2, bad), Err(DmaError::BadDirection(bad)));
        }
        assert_eq!(v.pring_alloc(&mut dev, &mut sink, &mut [], 2, 1), Err(DmaError::BadRingDepth(0)));
        assert!(dev.allocs.is_empty(), "nothing allocated for a refused call");
        v.pring_alloc(&mut dev, &mut sink, imgs.next().unwrap(), 2, 2).unwrap();
        assert!(v.ring(Direction::Rx).is_some() && v.ring(Direction::Tx).is_none());
        v.pring_alloc(&mut dev, &mut sink, imgs.next().unwrap(), 2, 1).unwrap();
        assert!(v.ring(Direction::Tx).is_some());
        v.seal();
        assert_eq!(v.pring_alloc(&mut dev, &mut sink, imgs.next().unwrap(), 2, 1), Err(DmaError::Sealed));
    }

    /// A BD writer leaves ring id 0, the device expects 1 on the
    /// first lap. What lowering stages must carry 1, G-DMA-LOWER-RINGID, so that
    /// a device fetching the static ring as lowered takes it.
    #[test]
    fn a_lowered_ring_carries_the_first_laps_ring_id_to_the_device() {
        let mut txp = [[Bd::ZERO; 4]; 1];
        let mut rxp = [[Bd::ZERO; 4]; 1];
        let mut v: VRing<'_, 4> = VRing::new(&mut txp, &mut rxp);
        let t = crate::dma::Transfer { op: 0, elem_count: 3, granule: 1, elem_bytes: 8, src: 0x100, dst: 0x200 };
        crate::dma::build::append_descs(&mut v, crate::arch::Arch::Sunda, &t, &mut crate::dma::UdmaCopyWriter).unwrap();
        assert!(v.block(Direction::Tx).bds().all(|b| b.ctrl().ring_id() == 0), "the writer's BDs carry 0");
        let (mut ti, mut ri) = ([Bd::ZERO; 4], [Bd::ZERO; 4]);
        let (mut dev, mut sink) = (Dev::default(), Sink::default());
        v.create_prings(&mut dev, &mut sink, &mut ti, &mut ri).unwrap();
        for (k, (_, bytes)) in dev.writes.iter().enumerate() {
            for (i, chunk) in bytes.chunks_exact(16).enumerate() {
                let ctrl = LenCtrl::from_bits(u32::from_le_bytes(chunk[..4].try_into().unwrap()));
                let want = if i < 3 { 1 } else { 0 };
                assert_eq!(ctrl.ring_id(), want, "ring {k} slot {i}");
            }
        }
        // Only the ring id changed: length, FIRST/LAST, meta and address are the writer's.
        let tx = v.ring(Direction::Tx).unwrap();
        for (img, orig) in tx.image().iter().zip(v.block(Direction::Tx).bds()) {
            assert_eq!(*img, orig.with_ring_id(1));
        }
    }

    /// The seed's order is lower, then relocate, §0, §7. The
    /// relocation must reach the ring image and the device copy, not only the
    /// vring, G-DMA-RELOC-LOWERED; the zero padding is not a BD and stays.
    #[test]
    fn relocating_after_lowering_moves_the_ring_image_and_its_device_copy() {
        let mut txp = [[Bd::ZERO; 4]; 1];
        let mut rxp = [[Bd::ZERO; 4]; 1];
        let mut v: VRing<'_, 4> = VRing::new(&mut txp, &mut rxp);
        for a in [0x1000, 0x5000] {
            v.push(Direction::Tx, Bd::new(LenCtrl::new().with_length(64), 7, a)).unwrap();
        }
        v.push(Direction::Rx, Bd::new(LenCtrl::new().with_length(64), 0, 0x1040)).unwrap();
        let (mut ti, mut ri) = ([Bd::ZERO; 4], [Bd::ZERO; 3]);
        let (mut dev, mut sink) = (Dev::default(), Sink::default());
        v.create_prings(&mut dev, &mut sink, &mut ti, &mut ri).unwrap();
        // The window holds address 0 too: the padding must not move.
        let r = Relocation::new(0, 0x2000, 0x9_0000).unwrap();
        // The host-only rewrite would leave the ring behind: refused, nothing moves.
        assert_eq!(v.addr_rewrite(&r), Err(DmaError::RelocateAfterLower(Direction::Tx)));
        assert_eq!(v.block(Direction::Tx).slot(0).unwrap().addr(), 0x1000);
        dev.writes.clear();
        v.relocate(&mut dev, &mut sink, &r).unwrap();
        let addrs = |v: &VRing<'_, 4>, d| -> Vec<u64> { v.ring(d).unwrap().image().iter().map(Bd::addr).collect() };
        assert_eq!(addrs(&v, Direction::Tx), [0x9_1000, 0x5000, 0, 0]);
        assert_eq!(addrs(&v, Direction::Rx), [0x9_1040, 0, 0]);
        assert_eq!(v.block(Direction::Tx).slot(0).unwrap().addr(), 0x9_1000);
        assert_eq!(v.block(Direction::Rx).slot(0).unwrap().addr(), 0x9_1040);
        let tx = v.ring(Direction::Tx).unwrap();
        assert_eq!(tx.image()[0].ctrl().ring_id(), 1);
        assert_eq!(tx.image()[2], Bd::ZERO);
        // Both rings staged again, whole, with the moved addresses.
        assert_eq!(dev.writes.len(), 2);
        assert_eq!(dev.writes[0], (0x10000, tx.image().as_bytes().to_vec()));
        assert_eq!(dev.writes[1], (0x20000, v.ring(Direction::Rx).unwrap().image().as_bytes().to_vec()));

        // A failed device write is reported for each ring and the first error returned.
        let mut bad = Dev { fail_write: true, ..Dev::default() };
        let mut sink = Sink::default();
        let back = Relocation::new(0x9_0000, 0x2000, 0).unwrap();
        assert_eq!(v.relocate(&mut bad, &mut sink, &back), Err(DmaError::Platform(ErrorKind::Io)));
        let failed: Vec<DmaEvent> =
            [Direction::Tx, Direction::Rx].map(|dir| DmaEvent::RingWriteFailed { dir, kind: ErrorKind::Io }).to_vec();
        assert_eq!(sink.events[..], failed[..]);
        assert_eq!(addrs(&v, Direction::Tx), [0x1000, 0x5000, 0, 0], "the host side moved");
    }

    #[test]
    fn relocating_before_lowering_touches_the_host_only() {
        let mut txp = [[Bd::ZERO; 4]; 1];
        let mut v: VRing<'_, 4> = VRing::new(&mut txp, &mut []);
        v.push(Direction::Tx, bd(0x10)).unwrap();
        let (mut dev, mut sink) = (Dev::default(), Sink::default());
        v.relocate(&mut dev, &mut sink, &Relocation::new(0x100, 0x100, 0x900).unwrap()).unwrap();
        assert_eq!(v.block(Direction::Tx).slot(0).unwrap().addr(), 0x910);
        assert!(dev.writes.is_empty() && sink.events.is_empty());
        // A ring bound but not lowered into has no lowered run to move or stage.
        let mut img = [Bd::ZERO; 4];
        v.pring_alloc(&mut dev, &mut sink, &mut img, 2, 1).unwrap();
        v.relocate(&mut dev, &mut sink, &Relocation::new(0x900, 0x100, 0x100).unwrap()).unwrap();
        assert!(dev.writes.is_empty());
        assert_eq!(v.block(Direction::Tx).slot(0).unwrap().addr(), 0x110);
    }

    /// A count mismatch must not leave a ring allocated and bound but never
    /// staged: the count is checked first, so nothing is allocated or bound.
    #[test]
    fn a_count_mismatch_allocates_and_binds_nothing() {
        let mut txp = [[Bd::ZERO; 4]; 2];
        let mut rxp = [[Bd::ZERO; 4]; 1];
        let mut v: VRing<'_, 4> = VRing::new(&mut txp, &mut rxp);
        v.push(Direction::Rx, bd(1)).unwrap();
        for i in 0..6 {
            v.push(Direction::Tx, bd(i)).unwrap();
        }
        let (mut dev, mut sink) = (Dev::default(), Sink::default());
        let (mut ti, mut ri) = ([bd(77); 4], [Bd::ZERO; 4]);
        let e = v.create_prings(&mut dev, &mut sink, &mut ti, &mut ri);
        assert_eq!(e, Err(DmaError::CountMismatch { dir: Direction::Tx, actual: 4, expected: 6 }));
        assert!(dev.allocs.is_empty(), "nothing allocated");
        assert!(v.ring(Direction::Tx).is_none() && v.ring(Direction::Rx).is_none(), "nothing bound");
        assert!(ti.iter().all(|b| *b == bd(77)), "the image is untouched");
        // Pages that cannot back the count: the same.
        let mut txp = [[Bd::ZERO; 2]; 1];
        let mut v: VRing<'_, 2> = VRing::new(&mut txp, &mut []);
        v.block_mut(Direction::Tx).set_count(3);
        let mut ti = [Bd::ZERO; 8];
        let e = v.create_prings(&mut dev, &mut sink, &mut ti, &mut []);
        assert_eq!(e, Err(DmaError::CountMismatch { dir: Direction::Tx, actual: 2, expected: 3 }));
        assert!(dev.allocs.is_empty() && v.ring(Direction::Tx).is_none());
        // Exactly full is no mismatch.
        v.block_mut(Direction::Tx).set_count(2);
        let mut ti = [Bd::ZERO; 2];
        v.create_prings(&mut dev, &mut sink, &mut ti, &mut []).unwrap();
        assert_eq!(v.ring(Direction::Tx).unwrap().lowered(), 2);
    }

    /// A retry after a failed lowering must not allocate a second backing and leak
    /// the first: the ring left bound is reused.
    #[test]
    fn a_retry_after_a_failed_device_write_reuses_the_ring() {
        let mut txp = [[Bd::ZERO; 4]; 1];
        let mut v: VRing<'_, 4> = VRing::new(&mut txp, &mut []);
        v.push(Direction::Tx, bd(5)).unwrap();
        let mut sink = Sink::default();
        let mut dev = Dev { fail_write: true, ..Dev::default() };
        let mut first = [Bd::ZERO; 4];
        assert_eq!(v.create_prings(&mut dev, &mut sink, &mut first, &mut []), Err(DmaError::Platform(ErrorKind::Io)));
        assert_eq!(dev.allocs, [(Direction::Tx, 4)]);
        assert!(!v.block(Direction::Tx).is_lowered());
        dev.fail_write = false;
        let mut second = [Bd::ZERO; 8];
        v.create_prings(&mut dev, &mut sink, &mut second, &mut []).unwrap();
        assert_eq!(dev.allocs, [(Direction::Tx, 4)], "no second backing");
        let tx = v.ring(Direction::Tx).unwrap();
        assert_eq!((tx.dev_addr(), tx.depth()), (0x10000, 4));
        assert_eq!(dev.writes, [(0x10000, tx.image().as_bytes().to_vec())]);
        assert!(v.block(Direction::Tx).is_lowered());
        assert_eq!(second, [Bd::ZERO; 8], "the retry's image is not used");
    }

    #[test]
    fn platform_failures_are_reported() {
        let mut txp = [[Bd::ZERO; 4]; 1];
        let mut v: VRing<'_, 4> = VRing::new(&mut txp, &mut []);
        v.push(Direction::Tx, bd(0)).unwrap();
        let mut sink = Sink::default();
        let mut dev = Dev { fail_alloc: true, ..Dev::default() };
        let mut img = [Bd::ZERO; 4];
        assert_eq!(v.create_prings(&mut dev, &mut sink, &mut img, &mut []), Err(DmaError::Platform(ErrorKind::Other)));
        assert_eq!(sink.events, [DmaEvent::RingAllocFailed { dir: Direction::Tx, kind: ErrorKind::Other }]);
        let mut dev = Dev { fail_write: true, ..Dev::default() };
        let mut img = [Bd::ZERO; 4];
        assert_eq!(v.create_prings(&mut dev, &mut sink, &mut img, &mut []), Err(DmaError::Platform(ErrorKind::Io)));
        assert_eq!(sink.events[1], DmaEvent::RingWriteFailed { dir: Direction::Tx, kind: ErrorKind::Io });
        assert_eq!(DmaError::Platform(ErrorKind::Io).status().code(), 1);
    }

    #[test]
    fn semaphore_selection() {
        let table = SemaTable { tx: 11, rx: 22 };
        let mut img = [Bd::ZERO; 2];
        let mut r = PRing::new(Direction::Tx, 0, 2, &mut img).unwrap();
        assert_eq!(r.semaphore(), 0xFFFF_FFFF);
        assert_eq!(r.sema_to_inc(&table), Ok(11));
        r.set_semaphore(5);
        assert_eq!(r.sema_to_inc(&table), Ok(5));
        r.set_semaphore(SEMA_FROM_TABLE);
        let mut img = [Bd::ZERO; 2];
        let rx = PRing::new(Direction::Rx, 0, 2, &mut img).unwrap();
        assert_eq!(rx.sema_to_inc(&table), Ok(22));
        let mut img = [Bd::ZERO; 2];
        let bad = PRing::new(Direction::Rx, 0, 1, &mut img).unwrap();
        assert_eq!(bad.sema_to_inc(&table), Err(DmaError::BadRingType(1)));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 4 } else { 256 }))]

        /// Any stated count, page count and ring depth: no panic; success means the
        /// image is the block's BDs then zeros; otherwise a reported count mismatch
        /// and nothing staged.
        #[test]
        fn lowering_never_panics(pages in 0usize..4, pushed in 0u32..16, stated in any::<Option<u32>>(), depth in 0usize..20) {
            let mut txp = vec![[Bd::ZERO; 4]; pages];
            let mut v: VRing<'_, 4> = VRing::new(&mut txp, &mut []);
            let mut n = 0;
            while n < pushed && v.push(Direction::Tx, bd(u64::from(n))).is_ok() {
                n += 1;
            }
            if let Some(c) = stated {
                v.block_mut(Direction::Tx).set_count(c % 64);
            }
            let expected = v.block(Direction::Tx).count();
            let mut img = vec![bd(99); depth];
            let (mut dev, mut sink) = (Dev::default(), Sink::default());
            match v.create_prings(&mut dev, &mut sink, &mut img, &mut []) {
                Ok(()) => {
                    prop_assert!(pages == 0 || v.block(Direction::Tx).is_lowered());
                    if pages > 0 {
                        let ring = v.ring(Direction::Tx).unwrap();
                        prop_assert_eq!(ring.depth() as usize, depth);
                        for (i, b) in ring.image().iter().enumerate() {
                            // The block's BDs (page slots past the pushes count when the stated
                            // count says so), stamped ring id 1; zero padding after.
                            let i = i as u32;
                            let want = match (i < n, i < expected) {
                                (true, true) => bd(u64::from(i)).with_ring_id(1),
                                (false, true) => Bd::ZERO.with_ring_id(1),
                                _ => Bd::ZERO,
                            };
                            prop_assert_eq!(*b, want);
                        }
                        prop_assert_eq!(dev.writes.len(), 1);
                    }
                }
                Err(DmaError::BadRingDepth(0)) => prop_assert_eq!(depth, 0),
                Err(DmaError::CountMismatch { actual, expected: e, .. }) => {
                    prop_assert_eq!(e, expected);
                    prop_assert!(actual < expected);
                    prop_assert!(dev.writes.is_empty());
                    prop_assert!(dev.allocs.is_empty());
                    prop_assert!(v.ring(Direction::Tx).is_none());
                }
                Err(e) => prop_assert!(false, "unexpected {:?}", e),
            }
        }
    }
}
