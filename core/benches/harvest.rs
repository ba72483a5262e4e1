//! Harvest benchmarks: entry decode vs memcpy, one empty WAIT_CORE
//! sweep, a full INIT -> DONE harvest, and the poll group's empty pass against
//! the empty sweeps it makes, over a lean in-memory platform (the
//! platform's own cost is a 16-byte copy per slot read, as a mapped ring's is).
//!
//! `cargo xtask bench` runs these and writes the medians into BENCHMARKS.md.

use std::cell::Cell;
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use nrt_core::arch::{Arch, MAX_CORES};
use nrt_core::event::Event;
use nrt_core::exec::{ExecConfig, ExecRequest, ExecState, PollGroup, Step};
use nrt_core::hal::{self, ErrorKind, ErrorType};
use nrt_core::nq::ring::NqProducer;
use nrt_core::nq::{Notification, Notifications, RawEntry, Subtype, INFER_STATUS_NQS, NQ_PER_CORE};
use nrt_core::NrtStatus;

const RING: usize = 1024;

/// Ring memory, a clock that does not move, and nothing else.
struct BenchDev {
    mem: Vec<[u8; RING]>,
    t: Cell<u64>,
}

impl BenchDev {
    fn new() -> BenchDev {
        BenchDev { mem: vec![[0; RING]; MAX_CORES * NQ_PER_CORE], t: Cell::new(1) }
    }

    /// START, `extra` CC records, END on every engine of `cores` cores.
    fn with_records(cores: usize, extra: usize) -> BenchDev {
        let mut d = BenchDev::new();
        for c in 0..cores {
            for (e, &nq) in INFER_STATUS_NQS.iter().enumerate() {
                let mut p = NqProducer::new(RING as u32).unwrap();
                let mut put = |d: &mut BenchDev, sub: u16, ts: u64| {
                    let mut b = RawEntry::new(sub, nq, 0, 0, ts).to_array();
                    let off = p.push(&mut b).unwrap() as usize;
                    d.mem[c * NQ_PER_CORE + nq as usize][off..off + 16].copy_from_slice(&b);
                };
                put(&mut d, Subtype::START, 100 + e as u64);
                for i in 0..extra {
                    put(&mut d, Subtype::CC_START, 150 + i as u64);
                }
                put(&mut d, Subtype::END, 200 + e as u64);
            }
        }
        d
    }
}

impl ErrorType for BenchDev {
    type Error = ErrorKind;
}
impl hal::NqRings for BenchDev {
    #[inline]
    fn read_slot(&mut self, core: u8, nq: u8, offset: u32, out: &mut [u8; 16]) -> Result<(), ErrorKind> {
        let ring = self.mem.get(usize::from(core) * NQ_PER_CORE + usize::from(nq)).ok_or(ErrorKind::NotMapped)?;
        let o = offset as usize;
        out.copy_from_slice(ring.get(o..o + 16).ok_or(ErrorKind::OutOfRange)?);
        Ok(())
    }
    #[inline]
    fn write_head(&mut self, _core: u8, _nq: u8, _head: u32) -> Result<(), ErrorKind> {
        Ok(())
    }
}
impl hal::IntcCause for BenchDev {
    fn read_cause(&mut self, _: u8, _: u32, _: u32) -> Result<u32, ErrorKind> {
        Ok(0)
    }
}
impl hal::Clock for BenchDev {
    #[inline]
    fn now_ns(&self) -> u64 {
        self.t.get()
    }
}
impl hal::CollectivesProxy for BenchDev {}
impl hal::FaultProbe for BenchDev {}
impl<E: Copy + Into<Event>> hal::EventSink<E> for BenchDev {
    fn event(&mut self, e: &E) {
        black_box(e);
    }
}
impl nrt_core::counters::CounterSink for BenchDev {}

impl hal::TensorNotify for BenchDev {}

fn notifications() -> Notifications {
    let mut n = Notifications::new();
    for c in 0..MAX_CORES as u8 {
        n.bind_core(c, RING as u32).unwrap();
    }
    n
}

fn decode(c: &mut Criterion) {
    const N: usize = 4096;
    let src: Vec<[u8; 16]> = (0..N)
        .map(|i| RawEntry::new((i % 9) as u16, (i % 32) as u8, (i % 16) as u8, i as u16, i as u64 * 7919).to_array())
        .collect();
    let mut g = c.benchmark_group("decode");
    g.throughput(Throughput::Bytes((N * 16) as u64));
    g.bench_function(BenchmarkId::new("memcpy", N), |b| {
        let mut dst = vec![[0u8; 16]; N];
        b.iter(|| {
            dst.copy_from_slice(black_box(&src));
            black_box(&dst);
        })
    });
    // The harvest's use: decode each entry and consume the typed value at once
    // (the matcher keeps nothing but substates and timestamps).
    g.bench_function(BenchmarkId::new("notification_decode", N), |b| {
        b.iter(|| {
            let (mut starts, mut ends, mut cc, mut other, mut mix) = (0u32, 0u32, 0u32, 0u32, 0u64);
            for e in black_box(&src) {
                let n = Notification::decode(e);
                match n.subtype {
                    Subtype::Start => starts += 1,
                    Subtype::End => ends += 1,
                    Subtype::CcStart | Subtype::CcEnd => cc += 1,
                    _ => other += 1,
                }
                mix ^= n.device_ts ^ u64::from(n.nq_tag) ^ u64::from(n.debug_hint) ^ u64::from(n.custom_sub_id);
            }
            black_box((starts, ends, cc, other, mix))
        })
    });
    // Decoding into a stored array of typed values (24 bytes per 16-byte entry).
    g.bench_function(BenchmarkId::new("notification_decode_to_vec", N), |b| {
        let mut dst: Vec<Notification> = Vec::with_capacity(N);
        b.iter(|| {
            dst.clear();
            dst.extend(black_box(&src).iter().map(Notification::decode));
            black_box(&dst);
        })
    });
    g.finish();
}

fn empty_sweep(c: &mut Criterion) {
    let mut g = c.benchmark_group("wait_core_empty_sweep");
    for cores in [1u8, 2] {
        g.bench_function(BenchmarkId::new("cores", cores), |b| {
            let mut dev = BenchDev::new();
            let mut nq = notifications();
            let mut req = ExecRequest::new(ExecConfig::new(Arch::Sunda, cores, 5));
            req.progress_one_step(&mut dev, &mut nq);
            req.progress_one_step(&mut dev, &mut nq);
            assert_eq!(req.state(), ExecState::WaitCore);
            b.iter(|| {
                let s = req.progress_one_step(black_box(&mut dev), &mut nq);
                debug_assert_eq!(s, Step::InFlight);
                black_box(s)
            })
        });
    }
    g.finish();
}

fn full_harvest(c: &mut Criterion) {
    let mut g = c.benchmark_group("harvest_init_to_done");
    let cases: &[(&str, u8, usize)] =
        &[("cores", 1, 0), ("cores", 2, 0), ("records_per_engine", 2, 4), ("records_per_engine", 2, 16)];
    for &(name, cores, extra) in cases {
        let param = if name == "cores" { cores as usize } else { extra };
        g.bench_function(BenchmarkId::new(name, param), |b| {
            b.iter_batched_ref(
                || {
                    (
                        BenchDev::with_records(cores as usize, extra.saturating_sub(2)),
                        notifications(),
                        ExecRequest::new(ExecConfig::new(Arch::Sunda, cores, 5)),
                    )
                },
                |(dev, nq, req)| {
                    let mut s = Step::InFlight;
                    let mut steps = 0;
                    while s == Step::InFlight && steps < 8 {
                        s = req.progress_one_step(dev, nq);
                        steps += 1;
                    }
                    debug_assert_eq!(s, Step::Done(NrtStatus::Success));
                    black_box(s)
                },
                BatchSize::SmallInput,
            )
        });
    }
    g.finish();
}

/// The poll group's pass with nothing new against the sweeps it makes, in the
/// same run: one 2-core request (one 2x5 sweep), 16 requests on 16 lanes
/// (16 sweeps), and a pass with nothing in flight.
fn group_empty_pass(c: &mut Criterion) {
    fn lanes(n: usize) -> Vec<(BenchDev, Notifications)> {
        (0..n).map(|_| (BenchDev::new(), notifications())).collect()
    }
    let mut g = c.benchmark_group("empty_pass");
    for n in [1usize, 16] {
        g.bench_function(BenchmarkId::new("sweeps_2x5", n), |b| {
            let mut lanes = lanes(n);
            let mut reqs: Vec<ExecRequest> =
                (0..n).map(|_| ExecRequest::new(ExecConfig::new(Arch::Sunda, 2, 5))).collect();
            for ((dev, nq), req) in lanes.iter_mut().zip(reqs.iter_mut()) {
                req.progress_one_step(dev, nq);
                req.progress_one_step(dev, nq);
                assert_eq!(req.state(), ExecState::WaitCore);
            }
            b.iter(|| {
                for ((dev, nq), req) in lanes.iter_mut().zip(reqs.iter_mut()) {
                    black_box(req.progress_one_step(black_box(dev), nq));
                }
            })
        });
        g.bench_function(BenchmarkId::new("group_2x5", n), |b| {
            let mut lanes = lanes(n);
            let mut group = PollGroup::<16>::new();
            for lane in 0..n {
                group.insert(lane as u16, ExecConfig::new(Arch::Sunda, 2, 5), lane as u64).unwrap();
            }
            group.poll(&mut lanes[..], |_, _| {});
            group.poll(&mut lanes[..], |_, _| {});
            assert!(group.request(0).is_some_and(|r| r.state() == ExecState::WaitCore));
            b.iter(|| {
                let p = group.poll(black_box(&mut lanes[..]), |c, _| {
                    black_box(c);
                });
                debug_assert_eq!(p.completed, 0);
                black_box(p)
            })
        });
    }
    g.bench_function("group_nothing_in_flight", |b| {
        let mut lanes = lanes(1);
        let mut group = PollGroup::<64>::new();
        b.iter(|| {
            black_box(group.poll(black_box(&mut lanes[..]), |c, _| {
                black_box(c);
            }))
        })
    });
    g.finish();
}

criterion_group!(benches, decode, empty_sweep, full_harvest, group_empty_pass);
criterion_main!(benches);
