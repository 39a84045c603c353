//! The bottom line: the prompt while typing, else a message, else key hints generated from the
//! key-binding table, only for the actions the current screen offers.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::input::Input;
use super::keymap::{Action, KeyMap, Mode};
use super::text::clean;
use super::theme::{Role, Theme};

/// A one-line message (a bad command, a config problem) shown until the next key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flash {
    pub text: String,
    pub error: bool,
}

/// What the footer reads, travelling together from the app.
pub struct FooterView<'a> {
    pub input: &'a Input,
    pub flash: Option<&'a Flash>,
    pub keymap: &'a KeyMap,
    pub mode: Mode,
    /// Whether the current screen does something with an action (its hint shows only then).
    pub offered: &'a dyn Fn(Action) -> bool,
    /// Jobs of the queue marked (shown before the hints when there are).
    pub marked: usize,
}

/// The footer of `view`.
pub fn draw(frame: &mut Frame, area: Rect, view: &FooterView<'_>, theme: &Theme) {
    let FooterView {
        input,
        flash,
        keymap,
        mode,
        offered,
        marked,
    } = *view;
    let line = match input {
        Input::Command(text) | Input::Filter(text) => {
            let sigil = if matches!(input, Input::Command(_)) {
                ":"
            } else {
                "/"
            };
            let (before, after) = super::field::around_cursor(text);
            let mut spans = vec![
                Span::styled(sigil, theme.style(Role::Prompt)),
                Span::raw(clean(before).into_owned()),
                Span::styled("█", theme.style(Role::Prompt)),
                Span::raw(clean(after).into_owned()),
                Span::raw("  "),
            ];
            let used: usize = spans.iter().map(|s| s.width()).sum();
            let room = (area.width as usize).saturating_sub(used);
            spans.extend(hints(keymap, Mode::Prompt, room, &|_| true, theme));
            Line::from(spans)
        }
        Input::Normal if mode == Mode::Dialog && flash.is_none() => {
            Line::from(hints(keymap, mode, area.width as usize, &|_| true, theme))
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
            None => {
                let mut spans = Vec::new();
                if marked > 0 {
                    spans.push(Span::styled(
                        format!(" {marked} marked "),
                        theme.style(Role::Marked),
                    ));
                    spans.push(Span::raw(" "));
                }
                let used: usize = spans.iter().map(|s| s.width()).sum();
                let room = (area.width as usize).saturating_sub(used);
                spans.extend(hints(keymap, Mode::Normal, room, offered, theme));
                Line::from(spans)
            }
        },
    };
    frame.render_widget(Paragraph::new(line), area);
}

/// The mode's hints in table order, for the actions `offered`; neighbours with the same hint
/// share one (`<1-4>screens`). Fitted into `width` columns: when they do not fit, the ones
/// just before the last two go first, so help and quit always stay in sight.
fn hints(
    keymap: &KeyMap,
    mode: Mode,
    width: usize,
    offered: &dyn Fn(Action) -> bool,
    theme: &Theme,
) -> Vec<Span<'static>> {
    let mut runs: Vec<(Vec<String>, &'static str)> = Vec::new();
    for (b, keys) in keymap.bindings(mode) {
        let (Some(key), Some(hint)) = (keys.first(), b.hint) else {
            continue;
        };
        if !offered(b.action) {
            continue;
        }
        match runs.last_mut() {
            Some((ks, h)) if *h == hint => ks.push(key.label()),
            _ => runs.push((vec![key.label()], hint)),
        }
    }
    let mut items: Vec<(String, String)> = runs
        .into_iter()
        .map(|(keys, hint)| {
            let key = match keys.as_slice() {
                [one] => format!("<{one}>"),
                [first, .., last] => format!("<{first}-{last}>"),
                [] => String::new(),
            };
            (key, format!("{hint} "))
        })
        .collect();
    let len = |items: &[(String, String)]| -> usize {
        items
            .iter()
            .map(|(k, l)| k.chars().count() + l.chars().count())
            .sum()
    };
    while len(&items) > width && items.len() > 2 {
        items.remove(items.len() - 3);
    }
    items
        .into_iter()
        .flat_map(|(k, label)| {
            [
                Span::styled(k, theme.style(Role::Accent)),
                Span::styled(label, theme.style(Role::Muted)),
            ]
        })
        .collect()
}
