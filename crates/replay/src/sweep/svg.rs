//! The chart of the Markdown report: waste (lost + restart overhead + checkpoint overhead)
//! against the checkpoint interval, one line per retry limit, the chosen setting marked. Its
//! numbers are the table's rows ([`chart_points`]), written as the table writes them.

use quotatop_model::clean_text;

use super::report::gpu_h;
use super::{ClassSweep, Recommendation};

/// One point of the chart: a row of the class's table.
#[derive(Debug, Clone, PartialEq)]
pub struct ChartPoint {
    pub interval: String,
    pub limit: String,
    /// Its x position: the interval's place in the order given.
    pub x: usize,
    pub waste_gpu_hours: f64,
    pub chosen: bool,
}

/// The chart's points, from the class's rows in their order.
pub fn chart_points(c: &ClassSweep) -> Vec<ChartPoint> {
    let mut intervals: Vec<String> = Vec::new();
    let chosen = match c.recommendation {
        Recommendation::Chosen { best, .. } => Some(best),
        Recommendation::NoneKeeps => None,
    };
    c.points
        .iter()
        .enumerate()
        .map(|(i, (s, f))| {
            let interval = s.interval_label();
            let x = intervals
                .iter()
                .position(|v| *v == interval)
                .unwrap_or_else(|| {
                    intervals.push(interval.clone());
                    intervals.len() - 1
                });
            ChartPoint {
                interval,
                limit: s.limit_label(),
                x,
                waste_gpu_hours: f.waste_gpu_hours(),
                chosen: chosen == Some(i),
            }
        })
        .collect()
}

const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 300.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 130.0;
const TOP: f64 = 30.0;
const BOTTOM: f64 = 40.0;
/// Colour-blind-safe (Okabe–Ito), one per retry limit in the order given.
const COLOURS: [&str; 7] = [
    "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000",
];

fn esc(s: &str) -> String {
    clean_text(s)
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The class's chart as an inline SVG element.
pub fn svg(c: &ClassSweep) -> String {
    let points = chart_points(c);
    let xs = points.iter().map(|p| p.x + 1).max().unwrap_or(1);
    let ymax = points
        .iter()
        .map(|p| p.waste_gpu_hours)
        .fold(0.0_f64, f64::max)
        .max(1e-9);
    let px = |x: usize| LEFT + (WIDTH - LEFT - RIGHT) * (x as f64 + 0.5) / xs as f64;
    let py = |y: f64| TOP + (HEIGHT - TOP - BOTTOM) * (1.0 - y / ymax);
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{HEIGHT}\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" font-family=\"sans-serif\" font-size=\"11\">\n<title>Class {}: waste + overhead (GPU-h) against the checkpoint interval</title>\n",
        esc(&c.class.name)
    );
    out.push_str(&format!(
        "<text x=\"{LEFT}\" y=\"18\">class {}: waste (lost + restart + checkpoint overhead), GPU-h</text>\n",
        esc(&c.class.name)
    ));
    let (x0, x1, y0, y1) = (LEFT, WIDTH - RIGHT, TOP, HEIGHT - BOTTOM);
    out.push_str(&format!(
        "<path d=\"M{x0} {y0} V{y1} H{x1}\" fill=\"none\" stroke=\"#444\"/>\n<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n<text x=\"{}\" y=\"{y1}\" text-anchor=\"end\">0</text>\n",
        x0 - 4.0,
        y0 + 4.0,
        gpu_h(ymax),
        x0 - 4.0
    ));
    let mut labelled: Vec<usize> = Vec::new();
    for p in &points {
        if labelled.contains(&p.x) {
            continue;
        }
        labelled.push(p.x);
        out.push_str(&format!(
            "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
            px(p.x),
            y1 + 16.0,
            esc(&p.interval)
        ));
    }
    out.push_str(&format!(
        "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">checkpoint interval</text>\n",
        (x0 + x1) / 2.0,
        y1 + 32.0
    ));
    series(&mut out, &points, &px, &py, x1);
    if let Some(p) = points.iter().find(|p| p.chosen) {
        out.push_str(&format!(
            "<circle class=\"chosen\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"8\" fill=\"none\" stroke=\"#D55E00\" stroke-width=\"2\" data-interval=\"{}\" data-limit=\"{}\" data-waste=\"{}\"/>\n<text x=\"{:.1}\" y=\"{:.1}\">chosen</text>\n",
            px(p.x),
            py(p.waste_gpu_hours),
            esc(&p.interval),
            esc(&p.limit),
            gpu_h(p.waste_gpu_hours),
            px(p.x) + 10.0,
            py(p.waste_gpu_hours) - 10.0
        ));
    }
    out.push_str("</svg>");
    out
}

/// One line and its points per retry limit, with its legend entry.
fn series(
    out: &mut String,
    points: &[ChartPoint],
    px: &dyn Fn(usize) -> f64,
    py: &dyn Fn(f64) -> f64,
    x1: f64,
) {
    let mut limits: Vec<&str> = Vec::new();
    for p in points {
        if !limits.contains(&p.limit.as_str()) {
            limits.push(&p.limit);
        }
    }
    for (k, limit) in limits.iter().enumerate() {
        let colour = COLOURS[k % COLOURS.len()];
        let series: Vec<&ChartPoint> = points.iter().filter(|p| p.limit == *limit).collect();
        let line: Vec<String> = series
            .iter()
            .map(|p| format!("{:.1},{:.1}", px(p.x), py(p.waste_gpu_hours)))
            .collect();
        out.push_str(&format!(
            "<polyline points=\"{}\" fill=\"none\" stroke=\"{colour}\" stroke-width=\"1.5\"/>\n",
            line.join(" ")
        ));
        for p in series {
            out.push_str(&format!(
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{colour}\" data-interval=\"{}\" data-limit=\"{}\" data-waste=\"{}\"><title>{}, retry limit {}: {} GPU-h</title></circle>\n",
                px(p.x),
                py(p.waste_gpu_hours),
                esc(&p.interval),
                esc(&p.limit),
                gpu_h(p.waste_gpu_hours),
                esc(&p.interval),
                esc(&p.limit),
                gpu_h(p.waste_gpu_hours)
            ));
        }
        let ly = TOP + 14.0 * k as f64;
        out.push_str(&format!(
            "<rect x=\"{}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{colour}\"/><text x=\"{}\" y=\"{}\">retry limit {}</text>\n",
            x1 + 10.0,
            ly - 9.0,
            x1 + 24.0,
            ly,
            esc(limit)
        ));
    }
}
