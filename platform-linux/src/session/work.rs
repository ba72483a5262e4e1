//! A runtime's own work on the session: memory objects, copies between them
//! on the session's own DMA queue, and executions, which are copies then the
//! kickoff and the harvest.
//!
//! Every copy goes through core's one submit sequence and waits on its
//! completion marker; a marker that does not arrive leaves the queue's state
//! unknown, and the session unusable. A copy between two host objects is
//! compared after its marker: a destination that does not hold its source is
//! `NRT_HW_ERROR`, G-COPY-CHECK.

use super::staging::{pieces, StagingFailure};
use super::*;
use crate::api_error::Error;
use crate::exec::{CopyOp, Exec};
use crate::mem::{Mem, MemKind};

impl Session {
    /// `Err` naming why the session cannot run `call` now.
    fn ready(&self, call: &'static str) -> Result<(), Error> {
        self.owner.check("session").map_err(|source| Error::Forked { call, source })?;
        if self.closed {
            return Err(Error::handle(call, self.site_name(), "the session is closed"));
        }
        match &self.unusable {
            Some(why) => Err(Error::Unusable { call, site: self.site_name(), why: why.clone() }),
            None => Ok(()),
        }
    }

    /// The device and cores, for messages: `/dev/neuron0 nd0 nc0-1`.
    pub(crate) fn site_name(&self) -> String {
        format!("{} {}", self.dev.path().display(), self.site())
    }

    /// Allocate `size` bytes of `kind` memory for this session's copies, freed
    /// when the last handle and execution holding it are gone.
    pub fn alloc(&mut self, kind: MemKind, size: u64) -> Result<Mem, Error> {
        self.ready("nrt_mem_alloc")?;
        self.allocator().alloc(kind, size)
    }

    /// What an allocation needs of this session.
    pub(crate) fn allocator(&self) -> crate::mem::Allocator {
        crate::mem::Allocator {
            dev: Arc::clone(&self.dev),
            arch: self.arch,
            engine: self.staging_engine,
            first_core: self.physical(0),
            owner: self.owner,
            site: self.site_name(),
        }
    }

    /// Why the session can no longer run work, if it cannot.
    pub fn unusable(&self) -> Option<&str> {
        self.unusable.as_deref()
    }

    /// `Err` unless `op` copies within two objects of this session's device,
    /// inside both, not onto itself.
    fn check_copy(&self, call: &'static str, op: &CopyOp) -> Result<(), Error> {
        for (side, m, off) in [("destination", &op.dst, op.dst_off), ("source", &op.src, op.src_off)] {
            if !Arc::ptr_eq(&m.0.dev, &self.dev) {
                let why = format!("the {side} is memory of another device file ({})", m.0.dev.path().display());
                return Err(Error::handle(call, self.site_name(), why));
            }
            if off.checked_add(op.len).is_none_or(|end| end > m.size()) {
                return Err(Error::invalid(
                    call,
                    self.site_name(),
                    format!(
                        "{} bytes at offset {off} of the {side} ({} memory of {} bytes) run past its end",
                        op.len,
                        m.kind().name(),
                        m.size()
                    ),
                ));
            }
        }
        if op.len == 0 {
            return Err(Error::invalid(call, self.site_name(), "a copy of 0 bytes"));
        }
        // Descriptors move in no promised order: an overlapping copy has no defined result.
        if op.src.same(&op.dst) && op.src_off < op.dst_off + op.len && op.dst_off < op.src_off + op.len {
            let why = format!(
                "{} bytes from offset {} to offset {} of one object overlap (copy through a second object)",
                op.len, op.src_off, op.dst_off
            );
            return Err(Error::invalid(call, self.site_name(), why));
        }
        Ok(())
    }

    /// One copy on the session's queue, waited on its completion marker. A
    /// marker that did not arrive is [`Error::CopyTimeout`] and the session
    /// unusable; between host objects, a destination that does not hold the
    /// source is [`Error::CopyNotMoved`].
    pub fn copy(&mut self, dst: &Mem, dst_off: u64, src: &Mem, src_off: u64, len: u64) -> Result<Staging, Error> {
        const CALL: &str = "nrt_copy";
        self.ready(CALL)?;
        let op = CopyOp { dst: dst.clone(), dst_off, src: src.clone(), src_off, len };
        self.check_copy(CALL, &op)?;
        let _site = crate::oplog::SiteScope::enter(self.site());
        let st = self.copy_op(&op)?;
        match st.failure() {
            None => Ok(st),
            Some((NrtStatus::Timeout, _)) => {
                Err(Error::CopyTimeout { site: self.site_name(), queue: st.queue, handle: st.handle })
            }
            Some(_) => Err(Error::CopyNotMoved { site: self.site_name(), queue: st.queue, bytes: len }),
        }
    }

    /// The checked copy of `op`, its bytes compared when both are host memory.
    fn copy_op(&mut self, op: &CopyOp) -> Result<Staging, Error> {
        let (src, dst) = (op.src.device_address() + op.src_off, op.dst.device_address() + op.dst_off);
        let mut st = self.copy_transfers(pieces(src, dst, op.len)).map_err(|e| match e {
            StagingFailure::Fill(e) => Error::from(e),
            StagingFailure::Submit(e) => {
                if e.rung.is_some() || matches!(e.step, SubmitStep::Doorbell(_)) {
                    // Past the doorbells the device may hold the staged slots.
                    self.lose_queue(op, format!("copy on DMA engine {}: {e}", self.staging_engine));
                }
                Error::Submit {
                    site: self.site_name(),
                    queue: (self.staging_engine, STAGING_QUEUE),
                    source: Box::new(e),
                }
            }
        })?;
        if st.handle_polls.is_none() {
            let (eng, q) = st.queue;
            let why = format!("a copy's completion marker on DMA engine {eng} queue {q} did not arrive");
            self.lose_queue(op, why);
        }
        if st.handle_polls.is_some() {
            if let (Some(s), Some(d)) = (op.src.host_bytes(), op.dst.host_bytes()) {
                let (so, doff, n) = (op.src_off as usize, op.dst_off as usize, op.len as usize);
                std::sync::atomic::fence(Ordering::Acquire);
                st.copy_verified = s[so..so + n]
                    .iter()
                    .zip(&d[doff..doff + n])
                    .all(|(a, b)| a.load(Ordering::Relaxed) == b.load(Ordering::Relaxed));
            }
        }
        Ok(st)
    }

    /// The queue's state is unknown after `op`: the session runs no more work,
    /// since a late marker would pass for the next one's, and `op`'s memory,
    /// which the device may still write, is left to the device file's close.
    fn lose_queue(&mut self, op: &CopyOp, why: String) {
        op.src.leave_to_close();
        op.dst.leave_to_close();
        self.unusable = Some(format!("{why}; the queue's state is unknown"));
    }

    /// Run `exec`: its copies in order on the session's queue, each waited on
    /// its marker, then the kickoff and the harvest. A failed copy ends the
    /// execution before its kickoff with `NRT_TIMEOUT` or `NRT_HW_ERROR`, the
    /// note naming the queue; a status is a result, `Err` a failed call.
    pub fn execute(&mut self, exec: &Exec) -> Result<Inference, Error> {
        self.run_exec("execution", exec)
    }

    /// [`Session::execute`], its refusals naming `call`.
    pub(super) fn run_exec(&mut self, call: &'static str, exec: &Exec) -> Result<Inference, Error> {
        self.ready(call)?;
        for op in exec.copies() {
            self.check_copy(call, op)?;
        }
        let _site = crate::oplog::SiteScope::enter(self.site());
        let mut copies = Vec::with_capacity(exec.copies().len());
        for op in exec.copies() {
            let st = self.copy_op(op)?;
            let failed = st.failure();
            copies.push(st);
            if let Some((status, why)) = failed {
                return Ok(self.not_started(copies, status, why));
            }
        }
        Ok(self.kick_and_harvest(copies)?)
    }
}
