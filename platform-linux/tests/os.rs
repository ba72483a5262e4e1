//! The OS seam without hardware: ioctls on files that are not Neuron devices,
//! BAR mappings of ordinary files, bounds.

use std::fs::OpenOptions;
use std::io::Write;

use nrt_core::hal::Registers;
use nrt_linux::bar::MappedBar;
use nrt_linux::device::NeuronDevice;

fn tmpfile(name: &str, len: u64) -> std::path::PathBuf {
    let p = std::env::temp_dir().join(format!("nrt-linux-{}-{name}", std::process::id()));
    let f = OpenOptions::new().create(true).truncate(true).read(true).write(true).open(&p).unwrap();
    f.set_len(len).unwrap();
    p
}

#[test]
fn kickoff_on_a_file_that_is_not_a_device_is_enotty() {
    let p = tmpfile("notadev", 0);
    let dev = NeuronDevice::open(&p).unwrap();
    let e = dev.semaphore_increment(0, 3, 1).unwrap_err();
    assert_eq!(e.errno(), Some(libc::ENOTTY));
    let msg = e.to_string();
    assert!(msg.contains("NEURON_IOCTL_SEMAPHORE_INCREMENT"), "{msg}");
    assert!(msg.contains(&p.display().to_string()), "{msg}");
    assert!(msg.contains("ENOTTY"), "{msg}");
    for r in [dev.semaphore_read(0, 1).map(|_| ()), dev.event_get(0, 1).map(|_| ()), dev.bar_write(0, 0x100, 1)] {
        assert_eq!(r.unwrap_err().errno(), Some(libc::ENOTTY));
    }
    std::fs::remove_file(p).unwrap();
}

#[test]
fn opening_a_missing_node_names_it() {
    let e = NeuronDevice::open("/dev/neuron-does-not-exist").unwrap_err();
    assert_eq!(e.errno(), Some(libc::ENOENT));
    assert!(e.to_string().starts_with("open on /dev/neuron-does-not-exist failed: ENOENT"), "{e}");
}

#[test]
fn mapped_bar_round_trips_and_refuses_stray_offsets() {
    let p = tmpfile("bar", 4096);
    let mut bar = MappedBar::open(&p, 0, 4096).unwrap();
    bar.write32(0x38, 7).unwrap();
    assert_eq!(bar.read32(0x38).unwrap(), 7);
    bar.write64(0x40, 0x1122_3344_5566_7788).unwrap();
    assert_eq!(bar.read64(0x40).unwrap(), 0x1122_3344_5566_7788);
    assert_eq!(bar.read32(0x44).unwrap(), 0x1122_3344);
    // Past the end, straddling the end, misaligned: errors, never an access.
    assert!(bar.read32(4096).is_err());
    assert!(bar.write32(4094, 1).is_err());
    assert!(bar.read32(2).is_err());
    assert!(bar.read32(u64::MAX - 1).is_err());
    let e = bar.read32(1 << 40).unwrap_err();
    assert!(e.to_string().contains("outside the mapping"), "{e}");
    drop(bar);
    // The writes reached the file.
    let bytes = std::fs::read(&p).unwrap();
    assert_eq!(bytes[0x38], 7);
    let mut f = OpenOptions::new().write(true).open(&p).unwrap();
    f.write_all(b"x").unwrap();
    std::fs::remove_file(p).unwrap();
}

#[test]
fn mmap_failures_name_the_call() {
    let p = tmpfile("small", 16);
    let e = MappedBar::open(&p, 3, 4096).unwrap_err();
    assert!(e.to_string().starts_with("mmap on "), "{e}");
    assert_eq!(e.errno(), Some(libc::EINVAL));
    std::fs::remove_file(p).unwrap();
}

#[test]
fn ring_creation_on_a_file_that_is_not_a_device_is_enotty() {
    let p = tmpfile("notadev2", 0);
    let dev = NeuronDevice::open(&p).unwrap();
    let arg = nrt_linux::ioctl::NotificationsInitV2 { nq_type: 3, size: 4096, on_host_memory: 1, ..Default::default() };
    let e = nrt_linux::rings::map_driver_ring(&dev, arg).unwrap_err();
    assert_eq!(e.errno(), Some(libc::ENOTTY));
    assert!(e.to_string().contains("NEURON_IOCTL_NOTIFICATIONS_INIT_V2"), "{e}");
    let bad = nrt_linux::ioctl::NotificationsInitV2 { size: 3000, ..arg };
    assert!(nrt_linux::rings::map_driver_ring(&dev, bad).unwrap_err().to_string().contains("power of two"));
    std::fs::remove_file(p).unwrap();
}

#[test]
fn the_ioctl_doorbell_releases_through_copy_start_and_refuses_other_registers() {
    use nrt_core::arch::Arch;
    use nrt_core::dma::doorbell::{ring_tail_inc, UdmaLayout};
    use nrt_core::dma::Direction;
    use nrt_linux::doorbell::{IoctlDoorbell, UdmaEngine};

    let p = tmpfile("notadev3", 0);
    let dev = NeuronDevice::open(&p).unwrap();
    let mut db = IoctlDoorbell::new(&dev, Arch::Sunda, vec![UdmaEngine { eng_id: 0, base: 0x3000_0000 }]);
    // Core's doorbell A composes the offset; the binding turns it into the ioctl.
    // M2S alone would be a copy start with rx == 0 (the driver's BUG_ON,
    // driver-abi.md point 1): refused without any ioctl.
    let l = UdmaLayout::of(Arch::Sunda);
    let off = l.tail_inc_offset(0x3000_0000, 3, Direction::Tx).unwrap();
    let rx = l.tail_inc_offset(0x3000_0000, 3, Direction::Rx).unwrap();
    let e = db.write32(off, 4).unwrap_err();
    assert_eq!(e.errno(), None, "{e}");
    assert!(e.to_string().contains("rx_desc_count 0 would hit the driver's BUG_ON"), "{e}");
    // S2M then M2S: one copy start, which the binding refuses on a queue this
    // process never initialised (driver-abi.md point 2), by name.
    db.write32(rx, 4).unwrap();
    let e = db.write32(off, 4).unwrap_err();
    assert!(e.to_string().contains("NEURON_IOCTL_DMA_QUEUE_COPY_START"), "{e}");
    assert!(e.to_string().contains("was not initialised"), "{e}");
    // Not a tail-increment register: refused without any ioctl.
    let e = db.write32(0x3000_1028, 1).unwrap_err();
    assert!(e.to_string().contains("not the tail-increment register"), "{e}");
    assert!(db.read32(off).is_err());
    // Through core's doorbell function, the same: S2M is held, M2S sends both.
    let mut fence = NoFence;
    ring_tail_inc(&mut db, &mut fence, Arch::Sunda, 0x3000_0000, 3, Direction::Rx, 2).unwrap();
    assert_eq!(db.pending_rx(0, 3), 2);
    assert!(ring_tail_inc(&mut db, &mut fence, Arch::Sunda, 0x3000_0000, 3, Direction::Tx, 2).is_err());
    assert_eq!(db.pending_rx(0, 3), 0);
    std::fs::remove_file(p).unwrap();
}

struct NoFence;
impl nrt_core::hal::Fence for NoFence {}
