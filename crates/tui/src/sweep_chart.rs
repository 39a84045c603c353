//! `quotatop sweep --chart`: one screen showing a sweep's result as ratatui's `Chart`, waste +
//! overhead (GPU-h) against the checkpoint interval for one class, one line per retry limit, the
//! chosen setting marked. Left/right change the class, q (or Esc) quits. The points are given
//! (the sweep's `chart_points`, the rows of the report's table); this file only draws them.

use crossterm::event::{self, Event, KeyCode, KeyEventKind};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Block, Borders, Chart, Dataset, GraphType, Paragraph};

use super::TuiError;
use super::terminal::TerminalGuard;

/// One point: a row of the class's table.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepPoint {
    pub interval: String,
    pub limit: String,
    /// The interval's place in the order given.
    pub x: usize,
    pub waste_gpu_hours: f64,
    pub chosen: bool,
}

/// One class's chart.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepClassChart {
    pub name: String,
    pub points: Vec<SweepPoint>,
}

/// Colour-blind-safe (Okabe–Ito), one per retry limit in the order given, as the report's SVG.
const COLOURS: [Color; 7] = [
    Color::Rgb(0x00, 0x72, 0xB2),
    Color::Rgb(0xE6, 0x9F, 0x00),
    Color::Rgb(0x00, 0x9E, 0x73),
    Color::Rgb(0xCC, 0x79, 0xA7),
    Color::Rgb(0x56, 0xB4, 0xE9),
    Color::Rgb(0xD5, 0x5E, 0x00),
    Color::White,
];

/// A class's lines: its retry limits and intervals in the order given, one series per limit,
/// the chosen point and its legend.
struct Lines<'a> {
    limits: Vec<&'a str>,
    intervals: Vec<(usize, &'a str)>,
    series: Vec<Vec<(f64, f64)>>,
    chosen: Vec<(f64, f64)>,
    chosen_name: String,
}

fn lines(c: &SweepClassChart) -> Lines<'_> {
    let mut limits: Vec<&str> = Vec::new();
    let mut intervals: Vec<(usize, &str)> = Vec::new();
    for p in &c.points {
        if !limits.contains(&p.limit.as_str()) {
            limits.push(&p.limit);
        }
        if !intervals.iter().any(|(x, _)| *x == p.x) {
            intervals.push((p.x, &p.interval));
        }
    }
    intervals.sort_by_key(|(x, _)| *x);
    let series: Vec<Vec<(f64, f64)>> = limits
        .iter()
        .map(|l| {
            c.points
                .iter()
                .filter(|p| p.limit == *l)
                .map(|p| (p.x as f64, p.waste_gpu_hours))
                .collect()
        })
        .collect();
    let chosen: Vec<(f64, f64)> = c
        .points
        .iter()
        .filter(|p| p.chosen)
        .map(|p| (p.x as f64, p.waste_gpu_hours))
        .collect();
    let chosen_name = match c.points.iter().find(|p| p.chosen) {
        Some(p) => format!("chosen {} / limit {}", p.interval, p.limit),
        None => "no setting keeps the promise".to_string(),
    };
    Lines {
        limits,
        intervals,
        series,
        chosen,
        chosen_name,
    }
}

/// Draws class `index` of `classes` (of `classes.len()`) into `area`.
pub fn draw(frame: &mut Frame<'_>, area: Rect, classes: &[SweepClassChart], index: usize) {
    let Some(c) = classes.get(index) else {
        frame.render_widget(Paragraph::new("no class to chart"), area);
        return;
    };
    let Lines {
        limits,
        intervals,
        series,
        chosen,
        chosen_name,
    } = lines(c);
    let mut datasets: Vec<Dataset<'_>> = limits
        .iter()
        .zip(&series)
        .enumerate()
        .map(|(i, (l, data))| {
            Dataset::default()
                .name(format!("limit {l}"))
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(Style::default().fg(COLOURS[i % COLOURS.len()]))
                .data(data)
        })
        .collect();
    datasets.push(
        Dataset::default()
            .name(chosen_name)
            .marker(Marker::Block)
            .graph_type(GraphType::Scatter)
            .style(Style::default().fg(Color::Red))
            .data(&chosen),
    );
    let ymax = c
        .points
        .iter()
        .map(|p| p.waste_gpu_hours)
        .fold(0.0_f64, f64::max)
        .max(1e-9);
    // Bounds 0..last: ratatui spreads the labels evenly from the first to the last, so each
    // interval's label sits over its points.
    let xmax = intervals.last().map_or(0, |(x, _)| *x) as f64;
    let title = format!(
        " class {} ({}/{}): waste + overhead, GPU-h · ←/→ class · q quit ",
        c.name,
        index + 1,
        classes.len()
    );
    let chart = Chart::new(datasets)
        .block(Block::default().borders(Borders::ALL).title(title))
        .x_axis(
            Axis::default()
                .title("checkpoint interval")
                .bounds([0.0, xmax.max(1.0)])
                .labels(
                    intervals
                        .iter()
                        .map(|(_, s)| Span::raw(s.to_string()))
                        .collect::<Vec<_>>(),
                ),
        )
        .y_axis(
            Axis::default()
                .title("GPU-h")
                .bounds([0.0, ymax * 1.05])
                .labels(vec![
                    Line::from("0"),
                    Line::from(format!("{:.1}", ymax / 2.0)),
                    Line::from(format!("{ymax:.1}")),
                ]),
        )
        .legend_position(Some(ratatui::widgets::LegendPosition::TopRight))
        .hidden_legend_constraints((
            ratatui::layout::Constraint::Percentage(60),
            ratatui::layout::Constraint::Percentage(60),
        ));
    frame.render_widget(chart, area);
}

/// What a key does to the class shown; `None` quits.
pub fn on_key(code: KeyCode, index: usize, len: usize) -> Option<usize> {
    match code {
        KeyCode::Char('q') | KeyCode::Esc => None,
        KeyCode::Right | KeyCode::Char('l') => Some((index + 1) % len.max(1)),
        KeyCode::Left | KeyCode::Char('h') => Some((index + len.max(1) - 1) % len.max(1)),
        _ => Some(index),
    }
}

/// Shows the charts until q; needs a terminal.
pub fn run(classes: &[SweepClassChart]) -> Result<(), TuiError> {
    super::require_terminal()?;
    let mut guard = TerminalGuard::enter()?;
    let mut index = 0;
    loop {
        guard.terminal.draw(|f| draw(f, f.area(), classes, index))?;
        if let Event::Key(k) = event::read()? {
            if k.kind != KeyEventKind::Press {
                continue;
            }
            match on_key(k.code, index, classes.len()) {
                Some(i) => index = i,
                None => return Ok(()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    fn point(interval: &str, x: usize, limit: &str, w: f64, chosen: bool) -> SweepPoint {
        SweepPoint {
            interval: interval.into(),
            limit: limit.into(),
            x,
            waste_gpu_hours: w,
            chosen,
        }
    }

    fn classes() -> Vec<SweepClassChart> {
        vec![
            SweepClassChart {
                name: "train-large".into(),
                points: vec![
                    point("15m", 0, "1", 4.0, false),
                    point("1h", 1, "1", 2.0, true),
                    point("none", 2, "1", 8.0, false),
                    point("15m", 0, "unlimited", 5.0, false),
                    point("1h", 1, "unlimited", 3.0, false),
                    point("none", 2, "unlimited", 9.0, false),
                ],
            },
            SweepClassChart {
                name: "normal".into(),
                points: vec![point("30m", 0, "0", 1.0, false)],
            },
        ]
    }

    fn screen(classes: &[SweepClassChart], index: usize) -> String {
        let mut t = Terminal::new(TestBackend::new(80, 24)).unwrap();
        t.draw(|f| draw(f, f.area(), classes, index)).unwrap();
        let buf = t.backend().buffer().clone();
        (0..24)
            .map(|y| {
                (0..80)
                    .map(|x| buf[(x, y)].symbol().to_string())
                    .collect::<String>()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn the_chart_shows_the_class_its_axes_and_the_chosen_point() {
        let s = screen(&classes(), 0);
        assert!(s.contains("class train-large (1/2)"), "{s}");
        for label in [
            "15m",
            "1h",
            "none",
            "checkpoint interval",
            "GPU-h",
            "9.0",
            "0",
        ] {
            assert!(s.contains(label), "{label} missing:\n{s}");
        }
        assert!(s.contains("chosen 1h / limit 1"), "{s}");
        assert!(s.contains("limit unlimited"), "{s}");
        // The chosen point is drawn as a block where 1h meets 2.0 GPU-h.
        assert!(s.contains('█'), "{s}");
        let other = screen(&classes(), 1);
        assert!(other.contains("class normal (2/2)"), "{other}");
        assert!(other.contains("no setting keeps the promise"), "{other}");
    }

    #[test]
    fn left_and_right_change_the_class_and_q_quits() {
        assert_eq!(on_key(KeyCode::Right, 0, 2), Some(1));
        assert_eq!(on_key(KeyCode::Right, 1, 2), Some(0));
        assert_eq!(on_key(KeyCode::Left, 0, 2), Some(1));
        assert_eq!(on_key(KeyCode::Char('x'), 1, 2), Some(1));
        assert_eq!(on_key(KeyCode::Char('q'), 1, 2), None);
    }
}
