//! `:messages`: every warning and error the console has shown (config problems first), kept
//! so none is lost when the footer moves on to the next key.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use super::text::clean;
use super::theme::{Role, Theme};
use quotatop_model::{HealthState, PollHealth, Snapshot};

/// At most this many are kept (the oldest error flashes go first; start-up warnings stay).
pub const MAX_MESSAGES: usize = 200;

/// The console's message list.
#[derive(Debug, Clone, Default)]
pub struct Messages {
    /// Warnings given at start (config file, theme, keys, journal): never dropped.
    pub startup: Vec<String>,
    /// Errors shown in the footer since, and the refreshes' errors, oldest first.
    pub later: Vec<String>,
    /// The errors of the latest refresh, so each is kept once, when it appears.
    refresh: Vec<String>,
}

impl Messages {
    /// The list with the warnings given at start.
    pub fn with_startup(startup: Vec<String>) -> Self {
        Self {
            startup,
            ..Self::default()
        }
    }

    pub fn len(&self) -> usize {
        self.startup.len() + self.later.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn push(&mut self, text: &str) {
        if self.later.last().map(String::as_str) == Some(text) {
            return;
        }
        if self.later.len() >= MAX_MESSAGES {
            self.later.remove(0);
        }
        self.later.push(text.to_string());
    }
}

impl Messages {
    /// Keeps the errors of a refresh the status bar shows (cut to its width there): its
    /// health's last error when it is not healthy, each source's, and each stale queue's
    /// reason; each once, when it appears.
    pub fn note_refresh(&mut self, snap: &Snapshot) {
        let mut now = Vec::new();
        let mut health = |who: &str, h: &PollHealth| {
            if h.state != HealthState::Healthy
                && let Some(e) = &h.last_error
            {
                now.push(format!("{who}{e}"));
            }
        };
        health("refresh: ", &snap.health);
        for src in &snap.sources {
            health(&format!("source {}: ", src.name), &src.health);
        }
        for q in &snap.queues {
            if let Some(r) = &q.stale_reason {
                now.push(format!("queue {}: stale: {r}", q.key()));
            }
        }
        for e in &now {
            if !self.refresh.contains(e) {
                self.push(&clean(e));
            }
        }
        self.refresh = now;
    }
}

/// Draws the list over `area`.
pub fn draw(frame: &mut Frame, area: Rect, messages: &Messages, close: &str, theme: &Theme) {
    frame.render_widget(Clear, area);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.style(Role::Border))
        .title(Span::styled(
            format!(" Messages ({}) — {close} closes ", messages.len()),
            theme.style(Role::Title),
        ));
    let mut lines = Vec::new();
    if messages.is_empty() {
        lines.push(Line::from(Span::styled(
            "no messages",
            theme.style(Role::Muted),
        )));
    }
    for (heading, list) in [
        ("At start", &messages.startup),
        ("Since (newest last)", &messages.later),
    ] {
        if list.is_empty() {
            continue;
        }
        lines.push(Line::from(Span::styled(heading, theme.style(Role::Header))));
        for m in list {
            lines.push(Line::from(vec![
                Span::styled("• ", theme.style(Role::Warning)),
                Span::raw(clean(m).into_owned()),
            ]));
        }
    }
    // The newest at the bottom stays in view.
    let inner_h = area.height.saturating_sub(2) as usize;
    let skip = lines.len().saturating_sub(inner_h.max(1)) as u16;
    frame.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .scroll((skip, 0))
            .block(block),
        area,
    );
}

#[cfg(test)]
#[path = "messages_tests.rs"]
mod tests;
