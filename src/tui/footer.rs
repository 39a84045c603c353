//! The bottom line: the prompt while typing, else a message, else key hints generated from the
//! key-binding table.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::input::Input;
use super::keymap::{KeyMap, Mode};
use super::text::clean;
use super::theme::{Role, Theme};

/// A one-line message (a bad command, a config problem) shown until the next key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flash {
    pub text: String,
    pub error: bool,
}

pub fn draw(
    frame: &mut Frame,
    area: Rect,
    input: &Input,
    flash: Option<&Flash>,
    keymap: &KeyMap,
    theme: &Theme,
) {
    let line = match input {
        Input::Command(text) | Input::Filter(text) => {
            let sigil = if matches!(input, Input::Command(_)) {
                ":"
            } else {
                "/"
            };
            let mut spans = vec![
                Span::styled(sigil, theme.style(Role::Prompt)),
                Span::raw(clean(text).into_owned()),
                Span::styled("█", theme.style(Role::Prompt)),
                Span::raw("  "),
            ];
            spans.extend(hints(keymap, Mode::Prompt, theme));
            Line::from(spans)
        }
        Input::Normal => match flash {
            Some(f) => Line::from(Span::styled(
                clean(&f.text).into_owned(),
                theme.style(if f.error {
                    Role::Critical
                } else {
                    Role::Accent
                }),
            )),
            None => Line::from(hints(keymap, Mode::Normal, theme)),
        },
    };
    frame.render_widget(Paragraph::new(line), area);
}

fn hints(keymap: &KeyMap, mode: Mode, theme: &Theme) -> Vec<Span<'static>> {
    let mut spans = Vec::new();
    for (b, keys) in keymap.bindings(mode) {
        let (Some(label), Some(k)) = (b.hint, keys.first()) else {
            continue;
        };
        spans.push(Span::styled(
            format!("<{}>", k.label()),
            theme.style(Role::Accent),
        ));
        spans.push(Span::styled(format!("{label} "), theme.style(Role::Muted)));
    }
    spans
}
