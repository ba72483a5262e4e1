//! NQ ring transfer between two threads, 16-byte records: our ring protocol of
//! phase bit and HEAD write-back, core's `NqProducer`/`NqRing`, against the
//! `rtrb` SPSC ring, in the same run, same capacity, same record.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use nrt_core::hal::{self, ErrorKind, ErrorType};
use nrt_core::nq::ring::{NqProducer, NqRing};
use serde_json::json;

use crate::write_json;

const ENTRIES: u32 = 4096;
const BYTES: u32 = ENTRIES * 16;
/// Records the consumer takes per HEAD write-back.
const BATCH: u32 = 64;

/// Ring memory as two words per entry, and the HEAD register with the latch a
/// device keeps of it: hardware sees every MMIO write of HEAD, so it knows the
/// total consumed even when several writes land between two of its looks,
/// the sampling caveat of G-HEAD; `consumed` is that latch.
struct Shared {
    words: Vec<AtomicU64>,
    head: AtomicU32,
    consumed: AtomicU32,
}

struct Consumer<'a> {
    sh: &'a Shared,
    last_head: u32,
}

impl ErrorType for Consumer<'_> {
    type Error = ErrorKind;
}

impl hal::NqRings for Consumer<'_> {
    #[inline]
    fn read_slot(&mut self, _c: u8, _n: u8, off: u32, out: &mut [u8; 16]) -> Result<(), ErrorKind> {
        let i = (off / 16) as usize * 2;
        let lo = self.sh.words.get(i).ok_or(ErrorKind::OutOfRange)?.load(Ordering::Acquire);
        let hi = self.sh.words.get(i + 1).ok_or(ErrorKind::OutOfRange)?.load(Ordering::Relaxed);
        out[..8].copy_from_slice(&lo.to_le_bytes());
        out[8..].copy_from_slice(&hi.to_le_bytes());
        Ok(())
    }
    #[inline]
    fn write_head(&mut self, _c: u8, _n: u8, head: u32) -> Result<(), ErrorKind> {
        self.sh.head.store(head, Ordering::Release);
        // The device's latch of this write.
        let delta = head.wrapping_sub(self.last_head) & (BYTES - 1);
        self.last_head = head;
        self.sh.consumed.fetch_add(delta, Ordering::Release);
        Ok(())
    }
}

fn ours(n: u64) -> f64 {
    let sh = Arc::new(Shared {
        words: (0..ENTRIES * 2).map(|_| AtomicU64::new(0)).collect(),
        head: AtomicU32::new(0),
        consumed: AtomicU32::new(0),
    });
    let prod = {
        let sh = Arc::clone(&sh);
        std::thread::spawn(move || {
            let mut p = NqProducer::new(BYTES).expect("ring");
            let mut seen = 0u32;
            for i in 0..n {
                let mut e = [0u8; 16];
                e[8..].copy_from_slice(&i.to_le_bytes());
                loop {
                    if p.free() == 0 {
                        // Feed the latched total to the producer in steps of under a lap.
                        let mut delta = sh.consumed.load(Ordering::Acquire).wrapping_sub(seen);
                        while delta > 0 {
                            let step = delta.min(BYTES / 2);
                            seen = seen.wrapping_add(step);
                            p.on_head_write(seen & (BYTES - 1));
                            delta -= step;
                        }
                    }
                    if let Some(off) = p.push(&mut e) {
                        let w = (off / 16) as usize * 2;
                        sh.words[w + 1].store(u64::from_le_bytes(e[8..].try_into().unwrap()), Ordering::Relaxed);
                        sh.words[w].store(u64::from_le_bytes(e[..8].try_into().unwrap()), Ordering::Release);
                        break;
                    }
                    std::hint::spin_loop();
                }
            }
        })
    };
    let t = Instant::now();
    let mut ring = NqRing::new(BYTES).expect("ring");
    let mut c = Consumer { sh: &sh, last_head: 0 };
    let mut buf = [0u8; 16];
    let mut got = 0u64;
    while got < n {
        let limit = ring.batch_limit(BATCH);
        let mut k = 0;
        while k < limit && ring.poll(&mut c, 0, 4, &mut buf).unwrap_or(false) {
            let v = u64::from_le_bytes(buf[8..].try_into().unwrap());
            assert_eq!(v, got, "in order, once");
            got += 1;
            k += 1;
        }
        if k > 0 {
            let _ = ring.write_head(&mut c, 0, 4);
        } else {
            std::hint::spin_loop();
        }
    }
    let secs = t.elapsed().as_secs_f64();
    prod.join().expect("producer");
    n as f64 / secs
}

fn rtrb_rate(n: u64) -> f64 {
    let (mut tx, mut rx) = rtrb::RingBuffer::<[u8; 16]>::new(ENTRIES as usize);
    let prod = std::thread::spawn(move || {
        for i in 0..n {
            let mut e = [0u8; 16];
            e[8..].copy_from_slice(&i.to_le_bytes());
            while tx.push(e).is_err() {
                std::hint::spin_loop();
            }
        }
    });
    let t = Instant::now();
    let mut got = 0u64;
    while got < n {
        match rx.pop() {
            Ok(e) => {
                let v = u64::from_le_bytes(e[8..].try_into().unwrap());
                assert_eq!(v, got);
                got += 1;
            }
            Err(_) => std::hint::spin_loop(),
        }
    }
    let secs = t.elapsed().as_secs_f64();
    prod.join().expect("producer");
    n as f64 / secs
}

pub fn run(n: u64) {
    println!("NQ ring transfer: {n} records of 16 bytes, producer thread -> consumer thread, {ENTRIES}-entry rings");
    let mut o = Vec::new();
    let mut r = Vec::new();
    for _ in 0..5 {
        o.push(ours(n));
        r.push(rtrb_rate(n));
    }
    o.sort_by(|a, b| a.total_cmp(b));
    r.sort_by(|a, b| a.total_cmp(b));
    let (om, rm) = (o[2], r[2]);
    println!(
        "  ours  median {:.1} M records/s (runs: {:?})",
        om / 1e6,
        o.iter().map(|v| (v / 1e5).round() / 10.0).collect::<Vec<_>>()
    );
    println!(
        "  rtrb  median {:.1} M records/s (runs: {:?})",
        rm / 1e6,
        r.iter().map(|v| (v / 1e5).round() / 10.0).collect::<Vec<_>>()
    );
    println!("  ours / rtrb = {:.2}x (goal >= 0.8x)", om / rm);
    write_json(
        "ring",
        &json!({ "records": n, "entries": ENTRIES, "batch": BATCH, "ours_per_s": om, "rtrb_per_s": rm, "ratio": om / rm }),
    );
}
