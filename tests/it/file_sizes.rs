//! Files a reader can hold: README is a first visit (at most `README_BAR` lines) and every guide
//! it moved out is linked from its Documentation table; no non-test source file passes
//! `SOURCE_BAR` lines. Like `layers.rs` for the crate graph, this keeps the structure from
//! growing back: each failure names the file and where its content belongs.

use std::path::{Path, PathBuf};

/// README's bar: what it is, the two commands, the commands table, the layer table and links.
const README_BAR: usize = 300;
/// A source file's bar: one idea per file, named for what it holds.
const SOURCE_BAR: usize = 600;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn line_count(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .count()
}

/// A file of test code: a `tests.rs` module, a `*_tests.rs` file, or anything under a `tests/`
/// folder (a crate's integration tests, or a module's `tests/` children).
fn is_test_file(relative: &Path) -> bool {
    let name = relative.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name == "tests.rs"
        || name.ends_with("_tests.rs")
        || relative.components().any(|c| c.as_os_str() == "tests")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every non-test source file of the product: `src/` and each crate's `src/`.
fn product_sources() -> Vec<PathBuf> {
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    for krate in std::fs::read_dir(root().join("crates")).unwrap() {
        rust_files(&krate.unwrap().path().join("src"), &mut files);
    }
    files.retain(|f| !is_test_file(f.strip_prefix(root()).unwrap()));
    files.sort();
    files
}

/// The files over `bar`, each with the sentence that says where its content belongs.
fn oversized_sources(files: &[PathBuf], bar: usize) -> Vec<String> {
    files
        .iter()
        .filter_map(|f| {
            let n = line_count(f);
            let rel = f.strip_prefix(root()).unwrap_or(f);
            (n > bar).then(|| {
                let folder = rel.with_extension("");
                format!(
                    "{}: {n} lines (bar: {bar}). Split it along the seams it has (a screen's state, \
                     its drawing and its rows; a command's arguments, its steps and its output) \
                     into child modules under {}/, so each file holds one idea and its name says \
                     which",
                    rel.display(),
                    folder.display()
                )
            })
        })
        .collect()
}

#[test]
fn no_product_source_file_passes_the_bar() {
    let files = product_sources();
    assert!(
        files.len() > 100,
        "found only {} source files: is the walk looking in the right place?",
        files.len()
    );
    let over = oversized_sources(&files, SOURCE_BAR);
    assert!(over.is_empty(), "\n{}", over.join("\n"));
}

/// The guard itself: a file over the bar is named with where its content belongs, and test
/// files are not product sources.
#[test]
fn the_guard_names_an_oversized_file_and_where_it_belongs() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.rs");
    std::fs::write(&big, "// x\n".repeat(SOURCE_BAR + 1)).unwrap();
    let small = dir.path().join("small.rs");
    std::fs::write(&small, "// x\n".repeat(SOURCE_BAR)).unwrap();
    let over = oversized_sources(&[big, small], SOURCE_BAR);
    assert_eq!(over.len(), 1, "{over:?}");
    assert!(
        over[0].contains("big.rs: 601 lines (bar: 600)"),
        "{}",
        over[0]
    );
    assert!(over[0].contains("child modules under"), "{}", over[0]);
    assert!(is_test_file(Path::new("crates/engine/src/tests.rs")));
    assert!(is_test_file(Path::new(
        "crates/tui/src/overview/tests/rows.rs"
    )));
    assert!(!is_test_file(Path::new("crates/tui/src/jobs.rs")));
}

#[test]
fn readme_is_a_first_visit() {
    let n = line_count(&root().join("README.md"));
    assert!(
        n <= README_BAR,
        "README.md: {n} lines (bar: {README_BAR}). A first visit needs what quotatop is, the two \
         commands, the commands table, the layer table and links to the guides: move the rest \
         into docs/ (the console into docs/operator.md, the shared store into docs/team.md, the \
         policy into docs/policy.md, logs and checkpoints into docs/logs-and-checkpoints.md, the \
         emulator into docs/emulator.md, measurements into docs/figures.md) and link the guide \
         from README's Documentation table"
    );
}

/// Every guide in docs/ is reachable from README's Documentation table, so what moved out of
/// README can be found from it.
#[test]
fn every_guide_is_in_the_readmes_documentation_table() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let start = readme
        .find("| guide | for | what it holds |")
        .expect("README has its Documentation table");
    let table: String = readme[start..]
        .lines()
        .take_while(|l| l.starts_with('|'))
        .collect::<Vec<_>>()
        .join("\n");
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(root().join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            let name = format!("(docs/{})", path.file_name().unwrap().to_string_lossy());
            if !table.contains(&name) {
                missing.push(name);
            }
        }
    }
    missing.sort();
    assert!(
        missing.is_empty(),
        "README's Documentation table does not link {missing:?}: add a row (guide, for whom, what \
         it holds) for each"
    );
}
