//! `docs/kani.md`: the table of harnesses, bounds, verdicts and times.

use super::*;

/// How the layered proofs are linked, for `docs/kani.md`; kept beside the
/// generator so that the file stays generated whole.
pub(super) const COMPOSITION: &str = "\
## How the layers are linked: contracts and stubs

Function contracts (`#[kani::requires]`, `#[kani::ensures]`, `#[kani::modifies]`,
under `cfg_attr(kani, ..)`, `-Z function-contracts`), each proved by its
`proof_for_contract` harness, are on the leaves whose arguments are plain values:
`exec::finalize::rescale_ns` (used through `stub_verified` by the proof of
`postprocess_core`), and the NQ producer's `push` and `on_head_write`.

The step proofs' compositional split (`core/src/exec/proofs/parts.rs`: an
engine's batch, a core's sweep, FINALIZE's pieces, FINALIZE over the cores) keeps
hand-written `kani::stub`s, because kani's contracts cannot state those layers:

- every layer takes the device as `&mut D` for a generic `D: ExecDevice`, and
  `modifies` can name only the whole `*dev`, not a field of a generic type;
  `stub_verified` then havocs the whole proof device: its `RefCell` borrow flag (the
  next draw panics), its clock (\"never reads the clock\" is then unprovable) and
  its ring size (the in-ring read check fails);
- the frame predicates compare the whole request before and after: an `old()` copy
  of the whole request per call, carried through every layer above.

What ties each stub to its proof and to the real function instead: each stub is a
plain function, `*_stub_from`, compiled for the tests as for kani, that applies one
choice (a struct of every value the stub draws: new substates, timestamps, fatal
flags, statuses as codes, error classes as error records, timeout causes) and
returns `None` for a choice outside the layer's guarantee; the `kani::stub` draws
any choice, asserts the precondition its layer's proof assumed, and assumes the
choice allowed. Kani checks the stubs against the proved predicates: the proof of
each layer asserts the predicate its stub allows (`consume_engine_post`,
`consume_core_post`, `postprocess_core_post`, `finalize_post`), which
`consume_core_stub_from` and `finalize_stub_from` evaluate and the other stubs
satisfy by construction. `cargo test` checks the stubs against the real functions:
in each layer's property (`consume_engine_N_keeps_its_frame_tests`,
`consume_core_keeps_its_frame_tests`, `postprocess_core_keeps_its_frame_tests`,
`consume_error_block_keeps_its_frame_tests`, `finalize_keeps_its_contract_tests`),
the real function's outcome on each generated input is read back as a choice, and
the stub's own `*_stub_from`, run on a copy of the request before the call, must
allow it and give exactly the real request (every field) and the real return
(statuses, the error sweep's first error class, timeout causes included), so a
stub narrower than the real function (one that promises more than the function
keeps) fails a test; one `*_tie_rejects_what_the_stub_cannot_give` test per stub
shows the check failing.

The poll group (`exec/proofs/group.rs`) is generic over what it holds
(`exec::group::Harvest`, the one-step contract; `ExecRequest` by default) and never
looks inside a request, so its own properties are proved over a request of a few
words, `Scripted`, whose step reads its lane's clock and finishes when and how that
lane's device says: a slot is reused only after its request is done, capacity is
never exceeded and the refusals are exact, a request ends as the same request driven
alone (same steps, step code, status and final state), a missing lane fails its
request. The proofs cover every sequence of 3 operations (the fewest that reach
every cover; 4 took the solver twice as long and put the stage over its goal); the
same bodies run as `cargo test` tests, up to 11 operations, with the real
`ExecRequest` too.
The batched HEAD write-back a finishing `ExecRequest` makes (`write_back_heads`:
HEAD written once for exactly the rings with reads to hand back, a failed write kept
and reported) has its own harness.

## nrt-abi's harnesses

`abi/src/proofs.rs` proves nrt-abi's pure functions for every input: the `_IOC`
request encoding (each field decodes back; no two requests share a code), the
simulated device's INTC cause addresses (exact, inside the core's error-trigger
blocks, one register per line) and top-SP windows (the host trigger and the status
window clear of every DMA engine and semaphore page), and the driver's argument
rules in `abi/src/rules.rs`, which the driver model calls (`nrt-sim driver`,
`platform-sim/src/driver/model/dma.rs`): the H2T queues (initialised, past the
flush's engines, one per core), the NX rings (the driver's lists, written
independently) and `DMA_QUEUE_INIT`'s ring checks (DMAQ-11/12). Each harness was
checked to fail on a deliberate break of its function.

";

/// Which SAT solver, and why, measured rather than assumed, for `docs/kani.md`.
pub(super) const SOLVER: &str = "\
## The SAT solver

Every harness runs on CaDiCaL, kani's default. Measured against the other
solvers the bundled CBMC 6.6.0 offers, on one engine-batch harness
(`prove_consume_engine_0_keeps_its_frame`), one after the other in one session
on the same loaded 2-vCPU machine (load 2.4 to 5.7): CaDiCaL 618 s (user CPU of
the whole `cargo kani` run 558 s), MiniSat 964 s (760 s): MiniSat 1.4 to 1.6 times slower.
Kissat is not built into this CBMC (`cbmc --sat-solver kissat` answers
`unknown solver 'kissat'`, and `cargo kani --solver kissat` fails reading that
answer); an external Kissat binary (`--solver bin=kissat`) is not installed.

## Where a harness's time goes

Most of it went, until 2026-12-02, to one loop of the proofs' own request
generator (`exec::proofs::step::any_request`): `for core in
(0..MAX_CORES).filter(|c| *c < n)`. CBMC does not see the range inside
`filter`'s `find` as constant, so that loop, and every loop nested in it (the
five engines, the 13 timestamp slots), was unwound to the harness's limit of
14 instead of 2. Written as an index loop with the guard inside, on
`prove_consume_engine_0_keeps_its_frame` for core 0 alone (CBMC's own counts,
`--output-format regular`, the same loaded machine, load 4 to 7): 413,004
symbolic-execution steps, 1.58 million variables and 4.28 million clauses before;
176,984 steps, 359 thousand variables and 436 thousand clauses after; 423 s of
verification before, 36 s after. The harness loops of the proofs are index
loops over constant bounds for this reason (a slice iterator or an adaptor such
as `any`, `all` or `filter` is bounded only by the unwind limit). The whole
stage went from 1,884 s to 557 s, both on a quiet machine (the fresh-clone CI
runs at 7ff6cb4 and c406e10).

The covers are not the cost: on the same harness before that change, its five
covers replaced by one (their outcomes shown instead by concrete inputs) took
400 s of verification against 338 s, because its last call, with none of the
clauses the cover searches had learnt, took 197 s instead of 18 s. So the
covers stay where they are, in each harness.

";

/// `docs/kani.md`: every harness with its bounds, verdict, time and goal.
pub(super) fn write_table(
    root: &Path,
    hs: &[Harness],
    results: &[Option<(Verdict, String)>],
    total: f64,
    version: &str,
    default_goal: u64,
    load: &(String, String),
) {
    let mut s = String::new();
    s.push_str("# Kani harnesses of nrt-core and nrt-abi\n\n");
    s.push_str(&format!(
        "Generated by `cargo xtask kani` (do not edit by hand): every `#[kani::proof]` and\n\
         `#[kani::proof_for_contract]` harness of nrt-core (`core/src`) and nrt-abi (`abi/src`),\n\
         verified by one `cargo kani -p nrt-core -p nrt-abi -j 2` run; the time\n\
         is kani's verification time of the harness (CBMC, two harnesses at once).\n\
         A harness is VERIFIED when every property holds and every `kani::cover!` is satisfied\n\
         (none unreachable); it FAILS on a failed property, an unsatisfied cover or no cover at\n\
         all; one kani stops at its `--harness-timeout` of {HARNESS_TIMEOUT_S} s (a backstop, several\n\
         times the slowest harness measured) is UNFINISHED: no verdict, reported, not failed. The time is a measurement: a verified harness\n\
         over its goal is marked OVER GOAL below, and the stage still passes. Why each\n\
         unwind bound covers every case is written beside the harness in the code.\n\n",
    ));
    let exceptions = if SLOW_HARNESSES.is_empty() {
        ""
    } else {
        " but where the table says otherwise (`SLOW_HARNESSES` in `xtask/src/proofs/mod.rs` says why)"
    };
    let over: Vec<String> = hs
        .iter()
        .zip(results)
        .filter_map(|(h, r)| r.as_ref().and_then(|(v, _)| over_goal_note(v)).map(|n| format!("`{}` {n}", h.path)))
        .collect();
    let stage = stage_goal_note(total).map(|n| format!(" **{n}.**")).unwrap_or_default();
    s.push_str(&format!(
        "Last run: {}, {version}, {} harnesses, {total:.0} s in all (2 at a time; stage goal {STAGE_GOAL_S} s, \
         backstop {STAGE_BACKSTOP_S} s).{stage} Load average (1, 5, 15 min) {} at the start, {} at the end. \
         Goal {default_goal} s each{exceptions}.\n\n",
        crate::today(),
        hs.len(),
        load.0,
        load.1,
    ));
    if over.is_empty() {
        s.push_str("Every verified harness finished within its goal.\n\n");
    } else {
        s.push_str(&format!("**{} verified harness(es) over their goal** (reported, not failed):\n\n", over.len()));
        for o in &over {
            s.push_str(&format!("- {o}\n"));
        }
        s.push('\n');
    }
    let (sum, busy) = busy_share(results, total);
    s.push_str(&format!(
        "The harnesses' times add up to {sum:.0} s: over the {total:.0} s of the run with {KANI_JOBS} at a time, \
         kani's threads were verifying for {busy:.0} % of it (the rest: linking and instrumenting each \
         harness before CBMC, and a thread idle at the end). The column \"done at\" is when each result \
         came, on the run's clock.\n\n"
    ));
    s.push_str(COMPOSITION);
    s.push_str(SOLVER);
    s.push_str("## Every harness\n\n");
    s.push_str(
        "| harness | file | unwind | contracts and stubs | result | checks | covers | time (s) | done at (s) | goal (s) |\n",
    );
    s.push_str("|---|---|---|---|---|---|---|---|---|---|\n");
    for (h, r) in hs.iter().zip(results) {
        let (res, checks, covers, secs, at) = match r {
            Some((v, _)) => (
                if !v.ok {
                    format!("FAILED: {}", v.why)
                } else if v.over_goal.is_some() {
                    "VERIFIED, **OVER GOAL**".to_string()
                } else {
                    "VERIFIED".to_string()
                },
                v.checks.clone(),
                v.covers.map(|(a, b)| format!("{a} of {b}")).unwrap_or_else(|| "-".into()),
                format!("{:.1}", v.secs),
                format!("{:.0}", v.finished_s),
            ),
            None => ("FAILED: no result".into(), String::new(), "-".into(), "-".into(), "-".into()),
        };
        s.push_str(&format!(
            "| `{}` | `{}` | {} | {} | {res} | {checks} | {covers} | {secs} | {at} | {} |\n",
            h.path,
            h.file.display(),
            h.unwind.map(|u| u.to_string()).unwrap_or_else(|| "none".into()),
            if h.notes.is_empty() { "-".to_string() } else { h.notes.join("; ") },
            goal_of(&h.path, default_goal),
        ));
    }
    let path = root.join("docs/kani.md");
    if let Err(e) = fs::write(&path, s) {
        println!("    could not write {}: {e}", path.display());
    }
}

/// The harnesses' verification times added up, seconds, and the share of the
/// run's `KANI_JOBS` threads they kept busy, percent; 0 for a run of no time.
pub(super) fn busy_share(results: &[Outcome], total: f64) -> (f64, f64) {
    let sum: f64 = results.iter().flatten().map(|(v, _)| v.secs).sum();
    let capacity = total * KANI_JOBS as f64;
    (sum, if capacity > 0.0 { 100.0 * sum / capacity } else { 0.0 })
}
