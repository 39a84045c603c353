//! `?` help, generated from the key-binding table (the same one the footer hints come from), the
//! screen registry's commands and the other commands.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear};

use super::command::COMMANDS;
use super::gauge;
use super::keymap::{KeyMap, Mode};
use super::list::ListState;
use super::registry::{self, ScreenEntry};
use super::theme::{Role, Theme};

/// The help's lines in `width` columns: a line longer than that is wrapped at words, its next
/// lines indented under its text (never cut: `an RFC 3339 tim`).
pub fn lines(
    keymap: &KeyMap,
    screens: &[ScreenEntry],
    theme: &Theme,
    width: usize,
) -> Vec<Line<'static>> {
    unwrapped(keymap, screens, theme)
        .into_iter()
        .flat_map(|l| wrap_line(l, width))
        .collect()
}

/// `line` in lines of at most `width` columns: its last span (the text) wrapped at words, the
/// next lines indented by what comes before it (the key column).
fn wrap_line(line: Line<'static>, width: usize) -> Vec<Line<'static>> {
    if line.width() <= width || line.spans.is_empty() {
        return vec![line];
    }
    let mut spans = line.spans;
    let Some(last) = spans.pop() else {
        return Vec::new();
    };
    let lead: usize = spans.iter().map(Span::width).sum();
    let room = width.saturating_sub(lead).max(10);
    let style = last.style;
    let parts = crate::policy::wrap(last.content.trim_start(), room, 0);
    let skipped = last.content.len() - last.content.trim_start().len();
    let mut out = Vec::new();
    for (i, part) in parts.into_iter().enumerate() {
        let mut l = if i == 0 {
            let mut first = std::mem::take(&mut spans);
            first.push(Span::raw(" ".repeat(skipped)));
            first
        } else {
            vec![Span::raw(" ".repeat(lead + skipped))]
        };
        l.push(Span::styled(part, style));
        out.push(Line::from(l));
    }
    out
}

fn unwrapped(keymap: &KeyMap, screens: &[ScreenEntry], theme: &Theme) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    keys_section(&mut out, keymap, theme);
    commands_section(&mut out, screens, theme);
    overview_section(&mut out, theme);
    out.push(Line::from(""));
    out.push(Line::from(Span::styled(
        "Keys can be rebound in the config file's [keys] section (see README).",
        theme.style(Role::Muted),
    )));
    out
}

/// Each mode's bindings, from the key-binding table.
fn keys_section(out: &mut Vec<Line<'static>>, keymap: &KeyMap, theme: &Theme) {
    let key_style = theme.style(Role::Accent);
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
}

/// The screen registry's commands, then the other commands.
fn commands_section(out: &mut Vec<Line<'static>>, screens: &[ScreenEntry], theme: &Theme) {
    let key_style = theme.style(Role::Accent);
    out.push(Line::from(Span::styled(
        "Commands (after :)",
        theme.style(Role::Header),
    )));
    let commands =
        registry::command_help(screens).chain(COMMANDS.iter().map(|(c, w)| ((*c).to_string(), *w)));
    for (cmd, what) in commands {
        out.push(Line::from(vec![
            Span::styled(format!("  {cmd:<22}"), key_style),
            Span::raw(what),
        ]));
    }
    out.push(Line::from(""));
}

/// The Overview's terms, after its gauge glyphs.
const OVERVIEW_TERMS: &[(&str, &str)] = &[
    (
        "views",
        "one row per share when a row per share and type does not fit (w switches, \
         space expands a share); i: by instance type, who has, borrows and lends each",
    ),
    (
        "bars",
        "one scale per instance type: a share of 2 draws half as long as one of 4; \
         on one row per share, in GPUs over all its types, one scale for all shares",
    ),
    ("USED", "instances in use / the share's limit"),
    (
        "GPUS",
        "one row per share: GPUs in use / of its limits, over all its types",
    ),
    (
        "TIGHTEST",
        "one row per share: its type nearest (or most over) its limit, in use / limit",
    ),
    (
        "ISP",
        "in-share preemption: higher-priority jobs may preempt lower ones of the same share",
    ),
    (
        "WAIT",
        "RUNNABLE jobs of the share (waiting to be placed, misconfigured ones included)",
    ),
    (
        "PRE",
        "preemptions of the share's jobs (their preempted attempts); highlighted when one loops",
    ),
    (
        "LOOP n",
        "n unfinished jobs preempted again and again (or over their share's interruption budget)",
    ),
    (
        "MISCONFIG n",
        "n jobs that can never run as configured (the attention panel says why)",
    ),
    ("← prod 2", "borrows 2 instances from share prod"),
    ("→ research 2", "lends 2 instances to share research"),
    (
        "attention",
        "the panel under the table lists what needs a look, most urgent first; \
         tab selects it, enter opens the job or share",
    ),
];

/// How to read the Overview: its gauge glyphs, in their colours, then its terms.
fn overview_section(out: &mut Vec<Line<'static>>, theme: &Theme) {
    let key_style = theme.style(Role::Accent);
    out.push(Line::from(Span::styled(
        "Reading the Overview",
        theme.style(Role::Header),
    )));
    for (c, role, what) in [
        (
            gauge::OWN,
            Role::Own,
            "own use: instances the share runs within its own limit",
        ),
        (
            gauge::BORROWED,
            Role::Borrowed,
            "borrowed: instances it runs beyond its limit, on other shares' idle capacity",
        ),
        (
            gauge::LENT,
            Role::Lent,
            "lent: its own capacity other shares are using (it can reclaim it by preemption)",
        ),
        (
            gauge::IDLE,
            Role::Idle,
            "idle: its own capacity nobody uses",
        ),
    ] {
        out.push(Line::from(vec![
            Span::raw("  "),
            Span::styled(c.to_string(), theme.style(role)),
            Span::raw(format!("  {what}")),
        ]));
    }
    for &(term, what) in OVERVIEW_TERMS {
        out.push(Line::from(vec![
            Span::styled(format!("  {term:<16}"), key_style),
            Span::raw(what),
        ]));
    }
}

/// Draws the help over `area`, scrolled by `scroll` (a text pane: it stops with the last line
/// at the bottom), with a scrollbar when it does not fit.
pub fn draw(
    frame: &mut Frame,
    area: Rect,
    help: Vec<Line<'static>>,
    scroll: &ListState,
    theme: &Theme,
) {
    frame.render_widget(Clear, area);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.style(Role::Border))
        .title(Span::styled(
            " Help — ↑↓ PgUp PgDn g G scroll, esc closes ",
            theme.style(Role::Title),
        ));
    super::screen::draw_text(frame, area, block, help, scroll, theme);
}
