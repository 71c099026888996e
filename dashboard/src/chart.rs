//! The report's charts, drawn as inline SVG: a time axis, horizontal bars, and step lines.
//! Hover text is SVG `<title>`, which browsers show without a script.

use crate::fmt_bytes;

/// Width of every chart, in SVG units (the page scales it).
pub(crate) const WIDTH: f64 = 1100.0;
/// Room for row labels left of a chart's plot area.
pub(crate) const LABEL: f64 = 110.0;
/// Width of a time chart's plot area (room for the last tick's label on the right).
const PLOT: f64 = WIDTH - LABEL - 40.0;

/// Colours for ops, by the order in which the report first met them.
const PALETTE: [&str; 10] = [
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#bab0ac",
];

/// The colour of the `i`th op.
pub(crate) fn colour(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// `s` with HTML's special characters escaped (for text and attribute values).
pub(crate) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Maps nanoseconds `t0..t1` onto the plot area right of the labels.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TimeAxis {
    t0: u64,
    t1: u64,
}

impl TimeAxis {
    /// An axis over `t0..t1` (widened to at least a microsecond).
    pub(crate) fn new(t0: u64, t1: u64) -> TimeAxis {
        TimeAxis {
            t0,
            t1: t1.max(t0 + 1000),
        }
    }

    /// The first instant shown.
    pub(crate) fn start(&self) -> u64 {
        self.t0
    }

    /// The last instant shown.
    pub(crate) fn end(&self) -> u64 {
        self.t1
    }

    /// The x of time `t`.
    pub(crate) fn x(&self, t: u64) -> f64 {
        let span = (self.t1 - self.t0) as f64;
        LABEL + (t.saturating_sub(self.t0) as f64 / span) * PLOT
    }

    /// Nanoseconds one SVG unit stands for.
    pub(crate) fn ns_per_unit(&self) -> f64 {
        (self.t1 - self.t0) as f64 / PLOT
    }

    /// Time since the axis's start, for people.
    pub(crate) fn label(&self, t: u64) -> String {
        let ms = t.saturating_sub(self.t0) as f64 / 1e6;
        if self.t1 - self.t0 >= 10_000_000_000 {
            format!("{:.1} s", ms / 1e3)
        } else {
            format!("{ms:.1} ms")
        }
    }

    /// Grid lines and labels for about eight ticks between `top` and `bottom`.
    pub(crate) fn ticks(&self, top: f64, bottom: f64) -> String {
        let mut out = String::new();
        for i in 0..=8u64 {
            let t = self.t0 + (self.t1 - self.t0) * i / 8;
            let x = self.x(t);
            out.push_str(&format!(
                "<line x1=\"{x:.1}\" y1=\"{top:.1}\" x2=\"{x:.1}\" y2=\"{bottom:.1}\" class=\"grid\"/>\
                 <text x=\"{x:.1}\" y=\"{:.1}\" class=\"tick\">{}</text>",
                bottom + 12.0,
                self.label(t)
            ));
        }
        out
    }
}

/// One bar of a [`bars`] chart.
#[derive(Clone, Debug)]
pub(crate) struct Bar {
    /// The row's label.
    pub label: String,
    /// Its length, relative to the longest bar.
    pub value: f64,
    /// The text after the bar (and its hover text).
    pub text: String,
    /// Its colour.
    pub colour: &'static str,
}

/// A horizontal bar chart, one row per bar, scaled to `max` (the largest value if 0).
pub(crate) fn bars(rows: &[Bar], max: f64) -> String {
    let row = 20.0;
    let height = row * rows.len() as f64 + 10.0;
    let max = if max > 0.0 {
        max
    } else {
        rows.iter().map(|b| b.value).fold(0.0, f64::max)
    };
    let room = WIDTH - LABEL - 260.0;
    let mut out = format!("<svg viewBox=\"0 0 {WIDTH} {height}\" width=\"100%\">");
    for (i, b) in rows.iter().enumerate() {
        let y = 5.0 + row * i as f64;
        let w = if max > 0.0 { b.value / max * room } else { 0.0 };
        out.push_str(&format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" class=\"label\">{}</text>\
             <rect x=\"{LABEL}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{:.1}\" fill=\"{}\">\
             <title>{}: {}</title></rect>\
             <text x=\"{:.1}\" y=\"{:.1}\" class=\"value\">{}</text>",
            LABEL - 6.0,
            y + 13.0,
            esc(&b.label),
            row - 6.0,
            b.colour,
            esc(&b.label),
            esc(&b.text),
            LABEL + w + 6.0,
            y + 13.0,
            esc(&b.text),
        ));
    }
    out.push_str("</svg>");
    out
}

/// One series of a [`lines`] chart: (time, value) points in time order.
#[derive(Clone, Debug)]
pub(crate) struct Series {
    /// Its name, in the legend.
    pub name: &'static str,
    /// Its colour.
    pub colour: &'static str,
    /// The points.
    pub points: Vec<(u64, u64)>,
}

/// A step chart of byte counts over `axis`, with a legend.
pub(crate) fn lines(series: &[Series], axis: TimeAxis) -> String {
    let (top, bottom) = (20.0, 180.0);
    let max = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .max()
        .unwrap_or(0)
        .max(1);
    let y = |v: u64| bottom - v as f64 / max as f64 * (bottom - top);
    let mut out = format!(
        "<svg viewBox=\"0 0 {WIDTH} 210\" width=\"100%\">{}\
         <text x=\"{:.1}\" y=\"{top:.1}\" class=\"label\">{}</text>\
         <text x=\"{:.1}\" y=\"{bottom:.1}\" class=\"label\">0</text>",
        axis.ticks(top, bottom),
        LABEL - 6.0,
        fmt_bytes(max),
        LABEL - 6.0,
    );
    for (i, s) in series.iter().enumerate() {
        let mut path = String::new();
        let mut last = None;
        for &(t, v) in &s.points {
            let x = axis.x(t);
            match last {
                None => path.push_str(&format!("M{x:.1},{:.1}", y(v))),
                Some(prev) => path.push_str(&format!("L{x:.1},{:.1}L{x:.1},{:.1}", y(prev), y(v))),
            }
            last = Some(v);
        }
        out.push_str(&format!(
            "<path d=\"{path}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\"><title>{}</title></path>\
             <rect x=\"{:.1}\" y=\"2\" width=\"10\" height=\"10\" fill=\"{}\"/>\
             <text x=\"{:.1}\" y=\"11\" class=\"legend\">{}</text>",
            s.colour,
            s.name,
            LABEL + 200.0 * i as f64,
            s.colour,
            LABEL + 14.0 + 200.0 * i as f64,
            s.name,
        ));
    }
    out.push_str("</svg>");
    out
}
