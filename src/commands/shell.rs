//! Shell integration: completion scripts (clap_complete) and the manual page (clap_mangen),
//! both generated from the one command-line definition in `cli.rs`.

use std::io::Write as _;

use anyhow::Context as _;
use clap::CommandFactory as _;

use crate::cli::Cli;

/// Writes the completion script for `shell` to stdout.
pub fn completions(shell: clap_complete::Shell) -> anyhow::Result<()> {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "quotatop", &mut out);
    super::write_stdout_bytes(&out)
}

/// Writes the top manual page (roff) to stdout, or with `dir` every page into it: quotatop.1
/// and quotatop-SUB.1 (quotatop-audit-list.1, …) for every subcommand, so the pages the top
/// one refers to exist. Each has ENVIRONMENT and FILES sections; the console's pages (the top
/// one, tui, demo) list the keys.
pub fn man(dir: Option<&std::path::Path>) -> anyhow::Result<()> {
    let mut cmd = Cli::command();
    cmd.build();
    let Some(dir) = dir else {
        return super::write_stdout_bytes(&page(&cmd, true)?);
    };
    public_dir(dir).with_context(|| format!("cannot create the directory {}", dir.display()))?;
    let mut pages = Vec::new();
    collect(&cmd, "quotatop", &mut pages);
    for (name, sub) in &pages {
        let console = matches!(name.as_str(), "quotatop" | "quotatop-tui" | "quotatop-demo");
        let path = dir.join(format!("{name}.1"));
        public_file(&path, &page(sub, console)?)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    println!("wrote {} manual pages to {}", pages.len(), dir.display());
    Ok(())
}

/// Creates `dir` (and its parents) readable by everyone and writable by the owner only (0755,
/// or tighter by the umask): manual pages are for every user, but a directory writable by all
/// (what `create_dir_all` makes under `umask 000`) lets anyone plant a page.
fn public_dir(dir: &std::path::Path) -> std::io::Result<()> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o755);
    b.create(dir)
}

/// Writes `bytes` to `path` (truncating it), created 0644 (or tighter by the umask).
fn public_file(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o644);
    opts.open(path)?.write_all(bytes)
}

/// `cmd` and every subcommand below it (`help` too: the top page refers to it).
fn collect(cmd: &clap::Command, name: &str, out: &mut Vec<(String, clap::Command)>) {
    out.push((name.to_string(), cmd.clone()));
    for sub in cmd.get_subcommands() {
        collect(sub, &format!("{name}-{}", sub.get_name()), out);
    }
}

/// One page: clap's sections, then the environment, the files and (for the console) the keys.
/// The page's name is the command's display name (clap gives a built subcommand
/// `quotatop-audit-list`).
fn page(cmd: &clap::Command, keys: bool) -> anyhow::Result<Vec<u8>> {
    let mut out = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .render(&mut out)
        .context("cannot render the manual page")?;
    out.extend_from_slice(extra_sections(keys).as_bytes());
    Ok(out)
}

/// roff text, with what roff would take as a request or an escape made literal.
fn roff(text: &str) -> String {
    let t = text.replace('\\', "\\e").replace('-', "\\-");
    if t.starts_with('.') || t.starts_with('\'') {
        format!("\\&{t}")
    } else {
        t
    }
}

const ENVIRONMENT: &[(&str, &str)] = &[
    (
        "QUOTATOP_CONFIG",
        "the config file (default: config.toml in the user's config directory)",
    ),
    ("QUOTATOP_THEME", "the console's colour theme"),
    ("QUOTATOP_QUEUES", "queues to watch, comma-separated"),
    (
        "QUOTATOP_READ_ONLY",
        "1/true/yes/on: change nothing (a refusal names what set it)",
    ),
    (
        "QUOTATOP_AUDIT_LOG",
        "the audit log (default: audit.jsonl in the user's data directory)",
    ),
    (
        "QUOTATOP_AUDIT_LOCK_TIMEOUT",
        "seconds to wait for the audit log's lock",
    ),
    ("NO_COLOR", "non-empty: no colours"),
    ("AWS_PROFILE", "the AWS profile (as --profile)"),
    (
        "AWS_REGION, AWS_DEFAULT_REGION",
        "the AWS region (as --region)",
    ),
    (
        "AWS_ENDPOINT_URL",
        "the AWS Batch endpoint (as --endpoint-url), e.g. the emulator's",
    ),
    (
        "AWS_CONFIG_FILE, AWS_SHARED_CREDENTIALS_FILE",
        "the AWS config and credentials files",
    ),
    ("HTTPS_PROXY", "a proxy for the calls to AWS"),
];

fn extra_sections(keys: bool) -> String {
    let mut s = String::from(".SH ENVIRONMENT\n");
    for (name, what) in ENVIRONMENT {
        s.push_str(&format!(".TP\n\\fB{}\\fR\n{}\n", roff(name), roff(what)));
    }
    let config = crate::config::project_dirs()
        .map(|d| d.config_dir().join("config.toml").display().to_string())
        .unwrap_or_else(|| "config.toml in the user's config directory".to_string());
    let data = crate::config::project_dirs()
        .map(|d| d.data_dir().display().to_string())
        .unwrap_or_else(|| "the user's data directory".to_string());
    s.push_str(".SH FILES\n");
    for (file, what) in [
        (config.clone(), "settings: theme, queues, [priority], [shares], keys, [journal], [scorecard], [[sources]]".to_string()),
        (config.replace("config.toml", "themes/"), "user themes (NAME.toml), chosen with --theme NAME".to_string()),
        (format!("{data}/journal.sqlite3"), "the journal: snapshots, transitions and usage the console and `quotatop record` keep".to_string()),
        (format!("{data}/audit.jsonl"), "the audit log of every change (hash-chained; `quotatop audit verify`)".to_string()),
    ] {
        s.push_str(&format!(".TP\n\\fI{}\\fR\n{}\n", roff(&file), roff(&what)));
    }
    if keys {
        s.push_str(".SH KEYS\nThe defaults; `keys` in the config file rebinds them (`?` in the console lists those in force).\n");
        for b in quotatop_tui::keymap::DEFAULT_BINDINGS {
            s.push_str(&format!(
                ".TP\n\\fB{}\\fR\n{}\n",
                roff(&b.keys.join(", ")),
                roff(b.description)
            ));
        }
    }
    s
}
