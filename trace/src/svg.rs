//! The SVG timeline of one harvest: a title and legend; one lane per track
//! with something to draw, its name on the left, so an empty track such as a
//! core's error track of a clean run is left out; spans as bars coloured by
//! engine; an engine with no END as a hatched bar to the harvest's end with
//! the hung mark there; instants as marks that never overlap, errors and
//! faults as red diamonds, the rest as dark triangles; and a time axis along
//! the bottom with labelled ticks.
//!
//! The axis shows the work. A hang waits out its timeout after a few hundred
//! microseconds of work; when one idle gap takes most of the run, the axis is
//! broken there, the work drawn over most of the width and what comes after
//! the gap, such as the timeout's marks, in a narrow column of its own.

use std::fmt::Write as _;

use crate::{Kind, Trace, TraceEvent, PENDING};

/// Width of the picture, px.
pub const WIDTH: u32 = 1200;
/// Width of the lane labels, px.
const LABEL_W: u32 = 190;
/// Right margin, px.
const RIGHT_W: u32 = 36;
/// Height of one lane, px.
pub const LANE_H: u32 = 18;
/// Height of the title, px.
pub(crate) const TITLE_H: u32 = 30;
/// Height of the axis, px.
pub(crate) const AXIS_H: u32 = 40;
/// Width of the column after a broken axis, px.
const LATE_W: u32 = 110;
/// Width of the break itself, px.
const BREAK_W: u32 = 24;
/// The axis breaks over a gap with nothing in it longer than this share of
/// the whole run, as numerator and denominator; G-TRACE-SVG.
const BREAK_SHARE: (u64, u64) = (3, 4);
/// Half the width of a mark, px.
const MARK_R: u32 = 5;
/// Room a character of the legend takes, px, for 11 px sans-serif with capitals.
const CHAR_W: u32 = 7;
/// Least distance between the centres of two marks of a lane, px; G-TRACE-SVG.
pub(crate) const MARK_GAP: f64 = 12.0;

/// Bar colour of each engine, PE, ACT, POOL, DVE and SP, then the host's, then
/// the collectives'.
pub(crate) const COLOURS: [&str; 7] = ["#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#9c9c9c", "#edc948"];
/// The colour of errors, faults and the hung mark.
pub(crate) const RED: &str = "#d62728";
/// The hatch of a pending engine's bar, `fill="url(#pending)"`.
pub(crate) const PENDING_DEFS: &str = r##"<defs><pattern id="pending" patternUnits="userSpaceOnUse" width="6" height="6" patternTransform="rotate(45)"><rect width="6" height="6" fill="#fbe3e3"/><rect width="3" height="6" fill="#d62728" fill-opacity="0.6"/></pattern></defs>"##;

/// The height of the SVG of a trace with `lanes` lanes, px.
pub const fn height(lanes: u32) -> u32 {
    TITLE_H + lanes * LANE_H + AXIS_H
}

pub(crate) fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '&' => o.push_str("&amp;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            c if (c as u32) < 0x20 => o.push(' '),
            c => o.push(c),
        }
    }
    o
}

/// A tick step of 1, 2 or 5 times a power of ten microseconds giving at most
/// about 10 ticks over `span_us`.
pub(crate) fn tick_step(span_us: u64) -> u64 {
    let mut step = 1u64;
    // 10^19 > u64::MAX: twenty decades cover every span.
    for _ in 0..20 {
        for m in [1u64, 2, 5] {
            let s = step.saturating_mul(m);
            if span_us / s <= 10 {
                return s;
            }
        }
        step = step.saturating_mul(10);
    }
    u64::MAX
}

/// A time in microseconds as a short label.
pub(crate) fn time_label(us: u64) -> String {
    if us >= 1_000_000 && us.is_multiple_of(1_000) {
        format!("{} s", us as f64 / 1e6)
    } else if us >= 1_000 {
        format!("{} ms", us as f64 / 1e3)
    } else {
        format!("{us} µs")
    }
}

/// A red diamond centred at `(cx, cy)`.
pub(crate) fn diamond(s: &mut String, cx: f64, cy: u32, tip: &str) {
    let r = f64::from(MARK_R);
    let _ = writeln!(
        s,
        r##"<path d="M {cx:.1} {} L {:.1} {cy} L {cx:.1} {} L {:.1} {cy} Z" fill="{RED}"><title>{tip}</title></path>"##,
        cy - MARK_R,
        cx + r,
        cy + MARK_R,
        cx - r
    );
}

/// The hung mark centred at `(cx, cy)`: a red disc with a white cross, in a
/// group of class `hung`.
pub(crate) fn hung_mark(s: &mut String, cx: f64, cy: u32, tip: &str) {
    let r = f64::from(MARK_R);
    let c = f64::from(cy);
    let _ = writeln!(
        s,
        r##"<g class="hung"><title>{tip}</title><circle cx="{cx:.1}" cy="{cy}" r="{}" fill="{RED}"/><path d="M {:.1} {:.1} L {:.1} {:.1} M {:.1} {:.1} L {:.1} {:.1}" stroke="#ffffff" stroke-width="2"/></g>"##,
        MARK_R + 1,
        cx - r + 2.0,
        c - r + 2.0,
        cx + r - 2.0,
        c + r - 2.0,
        cx - r + 2.0,
        c + r - 2.0,
        cx + r - 2.0,
        c - r + 2.0
    );
}

/// Spread the sorted marks at `xs` so that no two centres are closer than
/// [`MARK_GAP`], each moved as little as this simple pass allows, none past
/// `limit`.
pub(crate) fn spread(xs: &mut [f64], limit: f64) {
    for i in 1..xs.len() {
        if xs[i] < xs[i - 1] + MARK_GAP {
            xs[i] = xs[i - 1] + MARK_GAP;
        }
    }
    // Back from the limit: a cluster at the right edge moves left as a whole.
    let mut next = limit + MARK_GAP;
    for x in xs.iter_mut().rev() {
        if *x > next - MARK_GAP {
            *x = next - MARK_GAP;
        }
        next = *x;
    }
}

/// The time axis: one linear segment, or two around a break.
#[derive(Clone, Debug, PartialEq)]
struct Axis {
    /// The work's segment: times `t0..t1` over pixels `x0..x1`, ticks every `step`.
    left: (u64, u64, f64, f64, u64),
    /// After the break, if the axis breaks.
    late: Option<Late>,
}

/// The axis after its break.
#[derive(Clone, Debug, PartialEq)]
struct Late {
    /// Times `t0..t1` over pixels `x0..x1`, a little wider than what is drawn.
    t0: u64,
    t1: u64,
    x0: f64,
    x1: f64,
    /// The last time with something in it before the gap, the first after.
    gap: (u64, u64),
    /// The last time drawn.
    last: u64,
}

impl Axis {
    fn new(times: &mut Vec<u64>) -> Axis {
        times.sort_unstable();
        times.dedup();
        let t0 = times.first().copied().unwrap_or(0);
        let t1 = times.last().copied().unwrap_or(0).max(t0 + 1);
        let (px0, px1) = (f64::from(LABEL_W), f64::from(WIDTH - RIGHT_W));
        let gap = times.windows(2).map(|w| (w[0], w[1])).max_by_key(|(a, b)| b - a);
        let linear = |a: u64, b: u64| {
            let step = tick_step(b - a);
            let a0 = a - a % step;
            (a0, b.div_ceil(step).saturating_mul(step).max(a0 + step), step)
        };
        match gap {
            Some((a, b)) if a > t0 && (b - a) * BREAK_SHARE.1 > (t1 - t0) * BREAK_SHARE.0 => {
                let (a0, a1, step) = linear(t0, a.max(t0 + 1));
                let late_x0 = px1 - f64::from(LATE_W);
                let pad = ((t1 - b) / 8).max(1);
                let late =
                    Late { t0: b.saturating_sub(pad), t1: t1 + pad, x0: late_x0, x1: px1, gap: (a, b), last: t1 };
                Axis { left: (a0, a1.min(b), px0, late_x0 - f64::from(BREAK_W), step), late: Some(late) }
            }
            _ => {
                let (a0, a1, step) = linear(t0, t1);
                Axis { left: (a0, a1, px0, px1, step), late: None }
            }
        }
    }

    fn x(&self, us: u64) -> f64 {
        let lin = |t0: u64, t1: u64, x0: f64, x1: f64| {
            x0 + (us as f64 - t0 as f64) / (t1.saturating_sub(t0).max(1)) as f64 * (x1 - x0)
        };
        let (l0, l1, lx0, lx1, _) = self.left;
        match &self.late {
            Some(r) if us >= r.t0 => lin(r.t0, r.t1, r.x0, r.x1),
            Some(r) if us > l1 => lin(l1, r.t0, lx1, r.x0),
            _ => lin(l0, l1, lx0, lx1),
        }
    }

    /// The grid, the tick labels, the break and the axis caption, for lanes
    /// from `top` to `bottom`.
    fn draw(&self, s: &mut String, top: u32, bottom: u32) {
        let (l0, l1, lx0, lx1, step) = self.left;
        let mut tick = l0;
        let mut guard = 0;
        while tick <= l1 && guard < 64 {
            let tx = self.x(tick);
            tick_line(s, tx, top, bottom, &time_label(tick));
            tick = tick.saturating_add(step);
            guard += 1;
        }
        let _ = writeln!(s, r##"<line x1="{lx0:.1}" y1="{bottom}" x2="{lx1:.1}" y2="{bottom}" stroke="#333333"/>"##);
        let mut caption = "CPU time (µs of the run's clock)".to_string();
        if let Some(Late { x0: rx0, x1: rx1, gap: (a, b), last, .. }) = self.late {
            let mut labelled = Vec::new();
            for t in [b, last] {
                let tx = self.x(t);
                if labelled.iter().all(|l: &f64| (l - tx).abs() > 70.0) {
                    tick_line(s, tx, top, bottom, &time_label(t));
                    labelled.push(tx);
                }
            }
            let _ =
                writeln!(s, r##"<line x1="{rx0:.1}" y1="{bottom}" x2="{rx1:.1}" y2="{bottom}" stroke="#333333"/>"##);
            // The break: a pale band over the lanes and two slashes on the axis.
            let (bx0, bx1) = (lx1, rx0);
            let _ = writeln!(
                s,
                r##"<rect class="axis-break" x="{bx0:.1}" y="{top}" width="{:.1}" height="{}" fill="#e8e8e8" fill-opacity="0.7"/>"##,
                bx1 - bx0,
                bottom - top
            );
            for dx in [bx0 + 6.0, bx1 - 10.0] {
                let _ = writeln!(
                    s,
                    r##"<line x1="{dx:.1}" y1="{}" x2="{:.1}" y2="{}" stroke="#333333" stroke-width="1.5"/>"##,
                    bottom + 5,
                    dx + 4.0,
                    bottom - 5
                );
            }
            caption = format!(
                "CPU time (µs of the run's clock); the axis skips {} with nothing in it, from {} to {}",
                time_label(b - a),
                time_label(a),
                time_label(b)
            );
        }
        let _ = writeln!(
            s,
            r##"<text x="{}" y="{}" text-anchor="middle" fill="#333333">{}</text>"##,
            LABEL_W + (WIDTH - LABEL_W - RIGHT_W) / 2,
            bottom + 32,
            escape(&caption)
        );
    }
}

/// A grid line and its label under the axis.
pub(crate) fn tick_line(s: &mut String, tx: f64, top: u32, bottom: u32, label: &str) {
    let _ = writeln!(s, r##"<line x1="{tx:.1}" y1="{top}" x2="{tx:.1}" y2="{}" stroke="#d0d0d0"/>"##, bottom + 4);
    let _ = writeln!(
        s,
        r##"<text x="{tx:.1}" y="{}" text-anchor="middle" fill="#333333">{}</text>"##,
        bottom + 16,
        escape(label)
    );
}

/// The legend's entries, right-aligned in the title row: each a swatch and
/// its text.
pub(crate) fn legend(s: &mut String, entries: &[(Swatch, &str)]) {
    let width: u32 = entries.iter().map(|(_, t)| 24 + CHAR_W * t.chars().count() as u32).sum();
    let mut lx = WIDTH.saturating_sub(RIGHT_W + width);
    for (sw, name) in entries {
        match sw {
            Swatch::Fill(c) => {
                let _ = writeln!(s, r##"<rect x="{lx}" y="9" width="12" height="12" fill="{c}" rx="2"/>"##);
            }
            Swatch::Pending => {
                let _ = writeln!(
                    s,
                    r##"<rect x="{lx}" y="9" width="12" height="12" fill="url(#pending)" stroke="{RED}"/>"##
                );
            }
            Swatch::Hung => hung_mark(s, f64::from(lx + 6), 15, "hung: pending at the harvest's end"),
            Swatch::Diamond => {
                let _ = writeln!(
                    s,
                    r##"<path d="M {} 9 L {} 15 L {} 21 L {lx} 15 Z" fill="{RED}"/>"##,
                    lx + 6,
                    lx + 12,
                    lx + 6
                );
            }
            Swatch::Kickoff => {
                let _ = writeln!(s, r##"<path d="M {lx} 9 L {} 9 L {} 21 Z" fill="#333333"/>"##, lx + 12, lx + 6);
            }
        }
        let _ = writeln!(s, r##"<text x="{}" y="19" fill="#333333">{}</text>"##, lx + 16, escape(name));
        lx += 24 + CHAR_W * name.chars().count() as u32;
    }
}

/// What a legend entry shows.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Swatch {
    /// A square of a colour.
    Fill(&'static str),
    /// The pending hatch.
    Pending,
    /// The hung mark.
    Hung,
    /// The error / fault diamond.
    Diamond,
    /// The kickoff triangle.
    Kickoff,
}

/// The SVG's opening: its size, the background, the hatch, the title.
pub(crate) fn open(s: &mut String, h: u32, title: &str) {
    let _ = writeln!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{h}" viewBox="0 0 {WIDTH} {h}" font-family="sans-serif" font-size="11">"##
    );
    let _ = writeln!(s, "{PENDING_DEFS}");
    let _ = writeln!(s, r##"<rect x="0" y="0" width="{WIDTH}" height="{h}" fill="#ffffff"/>"##);
    let _ = writeln!(s, r##"<text x="8" y="20" font-size="14" font-weight="bold">{}</text>"##, escape(title));
}

/// The colour of the engine whose track is `tid`, else the host's.
fn engine_colour(tid: u32) -> &'static str {
    if (1..crate::CC_TID_BASE).contains(&tid) {
        COLOURS[((tid - 1) % crate::TRACKS_PER_CORE) as usize % 5]
    } else {
        COLOURS[5]
    }
}

fn tip_of(e: &TraceEvent) -> String {
    escape(&format!(
        "{} at {} us{}",
        e.name,
        e.ts_us,
        e.args.iter().map(|(k, v)| format!("; {k}: {v}")).collect::<String>()
    ))
}

pub(crate) fn render(t: &Trace, title: &str) -> String {
    let drawn = || t.events.iter().filter(|e| !matches!(e.kind, Kind::Counter { .. }));
    // Tracks with something drawn on them: an error track stays out until it has a mark.
    let lanes: Vec<(u32, u32)> = t.threads.keys().copied().filter(|k| drawn().any(|e| (e.pid, e.tid) == *k)).collect();
    let lane_of = |pid: u32, tid: u32| lanes.iter().position(|l| *l == (pid, tid));
    let mut times: Vec<u64> = drawn()
        .flat_map(|e| match e.kind {
            Kind::Span { dur_us } => [e.ts_us, e.ts_us.saturating_add(dur_us)],
            _ => [e.ts_us, e.ts_us],
        })
        .collect();
    let axis = Axis::new(&mut times);
    let n = lanes.len() as u32;
    let one_process = lanes.iter().all(|l| l.0 == lanes.first().map_or(0, |f| f.0));
    let h = height(n);
    let mut s = String::new();
    open(&mut s, h, title);
    let pending = drawn().any(|e| e.cat == PENDING);
    let mut entries = vec![
        (Swatch::Fill(COLOURS[0]), "PE"),
        (Swatch::Fill(COLOURS[1]), "ACT"),
        (Swatch::Fill(COLOURS[2]), "POOL"),
        (Swatch::Fill(COLOURS[3]), "DVE"),
        (Swatch::Fill(COLOURS[4]), "SP"),
        (Swatch::Fill(COLOURS[5]), "harvest"),
        (Swatch::Fill(COLOURS[6]), "CC"),
    ];
    if pending {
        entries.push((Swatch::Pending, "pending (no END)"));
        entries.push((Swatch::Hung, "hung"));
    }
    entries.push((Swatch::Diamond, "error / fault"));
    entries.push((Swatch::Kickoff, "kickoff"));
    legend(&mut s, &entries);
    for (i, (pid, tid)) in lanes.iter().enumerate() {
        let y = TITLE_H + i as u32 * LANE_H;
        let fill = if i % 2 == 0 { "#f4f4f4" } else { "#ffffff" };
        let _ = writeln!(s, r##"<rect x="0" y="{y}" width="{WIDTH}" height="{LANE_H}" fill="{fill}"/>"##);
        let name = t.threads.get(&(*pid, *tid)).cloned().unwrap_or_default();
        // One device: the title names it; several: each lane says whose it is.
        let label = if one_process {
            name
        } else {
            let proc = t.processes.get(pid).map_or_else(|| format!("device {pid}"), |p| p.clone());
            format!("{proc}: {name}")
        };
        let _ = writeln!(s, r##"<text x="6" y="{}" fill="#333333">{}</text>"##, y + LANE_H - 5, escape(&label));
    }
    let (top, bottom) = (TITLE_H, TITLE_H + n * LANE_H);
    axis.draw(&mut s, top, bottom);
    // Bars first, the marks over them.
    let mut marks: Vec<Vec<(f64, &TraceEvent)>> = vec![Vec::new(); lanes.len()];
    for e in drawn() {
        let Some(lane) = lane_of(e.pid, e.tid) else { continue };
        let y = TITLE_H + lane as u32 * LANE_H;
        let tip = tip_of(e);
        match e.kind {
            Kind::Span { dur_us } if e.cat == PENDING => {
                let x0 = axis.x(e.ts_us);
                let end = e.ts_us.saturating_add(dur_us);
                let w = (axis.x(end) - x0).max(1.5);
                let _ = writeln!(
                    s,
                    r##"<rect class="pending" x="{x0:.1}" y="{}" width="{w:.1}" height="{}" fill="url(#pending)" stroke="{}" stroke-width="1.5"><title>{tip}</title></rect>"##,
                    y + 3,
                    LANE_H - 6,
                    engine_colour(e.tid)
                );
                marks[lane].push((axis.x(end), e));
            }
            Kind::Span { dur_us } => {
                let x0 = axis.x(e.ts_us);
                let w = (axis.x(e.ts_us.saturating_add(dur_us)) - x0).max(1.5);
                // An engine's span in its engine's colour, which its track names; the rest grey.
                let colour = match e.cat {
                    "engine" => engine_colour(e.tid),
                    "cc" => COLOURS[6],
                    _ => COLOURS[5],
                };
                let _ = writeln!(
                    s,
                    r##"<rect x="{x0:.1}" y="{}" width="{w:.1}" height="{}" fill="{colour}" rx="2"><title>{tip}</title></rect>"##,
                    y + 3,
                    LANE_H - 6
                );
            }
            // A START without END: its pending bar starts there.
            Kind::Instant if e.cat == "engine" => {}
            Kind::Instant => marks[lane].push((axis.x(e.ts_us), e)),
            Kind::Counter { .. } => {}
        }
    }
    for (lane, mut on) in marks.into_iter().enumerate() {
        on.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut xs: Vec<f64> = on.iter().map(|m| m.0).collect();
        spread(&mut xs, f64::from(WIDTH) - f64::from(MARK_R) - 2.0);
        let y = TITLE_H + lane as u32 * LANE_H;
        for (cx, (_, e)) in xs.into_iter().zip(on) {
            let my = y + LANE_H / 2;
            let tip = tip_of(e);
            if e.cat == PENDING {
                hung_mark(&mut s, cx, my, &tip);
            } else if matches!(e.cat, "error" | "fault") {
                diamond(&mut s, cx, my, &tip);
            } else {
                // A dark triangle pointing down at the time.
                let r = f64::from(MARK_R);
                let _ = writeln!(
                    s,
                    r##"<path d="M {:.1} {} L {:.1} {} L {cx:.1} {} Z" fill="#333333"><title>{tip}</title></path>"##,
                    cx - r,
                    y + 2,
                    cx + r,
                    y + 2,
                    y + LANE_H - 3
                );
            }
        }
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Sink as _;

    #[test]
    fn tick_steps_are_1_2_5_and_give_at_most_ten_ticks() {
        assert_eq!(tick_step(0), 1);
        assert_eq!(tick_step(10), 1);
        assert_eq!(tick_step(11), 2);
        assert_eq!(tick_step(45), 5);
        assert_eq!(tick_step(51), 5);
        assert_eq!(tick_step(55), 10);
        assert_eq!(tick_step(1_900), 200);
        assert!(tick_step(u64::MAX) > 0);
    }

    fn one_lane(spans: &[(u64, u64)], instant: u64) -> Trace {
        let mut t = Trace::new();
        t.name_thread(0, 1, "core 0 PE");
        for (ts, dur) in spans {
            t.events.push(crate::TraceEvent {
                pid: 0,
                tid: 1,
                name: "PE".into(),
                cat: "engine",
                ts_us: *ts,
                kind: Kind::Span { dur_us: *dur },
                args: Vec::new(),
            });
        }
        t.events.push(crate::TraceEvent {
            pid: 0,
            tid: 1,
            name: "mark".into(),
            cat: "error",
            ts_us: instant,
            kind: Kind::Instant,
            args: Vec::new(),
        });
        // A counter is never drawn, nor does it stretch the axis.
        t.events.push(crate::TraceEvent {
            pid: 0,
            tid: 0,
            name: "passes".into(),
            cat: "poll",
            ts_us: 1_000_000,
            kind: Kind::Counter { value: 1 },
            args: Vec::new(),
        });
        t
    }

    #[test]
    fn bars_and_marks_sit_at_their_times_on_an_axis_from_the_first_tick_to_the_last() {
        // One lane: 30 title + 18 lane + 40 axis.
        let s = render(&one_lane(&[(1000, 500)], 1250), "t");
        assert!(s.contains(r##"width="1200" height="88" viewBox="0 0 1200 88""##), "{s}");
        assert_eq!(height(3), 30 + 3 * 18 + 40);
        // The plot is 1200 - 190 - 36 = 974 px from x = 190; 1000..1500 us in ticks of 50.
        assert!(s.contains(r##"<rect x="190.0" y="33" width="974.0" height="12" fill="#4e79a7""##), "{s}");
        assert!(s.contains(r##"<path d="M 677.0 34 L 682.0 39 L 677.0 44 L 672.0 39 Z" fill="#d62728">"##), "{s}");
        for (label, x) in [("1 ms", "190.0"), ("1.05 ms", "287.4"), ("1.5 ms", "1164.0")] {
            assert!(
                s.contains(&format!(r##"<text x="{x}" y="64" text-anchor="middle" fill="#333333">{label}</text>"##)),
                "{label}: {s}"
            );
        }
        assert!(!s.contains("1.55 ms"), "no tick past the last event");
        // The legend, right-aligned in the title row.
        for part in [
            r##"<rect x="647" y="9" width="12" height="12" fill="#4e79a7" rx="2"/>"##,
            r##"<text x="954" y="19" fill="#333333">CC</text>"##,
            r##"<text x="992" y="19" fill="#333333">error / fault</text>"##,
            r##"<path d="M 982 9 L 988 15 L 982 21 L 976 15 Z" fill="#d62728"/>"##,
            r##"<path d="M 1091 9 L 1103 9 L 1097 21 Z" fill="#333333"/>"##,
            r##"<text x="1107" y="19" fill="#333333">kickoff</text>"##,
        ] {
            assert!(s.contains(part), "{part}: {s}");
        }
        assert!(!s.contains("pending (no END)") && !s.contains("axis-break"), "no pending engine, no break: {s}");
        // Spans that do not start on a tick: the axis starts at the tick before.
        let s = render(&one_lane(&[(15, 10), (40, 60)], 20), "t");
        // 15..100 in ticks of 10 from 10: 90 us over 974 px.
        assert!(s.contains(r##"<rect x="244.1" y="33" width="108.2" "##), "{s}");
        assert!(s.contains(r##"<rect x="514.7" y="33" width="649.3" "##), "{s}");
        assert!(s.contains(">10 µs<") && s.contains(">100 µs<") && !s.contains(">0 µs<"), "{s}");
    }

    #[test]
    fn bars_take_their_engines_colour_on_every_core_and_lanes_alternate() {
        let mut t = Trace::new();
        for (tid, cat) in [(crate::engine_tid(1, 1), "engine"), (crate::engine_tid(2, 4), "engine"), (1000, "host")] {
            t.events.push(crate::TraceEvent {
                pid: 0,
                tid,
                name: "x".into(),
                cat,
                ts_us: 0,
                kind: Kind::Span { dur_us: 10 },
                args: Vec::new(),
            });
        }
        t.name_thread(0, 1000, "logical core 0");
        t.name_thread(0, crate::engine_tid(1, 1), "core 1 ACT");
        t.name_thread(0, crate::engine_tid(2, 4), "core 2 SP");
        let s = render(&t, "t");
        // Lanes in track order: core 1 ACT, core 2 SP, the logical core's.
        for (y, fill) in [(30, "#f4f4f4"), (48, "#ffffff"), (66, "#f4f4f4")] {
            assert!(
                s.contains(&format!(r##"<rect x="0" y="{y}" width="1200" height="18" fill="{fill}"/>"##)),
                "{y}: {s}"
            );
        }
        for (y, fill) in [(33, "#f28e2b"), (51, "#76b7b2"), (69, "#9c9c9c")] {
            assert!(s.contains(&format!(r##"y="{y}" width="974.0" height="12" fill="{fill}""##)), "{y} {fill}: {s}");
        }
    }

    #[test]
    fn a_lane_is_drawn_only_for_a_track_with_something_on_it() {
        let mut t = one_lane(&[(0, 10)], 5);
        t.name_thread(0, 2, "core 0 ACT");
        t.name_thread(1, 1, "device 1 PE");
        let s = render(&t, "t");
        assert!(s.contains(">core 0 PE<") && !s.contains("core 0 ACT") && !s.contains("device 1 PE"), "{s}");
        assert!(s.contains(r##"height="88""##));
    }

    #[test]
    fn labels_pick_the_unit() {
        assert_eq!(time_label(0), "0 µs");
        assert_eq!(time_label(1_500), "1.5 ms");
        assert_eq!(time_label(2_000_000), "2 s");
    }

    #[test]
    fn text_is_escaped() {
        assert_eq!(escape("a<b&\"c'>\n"), "a&lt;b&amp;&quot;c&apos;&gt; ");
    }

    #[test]
    fn the_axis_breaks_over_a_gap_that_takes_most_of_the_run_and_nowhere_else() {
        // Work from 10 to 400 us, then the timeout's marks at 5 s.
        let mut times = vec![10, 15, 343, 400, 5_000_014];
        let a = Axis::new(&mut times);
        let late = a.late.clone().expect("a break");
        assert_eq!(late.gap, (400, 5_000_014));
        // The work takes the width up to the break; the late marks sit in their column.
        assert_eq!(a.x(0), f64::from(LABEL_W));
        assert!((a.x(400) - a.left.3).abs() < 100.0, "{}", a.x(400));
        assert!(a.x(5_000_014) > late.x0 && a.x(5_000_014) < late.x1);
        // Inside the gap: between the two, in order.
        assert!(a.x(401) >= a.left.3 && a.x(4_000_000) < late.x0 && a.x(401) < a.x(4_000_000));
        // No break: a gap of half the run, or a run of one gap.
        assert!(Axis::new(&mut vec![0, 100, 200]).late.is_none());
        assert!(Axis::new(&mut vec![0, 1_000_000]).late.is_none());
    }

    #[test]
    fn marks_are_spread_apart_and_kept_inside() {
        let mut xs = vec![100.0, 100.0, 100.0, 130.0];
        spread(&mut xs, 1000.0);
        assert_eq!(xs, vec![100.0, 112.0, 124.0, 136.0]);
        let mut xs = vec![995.0, 995.0, 995.0];
        spread(&mut xs, 1000.0);
        assert_eq!(xs, vec![976.0, 988.0, 1000.0]);
        assert!(xs.windows(2).all(|w| w[1] - w[0] >= MARK_GAP));
    }
}
