//! The architecture as a test: docs/architecture.md's code map says what each crate may not do; the
//! part of that a dependency edge can break is checked here on `cargo metadata` (each workspace
//! crate's declared, non-dev dependencies), in the spirit of rust-analyzer's `tidy`. A new edge
//! that the table rules out fails this test, naming the crate, the dependency and the rule.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test's unwrap is its assertion

use std::collections::BTreeMap;
use std::process::Command;

use serde_json::Value;

/// (crate, dependencies it may not have, why).
const FORBIDDEN: &[(&str, &[&str], &str)] = &[
    (
        "runread-core",
        &[
            "runread-sessions",
            "runread-store",
            "runread-gate",
            "runread-ingest",
            "runread-supervise",
            "runread-journal",
            "runread-service",
            "runread-artifacts",
            "runread-mcp",
            "runread-console",
            "tokio",
            "rusqlite",
            "postgres",
            "axum",
            "hyper",
            "notify",
            "reqwest",
            "rmcp",
        ],
        "the vocabulary sits under everything and does no I/O of its own",
    ),
    (
        "runread-sessions",
        &[
            "runread-store",
            "runread-gate",
            "runread-service",
            "runread-mcp",
            "runread-console",
            "runread-ingest",
            "runread-supervise",
            "rmcp",
            "axum",
        ],
        "the agent formats know nothing of MCP, grants or the store",
    ),
    (
        "runread-store",
        &[
            "runread-gate",
            "runread-service",
            "runread-mcp",
            "runread-console",
            "runread-ingest",
            "runread-supervise",
            "rmcp",
            "axum",
        ],
        "the store keeps records and decides no policy",
    ),
    (
        "runread-journal",
        &[
            "runread-sessions",
            "runread-store",
            "runread-service",
            "runread-mcp",
            "runread-console",
        ],
        "the journal knows nothing of agents or the store",
    ),
    (
        "runread-artifacts",
        &[
            "runread-gate",
            "runread-service",
            "runread-mcp",
            "runread-console",
            "runread-store",
        ],
        "artifact files know nothing of grants or MCP",
    ),
    (
        "runread-gate",
        &[
            "runread-service",
            "runread-mcp",
            "runread-console",
            "rmcp",
            "axum",
            "hyper",
        ],
        "the gate sees no transport",
    ),
    (
        "runread-ingest",
        &[
            "runread-gate",
            "runread-service",
            "runread-mcp",
            "runread-console",
            "rmcp",
            "axum",
        ],
        "the passive producer serves no reader",
    ),
    (
        "runread-supervise",
        &[
            "runread-service",
            "runread-mcp",
            "runread-console",
            "rmcp",
            "axum",
        ],
        "the supervisor decides no publication and serves no reader",
    ),
    (
        "runread-service",
        &[
            "runread-mcp",
            "runread-console",
            "rmcp",
            "axum",
            "hyper",
            "http",
            "tokio",
            "reqwest",
        ],
        "the service is transport-free: it sees no HTTP",
    ),
    (
        "runread-mcp",
        &[
            "runread-store",
            "runread-ingest",
            "runread-supervise",
            "runread-journal",
            "runread-console",
        ],
        "MCP goes through the service, never to the store",
    ),
    (
        "runread-console",
        &[
            "runread-ingest",
            "runread-supervise",
            "runread-journal",
            "rmcp",
        ],
        "the console acts through the owner's functions and serves no reader",
    ),
];

/// Crates that only tests and benchmarks may depend on.
const TEST_ONLY: &[&str] = &["runread-testkit", "runread-bench", "runread-fuzz-targets"];

/// `cargo metadata` of the workspace (its own packages only).
fn metadata() -> Value {
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
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("metadata is JSON")
}

/// Each workspace crate's normal (non-dev, non-build) dependencies, by name.
fn normal_dependencies() -> BTreeMap<String, Vec<String>> {
    metadata()["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .expect("dependencies")
                .iter()
                .filter(|d| d["kind"].is_null())
                .map(|d| d["name"].as_str().expect("name").to_owned())
                .collect();
            (p["name"].as_str().expect("name").to_owned(), deps)
        })
        .collect()
}

#[test]
fn no_crate_depends_on_what_the_crate_table_rules_out() {
    let deps = normal_dependencies();
    let mut broken = Vec::new();
    for (krate, forbidden, why) in FORBIDDEN {
        let Some(has) = deps.get(*krate) else {
            broken.push(format!("{krate} is not in the workspace"));
            continue;
        };
        for d in has.iter().filter(|d| forbidden.contains(&d.as_str())) {
            broken.push(format!("{krate} depends on {d}: {why}"));
        }
    }
    for (krate, has) in deps
        .iter()
        .filter(|(k, _)| !TEST_ONLY.contains(&k.as_str()))
    {
        for d in has.iter().filter(|d| TEST_ONLY.contains(&d.as_str())) {
            broken.push(format!(
                "{krate} depends on {d}, which only tests and benchmarks may use"
            ));
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

#[test]
fn every_internal_crate_is_named_in_the_workspace_and_the_rules() {
    let deps = normal_dependencies();
    let ruled: Vec<&str> = FORBIDDEN.iter().map(|(k, _, _)| *k).collect();
    for krate in deps.keys().filter(|k| k.starts_with("runread")) {
        assert!(
            ruled.contains(&krate.as_str())
                || TEST_ONLY.contains(&krate.as_str())
                || krate == "runread",
            "{krate} has no rule here: say what it may not depend on"
        );
    }
}

/// One version of everything: an internal crate, or an outside crate that two crates use, is
/// declared once in `[workspace.dependencies]` and inherited (`workspace = true`), so a version
/// or feature bump is one line and two crates can never disagree.
#[test]
fn every_shared_dependency_is_inherited_from_the_workspace() {
    let meta = metadata();
    let packages = meta["packages"].as_array().expect("packages");
    let mut users: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for p in packages {
        let manifest = p["manifest_path"].as_str().expect("manifest path");
        for d in p["dependencies"].as_array().expect("dependencies") {
            let name = d["name"].as_str().expect("name").to_owned();
            let list = users.entry(name).or_default();
            if !list.contains(&manifest) {
                list.push(manifest);
            }
        }
    }
    let mut broken = Vec::new();
    for (name, manifests) in &users {
        if manifests.len() < 2 && !name.starts_with("runread") {
            continue;
        }
        for manifest in manifests {
            let text = std::fs::read_to_string(manifest).expect("manifest");
            for line in text.lines().map(str::trim) {
                let declares =
                    line.starts_with(&format!("{name} =")) || line.starts_with(&format!("{name}."));
                if declares && !line.contains("workspace = true") {
                    broken.push(format!(
                        "{manifest}: `{line}` does not inherit from the workspace"
                    ));
                }
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}
