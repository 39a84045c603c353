//! `quotatop completions SHELL` and `quotatop man`: generated from the command-line definition,
//! and understood by the tools that read them (bash completes subcommands from the script;
//! the man page is roff with every subcommand).

use crate::data_support::quotatop;

fn stdout(args: &[&str]) -> String {
    let out = quotatop().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn bash_completes_subcommands_from_the_generated_script() {
    let script = stdout(&["completions", "bash"]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("quotatop.bash");
    std::fs::write(&path, script).unwrap();
    // bash itself runs the completion function for `quotatop re<TAB>`.
    let probe = format!(
        "source {}; COMP_WORDS=(quotatop re); COMP_CWORD=1; _quotatop quotatop re quotatop; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        path.display()
    );
    let out = std::process::Command::new("bash")
        .args(["--norc", "-c", &probe])
        .output()
        .expect("bash runs (install bash)");
    let words = String::from_utf8_lossy(&out.stdout);
    for sub in ["record", "replay", "report"] {
        assert!(
            words.lines().any(|w| w == sub),
            "{sub} not completed: {words}"
        );
    }
    assert!(!words.lines().any(|w| w == "demo"), "{words}");
}

#[test]
fn zsh_and_fish_scripts_and_the_man_page_name_every_subcommand() {
    let zsh = stdout(&["completions", "zsh"]);
    let fish = stdout(&["completions", "fish"]);
    let man = stdout(&["man"]);
    assert!(zsh.starts_with("#compdef quotatop"), "{}", &zsh[..80]);
    assert!(man.contains(".TH quotatop 1"));
    for sub in [
        "demo",
        "emulator",
        "replay",
        "record",
        "set-priority",
        "completions",
    ] {
        assert!(zsh.contains(sub), "zsh lacks {sub}");
        assert!(fish.contains(sub), "fish lacks {sub}");
        // roff escapes hyphens.
        assert!(man.contains(&sub.replace('-', "\\-")), "man lacks {sub}");
    }
    let err = quotatop()
        .args(["completions", "nushell"])
        .output()
        .unwrap();
    assert!(!err.status.success());
    assert!(String::from_utf8_lossy(&err.stderr).contains("possible values"));
}

/// Issue 29 §2.13: `quotatop man --dir DIR` writes every page the top one refers to (one per
/// subcommand), each with ENVIRONMENT and FILES sections, and the console's with the keys.
#[test]
fn man_dir_writes_every_subcommands_page() {
    let dir = tempfile::tempdir().unwrap();
    let out = quotatop()
        .args(["man", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let top = std::fs::read_to_string(dir.path().join("quotatop.1")).unwrap();
    // Every page the top one names, e.g. quotatop\-demo(1), exists.
    let mut referred = 0;
    for part in top.split("quotatop\\-").skip(1) {
        let Some((name, _)) = part.split_once("(1)") else {
            continue;
        };
        let file = format!("quotatop-{}.1", name.replace("\\-", "-"));
        assert!(
            dir.path().join(&file).exists(),
            "{file} is referred to but missing"
        );
        referred += 1;
    }
    assert!(referred >= 10, "{top}");
    for (page, keys) in [
        ("quotatop-demo.1", true),
        ("quotatop-tui.1", true),
        ("quotatop-audit-list.1", false),
        ("quotatop-shares-plan.1", false),
    ] {
        let text = std::fs::read_to_string(dir.path().join(page)).unwrap();
        assert!(text.contains(".SH ENVIRONMENT"), "{page}");
        assert!(text.contains(".SH FILES"), "{page}");
        assert!(text.contains("QUOTATOP_READ_ONLY"), "{page}");
        assert_eq!(text.contains(".SH KEYS"), keys, "{page}");
    }
}

/// Issue 29 §2.13: bash completes `--theme` with the built-in themes, not file names.
#[test]
fn bash_completes_theme_names() {
    let script = stdout(&["completions", "bash"]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("quotatop.bash");
    std::fs::write(&path, script).unwrap();
    let probe = format!(
        "cd {}; source {}; COMP_WORDS=(quotatop tui --theme ''); COMP_CWORD=3; _quotatop quotatop '' --theme; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        dir.path().display(),
        path.display()
    );
    let out = std::process::Command::new("bash")
        .args(["--norc", "-c", &probe])
        .output()
        .expect("bash runs (install bash)");
    let words = String::from_utf8_lossy(&out.stdout);
    for theme in ["dark", "light", "high-contrast", "colorblind"] {
        assert!(
            words.lines().any(|w| w == theme),
            "{theme} not offered: {words:?}"
        );
    }
    assert!(
        !words.contains("quotatop.bash"),
        "file names offered: {words:?}"
    );
}

/// `quotatop completions bash | head -1`: the reader closes the pipe; the command ends quietly
/// with exit 0 (it printed "cannot write to standard output: Broken pipe" and exited 1). The
/// bash script (about 100 KB) is more than a pipe holds, so the writer meets the closed end.
#[test]
fn a_closed_pipe_ends_completions_quietly() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_quotatop"))
        .args(["completions", "bash"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(!first.is_empty());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.is_empty(), "{err}");
}
