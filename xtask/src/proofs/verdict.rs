//! Running `cargo kani` with its output streamed, and reading each
//! harness's verdict and time from it.

use super::*;

/// What one harness's verification said.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct Verdict {
    /// Verified: every property held, every cover satisfied, kani finished it.
    pub(super) ok: bool,
    /// kani stopped it at its `--harness-timeout`, the backstop.
    pub(super) timed_out: bool,
    pub(super) secs: f64,
    /// When its result came, seconds after `cargo kani` started, on the stage's
    /// clock: with [`Verdict::secs`] this places each harness in the schedule.
    pub(super) finished_s: f64,
    pub(super) checks: String,
    pub(super) covers: Option<(u32, u32)>,
    /// The goal it finished over, seconds, when it did; reported, not failed.
    pub(super) over_goal: Option<u64>,
    /// Why it failed, when it did.
    pub(super) why: String,
}

/// One harness's verdict and its output, once it has run.
pub(super) type Outcome = Option<(Verdict, String)>;

/// The verdict of one harness's result block: verified exactly when kani says
/// `VERIFICATION:- SUCCESSFUL`, it has at least one cover and every cover is
/// satisfied, and kani did not stop it at its timeout. The time is read from the
/// block and judged against `goal` only for the report, [`Verdict::over_goal`].
pub(super) fn verdict_of(text: &str, goal: u64) -> Verdict {
    let mut v = Verdict::default();
    let mut successful = false;
    let mut failed = false;
    for line in text.lines() {
        let l = line.trim();
        if l.starts_with("VERIFICATION:- SUCCESSFUL") {
            successful = true;
        }
        if l.starts_with("VERIFICATION:- FAILED") {
            failed = true;
        }
        if let Some(t) = l.strip_prefix("Verification Time:") {
            v.secs = t.trim().trim_end_matches('s').parse().unwrap_or(0.0);
        }
        if let Some(rest) = l.strip_prefix("** ") {
            if let Some(covers) = rest
                .strip_suffix(" cover properties satisfied")
                .or_else(|| rest.split_once(" cover properties satisfied").map(|(a, _)| a))
            {
                let mut it = covers.split(" of ");
                if let (Some(a), Some(b)) = (it.next(), it.next()) {
                    if let (Ok(a), Ok(b)) = (a.trim().parse(), b.trim().parse()) {
                        v.covers = Some((a, b));
                    }
                }
            } else if rest.contains(" failed") {
                v.checks = rest.to_string();
            }
        }
        if l.contains("CBMC timed out") {
            v.timed_out = true;
        }
    }
    let successful = successful && !failed;
    let covers_ok = matches!(v.covers, Some((a, b)) if a == b && b > 0);
    v.ok = successful && covers_ok && !v.timed_out;
    v.why = if v.timed_out {
        format!("stopped by kani at its --harness-timeout of {HARNESS_TIMEOUT_S} s (the backstop): no verdict")
    } else if !successful {
        "a property failed (or kani could not run it)".into()
    } else if v.covers.is_none() || v.covers == Some((0, 0)) {
        "no kani::cover! in the harness: nothing shows the proof is not vacuous".into()
    } else if !covers_ok {
        "a kani::cover! is unreachable or unsatisfiable: the proof is vacuous there".into()
    } else {
        String::new()
    };
    if v.ok && v.secs > goal as f64 {
        v.over_goal = Some(goal);
    }
    v
}

/// `took T s, over its goal of G s` for a verified harness over its goal.
pub(super) fn over_goal_note(v: &Verdict) -> Option<String> {
    v.over_goal.map(|g| format!("took {:.1} s, over its goal of {g} s (reported, not failed)", v.secs))
}

/// Splits `cargo kani -j N --output-format terse` output into one result block
/// per harness: `Thread N: Checking harness H...` names the harness of thread
/// N; `Thread N:` or `Thread N: text` opens that harness's block, which runs
/// to its `Verification Time:` line, the next `Thread` line or the end.
#[derive(Default)]
pub(super) struct Blocks {
    pub(super) current: std::collections::BTreeMap<String, String>,
    pub(super) open: Option<(String, String)>,
    pub(super) done: Vec<(String, String)>,
}

impl Blocks {
    /// Take one line of output; returns the block it closed, if any.
    pub(super) fn line(&mut self, line: &str) -> Option<(String, String)> {
        let thread = match line.strip_prefix("Thread ").and_then(|r| r.split_once(": ")) {
            Some((n, rest)) => Some((n.to_string(), rest.to_string())),
            None => {
                line.strip_prefix("Thread ").and_then(|r| r.strip_suffix(':')).map(|n| (n.to_string(), String::new()))
            }
        };
        if let Some((th, rest)) = thread {
            let closed = self.open.take();
            if let Some(b) = &closed {
                self.done.push(b.clone());
            }
            if let Some(h) = rest.strip_prefix("Checking harness ").map(|h| h.trim_end_matches("...").to_string()) {
                self.current.insert(th, h);
            } else if let Some(h) = self.current.get(&th) {
                self.open = Some((h.clone(), format!("{rest}\n")));
            }
            return closed;
        }
        let (h, mut b) = self.open.take()?;
        b.push_str(line);
        b.push('\n');
        if line.trim_start().starts_with("Verification Time:") {
            self.done.push((h.clone(), b.clone()));
            Some((h, b))
        } else {
            self.open = Some((h, b));
            None
        }
    }

    /// Every block, once the output has ended.
    pub(super) fn finish(mut self) -> Vec<(String, String)> {
        if let Some(b) = self.open.take() {
            self.done.push(b);
        }
        self.done
    }
}

/// Verify every harness in one `cargo kani -j 2` run: kani then loads the
/// crate's goto program once, where a run per harness pays that for each. kani
/// stops a harness at `timeout`; [`run_streamed`] kills the whole run when it
/// outlasts `backstop`.
pub(super) fn verify_all(
    root: &Path,
    goal: &dyn Fn(&str) -> u64,
    timeout: u64,
    backstop: u64,
) -> (Vec<(String, Verdict, String)>, RunEnd, String) {
    let mut cmd = cargo();
    cmd.current_dir(root)
        .arg("kani")
        .args(KANI_FLAGS)
        .args(["-Z", "unstable-options", "--harness-timeout", &format!("{timeout}s")])
        .args(VERIFY_FLAGS)
        .args(["--output-format", "terse", "-j", &KANI_JOBS.to_string()]);
    println!("\n==> kani: {}", crate::render(&cmd));
    run_streamed(cmd, goal, Duration::from_secs(backstop))
}

/// Run `cmd`, kani with terse output on its stdout, in its own process group,
/// streaming the output and printing each harness's time as it finishes, beside
/// its goal; the group is killed when the run outlasts `backstop`. Returns each
/// harness's path, verdict and block, how the run ended, and its whole output.
pub(super) fn run_streamed(
    mut cmd: Command,
    goal: &dyn Fn(&str) -> u64,
    backstop: Duration,
) -> (Vec<(String, Verdict, String)>, RunEnd, String) {
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return (Vec::new(), RunEnd::Failed, format!("could not start {}: {e}", crate::render(&cmd))),
    };
    let err = child.stderr.take().map(|r| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = BufReader::new(r).read_to_string(&mut s);
            s
        })
    });
    // The backstop: the whole run may not outlast it.
    let id = child.id();
    let done = Arc::new(Mutex::new(false));
    let watchdog = {
        let done = done.clone();
        std::thread::spawn(move || {
            let t = Instant::now();
            while t.elapsed() < backstop {
                if *done.lock().unwrap_or_else(|e| e.into_inner()) {
                    return false;
                }
                std::thread::sleep(Duration::from_millis(100).min(backstop));
            }
            // `--` before the group: procps-ng 4's kill reads `-KILL -1234`
            // as `kill(-1, SIGKILL)`, every process it may signal.
            let _ = Command::new("kill").args(["-KILL", "--", &format!("-{id}")]).status();
            true
        })
    };
    let mut blocks = Blocks::default();
    let mut all = String::new();
    let started = Instant::now();
    let mut finished: Vec<(String, f64)> = Vec::new();
    if let Some(out) = child.stdout.take() {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            all.push_str(&line);
            all.push('\n');
            if let Some((h, b)) = blocks.line(&line) {
                let at = started.elapsed().as_secs_f64();
                finished.push((h.clone(), at));
                let v = verdict_of(&b, goal(&h));
                let what = if !v.ok {
                    "FAILED".to_string()
                } else if let Some(note) = over_goal_note(&v) {
                    format!("verified, !!! {note}")
                } else {
                    "verified".to_string()
                };
                println!("    {h:<66} {:>7.1} s (goal {:>4} s, done at {at:>6.0} s)  {what}", v.secs, goal(&h));
            }
        }
    }
    let status = child.wait().ok();
    *done.lock().unwrap_or_else(|e| e.into_inner()) = true;
    let killed = watchdog.join().unwrap_or(false);
    if let Some(e) = err {
        all.push_str(&e.join().unwrap_or_default());
    }
    if killed {
        all.push_str(&format!("\nkilled: the kani run outlasted the stage's backstop of {} s\n", backstop.as_secs()));
    }
    let end = started.elapsed().as_secs_f64();
    let verdicts = blocks
        .finish()
        .into_iter()
        .map(|(h, b)| {
            let mut v = verdict_of(&b, goal(&h));
            v.finished_s = finished.iter().find(|(p, _)| *p == h).map_or(end, |(_, at)| *at);
            (h, v, b)
        })
        .collect();
    let end = if killed {
        RunEnd::StoppedAtBackstop
    } else if status.is_some_and(|s| s.success()) {
        RunEnd::Succeeded
    } else {
        RunEnd::Failed
    };
    (verdicts, end, all)
}
