//! A request, parsed once: the request code paired with its argument struct.
//!
//! The driver dispatches on the whole request code, so a code with the right
//! number but another size or direction is not the request: the model answers
//! it `EINVAL` as the driver's default does, GEN-2. driver: neuron_cdev.c,
//! `ncdev_ioctl`.

use nrt_abi::ioctl as abi;
use nrt_abi::sim as simabi;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// Why an argument could not be parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParseError {
    /// Not a request the model serves.
    Unknown,
    /// The argument buffer is shorter than the request's struct.
    Short,
}

macro_rules! requests {
    ($( $(#[$doc:meta])* $variant:ident ( $t:ty ) = $($req:ident)|+ ),* $(,)?) => {
        /// Every request the model serves, with its argument.
        #[derive(Clone, Debug, PartialEq, Eq)]
        pub enum Request {
            $( $(#[$doc])* $variant($t), )*
            /// `SEMAPHORE_INCREMENT`, `_DECREMENT`, `_READ`, `_WRITE`: the code and the argument.
            Semaphore(u32, abi::SemaphoreArg),
            /// `EVENT_SET`, `EVENT_GET`: the code and the argument.
            Event(u32, abi::SemaphoreArg),
        }

        /// Bytes of the argument struct the driver copies for request `code`;
        /// `None` for a request the model does not serve, which the driver answers `EINVAL`.
        pub fn arg_size(code: u32) -> Option<usize> {
            $( $( if code == $req.code() { return Some(core::mem::size_of::<$t>()); } )+ )*
            if is_semaphore(code) || is_event(code) {
                return Some(core::mem::size_of::<abi::SemaphoreArg>());
            }
            None
        }

        impl Request {
            /// Parse the argument of request `code` from `arg`.
            pub fn parse(code: u32, arg: &[u8]) -> Result<Request, ParseError> {
                $( $( if code == $req.code() { return Ok(Request::$variant(read(arg)?)); } )+ )*
                if is_semaphore(code) {
                    return Ok(Request::Semaphore(code, read(arg)?));
                }
                if is_event(code) {
                    return Ok(Request::Event(code, read(arg)?));
                }
                Err(ParseError::Unknown)
            }

            /// Write the argument, maybe changed, back into `arg`: what the
            /// driver copies back. A handler changes the struct only where the
            /// driver copies it back.
            pub fn store(&self, arg: &mut [u8]) {
                match self {
                    $( Request::$variant(v) => put(arg, v), )*
                    Request::Semaphore(_, v) | Request::Event(_, v) => put(arg, v),
                }
            }
        }
    };
}

use abi::{
    ACQUIRE_NEURON_DS, BAR_READ, BAR_WRITE, COMPATIBLE_VERSION, CRWL_NC_RANGE_MARK, CRWL_NC_RANGE_MARK_EXT0,
    CRWL_NC_RANGE_UNMARK, CRWL_NC_RANGE_UNMARK_EXT0, CRWL_READER_ENTER, CRWL_READER_EXIT, CRWL_WRITER_DOWNGRADE,
    CRWL_WRITER_ENTER, DEVICE_BASIC_INFO, DEVICE_INFO, DMA_ACK_COMPLETED, DMA_QUEUE_COPY_START, DMA_QUEUE_GET_STATE,
    DMA_QUEUE_INIT, DMA_QUEUE_RELEASE, DRIVER_INFO_GET, GET_LOGICAL_TO_PHYSICAL_NC_MAP, MEM_ALLOC_V2MT, MEM_FREE,
    MEM_GET_EXTENDED_INFO, NC_PID_STATE_DUMP, NC_RESET, NC_RESET_READY, NOTIFICATIONS_INIT_V2,
    NOTIFICATIONS_INIT_WITH_REALLOC_V2, NOTIFICATIONS_QUEUE_INFO, RELEASE_NEURON_DS, RESOURCE_MMAP_INFO,
};
use simabi::SIM_HINTS;

requests! {
    /// `DEVICE_INFO`.
    DeviceInfo(abi::DeviceInfo) = DEVICE_INFO,
    /// `DEVICE_BASIC_INFO`.
    DeviceBasicInfo(abi::DeviceBasicInfo) = DEVICE_BASIC_INFO,
    /// `DRIVER_INFO_GET`.
    DriverInfo(abi::DriverInfo) = DRIVER_INFO_GET,
    /// `COMPATIBLE_VERSION`.
    CompatibleVersion(abi::CompatibleVersion) = COMPATIBLE_VERSION,
    /// `CRWL_READER_ENTER`.
    CrwlReaderEnter(abi::Crwl) = CRWL_READER_ENTER,
    /// `CRWL_READER_EXIT`.
    CrwlReaderExit(abi::Crwl) = CRWL_READER_EXIT,
    /// `CRWL_WRITER_ENTER`.
    CrwlWriterEnter(abi::Crwl) = CRWL_WRITER_ENTER,
    /// `CRWL_WRITER_DOWNGRADE`.
    CrwlWriterDowngrade(abi::Crwl) = CRWL_WRITER_DOWNGRADE,
    /// `CRWL_NC_RANGE_MARK`, the 24-byte pointer form.
    RangeMark(abi::CrwlNcMap) = CRWL_NC_RANGE_MARK,
    /// `CRWL_NC_RANGE_MARK_EXT0`.
    RangeMarkExt(abi::CrwlNcMapExt) = CRWL_NC_RANGE_MARK_EXT0,
    /// `CRWL_NC_RANGE_UNMARK`.
    RangeUnmark(abi::CrwlNcMap) = CRWL_NC_RANGE_UNMARK,
    /// `CRWL_NC_RANGE_UNMARK_EXT0`.
    RangeUnmarkExt(abi::CrwlNcMapExt) = CRWL_NC_RANGE_UNMARK_EXT0,
    /// `NC_PID_STATE_DUMP`.
    PidStateDump(abi::NcPidStateDump) = NC_PID_STATE_DUMP,
    /// `NC_RESET`.
    NcReset(abi::NcReset) = NC_RESET,
    /// `NC_RESET_READY`.
    NcResetReady(abi::NcResetReady) = NC_RESET_READY,
    /// `MEM_ALLOC_V2MT`.
    MemAlloc(abi::MemAllocV2Mt) = MEM_ALLOC_V2MT,
    /// `MEM_GET_EXTENDED_INFO`.
    MemInfo(abi::MemGetExtendedInfo) = MEM_GET_EXTENDED_INFO,
    /// `MEM_FREE`.
    MemFree(abi::MemFree) = MEM_FREE,
    /// `DMA_QUEUE_INIT`.
    DmaQueueInit(abi::DmaQueueInit) = DMA_QUEUE_INIT,
    /// `DMA_QUEUE_RELEASE`.
    DmaQueueRelease(abi::DmaQueueRelease) = DMA_QUEUE_RELEASE,
    /// `DMA_QUEUE_COPY_START`.
    DmaCopyStart(abi::DmaQueueCopyStart) = DMA_QUEUE_COPY_START,
    /// `DMA_ACK_COMPLETED`.
    DmaAck(abi::DmaAckCompleted) = DMA_ACK_COMPLETED,
    /// `DMA_QUEUE_GET_STATE`.
    DmaGetState(abi::DmaQueueGetState) = DMA_QUEUE_GET_STATE,
    /// `NOTIFICATIONS_INIT_V2`.
    NqInit(abi::NotificationsInitV2) = NOTIFICATIONS_INIT_V2,
    /// `NOTIFICATIONS_INIT_WITH_REALLOC_V2`.
    NqInitRealloc(abi::NotificationsInitWithReallocV2) = NOTIFICATIONS_INIT_WITH_REALLOC_V2,
    /// `NOTIFICATIONS_QUEUE_INFO`.
    NqQueueInfo(abi::NotificationsQueueInfo) = NOTIFICATIONS_QUEUE_INFO,
    /// `BAR_READ`.
    BarRead(abi::BarRwWire) = BAR_READ,
    /// `BAR_WRITE`.
    BarWrite(abi::BarRwWire) = BAR_WRITE,
    /// `RESOURCE_MMAP_INFO`.
    ResourceMmapInfo(abi::ResourceMmapInfo) = RESOURCE_MMAP_INFO,
    /// `ACQUIRE_NEURON_DS`.
    AcquireDs(abi::NeuronDsInfo) = ACQUIRE_NEURON_DS,
    /// `RELEASE_NEURON_DS`.
    ReleaseDs(abi::NeuronDsInfo) = RELEASE_NEURON_DS,
    /// `GET_LOGICAL_TO_PHYSICAL_NC_MAP`.
    NcMap(abi::GetNcMap) = GET_LOGICAL_TO_PHYSICAL_NC_MAP,
    /// The simulator's hint query, no driver request. G-DRV-SIMHINTS.
    SimHints(simabi::SimHints) = SIM_HINTS,
}

fn is_semaphore(code: u32) -> bool {
    [abi::SEMAPHORE_INCREMENT, abi::SEMAPHORE_DECREMENT, abi::SEMAPHORE_READ, abi::SEMAPHORE_WRITE]
        .iter()
        .any(|r| r.code() == code)
}

fn is_event(code: u32) -> bool {
    code == abi::EVENT_SET.code() || code == abi::EVENT_GET.code()
}

fn read<T: FromBytes + KnownLayout + Immutable + Copy>(arg: &[u8]) -> Result<T, ParseError> {
    T::read_from_prefix(arg).map(|(t, _)| t).map_err(|_| ParseError::Short)
}

fn put<T: IntoBytes + Immutable>(arg: &mut [u8], v: &T) {
    let b = v.as_bytes();
    if let Some(dst) = arg.get_mut(..b.len()) {
        dst.copy_from_slice(b);
    }
}

impl Request {
    /// GEN-1: the requests `ncdev_ioctl` serves only to a process that has the
    /// device open. driver: neuron_cdev.c, `npid_is_attached`.
    pub fn needs_attach(&self) -> bool {
        matches!(
            self,
            Request::DmaQueueInit(_)
                | Request::DmaAck(_)
                | Request::DmaQueueRelease(_)
                | Request::MemFree(_)
                | Request::BarWrite(_)
                | Request::NqInit(_)
                | Request::NqInitRealloc(_)
        )
    }
}

/// GEN-4: the requests `ncdev_misc_ioctl` serves, the only ones a write-only
/// "free access" descriptor reaches: the core range marks, the
/// compatible-version, basic-info and driver-info queries, the pid state dump
/// and the logical-to-physical core map. Driver info is matched by its number
/// alone, `_IOC_NR`. driver: neuron_cdev.c.
/// The driver's other misc requests, such as BDF, dmabuf, printk, pod and the
/// id maps, are not ones `nrt-abi` defines.
pub fn is_misc(code: u32) -> bool {
    code == abi::CRWL_NC_RANGE_MARK.code()
        || code == abi::CRWL_NC_RANGE_MARK_EXT0.code()
        || code == abi::CRWL_NC_RANGE_UNMARK.code()
        || code == abi::CRWL_NC_RANGE_UNMARK_EXT0.code()
        || code == abi::COMPATIBLE_VERSION.code()
        || code == abi::DEVICE_BASIC_INFO.code()
        || code & 0xFF == abi::DRIVER_INFO_GET.nr()
        || code == abi::NC_PID_STATE_DUMP.code()
        || code == abi::GET_LOGICAL_TO_PHYSICAL_NC_MAP.code()
}
