//! Drawing the whole console from `&App`: the status bar, the current screen, help or the
//! priority dialog over it, and the footer.

use ratatui::Frame;
use ratatui::layout::{Alignment, Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::{App, MIN_HEIGHT, MIN_WIDTH};
use crate::keymap::{Action, Mode};
use crate::screen::DrawCtx;
use crate::status_bar::{self, PastMark};
use crate::theme::Role;
use crate::{footer, help, messages};

impl App {
    /// Draws the whole console.
    pub fn draw(&mut self, frame: &mut Frame) {
        self.shown_age = self.age_seconds();
        self.dirty = false;
        // The screen learns its room first (the Overview picks its view by it).
        let [_, body, _] = self.frame_areas(frame.area());
        let (ctx, screen) = self.split();
        screen.fit(body, ctx.data, ctx.queue);
        if self.help {
            // The help wraps at the body's width: its scroll has as many lines as are drawn.
            let n = help::lines(
                &self.keymap,
                self.screens.entries(),
                &self.theme,
                help_width(body),
            )
            .len();
            self.help_scroll.set_rows((0..n).collect(), |_| false);
        }
        self.render(frame);
        self.theme.paint_background(frame.buffer_mut());
    }

    /// Whether the current screen does something with `action` (its footer hint shows only
    /// then).
    fn offers(&self, action: Action) -> bool {
        let screen = self.current();
        let queue = self.queue.as_deref();
        match action {
            Action::FilterMode => screen.list_ref().is_some(),
            Action::SortNext | Action::SortPrev | Action::SortReverse => {
                !screen.sort_columns().is_empty()
            }
            Action::Enter => screen.enter(self.shown(), queue).is_some(),
            Action::Back => {
                !self.stack.is_empty()
                    || screen.list_ref().is_some_and(|l| !l.filter.text.is_empty())
            }
            Action::Priority | Action::Terminate | Action::Requeue => {
                !self.status.read_only
                    && self.status.config_broken.is_none()
                    && self.travel.past().is_none()
                    && screen.selected_job(&self.data, queue).is_some()
            }
            Action::NextPane => screen.has_panes(),
            Action::Wide
            | Action::Expand
            | Action::ByType
            | Action::Mark
            | Action::MarkAll
            | Action::ClearMarks => screen.own_actions().contains(&action),
            Action::Follow
            | Action::NextMatch
            | Action::PrevMatch
            | Action::ScrollLeft
            | Action::ScrollRight => screen.own_actions().contains(&action),
            // A screen on a job (the log pane) opens over one that has a job selected.
            Action::Open(kind) if self.opens_on_job(kind) => {
                kind != screen.kind() && screen.selected_job(self.shown(), queue).is_some()
            }
            Action::NextQueue => self.shown().queues().len() > 1,
            // Time travel's keys, or the screen's own (the log pane's attempts).
            Action::Older | Action::Newer => {
                screen.own_actions().contains(&action) || self.history()
            }
            Action::Live => self.history(),
            _ => true,
        }
    }

    /// Whether the screen of `kind` opens on the selected job.
    fn opens_on_job(&self, kind: crate::screen::Kind) -> bool {
        matches!(
            self.screens.get(kind).map(|e| e.opens),
            Some(crate::registry::Opens::OnJob(_))
        )
    }

    /// Rendering proper, from `&self`.
    pub fn render(&self, frame: &mut Frame) {
        let area = frame.area();
        let theme = &self.theme;
        if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
            self.render_too_small(frame, area);
            return;
        }
        let [status, body, foot] = self.frame_areas(area);
        self.render_status_bar(frame, status);
        // The past is drawn inside borders of its own role, so no screen of it passes for live.
        let past_theme;
        // Stale live data (its refresh failed) likewise, in the warning colour.
        let theme = if self.travel.past().is_some() {
            past_theme = theme.with_past_borders();
            &past_theme
        } else if status_bar::stale(&self.data, self.queue.as_deref()).is_some() {
            past_theme = theme.with_stale_borders();
            &past_theme
        } else {
            theme
        };
        let ctx = DrawCtx {
            data: self.shown(),
            queue: self.queue.as_deref(),
            theme,
            marks: &self.marks,
            keymap: &self.keymap,
        };
        self.current().draw(frame, body, &ctx);
        if self.help {
            let lines = help::lines(
                &self.keymap,
                self.screens.entries(),
                theme,
                help_width(body),
            );
            help::draw(frame, body, lines, &self.help_scroll, theme);
        }
        if self.messages_open {
            let close = self.keymap.first_key(Action::Back);
            messages::draw(frame, body, &self.messages, &close, theme);
        }
        if let Some(d) = &self.dialog {
            d.draw(frame, body, &self.keymap, theme);
        }
        if let Some(d) = &self.acting {
            d.draw(frame, body, &self.keymap, theme);
        }
        let dialog_open = self.dialog.is_some() || self.acting.is_some();
        let offered = |action| self.offers(action);
        let view = footer::FooterView {
            input: &self.input,
            flash: self.footer_flash(),
            keymap: &self.keymap,
            mode: if dialog_open {
                Mode::Dialog
            } else {
                Mode::Normal
            },
            offered: &offered,
            screen: Some(self.current().kind()),
            marked: self
                .shown()
                .queue(self.queue.as_deref())
                .map_or(0, |(q, _)| self.marks.count(&q.key())),
        };
        footer::draw(frame, foot, &view, theme);
    }

    /// A terminal smaller than the console needs: what it is, what it needs, how to quit.
    fn render_too_small(&self, frame: &mut Frame, area: Rect) {
        let theme = &self.theme;
        let text = vec![
            Line::from(Span::styled(
                "terminal too small",
                theme.style(Role::Critical),
            )),
            Line::from(format!(
                "{}×{}, need {MIN_WIDTH}×{MIN_HEIGHT}",
                area.width, area.height
            )),
            Line::from(Span::styled(
                format!("{} quits", self.keymap.first_key(Action::Quit)),
                theme.style(Role::Muted),
            )),
        ];
        let top = area.height.saturating_sub(3) / 2;
        let [_, mid, _] = Layout::vertical([
            Constraint::Length(top),
            Constraint::Length(3),
            Constraint::Fill(1),
        ])
        .areas(area);
        frame.render_widget(
            Paragraph::new(text)
                .alignment(Alignment::Center)
                .wrap(Wrap { trim: true }),
            mid,
        );
    }

    /// The status bar, with the past snapshot's mark when travelling.
    fn render_status_bar(&self, frame: &mut Frame, status: Rect) {
        let theme = &self.theme;
        let past_mark = self.travel.past().map(|p| PastMark {
            taken_at: p.taken_at(),
            data_at: p.data_at(self.queue.as_deref()),
            position: p.position,
            total: p.total,
            older: self.keymap.first_key(Action::Older),
            newer: self.keymap.first_key(Action::Newer),
            live: self.keymap.first_key(Action::Live),
        });
        let view = status_bar::StatusView {
            live: &self.data,
            shown: self.shown(),
            past: past_mark.as_ref(),
            queue: self.queue.as_deref(),
            info: &self.status,
            now: (self.clock)(),
        };
        status_bar::draw(frame, status, &view, theme);
    }
}

/// The help's text width in `body` (inside its borders).
fn help_width(body: Rect) -> usize {
    usize::from(body.width.saturating_sub(2))
}

impl App {
    /// The message the footer shows: over a dialog, its hints, unless Ctrl-C asked whether to
    /// drop the change.
    fn footer_flash(&self) -> Option<&footer::Flash> {
        let dialog_open = self.dialog.is_some() || self.acting.is_some();
        self.flash
            .as_ref()
            .filter(|_| !dialog_open || self.quit_asked)
    }

    /// The status bar, the screen's body and the footer of a frame of `area` (the footer as
    /// high as its message needs).
    fn frame_areas(&self, area: Rect) -> [Rect; 3] {
        let foot = footer::height(self.footer_flash(), area.width);
        Layout::vertical([
            Constraint::Length(2),
            Constraint::Fill(1),
            Constraint::Length(foot),
        ])
        .areas(area)
    }
}
