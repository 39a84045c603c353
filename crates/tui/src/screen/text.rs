//! Text panes and scrollbars: a scrolled pane of lines (built only for the range shown) and the
//! scrollbar on a bordered pane's right border.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, Paragraph, Scrollbar, ScrollbarOrientation, ScrollbarState};

#[cfg(test)]
use super::{Counted, count, counted};
use crate::list::ListState;
use crate::theme::{Role, Theme};

/// A scrollbar on the right border of `area` (a bordered pane) when `len` lines or rows do
/// not fit in the `viewport` shown from `offset`; nothing when they fit.
pub fn scrollbar(
    frame: &mut Frame,
    area: Rect,
    len: usize,
    offset: usize,
    viewport: usize,
    theme: &Theme,
) {
    if len <= viewport || viewport == 0 {
        return;
    }
    // One position per possible first line, so the thumb reaches the end with the last line.
    let mut state = ScrollbarState::new(len - viewport + 1)
        .viewport_content_length(viewport)
        .position(offset);
    let bar = Scrollbar::new(ScrollbarOrientation::VerticalRight)
        .begin_symbol(Some("▲"))
        .end_symbol(Some("▼"))
        .track_symbol(Some("│"))
        .thumb_symbol("█")
        .style(theme.style(Role::Border))
        .thumb_style(theme.style(Role::Accent));
    let inner = Rect {
        y: area.y.saturating_add(1),
        height: area.height.saturating_sub(2),
        ..area
    };
    frame.render_stateful_widget(bar, inner, &mut state);
}

/// Draws `lines` in `block` over `area` as a text pane scrolled by `scroll` (a
/// [`ListState::text_pane`]: it records the height and stops with the last line at the
/// bottom), with a scrollbar when they do not fit.
pub fn draw_text(
    frame: &mut Frame,
    area: Rect,
    block: Block,
    mut lines: Vec<Line>,
    scroll: &ListState,
    theme: &Theme,
) {
    let len = lines.len();
    let pane = TextPane {
        area,
        block,
        len,
        scroll,
        theme,
    };
    draw_text_window(frame, pane, |shown| lines.drain(shown).collect());
}

/// A text pane of `len` lines, for [`draw_text_window`].
pub struct TextPane<'b, 's> {
    pub area: Rect,
    pub block: Block<'b>,
    pub len: usize,
    pub scroll: &'s ListState,
    pub theme: &'s Theme,
}

/// [`draw_text`] for a long text: `shown` builds only the lines in the range the pane shows
/// (the lines are not wrapped, so line `i` is row `i - top`), not every line each frame.
pub fn draw_text_window<'a>(
    frame: &mut Frame,
    pane: TextPane,
    shown: impl FnOnce(std::ops::Range<usize>) -> Vec<Line<'a>>,
) {
    let height = pane.block.inner(pane.area).height as usize;
    pane.scroll.visible(height);
    let top = pane.scroll.pane_top(height).min(pane.len);
    let lines = shown(top..pane.len.min(top.saturating_add(height)));
    #[cfg(test)]
    count(Counted::LinesBuilt, lines.len());
    frame.render_widget(Paragraph::new(lines).block(pane.block), pane.area);
    scrollbar(frame, pane.area, pane.len, top, height, pane.theme);
}

/// How many lines text panes built on this thread (tests check a long pane builds only what
/// it shows).
#[cfg(test)]
pub fn lines_built() -> usize {
    counted(Counted::LinesBuilt)
}
