//! Descriptor-handoff benchmarks: `addr_rewrite` over 1 Mi BDs (16 vring
//! pages of 0x10000) against a memcpy of the same 16 MiB and against a plain
//! transcription of the seed's loop; and reserve + set throughput.
//!
//! `cargo xtask bench` runs these and writes the medians into BENCHMARKS.md.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use nrt_core::dma::bd::LenCtrl;
use nrt_core::dma::queue::reserve_descriptors;
use nrt_core::dma::vring::VRING_PAGE_BDS;
use nrt_core::dma::{addr_rewrite, Bd, DeviceHead, Direction, PRing, Relocation, SwDmaQueue, VRing};

/// 1 Mi BDs = 16 pages of 0x10000.
const N: usize = 1 << 20;
const PAGES: usize = N / VRING_PAGE_BDS;
/// BD `i` points at `BASE + i * STRIDE`; the window covers the first half.
const BASE: u64 = 0x10_0000_0000;
const STRIDE: u64 = 0x100;
const WINDOW: u64 = (N as u64 / 2) * STRIDE;
const MOVED: u64 = 0x40_0000_0000;

fn bds() -> Vec<Bd> {
    (0..N as u64)
        .map(|i| Bd::new(LenCtrl::new().with_length(0x100).with_last(true), 0x0108_0003, BASE + i * STRIDE))
        .collect()
}

/// The seed's loop (§2.4) as written: per page, per BD, read the u64 at +8, test
/// `>= base && < base + size`, add the delta.
fn seed_loop(pages: &mut [[Bd; VRING_PAGE_BDS]], n: usize, base: u64, size: u64, delta: u64) {
    for page in pages.iter_mut() {
        for bd in page.iter_mut().take(n.min(VRING_PAGE_BDS)) {
            let p = bd.buf_ptr.get();
            if p >= base && p < base + size {
                bd.buf_ptr.set(p.wrapping_add(delta));
            }
        }
    }
}

fn relocation(c: &mut Criterion) {
    let there = Relocation::new(BASE, WINDOW, MOVED).unwrap();
    let back = Relocation::new(MOVED, WINDOW, BASE).unwrap();
    let bytes = (N * 16) as u64;

    let mut g = c.benchmark_group("addr_rewrite");
    g.throughput(Throughput::Bytes(bytes));

    g.bench_function(BenchmarkId::new("memcpy", N), |b| {
        let src = bds();
        let mut dst = vec![Bd::ZERO; N];
        b.iter(|| {
            dst.copy_from_slice(black_box(&src));
            black_box(&mut dst);
        })
    });

    g.bench_function(BenchmarkId::new("vring", N), |b| {
        let mut flat = bds();
        let (pages, _) = flat.as_chunks_mut::<VRING_PAGE_BDS>();
        assert_eq!(pages.len(), PAGES);
        let mut v: VRing<'_> = VRing::new(pages, &mut []);
        v.block_mut(Direction::Tx).set_count(N as u32);
        let mut flip = false;
        b.iter(|| {
            // Alternate the direction so the addresses stay in their two windows.
            // Not lowered: the host-only rewrite is accepted (one flag test per call).
            v.addr_rewrite(black_box(if flip { &back } else { &there })).unwrap();
            flip = !flip;
        });
        black_box(&v);
    });

    g.bench_function(BenchmarkId::new("slice", N), |b| {
        let mut flat = bds();
        let mut flip = false;
        b.iter(|| {
            addr_rewrite(black_box(&mut flat), black_box(if flip { &back } else { &there }));
            flip = !flip;
        });
    });

    g.bench_function(BenchmarkId::new("seed_loop", N), |b| {
        let mut flat = bds();
        let (pages, _) = flat.as_chunks_mut::<VRING_PAGE_BDS>();
        let mut flip = false;
        b.iter(|| {
            let (base, delta) = if flip { (MOVED, BASE.wrapping_sub(MOVED)) } else { (BASE, MOVED.wrapping_sub(BASE)) };
            seed_loop(black_box(pages), N, black_box(base), WINDOW, delta);
            flip = !flip;
        });
    });
    g.finish();
}

fn reserve_set(c: &mut Criterion) {
    const DEPTH: usize = 4096;
    let mut g = c.benchmark_group("reserve_set");
    for n in [1u32, 16, 256] {
        g.throughput(Throughput::Elements(u64::from(n)));
        g.bench_function(BenchmarkId::new("batch", n), |b| {
            let mut tx_img = vec![Bd::ZERO; DEPTH];
            let mut rx_img = vec![Bd::ZERO; DEPTH];
            let mut tx = PRing::new(Direction::Tx, 0x1000_0000, 2, &mut tx_img).unwrap();
            let mut rx = PRing::new(Direction::Rx, 0x2000_0000, 2, &mut rx_img).unwrap();
            let mut txq = SwDmaQueue::for_ring(&tx).unwrap();
            let mut rxq = SwDmaQueue::for_ring(&rx).unwrap();
            let src: Vec<Bd> = (0..u64::from(n)).map(|i| Bd::new(LenCtrl::new().with_length(64), 0, i * 64)).collect();
            b.iter(|| {
                // A device that keeps up: everything produced has been fetched.
                let (th, rh) = (DeviceHead::caught_up(&txq), DeviceHead::caught_up(&rxq));
                let (rt, rr) = reserve_descriptors(&mut txq, &mut rxq, th, rh, black_box(n)).unwrap();
                tx.set_descriptors(&rt, black_box(&src)).unwrap();
                rx.set_descriptors(&rr, black_box(&src)).unwrap();
            });
            black_box((&tx, &rx));
        });
    }
    g.finish();
}

criterion_group!(benches, relocation, reserve_set);
criterion_main!(benches);
