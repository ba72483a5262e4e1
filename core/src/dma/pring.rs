//! The pring (the device ring image), ring allocation and binding, lowering, and
//! the completion-semaphore selector (descriptor-handoff seed §2.1-§2.3, §3.4).
//!
//! libnrt's pring is a 32-byte host object (`calloc(1, 0x20)`) naming a device
//! ring: its device address, depth, ring type, semaphore id (`pring + 0x10`) and
//! direction. Here [`PRing`] carries the same fields plus the host image of the
//! ring, a `&mut [Bd]` the caller provides (its length is the ring's depth). The
//! device backing comes from [`RingBacking`] (`dma_ring_alloc`); the bytes reach
//! the device through [`DeviceMemory`] (`dmem_buf_copyin`).
//!
//! Lowering (`dma_ring_create_prings_from_vring`, §2.2) takes TX then RX, each only
//! when the block is present and not yet lowered: allocate and bind the ring, copy
//! the block's BDs into the image, zero-pad to the depth, check the `ndesc
//! actual/expected` invariant (§2.3), stage the image to the device, mark lowered.

use zerocopy::IntoBytes;

use super::bd::Bd;
use super::vring::{DescBlock, VRing};
use super::{Direction, DmaError, DmaEvent, ALLOC_DIR_RX, ALLOC_DIR_TX};
use crate::event::{emit, Event};
use crate::hal::{DeviceMemory, ErrorType, EventSink};

/// Size of libnrt's pring object (`calloc(1, 0x20)`, seed §2.1).
pub const PRING_OBJECT_BYTES: usize = 0x20;
/// The ring type lowering allocates and semaphore selection requires (`r8d = 2`
/// at `dma_pring_alloc`, §2.2; the assert at `dma_ring.c:0x4fe`, §3.4).
pub const RING_TYPE_STATIC: u32 = 2;
/// A pring semaphore id meaning "use the per-direction table" (seed §3.4).
pub const SEMA_FROM_TABLE: u32 = 0xFFFF_FFFF;
/// The largest UDMA ring, in descriptors (driver §5: `2^24 - 16`).
pub const UDMA_MAX_RING_DESCS: u32 = (1 << 24) - 16;

/// The device backing of rings (`dma_ring_alloc`, seed §2.1).
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
/// [`SEMA_FROM_TABLE`] (`per_direction_sema_table[..][dir]`, seed §3.4).
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
}

impl<'a> PRing<'a> {
    /// A ring at device address `dev_addr` whose host image is `image` (depth =
    /// `image.len()`, `1..=UDMA_MAX_RING_DESCS`), semaphore id [`SEMA_FROM_TABLE`].
    pub fn new(dir: Direction, dev_addr: u64, ring_type: u32, image: &'a mut [Bd]) -> Result<PRing<'a>, DmaError> {
        check_depth(image.len())?;
        Ok(PRing { dev_addr, ring_type, sema: SEMA_FROM_TABLE, dir, image })
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

    /// `dma_ring_get_sema_to_inc` (seed §3.4): the semaphore the device increments
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

/// `vring_dump_to_pring_descriptors_padded` for one block: copy, zero-pad, check
/// the count, stage. Returns the BDs copied.
fn dump_padded<const PAGE: usize, M: DeviceMemory + ?Sized, S: EventSink + ?Sized>(
    block: &DescBlock<'_, PAGE>,
    ring: &mut PRing<'_>,
    mem: &mut M,
    sink: &mut S,
) -> Result<u32, DmaError> {
    let dir = ring.direction();
    let mut actual: u32 = 0;
    let mut src = block.bds();
    for slot in ring.image.iter_mut() {
        match src.next() {
            Some(bd) => {
                *slot = *bd;
                actual += 1;
            }
            None => *slot = Bd::ZERO,
        }
    }
    let expected = block.count();
    if actual != expected {
        emit(sink, Event::Dma(DmaEvent::NdescMismatch { dir, actual, expected }));
        return Err(DmaError::CountMismatch { dir, actual, expected });
    }
    if let Err(e) = ring.stage_all(mem) {
        if let DmaError::Platform(kind) = e {
            emit(sink, Event::Dma(DmaEvent::RingWriteFailed { dir, kind }));
        }
        return Err(e);
    }
    emit(sink, Event::Dma(DmaEvent::Lowered { dir, ndesc: actual, depth: ring.depth() }));
    Ok(actual)
}

impl<'a, const PAGE: usize> VRing<'a, PAGE> {
    /// `dma_pring_alloc` (seed §2.1): refuse a sealed vring, validate the direction
    /// (1 binds the TX slot, 2 the RX slot, anything else is
    /// [`DmaError::BadDirection`]) and the depth (`image.len()`), allocate the device
    /// backing, and bind the ring. An earlier ring in that slot is replaced.
    ///
    /// Unlike libnrt, the direction is checked before the device allocation, so a
    /// refused call allocates nothing.
    pub fn pring_alloc<B: RingBacking + ?Sized, S: EventSink + ?Sized>(
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
                emit(sink, Event::Dma(DmaEvent::RingAllocFailed { dir, kind }));
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

    /// `dma_ring_create_prings_from_vring` (seed §2.2): for TX then RX, when the
    /// block is present and not yet lowered, allocate a type-2 ring over the
    /// direction's image, bind it, copy the block into it zero-padded to its depth,
    /// check `ndesc actual/expected`, stage it to the device, and mark the block
    /// lowered. The image of a direction that is skipped is not used.
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
        S: EventSink + ?Sized,
    {
        for (dir, image) in [(Direction::Tx, tx_image), (Direction::Rx, rx_image)] {
            let block = self.block(dir);
            if !block.present() || block.is_lowered() {
                continue;
            }
            let raw = match dir {
                Direction::Tx => ALLOC_DIR_TX,
                Direction::Rx => ALLOC_DIR_RX,
            };
            self.pring_alloc(dev, sink, image, RING_TYPE_STATIC, raw)?;
            self.dump_to_pring(dir, dev, sink)?;
            self.block_mut(dir).set_lowered(true);
        }
        Ok(())
    }

    /// `vring_dump_to_pring_descriptors` for one direction (seed §2.3): copy the
    /// block into its bound ring, zero-padded to the depth; a block count its
    /// pages or the ring cannot hold is reported ([`DmaEvent::NdescMismatch`]) and
    /// refused ([`DmaError::CountMismatch`]) before anything reaches the device.
    /// Returns the BDs copied.
    pub fn dump_to_pring<M, S>(&mut self, dir: Direction, mem: &mut M, sink: &mut S) -> Result<u32, DmaError>
    where
        M: DeviceMemory + ?Sized,
        S: EventSink + ?Sized,
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
    #[derive(Default)]
    struct Sink(Vec<Event>);
    impl EventSink for Sink {
        fn event(&mut self, e: &Event) {
            self.0.push(*e);
        }
    }

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
        let want: Vec<Bd> = (0..5).map(bd).chain([Bd::ZERO; 3]).collect();
        assert_eq!(tx.image(), &want[..]);
        assert_eq!(v.ring(Direction::Rx).unwrap().image(), &[bd(9), Bd::ZERO, Bd::ZERO]);
        // Staged whole, TX first.
        assert_eq!(dev.writes.len(), 2);
        assert_eq!(dev.writes[0].0, 0x10000);
        assert_eq!(dev.writes[0].1.len(), 8 * 16);
        assert_eq!(&dev.writes[0].1[8..16], &0x100u64.to_le_bytes());
        assert_eq!(dev.writes[1].0, 0x20000);
        assert!(v.block(Direction::Tx).is_lowered() && v.block(Direction::Rx).is_lowered());
        assert_eq!(sink.0[0], Event::Dma(DmaEvent::Lowered { dir: Direction::Tx, ndesc: 5, depth: 8 }));
        // Lowered blocks are skipped the second time: nothing allocated or written.
        let (mut a, mut b) = ([Bd::ZERO; 8], [Bd::ZERO; 8]);
        v.create_prings(&mut dev, &mut sink, &mut a, &mut b).unwrap();
        assert_eq!(dev.allocs.len(), 2);
        assert_eq!(dev.writes.len(), 2);
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
        assert!(v.ring(Direction::Rx).is_none());
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
        assert_eq!(sink.0, [Event::Dma(DmaEvent::NdescMismatch { dir: Direction::Tx, actual: 4, expected: 6 })]);
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

    #[test]
    fn platform_failures_are_reported() {
        let mut txp = [[Bd::ZERO; 4]; 1];
        let mut v: VRing<'_, 4> = VRing::new(&mut txp, &mut []);
        v.push(Direction::Tx, bd(0)).unwrap();
        let mut sink = Sink::default();
        let mut dev = Dev { fail_alloc: true, ..Dev::default() };
        let mut img = [Bd::ZERO; 4];
        assert_eq!(v.create_prings(&mut dev, &mut sink, &mut img, &mut []), Err(DmaError::Platform(ErrorKind::Other)));
        assert_eq!(sink.0, [Event::Dma(DmaEvent::RingAllocFailed { dir: Direction::Tx, kind: ErrorKind::Other })]);
        let mut dev = Dev { fail_write: true, ..Dev::default() };
        let mut img = [Bd::ZERO; 4];
        assert_eq!(v.create_prings(&mut dev, &mut sink, &mut img, &mut []), Err(DmaError::Platform(ErrorKind::Io)));
        assert_eq!(sink.0[1], Event::Dma(DmaEvent::RingWriteFailed { dir: Direction::Tx, kind: ErrorKind::Io }));
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
                            let want = if (i as u32) < expected.min(n) { bd(i as u64) } else { Bd::ZERO };
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
                }
                Err(e) => prop_assert!(false, "unexpected {:?}", e),
            }
        }
    }
}
