//! Cell and style assertions where a text snapshot would not fail: theme roles reach the right
//! cells, NO_COLOR removes every colour, selection is styled, untrusted text is cleaned, and the
//! app redraws only when something changed.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use crate::tui_support::{NOW, options, run, snapshot, typed};
use quotatop_tui::theme::{Role, Theme};
use quotatop_tui::{App, Msg};
use ratatui::buffer::Buffer;
use ratatui::style::Color;

/// (x, y) of the first cell of `text` on the screen.
fn find_text(buf: &Buffer, text: &str) -> (u16, u16) {
    for y in 0..buf.area.height {
        let cells: Vec<&str> = (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect();
        let line: String = cells.concat();
        if let Some(byte) = line.find(text) {
            // Map the byte offset back to a cell (every cell here is one symbol).
            let mut acc = 0;
            for (x, c) in cells.iter().enumerate() {
                if acc == byte {
                    return (x as u16, y);
                }
                acc += c.len();
            }
        }
    }
    panic!("no {text:?} on screen");
}

/// (x, y) of the first cell of the line containing `text` whose symbol is `symbol`.
fn find(buf: &Buffer, line_text: &str, symbol: &str) -> (u16, u16) {
    for y in 0..buf.area.height {
        let line: String = (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect();
        if line.contains(line_text) {
            for x in 0..buf.area.width {
                if buf[(x, y)].symbol() == symbol {
                    return (x, y);
                }
            }
        }
    }
    panic!("no {symbol:?} on a line with {line_text:?}");
}

#[tokio::test]
async fn usage_bar_cells_carry_the_theme_roles_and_follow_a_theme_switch() {
    let dark = Theme::built_in("dark").unwrap();
    let light = Theme::built_in("light").unwrap();
    let (t, _) = run(80, 24, options(), vec![]).await;
    let buf = t.backend().buffer();
    let own = find(buf, "research", "█");
    let borrowed = find(buf, "research", "▓");
    assert_eq!(buf[own].fg, dark.style(Role::Own).fg.unwrap());
    assert_eq!(buf[borrowed].fg, dark.style(Role::Borrowed).fg.unwrap());
    let lent = find(buf, "prod", "▒");
    assert_eq!(buf[lent].fg, dark.style(Role::Lent).fg.unwrap());

    let (t, _) = run(80, 24, options(), typed(":theme light\n")).await;
    let buf = t.backend().buffer();
    assert_eq!(
        buf[find(buf, "research", "█")].fg,
        light.style(Role::Own).fg.unwrap()
    );
    assert_ne!(dark.style(Role::Own).fg, light.style(Role::Own).fg);

    let (t, _) = run(80, 24, options(), typed(":theme colorblind\n")).await;
    let buf = t.backend().buffer();
    let cb = Theme::built_in("colorblind").unwrap();
    assert_eq!(
        buf[find(buf, "research", "█")].fg,
        cb.style(Role::Own).fg.unwrap()
    );
}

#[tokio::test]
async fn no_color_leaves_every_cell_uncoloured() {
    let mut opts = options();
    opts.no_color = true;
    for script in ["", "2", "3", "j\n", "?", "t"] {
        let mut opts = options();
        opts.no_color = true;
        let (t, _) = run(100, 30, opts, typed(script)).await;
        for cell in t.backend().buffer().content() {
            assert_eq!(
                (cell.fg, cell.bg),
                (Color::Reset, Color::Reset),
                "script {script:?}"
            );
        }
    }
    let (t, _) = run(100, 30, opts, typed("2j")).await;
    let buf = t.backend().buffer();
    let (x, y) = find(buf, "▶", "▶");
    assert!(
        buf[(x + 3, y)]
            .modifier
            .contains(ratatui::style::Modifier::REVERSED),
        "the selected row stays visible without colour"
    );
}

#[tokio::test]
async fn the_selected_row_has_the_selected_role() {
    let dark = Theme::dark();
    let (t, _) = run(100, 24, options(), typed("2jj")).await;
    let buf = t.backend().buffer();
    let (x, y) = find(buf, "▶", "▶");
    assert_eq!(buf[(x + 4, y)].bg, dark.style(Role::Selected).bg.unwrap());
    let (_, other) = find(buf, "oversized-finetune", "o");
    assert_ne!(other, y, "the first row is not selected after two downs");
    assert_ne!(
        buf[(x + 4, other)].bg,
        dark.style(Role::Selected).bg.unwrap()
    );
}

/// The Overview's first row, a queue heading, selected at start: its name is drawn in the
/// selection's colours, never in a colour that matches the selection's background.
#[tokio::test]
async fn a_selected_queue_heading_stays_readable() {
    for name in ["dark", "light", "high-contrast", "colorblind"] {
        let theme = Theme::built_in(name).unwrap();
        let mut opts = options();
        opts.theme = theme.clone();
        let (t, _) = run(100, 24, opts, vec![]).await;
        let buf = t.backend().buffer();
        let (x, y) = find_text(buf, "▾ ml-training");
        let cell = &buf[(x + 2, y)];
        assert_ne!(
            cell.fg, cell.bg,
            "{name}: the selected queue's name is invisible"
        );
        assert_eq!(
            cell.bg,
            theme.style(Role::Selected).bg.unwrap_or(Color::Reset),
            "{name}"
        );
    }
}

#[tokio::test]
async fn loop_flag_and_misconfiguration_are_styled() {
    let dark = Theme::dark();
    // Select the second row so the first (video-pretrain) shows its own styles.
    let (t, _) = run(100, 30, options(), typed("3j")).await;
    let buf = t.backend().buffer();
    let l = find_text(buf, "LOOP");
    assert_eq!(buf[l].fg, dark.style(Role::Looping).fg.unwrap());
    assert!(buf[l].modifier.contains(ratatui::style::Modifier::REVERSED));

    let (t, _) = run(120, 30, options(), typed(":share regulated\n\t")).await;
    let buf = t.backend().buffer();
    let m = find(buf, "oversized-finetune", "M");
    assert_eq!(buf[m].fg, dark.style(Role::Critical).fg.unwrap());
}

#[tokio::test]
async fn control_characters_never_reach_the_screen() {
    for script in ["2", "2G\n", "/evil\n"] {
        let (t, _) = run(120, 40, options(), typed(script)).await;
        for cell in t.backend().buffer().content() {
            assert!(
                !cell.symbol().chars().any(char::is_control),
                "{script:?}: {:?}",
                cell.symbol()
            );
        }
    }
    let (t, _) = run(120, 40, options(), typed("2")).await;
    find_text(t.backend().buffer(), "evil\u{fffd}[2Jname\u{fffd}");
    let (t, _) = run(120, 40, options(), typed(":job research-old-run\n")).await;
    find_text(
        t.backend().buffer(),
        "AlgorithmError: loss became NaN  (step 1200)",
    );
}

#[test]
fn redraws_only_when_something_changed() {
    let now = Arc::new(AtomicI64::new(NOW));
    let clock = now.clone();
    let mut opts = options();
    opts.clock = Box::new(move || clock.load(Ordering::SeqCst));
    let mut app = App::new(opts);
    let mut terminal = ratatui::Terminal::new(ratatui::backend::TestBackend::new(80, 24)).unwrap();
    assert!(app.is_dirty(), "the first frame is drawn");
    terminal.draw(|f| app.draw(f)).unwrap();
    assert!(!app.is_dirty());

    app.update(Msg::Snapshot(Box::new(snapshot())));
    assert!(app.is_dirty());
    terminal.draw(|f| app.draw(f)).unwrap();

    app.update(Msg::Tick);
    assert!(
        !app.is_dirty(),
        "a tick within the same second changes nothing"
    );
    now.fetch_add(400, Ordering::SeqCst);
    app.update(Msg::Tick);
    assert!(!app.is_dirty(), "still the same whole second of age");
    now.fetch_add(1_000, Ordering::SeqCst);
    app.update(Msg::Tick);
    assert!(app.is_dirty(), "the age shown changed");
    terminal.draw(|f| app.draw(f)).unwrap();
    app.update(Msg::Resize);
    assert!(app.is_dirty());
}

#[tokio::test]
async fn key_binding_overrides_from_config_apply_and_problems_show() {
    let mut keys = std::collections::BTreeMap::new();
    keys.insert("jobs".to_string(), vec!["J".to_string()]);
    keys.insert("bogus".to_string(), vec!["x".to_string()]);
    let (keymap, warnings) = quotatop_tui::keymap::KeyMap::with_overrides(&keys);
    let mut opts = options();
    opts.keymap = keymap;
    opts.warnings = warnings;
    let (t, app) = run(80, 24, opts, vec![]).await;
    assert_eq!(app.screen_kind(), quotatop_tui::screen::Kind::Overview);
    let last: String = (0..80)
        .map(|x| t.backend().buffer()[(x, 23)].symbol())
        .collect();
    assert!(last.contains("[keys] unknown action `bogus`"), "{last}");

    let mut opts = options();
    opts.keymap = quotatop_tui::keymap::KeyMap::with_overrides(&keys).0;
    let (_, app) = run(80, 24, opts, typed("J")).await;
    assert_eq!(app.screen_kind(), quotatop_tui::screen::Kind::Jobs);
}

/// Issue 16: the light theme paints its own background on every cell (readable on a dark
/// terminal), the dark theme leaves the terminal's; text keeps the theme's dark foreground.
#[tokio::test]
async fn light_theme_paints_every_cell_with_its_background() {
    use ratatui::style::Color;
    let light = Theme::built_in("light").unwrap();
    let bg = light.style(Role::Text).bg.expect("light sets a background");
    for script in [":theme light\n", ":theme light\n2", ":theme light\n?"] {
        let (t, _) = run(100, 30, options(), typed(script)).await;
        let buf = t.backend().buffer();
        let unpainted = buf.content.iter().filter(|c| c.bg == Color::Reset).count();
        assert_eq!(
            unpainted, 0,
            "{script}: cells left on the terminal's background"
        );
        let default_fg = buf.content.iter().filter(|c| c.fg == Color::Reset).count();
        assert_eq!(
            default_fg, 0,
            "{script}: text left in the terminal's colour"
        );
        assert!(
            buf.content.iter().filter(|c| c.bg == bg).count() > 1000,
            "{script}"
        );
    }
    let (t, _) = run(100, 30, options(), vec![]).await;
    let buf = t.backend().buffer();
    assert!(buf.content.iter().any(|c| c.bg == Color::Reset));
}
