//! The console at AWS's maximum (issue 32): scenarios/max-org.toml (20 quota shares with long
//! team names, 5 instance types, RESERVE / LEND / LEND_AND_BORROW mixed, about 120 jobs) run in
//! the emulator on a manual clock and read through the real poller, then drawn at 80×24, 120×40
//! and 200×60: every share on one screen in the compact view, names and instance types whole, the
//! attention panel sized to its content; `w` and space expand, `i` answers "who has the p5s?".

use crate::data_support::batch_client;
use crate::tui_support::{options, run_with, screen_text, typed};
use quotatop_analysis::LoopRule;
use quotatop_aws::poll::{self, PollConfig};
use quotatop_emulator::{self as emulator, ClockMode, EmulatorConfig, Scenario};
use quotatop_model::Snapshot;
use quotatop_tui::AppOptions;

const START: i64 = 1_770_000_000_000;
/// Simulated minutes the world runs before it is read.
const MINUTES: i64 = 50;

/// The max-org world after [`MINUTES`], read as the console's poller reads it; its times are
/// the service's, so the screens are the same on every run.
async fn max_org() -> Snapshot {
    let scenario = Scenario::load("scenarios/max-org.toml".as_ref()).unwrap();
    let mut config = EmulatorConfig::from_scenario(scenario).unwrap();
    config.clock = ClockMode::Manual;
    config.start_ms = Some(START);
    config.deterministic_ids = true;
    let h = emulator::start(config).await.unwrap();
    h.advance(MINUTES * 60_000).unwrap();
    let client = batch_client(&h).await;
    let config = PollConfig {
        queues: vec!["org-training".to_string()],
        ..PollConfig::default()
    };
    let mut s = poll::refresh_once(&client, config).await.unwrap();
    // The poller stamps its own (wall) clock; the service's makes the screens repeatable.
    let now = START + MINUTES * 60_000;
    s.taken_at = now;
    s.health = quotatop_model::PollHealth {
        state: quotatop_model::HealthState::Healthy,
        ..Default::default()
    };
    s.source.endpoint = Some("http://127.0.0.1:4566".to_string());
    for q in &mut s.queues {
        q.refreshed_at = Some(now);
        for j in &mut q.jobs {
            j.listed_at = now;
            j.described_at = j.described_at.map(|_| now);
        }
    }
    s
}

fn opts() -> AppOptions {
    AppOptions {
        clock: Box::new(|| START + MINUTES * 60_000 + 1_000),
        loop_rule: LoopRule::default(),
        ..options()
    }
}

/// The share names of the snapshot.
fn shares(s: &Snapshot) -> Vec<String> {
    s.queues[0].shares.iter().map(|s| s.name.clone()).collect()
}

/// Lines of the Overview's table (between its top border and the legend).
fn table_lines(screen: &str) -> Vec<&str> {
    screen
        .lines()
        .skip_while(|l| !l.starts_with("┌ Overview"))
        .take_while(|l| !l.starts_with("└"))
        .collect()
}

/// At 120×40 the compact view holds all 20 shares, each on one row with its name whole, its
/// most constrained type whole, and the attention panel below sized to its items.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_share_on_one_screen_at_120x40() {
    let s = max_org().await;
    assert_eq!(shares(&s).len(), 20);
    let jobs = s.queues[0].jobs.len();
    assert!((100..=140).contains(&jobs), "{jobs} jobs");
    let (t, _) = run_with(120, 40, opts(), vec![s.clone()], typed("")).await;
    let text = screen_text(&t);
    assert!(text.contains("Overview · one row per share"), "{text}");
    let table = table_lines(&text);
    for name in shares(&s) {
        let rows = table
            .iter()
            .filter(|l| l.contains(&format!(" {name} ")))
            .count();
        assert_eq!(rows, 1, "{name} whole on one row:\n{text}");
    }
    assert!(text.contains("trn1.32xlarge 1/2"), "{text}");
    assert!(
        !text.contains("trn1.32xlarg "),
        "an instance type cut:\n{text}"
    );
    // Kinds of trouble: misconfigured jobs, urgent work waiting in LEND shares at their limit.
    let counts = check_panel(&text, false);
    assert!(counts.len() >= 2, "{counts:?}");
    insta::assert_snapshot!("max_org_overview_120x40", t.backend());
}

/// The kinds of attention item, most urgent first.
/// The panel's kinds in its order: what costs now first (issue 45 item 8).
const KINDS: [&str; 6] = ["BUDGET", "LOOP", "WAIT", "LIMIT", "POLICY", "MISCONFIG"];

/// The panel: its title counts the items by kind, most urgent first, the counts adding up;
/// no blank line inside; when `all` (room for every item), each kind's lines as many as its
/// count and in that order. Returns the counts.
fn check_panel(text: &str, all: bool) -> Vec<(usize, String)> {
    let title = text
        .lines()
        .find(|l| l.contains("Needs attention"))
        .unwrap_or_else(|| panic!("no panel:\n{text}"));
    let (n, kinds) = title
        .split_once("Needs attention ")
        .and_then(|(_, r)| r.split_once("  tab"))
        .and_then(|(counts, _)| counts.split_once(": "))
        .unwrap_or_else(|| panic!("{title}"));
    let n: usize = n.parse().unwrap();
    let counts: Vec<(usize, String)> = kinds
        .split(" · ")
        .map(|k| {
            let (c, kind) = k.split_once(' ').unwrap();
            (c.parse().unwrap(), kind.to_string())
        })
        .collect();
    assert_eq!(counts.iter().map(|(c, _)| c).sum::<usize>(), n, "{title}");
    let rank = |k: &str| KINDS.iter().position(|x| *x == k).unwrap();
    assert!(
        counts.windows(2).all(|w| rank(&w[0].1) < rank(&w[1].1)),
        "{title}"
    );
    // An item's first line (its tag); an item's next lines (its text wrapped, up to three
    // lines an item) and the lines left blank under short items are not counted.
    let inside: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.contains("Needs attention"))
        .skip(1)
        .take_while(|l| !l.starts_with("└"))
        .filter(|l| !l.trim_start_matches('│').starts_with("            "))
        .collect();
    let tags: Vec<&str> = inside
        .iter()
        .filter_map(|l| l.trim_start_matches('│').split_whitespace().next())
        .collect();
    assert_eq!(
        tags.len(),
        inside.len(),
        "a tag on each item's first line:\n{text}"
    );
    if all {
        // A line per item, but more than three of a kind (not loops) are one line that says
        // how many ("8 in 4 shares, the first: …").
        let mut expected = Vec::new();
        for (c, k) in &counts {
            let folded = *c > 3 && !matches!(k.as_str(), "LOOP" | "BUDGET");
            expected.extend(std::iter::repeat_n(k.as_str(), if folded { 1 } else { *c }));
            if folded {
                assert!(
                    text.contains(&format!("{c} in ")),
                    "{k} not grouped:\n{text}"
                );
            }
        }
        assert_eq!(tags, expected, "{text}");
    }
    counts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_maximum_at_80x24_and_200x60() {
    let s = max_org().await;
    let (t, _) = run_with(80, 24, opts(), vec![s.clone()], typed("")).await;
    let text = screen_text(&t);
    // The first share's name whole, and what needs attention in words.
    assert!(text.contains(" team-00-recommendation-ranking "), "{text}");
    check_panel(&text, false);
    insta::assert_snapshot!("max_org_overview_80x24", t.backend());
    let (t, _) = run_with(200, 60, opts(), vec![s.clone()], typed("")).await;
    let text = screen_text(&t);
    for name in shares(&s) {
        assert!(text.contains(&format!(" {name} ")), "{name}:\n{text}");
    }
    // Every item, each kind as often as its title says.
    check_panel(&text, true);
    insta::assert_snapshot!("max_org_overview_200x60", t.backend());
}

/// "Who has the p5s?": `i` shows, under each instance type's heading (its use of the
/// environment's capacity), every share that has or uses it, the busiest first, with its use
/// against its limit and whom it borrows from; the figures are the analysis's own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn by_instance_type_answers_who_has_the_p5s() {
    let s = max_org().await;
    let (t, app) = run_with(120, 40, opts(), vec![s.clone()], typed("i")).await;
    assert_eq!(app.screen_kind(), quotatop_tui::screen::Kind::Overview);
    let text = screen_text(&t);
    assert!(text.contains("Overview · by instance type"), "{text}");
    let usage = quotatop_analysis::share_usage(&s.queues[0]);
    for ty in ["ml.p5.48xlarge", "ml.p4d.24xlarge"] {
        let short = ty.trim_start_matches("ml.");
        let mut rows: Vec<&quotatop_analysis::ShareUsage> =
            usage.iter().filter(|u| u.instance_type == ty).collect();
        rows.sort_by_key(|u| std::cmp::Reverse((u.used, u.limit)));
        let lines: Vec<&str> = text
            .lines()
            .skip_while(|l| !l.contains(&format!("▸ {short} ")))
            .collect();
        let capacity = s.queues[0]
            .environment
            .capacity
            .iter()
            .find(|c| c.instance_type == ty)
            .unwrap()
            .max_capacity;
        let used: u32 = rows.iter().map(|u| u.used).sum();
        assert!(
            lines[0].contains(&format!(" {used}/{capacity} ")),
            "{short} heading:\n{text}"
        );
        assert!(rows.len() >= 5, "{short}: {} shares", rows.len());
        for (u, line) in rows.iter().zip(&lines[1..]) {
            assert!(
                line.contains(&format!(" {} ", u.share)),
                "{}:\n{text}",
                u.share
            );
            assert!(
                line.contains(&format!(" {}/{} ", u.used, u.limit)),
                "{line}"
            );
            if let Some((lender, n)) = u.borrowed_from.first() {
                assert!(line.contains(&format!("{lender} {n}")), "{line}");
            }
        }
    }
    // Someone holds p5s, and someone borrows p4ds: the view has a story to tell.
    assert!(
        usage
            .iter()
            .any(|u| u.instance_type == "ml.p5.48xlarge" && u.used > 0)
    );
    assert!(
        usage
            .iter()
            .any(|u| u.borrowed > 0 && !u.borrowed_from.is_empty())
    );
    insta::assert_snapshot!("max_org_by_type_120x40", t.backend());
    // `i` again: back to the shares.
    let (t, _) = run_with(120, 40, opts(), vec![s], typed("ii")).await;
    assert!(screen_text(&t).contains("Overview · one row per share"));
}

/// `w` shows a row per share and instance type (and back); space expands the selected share
/// of the compact view to its per-type rows (and folds it again).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wide_and_expand_show_the_per_type_rows() {
    let s = max_org().await;
    let rows = quotatop_analysis::share_usage(&s.queues[0]).len();
    let (t, _) = run_with(120, 40, opts(), vec![s.clone()], typed("w")).await;
    let text = screen_text(&t);
    assert!(
        text.contains("Overview · a row per share and instance type"),
        "{text}"
    );
    // Every share × type is a row (and the queue heading): the title counts them.
    assert!(text.contains(&format!("[{}]", rows + 1)), "{text}");
    assert!(text.contains(" trn1.32xlarge "), "{text}");
    let (t, _) = run_with(120, 40, opts(), vec![s.clone()], typed("ww")).await;
    assert!(screen_text(&t).contains("Overview · one row per share [21]"));

    // The heading, team-00, team-01: its two types under it.
    let (t, _) = run_with(120, 40, opts(), vec![s.clone()], typed("jj ")).await;
    let text = screen_text(&t);
    let ls: Vec<&str> = text.lines().collect();
    let at = ls
        .iter()
        .position(|l| l.contains(" team-01-vision-foundation-models "))
        .unwrap();
    assert!(ls[at + 1].contains("├ g5.12xlarge"), "{text}");
    assert!(ls[at + 2].contains("└ p5.48xlarge"), "{text}");
    assert!(
        ls[at + 3].contains(" team-02-speech-recognition "),
        "{text}"
    );
    assert!(text.contains("[23]"), "{text}");
    let (t, _) = run_with(120, 40, opts(), vec![s], typed("jj  ")).await;
    assert!(screen_text(&t).contains("[21]"));
}
