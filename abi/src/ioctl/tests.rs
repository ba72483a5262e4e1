//! Every request's code and every argument's layout against the driver's.

use super::*;
use core::mem::{offset_of, size_of};

#[test]
fn request_codes_are_the_drivers() {
    assert_eq!(SEMAPHORE_INCREMENT.code(), 0x8008_4E29);
    assert_eq!(SEMAPHORE_DECREMENT.code(), 0x8008_4E2A);
    assert_eq!(SEMAPHORE_READ.code(), 0xC008_4E2B);
    assert_eq!(SEMAPHORE_WRITE.code(), 0x8008_4E2C);
    assert_eq!(EVENT_SET.code(), 0x8008_4E2D);
    assert_eq!(EVENT_GET.code(), 0xC008_4E2E);
    assert_eq!(NOTIFICATIONS_INIT_V2.code(), 0x8008_4E35);
    assert_eq!(BAR_READ.code(), 0x8008_4E0B);
    assert_eq!(BAR_WRITE.code(), 0x4008_4E0C);
    assert_eq!(DMA_QUEUE_COPY_START.code(), 0x8008_4E23);
}

/// The size field of `req` is a pointer's, and its argument is the driver's struct size.
fn sized<T>(req: Ioctl<T>, driver_struct_bytes: usize) -> &'static str {
    assert_eq!(ioc_size(req.code()) as usize, size_of::<*mut T>(), "{req:?}");
    assert_eq!(ioc_size(req.code()), ARG_PTR_SIZE, "{req:?}");
    assert_eq!(size_of::<T>(), driver_struct_bytes, "{req:?}");
    assert!(req.name().starts_with("NEURON_IOCTL_"), "{req:?}");
    req.name()
}

#[test]
fn every_request_encodes_its_argument_and_the_driver_copies_its_struct() {
    let names = [
        sized(SEMAPHORE_INCREMENT, 12),
        sized(SEMAPHORE_DECREMENT, 12),
        sized(SEMAPHORE_READ, 12),
        sized(SEMAPHORE_WRITE, 12),
        sized(EVENT_SET, 12),
        sized(EVENT_GET, 12),
        sized(NOTIFICATIONS_INIT_V2, 48),
        sized(BAR_READ, 32),
        sized(BAR_WRITE, 32),
        sized(DMA_QUEUE_COPY_START, 16),
    ];
    // Each name is its own request's (messages name the call).
    let mut sorted = names.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), names.len());
    assert_eq!(SEMAPHORE_READ.name(), "NEURON_IOCTL_SEMAPHORE_READ");
    assert_eq!(ioc_size(0xC020_4E70), 32, "RESOURCE_MMAP_INFO encodes its struct, not a pointer");
}

#[test]
fn struct_layouts_are_the_drivers() {
    assert_eq!(size_of::<SemaphoreArg>(), 12);
    assert_eq!(offset_of!(SemaphoreArg, semaphore_index), 4);
    assert_eq!(offset_of!(SemaphoreArg, value), 8);
    assert_eq!(size_of::<NotificationsInitV2>(), 48);
    assert_eq!(offset_of!(NotificationsInitV2, size), 16);
    assert_eq!(offset_of!(NotificationsInitV2, dram_region), 28);
    assert_eq!(offset_of!(NotificationsInitV2, mmap_offset), 32);
    assert_eq!(offset_of!(NotificationsInitV2, mem_handle), 40);
    assert_eq!(size_of::<BarRw>(), 32);
    assert_eq!(offset_of!(BarRw, address), 8);
    assert_eq!(offset_of!(BarRw, data), 16);
    assert_eq!(offset_of!(BarRw, count), 24);
    assert_eq!(size_of::<DmaQueueCopyStart>(), 16);
}
#[test]
fn bring_up_request_codes_are_the_drivers() {
    // shared/anchors/driver-abi.md, "What a runtime calls to bring a core up".
    let expect: [(u32, u32); 18] = [
        (DEVICE_INFO.code(), 0x8008_4E03),
        (DEVICE_BASIC_INFO.code(), 0x4008_4E64),
        (DRIVER_INFO_GET.code(), 0x8018_4E6E),
        (COMPATIBLE_VERSION.code(), 0x4008_4E5D),
        (CRWL_READER_ENTER.code(), 0x4008_4E51),
        (NC_RESET.code(), 0x8008_4E67),
        (NC_RESET_READY.code(), 0x8008_4E68),
        (MEM_ALLOC_V2MT.code(), 0x8030_4E66),
        (MEM_GET_EXTENDED_INFO.code(), 0x8008_4E1D),
        (MEM_FREE.code(), 0x8008_4E16),
        (DMA_QUEUE_INIT.code(), 0x8008_4E21),
        (DMA_QUEUE_RELEASE.code(), 0x8008_4E22),
        (DMA_ACK_COMPLETED.code(), 0x8008_4E24),
        (DMA_QUEUE_GET_STATE.code(), 0xC008_4E25),
        (NOTIFICATIONS_INIT_WITH_REALLOC_V2.code(), 0x8008_4E36),
        (NOTIFICATIONS_QUEUE_INFO.code(), 0x8008_4E3A),
        (RESOURCE_MMAP_INFO.code(), 0xC020_4E70),
        (CRWL_READER_EXIT.code(), 0x4008_4E52),
    ];
    for (got, want) in expect {
        assert_eq!(got, want, "{:?}", request_name(got));
    }
    let mut codes: [u32; ALL_REQUESTS.len()] = ALL_REQUESTS.map(|r| r.1);
    codes.sort_unstable();
    assert!(codes.windows(2).all(|w| w[0] != w[1]), "two requests share a code");
    assert_eq!(request_name(0x8008_4E23), Some("NEURON_IOCTL_DMA_QUEUE_COPY_START"));
    assert_eq!(request_name(0x541B), None);
}

/// The CRWL family, the datastore, the holder query and the apps list, as gcc
/// computes them from the driver's `neuron_ioctl.h` on x86-64.
#[test]
fn ownership_datastore_and_query_requests_are_the_drivers() {
    // (request code, driver code, direction, nr, size field)
    let expect: [(u32, u32, u32, u32, u32); 15] = [
        (CRWL_READER_ENTER.code(), 0x4008_4E51, IOC_WRITE, 81, 8),
        (CRWL_READER_EXIT.code(), 0x4008_4E52, IOC_WRITE, 82, 8),
        (CRWL_WRITER_ENTER.code(), 0x4008_4E53, IOC_WRITE, 83, 8),
        (CRWL_WRITER_DOWNGRADE.code(), 0x4008_4E54, IOC_WRITE, 84, 8),
        (CRWL_NC_RANGE_MARK.code(), 0x4008_4E55, IOC_WRITE, 85, 8),
        (CRWL_NC_RANGE_MARK_EXT0.code(), 0xC050_4E55, IOC_READ | IOC_WRITE, 85, 80),
        (CRWL_NC_RANGE_UNMARK.code(), 0x4008_4E56, IOC_WRITE, 86, 8),
        (CRWL_NC_RANGE_UNMARK_EXT0.code(), 0x4050_4E56, IOC_WRITE, 86, 80),
        (NC_PID_STATE_DUMP.code(), 0xC010_4E75, IOC_READ | IOC_WRITE, 117, 16),
        (DEVICE_GET_ALL_APPS_INFO.code(), 0x8008_4E07, IOC_READ, 7, 8),
        (ACQUIRE_NEURON_DS.code(), 0x8008_4E47, IOC_READ, 71, 8),
        (RELEASE_NEURON_DS.code(), 0x8008_4E48, IOC_READ, 72, 8),
        (NOTIFICATIONS_QUEUE_INFO.code(), 0x8008_4E3A, IOC_READ, 58, 8),
        (DMA_ACK_COMPLETED.code(), 0x8008_4E24, IOC_READ, 36, 8),
        (GET_LOGICAL_TO_PHYSICAL_NC_MAP.code(), 0xC010_4E78, IOC_READ | IOC_WRITE, 120, 16),
    ];
    for (got, want, dir, nr, size) in expect {
        assert_eq!(got, want, "{:?}", request_name(got));
        assert_eq!(got >> 30, dir, "{:?}", request_name(got));
        assert_eq!(got & 0xFF, nr, "{:?}", request_name(got));
        assert_eq!((got >> 8) & 0xFF, NEURON_IOCTL_BASE);
        assert_eq!(ioc_size(got), size, "{:?}", request_name(got));
        assert!(request_name(got).is_some_and(|n| n.starts_with("NEURON_IOCTL_")));
    }
    assert_eq!(CRWL_NC_RANGE_MARK.nr(), CRWL_NC_RANGE_MARK_EXT0.nr());
    let names = [
        sized(CRWL_WRITER_ENTER, 36),
        sized(CRWL_WRITER_DOWNGRADE, 36),
        sized(CRWL_NC_RANGE_MARK, 24),
        sized(CRWL_NC_RANGE_UNMARK, 24),
        sized(ACQUIRE_NEURON_DS, 24),
        sized(RELEASE_NEURON_DS, 24),
        sized(DEVICE_GET_ALL_APPS_INFO, 16),
    ];
    assert_eq!(names[2], "NEURON_IOCTL_CRWL_NC_RANGE_MARK");
    assert_eq!(size_of::<CrwlNcMapExt>(), 80);
    assert_eq!(size_of::<NcPidStateDump>(), 16);
    assert_eq!(size_of::<AppInfo>(), 152);
    assert_eq!((size_of::<GetNcMap>(), size_of::<NcMapHeader>(), size_of::<NcMapEntry>()), (16, 4, 8));
    assert_eq!(NEURON_DATASTORE_SIZE, 0x4_0000);
    assert_eq!(MAX_NEURON_DEVICE_COUNT * MAX_NC_PER_DEVICE, 512);
}

#[test]
fn ownership_and_datastore_layouts_are_the_drivers() {
    assert_eq!(offset_of!(CrwlNcMap, start_nc_index), 4);
    assert_eq!(offset_of!(CrwlNcMap, end_nc_index), 8);
    assert_eq!(offset_of!(CrwlNcMap, max_nc_available), 12);
    assert_eq!(offset_of!(CrwlNcMap, bitmap), 16);
    assert_eq!(offset_of!(CrwlNcMapExt, bitmap), 16);
    assert_eq!(offset_of!(NcPidStateDump, nc_id), 4);
    assert_eq!(offset_of!(NcPidStateDump, log_dump_limit), 12);
    assert_eq!(offset_of!(NeuronDsInfo, mmap_offset), 8);
    assert_eq!(offset_of!(NeuronDsInfo, size), 16);
    assert_eq!(offset_of!(AppsInfoHeader, capacity), 4);
    assert_eq!(offset_of!(AppsInfoHeader, size), 8);
    assert_eq!(offset_of!(AppInfo, nc_lock_map), 4);
    assert_eq!(offset_of!(AppInfo, uuid_data), 5);
    assert_eq!(offset_of!(AppInfo, host_mem_size), 136);
    assert_eq!(offset_of!(AppInfo, device_mem_size), 144);
}

#[test]
fn bring_up_layouts_are_the_drivers() {
    assert_eq!(offset_of!(DeviceInfo, connected_device_count), 8);
    assert_eq!(offset_of!(DeviceInfo, connected_devices), 12);
    assert_eq!(offset_of!(DeviceInfo, bar_address), 48);
    assert_eq!(offset_of!(DeviceInfo, bar_size), 64);
    assert_eq!(offset_of!(MemAllocV2Mt, mem_type), 32);
    assert_eq!(offset_of!(MemAllocV2Mt, mem_handle), 40);
    assert_eq!(offset_of!(MemGetExtendedInfo, mmap_offset), 16);
    assert_eq!(offset_of!(MemGetExtendedInfo, pa), 24);
    assert_eq!(offset_of!(MemGetExtendedInfo, size), 40);
    assert_eq!(offset_of!(DmaQueueInit, tx_handle), 16);
    assert_eq!(offset_of!(DmaQueueInit, rxc_handle), 32);
    assert_eq!(offset_of!(DmaQueueInit, axi_port), 40);
    assert_eq!(offset_of!(NotificationsInitWithReallocV2, force_alloc_mem), 32);
    assert_eq!(offset_of!(NotificationsInitWithReallocV2, mmap_offset), 40);
    assert_eq!(offset_of!(NotificationsInitWithReallocV2, mem_handle), 48);
    assert_eq!(offset_of!(NotificationsQueueInfo, head), 4);
    assert_eq!(offset_of!(NotificationsQueueInfo, phase_bit), 8);
    assert_eq!(offset_of!(ResourceMmapInfo, offset), 16);
    assert_eq!(offset_of!(ResourceMmapInfo, size), 24);
    assert_eq!(offset_of!(DmaQueueState, base_addr), 8);
    assert_eq!(offset_of!(DmaQueueState, completion_base_addr), 32);
    assert_eq!(offset_of!(BarRwWire, address), offset_of!(BarRw, address));
    assert_eq!(offset_of!(BarRwWire, data), offset_of!(BarRw, data));
    assert_eq!(offset_of!(BarRwWire, count), offset_of!(BarRw, count));
    assert_eq!(offset_of!(Crwl, uuid), 4);
}
