//! The one key-binding table. Each entry has an action, its default keys, the mode it works in
//! and a description; the footer hints and the `?` help are generated from it, and the config
//! file's `[keys]` section rebinds actions by name.

use std::collections::BTreeMap;

use crossterm::event::KeyEvent;

use crate::registry::{self, ScreenEntry};
use crate::screen::Kind;

mod bindings;
mod chord;

pub use bindings::{AFTER_SCREENS, BEFORE_SCREENS, DEFAULT_BINDINGS, SCREEN_LABELS};
pub use chord::Chord;

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
    /// Sort by the column left of the sorted one (htop's `<`).
    SortPrev,
    SortReverse,
    NextPane,
    /// Overview: one row per share ↔ a row per share and instance type (k9s's "wide").
    Wide,
    /// Overview: expand or fold the selected share's per-type rows.
    Expand,
    /// Overview: by instance type (who has each type) ↔ by share.
    ByType,
    /// Open a screen (its key comes from [`crate::registry`]).
    Open(Kind),
    NextQueue,
    NextTheme,
    Confirm,
    Cancel,
    Priority,
    /// Jobs, Preemptions: mark or unmark the job under the cursor (k9s).
    Mark,
    /// Jobs, Preemptions: mark every job shown.
    MarkAll,
    /// Jobs, Preemptions: unmark every job of the queue.
    ClearMarks,
    /// Terminate the selected job or the marked ones (k9s's kill).
    Terminate,
    /// Requeue the selected (or marked) job with a retry cap.
    Requeue,
    NextField,
    PrevField,
    Older,
    Newer,
    Live,
    /// Log pane: follow the log (read again, the view kept at its end).
    Follow,
    /// Log pane: the next match of the search.
    NextMatch,
    /// Log pane: the previous match of the search.
    PrevMatch,
    /// Log pane: along lines longer than the pane, left and right (`less -S`).
    ScrollLeft,
    ScrollRight,
}

/// Actions only a screen that offers them takes ([`crate::screen::Screen::own_actions`]): two of
/// them may share a key, which goes to the one the current screen offers (`space` expands a
/// share on the Overview and marks a job on Jobs and Preemptions).
pub const SCREEN_ONLY: &[Action] = &[Action::Expand, Action::Mark];

/// The order footer hints go in when the line is short, the one place it is defined (as
/// [`crate::screen::drop_order`] is for columns): help and quit never; the generic ones
/// (command, filter, open, back, the screens, queue, theme: the same on every screen and all in
/// `?`) first; then time travel; then sorting and the views; the actions on a job (priority, kill, requeue, mark, logs)
/// last of the droppable ones, since they are what the screen is for.
pub fn hint_drop(action: Action) -> u8 {
    match action {
        Action::Help | Action::Quit => 0,
        Action::Priority
        | Action::Terminate
        | Action::Requeue
        | Action::Mark
        | Action::Open(Kind::Logs)
        | Action::Follow
        | Action::NextMatch
        | Action::PrevMatch => 1,
        Action::SortNext
        | Action::NextPane
        | Action::Wide
        | Action::ByType
        | Action::Expand
        | Action::ScrollLeft
        | Action::ScrollRight => 2,
        Action::Older | Action::Newer | Action::Live => 3,
        _ => 4,
    }
}

/// The footer label of binding `b` on a screen of `kind`: the one [`SCREEN_LABELS`] gives it
/// there (the log pane's `/` searches), else its own.
pub fn hint_on(b: &Binding, kind: Option<Kind>) -> Option<&'static str> {
    SCREEN_LABELS
        .iter()
        .find(|(k, name, _)| Some(*k) == kind && *name == b.name)
        .map(|(_, _, label)| *label)
        .or(b.hint)
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

/// The bindings in force: defaults with the config's overrides applied.
#[derive(Debug, Clone)]
pub struct KeyMap {
    entries: Vec<(Binding, Vec<Chord>)>,
}

impl Default for KeyMap {
    fn default() -> Self {
        Self {
            entries: DEFAULT_BINDINGS.iter().copied().map(entry).collect(),
        }
    }
}

fn entry(b: Binding) -> (Binding, Vec<Chord>) {
    (b, b.keys.iter().filter_map(|k| Chord::parse(k)).collect())
}

impl KeyMap {
    /// The default bindings, with the keys that open `screens`.
    pub fn for_screens(screens: &[ScreenEntry]) -> Self {
        let entries = BEFORE_SCREENS
            .iter()
            .copied()
            .chain(registry::bindings(screens))
            .chain(AFTER_SCREENS.iter().copied())
            .map(entry)
            .collect();
        Self { entries }
    }

    /// Adds the keys of `screens` this map has no binding for (screens added after it was
    /// built), after the other screens' keys. A default key already bound in normal mode is
    /// left out, with a warning.
    pub fn add_screens(&mut self, screens: &[ScreenEntry]) -> Vec<String> {
        let mut warnings = Vec::new();
        for b in registry::bindings(screens) {
            if self.entries.iter().any(|(e, _)| e.action == b.action) {
                continue;
            }
            let (b, mut chords) = entry(b);
            chords.retain(|c| {
                let taken = self.action_of(Mode::Normal, *c);
                if let Some(other) = taken {
                    warnings.push(format!(
                        "[keys] {}: `{}` is already bound to `{}`",
                        b.name,
                        c.label(),
                        self.name_of(other)
                    ));
                }
                taken.is_none()
            });
            let at = self
                .entries
                .iter()
                .rposition(|(e, _)| matches!(e.action, Action::Open(_)))
                .map_or(BEFORE_SCREENS.len(), |i| i + 1)
                .min(self.entries.len());
            self.entries.insert(at, (b, chords));
        }
        warnings
    }

    fn action_of(&self, mode: Mode, chord: Chord) -> Option<Action> {
        self.entries
            .iter()
            .find(|(b, ks)| b.mode == mode && ks.contains(&chord))
            .map(|(b, _)| b.action)
    }

    fn name_of(&self, action: Action) -> &'static str {
        self.entries
            .iter()
            .find(|(b, _)| b.action == action)
            .map_or("?", |(b, _)| b.name)
    }

    /// Defaults overlaid with `overrides` (action name → keys). Problems (unknown action,
    /// unreadable key, a key already bound in the same mode) are returned as warnings; the
    /// offending override is skipped and the default kept.
    pub fn with_overrides(overrides: &BTreeMap<String, Vec<String>>) -> (Self, Vec<String>) {
        Self::default().overridden(overrides)
    }

    /// This map overlaid with `overrides`, as [`KeyMap::with_overrides`] does the defaults.
    pub fn overridden(self, overrides: &BTreeMap<String, Vec<String>>) -> (Self, Vec<String>) {
        let mut map = self;
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
        self.action_of(mode, Chord::from_event(key))
    }

    /// The action bound to this key in this mode on a screen that offers `own`: of the
    /// [`SCREEN_ONLY`] actions sharing a key, the one the screen offers.
    pub fn action_on(&self, mode: Mode, key: &KeyEvent, own: &[Action]) -> Option<Action> {
        let chord = Chord::from_event(key);
        self.entries
            .iter()
            .filter(|(b, ks)| b.mode == mode && ks.contains(&chord))
            .map(|(b, _)| b.action)
            .find(|a| own.contains(a))
            .or_else(|| self.action_of(mode, chord))
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
    use crossterm::event::{KeyCode, KeyModifiers};

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
                    // Screen-only actions may share a key (each screen offers one of them).
                    let shared = SCREEN_ONLY.contains(&b.action)
                        && seen.iter().any(|(s, a)| s == k && SCREEN_ONLY.contains(a));
                    assert!(
                        shared || !seen.iter().any(|(s, _)| s == k),
                        "{} rebinds {}",
                        b.name,
                        k.label()
                    );
                    seen.push((*k, b.action));
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
    fn the_default_table_is_the_builtin_screens_key_map() {
        let names = |m: &KeyMap| m.entries.iter().map(|(b, _)| b.name).collect::<Vec<_>>();
        let built = KeyMap::for_screens(registry::BUILTIN);
        assert_eq!(names(&KeyMap::default()), names(&built));
        let at = |name: &str| DEFAULT_BINDINGS.iter().position(|b| b.name == name);
        // The screens' keys sit together, after sorting and before the priority key.
        assert!(at("sort_reverse") < at("overview") && at("scorecard") < at("priority"));
        assert_eq!(at("jobs").zip(at("overview")).map(|(j, o)| j - o), Some(1));
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
