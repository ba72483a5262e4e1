//! The state machine and the one-step contract: INIT, the transition to WAIT_CORE,
//! DONE as terminal, the ring table, HEAD write-back per step, `may_progress`.

use super::*;

#[test]
fn request_state_fits_libnrt_size() {
    assert!(core::mem::size_of::<ExecRequest>() <= 472, "{}", core::mem::size_of::<ExecRequest>());
}

#[test]
fn init_arms_the_barrier_wait() {
    let mut r = Rig::new(1, 5);
    assert_eq!(r.req.state(), ExecState::Init);
    let s = r.step();
    assert_eq!(s, Step::InFlight);
    assert_eq!(s.code(), 1);
    assert_eq!(r.req.state(), ExecState::WaitBarrierProxy);
    assert_eq!(r.req.barrier_threshold_s(), 120);
}

#[test]
fn transition_resets_engines_and_derives_timeout_ms() {
    let mut r = Rig::new(2, 7);
    r.enter_wait_core();
    assert_eq!(r.req.timeout_ms(), 7000);
    for c in 0..2 {
        for e in 0..ENGINES_PER_CORE {
            assert_eq!(r.req.substate(c, e), Some(TpbEngState::StartPending));
        }
    }
}

#[test]
fn timeout_ms_does_not_overflow() {
    let mut r = Rig::new(1, u32::MAX);
    r.enter_wait_core();
    assert_eq!(r.req.timeout_ms(), 1000 * u64::from(u32::MAX));
}

#[test]
fn healthy_one_and_two_cores_finish_in_three_steps_without_reading_the_intc() {
    for cores in [1u8, 2] {
        let mut r = Rig::new(cores, 5);
        r.dev.run_all(cores, 10_000, 20_000);
        r.enter_wait_core();
        let s = r.step();
        assert_eq!(s, Step::Done(NrtStatus::Success), "cores={cores}");
        assert_eq!(s.code(), 0);
        assert_eq!(r.req.state(), ExecState::Done);
        for c in 0..cores as usize {
            for e in 0..ENGINES_PER_CORE {
                assert_eq!(r.req.substate(c, e), Some(TpbEngState::Complete));
            }
        }
        assert_eq!(r.dev.intc_reads, 0, "the INTC is never read on the happy path");
        assert_eq!(r.dev.count("core_timeout"), 0);
    }
}

#[test]
fn done_is_terminal() {
    let mut r = Rig::new(1, 5);
    r.dev.start(0, 0, 1);
    r.dev.start(0, 0, 1);
    r.enter_wait_core();
    let first = r.step();
    assert_eq!(first, Step::failed(NrtStatus::Failure));
    let reads = r.dev.slot_reads;
    let events = r.dev.events.len();
    r.dev.run_all(1, 1, 2);
    for _ in 0..3 {
        assert_eq!(r.step(), first);
    }
    assert_eq!(r.dev.slot_reads, reads);
    assert_eq!(r.dev.events.len(), events);
    assert_eq!(r.req.result(), Some(first));
}

#[test]
fn ring_table_problems_fail_cleanly() {
    let mut r = Rig::new(1, 5);
    r.nq.set_infer_status_nqs(&[4, 5, 6, 7]).unwrap();
    r.step();
    assert_eq!(r.step(), Step::failed(NrtStatus::Failure));
    assert_eq!(r.dev.count("nq_count_mismatch"), 1);

    let mut r = Rig::new(2, 5);
    r.nq = Notifications::new();
    r.nq.bind_core(0, RING).unwrap();
    r.step();
    assert_eq!(r.step(), Step::failed(NrtStatus::Failure));
    assert_eq!(r.dev.count("bad_ring"), 1);

    let mut r = Rig::new(1, 5);
    r.dev.fail_ring = Some((0, 6));
    r.enter_wait_core();
    assert_eq!(r.step(), Step::failed(NrtStatus::Failure));
    assert_eq!(r.dev.count("ring_read_failed"), 1);
}

#[test]
fn head_is_written_back_after_each_batch() {
    let mut r = Rig::new(1, 5);
    r.dev.run_all(1, 1, 2);
    r.enter_wait_core();
    r.step();
    assert_eq!(r.dev.head_writes, ENGINES_PER_CORE as u64, "one per engine ring: the error ring was empty");
}

/// Under batching, G-HEAD-BATCH, HEAD waits for half a ring, but a batch that
/// ends in error hands back what it read at once, from the one step itself:
/// a caller driving `progress_one_step` directly has no completion hook.
#[test]
fn a_batch_that_fails_hands_its_reads_back_at_once_under_batching() {
    let mut r = Rig::new(1, 5);
    r.nq.set_head_batching(true);
    // PE starts twice: the matcher fails on the second START.
    r.dev.start(0, 0, 1);
    r.dev.start(0, 0, 2);
    r.enter_wait_core();
    let before = r.dev.head_writes;
    assert_eq!(r.step(), Step::failed(NrtStatus::Failure));
    assert_eq!(r.dev.head_writes - before, 1, "the failed ring's HEAD, written in the step");
}

#[test]
fn names_of_states_and_engines() {
    let states = [ExecState::Init, ExecState::WaitBarrierProxy, ExecState::WaitCore, ExecState::Done];
    let names: Vec<&str> = states.iter().map(|s| s.name()).collect();
    assert_eq!(names, ["INIT", "WAIT_BARRIER_PROXY", "WAIT_CORE", "DONE"]);
    let subs = [TpbEngState::StartPending, TpbEngState::EndPending, TpbEngState::Complete];
    let names: Vec<&str> = subs.iter().map(|s| s.name()).collect();
    assert_eq!(names, ["START_PENDING", "END_PENDING", "COMPLETE"]);
    for (i, (e, name)) in Engine::ALL.iter().zip(["PE", "ACT", "POOL", "DVE", "SP"]).enumerate() {
        assert_eq!((e.index(), e.name()), (i, name));
        assert_eq!(Engine::from_index(i), Some(*e));
        assert_eq!(Engine::parse(name), Some(*e));
        assert_eq!(Engine::parse(&name.to_ascii_lowercase()), Some(*e), "case-insensitive");
        assert_eq!(Engine::parse(&i.to_string()), Some(*e));
    }
    assert_eq!(Engine::from_index(ENGINES_PER_CORE), None);
    assert_eq!(Engine::parse(&ENGINES_PER_CORE.to_string()), None);
    for other in ["GPU", "", "01", "+1", "9"] {
        assert_eq!(Engine::parse(other), None, "{other:?}");
    }
}

#[test]
fn nothing_read_nothing_handed_back_and_no_result_in_flight() {
    let mut r = Rig::new(2, 5);
    r.enter_wait_core();
    assert_eq!(r.step(), Step::InFlight);
    assert_eq!(r.dev.head_writes, 0, "no HEAD write for a ring nothing was read from");
    assert_eq!(r.req.result(), None);
    r.dev.start(1, 3, 1);
    assert_eq!(r.step(), Step::InFlight);
    assert_eq!(r.dev.head_writes, 1, "only core 1 DVE's ring");
    assert_eq!(r.req.result(), None);
}

#[test]
fn may_progress_says_whether_a_step_could_read_anything_and_changes_nothing() {
    let mut r = Rig::new(2, 5);
    assert!(r.req.may_progress(&mut *r.dev, &r.nq), "before WAIT_CORE: always step");
    r.enter_wait_core();
    let reads = r.dev.slot_reads;
    assert!(!r.req.may_progress(&mut *r.dev, &r.nq), "nothing written");
    assert_eq!(r.dev.slot_reads - reads, 2 * ENGINES_PER_CORE as u64, "one slot per pending engine");
    // One START, on the last engine: a step has something to read.
    r.dev.start(1, ENGINES_PER_CORE - 1, 1);
    let (heads, reads) = (r.dev.head_writes, r.dev.slot_reads);
    assert!(r.req.may_progress(&mut *r.dev, &r.nq));
    assert_eq!(r.dev.slot_reads - reads, 2 * ENGINES_PER_CORE as u64, "stops at the fresh one");
    assert!(r.req.may_progress(&mut *r.dev, &r.nq), "it consumed nothing");
    assert_eq!(r.dev.head_writes, heads, "it wrote no HEAD");
    assert_eq!(r.step(), Step::InFlight, "the step takes the START");
    assert_eq!(r.req.substate(1, ENGINES_PER_CORE - 1), Some(TpbEngState::EndPending));
    assert!(!r.req.may_progress(&mut *r.dev, &r.nq), "the START is consumed");
    // Every engine started and the last one ended: COMPLETE engines are
    // not looked at.
    for core in 0..2u8 {
        for eng in 0..ENGINES_PER_CORE - usize::from(core) {
            r.dev.start(core, eng, 1);
        }
    }
    r.dev.end(1, ENGINES_PER_CORE - 1, 2);
    assert_eq!(r.step(), Step::InFlight);
    assert_eq!(r.req.substate(1, ENGINES_PER_CORE - 1), Some(TpbEngState::Complete));
    let reads = r.dev.slot_reads;
    assert!(!r.req.may_progress(&mut *r.dev, &r.nq));
    assert_eq!(r.dev.slot_reads - reads, 9, "the COMPLETE engine's ring is not read");
    r.dev.end(0, 0, 2);
    assert!(r.req.may_progress(&mut *r.dev, &r.nq), "a fresh END on the first engine");
    for core in 0..2u8 {
        for eng in 0..ENGINES_PER_CORE - usize::from(core) {
            if (core, eng) != (0, 0) {
                r.dev.end(core, eng, 2);
            }
        }
    }
    assert_eq!(r.step(), Step::Done(NrtStatus::Success));
    assert!(r.req.may_progress(&mut *r.dev, &r.nq), "DONE: a step answers at once");
    // A ring it cannot read: let the step report it.
    let mut r = Rig::new(1, 5);
    r.enter_wait_core();
    r.dev.fail_ring = Some((0, crate::nq::INFER_STATUS_NQS[0]));
    assert!(r.req.may_progress(&mut *r.dev, &r.nq));
    assert_eq!(r.step(), Step::failed(NrtStatus::Failure));
}

#[test]
fn a_step_carries_its_c_code_and_its_status() {
    let nan = NrtStatus::ExecCompletedWithNumErr;
    assert_eq!((Step::InFlight.code(), Step::InFlight.status()), (1, None));
    assert_eq!((Step::Done(nan).code(), Step::Done(nan).status()), (0, Some(nan)), "0 with a status set");
    let timeout = Step::failed(NrtStatus::Timeout);
    assert_eq!((timeout.code(), timeout.status()), (2, Some(NrtStatus::Timeout)));
    let unset = Step::failed(NrtStatus::Success);
    assert_eq!((unset.code(), unset.status()), (2, Some(NrtStatus::Failure)), "failed but error not set");
}
