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
