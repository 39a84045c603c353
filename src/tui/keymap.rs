//! The one key-binding table. Each entry has an action, its default keys, the mode it works in
//! and a description; the footer hints and the `?` help are generated from it, and the config
//! file's `[keys]` section rebinds actions by name.

use std::collections::BTreeMap;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// Where a binding applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Browsing a screen.
    Normal,
    /// Typing after `:` or `/`.
    Prompt,
    /// In the priority dialog.
    Dialog,
}

/// Something the user can bind a key to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    Quit,
    Help,
    CommandMode,
    FilterMode,
    Back,
    Enter,
    Up,
    Down,
    PageUp,
    PageDown,
    Top,
    Bottom,
    SortNext,
    SortReverse,
    NextPane,
    Overview,
    Jobs,
    Preemptions,
    Scorecard,
    NextQueue,
    NextTheme,
    Confirm,
    Cancel,
    Priority,
    NextField,
    PrevField,
    Older,
    Newer,
    Live,
}

/// One row of the table.
#[derive(Debug, Clone, Copy)]
pub struct Binding {
    pub action: Action,
    /// Config-file name of the action.
    pub name: &'static str,
    pub mode: Mode,
    pub keys: &'static [&'static str],
    pub description: &'static str,
    /// Footer label; `None`: shown only in `?`.
    pub hint: Option<&'static str>,
}

const fn b(
    action: Action,
    name: &'static str,
    mode: Mode,
    keys: &'static [&'static str],
    description: &'static str,
    hint: Option<&'static str>,
) -> Binding {
    Binding {
        action,
        name,
        mode,
        keys,
        description,
        hint,
    }
}

/// The defaults, in the order help and hints show them.
pub const DEFAULT_BINDINGS: &[Binding] = &[
    b(
        Action::CommandMode,
        "command",
        Mode::Normal,
        &[":"],
        "command mode (commands below)",
        Some("command"),
    ),
    b(
        Action::FilterMode,
        "filter",
        Mode::Normal,
        &["/"],
        "filter rows (start with ! to invert)",
        Some("filter"),
    ),
    b(
        Action::Enter,
        "enter",
        Mode::Normal,
        &["enter"],
        "open the selected share or job",
        Some("open"),
    ),
    b(
        Action::Back,
        "back",
        Mode::Normal,
        &["esc"],
        "back (or clear the filter)",
        Some("back"),
    ),
    b(
        Action::SortNext,
        "sort",
        Mode::Normal,
        &["s"],
        "sort by the next column",
        Some("sort"),
    ),
    b(
        Action::SortReverse,
        "sort_reverse",
        Mode::Normal,
        &["S"],
        "reverse the sort order",
        None,
    ),
    b(
        Action::Overview,
        "overview",
        Mode::Normal,
        &["1"],
        "overview: queues and shares",
        None,
    ),
    b(
        Action::Jobs,
        "jobs",
        Mode::Normal,
        &["2"],
        "every job of the queue",
        None,
    ),
    b(
        Action::Preemptions,
        "preemptions",
        Mode::Normal,
        &["3"],
        "preempted jobs and loops",
        None,
    ),
    b(
        Action::Scorecard,
        "scorecard",
        Mode::Normal,
        &["4"],
        "scorecard: the five metrics per share, from history",
        None,
    ),
    b(
        Action::Priority,
        "priority",
        Mode::Normal,
        &["p"],
        "change the selected job's priority (preview, confirm, audit)",
        None,
    ),
    b(
        Action::Older,
        "older",
        Mode::Normal,
        &["["],
        "time travel: the previous recorded snapshot",
        Some("past"),
    ),
    b(
        Action::Newer,
        "newer",
        Mode::Normal,
        &["]"],
        "time travel: the next recorded snapshot (after the newest: live)",
        None,
    ),
    b(
        Action::Live,
        "live",
        Mode::Normal,
        &["L"],
        "leave time travel: back to live data",
        None,
    ),
    b(
        Action::NextPane,
        "next_pane",
        Mode::Normal,
        &["tab"],
        "switch pane (share: running / queued; preemptions: jobs / their attempts)",
        None,
    ),
    b(
        Action::NextQueue,
        "next_queue",
        Mode::Normal,
        &["Q"],
        "next queue",
        None,
    ),
    b(
        Action::NextTheme,
        "next_theme",
        Mode::Normal,
        &["t"],
        "next colour theme",
        Some("theme"),
    ),
    b(
        Action::Up,
        "up",
        Mode::Normal,
        &["up", "k"],
        "move up",
        None,
    ),
    b(
        Action::Down,
        "down",
        Mode::Normal,
        &["down", "j"],
        "move down",
        None,
    ),
    b(
        Action::PageUp,
        "page_up",
        Mode::Normal,
        &["pageup", "ctrl-b"],
        "page up",
        None,
    ),
    b(
        Action::PageDown,
        "page_down",
        Mode::Normal,
        &["pagedown", "ctrl-f"],
        "page down",
        None,
    ),
    b(
        Action::Top,
        "top",
        Mode::Normal,
        &["home", "g"],
        "first row",
        None,
    ),
    b(
        Action::Bottom,
        "bottom",
        Mode::Normal,
        &["end", "G"],
        "last row",
        None,
    ),
    b(
        Action::Help,
        "help",
        Mode::Normal,
        &["?"],
        "this help",
        Some("help"),
    ),
    b(
        Action::Quit,
        "quit",
        Mode::Normal,
        &["q", "ctrl-c"],
        "quit",
        Some("quit"),
    ),
    b(
        Action::Confirm,
        "confirm",
        Mode::Prompt,
        &["enter"],
        "run the command / keep the filter",
        Some("run"),
    ),
    b(
        Action::Cancel,
        "cancel",
        Mode::Prompt,
        &["esc"],
        "cancel",
        Some("cancel"),
    ),
    b(
        Action::Confirm,
        "dialog_confirm",
        Mode::Dialog,
        &["enter"],
        "preview the change, then apply it",
        Some("preview/apply"),
    ),
    b(
        Action::Cancel,
        "dialog_cancel",
        Mode::Dialog,
        &["esc"],
        "back to editing / close the dialog",
        Some("back"),
    ),
    b(
        Action::NextField,
        "next_field",
        Mode::Dialog,
        &["tab", "down"],
        "next field",
        Some("next field"),
    ),
    b(
        Action::PrevField,
        "prev_field",
        Mode::Dialog,
        &["backtab", "up"],
        "previous field",
        None,
    ),
];

/// A key with its modifiers, normalised (a shifted letter is just the capital letter).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Chord {
    pub code: KeyCode,
    pub ctrl: bool,
    pub alt: bool,
}

impl Chord {
    pub fn from_event(key: &KeyEvent) -> Self {
        Self {
            code: key.code,
            ctrl: key.modifiers.contains(KeyModifiers::CONTROL),
            alt: key.modifiers.contains(KeyModifiers::ALT),
        }
    }

    /// `q`, `G`, `?`, `ctrl-c`, `alt-x`, `enter`, `esc`, `tab`, `backtab`, `up`, `down`, `left`,
    /// `right`, `pageup`, `pagedown`, `home`, `end`, `space`, `f1`…`f12`.
    pub fn parse(s: &str) -> Option<Self> {
        let mut ctrl = false;
        let mut alt = false;
        let mut rest = s;
        loop {
            if let Some(r) = rest.strip_prefix("ctrl-") {
                ctrl = true;
                rest = r;
            } else if let Some(r) = rest.strip_prefix("alt-") {
                alt = true;
                rest = r;
            } else {
                break;
            }
        }
        let code = match rest {
            "enter" => KeyCode::Enter,
            "esc" => KeyCode::Esc,
            "tab" => KeyCode::Tab,
            "backtab" => KeyCode::BackTab,
            "backspace" => KeyCode::Backspace,
            "up" => KeyCode::Up,
            "down" => KeyCode::Down,
            "left" => KeyCode::Left,
            "right" => KeyCode::Right,
            "pageup" => KeyCode::PageUp,
            "pagedown" => KeyCode::PageDown,
            "home" => KeyCode::Home,
            "end" => KeyCode::End,
            "space" => KeyCode::Char(' '),
            f if f.len() > 1 && f.starts_with('f') => KeyCode::F(f[1..].parse().ok()?),
            c => {
                let mut chars = c.chars();
                let ch = chars.next()?;
                if chars.next().is_some() {
                    return None;
                }
                KeyCode::Char(ch)
            }
        };
        Some(Self { code, ctrl, alt })
    }

    pub fn label(&self) -> String {
        let key = match self.code {
            KeyCode::Enter => "enter".to_string(),
            KeyCode::Esc => "esc".to_string(),
            KeyCode::Tab => "tab".to_string(),
            KeyCode::BackTab => "backtab".to_string(),
            KeyCode::Backspace => "backspace".to_string(),
            KeyCode::Up => "↑".to_string(),
            KeyCode::Down => "↓".to_string(),
            KeyCode::Left => "←".to_string(),
            KeyCode::Right => "→".to_string(),
            KeyCode::PageUp => "pgup".to_string(),
            KeyCode::PageDown => "pgdn".to_string(),
            KeyCode::Home => "home".to_string(),
            KeyCode::End => "end".to_string(),
            KeyCode::Char(' ') => "space".to_string(),
            KeyCode::Char(c) => c.to_string(),
            KeyCode::F(n) => format!("f{n}"),
            other => format!("{other:?}").to_lowercase(),
        };
        match (self.ctrl, self.alt) {
            (true, _) => format!("ctrl-{key}"),
            (_, true) => format!("alt-{key}"),
            _ => key,
        }
    }
}

/// The bindings in force: defaults with the config's overrides applied.
#[derive(Debug, Clone)]
pub struct KeyMap {
    entries: Vec<(Binding, Vec<Chord>)>,
}

impl Default for KeyMap {
    fn default() -> Self {
        Self {
            entries: DEFAULT_BINDINGS
                .iter()
                .map(|b| (*b, b.keys.iter().filter_map(|k| Chord::parse(k)).collect()))
                .collect(),
        }
    }
}

impl KeyMap {
    /// Defaults overlaid with `overrides` (action name → keys). Problems (unknown action,
    /// unreadable key, a key already bound in the same mode) are returned as warnings; the
    /// offending override is skipped and the default kept.
    pub fn with_overrides(overrides: &BTreeMap<String, Vec<String>>) -> (Self, Vec<String>) {
        let mut map = Self::default();
        let mut warnings = Vec::new();
        for (name, keys) in overrides {
            let Some(idx) = map.entries.iter().position(|(b, _)| b.name == name) else {
                warnings.push(format!("[keys] unknown action `{name}`"));
                continue;
            };
            let parsed: Option<Vec<Chord>> = keys.iter().map(|k| Chord::parse(k)).collect();
            let Some(chords) = parsed.filter(|c| !c.is_empty()) else {
                warnings.push(format!("[keys] {name}: cannot read keys {keys:?}"));
                continue;
            };
            let mode = map.entries[idx].0.mode;
            let clash = map.entries.iter().enumerate().find_map(|(i, (b, ks))| {
                (i != idx && b.mode == mode && !overrides.contains_key(b.name))
                    .then(|| ks.iter().find(|k| chords.contains(k)).map(|k| (b.name, *k)))
                    .flatten()
            });
            if let Some((other, k)) = clash {
                warnings.push(format!(
                    "[keys] {name}: `{}` is already bound to `{other}`",
                    k.label()
                ));
                continue;
            }
            map.entries[idx].1 = chords;
        }
        (map, warnings)
    }

    /// The action bound to this key in this mode.
    pub fn action(&self, mode: Mode, key: &KeyEvent) -> Option<Action> {
        let chord = Chord::from_event(key);
        self.entries
            .iter()
            .find(|(b, ks)| b.mode == mode && ks.contains(&chord))
            .map(|(b, _)| b.action)
    }

    /// Bindings of a mode with their current keys, in table order.
    pub fn bindings(&self, mode: Mode) -> impl Iterator<Item = (&Binding, &[Chord])> {
        self.entries
            .iter()
            .filter(move |(b, _)| b.mode == mode)
            .map(|(b, ks)| (b, ks.as_slice()))
    }

    /// The first key of an action in a mode, for hints (`?` when unbound).
    pub fn first_key_in(&self, mode: Mode, action: Action) -> String {
        self.entries
            .iter()
            .find(|(b, _)| b.mode == mode && b.action == action)
            .and_then(|(_, ks)| ks.first())
            .map_or_else(|| "?".to_string(), Chord::label)
    }

    /// The first key of an action, for hints (`?` when unbound).
    pub fn first_key(&self, action: Action) -> String {
        self.entries
            .iter()
            .find(|(b, _)| b.action == action)
            .and_then(|(_, ks)| ks.first())
            .map_or_else(|| "?".to_string(), Chord::label)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode, m: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, m)
    }

    #[test]
    fn defaults_resolve_and_shift_is_folded_into_the_letter() {
        let m = KeyMap::default();
        assert_eq!(
            m.action(Mode::Normal, &key(KeyCode::Char('q'), KeyModifiers::NONE)),
            Some(Action::Quit)
        );
        assert_eq!(
            m.action(
                Mode::Normal,
                &key(KeyCode::Char('c'), KeyModifiers::CONTROL)
            ),
            Some(Action::Quit)
        );
        assert_eq!(
            m.action(Mode::Normal, &key(KeyCode::Char('S'), KeyModifiers::SHIFT)),
            Some(Action::SortReverse)
        );
        assert_eq!(
            m.action(Mode::Prompt, &key(KeyCode::Char('q'), KeyModifiers::NONE)),
            None
        );
        assert_eq!(
            m.action(Mode::Prompt, &key(KeyCode::Esc, KeyModifiers::NONE)),
            Some(Action::Cancel)
        );
    }

    #[test]
    fn no_default_key_is_bound_twice_in_a_mode() {
        let m = KeyMap::default();
        for mode in [Mode::Normal, Mode::Prompt, Mode::Dialog] {
            let mut seen = Vec::new();
            for (b, ks) in m.bindings(mode) {
                assert_eq!(
                    ks.len(),
                    b.keys.len(),
                    "{} has an unreadable default key",
                    b.name
                );
                for k in ks {
                    assert!(!seen.contains(k), "{} rebinds {}", b.name, k.label());
                    seen.push(*k);
                }
            }
        }
    }

    #[test]
    fn overrides_rebind_and_report_problems() {
        let mut o = BTreeMap::new();
        o.insert("quit".to_string(), vec!["x".to_string()]);
        o.insert("nonsense".to_string(), vec!["y".to_string()]);
        o.insert("help".to_string(), vec!["ctrl-".to_string()]);
        o.insert("sort".to_string(), vec!["j".to_string()]);
        let (m, warnings) = KeyMap::with_overrides(&o);
        assert_eq!(
            m.action(Mode::Normal, &key(KeyCode::Char('x'), KeyModifiers::NONE)),
            Some(Action::Quit)
        );
        assert_eq!(
            m.action(Mode::Normal, &key(KeyCode::Char('q'), KeyModifiers::NONE)),
            None
        );
        assert_eq!(
            m.action(Mode::Normal, &key(KeyCode::Char('?'), KeyModifiers::NONE)),
            Some(Action::Help)
        );
        assert_eq!(
            m.action(Mode::Normal, &key(KeyCode::Char('s'), KeyModifiers::NONE)),
            Some(Action::SortNext)
        );
        assert_eq!(warnings.len(), 3, "{warnings:?}");
        assert!(
            warnings
                .iter()
                .any(|w| w.contains("unknown action `nonsense`"))
        );
        assert!(
            warnings
                .iter()
                .any(|w| w.contains("already bound to `down`"))
        );
        assert_eq!(m.first_key(Action::Quit), "x");
    }

    #[test]
    fn chords_round_trip_through_labels() {
        for k in [
            "q", "G", "ctrl-c", "alt-x", "enter", "f5", "pageup", "space",
        ] {
            assert!(Chord::parse(k).is_some(), "{k}");
        }
        assert_eq!(Chord::parse("ctrl-c").unwrap().label(), "ctrl-c");
        assert!(Chord::parse("ab").is_none());
        assert!(Chord::parse("").is_none());
    }
}
