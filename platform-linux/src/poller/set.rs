//! The pollers of a host, and the routing of each request to the poller
//! holding its device.

use nrt_core::exec::{ExecConfig, ExecDevice};
use nrt_core::nq::Notifications;

use super::{Poller, PollerConfig, PollerError, PollerStats, SubmitError, Ticket, VecLanes, POLLER_CAPACITY};

/// The pollers of a host, one per device or per contiguous block of devices;
/// a request on `(device, lane)` goes to the poller holding the device.
pub struct PollerSet<D: ExecDevice + Send + 'static> {
    pollers: Vec<Poller<VecLanes<D>>>,
    /// `route[device]`: its poller, its first lane there, and its lane count.
    route: Vec<(usize, u16, u16)>,
}

impl<D: ExecDevice + Send + 'static> std::fmt::Debug for PollerSet<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PollerSet").field("pollers", &self.pollers.len()).field("devices", &self.route.len()).finish()
    }
}

impl<D: ExecDevice + Send + 'static> PollerSet<D> {
    /// One poller per device; `devices[d]` holds device `d`'s lanes. With a
    /// [`PollerConfig::cpu`], poller `d` is pinned to CPU `cpu + d`.
    pub fn per_device(devices: Vec<Vec<(D, Notifications)>>, cfg: PollerConfig) -> Result<PollerSet<D>, PollerError> {
        let n = devices.len();
        PollerSet::blocks(devices, n, cfg)
    }

    /// `pollers` pollers, each over a contiguous block of devices. Refused: no
    /// device, 0 or more pollers than devices, or a block over [`POLLER_CAPACITY`] lanes.
    pub fn blocks(
        devices: Vec<Vec<(D, Notifications)>>,
        pollers: usize,
        cfg: PollerConfig,
    ) -> Result<PollerSet<D>, PollerError> {
        let n = devices.len();
        if n == 0 || pollers == 0 || pollers > n {
            return Err(PollerError::Shape(format!("{pollers} pollers for {n} devices (1 to {n} needed)")));
        }
        let mut route = Vec::with_capacity(n);
        let mut blocks: Vec<Vec<(D, Notifications)>> = (0..pollers).map(|_| Vec::new()).collect();
        for (d, lanes) in devices.into_iter().enumerate() {
            // Contiguous blocks: device d goes to poller floor(d * pollers / n).
            let p = d * pollers / n;
            let first = u16::try_from(blocks[p].len()).ok();
            let count = u16::try_from(lanes.len()).ok();
            let (Some(first), Some(count)) = (first, count) else {
                return Err(PollerError::Shape(format!("device {d} has {} lanes, too many", lanes.len())));
            };
            if usize::from(first) + usize::from(count) > POLLER_CAPACITY {
                return Err(PollerError::Shape(format!(
                    "poller {p} would hold more than its {POLLER_CAPACITY} lanes at device {d}: use more pollers"
                )));
            }
            route.push((p, first, count));
            blocks[p].extend(lanes);
        }
        let mut set = Vec::with_capacity(pollers);
        for (p, lanes) in blocks.into_iter().enumerate() {
            let cpu = cfg.cpu.map(|c| c + p);
            // A failure drops the pollers already started, each joining its thread.
            set.push(Poller::spawn(VecLanes(lanes), PollerConfig { cpu, ..cfg })?);
        }
        Ok(PollerSet { pollers: set, route })
    }

    /// Submit a request on `lane` of `device`; an unknown one is answered
    /// `NRT_INVALID_HANDLE` through its ticket.
    pub fn submit(&self, device: usize, lane: u16, cfg: ExecConfig) -> Result<Ticket, SubmitError> {
        match self.route.get(device) {
            Some(&(p, first, count)) if lane < count => self.pollers[p].submit(first + lane, cfg),
            // Past every lane of its poller: the poller answers InvalidHandle.
            _ => self.pollers[0].submit(u16::MAX, cfg),
        }
    }

    /// How many poller threads the set runs.
    pub fn pollers(&self) -> usize {
        self.pollers.len()
    }

    /// The poller holding `device`, if it exists.
    pub fn poller_of(&self, device: usize) -> Option<usize> {
        self.route.get(device).map(|r| r.0)
    }

    /// Each poller's counters so far.
    pub fn stats(&self) -> Vec<PollerStats> {
        self.pollers.iter().map(Poller::stats).collect()
    }

    /// Stop every poller; returns each device's lanes and the pollers' summed CPU time in ns.
    pub fn shutdown(self) -> (Vec<Vec<(D, Notifications)>>, u64) {
        let mut cpu = 0u64;
        let mut blocks: Vec<std::vec::IntoIter<(D, Notifications)>> = Vec::new();
        for p in self.pollers {
            let (lanes, ns) = p.shutdown();
            cpu = cpu.saturating_add(ns);
            blocks.push(lanes.map(|l| l.0).unwrap_or_default().into_iter());
        }
        let devices =
            self.route.iter().map(|&(p, _, count)| blocks[p].by_ref().take(usize::from(count)).collect()).collect();
        (devices, cpu)
    }
}
