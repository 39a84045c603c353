//! `?` help, generated from the key-binding table (the same one the footer hints come from) and
//! the command list.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear};

use super::command::COMMANDS;
use super::keymap::{KeyMap, Mode};
use super::list::ListState;
use super::theme::{Role, Theme};

pub fn lines(keymap: &KeyMap, theme: &Theme) -> Vec<Line<'static>> {
    let key_style = theme.style(Role::Accent);
    let mut out = Vec::new();
    for (mode, heading) in [
        (Mode::Normal, "Keys"),
        (Mode::Prompt, "While typing after : or /"),
        (Mode::Dialog, "In the priority dialog"),
    ] {
        out.push(Line::from(Span::styled(heading, theme.style(Role::Header))));
        for (b, keys) in keymap.bindings(mode) {
            let keys: Vec<String> = keys.iter().map(|k| k.label()).collect();
            out.push(Line::from(vec![
                Span::styled(format!("  {:<16}", keys.join(" ")), key_style),
                Span::raw(b.description),
            ]));
        }
        out.push(Line::from(""));
    }
    out.push(Line::from(Span::styled(
        "Commands (after :)",
        theme.style(Role::Header),
    )));
    for (cmd, what) in COMMANDS {
        out.push(Line::from(vec![
            Span::styled(format!("  {cmd:<22}"), key_style),
            Span::raw(*what),
        ]));
    }
    out.push(Line::from(""));
    out.push(Line::from(Span::styled(
        "Keys can be rebound in the config file's [keys] section (see README).",
        theme.style(Role::Muted),
    )));
    out
}

/// Draws the help over `area`, scrolled by `scroll` (a text pane: it stops with the last line
/// at the bottom), with a scrollbar when it does not fit.
pub fn draw(frame: &mut Frame, area: Rect, keymap: &KeyMap, scroll: &ListState, theme: &Theme) {
    frame.render_widget(Clear, area);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.style(Role::Border))
        .title(Span::styled(
            " Help — ↑↓ PgUp PgDn g G scroll, esc closes ",
            theme.style(Role::Title),
        ));
    super::screen::draw_text(frame, area, block, lines(keymap, theme), scroll, theme);
}
