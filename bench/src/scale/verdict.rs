//! The hybrid slice sweep's rule for the default slice, and the goals'
//! verdicts, each a ratio within one run.

use super::*;

/// The hybrid slices of the sweep, us; the default slice is added when not among them.
pub const SLICES_US: [u64; 6] = [25, 40, 50, 100, 200, 400];

pub(super) fn best<'a>(shapes: &'a [Shape], suffix: &str) -> Option<&'a Shape> {
    shapes
        .iter()
        .filter(|s| s.name.starts_with("poll-group") && s.name.ends_with(suffix))
        .min_by(|a, b| a.latency.p99.total_cmp(&b.latency.p99))
}

/// One point of the hybrid slice sweep: slice in us, notice p99 in ns, harvest CPU in cores.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SlicePoint {
    pub slice_us: u64,
    pub p99_ns: f64,
    pub cpu_cores: f64,
}

/// Why [`choose_slice`] chose its slice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SliceReason {
    /// The shortest slice with p99 and CPU each at most `1/ratio` of libnrt's.
    BothGoals,
    /// None met both: the slice whose lower of its two ratios to libnrt's is highest.
    Closest,
}

/// The rule for a hybrid poller's default slice, G-POLL-SLICE, from a sweep
/// measured beside libnrt's shape in the same run. It picks the shortest slice
/// whose p99 and harvest CPU are each at most `1/ratio` of libnrt's, the hybrid
/// goal; when none, the slice closest to it on both: the one whose lower ratio,
/// libnrt's p99 over its p99 or libnrt's CPU over its CPU, is highest, the
/// shorter on a tie. A slice good on one figure loses to any slice better on
/// its worse one; a slice with a figure missing (NaN) loses to every measured
/// one. `None` for an empty sweep or when libnrt's figures are not positive
/// and finite.
pub fn choose_slice(
    points: &[SlicePoint],
    libnrt_p99_ns: f64,
    libnrt_cpu: f64,
    ratio: f64,
) -> Option<(u64, SliceReason)> {
    let measured = |x: f64| x.is_finite() && x > 0.0;
    if !measured(libnrt_p99_ns) || !measured(libnrt_cpu) {
        return None;
    }
    let mut by_slice: Vec<SlicePoint> = points.to_vec();
    by_slice.sort_by_key(|p| p.slice_us);
    let cpu_ok = |p: &SlicePoint| p.cpu_cores * ratio <= libnrt_cpu;
    let p99_ok = |p: &SlicePoint| p.p99_ns * ratio <= libnrt_p99_ns;
    if let Some(p) = by_slice.iter().find(|p| cpu_ok(p) && p99_ok(p)) {
        return Some((p.slice_us, SliceReason::BothGoals));
    }
    // `f64::min` would drop a NaN and rank the slice on its other figure.
    let worse = |p: &SlicePoint| {
        let (a, b) = (libnrt_p99_ns / p.p99_ns, libnrt_cpu / p.cpu_cores);
        if a.is_nan() || b.is_nan() {
            f64::NEG_INFINITY
        } else {
            a.min(b)
        }
    };
    let mut best: Option<&SlicePoint> = None;
    for p in &by_slice {
        if best.is_none_or(|b| worse(p) > worse(b)) {
            best = Some(p);
        }
    }
    best.map(|p| (p.slice_us, SliceReason::Closest))
}

/// What a shape is not below libnrt's on, with its figure; `None` when below on both.
pub(super) fn not_below(p99_ns: f64, cpu: f64, libnrt_p99_ns: f64, libnrt_cpu: f64) -> Option<String> {
    let mut why = Vec::new();
    if p99_ns.partial_cmp(&libnrt_p99_ns) != Some(std::cmp::Ordering::Less) {
        why.push(format!("p99 {:.0} us", p99_ns / 1e3));
    }
    if cpu.partial_cmp(&libnrt_cpu) != Some(std::cmp::Ordering::Less) {
        why.push(format!("CPU {cpu:.2}"));
    }
    (!why.is_empty()).then(|| why.join(", "))
}

/// `met` or `MISSED`.
pub(super) fn verdict(ok: bool) -> &'static str {
    if ok {
        "met"
    } else {
        "MISSED"
    }
}

/// The goals as ratios within one run, one line each.
pub(super) fn verdicts(runs: &[Run], default_slice_us: u64) -> Vec<String> {
    let mut out = Vec::new();
    let Some(r) = runs.iter().find(|r| r.work_us == 1000).or(runs.first()) else { return out };
    let Some(libnrt) = r.shapes.first() else { return out };
    let (lp99, lcpu) = (libnrt.latency.p99, libnrt.cpu_cores);
    let u = r.work_us;
    // Hybrid: p99 and CPU each <= 1/10 of libnrt's at one slice of the sweep.
    let pts: Vec<SlicePoint> = r
        .slices
        .iter()
        .map(|(us, s)| SlicePoint { slice_us: *us, p99_ns: s.latency.p99, cpu_cores: s.cpu_cores })
        .collect();
    if !pts.is_empty() {
        let each = pts
            .iter()
            .map(|p| {
                format!("{} us: p99 {:.1}x lower, CPU {:.1}x lower", p.slice_us, lp99 / p.p99_ns, lcpu / p.cpu_cores)
            })
            .collect::<Vec<_>>()
            .join("; ");
        let met = pts.iter().find(|p| p.p99_ns * 10.0 <= lp99 && p.cpu_cores * 10.0 <= lcpu);
        // The same goal for the bare sleeping reader: what the machine's wake-up allows.
        let bare: Vec<(u64, f64, f64)> = r
            .floors
            .iter()
            .filter_map(|(sl, s)| Some((sl.as_ref().copied()?, lp99 / s.latency.p99, lcpu / s.cpu_cores)))
            .collect();
        let floor = bare.iter().map(|(us, a, b)| format!("{us} us: {a:.1}x, {b:.1}x")).collect::<Vec<_>>().join("; ");
        let floor_met = bare.iter().find(|(_, a, b)| *a >= 10.0 && *b >= 10.0).map(|(us, ..)| *us);
        out.push(format!(
            "verdict: hybrid x1, U = {u} us, against libnrt's shape (p99 {:.0} ns, CPU {:.2}): {each} \
             (goal: both >= 10x at one slice): {}; the bare sleeping reader, p99 and CPU lower: {floor}{}({})",
            lp99,
            lcpu,
            match met {
                Some(p) => format!("met at {} us", p.slice_us),
                None => "MISSED".to_string(),
            },
            if floor.is_empty() { "" } else { " " },
            match (floor_met, bare.is_empty()) {
                (Some(us), _) => format!("both at {us} us"),
                (None, true) => "not measured".to_string(),
                (None, false) => "both at no slice: the machine's wake-up".to_string(),
            }
        ));
        if let Some((sl, why)) = choose_slice(&pts, lp99, lcpu, 10.0) {
            out.push(format!("verdict: the slice rule picks {sl} us ({why:?}; the default is {default_slice_us} us)"));
        }
    }
    // The spinning poller over all the lanes against the bare spinning reader over them.
    let floor = r.floors.iter().find(|(s, _)| s.is_none()).map(|(_, s)| s);
    if let (Some(f), Some(sp)) = (floor, r.shapes.iter().find(|s| s.name == "poll-group x1 spin")) {
        let (a, b) = (sp.latency.p50 / f.latency.p50, sp.latency.p99 / f.latency.p99);
        out.push(format!(
            "verdict: {} against the bare spinning reader: p50 {:.0} / {:.0} ns = {a:.1}x (goal <= 5x), \
             p99 {:.0} / {:.0} ns = {b:.1}x (goal <= 3x): {}",
            sp.name,
            sp.latency.p50,
            f.latency.p50,
            sp.latency.p99,
            f.latency.p99,
            verdict(a <= 5.0 && b <= 3.0)
        ));
    }
    // Hybrid at the default slice against the bare sleeping reader at it.
    let hyb = r.slices.iter().find(|(us, _)| *us == default_slice_us).map(|(_, s)| s);
    let bare = r.floors.iter().find(|(us, _)| *us == Some(default_slice_us)).map(|(_, s)| s);
    if let (Some(h), Some(b)) = (hyb, bare) {
        let x = h.latency.p99 / b.latency.p99;
        out.push(format!(
            "verdict: hybrid x1 at its default slice {default_slice_us} us against the bare sleeping reader at it: \
             p99 {:.0} / {:.0} ns = {x:.1}x (goal <= 3x): {}; CPU {:.2} against {:.2}",
            h.latency.p99,
            b.latency.p99,
            verdict(x <= 3.0),
            h.cpu_cores,
            b.cpu_cores
        ));
    }
    // Every poll-group shape below libnrt's on both, at every U.
    for r in runs {
        let Some(l) = r.shapes.first() else { continue };
        let groups: Vec<&Shape> = r.shapes.iter().filter(|s| s.name.starts_with("poll-group")).collect();
        if groups.is_empty() {
            continue;
        }
        let not: Vec<String> = groups
            .iter()
            .filter_map(|s| {
                let why = not_below(s.latency.p99, s.cpu_cores, l.latency.p99, l.cpu_cores)?;
                Some(format!("{} ({why})", s.name))
            })
            .collect();
        out.push(format!(
            "verdict: U = {} us: {} of {} poll-group shapes below libnrt's on both p99 and CPU (goal: all){}: {}",
            r.work_us,
            groups.len() - not.len(),
            groups.len(),
            if not.is_empty() { String::new() } else { format!(", not: {}", not.join(", ")) },
            verdict(not.is_empty())
        ));
    }
    out
}
