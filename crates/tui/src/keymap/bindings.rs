//! The default key-binding table, in the order help and hints show them; the keys that open
//! screens sit between its two halves, from the screen registry.

use super::{Action, Binding, Mode};
use crate::registry::{self, BUILTIN};
use crate::screen::Kind;

/// Every default, the built-in screens' keys included, in the order help, hints and the man
/// page show them.
pub const DEFAULT_BINDINGS: &[Binding] = &defaults::<DEFAULT_LEN>();

const DEFAULT_LEN: usize = BEFORE_SCREENS.len() + screen_keys() + AFTER_SCREENS.len();

/// How many built-in screens have a key.
const fn screen_keys() -> usize {
    let (mut n, mut i) = (0, 0);
    while i < BUILTIN.len() {
        if BUILTIN[i].key.is_some() {
            n += 1;
        }
        i += 1;
    }
    n
}

/// [`BEFORE_SCREENS`], the built-in screens' keys, [`AFTER_SCREENS`] (`N`: their count).
const fn defaults<const N: usize>() -> [Binding; N] {
    let mut out = [BEFORE_SCREENS[0]; N];
    let (mut n, mut i) = (0, 0);
    while i < BEFORE_SCREENS.len() {
        out[n] = BEFORE_SCREENS[i];
        (n, i) = (n + 1, i + 1);
    }
    i = 0;
    while i < BUILTIN.len() {
        if let Some(b) = registry::binding(&BUILTIN[i]) {
            out[n] = b;
            n += 1;
        }
        i += 1;
    }
    i = 0;
    while i < AFTER_SCREENS.len() {
        out[n] = AFTER_SCREENS[i];
        (n, i) = (n + 1, i + 1);
    }
    out
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

/// The defaults listed before the screens' keys, in the order help and hints show them.
pub const BEFORE_SCREENS: &[Binding] = &[
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
        &["s", ">"],
        "sort by the next column (:sort NAME picks one)",
        Some("sort"),
    ),
    b(
        Action::SortPrev,
        "sort_prev",
        Mode::Normal,
        &["<"],
        "sort by the previous column",
        None,
    ),
    b(
        Action::SortReverse,
        "sort_reverse",
        Mode::Normal,
        &["S"],
        "reverse the sort order (the header says ▲ or ▼)",
        None,
    ),
];

/// Footer labels a screen gives a binding whose key means something else there (screen kind,
/// the binding's name, the label): the one list the footer and docs/operator.md's key table
/// read.
pub const SCREEN_LABELS: &[(Kind, &str, &str)] = &[
    (Kind::Logs, "filter", "search"),
    (Kind::Logs, "older", "attempt"),
    (Kind::Logs, "newer", "attempt"),
];

/// The defaults listed after the screens' keys (which come from [`crate::registry`]).
pub const AFTER_SCREENS: &[Binding] = &[
    b(
        Action::Priority,
        "priority",
        Mode::Normal,
        &["p"],
        "change the selected job's priority (preview, confirm, audit)",
        Some("priority"),
    ),
    b(
        Action::Terminate,
        "terminate",
        Mode::Normal,
        &["ctrl-k"],
        "terminate the selected job or the marked ones (preview, confirm, audit)",
        Some("kill"),
    ),
    b(
        Action::Requeue,
        "requeue",
        Mode::Normal,
        &["R"],
        "requeue the selected (or marked) job with a retry cap: a copy, then the original ends",
        Some("requeue"),
    ),
    b(
        Action::Mark,
        "mark",
        Mode::Normal,
        &["space"],
        "Jobs, Preemptions: mark / unmark the job under the cursor (p, ctrl-k and R act on marks)",
        Some("mark"),
    ),
    b(
        Action::MarkAll,
        "mark_all",
        Mode::Normal,
        &["ctrl-space"],
        "Jobs, Preemptions: mark every job shown (the filter's rows)",
        None,
    ),
    b(
        Action::ClearMarks,
        "clear_marks",
        Mode::Normal,
        &["U"],
        "Jobs, Preemptions: unmark every job of the queue",
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
        Action::Follow,
        "follow",
        Mode::Normal,
        &["f"],
        "log pane: follow the log (read again every 2 s, the view kept at its end) / stop",
        Some("follow"),
    ),
    b(
        Action::NextMatch,
        "next_match",
        Mode::Normal,
        &["n"],
        "log pane: the next match of the / search",
        Some("match"),
    ),
    b(
        Action::PrevMatch,
        "prev_match",
        Mode::Normal,
        &["N"],
        "log pane: the previous match of the / search",
        Some("match"),
    ),
    b(
        Action::ScrollLeft,
        "scroll_left",
        Mode::Normal,
        &["left"],
        "log pane: left along lines longer than the pane (cut with …, as less -S)",
        Some("scroll"),
    ),
    b(
        Action::ScrollRight,
        "scroll_right",
        Mode::Normal,
        &["right"],
        "log pane: right along lines longer than the pane",
        Some("scroll"),
    ),
    b(
        Action::NextPane,
        "next_pane",
        Mode::Normal,
        &["tab"],
        "switch pane (share: running / queued; preemptions: jobs / their attempts)",
        Some("pane"),
    ),
    b(
        Action::Wide,
        "wide",
        Mode::Normal,
        &["w"],
        "overview: a row per share and instance type / one row per share (wide)",
        Some("wide"),
    ),
    b(
        Action::Expand,
        "expand",
        Mode::Normal,
        &["space"],
        "overview: expand or fold the selected share's instance types",
        None,
    ),
    b(
        Action::ByType,
        "by_type",
        Mode::Normal,
        &["i"],
        "overview: by instance type (capacity, who uses, borrows and lends each) / by share",
        Some("by type"),
    ),
    b(
        Action::NextQueue,
        "next_queue",
        Mode::Normal,
        &["Q"],
        "next queue",
        Some("queue"),
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
        "quit (ctrl-c in a dialog closes the dialog instead)",
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
