//! The shared-memory file of `nrt-sim serve --shm PATH` (and of the driver
//! model's device file): its definition lives in [`nrt_abi::shm`], which the
//! binding (`nrt-linux`'s `harvest`) maps from the other side; re-exported here
//! so that the simulator's API keeps its paths (`nrt_sim::shm::ShmFile`, ...).

pub use nrt_abi::shm::*;
