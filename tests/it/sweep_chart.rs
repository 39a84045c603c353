//! `quotatop sweep --chart`: the console chart's points are the table's rows (one figure, one
//! definition), it draws them at 80x24, and without a terminal it refuses before replaying.

use std::path::{Path, PathBuf};
use std::process::Command;

use clap::Parser;
use quotatop::cli::{Cli, Command as Sub};
use quotatop_replay::sweep::Recommendation;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn args() -> quotatop::cli::SweepArgs {
    let trace = fixture("sweep_trace.csv");
    let config = fixture("sweep_small.toml");
    let cli = Cli::try_parse_from([
        "quotatop",
        "sweep",
        "--trace",
        trace.to_str().unwrap(),
        "--config",
        config.to_str().unwrap(),
        "--threads",
        "1",
    ])
    .unwrap();
    match cli.command {
        Some(Sub::Sweep(a)) => a,
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_chart_s_points_are_the_table_s_rows() {
    let (swept, _) = quotatop::commands::sweep::compute(&args(), false).unwrap();
    let charts = quotatop::commands::sweep::charts(&swept);
    assert_eq!(charts.len(), swept.len());
    assert!(!swept.is_empty());
    let mut chosen_seen = 0;
    for (chart, c) in charts.iter().zip(&swept) {
        assert_eq!(chart.name, c.class.name);
        assert_eq!(chart.points.len(), c.points.len(), "{}", c.class.name);
        let best = match c.recommendation {
            Recommendation::Chosen { best, .. } => Some(best),
            Recommendation::NoneKeeps => None,
        };
        for (i, (p, (setting, figures))) in chart.points.iter().zip(&c.points).enumerate() {
            assert_eq!(p.interval, setting.interval_label());
            assert_eq!(p.limit, setting.limit_label());
            assert_eq!(p.waste_gpu_hours, figures.waste_gpu_hours());
            assert_eq!(p.chosen, best == Some(i), "{} row {i}", c.class.name);
            chosen_seen += usize::from(p.chosen);
        }
    }
    assert!(chosen_seen > 0, "no class has a chosen point to mark");
    // The real result drawn at 80x24: its class, its axes, the chosen setting.
    let Some((k, c)) = swept
        .iter()
        .enumerate()
        .find(|(_, c)| matches!(c.recommendation, Recommendation::Chosen { .. }))
    else {
        unreachable!()
    };
    let best = match c.recommendation {
        Recommendation::Chosen { best, .. } => best,
        Recommendation::NoneKeeps => unreachable!(),
    };
    let (s, _) = &c.points[best];
    let mut t = Terminal::new(TestBackend::new(80, 24)).unwrap();
    t.draw(|f| quotatop_tui::sweep_chart::draw(f, f.area(), &charts, k))
        .unwrap();
    let buf = t.backend().buffer().clone();
    let screen: String = (0..24)
        .map(|y| {
            let row: String = (0..80).map(|x| buf[(x, y)].symbol().to_string()).collect();
            row + "\n"
        })
        .collect();
    assert!(
        screen.contains(&format!("class {}", c.class.name)),
        "{screen}"
    );
    assert!(screen.contains("checkpoint interval"), "{screen}");
    assert!(screen.contains("GPU-h"), "{screen}");
    assert!(
        screen.contains(&format!(
            "chosen {} / limit {}",
            s.interval_label(),
            s.limit_label()
        )),
        "{screen}"
    );
}

/// Without a terminal the chart is refused at once, saying what to run instead.
#[test]
fn the_chart_needs_a_terminal_and_says_so() {
    let trace = fixture("sweep_trace.csv");
    let config = fixture("sweep_small.toml");
    let out = Command::new(env!("CARGO_BIN_EXE_quotatop"))
        .args(["sweep", "--trace", trace.to_str().unwrap()])
        .args(["--config", config.to_str().unwrap(), "--chart"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("needs a terminal"), "{err}");
    assert!(
        !err.contains("replays of"),
        "replayed before refusing: {err}"
    );
}
