//! Entering and leaving the terminal's raw/alternate-screen mode. Restoring cannot be skipped:
//! `ratatui::try_init` installs a panic hook that restores before the panic message prints, and
//! [`TerminalGuard`] restores on drop, so every return path (`?` included) leaves a usable shell.

use std::mem::ManuallyDrop;

use ratatui::DefaultTerminal;

use super::TuiError;

pub struct TerminalGuard {
    /// Never dropped: ratatui's `Terminal` prints with `eprintln!` when it cannot show the
    /// cursor on drop, which panics when the terminal is gone (SIGHUP after the pty closed) and,
    /// while unwinding, aborts before the demo's temporary directory is removed. The guard
    /// restores the terminal itself, ignoring errors, and the process is leaving anyway.
    pub terminal: ManuallyDrop<DefaultTerminal>,
}

impl TerminalGuard {
    pub fn enter() -> Result<Self, TuiError> {
        let terminal = ratatui::try_init()?;
        Ok(Self {
            terminal: ManuallyDrop::new(terminal),
        })
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        // Nothing useful can be done if restoring fails while already leaving.
        let _ = self.terminal.show_cursor();
        let _ = ratatui::try_restore();
    }
}
