//! The SVG timeline: a title, one lane per track with something to draw (its
//! name on the left; an empty track, such as a core's error track of a clean
//! run, is left out), spans
//! as bars coloured by engine, instants as marks (errors and faults red, the
//! rest grey), a time axis along the bottom with labelled ticks.

use std::fmt::Write as _;

use crate::{Kind, Trace};

/// Width of the picture, px.
pub const WIDTH: u32 = 1200;
/// Width of the lane labels, px.
const LABEL_W: u32 = 190;
/// Right margin, px.
const RIGHT_W: u32 = 36;
/// Height of one lane, px.
pub const LANE_H: u32 = 18;
/// Height of the title, px.
const TITLE_H: u32 = 30;
/// Height of the axis, px.
const AXIS_H: u32 = 40;

/// Bar colour of each engine (PE, ACT, POOL, DVE, SP), then the host's, then
/// the collectives'.
const COLOURS: [&str; 7] = ["#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#9c9c9c", "#edc948"];

/// The height of the SVG of a trace with `lanes` lanes, px.
pub const fn height(lanes: u32) -> u32 {
    TITLE_H + lanes * LANE_H + AXIS_H
}

fn escape(s: &str) -> String {
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
fn tick_step(span_us: u64) -> u64 {
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
fn time_label(us: u64) -> String {
    if us >= 1_000_000 && us.is_multiple_of(1_000) {
        format!("{} s", us as f64 / 1e6)
    } else if us >= 1_000 {
        format!("{} ms", us as f64 / 1e3)
    } else {
        format!("{us} µs")
    }
}

pub(crate) fn render(t: &Trace, title: &str) -> String {
    // Tracks with something drawn on them (an error track stays out until it has a mark).
    let lanes: Vec<(u32, u32)> = t
        .threads
        .keys()
        .copied()
        .filter(|k| t.events.iter().any(|e| (e.pid, e.tid) == *k && !matches!(e.kind, Kind::Counter { .. })))
        .collect();
    let lane_of = |pid: u32, tid: u32| lanes.iter().position(|l| *l == (pid, tid));
    let drawn = || t.events.iter().filter(|e| !matches!(e.kind, Kind::Counter { .. }));
    let t0 = drawn().map(|e| e.ts_us).min().unwrap_or(0);
    let t1 = drawn()
        .map(|e| match e.kind {
            Kind::Span { dur_us } => e.ts_us.saturating_add(dur_us),
            _ => e.ts_us,
        })
        .max()
        .unwrap_or(0)
        .max(t0 + 1);
    let step = tick_step(t1 - t0);
    // The axis starts at a tick at or before the first event.
    let a0 = t0 - t0 % step;
    let a1 = t1.div_ceil(step).saturating_mul(step).max(a0 + step);
    let plot_w = f64::from(WIDTH - LABEL_W - RIGHT_W);
    let x = |us: u64| f64::from(LABEL_W) + (us.saturating_sub(a0)) as f64 / (a1 - a0) as f64 * plot_w;
    let n = lanes.len() as u32;
    let one_process = lanes.iter().all(|l| l.0 == lanes.first().map_or(0, |f| f.0));
    let h = height(n);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{h}" viewBox="0 0 {WIDTH} {h}" font-family="sans-serif" font-size="11">"##
    );
    let _ = writeln!(s, r##"<rect x="0" y="0" width="{WIDTH}" height="{h}" fill="#ffffff"/>"##);
    let _ = writeln!(s, r##"<text x="8" y="20" font-size="14" font-weight="bold">{}</text>"##, escape(title));
    // The legend: the engines' colours, the marks.
    let mut lx = WIDTH - RIGHT_W - 510;
    for (i, name) in ["PE", "ACT", "POOL", "DVE", "SP", "harvest", "CC"].iter().enumerate() {
        let _ = writeln!(s, r##"<rect x="{lx}" y="9" width="12" height="12" fill="{}" rx="2"/>"##, COLOURS[i]);
        let _ = writeln!(s, r##"<text x="{}" y="19" fill="#333333">{name}</text>"##, lx + 16);
        lx += 24 + 8 * name.len() as u32;
    }
    let _ =
        writeln!(s, r##"<path d="M {} 9 L {} 15 L {} 21 L {} 15 Z" fill="#d62728"/>"##, lx + 6, lx + 12, lx + 6, lx);
    let _ = writeln!(s, r##"<text x="{}" y="19" fill="#333333">error / fault</text>"##, lx + 16);
    lx += 100;
    let _ = writeln!(s, r##"<path d="M {lx} 9 L {} 9 L {} 21 Z" fill="#333333"/>"##, lx + 12, lx + 6);
    let _ = writeln!(s, r##"<text x="{}" y="19" fill="#333333">kickoff</text>"##, lx + 16);
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
    let top = TITLE_H;
    let bottom = TITLE_H + n * LANE_H;
    // Grid and axis.
    let mut tick = a0;
    let mut guard = 0;
    while tick <= a1 && guard < 64 {
        let tx = x(tick);
        let _ = writeln!(s, r##"<line x1="{tx:.1}" y1="{top}" x2="{tx:.1}" y2="{}" stroke="#d0d0d0"/>"##, bottom + 4);
        let _ = writeln!(
            s,
            r##"<text x="{tx:.1}" y="{}" text-anchor="middle" fill="#333333">{}</text>"##,
            bottom + 16,
            escape(&time_label(tick))
        );
        tick = tick.saturating_add(step);
        guard += 1;
    }
    let _ = writeln!(
        s,
        r##"<line x1="{LABEL_W}" y1="{bottom}" x2="{}" y2="{bottom}" stroke="#333333"/>"##,
        WIDTH - RIGHT_W
    );
    let _ = writeln!(
        s,
        r##"<text x="{}" y="{}" text-anchor="middle" fill="#333333">CPU time (µs of the run's clock)</text>"##,
        LABEL_W + (WIDTH - LABEL_W - RIGHT_W) / 2,
        bottom + 32
    );
    for e in drawn() {
        let Some(lane) = lane_of(e.pid, e.tid) else { continue };
        let y = TITLE_H + lane as u32 * LANE_H;
        let tip = escape(&format!(
            "{} at {} us{}",
            e.name,
            e.ts_us,
            e.args.iter().map(|(k, v)| format!("; {k}: {v}")).collect::<String>()
        ));
        match e.kind {
            Kind::Span { dur_us } => {
                let x0 = x(e.ts_us);
                let w = (x(e.ts_us.saturating_add(dur_us)) - x0).max(1.5);
                // An engine's span in its engine's colour (its track says which), the rest grey.
                let colour = if e.cat == "engine" && e.tid >= 1 {
                    COLOURS[((e.tid - 1) % crate::TRACKS_PER_CORE) as usize % 5]
                } else if e.cat == "cc" {
                    COLOURS[6]
                } else {
                    COLOURS[5]
                };
                let _ = writeln!(
                    s,
                    r##"<rect x="{x0:.1}" y="{}" width="{w:.1}" height="{}" fill="{colour}" rx="2"><title>{tip}</title></rect>"##,
                    y + 3,
                    LANE_H - 6
                );
            }
            Kind::Instant => {
                let cx = x(e.ts_us);
                let (my, r) = (y + LANE_H / 2, 5);
                if matches!(e.cat, "error" | "fault") {
                    // A red diamond.
                    let _ = writeln!(
                        s,
                        r##"<path d="M {cx:.1} {} L {:.1} {my} L {cx:.1} {} L {:.1} {my} Z" fill="#d62728"><title>{tip}</title></path>"##,
                        my - r,
                        cx + f64::from(r),
                        my + r,
                        cx - f64::from(r)
                    );
                } else {
                    // A dark triangle pointing down at the time.
                    let _ = writeln!(
                        s,
                        r##"<path d="M {:.1} {} L {:.1} {} L {cx:.1} {} Z" fill="#333333"><title>{tip}</title></path>"##,
                        cx - f64::from(r),
                        y + 2,
                        cx + f64::from(r),
                        y + 2,
                        y + LANE_H - 3
                    );
                }
            }
            Kind::Counter { .. } => {}
        }
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

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
            r##"<rect x="654" y="9" width="12" height="12" fill="#4e79a7" rx="2"/>"##,
            r##"<text x="982" y="19" fill="#333333">CC</text>"##,
            r##"<text x="1022" y="19" fill="#333333">error / fault</text>"##,
            r##"<path d="M 1012 9 L 1018 15 L 1012 21 L 1006 15 Z" fill="#d62728"/>"##,
            r##"<path d="M 1106 9 L 1118 9 L 1112 21 Z" fill="#333333"/>"##,
            r##"<text x="1122" y="19" fill="#333333">kickoff</text>"##,
        ] {
            assert!(s.contains(part), "{part}: {s}");
        }
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
}
