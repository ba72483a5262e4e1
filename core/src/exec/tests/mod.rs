//! The harvest driven through every path with the seed's values.

use super::*;
use crate::event::Event;
use crate::nq::{Engine, ErrorEntry, Subtype, TsCal};
use crate::testutil::{FakeDevice, INTC_OVERFLOW};

mod barrier;
mod errors;
mod matching;
mod props;
mod settle;
mod state;
mod status;
mod tensor;
mod timestamps;
mod wait;
mod xu;

const RING: u32 = 1024; // 64 entries

struct Rig {
    dev: Box<FakeDevice>,
    nq: Notifications,
    req: ExecRequest,
}

impl Rig {
    fn new(cores: u8, timeout_s: u32) -> Rig {
        Rig::with_arch(Arch::Sunda, cores, timeout_s)
    }

    fn with_arch(arch: Arch, cores: u8, timeout_s: u32) -> Rig {
        Rig {
            dev: Box::new(FakeDevice::new(arch, RING)),
            nq: FakeDevice::notifications(RING),
            req: ExecRequest::new(ExecConfig::new(arch, cores, timeout_s)),
        }
    }

    fn step(&mut self) -> Step {
        self.req.progress_one_step(&mut *self.dev, &mut self.nq)
    }

    /// INIT and the barrier transition: two steps, landing in WAIT_CORE.
    fn enter_wait_core(&mut self) {
        assert_eq!(self.step(), Step::InFlight);
        assert_eq!(self.req.state(), ExecState::WaitBarrierProxy);
        assert_eq!(self.step(), Step::InFlight);
        assert_eq!(self.req.state(), ExecState::WaitCore);
    }

    fn finish(&mut self) -> Step {
        for _ in 0..64 {
            let r = self.step();
            if r != Step::InFlight {
                return r;
            }
        }
        panic!("did not finish in 64 steps");
    }
}
