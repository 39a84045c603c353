//! `quotatop completions SHELL` and `quotatop man`: generated from the clap definitions.

use std::io::Write;

use clap::CommandFactory;

use crate::cli::Cli;

/// Writes `shell`'s completion script for quotatop to `out`.
pub fn write_completions(shell: clap_complete::Shell, out: &mut dyn Write) {
    clap_complete::generate(shell, &mut Cli::command(), "quotatop", out);
}

/// `quotatop completions SHELL`.
pub fn completions(shell: clap_complete::Shell) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    write_completions(shell, &mut out);
    out.flush()?;
    Ok(())
}

/// Writes the manual page (roff) to `out`.
pub fn write_man(out: &mut dyn Write) -> std::io::Result<()> {
    clap_mangen::Man::new(Cli::command()).render(out)
}

/// `quotatop man`.
pub fn man() -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    write_man(&mut out)?;
    out.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completions_name_the_subcommands_and_their_flags() {
        for shell in [
            clap_complete::Shell::Bash,
            clap_complete::Shell::Zsh,
            clap_complete::Shell::Fish,
        ] {
            let mut out = Vec::new();
            write_completions(shell, &mut out);
            let text = String::from_utf8(out).unwrap();
            for word in ["record", "set-priority", "metrics-addr", "completions"] {
                assert!(text.contains(word), "{shell:?} lacks {word}");
            }
        }
    }

    #[test]
    fn the_man_page_is_roff_naming_the_commands() {
        let mut out = Vec::new();
        write_man(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with(".ie"), "{}", &text[..40]);
        assert!(text.contains(".TH quotatop 1"), "{text}");
        assert!(text.contains("quotatop\\-record"), "{text}");
    }
}
