//! Building: one typed transfer request into a TX and an RX packet of BDs
//! (`dma_util_vring_append_descs`, descriptor-handoff seed §1).
//!
//! 1. Dispatch on the template's op, §1.2: COPY (0) takes the copy path,
//!    TRANSPOSE (5) the transpose path, FMA/ADD/MIN/MAX (1..=4) the compute family.
//!    Anything else is [`DmaError::BadOp`].
//! 2. Fold the element count by the packetization granule, §1.3: `ndesc =
//!    elem_count / granule`. A zero granule or a remainder is an error with a
//!    status (libnrt asserts), not a panic.
//! 3. Bound `ndesc` by the arch's maximum descriptors per packet, §1.1.
//! 4. Feed each element's `(addr, len, op)` to the path's writer, §1.4, and append
//!    the TX BDs to the vring's TX block, the RX BDs to its RX block, all or nothing.
//!
//! The op-specific BD bytes belong to the device-side DMA Part, which is not among
//! our inputs; the writer is therefore a trait ([`DescWriter`]). [`UdmaCopyWriter`]
//! writes the public driver's M2M copy descriptor and refuses the other paths,
//! G-DMA-WRITER; a platform that knows them supplies its own writer.

use super::bd::{Bd, LenCtrl, M2S_COPY_META_CTRL, MAX_BD_LEN};
use super::vring::VRing;
use super::{Direction, DmaError};
use crate::arch::Arch;

/// `kbin_dma_desc_op_t` COPY, seed §1.2.
pub const OP_COPY: u32 = 0;
/// `kbin_dma_desc_op_t` FMA, seed §1.2.
pub const OP_FMA: u32 = 1;
/// `kbin_dma_desc_op_t` ADD, seed §1.2.
pub const OP_ADD: u32 = 2;
/// `kbin_dma_desc_op_t` MIN, seed §1.2.
pub const OP_MIN: u32 = 3;
/// `kbin_dma_desc_op_t` MAX, seed §1.2.
pub const OP_MAX: u32 = 4;
/// `kbin_dma_desc_op_t` TRANSPOSE, seed §1.2.
pub const OP_TRANSPOSE: u32 = 5;

/// G-DMA-MAXDPP: maximum data BDs in one packet (`tdrv_arch_get_max_desc_per_packet`,
/// seed §1.1). The public driver gives it, `driver-abi.md` point 3:
/// `V2_ALLOWED_DESC_PER_PACKET` = `V3_ALLOWED_DESC_PER_PACKET` = 64, programmed
/// into the M2S prefetch as 64 + 1 (one metadata descriptor); a packet of more
/// raises the M2S prefetch max-desc error (secondary group A bit 14). v4 shares
/// v3's map.
pub const MAX_DESC_PER_PACKET: u32 = 64;

/// Descriptors the driver adds to [`MAX_DESC_PER_PACKET`] when it programs the
/// engine: one metadata descriptor (`v2|v3/neuron_dhal_v*.c`).
pub const PACKET_METADATA_DESCS: u32 = 1;

/// The maximum data BDs per packet of `arch`, seed §1.1, values G-DMA-MAXDPP.
pub const fn max_desc_per_packet(_arch: Arch) -> u32 {
    MAX_DESC_PER_PACKET
}

/// What the driver programs as the engine's descriptors per packet for `arch`:
/// [`max_desc_per_packet`] plus the metadata descriptor (65).
pub const fn programmed_desc_per_packet(arch: Arch) -> u32 {
    max_desc_per_packet(arch) + PACKET_METADATA_DESCS
}

/// A descriptor op, `kbin_dma_desc_op_t`, seed §1.2.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum DmaOp {
    /// 0: plain copy.
    Copy,
    /// 1: fused multiply-add.
    Fma,
    /// 2: add.
    Add,
    /// 3: minimum.
    Min,
    /// 4: maximum.
    Max,
    /// 5: transpose.
    Transpose,
}

/// Which BD-writer family an op takes (the seed's three-way branch at 0x316d53).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum OpPath {
    /// `op == 0`.
    Copy,
    /// `op == 5`.
    Transpose,
    /// `op` in 1..=4: the CCE/FMA/MIN/MAX ladder.
    Compute,
}

impl DmaOp {
    /// The op of a template's raw value; outside 0..=5 is [`DmaError::BadOp`].
    pub const fn from_raw(op: u32) -> Result<DmaOp, DmaError> {
        match op {
            OP_COPY => Ok(DmaOp::Copy),
            OP_FMA => Ok(DmaOp::Fma),
            OP_ADD => Ok(DmaOp::Add),
            OP_MIN => Ok(DmaOp::Min),
            OP_MAX => Ok(DmaOp::Max),
            OP_TRANSPOSE => Ok(DmaOp::Transpose),
            v => Err(DmaError::BadOp(v)),
        }
    }

    /// The raw value.
    pub const fn raw(self) -> u32 {
        match self {
            DmaOp::Copy => OP_COPY,
            DmaOp::Fma => OP_FMA,
            DmaOp::Add => OP_ADD,
            DmaOp::Min => OP_MIN,
            DmaOp::Max => OP_MAX,
            DmaOp::Transpose => OP_TRANSPOSE,
        }
    }

    /// The writer family, seed §1.2: 0 copy, 5 transpose, else compute.
    pub const fn path(self) -> OpPath {
        match self {
            DmaOp::Copy => OpPath::Copy,
            DmaOp::Transpose => OpPath::Transpose,
            DmaOp::Fma | DmaOp::Add | DmaOp::Min | DmaOp::Max => OpPath::Compute,
        }
    }
}

/// One typed transfer request: the fields of the seed's template that the build
/// reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Transfer {
    /// The op (`template + 4`), raw as a NEFF states it.
    pub op: u32,
    /// Elements to move.
    pub elem_count: u32,
    /// Elements per BD: the packetization granule (`template + 0x14ac`).
    pub granule: u32,
    /// Bytes per element (the dtype size fed to the writer).
    pub elem_bytes: u32,
    /// Source address (TX BDs read from here).
    pub src: u64,
    /// Destination address (RX BDs write here).
    pub dst: u64,
}

/// What one BD writer call gets (seed §1.4: `(addr, len, dtype, op)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DescArgs {
    /// TX (read `addr`) or RX (write `addr`).
    pub dir: Direction,
    /// The buffer address.
    pub addr: u64,
    /// Bytes, `1..=65536`.
    pub len: u32,
    /// Bytes per element.
    pub elem_bytes: u32,
    /// First BD of its packet.
    pub first: bool,
    /// Last BD of its packet.
    pub last: bool,
}

/// The arch-specific BD writers (`al_udma_m2m_build_{tx,rx}_descriptor`,
/// `al_sdma_m2s_build_*_descriptor`, seed §1.4), one method per path.
pub trait DescWriter {
    /// The copy path (op 0).
    fn copy(&mut self, args: &DescArgs) -> Result<Bd, DmaError>;
    /// The transpose path (op 5).
    fn transpose(&mut self, args: &DescArgs) -> Result<Bd, DmaError>;
    /// The compute family (ops 1..=4).
    fn compute(&mut self, op: DmaOp, args: &DescArgs) -> Result<Bd, DmaError>;
}

impl<T: DescWriter + ?Sized> DescWriter for &mut T {
    fn copy(&mut self, args: &DescArgs) -> Result<Bd, DmaError> {
        T::copy(self, args)
    }
    fn transpose(&mut self, args: &DescArgs) -> Result<Bd, DmaError> {
        T::transpose(self, args)
    }
    fn compute(&mut self, op: DmaOp, args: &DescArgs) -> Result<Bd, DmaError> {
        T::compute(self, op, args)
    }
}

/// The public driver's M2M copy descriptor (`udma_m2m.c`; `neuron-driver-facts.md`
/// §5): TX `len_ctrl` = length with FIRST/LAST, `meta_ctrl` = 0x0108_0003; RX
/// `len_ctrl` = length, `buf2_ptr_lo` = 0. Transpose and compute are refused with
/// [`DmaError::UnsupportedOp`], G-DMA-WRITER.
#[derive(Clone, Copy, Debug, Default)]
pub struct UdmaCopyWriter;

impl DescWriter for UdmaCopyWriter {
    fn copy(&mut self, a: &DescArgs) -> Result<Bd, DmaError> {
        let ctrl = LenCtrl::new().with_len_bytes(a.len).ok_or(DmaError::BadLength(u64::from(a.len)))?;
        Ok(match a.dir {
            Direction::Tx => Bd::new(ctrl.with_first(a.first).with_last(a.last), M2S_COPY_META_CTRL, a.addr),
            Direction::Rx => Bd::new(ctrl, 0, a.addr),
        })
    }
    fn transpose(&mut self, _: &DescArgs) -> Result<Bd, DmaError> {
        Err(DmaError::UnsupportedOp(OP_TRANSPOSE))
    }
    fn compute(&mut self, op: DmaOp, _: &DescArgs) -> Result<Bd, DmaError> {
        Err(DmaError::UnsupportedOp(op.raw()))
    }
}

/// Where one packet landed in its vring block.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Packet {
    /// Index of its first BD in the block.
    pub first: u32,
    /// BDs in the packet.
    pub ndesc: u32,
}

/// The result of a build: the TX and RX packets and the TX packet's header fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Packets {
    /// The TX (M2S) packet.
    pub tx: Packet,
    /// The RX (S2M) packet.
    pub rx: Packet,
    /// The TX packet's `+8` split flag, seed §1.1, `seta %bl`. G-DMA-SPLIT: the
    /// comparison is not given; we set it when the transfer takes more than one BD
    /// (`elem_count > granule`).
    pub split: bool,
    /// The TX packet's `+0x10` dimension multiplier: the granule, `ebp`, seed §1.1/§1.3.
    pub dim_mult: u32,
}

/// Checked fold of the element count, seed §1.3, and the per-arch bound, §1.1:
/// the number of BDs per packet.
pub const fn fold_elements(arch: Arch, elem_count: u32, granule: u32) -> Result<u32, DmaError> {
    if granule == 0 {
        return Err(DmaError::ZeroGranule);
    }
    if !elem_count.is_multiple_of(granule) {
        return Err(DmaError::GranuleRemainder { elem_count, granule });
    }
    let ndesc = elem_count / granule;
    let max = max_desc_per_packet(arch);
    if ndesc > max {
        return Err(DmaError::TooMany { requested: ndesc as u64, max: max as u64 });
    }
    Ok(ndesc)
}

/// `dma_util_vring_append_descs`, seed §1: build `t` into a TX and an RX packet
/// appended to `vring`. All or nothing: on any error the vring's counts are as
/// before (BDs past them may have been scribbled, but they are not BDs).
pub fn append_descs<const PAGE: usize, W: DescWriter + ?Sized>(
    vring: &mut VRing<'_, PAGE>,
    arch: Arch,
    t: &Transfer,
    writer: &mut W,
) -> Result<Packets, DmaError> {
    let op = DmaOp::from_raw(t.op)?;
    let ndesc = fold_elements(arch, t.elem_count, t.granule)?;
    let len = u64::from(t.granule) * u64::from(t.elem_bytes);
    if ndesc > 0 && (len == 0 || len > u64::from(MAX_BD_LEN)) {
        return Err(DmaError::BadLength(len));
    }
    // Every address base + i * len, i < ndesc, and the end of the last buffer fit in u64.
    let span = u128::from(ndesc) * u128::from(len);
    if u128::from(t.src) + span > 1u128 << 64 || u128::from(t.dst) + span > 1u128 << 64 {
        return Err(DmaError::AddressOverflow);
    }
    if vring.is_sealed() {
        return Err(DmaError::Sealed);
    }
    vring.block(Direction::Tx).check_room(ndesc)?;
    vring.block(Direction::Rx).check_room(ndesc)?;

    let tx_first = vring.block(Direction::Tx).count();
    let rx_first = vring.block(Direction::Rx).count();
    let result = fill(vring, op, t, ndesc, len, writer);
    if result.is_err() {
        vring.block_mut(Direction::Tx).set_count(tx_first);
        vring.block_mut(Direction::Rx).set_count(rx_first);
    }
    result?;
    Ok(Packets {
        tx: Packet { first: tx_first, ndesc },
        rx: Packet { first: rx_first, ndesc },
        split: ndesc > 1,
        dim_mult: t.granule,
    })
}

fn fill<const PAGE: usize, W: DescWriter + ?Sized>(
    vring: &mut VRing<'_, PAGE>,
    op: DmaOp,
    t: &Transfer,
    ndesc: u32,
    len: u64,
    writer: &mut W,
) -> Result<(), DmaError> {
    // `len <= 65536` was checked by the caller.
    let len32 = len as u32;
    for (dir, base) in [(Direction::Tx, t.src), (Direction::Rx, t.dst)] {
        for i in 0..ndesc {
            let args = DescArgs {
                dir,
                // In range: checked by the caller against 2^64.
                addr: base.wrapping_add(u64::from(i).wrapping_mul(len)),
                len: len32,
                elem_bytes: t.elem_bytes,
                first: i == 0,
                last: i + 1 == ndesc,
            };
            let bd = match op.path() {
                OpPath::Copy => writer.copy(&args)?,
                OpPath::Transpose => writer.transpose(&args)?,
                OpPath::Compute => writer.compute(op, &args)?,
            };
            vring.push(dir, bd)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Records which path each BD took.
    #[derive(Default)]
    struct Recorder {
        paths: Vec<(OpPath, Option<DmaOp>, DescArgs)>,
        fail_at: Option<usize>,
    }

    impl Recorder {
        fn bd(&mut self, path: OpPath, op: Option<DmaOp>, a: &DescArgs) -> Result<Bd, DmaError> {
            if self.fail_at == Some(self.paths.len()) {
                return Err(DmaError::UnsupportedOp(99));
            }
            self.paths.push((path, op, *a));
            Ok(Bd::new(LenCtrl::new().with_len_bytes(a.len).unwrap(), path as u32, a.addr))
        }
    }

    impl DescWriter for Recorder {
        fn copy(&mut self, a: &DescArgs) -> Result<Bd, DmaError> {
            self.bd(OpPath::Copy, None, a)
        }
        fn transpose(&mut self, a: &DescArgs) -> Result<Bd, DmaError> {
            self.bd(OpPath::Transpose, None, a)
        }
        fn compute(&mut self, op: DmaOp, a: &DescArgs) -> Result<Bd, DmaError> {
            self.bd(OpPath::Compute, Some(op), a)
        }
    }

    fn t(op: u32, elem_count: u32, granule: u32) -> Transfer {
        Transfer { op, elem_count, granule, elem_bytes: 4, src: 0x1000, dst: 0x8000 }
    }

    #[test]
    fn op_values_and_paths_follow_the_seed() {
        let expect = [
            (0, DmaOp::Copy, OpPath::Copy),
            (1, DmaOp::Fma, OpPath::Compute),
            (2, DmaOp::Add, OpPath::Compute),
            (3, DmaOp::Min, OpPath::Compute),
            (4, DmaOp::Max, OpPath::Compute),
            (5, DmaOp::Transpose, OpPath::Transpose),
        ];
        for (raw, op, path) in expect {
            assert_eq!(DmaOp::from_raw(raw), Ok(op));
            assert_eq!(op.raw(), raw);
            assert_eq!(op.path(), path);
        }
        assert_eq!(DmaOp::from_raw(6), Err(DmaError::BadOp(6)));
        assert_eq!(DmaOp::from_raw(u32::MAX), Err(DmaError::BadOp(u32::MAX)));
    }

    #[test]
    fn dispatch_builds_tx_and_rx_packets() {
        for (op, path) in [(0, OpPath::Copy), (5, OpPath::Transpose), (1, OpPath::Compute), (4, OpPath::Compute)] {
            let mut tx = [[Bd::ZERO; 8]; 2];
            let mut rx = [[Bd::ZERO; 8]; 2];
            let mut v: VRing<'_, 8> = VRing::new(&mut tx, &mut rx);
            let mut w = Recorder::default();
            let p = append_descs(&mut v, Arch::Cayman, &t(op, 12, 4), &mut w).unwrap();
            assert_eq!(p.tx, Packet { first: 0, ndesc: 3 });
            assert_eq!(p.rx, Packet { first: 0, ndesc: 3 });
            assert!(p.split);
            assert_eq!(p.dim_mult, 4);
            assert_eq!(w.paths.len(), 6);
            assert!(w.paths.iter().all(|(p, _, _)| *p == path));
            // TX reads src, RX writes dst, 16 bytes (4 elements x 4 bytes) apart.
            let tx_addrs: Vec<u64> = v.block(Direction::Tx).bds().map(Bd::addr).collect();
            let rx_addrs: Vec<u64> = v.block(Direction::Rx).bds().map(Bd::addr).collect();
            assert_eq!(tx_addrs, [0x1000, 0x1010, 0x1020]);
            assert_eq!(rx_addrs, [0x8000, 0x8010, 0x8020]);
            let firsts: Vec<(bool, bool)> = w.paths.iter().take(3).map(|(_, _, a)| (a.first, a.last)).collect();
            assert_eq!(firsts, [(true, false), (false, false), (false, true)]);
            if op == 4 {
                assert_eq!(w.paths[0].1, Some(DmaOp::Max));
            }
        }
    }

    /// The TX packet's `+8` split flag (G-DMA-SPLIT: more than one BD) and `+0x10`
    /// dimension multiplier (the granule), at the edges of the flag's comparison.
    #[test]
    fn the_split_flag_is_set_exactly_when_the_transfer_takes_more_than_one_bd() {
        for (elem_count, granule, ndesc, split) in
            [(0, 4, 0, false), (4, 4, 1, false), (8, 4, 2, true), (7, 1, 7, true)]
        {
            let mut tx = [[Bd::ZERO; 8]; 1];
            let mut rx = [[Bd::ZERO; 8]; 1];
            let mut v: VRing<'_, 8> = VRing::new(&mut tx, &mut rx);
            let p = append_descs(&mut v, Arch::Sunda, &t(0, elem_count, granule), &mut UdmaCopyWriter).unwrap();
            assert_eq!((p.tx.ndesc, p.split, p.dim_mult), (ndesc, split, granule), "{elem_count}/{granule}");
        }
    }

    #[test]
    fn udma_copy_writer_writes_the_drivers_copy_descriptor() {
        let mut tx = [[Bd::ZERO; 4]; 1];
        let mut rx = [[Bd::ZERO; 4]; 1];
        let mut v: VRing<'_, 4> = VRing::new(&mut tx, &mut rx);
        append_descs(&mut v, Arch::Sunda, &t(0, 8, 4), &mut UdmaCopyWriter).unwrap();
        let b0 = *v.block(Direction::Tx).slot(0).unwrap();
        assert_eq!(b0.meta_ctrl.get(), 0x0108_0003);
        assert_eq!(b0.ctrl().len_bytes(), 16);
        assert!(b0.ctrl().first() && !b0.ctrl().last());
        assert!(v.block(Direction::Tx).slot(1).unwrap().ctrl().last());
        assert_eq!(v.block(Direction::Rx).slot(0).unwrap().meta_ctrl.get(), 0);
        assert_eq!(
            append_descs(&mut v, Arch::Sunda, &t(5, 4, 4), &mut UdmaCopyWriter),
            Err(DmaError::UnsupportedOp(5))
        );
        assert_eq!(v.block(Direction::Tx).count(), 2, "a refused build appends nothing");
        for op in 1..=4 {
            assert_eq!(
                append_descs(&mut v, Arch::Sunda, &t(op, 4, 4), &mut UdmaCopyWriter),
                Err(DmaError::UnsupportedOp(op))
            );
        }
    }

    /// A writer lent as `&mut W` (the blanket impl) writes what `W` writes.
    #[test]
    fn a_lent_writer_is_the_writer() {
        for op in [0, 5, 2] {
            let mut tx = [[Bd::ZERO; 4]; 1];
            let mut rx = [[Bd::ZERO; 4]; 1];
            let mut v: VRing<'_, 4> = VRing::new(&mut tx, &mut rx);
            let mut rec = Recorder::default();
            let mut lent: &mut Recorder = &mut rec;
            append_descs(&mut v, Arch::Sunda, &t(op, 8, 4), &mut lent).unwrap();
            assert_eq!(rec.paths.len(), 4);
            assert_eq!(v.block(Direction::Tx).slot(1).unwrap().addr(), 0x1010);
            assert_eq!(v.block(Direction::Tx).slot(1).unwrap().meta_ctrl.get(), rec.paths[0].0 as u32);
        }
    }

    /// The edges of the length and address checks: a BD of exactly 65536 bytes (len
    /// field 0), an empty transfer whose BD length would be 0 (nothing to check), and
    /// buffers ending exactly at 2^64 (accepted) or one byte past (refused).
    #[test]
    fn length_and_address_edges() {
        let mut tx = [[Bd::ZERO; 4]; 1];
        let mut rx = [[Bd::ZERO; 4]; 1];
        let mut v: VRing<'_, 4> = VRing::new(&mut tx, &mut rx);
        let mut big = t(0, 0x4000, 0x4000);
        big.elem_bytes = 4;
        append_descs(&mut v, Arch::Sunda, &big, &mut UdmaCopyWriter).unwrap();
        assert_eq!(v.block(Direction::Tx).slot(0).unwrap().ctrl().length(), 0);
        assert_eq!(v.block(Direction::Tx).slot(0).unwrap().ctrl().len_bytes(), 0x1_0000);
        let mut empty = t(0, 0, 4);
        empty.elem_bytes = 0;
        assert_eq!(append_descs(&mut v, Arch::Sunda, &empty, &mut UdmaCopyWriter).map(|p| p.tx.ndesc), Ok(0));
        // Three 4-byte BDs: 12 bytes from the base.
        let top = 1u128 << 64;
        for (src, dst, ok) in [
            ((top - 12) as u64, 0, true),
            ((top - 11) as u64, 0, false),
            (0, (top - 12) as u64, true),
            (0, (top - 11) as u64, false),
        ] {
            let tr = Transfer { op: 0, elem_count: 3, granule: 1, elem_bytes: 4, src, dst };
            let mut tx = [[Bd::ZERO; 4]; 1];
            let mut rx = [[Bd::ZERO; 4]; 1];
            let mut v: VRing<'_, 4> = VRing::new(&mut tx, &mut rx);
            let r = append_descs(&mut v, Arch::Sunda, &tr, &mut UdmaCopyWriter);
            if ok {
                assert!(r.is_ok(), "{src:x} {dst:x}");
                assert_eq!(v.block(Direction::Tx).slot(2).unwrap().addr(), src.wrapping_add(8));
            } else {
                assert_eq!(r, Err(DmaError::AddressOverflow), "{src:x} {dst:x}");
            }
        }
    }

    #[test]
    fn the_fold_refuses_zero_granules_remainders_and_too_many() {
        assert_eq!(fold_elements(Arch::Sunda, 10, 0), Err(DmaError::ZeroGranule));
        assert_eq!(fold_elements(Arch::Sunda, 10, 4), Err(DmaError::GranuleRemainder { elem_count: 10, granule: 4 }));
        assert_eq!(fold_elements(Arch::Sunda, 12, 4), Ok(3));
        assert_eq!(fold_elements(Arch::Mariana, 0, 4), Ok(0));
        // The driver's 64 data BDs per packet, driver-abi.md point 3, on every arch.
        for arch in [Arch::Sunda, Arch::Cayman, Arch::Mariana] {
            assert_eq!(fold_elements(arch, 64, 1), Ok(64));
            assert_eq!(fold_elements(arch, 65, 1), Err(DmaError::TooMany { requested: 65, max: 64 }));
            assert_eq!(fold_elements(arch, 0x10000, 1), Err(DmaError::TooMany { requested: 0x10000, max: 64 }));
            assert_eq!(max_desc_per_packet(arch), 64);
            assert_eq!(programmed_desc_per_packet(arch), 65);
        }
        assert_eq!(DmaError::ZeroGranule.status().code(), 2);
        assert_eq!(DmaError::GranuleRemainder { elem_count: 1, granule: 2 }.status().code(), 2);
    }

    #[test]
    fn bad_lengths_addresses_capacity_and_writer_failures_leave_the_vring_unchanged() {
        let mut tx = [[Bd::ZERO; 4]; 1];
        let mut rx = [[Bd::ZERO; 4]; 1];
        let mut v: VRing<'_, 4> = VRing::new(&mut tx, &mut rx);
        let mut w = Recorder::default();
        let mut big = t(0, 2, 1);
        big.elem_bytes = 0x1_0001;
        assert_eq!(append_descs(&mut v, Arch::Sunda, &big, &mut w), Err(DmaError::BadLength(0x1_0001)));
        big.elem_bytes = 0;
        assert_eq!(append_descs(&mut v, Arch::Sunda, &big, &mut w), Err(DmaError::BadLength(0)));
        let mut ovf = t(0, 2, 1);
        ovf.src = u64::MAX - 4;
        assert_eq!(append_descs(&mut v, Arch::Sunda, &ovf, &mut w), Err(DmaError::AddressOverflow));
        assert_eq!(
            append_descs(&mut v, Arch::Sunda, &t(0, 5, 1), &mut w),
            Err(DmaError::VringFull { needed: 5, capacity: 4 })
        );
        w.fail_at = Some(5);
        assert_eq!(append_descs(&mut v, Arch::Sunda, &t(0, 3, 1), &mut w), Err(DmaError::UnsupportedOp(99)));
        assert_eq!(v.block(Direction::Tx).count(), 0);
        assert_eq!(v.block(Direction::Rx).count(), 0);
        v.seal();
        assert_eq!(append_descs(&mut v, Arch::Sunda, &t(0, 1, 1), &mut w), Err(DmaError::Sealed));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 4 } else { 256 }))]

        /// No input panics; a success appends exactly `elem_count / granule` BDs to each block.
        #[test]
        fn arbitrary_transfers_never_panic(
            op in 0u32..8, elem_count in any::<u32>(), granule in any::<u32>(), elem_bytes in 0u32..70000,
            src in any::<u64>(), dst in any::<u64>(), small in any::<bool>(),
        ) {
            let (elem_count, granule) = if small { (elem_count % 64, granule % 9) } else { (elem_count, granule) };
            let mut tx = [[Bd::ZERO; 8]; 4];
            let mut rx = [[Bd::ZERO; 8]; 4];
            let mut v: VRing<'_, 8> = VRing::new(&mut tx, &mut rx);
            let tr = Transfer { op, elem_count, granule, elem_bytes, src, dst };
            match append_descs(&mut v, Arch::Sunda, &tr, &mut Recorder::default()) {
                Ok(p) => {
                    prop_assert_eq!(u64::from(p.tx.ndesc) * u64::from(granule), u64::from(elem_count));
                    prop_assert_eq!(v.block(Direction::Tx).count(), p.tx.ndesc);
                    prop_assert_eq!(v.block(Direction::Rx).count(), p.rx.ndesc);
                }
                Err(e) => {
                    prop_assert_eq!(v.block(Direction::Tx).count(), 0);
                    prop_assert!(e.status().code() == 2 || e.status().code() == 4);
                }
            }
        }
    }
}
