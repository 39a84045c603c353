//! One module per subcommand; `main.rs` dispatches here.

pub mod audit;
pub mod console;
pub mod demo;
pub mod drill;
pub mod emulator;
pub mod events;
mod follow;
pub mod job_change;
pub mod journal;
mod leader;
mod log_file;
pub mod logs;
pub mod policy;
pub mod record;
pub mod replay;
pub mod report;
pub mod report_format;
pub mod requeue;
pub mod set_priority;
pub mod shares;
pub mod shell;
pub mod simulate;
pub mod snapshot;
pub mod sources;
pub mod store;
pub mod sweep;
pub mod terminate;
pub mod tui;
pub mod warm;

/// Writes `text` to standard output. A closed pipe (`quotatop audit list | head`) ends the
/// output quietly and the command succeeds: the reader has what it wanted. Any other write
/// error is the command's error.
pub fn write_stdout(text: &str) -> anyhow::Result<()> {
    write_stdout_bytes(text.as_bytes())
}

/// [`write_stdout`] of bytes (a generated completion script).
pub fn write_stdout_bytes(bytes: &[u8]) -> anyhow::Result<()> {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(anyhow::anyhow!("cannot write to standard output: {e}")),
    }
}

/// [`write_stdout`] of each line of `text`, cleaned of control characters (names come from
/// files and the API).
pub fn print_clean_lines(text: &str) -> anyhow::Result<()> {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        out.push_str(&quotatop_model::clean_text(line));
        out.push('\n');
    }
    write_stdout(&out)
}

/// A command's error as `main` prints it: the message, then each cause once after `: `
/// (anyhow's `{:#}`; no error type repeats its source in its own message), every line cleaned
/// of control characters, since messages quote input (file contents, server messages).
pub fn error_text(e: &anyhow::Error) -> String {
    let text = format!("{e:#}");
    let lines: Vec<String> = text.lines().map(quotatop_model::clean_text).collect();
    lines.join("\n")
}

/// The tokio runtime a command runs its async part on: one helper for every command, so each
/// starts the same multi-threaded runtime (timers and I/O enabled) and fails the same way.
/// Asks `question [y/N]` on the terminal: `Ok(true)` for y/Y/yes. Off a terminal it fails
/// with `not_terminal` (the caller's "pass --yes" advice), so nothing happens unconfirmed.
pub fn confirm(question: &str, not_terminal: &str) -> anyhow::Result<bool> {
    use std::io::{BufRead as _, IsTerminal as _, Write as _};
    if !std::io::stdin().is_terminal() {
        anyhow::bail!("{not_terminal}");
    }
    print!("{question} [y/N] ");
    std::io::stdout().flush().ok();
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
}

pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    use anyhow::Context as _;
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

#[cfg(test)]
mod tests {
    use super::error_text;

    fn cause() -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::NotFound, "the disk said no")
    }

    /// Each error type that wraps an I/O error prints it once, after its own message, however
    /// many layers of context sit above it.
    #[test]
    fn the_printed_chain_names_the_cause_once() {
        let errors: Vec<anyhow::Error> = vec![
            crate::config::ConfigError::Read {
                path: "/etc/q.toml".into(),
                source: cause(),
            }
            .into(),
            quotatop_store::journal::JournalError::Open {
                path: "/var/j.sqlite3".into(),
                source: cause(),
            }
            .into(),
            quotatop_store::journal::JournalError::CreateDir {
                path: "/var/j".into(),
                source: cause(),
            }
            .into(),
            quotatop_store::audit::AuditError::Io {
                path: "/var/audit.jsonl".into(),
                source: cause(),
            }
            .into(),
            quotatop_emulator::EmulatorError::Bind {
                addr: ([127, 0, 0, 1], 80).into(),
                source: cause(),
            }
            .into(),
            quotatop_emulator::EmulatorError::ReadScenario {
                path: "s.toml".into(),
                source: cause(),
            }
            .into(),
            quotatop_replay::philly::TraceError::Io {
                path: "trace_a.csv".into(),
                source: cause(),
            }
            .into(),
        ];
        for e in errors {
            let e = e.context("the command failed");
            let text = error_text(&e);
            assert_eq!(text.matches("the disk said no").count(), 1, "{text}");
            assert!(text.starts_with("the command failed: "), "{text}");
            assert!(text.ends_with(": the disk said no"), "{text}");
        }
        let read = error_text(&anyhow::Error::from(crate::config::ConfigError::Read {
            path: "/etc/q.toml".into(),
            source: cause(),
        }));
        assert_eq!(
            read,
            "cannot read config file /etc/q.toml: the disk said no"
        );
        // The library's own chain walk, for status lines and warnings, reads the same.
        let journal = quotatop_store::journal::JournalError::Open {
            path: "/var/j.sqlite3".into(),
            source: cause(),
        };
        assert_eq!(
            quotatop_model::error_chain(&journal),
            "cannot open the journal /var/j.sqlite3: the disk said no"
        );
    }

    #[test]
    fn a_config_warning_names_the_cause_once() {
        let loaded = crate::config::load(&crate::config::Overrides {
            config_path: Some("/nonexistent/quotatop.toml".into()),
            ..Default::default()
        });
        let w = &loaded.warnings[0];
        assert!(
            w.starts_with("cannot read config file /nonexistent/quotatop.toml: "),
            "{w}"
        );
        assert_eq!(w.matches("No such file or directory").count(), 1, "{w}");
    }
}
