//! The crate graph is the architecture: README's "Architecture in one page" table, read here,
//! must be what `cargo metadata` says the workspace's crates depend on, each crate may depend
//! only on crates above it in the table, and only `quotatop-aws` may depend on the AWS SDK.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

const ROOT: &str = "quotatop";
const PREFIX: &str = "quotatop-";

/// README's table: (crate, the crates of ours it names in "depends on"), in table order.
fn readme_table() -> Vec<(String, BTreeSet<String>)> {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README.md");
    let start = readme
        .find("| crate | holds | depends on |")
        .expect("README has the crate table");
    let mut rows = Vec::new();
    for line in readme[start..].lines().skip(2) {
        if !line.starts_with('|') {
            break;
        }
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // ["", crate, holds, depends on, ""]
        let name = cells[1]
            .split('`')
            .nth(1)
            .unwrap_or_else(|| panic!("no crate name in {line}"))
            .to_string();
        let deps: BTreeSet<String> = cells[3]
            .split('`')
            .skip(1)
            .step_by(2)
            .map(|d| format!("{PREFIX}{d}"))
            .collect();
        rows.push((name, deps));
    }
    rows
}

/// `cargo metadata`: each workspace package's normal (non-dev, non-build) dependencies.
fn metadata() -> BTreeMap<String, BTreeSet<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("metadata is JSON");
    let mut graph = BTreeMap::new();
    for p in v["packages"].as_array().expect("packages") {
        let name = p["name"].as_str().expect("name").to_string();
        let deps = p["dependencies"]
            .as_array()
            .expect("dependencies")
            .iter()
            .filter(|d| d["kind"].is_null())
            .map(|d| d["name"].as_str().expect("dep name").to_string())
            .collect();
        graph.insert(name, deps);
    }
    graph
}

fn ours(deps: &BTreeSet<String>) -> BTreeSet<String> {
    deps.iter()
        .filter(|d| d.starts_with(PREFIX))
        .cloned()
        .collect()
}

#[test]
fn the_readme_table_is_the_crate_graph_and_each_crate_depends_only_on_crates_above_it() {
    let table = readme_table();
    let graph = metadata();
    let in_table: BTreeSet<&str> = table.iter().map(|(n, _)| n.as_str()).collect();
    let in_workspace: BTreeSet<&str> = graph.keys().map(String::as_str).collect();
    assert_eq!(
        in_table, in_workspace,
        "README's crate table and the workspace's packages differ"
    );
    let mut above = BTreeSet::new();
    for (name, readme_deps) in &table {
        let actual = ours(&graph[name]);
        assert_eq!(
            &actual, readme_deps,
            "{name}: Cargo.toml depends on {actual:?}, README says {readme_deps:?}"
        );
        for d in &actual {
            assert!(
                above.contains(d),
                "{name} depends on {d}, which is not above it in the table: a cycle or a climb"
            );
        }
        above.insert(name.clone());
    }
    assert_eq!(
        table.last().map(|(n, _)| n.as_str()),
        Some(ROOT),
        "the binary package is the top row"
    );
}

#[test]
fn only_the_aws_crate_depends_on_the_aws_sdk() {
    for (name, deps) in metadata() {
        let sdk: Vec<&String> = deps
            .iter()
            .filter(|d| d.starts_with("aws-sdk-") || d.starts_with("aws-config"))
            .collect();
        if name != "quotatop-aws" {
            assert!(
                sdk.is_empty(),
                "{name} depends on {sdk:?}: only quotatop-aws touches AWS SDK types"
            );
        }
    }
}
