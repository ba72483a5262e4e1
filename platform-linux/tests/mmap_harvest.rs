//! A full inference harvested through real mmap: ring memory and the BAR (HEAD
//! registers at the driver's NOTIFIC offsets) are files mapped exactly as a
//! device would be, while a device thread writes records into the same memory
//! with the ordering a DMA write has (timestamp word first, then the word with
//! the phase bit, Release) and follows the HEAD registers.

use std::fs::OpenOptions;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use nrt_core::arch::{nq_head_register, Arch};
use nrt_core::exec::{exec_wait_round_robin, ExecConfig, ExecRequest, Step};
use nrt_core::hal;
use nrt_core::nq::ring::NqProducer;
use nrt_core::nq::{Notifications, RawEntry, Subtype, INFER_STATUS_NQS};
use nrt_core::NrtStatus;
use nrt_linux::bar::MappedBar;
use nrt_linux::rings::{MappedDevice, MappedRings, RingWindow};
use nrt_linux::sys::Mapping;
use nrt_linux::time::AdaptiveDelay;

const RING: u32 = 4096;
/// Enough BAR to hold both sunda NOTIFIC blocks (NC1 at 0x30C3_5000): a sparse file.
const BAR_LEN: usize = 0x30C4_0000;

use hal::NqRings as _;

fn file(name: &str, len: u64) -> std::fs::File {
    let p = std::env::temp_dir().join(format!("nrt-mmap-{}-{name}", std::process::id()));
    let f = OpenOptions::new().create(true).truncate(true).read(true).write(true).open(&p).unwrap();
    f.set_len(len).unwrap();
    std::fs::remove_file(&p).unwrap(); // stays alive while mapped
    f
}

/// Ring `(core, engine)` lives at this offset of the ring file.
fn ring_off(core: usize, eng: usize) -> u64 {
    ((core * 5 + eng) as u64) * u64::from(RING)
}

#[test]
fn a_device_thread_plays_records_into_mapped_rings_and_the_harvest_sees_them() {
    let arch = Arch::Sunda;
    let ring_file = file("rings", 10 * u64::from(RING));
    let bar_file = file("bar", BAR_LEN as u64);
    let rings_map = Arc::new(Mapping::map(&ring_file, 0, 10 * RING as usize).unwrap());
    let bar = MappedBar::from_file(&bar_file, "bar", 0, BAR_LEN).unwrap();
    let device_bar = Mapping::map(&bar_file, 0, BAR_LEN).unwrap();

    let mut rings = MappedRings::new(arch, bar);
    let mut nq = Notifications::new();
    for core in 0..2u8 {
        for (eng, &id) in INFER_STATUS_NQS.iter().enumerate() {
            let w = RingWindow { map: Arc::clone(&rings_map), offset: ring_off(core as usize, eng), size: RING };
            rings.bind(core, id, w, id).unwrap();
            nq.bind(core, id, RING).unwrap();
        }
    }
    let mut dev = MappedDevice::new(rings);

    // The device: after a pause, START then END on each engine of both cores,
    // 4 records per engine (2 CC in between), following HEAD.
    let stop = Arc::new(AtomicBool::new(false));
    let device = {
        let (map, stop) = (Arc::clone(&rings_map), Arc::clone(&stop));
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            let mut prods: Vec<NqProducer> = (0..10).map(|_| NqProducer::new(RING).unwrap()).collect();
            let mut written = 0;
            for sub in [Subtype::START, Subtype::CC_START, Subtype::CC_END, Subtype::END] {
                for core in 0..2usize {
                    for (eng, &id) in INFER_STATUS_NQS.iter().enumerate() {
                        let p = &mut prods[core * 5 + eng];
                        let head_reg = nq_head_register(arch, core as u8, id).unwrap();
                        p.on_head_write(device_bar.load32(head_reg, Ordering::Acquire).unwrap());
                        let mut e = RawEntry::new(sub, id, 0, 0, 1000 + written).to_array();
                        let off = ring_off(core, eng) + u64::from(p.push(&mut e).expect("room"));
                        map.store64(off + 8, u64::from_le_bytes(e[8..].try_into().unwrap()), Ordering::Relaxed)
                            .unwrap();
                        map.store64(off, u64::from_le_bytes(e[..8].try_into().unwrap()), Ordering::Release).unwrap();
                        written += 1;
                        std::thread::yield_now();
                    }
                }
            }
            while !stop.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(1));
            }
            written
        })
    };

    let mut req = ExecRequest::new(ExecConfig::new(arch, 2, 5));
    let w = exec_wait_round_robin(&mut req, &mut dev, &mut nq, &mut AdaptiveDelay::default());
    stop.store(true, Ordering::Release);
    assert_eq!(device.join().unwrap(), 40);
    assert_eq!((w.status, w.step), (NrtStatus::Success, Step::Done(NrtStatus::Success)), "events: {:?}", dev.events);
    assert!(w.steps > 3, "the harvest polled while the device worked ({} steps)", w.steps);
    // HEAD went back through the mapped BAR at the driver's offsets: 4 records each.
    for core in 0..2u8 {
        for &id in &INFER_STATUS_NQS {
            let reg = nq_head_register(arch, core, id).unwrap();
            assert_eq!(
                dev.rings
                    .regs()
                    .read64(reg & !7)
                    .map(|v| if reg.is_multiple_of(8) { v as u32 } else { (v >> 32) as u32 })
                    .unwrap(),
                4 * 16
            );
        }
    }
    // A stray slot offset is an error, not an access.
    let mut buf = [0u8; 16];
    assert!(dev.read_slot(0, 4, RING, &mut buf).is_err());
    assert!(dev.read_slot(0, 3, 0, &mut buf).is_err(), "unbound ring");
}
