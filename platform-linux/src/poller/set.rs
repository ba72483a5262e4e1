//! The pollers of a host, and the routing of each request to the poller
//! holding its device.

use nrt_core::exec::{ExecConfig, ExecDevice};
use nrt_core::nq::Notifications;

use super::{Poller, PollerConfig, PollerError, PollerStats, SubmitError, Ticket, VecLanes, POLLER_CAPACITY};

/// The pollers of a host: one per device by default ([`PollerSet::per_device`]),
/// or one per contiguous block of devices ([`PollerSet::blocks`],
/// for a machine with fewer spare cores than devices). A request is submitted
/// by `(device, lane)`; the set routes it to the poller holding that device.
pub struct PollerSet<D: ExecDevice + Send + 'static> {
    pollers: Vec<Poller<VecLanes<D>>>,
    /// `route[device]`: the poller holding the device and the device's first
    /// lane in it, and the device's lane count.
    route: Vec<(usize, u16, u16)>,
}

impl<D: ExecDevice + Send + 'static> std::fmt::Debug for PollerSet<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PollerSet").field("pollers", &self.pollers.len()).field("devices", &self.route.len()).finish()
    }
}

impl<D: ExecDevice + Send + 'static> PollerSet<D> {
    /// One poller per device: `devices[d]` holds the lanes (logical cores) of
    /// device `d`. With [`PollerConfig::cpu`] set, poller `d` is pinned to CPU
    /// `cpu + d`.
    pub fn per_device(devices: Vec<Vec<(D, Notifications)>>, cfg: PollerConfig) -> Result<PollerSet<D>, PollerError> {
        let n = devices.len();
        PollerSet::blocks(devices, n, cfg)
    }

    /// `pollers` pollers, each over a contiguous block of devices (the first
    /// `devices % pollers` blocks one device larger). Refused: no device, no
    /// poller or more pollers than devices, a block of more than
    /// [`POLLER_CAPACITY`] lanes, a device of more than `u16::MAX` lanes.
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
            // A failure drops the pollers already started (each joins its thread).
            set.push(Poller::spawn(VecLanes(lanes), PollerConfig { cpu, ..cfg })?);
        }
        Ok(PollerSet { pollers: set, route })
    }

    /// Submit a request on `lane` of `device`. A device or lane that does not
    /// exist is answered `NRT_INVALID_HANDLE` through its ticket, as
    /// [`Poller::submit`] answers an unknown lane.
    pub fn submit(&self, device: usize, lane: u16, cfg: ExecConfig) -> Result<Ticket, SubmitError> {
        match self.route.get(device) {
            Some(&(p, first, count)) if lane < count => self.pollers[p].submit(first + lane, cfg),
            // Past every lane of its poller: the poller answers InvalidHandle.
            _ => self.pollers[0].submit(u16::MAX, cfg),
        }
    }

    /// How many pollers (threads) the set runs.
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

    /// Stop every poller (as [`Poller::shutdown`]); returns each device's lanes
    /// in device order, and the pollers' CPU time in ns, summed.
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
