//! The bottom line: the prompt while typing, else a message, else key hints generated from the
//! key-binding table, only for the actions the current screen offers.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::input::Input;
use super::keymap::{Action, KeyMap, Mode, hint_drop, hint_on};
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
    /// The screen shown, whose labels the hints take ([`crate::keymap::SCREEN_LABELS`]).
    pub screen: Option<crate::screen::Kind>,
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
        screen,
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
            spans.extend(hints(
                keymap,
                (Mode::Prompt, screen),
                room,
                &|_| true,
                theme,
            ));
            Line::from(spans)
        }
        Input::Normal if mode == Mode::Dialog && flash.is_none() => Line::from(hints(
            keymap,
            (mode, screen),
            area.width as usize,
            &|_| true,
            theme,
        )),
        Input::Normal => match flash {
            Some(f) => {
                // Wrapped at words over the footer's lines (a refusal is never cut mid-word).
                let style = theme.style(if f.error {
                    Role::Critical
                } else {
                    Role::Accent
                });
                let lines: Vec<Line> = flash_lines(f, area.width)
                    .into_iter()
                    .map(|l| Line::from(Span::styled(l, style)))
                    .collect();
                frame.render_widget(Paragraph::new(lines), area);
                return;
            }
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
                spans.extend(hints(keymap, (Mode::Normal, screen), room, offered, theme));
                Line::from(spans)
            }
        },
    };
    frame.render_widget(Paragraph::new(line), area);
}

/// The most lines a message takes at the bottom (the screen keeps the rest).
const MESSAGE_LINES: usize = 3;

/// A message's lines, wrapped at words in `width` columns (at most [`MESSAGE_LINES`]).
fn flash_lines(f: &Flash, width: u16) -> Vec<String> {
    let mut lines = crate::policy::wrap(&clean(&f.text), usize::from(width), 0);
    lines.truncate(MESSAGE_LINES);
    lines
}

/// How many lines the footer takes in `width` columns: one, or what `flash` needs wrapped.
pub fn height(flash: Option<&Flash>, width: u16) -> u16 {
    flash.map_or(1, |f| {
        u16::try_from(flash_lines(f, width).len().max(1)).unwrap_or(1)
    })
}

/// The mode's hints in table order, for the actions `offered`; neighbours with the same hint
/// share one (`<1-4>screens`). Fitted into `width` columns: when they do not fit, they go in
/// [`hint_drop`]'s order (the last of a rank first), so help, quit and what the screen is for
/// stay in sight.
fn hints(
    keymap: &KeyMap,
    (mode, screen): (Mode, Option<crate::screen::Kind>),
    width: usize,
    offered: &dyn Fn(Action) -> bool,
    theme: &Theme,
) -> Vec<Span<'static>> {
    let mut runs: Vec<(Vec<String>, &'static str, u8)> = Vec::new();
    for (b, keys) in keymap.bindings(mode) {
        let (Some(key), Some(hint)) = (keys.first(), hint_on(b, screen)) else {
            continue;
        };
        if !offered(b.action) {
            continue;
        }
        let rank = if mode == Mode::Normal {
            hint_drop(b.action)
        } else {
            // A prompt's or a dialog's few hints: the last two kept, as on a screen.
            0
        };
        match runs.last_mut() {
            Some((ks, h, _)) if *h == hint => ks.push(key.label()),
            _ => runs.push((vec![key.label()], hint, rank)),
        }
    }
    let mut items: Vec<(String, String, u8)> = runs
        .into_iter()
        .map(|(keys, hint, rank)| {
            let key = match keys.as_slice() {
                [one] => format!("<{one}>"),
                [first, .., last] => format!("<{first}-{last}>"),
                [] => String::new(),
            };
            (key, format!("{hint} "), rank)
        })
        .collect();
    let len = |items: &[(String, String, u8)]| -> usize {
        items
            .iter()
            .map(|(k, l, _)| k.chars().count() + l.chars().count())
            .sum()
    };
    while len(&items) > width {
        let droppable = (0..items.len())
            .filter(|&i| items[i].2 > 0)
            .max_by_key(|&i| (items[i].2, i));
        let at = match droppable {
            Some(i) => i,
            None if items.len() > 2 => items.len() - 3,
            None => break,
        };
        items.remove(at);
    }
    items
        .into_iter()
        .flat_map(|(k, label, _)| {
            [
                Span::styled(k, theme.style(Role::Accent)),
                Span::styled(label, theme.style(Role::Muted)),
            ]
        })
        .collect()
}
