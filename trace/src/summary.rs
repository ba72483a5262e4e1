//! The SVG of a host run, from a bounded summary: [`Summary`], a [`Sink`],
//! takes the run's events as they are made and keeps, per device, the
//! statuses of its harvests, which engines were left pending, and over
//! [`BUCKETS`] time buckets how busy its engines were, how much engine time
//! was pending, and its errors, faults and hung marks. The buckets double in
//! width when the run outgrows them, so its memory is the devices' count
//! times the buckets, whatever the number of inferences.
//!
//! The picture is one row per device: its name, a strip of its engines'
//! occupancy, darker as more of its engines are busy, over a hatched strip of its
//! pending engines, the marks above, and its statuses and hung engines on
//! the right.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use crate::svg::{self, escape, Swatch, AXIS_H, COLOURS, MARK_GAP, TITLE_H, WIDTH};
use crate::{Kind, Sink, TraceEvent, PENDING};

/// Time buckets of each device's strip; G-TRACE-SVG.
pub const BUCKETS: usize = 180;
/// Height of one device's row, px.
pub const ROW_H: u32 = 26;
/// Width of the device labels, px.
const LABEL_W: u32 = 90;
/// Width of the statuses column on the right, px.
const TEXT_W: u32 = 360;
/// Least share of the fill of a bucket with any engine busy, so a lone span stays visible.
const MIN_OPACITY: f64 = 0.2;

/// One device's row.
#[derive(Clone, Debug)]
struct Row {
    name: Option<String>,
    tracks: BTreeMap<u32, String>,
    engine_tracks: BTreeSet<u32>,
    busy_us: Vec<u64>,
    pending_us: Vec<u64>,
    marks: Vec<u32>,
    hung: Vec<u32>,
    statuses: BTreeMap<String, u64>,
    harvests: u64,
    hung_engines: BTreeMap<String, u64>,
}

impl Default for Row {
    fn default() -> Self {
        Row {
            name: None,
            tracks: BTreeMap::new(),
            engine_tracks: BTreeSet::new(),
            busy_us: vec![0; BUCKETS],
            pending_us: vec![0; BUCKETS],
            marks: vec![0; BUCKETS],
            hung: vec![0; BUCKETS],
            statuses: BTreeMap::new(),
            harvests: 0,
            hung_engines: BTreeMap::new(),
        }
    }
}

/// Sum pairs of buckets into the first half, as the width has doubled.
fn halve<T: Copy + core::ops::Add<Output = T> + Default>(v: &mut [T]) {
    let n = v.len();
    for i in 0..n / 2 {
        v[i] = v[2 * i] + v[2 * i + 1];
    }
    for x in &mut v[n / 2..] {
        *x = T::default();
    }
}

/// A host run's events summed per device, in memory bounded by the devices
/// and tracks, not by the events.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    rows: BTreeMap<u32, Row>,
    origin: Option<u64>,
    bucket_us: u64,
    last_us: u64,
}

impl Summary {
    /// Nothing yet.
    pub fn new() -> Summary {
        Summary { bucket_us: 1, ..Summary::default() }
    }

    /// Harvests seen of device `pid`, by status `<code> <NAME>`.
    pub fn statuses(&self, pid: u32) -> Option<&BTreeMap<String, u64>> {
        self.rows.get(&pid).map(|r| &r.statuses)
    }

    /// The engines of device `pid` left pending, by track name, and how often.
    pub fn hung_engines(&self, pid: u32) -> Option<&BTreeMap<String, u64>> {
        self.rows.get(&pid).map(|r| &r.hung_engines)
    }

    /// The bucket of `t_us`, the buckets widened until `t_us` fits.
    fn bucket(&mut self, t_us: u64) -> usize {
        let origin = *self.origin.get_or_insert(t_us);
        let d = t_us.saturating_sub(origin);
        let mut guard = 0;
        while d / self.bucket_us.max(1) >= BUCKETS as u64 && guard < 64 {
            for r in self.rows.values_mut() {
                halve(&mut r.busy_us);
                halve(&mut r.pending_us);
                halve(&mut r.marks);
                halve(&mut r.hung);
            }
            self.bucket_us = self.bucket_us.max(1).saturating_mul(2);
            guard += 1;
        }
        ((d / self.bucket_us.max(1)) as usize).min(BUCKETS - 1)
    }

    /// Add the span `s..e` to `pick`'s buckets of device `pid`.
    fn spread(&mut self, pid: u32, s: u64, e: u64, pick: fn(&mut Row) -> &mut Vec<u64>) {
        // The end first: it may widen the buckets, which moves the start's.
        let b1 = self.bucket(e);
        let b0 = self.bucket(s);
        let (origin, w) = (self.origin.unwrap_or(0), self.bucket_us.max(1));
        let row = pick(self.rows.entry(pid).or_default());
        for (b, slot) in row.iter_mut().enumerate().take(b1 + 1).skip(b0) {
            let lo = origin + b as u64 * w;
            let hi = if b == BUCKETS - 1 { u64::MAX } else { lo + w };
            *slot += e.min(hi).saturating_sub(s.max(lo));
        }
    }

    /// The SVG: one row per device.
    pub fn to_svg(&self, title: &str) -> String {
        render(self, title)
    }
}

impl Sink for Summary {
    fn name_process(&mut self, pid: u32, name: &str) {
        self.rows.entry(pid).or_default().name = Some(name.to_string());
    }

    fn name_thread(&mut self, pid: u32, tid: u32, name: &str) {
        self.rows.entry(pid).or_default().tracks.insert(tid, name.to_string());
    }

    fn push(&mut self, e: TraceEvent) {
        let end = match e.kind {
            Kind::Counter { .. } => return,
            Kind::Span { dur_us } => e.ts_us.saturating_add(dur_us),
            Kind::Instant => e.ts_us,
        };
        self.last_us = self.last_us.max(end);
        // The time axis starts at the first event; an event timed before it
        // counts as at the origin.
        self.origin.get_or_insert(e.ts_us);
        match (e.cat, &e.kind) {
            ("engine", Kind::Span { .. }) => {
                self.rows.entry(e.pid).or_default().engine_tracks.insert(e.tid);
                self.spread(e.pid, e.ts_us, end, |r| &mut r.busy_us);
            }
            (PENDING, Kind::Span { .. }) => {
                self.spread(e.pid, e.ts_us, end, |r| &mut r.pending_us);
                let b = self.bucket(end);
                let row = self.rows.entry(e.pid).or_default();
                row.engine_tracks.insert(e.tid);
                row.hung[b] += 1;
                let name = row.tracks.get(&e.tid).cloned().unwrap_or_else(|| crate::default_track_name(e.tid));
                *row.hung_engines.entry(name).or_insert(0) += 1;
            }
            ("host", Kind::Span { .. }) if e.name == "harvest" => {
                self.bucket(end);
                let row = self.rows.entry(e.pid).or_default();
                row.harvests += 1;
                let status = e.args.iter().find(|(k, _)| *k == "status").map_or("?", |(_, v)| v.as_str());
                match row.statuses.get_mut(status) {
                    Some(n) => *n += 1,
                    None => {
                        row.statuses.insert(status.to_string(), 1);
                    }
                }
            }
            ("error" | "fault", Kind::Instant) => {
                let b = self.bucket(e.ts_us);
                self.rows.entry(e.pid).or_default().marks[b] += 1;
            }
            _ => {
                self.bucket(end);
            }
        }
    }
}

/// The height of the summary's SVG of `devices` devices, px.
pub const fn height(devices: u32) -> u32 {
    TITLE_H + devices * ROW_H + AXIS_H
}

/// Runs of buckets with the same value, `(first, last, value)`, zeros left out.
fn runs<T: Copy + PartialEq + Default>(v: &[T]) -> Vec<(usize, usize, T)> {
    let mut out: Vec<(usize, usize, T)> = Vec::new();
    for (i, x) in v.iter().enumerate() {
        if *x == T::default() {
            continue;
        }
        match out.last_mut() {
            Some(l) if l.1 + 1 == i && l.2 == *x => l.1 = i,
            _ => out.push((i, i, *x)),
        }
    }
    out
}

/// A status list as `N x CODE NAME`, most frequent first.
fn status_text(statuses: &BTreeMap<String, u64>) -> String {
    let mut v: Vec<(&String, &u64)> = statuses.iter().collect();
    v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    v.iter().map(|(s, n)| format!("{n} x {s}")).collect::<Vec<_>>().join(", ")
}

fn render(sum: &Summary, title: &str) -> String {
    let n = sum.rows.len() as u32;
    let h = height(n);
    let mut s = String::new();
    svg::open(&mut s, h, title);
    svg::legend(
        &mut s,
        &[
            (Swatch::Fill(COLOURS[0]), "engines busy (darker: more of them)"),
            (Swatch::Pending, "pending (no END)"),
            (Swatch::Hung, "hung"),
            (Swatch::Diamond, "error / fault"),
        ],
    );
    let origin = sum.origin.unwrap_or(0);
    let w = sum.bucket_us.max(1);
    let span = sum.last_us.saturating_sub(origin).max(1);
    let (px0, px1) = (f64::from(LABEL_W), f64::from(WIDTH - TEXT_W));
    let x = |t: u64| px0 + (t.saturating_sub(origin)) as f64 / span as f64 * (px1 - px0);
    let bx = |b: usize| x(origin.saturating_add(b as u64 * w)).min(px1);
    for (i, (pid, row)) in sum.rows.iter().enumerate() {
        let y = TITLE_H + i as u32 * ROW_H;
        let fill = if i % 2 == 0 { "#f4f4f4" } else { "#ffffff" };
        let _ = writeln!(s, r##"<rect x="0" y="{y}" width="{WIDTH}" height="{ROW_H}" fill="{fill}"/>"##);
        let name = row.name.clone().unwrap_or_else(|| format!("device {pid}"));
        let _ = writeln!(s, r##"<text class="device" x="6" y="{}" fill="#333333">{}</text>"##, y + 17, escape(&name));
        // Occupancy: each bucket's engine time over what the device's engines could do in it, in tenths.
        let capacity = (row.engine_tracks.len().max(1) as u64).saturating_mul(w);
        let shade: Vec<u8> = row
            .busy_us
            .iter()
            .map(|b| if *b == 0 { 0 } else { (1 + (b.saturating_mul(9) / capacity).min(9)) as u8 })
            .collect();
        for (b0, b1, level) in runs(&shade) {
            let (xa, xb) = (bx(b0), bx(b1 + 1));
            let opacity = MIN_OPACITY + (1.0 - MIN_OPACITY) * f64::from(level - 1) / 9.0;
            let _ = writeln!(
                s,
                r##"<rect x="{xa:.1}" y="{}" width="{:.1}" height="11" fill="{}" fill-opacity="{opacity:.2}"><title>{}: engines busy {}0% or less of the time</title></rect>"##,
                y + 4,
                (xb - xa).max(1.0),
                COLOURS[0],
                escape(&name),
                level
            );
        }
        let pending: Vec<bool> = row.pending_us.iter().map(|p| *p > 0).collect();
        for (b0, b1, _) in runs(&pending) {
            let (xa, xb) = (bx(b0), bx(b1 + 1));
            let _ = writeln!(
                s,
                r##"<rect class="pending" x="{xa:.1}" y="{}" width="{:.1}" height="7" fill="url(#pending)" stroke="{}" stroke-width="0.5"/>"##,
                y + 16,
                (xb - xa).max(1.5),
                svg::RED
            );
        }
        // The marks: the hung ones on the pending strip, errors and faults on the busy one;
        // buckets closer than a mark's width share one mark.
        for (counts, cy, what, hung) in [
            (&row.hung, y + 19, "hung (pending at the harvest's end)", true),
            (&row.marks, y + 9, "error / fault", false),
        ] {
            let mut merged: Vec<(f64, u32)> = Vec::new();
            for (b, c) in counts.iter().enumerate().filter(|(_, c)| **c > 0) {
                let cx = (bx(b) + bx(b + 1)) / 2.0;
                match merged.last_mut() {
                    Some(m) if cx - m.0 < MARK_GAP => m.1 += c,
                    _ => merged.push((cx, *c)),
                }
            }
            for (cx, c) in merged {
                let tip = escape(&format!("{name}: {c} {what}"));
                if hung {
                    svg::hung_mark(&mut s, cx, cy, &tip);
                } else {
                    svg::diamond(&mut s, cx, cy, &tip);
                }
            }
        }
        let tx = WIDTH - TEXT_W + 10;
        let statuses = status_text(&row.statuses);
        let _ = writeln!(
            s,
            r##"<text class="statuses" x="{tx}" y="{}" fill="#333333" font-size="10">{} harvests: {}<title>{}</title></text>"##,
            y + 11,
            row.harvests,
            escape(&statuses),
            escape(&statuses)
        );
        if !row.hung_engines.is_empty() {
            let hung: Vec<String> = row.hung_engines.iter().map(|(e, c)| format!("{e} x{c}")).collect();
            let _ = writeln!(
                s,
                r##"<text class="hung-engines" x="{tx}" y="{}" fill="{}" font-size="10">hung: {}</text>"##,
                y + 23,
                svg::RED,
                escape(&hung.join(", "))
            );
        }
    }
    let (top, bottom) = (TITLE_H, TITLE_H + n * ROW_H);
    let step = svg::tick_step(span);
    let mut tick = origin.div_ceil(step).saturating_mul(step);
    let mut guard = 0;
    while tick <= origin.saturating_add(span) && guard < 64 {
        svg::tick_line(&mut s, x(tick), top, bottom, &svg::time_label(tick));
        tick = tick.saturating_add(step);
        guard += 1;
    }
    let _ = writeln!(s, r##"<line x1="{px0:.1}" y1="{bottom}" x2="{px1:.1}" y2="{bottom}" stroke="#333333"/>"##);
    let _ = writeln!(
        s,
        r##"<text x="{}" y="{}" text-anchor="middle" fill="#333333">CPU time (µs of each device's clock; one bucket = {})</text>"##,
        (px0 + px1) / 2.0,
        bottom + 32,
        escape(&svg::time_label(w))
    );
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(pid: u32, tid: u32, cat: &'static str, ts_us: u64, dur_us: u64) -> TraceEvent {
        TraceEvent { pid, tid, name: "x".into(), cat, ts_us, kind: Kind::Span { dur_us }, args: Vec::new() }
    }

    #[test]
    fn the_buckets_double_to_fit_and_keep_every_microsecond() {
        let mut sum = Summary::new();
        for i in 0..1000u64 {
            sum.push(span(0, 1, "engine", i * 100, 50));
        }
        assert!(sum.bucket_us >= 100_000 / BUCKETS as u64, "{}", sum.bucket_us);
        let row = &sum.rows[&0];
        assert_eq!(row.busy_us.iter().sum::<u64>(), 1000 * 50);
        assert_eq!(row.busy_us.len(), BUCKETS);
        // A pending span: its time on the pending strip, its hung mark at its end.
        sum.name_thread(0, 4, "core 0 DVE");
        sum.push(span(0, 4, PENDING, 200, 5_000_000));
        let row = &sum.rows[&0];
        assert_eq!(row.pending_us.iter().sum::<u64>(), 5_000_000);
        assert_eq!(row.hung.iter().sum::<u32>(), 1);
        assert_eq!(row.hung_engines.get("core 0 DVE"), Some(&1));
    }

    #[test]
    fn a_row_per_device_with_its_statuses() {
        let mut sum = Summary::new();
        for pid in 0..3 {
            sum.name_process(pid, &format!("device {pid}"));
            let mut h = span(pid, 1000, "host", 0, 400);
            h.name = "harvest".into();
            h.args = vec![("status", "0 NRT_SUCCESS".into())];
            sum.push(h);
            sum.push(span(pid, 1, "engine", 10, 300));
        }
        let s = sum.to_svg("host");
        assert!(s.contains(&format!(r##"height="{}""##, height(3))), "{s}");
        assert_eq!(s.matches(r##"<text class="device""##).count(), 3);
        assert!(s.contains("1 harvests: 1 x 0 NRT_SUCCESS"), "{s}");
        assert_eq!(s.matches(r##"class="hung""##).count(), 1, "no hung mark without a pending engine but the legend's");
    }
}
