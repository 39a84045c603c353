//! Entering and leaving the terminal's raw/alternate-screen mode. Restoring cannot be skipped:
//! `ratatui::try_init` installs a panic hook that restores before the panic message prints, and
//! [`TerminalGuard`] restores on drop, so every return path (`?` included) leaves a usable shell.

use ratatui::DefaultTerminal;

use super::TuiError;

pub struct TerminalGuard {
    pub terminal: DefaultTerminal,
}

impl TerminalGuard {
    pub fn enter() -> Result<Self, TuiError> {
        let terminal = ratatui::try_init()?;
        Ok(Self { terminal })
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        // Nothing useful can be done if restoring fails while already leaving.
        let _ = ratatui::try_restore();
    }
}
