//! docs/operator.md's key table is the key map: every default binding (the screens' keys
//! included) with its keys, its footer label and what it does, and every label a screen gives
//! a key of its own there (`keymap::SCREEN_LABELS`), row for row. The footers are drawn from the
//! same table, so the doc says what the footers say.

use quotatop_tui::keymap::{DEFAULT_BINDINGS, Mode, SCREEN_LABELS};

const DOC: &str = include_str!("../../docs/operator.md");
/// The table's header line in docs/operator.md.
const HEADER: &str = "| where | keys | footer | `[keys]` name | what it does |";

fn mode_name(m: Mode) -> &'static str {
    match m {
        Mode::Normal => "screens",
        Mode::Prompt => "typing after `:` or `/`",
        Mode::Dialog => "a dialog",
    }
}

fn keys(ks: &[&str]) -> String {
    ks.iter()
        .map(|k| format!("`{k}`"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The rows the key map makes, in its order.
fn expected() -> Vec<String> {
    let mut rows: Vec<String> = DEFAULT_BINDINGS
        .iter()
        .map(|b| {
            format!(
                "| {} | {} | {} | {} | {} |",
                mode_name(b.mode),
                keys(b.keys),
                b.hint.unwrap_or("(only in `?`)"),
                b.name,
                b.description.replace('|', "\\|")
            )
        })
        .collect();
    for (kind, name, label) in SCREEN_LABELS {
        let b = DEFAULT_BINDINGS
            .iter()
            .find(|b| b.name == *name)
            .unwrap_or_else(|| panic!("SCREEN_LABELS names {name}, no such binding"));
        rows.push(format!(
            "| {kind:?} screen | {} | {label} | {name} | the same key, labelled for this screen |",
            keys(b.keys)
        ));
    }
    rows
}

/// The table's rows in docs/operator.md: after its header and separator, up to the first line
/// that is not a row.
fn documented() -> Vec<String> {
    let mut lines = DOC.lines().skip_while(|l| l.trim() != HEADER);
    assert!(
        lines.next().is_some(),
        "docs/operator.md has no key table (header {HEADER:?}); it should read:\n{HEADER}\n|---|---|---|---|---|\n{}",
        expected().join("\n")
    );
    lines
        .skip(1)
        .take_while(|l| l.starts_with('|'))
        .map(|l| l.trim().to_string())
        .collect()
}

#[test]
fn the_operator_guides_key_table_is_the_key_map() {
    let (doc, map) = (documented(), expected());
    let missing: Vec<&String> = map.iter().filter(|r| !doc.contains(r)).collect();
    let extra: Vec<&String> = doc.iter().filter(|r| !map.contains(r)).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "docs/operator.md's key table differs from the key map.\nmissing or changed:\n{}\n\
         not in the key map:\n{}\nthe table should read:\n{HEADER}\n|---|---|---|---|---|\n{}",
        missing
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        extra
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        map.join("\n")
    );
    assert_eq!(doc.len(), map.len(), "a row is listed twice");
}
