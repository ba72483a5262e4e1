//! The execution unit: its work queue, has-work pairing and degradation.

use super::*;

/// A work queue that logs what the worker does.
#[derive(Default)]
struct Q {
    pending: std::collections::VecDeque<XuWork>,
    has_work: u64,
    log: Vec<String>,
    fail_pop: bool,
}

impl XuQueue for Q {
    fn peek_current(&mut self) -> Option<XuWork> {
        self.pending.front().copied()
    }
    fn consume_has_work(&mut self) -> Result<(), XuSignalError> {
        self.log.push("has_work".into());
        if self.has_work == 0 {
            return Err(XuSignalError::Underflow);
        }
        self.has_work -= 1;
        Ok(())
    }
    fn pop_current(&mut self, seq_id: u64, status: NrtStatus) -> Result<(), XuSignalError> {
        self.log.push(format!("mark_comp {seq_id} {}", status.code()));
        self.pending.pop_front();
        if self.fail_pop {
            return Err(XuSignalError::Signal);
        }
        Ok(())
    }
}

impl Q {
    fn submit(&mut self, seq_id: u64, config: ExecConfig) {
        self.pending.push_back(XuWork { seq_id, config });
        self.has_work += 1;
    }
}

#[test]
fn xu_step_completes_and_pairs_has_work_with_mark_complete() {
    let mut dev = Box::new(FakeDevice::new(Arch::Sunda, RING));
    let mut nq = FakeDevice::notifications(RING);
    let mut xu = ExecUnit::new();
    let mut q = Q::default();
    assert_eq!(xu.step(&mut *dev, &mut nq, &mut q), XuStep::Idle);
    q.submit(7, ExecConfig::new(Arch::Sunda, 2, 5));
    dev.run_all(2, 1, 2);
    assert_eq!(xu.step(&mut *dev, &mut nq, &mut q), XuStep::InFlight);
    assert_eq!(xu.step(&mut *dev, &mut nq, &mut q), XuStep::InFlight);
    assert_eq!(xu.step(&mut *dev, &mut nq, &mut q), XuStep::Completed { seq_id: 7, status: NrtStatus::Success });
    assert_eq!(q.log, ["has_work", "mark_comp 7 0"]);
    assert_eq!(q.has_work, 0);
    assert_eq!(xu.health(), XuHealth::Healthy);
    // Settled after the mark-complete, G-SETTLE, within the same worker step:
    // counted once per core, timestamps in CPU time.
    assert_eq!(xu.current().config().settle, Settle::AfterNotice);
    assert!(!xu.current().settle_due());
    assert!(xu.current().timestamps_are_cpu_us());
    assert_eq!(dev.counter_updates.iter().map(|(c, _)| *c).collect::<Vec<_>>(), [0, 1]);
    // The next request starts from INIT.
    q.submit(8, ExecConfig::new(Arch::Sunda, 1, 5));
    dev.run_all(1, 3, 4);
    assert_eq!(xu.step(&mut *dev, &mut nq, &mut q), XuStep::InFlight);
    assert_eq!(xu.current().state(), ExecState::WaitBarrierProxy);
}

#[test]
fn xu_degrades_after_a_2_and_answers_101() {
    let mut dev = Box::new(FakeDevice::new(Arch::Sunda, RING));
    let mut nq = FakeDevice::notifications(RING);
    let mut xu = ExecUnit::new();
    let mut q = Q::default();
    q.submit(1, ExecConfig::new(Arch::Sunda, 1, 0)); // 0 s budget, nothing arrives
    q.submit(2, ExecConfig::new(Arch::Sunda, 1, 5));
    q.submit(3, ExecConfig::new(Arch::Sunda, 1, 5));
    let mut done = vec![];
    for _ in 0..10 {
        if let XuStep::Completed { seq_id, status } = xu.step(&mut *dev, &mut nq, &mut q) {
            done.push((seq_id, status));
        }
    }
    assert_eq!(
        done,
        [(1, NrtStatus::Timeout), (2, NrtStatus::ExecUnitUnrecoverable), (3, NrtStatus::ExecUnitUnrecoverable)]
    );
    assert_eq!(xu.health(), XuHealth::FatalShutdown);
    assert_eq!(q.has_work, 0, "every has-work consumed exactly once");
    assert_eq!(q.log.iter().filter(|l| *l == "has_work").count(), 3);
}

#[test]
fn xu_has_work_underflow_is_reported_and_still_completes() {
    let mut dev = Box::new(FakeDevice::new(Arch::Sunda, RING));
    let mut nq = FakeDevice::notifications(RING);
    let mut xu = ExecUnit::new();
    let mut q = Q::default();
    q.pending.push_back(XuWork { seq_id: 9, config: ExecConfig::new(Arch::Sunda, 1, 5) }); // no has-work posted
    dev.run_all(1, 1, 2);
    let mut last = XuStep::Idle;
    for _ in 0..3 {
        last = xu.step(&mut *dev, &mut nq, &mut q);
    }
    assert_eq!(last, XuStep::Completed { seq_id: 9, status: NrtStatus::Success });
    assert_eq!(q.log, ["has_work", "mark_comp 9 0"], "the submitter is never left blocked");
    assert_eq!(xu.health(), XuHealth::FatalShutdown);
    assert_eq!(dev.count("xu_has_work_underflow"), 1);

    let mut xu = ExecUnit::new();
    let mut q = Q { fail_pop: true, ..Q::default() };
    q.submit(10, ExecConfig::new(Arch::Sunda, 1, 5));
    dev.run_all(1, 1, 2);
    for _ in 0..3 {
        xu.step(&mut *dev, &mut nq, &mut q);
    }
    assert_eq!(xu.health(), XuHealth::FatalShutdown);
    assert_eq!(dev.count("xu_complete_failed"), 1);
}
