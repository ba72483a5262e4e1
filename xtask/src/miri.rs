//! `cargo xtask miri`: core's unit tests under Miri, spread over the machine's cores.
//!
//! Miri interprets one thread at a time, so the stage builds the tests once,
//! lists them, splits the list into [`jobs`] shares of about equal Miri time
//! and runs each share as one `cargo miri test -- --exact <names>` process, all
//! at once. One process per share, not a queue: each Miri process pays 10 to
//! 15 s to load the crate. Shares are balanced by the times the last run
//! measured, kept in [`TIMES_DOC`], else by [`WEIGHTS`], else
//! [`DEFAULT_WEIGHT_MS`].
//!
//! The stage fails when a share fails, and unless every listed test is
//! reported exactly once, by name.

use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::{works, Runner};

/// Miri time of the tests that take 3 s or more, in milliseconds, as measured
/// with `--report-time`; only the ratios matter. A missing name only balances
/// the shares less well.
const WEIGHTS: &[(&str, u32)] = &[
    ("exec::group::tests::due_first_passes_give_exactly_the_statuses_of_separate_sync_drivers", 9000),
    ("exec::group::tests::a_group_gives_exactly_the_statuses_of_separate_sync_drivers", 10000),
    ("exec::group::tests::batched_heads_change_no_outcome", 83001),
    ("exec::proofs::tests::progress_one_step_returns_0_1_2_and_done_is_terminal_tests", 71224),
    ("status::proofs::tests::worst_is_a_total_preorder_by_the_table_tests", 60000),
    ("exec::tests::props::arbitrary_entry_streams", 57862),
    ("dma::tests::end_to_end", 51353),
    ("exec::proofs::tests::matcher_never_regresses_and_probes_out_of_order_tests", 39926),
    ("dma::proofs::tests::reserve_stays_in_ring_and_wraps_exactly_tests", 37771),
    ("exec::group::tests::batched_heads_keep_the_ring_protocol_over_many_laps", 32210),
    ("dma::queue::tests::reserve_and_set_stay_in_the_ring", 32191),
    ("exec::proofs::step::tests::step_from_wait_barrier_two_cores_keeps_the_contract_tests", 26534),
    ("exec::proofs::step::tests::step_from_wait_barrier_one_core_keeps_the_contract_tests", 25749),
    ("dma::vring::tests::relocation_matches_the_reference", 24790),
    ("nq::ring::proofs::tests::ring_cursor_stays_in_ring_once_per_lap_tests", 24033),
    ("dma::proofs::tests::doorbell_offsets_never_overflow_tests", 24000),
    ("exec::group::tests::a_group_over_a_slice_or_a_borrowed_lanes_ends_requests_as_alone", 23550),
    ("dma::proofs::tests::relocation_changes_exactly_the_window_tests", 21813),
    ("dma::proofs::tests::set_writes_exactly_the_reserved_slots_tests", 20627),
    ("exec::proofs::tests::dev_to_cpu_is_monotone_and_exact_tests", 20478),
    ("dma::queue::tests::in_flight_matches_a_free_running_model", 18892),
    ("exec::proofs::parts::tests::postprocess_core_keeps_its_frame_tests", 18392),
    ("dma::handle::tests::emulation_scales_the_budget_and_idx_0_times_out_at_once", 17579),
    ("exec::proofs::step::tests::step_from_wait_core_any_cores_keeps_the_contract", 16931),
    ("dma::handle::tests::timeout_after_handle_idx_times_0x190_polls", 15331),
    ("exec::proofs::parts::tests::consume_error_block_keeps_its_frame_tests", 13435),
    ("exec::proofs::step::tests::step_from_wait_barrier_any_cores_keeps_the_contract", 13104),
    ("exec::group::tests::a_faulted_request_hands_its_rings_back_at_completion", 12958),
    ("exec::group::tests::the_sweep_bound_holds_for_a_lane_due_far_ahead", 12771),
    ("nq::ring::proofs::tests::producer_and_consumer_agree_tests", 12480),
    ("exec::proofs::step::tests::step_from_done_keeps_the_contract_tests", 11968),
    ("exec::proofs::step::tests::step_from_init_keeps_the_contract_tests", 10758),
    ("nq::proofs::tests::error_decoder_is_total_tests", 10431),
    ("dma::pring::tests::lowering_never_panics", 9952),
    ("exec::proofs::step::tests::step_from_wait_core_two_cores_keeps_the_contract_tests", 9884),
    ("nq::proofs::tests::entry_decoder_is_total_tests", 9522),
    ("exec::proofs::parts::tests::consume_engine_0_keeps_its_frame_tests", 9487),
    ("exec::proofs::group::tests::group_ends_each_request_as_alone_tests", 9182),
    ("exec::proofs::parts::tests::finalize_keeps_its_contract_tests", 9034),
    ("dge::proofs::tests::dge_guards_admit_exactly_nx_pool_tests", 8790),
    ("exec::proofs::step::tests::step_from_wait_core_one_core_keeps_the_contract_tests", 8718),
    ("exec::proofs::group::tests::group_reuses_a_slot_only_after_its_request_is_done_tests", 8148),
    ("exec::proofs::tests::rescale_ns_contract_tests", 7767),
    ("exec::proofs::group::tests::group_missing_lane_fails_the_request_tests", 6314),
    ("exec::proofs::tests::timeout_ms_never_overflows_tests", 6169),
    ("exec::group::tests::a_lane_learns_from_its_done_requests_and_keeps_its_estimate_across_slots", 5966),
    ("exec::group::tests::batched_heads_are_written_once_per_ring_per_inference", 5483),
    ("exec::group::tests::slots_are_reused_and_lanes_refuse_a_second_request", 5425),
    ("dma::bd::proofs::tests::bd_fields_are_exact_tests", 5326),
    ("exec::proofs::tests::intc_cause_decoder_is_exact_tests", 4861),
    ("nq::ring::proofs::tests::producer_new_accepts_exactly_the_consumer_sizes_tests", 4850),
    ("nq::ring::proofs::tests::phase_flips_once_per_lap_and_head_is_an_offset_tests", 4829),
    ("exec::tests::errors::error_classes_map_to_the_seed_statuses", 4001),
    ("exec::tests::wait::sync_driver_ends_at_the_timeout_on_a_hang", 3683),
    ("dma::tests::every_error_message_names_what_and_why", 3683),
    ("nq::ring::proofs::tests::producer_push_contract_tests", 3259),
    ("exec::proofs::group::tests::write_back_heads_hands_back_exactly_the_reads_tests", 3085),
];

/// The weight of a test [`WEIGHTS`] does not name, milliseconds.
const DEFAULT_WEIGHT_MS: u32 = 500;

/// Environment variable naming the number of Miri processes.
const JOBS_VAR: &str = "NRT_MIRI_JOBS";

/// At most this many processes by default: each Miri process holds the whole
/// interpreted heap, a few hundred MiB.
const MAX_DEFAULT_JOBS: usize = 4;

/// The backstop of one Miri share, seconds: past it the share's process group
/// is killed and the share fails, so a hung test cannot hold CI to its limit.
/// Several times the slowest share measured under load, in `docs/miri.md`.
const SHARE_BACKSTOP_S: u64 = 2400;

/// `rustup run nightly <program>`.
fn nightly(program: &str) -> Command {
    let mut c = Command::new("rustup");
    c.args(["run", "nightly", program]);
    c.env_remove("RUSTUP_TOOLCHAIN").env_remove("RUSTFLAGS").env_remove("CARGO");
    c
}

/// `cargo +nightly miri test -p nrt-core --lib` with the stage's environment.
/// proptest reads the working directory for its failure files, so isolation is
/// off; the tests touch no other host state. Under `cfg!(miri)` every proptest
/// runs 4 cases and the exhaustive proofs a sample. The copies of one check
/// over the other engines are left to the native run: the parts proofs' tests
/// of engines 1-4 and of the whole core sweep, safe code whose engine-0 copy
/// Miri still interprets. Miri prints them as ignored.
fn miri_test() -> Command {
    let flags = std::env::var("MIRIFLAGS")
        .map(|f| format!("{f} -Zmiri-disable-isolation"))
        .unwrap_or_else(|_| "-Zmiri-disable-isolation".into());
    let mut c = nightly("cargo");
    c.args(["miri", "test", "-p", "nrt-core", "--lib"])
        .env("MIRIFLAGS", flags)
        .env("PROPTEST_DISABLE_FAILURE_PERSISTENCE", "1")
        .stdin(Stdio::null());
    c
}

/// The number of worker processes: `NRT_MIRI_JOBS` when it is a positive
/// number, else the machine's available parallelism, at most
/// [`MAX_DEFAULT_JOBS`]. A bad value is refused: the stage fails naming it.
fn jobs() -> Result<usize, String> {
    jobs_from(std::env::var_os(JOBS_VAR).map(|v| v.to_string_lossy().into_owned()).as_deref())
}

/// [`jobs`] for the variable's value, `None` when unset.
fn jobs_from(value: Option<&str>) -> Result<usize, String> {
    match value {
        Some(v) => match v.trim().parse::<usize>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(format!("{JOBS_VAR}={v:?}: expected a positive number of worker processes")),
        },
        None => Ok(std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, MAX_DEFAULT_JOBS)),
    }
}

/// The test names of libtest's `--list --format terse` output, its `name: test`
/// lines; benches and anything else are not tests.
fn parse_list(text: &str) -> Vec<String> {
    text.lines().filter_map(|l| l.strip_suffix(": test")).map(str::to_string).collect()
}

/// The counts of one libtest run: passed, failed, ignored, summed over every
/// `test result:` line, one per test binary.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Counts {
    passed: usize,
    failed: usize,
    ignored: usize,
    results: usize,
}

fn parse_counts(text: &str) -> Counts {
    let mut c = Counts::default();
    for line in text.lines() {
        let Some(rest) = line.trim().strip_prefix("test result: ") else { continue };
        c.results += 1;
        for part in rest.split(';') {
            let words: Vec<&str> = part.split_whitespace().collect();
            // "ok. 12 passed", " 0 failed", " 1 ignored", ...
            let (Some(n), Some(what)) = (words.iter().rev().nth(1), words.last()) else { continue };
            let Ok(n) = n.parse::<usize>() else { continue };
            match *what {
                "passed" => c.passed += n,
                "failed" => c.failed += n,
                "ignored" => c.ignored += n,
                _ => {}
            }
        }
    }
    c
}

/// The generated file of the last run's Miri time per test, written by the
/// stage and read back to balance the next run's shares.
const TIMES_DOC: &str = "docs/miri.md";

/// The weight of `name`: its time in `measured`, the last run's, else in
/// [`WEIGHTS`], else [`DEFAULT_WEIGHT_MS`].
fn weight_of(measured: &[(String, u32)], name: &str) -> u32 {
    measured
        .iter()
        .find(|(n, _)| n == name)
        .map(|&(_, w)| w)
        .or_else(|| WEIGHTS.iter().find(|(n, _)| *n == name).map(|&(_, w)| w))
        .unwrap_or(DEFAULT_WEIGHT_MS)
}

/// The times of a libtest run with `--report-time`, from its
/// `test <name> ... ok <1.234s>` lines, milliseconds; a test without a time is left out.
fn reported_times(text: &str) -> Vec<(String, u32)> {
    text.lines()
        .filter_map(|l| {
            let (name, rest) = l.strip_prefix("test ")?.split_once(" ... ")?;
            let t = rest.rsplit_once('<')?.1.strip_suffix("s>")?;
            let secs: f64 = t.parse().ok()?;
            Some((listed_name(name).to_string(), (secs * 1000.0).round().min(f64::from(u32::MAX)) as u32))
        })
        .collect()
}

/// The per-test times of [`TIMES_DOC`]'s table, from its `| name | ms | share |` rows.
fn times_from_doc(text: &str) -> Vec<(String, u32)> {
    text.lines()
        .filter_map(|l| {
            let mut cells = l.strip_prefix("| `")?.split(" | ");
            let name = cells.next()?.strip_suffix('`')?;
            let ms = cells.next()?.trim().parse().ok()?;
            Some((name.to_string(), ms))
        })
        .collect()
}

/// [`TIMES_DOC`]'s text: every timed test, slowest first, with its share; each
/// share's sum; the date and the load, for the reader and the next split.
fn times_doc(times: &[(String, u32, usize)], share_secs: &[f64], load: (&str, &str), date: &str) -> String {
    let mut rows = times.to_vec();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut s = String::from("# Miri times of nrt-core's unit tests\n\n");
    s.push_str(
        "Generated by `cargo xtask miri` (do not edit by hand): each test's time under Miri, as\n\
         libtest's `--report-time` gave it in the last run, in milliseconds. The next run reads\n\
         this table back to split the tests into shares of about equal time (`xtask/src/miri.rs`);\n\
         only the ratios matter, so a loaded run still balances.\n\n",
    );
    let shares: Vec<String> = share_secs.iter().enumerate().map(|(k, t)| format!("share {} {t:.0} s", k + 1)).collect();
    s.push_str(&format!(
        "Last run: {date}, {} tests timed; {}; load average (1, 5, 15 min) {} at the start, {} at the end.\n\n",
        rows.len(),
        shares.join(", "),
        load.0,
        load.1
    ));
    s.push_str("| test | ms | share |\n|---|---|---|\n");
    for (name, ms, share) in &rows {
        s.push_str(&format!("| `{name}` | {ms} | {} |\n", share + 1));
    }
    s
}

/// `names` split into `jobs` shares of about equal weight: longest first, each
/// onto the lightest share so far, ties in list order so the split is the same
/// on every run. No share is empty unless there are fewer tests than jobs.
fn shares(names: &[String], jobs: usize, measured: &[(String, u32)]) -> Vec<Vec<String>> {
    let jobs = jobs.max(1).min(names.len().max(1));
    let mut order: Vec<(u32, usize)> = names.iter().enumerate().map(|(i, n)| (weight_of(measured, n), i)).collect();
    order.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut out: Vec<(u64, Vec<String>)> = vec![(0, Vec::new()); jobs];
    for (w, i) in order {
        let lightest = (0..jobs).min_by_key(|&k| (out[k].0, k)).unwrap_or(0);
        out[lightest].0 += u64::from(w);
        out[lightest].1.push(names[i].clone());
    }
    out.into_iter().map(|(_, v)| v).filter(|v| !v.is_empty()).collect()
}

/// The names of the tests a libtest run reported in its
/// `test <name> ... <result>` lines, whatever the result.
fn reported_names(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("test ")?.split_once(" ... ").map(|(name, _)| listed_name(name).to_string()))
        .collect()
}

/// The name a result line gives, as `--list` gives it: libtest reports a
/// `#[should_panic]` test as `<name> - should panic`.
fn listed_name(reported: &str) -> &str {
    reported.strip_suffix(" - should panic").unwrap_or(reported)
}

/// Whether the shares reported every listed test exactly once: the names
/// missing and the names reported more than once or never listed otherwise.
fn accounts_for(listed: &[String], reported: &[String]) -> Result<(), String> {
    let (mut want, mut got) = (listed.to_vec(), reported.to_vec());
    want.sort();
    got.sort();
    if want == got {
        return Ok(());
    }
    let missing: Vec<&String> = want.iter().filter(|n| got.binary_search(n).is_err()).collect();
    let mut extra: Vec<&String> = Vec::new();
    for (i, n) in got.iter().enumerate() {
        if (i > 0 && got[i - 1] == *n) || want.binary_search(n).is_err() {
            extra.push(n);
        }
    }
    Err(format!(
        "the shares reported {} tests of the {} listed: never reported {missing:?}; reported twice or not listed {extra:?}",
        got.len(),
        want.len()
    ))
}

/// Core's tests under Miri: nightly with the `miri` component, installed when missing.
pub fn miri(run: &mut Runner) {
    if !works(nightly("cargo").arg("--version")) {
        run.skip("miri", "no nightly toolchain (`rustup toolchain install nightly` failed or is not possible here)");
        return;
    }
    if !works(nightly("cargo").args(["miri", "--version"])) {
        println!("\n==> rustup component add --toolchain nightly miri rust-src");
        let added =
            works(Command::new("rustup").args(["component", "add", "--toolchain", "nightly", "miri", "rust-src"]));
        if !added {
            run.skip("miri", "the nightly `miri` component is not installed and `rustup component add` failed");
            return;
        }
    }
    if !run.cmd("miri setup", nightly("cargo").args(["miri", "setup"])) {
        return;
    }
    if !run.cmd("miri build -p nrt-core --lib", miri_test().arg("--no-run")) {
        return;
    }
    let name = "miri test -p nrt-core --lib";
    let jobs = match jobs() {
        Ok(j) => j,
        Err(e) => {
            println!("\n!!! {name}: {e}");
            run.record(name, 0.0, false);
            return;
        }
    };
    let (listed_ok, list) = run.cmd_capture("miri list", miri_test().args(["--", "--list", "--format", "terse"]));
    if !listed_ok {
        println!("{list}");
        return;
    }
    let names = parse_list(&list);
    if names.is_empty() {
        println!("\n!!! {name}: `--list` named no test:\n{list}");
        run.record(name, 0.0, false);
        return;
    }
    let listed = names.len();
    let measured = std::fs::read_to_string(TIMES_DOC).map(|t| times_from_doc(&t)).unwrap_or_default();
    let shares = shares(&names, jobs, &measured);
    let load_before = crate::load_average();
    println!("\n==> {name}: {listed} tests in {} Miri processes at once ({JOBS_VAR} sets the number)", shares.len());
    let t = Instant::now();
    let total = Mutex::new(Counts::default());
    let reported = Mutex::new(Vec::<String>::new());
    let timed = Mutex::new(Vec::<(String, u32, usize)>::new());
    let share_secs = Mutex::new(vec![0.0f64; shares.len()]);
    let failed_shares = Mutex::new(0usize);
    std::thread::scope(|s| {
        let count = shares.len();
        for (k, share) in shares.iter().enumerate() {
            let (total, reported, failed_shares) = (&total, &reported, &failed_shares);
            let (timed, share_secs) = (&timed, &share_secs);
            s.spawn(move || {
                let started = Instant::now();
                let mut cmd = miri_test();
                cmd.args(["--", "--exact", "-Z", "unstable-options", "--report-time"]).args(share);
                let (out, killed) = crate::output_capped(&mut cmd, Duration::from_secs(SHARE_BACKSTOP_S));
                let secs = started.elapsed().as_secs_f64();
                let (ok, mut text) = crate::exit_and_text(out);
                if killed {
                    text.push_str(&format!(
                        "\nkilled: miri share {} outlasted its backstop of {SHARE_BACKSTOP_S} s (a hung test?)\n",
                        k + 1
                    ));
                }
                let ok = ok && !killed;
                let c = parse_counts(&text);
                reported.lock().unwrap_or_else(|p| p.into_inner()).extend(reported_names(&text));
                timed
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .extend(reported_times(&text).into_iter().map(|(n, ms)| (n, ms, k)));
                if let Some(t) = share_secs.lock().unwrap_or_else(|p| p.into_inner()).get_mut(k) {
                    *t = secs;
                }
                {
                    let mut t = total.lock().unwrap_or_else(|p| p.into_inner());
                    t.passed += c.passed;
                    t.failed += c.failed;
                    t.ignored += c.ignored;
                }
                let good = ok && c.failed == 0 && c.results > 0;
                if !good {
                    *failed_shares.lock().unwrap_or_else(|p| p.into_inner()) += 1;
                }
                // One share's whole output at a time, as one `cargo miri test` prints it.
                let mut block = format!(
                    "\n--- miri share {} of {} ({} tests): {} in {secs:.1} s: {} passed, {} failed, {} ignored\n",
                    k + 1,
                    count,
                    share.len(),
                    if good { "ok" } else { "FAILED" },
                    c.passed,
                    c.failed,
                    c.ignored
                );
                for line in text.lines().filter(|l| l.starts_with("test ") || !good) {
                    block.push_str("    ");
                    block.push_str(line);
                    block.push('\n');
                }
                print!("{block}");
            });
        }
    });
    let secs = t.elapsed().as_secs_f64();
    let total = total.into_inner().unwrap_or_else(|p| p.into_inner());
    let failed_shares = failed_shares.into_inner().unwrap_or_else(|p| p.into_inner());
    let mut ok = failed_shares == 0;
    let reported = reported.into_inner().unwrap_or_else(|p| p.into_inner());
    if let Err(e) = accounts_for(&names, &reported) {
        println!("!!! {name}: {e}");
        ok = false;
    }
    let timed = timed.into_inner().unwrap_or_else(|p| p.into_inner());
    let share_secs = share_secs.into_inner().unwrap_or_else(|p| p.into_inner());
    if ok && !timed.is_empty() {
        let doc = times_doc(&timed, &share_secs, (&load_before, &crate::load_average()), &crate::today());
        if let Err(e) = std::fs::write(TIMES_DOC, doc) {
            println!("    could not write {TIMES_DOC}: {e}");
        }
        let mut slow = timed.clone();
        slow.sort_by_key(|t| std::cmp::Reverse(t.1));
        println!("    the slowest under Miri (all in {TIMES_DOC}):");
        for (n, ms, k) in slow.iter().take(8) {
            println!("    {:>8.1} s  share {}  {n}", f64::from(*ms) / 1000.0, k + 1);
        }
    }
    println!(
        "    miri: {} passed, {} failed, {} ignored of {listed} listed, in {} processes at once",
        total.passed,
        total.failed,
        total.ignored,
        shares.len()
    );
    println!("<== {name}: {} in {secs:.1} s", if ok { "ok" } else { "FAILED" });
    run.record(name, secs, ok);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_keeps_tests_only() {
        let text = "a::b: test\nc::d: test\nbench_x: bench\n\n3 tests, 1 benchmark\n";
        assert_eq!(parse_list(text), ["a::b", "c::d"]);
    }

    #[test]
    fn counts_sum_every_result_line() {
        let text = "test a ... ok\n\ntest result: ok. 12 passed; 0 failed; 2 ignored; 0 measured; 218 filtered out; finished in 30.1s\n\
                    test result: FAILED. 3 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 1s\n";
        assert_eq!(parse_counts(text), Counts { passed: 15, failed: 1, ignored: 2, results: 2 });
        assert_eq!(parse_counts("error: could not compile"), Counts::default());
    }

    #[test]
    fn shares_hold_every_test_once_and_balance_the_weights() {
        let mut names: Vec<String> = (0..40).map(|i| format!("t{i}")).collect();
        for (n, _) in WEIGHTS {
            names.push(n.to_string());
        }
        let total: u64 = names.iter().map(|n| u64::from(weight_of(&[], n))).sum();
        let heaviest = names.iter().map(|n| u64::from(weight_of(&[], n))).max().unwrap_or(0);
        for jobs in 1..=4 {
            let sh = shares(&names, jobs, &[]);
            assert_eq!(sh.len(), jobs);
            let mut all: Vec<String> = sh.iter().flatten().cloned().collect();
            all.sort();
            let mut want = names.clone();
            want.sort();
            assert_eq!(all, want, "{jobs} shares: every test exactly once");
            // Greedy onto the lightest share: no share exceeds an even split by
            // more than the heaviest single test.
            for s in &sh {
                let w: u64 = s.iter().map(|n| u64::from(weight_of(&[], n))).sum();
                assert!(w <= total / jobs as u64 + heaviest, "{jobs} shares: a share of {w} ms of {total}");
            }
        }
        assert_eq!(shares(&names[..1], 4, &[]).len(), 1, "no empty share");
        assert!(shares(&[], 2, &[]).is_empty());
    }

    #[test]
    fn named_weights_count_and_others_take_the_default() {
        assert_eq!(weight_of(&[], "no::such::test"), DEFAULT_WEIGHT_MS);
        for (n, w) in WEIGHTS {
            assert_eq!(weight_of(&[], n), *w);
        }
        let two = ["a".to_string(), "b".to_string(), "c".to_string()];
        let sh = shares(&two, 2, &[]);
        assert_eq!(sh, vec![vec!["a".to_string(), "c".to_string()], vec!["b".to_string()]]);
    }

    #[test]
    fn the_last_runs_times_come_first_and_balance_the_next_split() {
        let measured = vec![("a".to_string(), 10), ("c".to_string(), 9000)];
        assert_eq!(weight_of(&measured, "c"), 9000, "a measured time beats the table and the default");
        assert_eq!(weight_of(&measured, "zz"), DEFAULT_WEIGHT_MS);
        let (n, w) = WEIGHTS[0];
        assert_eq!(weight_of(&measured, n), w, "the table where nothing was measured");
        let abc = ["a".to_string(), "b".to_string(), "c".to_string()];
        // c alone at 9000 ms against a at 10 and b at the default 500.
        assert_eq!(shares(&abc, 2, &measured), vec![vec!["c".to_string()], vec!["b".to_string(), "a".to_string()]]);
    }

    #[test]
    fn report_times_round_trip_through_the_generated_table() {
        let out = "test x::a ... ok <12.345s>\ntest x::b ... ignored, safe code\ntest x::c ... ok <0.002s>\n\
                   test x::d ... FAILED <1.5s>\ntest result: ok. 2 passed";
        let times = reported_times(out);
        assert_eq!(
            times,
            vec![("x::a".to_string(), 12345), ("x::c".to_string(), 2), ("x::d".to_string(), 1500)],
            "ms from every timed line; an ignored test has no time"
        );
        let timed: Vec<(String, u32, usize)> =
            times.into_iter().enumerate().map(|(k, (n, ms))| (n, ms, k % 2)).collect();
        let doc = times_doc(&timed, &[12.0, 1.5], ("1.0 1.0 1.0", "2.0 2.0 2.0"), "2026-12-01");
        assert!(doc.contains("share 1 12 s, share 2 2 s") && doc.contains("2026-12-01"), "{doc}");
        let mut back = times_from_doc(&doc);
        assert_eq!(back.first(), Some(&("x::a".to_string(), 12345)), "slowest first: {doc}");
        back.sort();
        let mut want: Vec<(String, u32)> = timed.iter().map(|(n, ms, _)| (n.clone(), *ms)).collect();
        want.sort();
        assert_eq!(back, want, "the table reads back exactly what was written");
        assert!(times_from_doc("| test | ms | share |\n|---|---|---|\n| `bad` | x | 1 |").is_empty());
    }

    #[test]
    fn every_listed_test_must_be_reported_exactly_once() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let listed = names(&["a::x", "a::y", "b::z"]);
        let out = "test b::z ... ok\ntest a::x ... ignored, safe code\ntest a::y ... ok\n\ntest result: ok. 2 passed";
        assert_eq!(reported_names(out), names(&["b::z", "a::x", "a::y"]));
        assert!(accounts_for(&listed, &reported_names(out)).is_ok());
        let e = accounts_for(&listed, &names(&["a::x", "a::x", "b::z"])).unwrap_err();
        assert!(e.contains("never reported [\"a::y\"]") && e.contains("not listed [\"a::x\"]"), "{e}");
        let e = accounts_for(&listed, &names(&["a::x", "a::y", "b::z", "c::new"])).unwrap_err();
        assert!(e.contains("4 tests of the 3 listed") && e.contains("\"c::new\""), "{e}");
        // A #[should_panic] test is reported with a suffix its listing does not have.
        let out = "test a::x ... ok\ntest a::y - should panic ... ok <0.125s>\ntest b::z ... ok";
        assert_eq!(reported_names(out), names(&["a::x", "a::y", "b::z"]));
        assert!(accounts_for(&listed, &reported_names(out)).is_ok());
        assert_eq!(reported_times(out), vec![("a::y".to_string(), 125)]);
    }

    #[test]
    fn a_bad_job_count_is_refused_by_name() {
        for bad in ["zero", "0", "-1", ""] {
            let e = jobs_from(Some(bad)).unwrap_err();
            assert!(e.contains(JOBS_VAR) && e.contains(&format!("{bad:?}")), "{e}");
        }
        assert_eq!(jobs_from(Some(" 3 ")), Ok(3));
        assert!((1..=MAX_DEFAULT_JOBS).contains(&jobs_from(None).unwrap()));
    }
}
