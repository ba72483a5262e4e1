//! Arbitrary device input against the one-step contract.

use super::*;
use crate::nq::{ERROR_NQ, INFER_STATUS_NQS};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    /// The device writes these bytes into a core's ring: 0 the error ring, then the engines'.
    Write(u8, u8, [u8; 16]),
    /// The device writes a well-formed record.
    Rec(u8, u8, u16),
    Step,
    AdvanceMs(u16),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u8..MAX_CORES as u8, 0u8..=ENGINES_PER_CORE as u8, any::<[u8; 16]>())
            .prop_map(|(c, q, b)| Op::Write(c, q, b)),
        (
            0u8..MAX_CORES as u8,
            0u8..ENGINES_PER_CORE as u8,
            prop_oneof![Just(2u16), Just(3), Just(6), Just(7), Just(8), any::<u16>()]
        )
            .prop_map(|(c, e, s)| Op::Rec(c, e, s)),
        Just(Op::Step),
        (0u16..3000).prop_map(Op::AdvanceMs),
    ]
}

type Done = Option<Step>;

/// One step with the invariants checked.
fn check(
    req: &mut ExecRequest,
    dev: &mut FakeDevice,
    nq: &mut Notifications,
    done: &mut Done,
    prev: &mut [[TpbEngState; ENGINES_PER_CORE]; MAX_CORES],
) -> Result<(), TestCaseError> {
    let was = req.state();
    let s = req.progress_one_step(dev, nq);
    prop_assert!(matches!(s.code(), 0..=2));
    if let Some(d) = done {
        prop_assert_eq!(s, *d);
    }
    if let Some(out) = s.status() {
        prop_assert_eq!(req.state(), ExecState::Done);
        prop_assert!(matches!(s, Step::Done(_)) || !out.is_success());
        *done = Some(s);
    }
    if was == ExecState::WaitCore || req.state() == ExecState::WaitCore {
        for (c, row) in prev.iter_mut().enumerate() {
            for (e, p) in row.iter_mut().enumerate() {
                let now = req.substate(c, e).unwrap();
                if was == ExecState::WaitCore {
                    prop_assert!(now >= *p, "substate regressed");
                }
                *p = now;
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 4 } else { 256 }))]

    /// Arbitrary device input: no panic, 0/1/2 only, substates never regress,
    /// DONE is terminal, and the request ends by the timeout at the latest.
    #[test]
    fn arbitrary_entry_streams(cores in 1u8..=2, timeout_s in 0u32..4, ring_pow in 1u32..6,
                               ops in proptest::collection::vec(op(), 0..if cfg!(miri) { 40 } else { 120 })) {
        let ring = 16u32 << ring_pow;
        let mut dev = Box::new(FakeDevice::new(Arch::Cayman, ring));
        let mut nq = FakeDevice::notifications(ring);
        let mut req = ExecRequest::new(ExecConfig::new(Arch::Cayman, cores, timeout_s));
        let mut done: Done = None;
        let mut prev = [[TpbEngState::StartPending; ENGINES_PER_CORE]; MAX_CORES];
        for op in ops {
            match op {
                Op::Write(c, q, b) => { let nq_id = q.checked_sub(1).map_or(ERROR_NQ, |e| INFER_STATUS_NQS[usize::from(e)]); dev.push_raw(c, nq_id, b); }
                Op::Rec(c, e, s) => { dev.record(c, e as usize, s, 1); }
                Op::Step => check(&mut req, &mut dev, &mut nq, &mut done, &mut prev)?,
                Op::AdvanceMs(ms) => dev.advance_ms(u64::from(ms)),
            }
        }
        // Two steps reach WAIT_CORE; past the budget the next sweep ends it.
        for _ in 0..3 { check(&mut req, &mut dev, &mut nq, &mut done, &mut prev)?; }
        dev.advance_ms(u64::from(timeout_s) * 1000 + 1);
        check(&mut req, &mut dev, &mut nq, &mut done, &mut prev)?;
        prop_assert!(done.is_some(), "not done after the timeout");
    }
}
