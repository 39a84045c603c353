//! `?` help, generated from the key-binding table (the same one the footer hints come from) and
//! the command list.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use super::command::COMMANDS;
use super::keymap::{KeyMap, Mode};
use super::theme::{Role, Theme};

pub fn lines(keymap: &KeyMap, theme: &Theme) -> Vec<Line<'static>> {
    let key_style = theme.style(Role::Accent);
    let mut out = Vec::new();
    for (mode, heading) in [
        (Mode::Normal, "Keys"),
        (Mode::Prompt, "While typing after : or /"),
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

/// Draws the help over `area`, from line `scroll` on (clamped so the end stays in view).
pub fn draw(frame: &mut Frame, area: Rect, keymap: &KeyMap, scroll: u16, theme: &Theme) {
    let mid = area;
    frame.render_widget(Clear, mid);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.style(Role::Border))
        .title(Span::styled(
            " Help — ↑↓ scroll, esc closes ",
            theme.style(Role::Title),
        ));
    let lines = lines(keymap, theme);
    let max = (lines.len() as u16).saturating_sub(mid.height.saturating_sub(2));
    frame.render_widget(
        Paragraph::new(lines)
            .block(block)
            .scroll((scroll.min(max), 0)),
        mid,
    );
}
