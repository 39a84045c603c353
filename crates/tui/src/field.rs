//! One line of text being typed — the priority dialog's fields, the `:` prompt, the `/`
//! filter — with a cursor: tui-input's buffer, edited by the keys every such field takes.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
pub use tui_input::Input as Text;
use tui_input::InputRequest;

/// What a key did to a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edit {
    /// The text changed.
    Changed,
    /// Only the cursor moved, or nothing could change (a full field, a cursor at the end).
    Kept,
    /// Not an editing key: the caller may use it.
    NotEditing,
}

/// Applies an editing key: characters, Backspace/Delete, ←/→ (Ctrl: by word), Home/End
/// (Ctrl-A/Ctrl-E), Ctrl-W (word before), Ctrl-U (the line). At most `max_chars` characters;
/// control characters are never inserted.
pub fn edit(text: &mut Text, key: &KeyEvent, max_chars: usize) -> Edit {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let request = match key.code {
        KeyCode::Backspace => InputRequest::DeletePrevChar,
        KeyCode::Delete => InputRequest::DeleteNextChar,
        KeyCode::Left if ctrl => InputRequest::GoToPrevWord,
        KeyCode::Right if ctrl => InputRequest::GoToNextWord,
        KeyCode::Left => InputRequest::GoToPrevChar,
        KeyCode::Right => InputRequest::GoToNextChar,
        KeyCode::Home => InputRequest::GoToStart,
        KeyCode::End => InputRequest::GoToEnd,
        KeyCode::Char('a') if ctrl => InputRequest::GoToStart,
        KeyCode::Char('e') if ctrl => InputRequest::GoToEnd,
        KeyCode::Char('u') if ctrl => InputRequest::DeleteLine,
        KeyCode::Char('w') if ctrl => InputRequest::DeletePrevWord,
        KeyCode::Char(c)
            if !key
                .modifiers
                .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
                && !c.is_control() =>
        {
            if text.value().chars().count() >= max_chars {
                return Edit::Kept;
            }
            InputRequest::InsertChar(c)
        }
        _ => return Edit::NotEditing,
    };
    match text.handle(request) {
        Some(changed) if changed.value => Edit::Changed,
        _ => Edit::Kept,
    }
}

/// The text before and after the cursor, to draw the cursor between them.
pub fn around_cursor(text: &Text) -> (&str, &str) {
    let value = text.value();
    let at = value
        .char_indices()
        .nth(text.cursor())
        .map_or(value.len(), |(i, _)| i);
    value.split_at(at)
}

/// A field holding `s`, the cursor at its end.
pub fn text(s: &str) -> Text {
    Text::new(s.to_string())
}

/// One field of a dialog as drawn: `▶ label [text█] note`, the marker and the cursor block on
/// the focused one (where the next character goes: at the end, as typed; anywhere after
/// ←/→/Home). The priority dialog and the job-action dialogs draw their fields with it.
pub fn line<'a>(
    label: &str,
    text: &Text,
    note: impl Into<std::borrow::Cow<'a, str>>,
    focused: bool,
    theme: &crate::theme::Theme,
) -> ratatui::text::Line<'a> {
    use crate::theme::Role;
    use ratatui::text::{Line, Span};
    let muted = theme.style(Role::Muted);
    let mut spans = vec![Span::styled(
        format!("{} {label} ", if focused { "▶" } else { " " }),
        if focused {
            theme.style(Role::Prompt)
        } else {
            muted
        },
    )];
    let (before, after) = around_cursor(text);
    spans.push(Span::raw(format!("[{}", crate::text::clean(before))));
    if focused {
        spans.push(Span::styled("█", theme.style(Role::Prompt)));
    }
    spans.push(Span::raw(format!("{}] ", crate::text::clean(after))));
    spans.push(Span::styled(note.into(), muted));
    Line::from(spans)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn editing_keys_and_limits() {
        let mut t = text("ab");
        assert_eq!(edit(&mut t, &k(KeyCode::Left), 10), Edit::Kept);
        assert_eq!(edit(&mut t, &k(KeyCode::Char('x')), 10), Edit::Changed);
        assert_eq!(t.value(), "axb");
        assert_eq!(around_cursor(&t), ("ax", "b"));
        // Full: nothing more is inserted; control characters never are.
        assert_eq!(edit(&mut t, &k(KeyCode::Char('y')), 3), Edit::Kept);
        assert_eq!(
            edit(&mut t, &k(KeyCode::Char('\u{1b}')), 10),
            Edit::NotEditing
        );
        assert_eq!(edit(&mut t, &k(KeyCode::Tab), 10), Edit::NotEditing);
        let alt = KeyEvent::new(KeyCode::Char('q'), KeyModifiers::ALT);
        assert_eq!(edit(&mut t, &alt, 10), Edit::NotEditing);
        assert_eq!(t.value(), "axb");
        let ctrl_u = KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL);
        assert_eq!(edit(&mut t, &ctrl_u, 10), Edit::Changed);
        assert_eq!(t.value(), "");
        // Wide characters move the cursor one at a time.
        let mut w = text("日本");
        edit(&mut w, &k(KeyCode::Left), 10);
        assert_eq!(around_cursor(&w), ("日", "本"));
    }
}
