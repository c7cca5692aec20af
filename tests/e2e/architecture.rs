//! The dependency rules of `docs/architecture.md`, read from `cargo metadata`: each crate
//! imports only the siblings its place in the layout allows (build and normal dependencies;
//! a test may use anything), nothing imports the binary, and every guest imports only the
//! guest SDK of the workspace. A new arrow between crates is a design decision: it is made
//! here and in the picture, or not at all.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::support::repo_root;

/// Each workspace crate and the siblings it may import.
const ALLOWED: &[(&str, &[&str])] = &[
    // The vocabulary imports no sibling.
    ("wonopcode-protocol", &[]),
    // The run engine stands on the vocabulary only.
    ("wonopcode-agent-loop", &["wonopcode-protocol"]),
    // What several crates ask of the operating system, below everything that asks it.
    ("wonopcode-os", &[]),
    // The one crate with `unsafe`, below the tool sources.
    ("wonopcode-sandbox", &[]),
    // Tool and model sources: the core and the sandbox, never each other.
    (
        "wonopcode-tools",
        &[
            "wonopcode-agent-loop",
            "wonopcode-os",
            "wonopcode-protocol",
            "wonopcode-sandbox",
        ],
    ),
    // A model source speaks the vocabulary only: no engine.
    (
        "wonopcode-providers",
        &["wonopcode-os", "wonopcode-protocol"],
    ),
    (
        "wonopcode-mcp",
        &[
            "wonopcode-agent-loop",
            "wonopcode-os",
            "wonopcode-protocol",
            "wonopcode-sandbox",
        ],
    ),
    // The journal keeps a run's events and files: the vocabulary, never the engine.
    ("wonopcode-journal", &["wonopcode-os", "wonopcode-protocol"]),
    // Fetching a published component knows nothing of what runs it.
    ("wonopcode-oci", &[]),
    // The context tree's vocabulary knows no WebAssembly.
    (
        "wonopcode-contexts",
        &["wonopcode-agent-loop", "wonopcode-protocol"],
    ),
    // The component host reaches tools and providers through the core's traits only.
    (
        "wonopcode-wasm-host",
        &[
            "wonopcode-agent-loop",
            "wonopcode-contexts",
            "wonopcode-protocol",
        ],
    ),
    // Component hooks run on the host's engine.
    (
        "wonopcode-hooks",
        &[
            "wonopcode-agent-loop",
            "wonopcode-os",
            "wonopcode-protocol",
            "wonopcode-sandbox",
            "wonopcode-wasm-host",
        ],
    ),
    // Named loops: what a loop is from `contexts`, the host for validating a module only,
    // `oci` for the references an entry may give.
    (
        "wonopcode-registry",
        &[
            "wonopcode-agent-loop",
            "wonopcode-contexts",
            "wonopcode-oci",
            "wonopcode-protocol",
            "wonopcode-sandbox",
            "wonopcode-wasm-host",
        ],
    ),
    // Many tasks: a task runner is the front-end's, which builds each run with `session`.
    ("wonopcode-batch", &["wonopcode-os", "wonopcode-protocol"]),
    // `session` may import every library crate.
    (
        "wonopcode-session",
        &[
            "wonopcode-agent-loop",
            "wonopcode-contexts",
            "wonopcode-hooks",
            "wonopcode-journal",
            "wonopcode-mcp",
            "wonopcode-oci",
            "wonopcode-os",
            "wonopcode-protocol",
            "wonopcode-providers",
            "wonopcode-registry",
            "wonopcode-sandbox",
            "wonopcode-tools",
            "wonopcode-wasm-host",
        ],
    ),
    // The editor front-end: runs built through `session`, the libraries' types it speaks of,
    // sessions kept in the `journal`.
    (
        "wonopcode-acp",
        &[
            "wonopcode-agent-loop",
            "wonopcode-journal",
            "wonopcode-mcp",
            "wonopcode-protocol",
            "wonopcode-session",
            "wonopcode-tools",
            "wonopcode-wasm-host",
        ],
    ),
    // A front-end: runs built through `session`, the libraries' types it speaks of.
    (
        "wonopcode-mcp-server",
        &[
            "wonopcode-agent-loop",
            "wonopcode-contexts",
            "wonopcode-mcp",
            "wonopcode-protocol",
            "wonopcode-registry",
            "wonopcode-session",
            "wonopcode-tools",
            "wonopcode-wasm-host",
        ],
    ),
    // The binary: every front-end and the libraries' types it renders.
    (
        "wonopcode",
        &[
            "wonopcode-acp",
            "wonopcode-agent-loop",
            "wonopcode-batch",
            "wonopcode-contexts",
            "wonopcode-journal",
            "wonopcode-mcp",
            "wonopcode-mcp-server",
            "wonopcode-os",
            "wonopcode-protocol",
            "wonopcode-providers",
            "wonopcode-registry",
            "wonopcode-sandbox",
            "wonopcode-session",
            "wonopcode-tools",
            "wonopcode-wasm-host",
        ],
    ),
    // Benchmarks drive whatever they measure.
    ("wonopcode-benches", &["*"]),
];

/// `cargo metadata` of the workspace at `dir`, without the registry's crates.
fn metadata(dir: &Path) -> Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(dir)
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("cargo metadata is JSON")
}

/// Each package of the workspace at `dir` and the workspace packages it imports (normal and
/// build dependencies, by path).
fn imports(dir: &Path) -> BTreeMap<String, Vec<String>> {
    let meta = metadata(dir);
    let packages = meta["packages"].as_array().expect("packages");
    let local: Vec<&str> = packages.iter().filter_map(|p| p["name"].as_str()).collect();
    packages
        .iter()
        .map(|p| {
            let name = p["name"].as_str().unwrap_or_default().to_owned();
            let deps = p["dependencies"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|d| d["kind"].as_str() != Some("dev"))
                .filter(|d| d["path"].is_string())
                .filter_map(|d| d["name"].as_str())
                .filter(|d| local.contains(d))
                .map(str::to_owned)
                .collect();
            (name, deps)
        })
        .collect()
}

#[test]
fn every_crate_imports_only_what_its_place_in_the_layout_allows() {
    let root = repo_root();
    let imports = imports(&root);
    let mut broken = Vec::new();
    for (package, deps) in &imports {
        let Some((_, allowed)) = ALLOWED.iter().find(|(name, _)| name == package) else {
            broken.push(format!(
                "`{package}` has no place in the layout: add it to docs/architecture.md and to ALLOWED here"
            ));
            continue;
        };
        for dep in deps {
            if dep == "wonopcode" {
                broken.push(format!("`{package}` imports the binary `wonopcode`"));
            } else if !allowed.contains(&"*") && !allowed.contains(&dep.as_str()) {
                broken.push(format!(
                    "`{package}` imports `{dep}`, which its place does not allow"
                ));
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
    // The rules are not vacuous: the crates they name are the workspace's.
    for (name, _) in ALLOWED {
        assert!(
            imports.contains_key(*name),
            "`{name}` is not in the workspace"
        );
    }
}

/// What the vocabulary may stand on from the registry: serde types and traits.
const PROTOCOL_DEPENDENCIES: &[&str] = &[
    "async-trait",
    "base64",
    "futures",
    "humantime",
    "schemars",
    "serde",
    "serde_json",
    "thiserror",
    "tokio",
];

#[test]
fn the_protocol_crate_stands_on_serde_and_traits_and_runs_nothing() {
    let meta = metadata(&repo_root());
    let protocol = meta["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["name"] == "wonopcode-protocol")
        .expect("the protocol crate is in the workspace");
    let deps: Vec<&Value> = protocol["dependencies"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|d| d["kind"].as_str() != Some("dev"))
        .collect();
    assert!(deps.len() >= 5, "{deps:?}");
    for dep in deps {
        let name = dep["name"].as_str().unwrap_or_default();
        assert!(
            PROTOCOL_DEPENDENCIES.contains(&name),
            "the protocol crate imports `{name}`: a vocabulary needs serde and traits only"
        );
        if name == "tokio" {
            // Its channel (an event sink), never a runtime, a process or a socket.
            assert_eq!(dep["uses_default_features"], false, "{dep}");
            assert_eq!(dep["features"], serde_json::json!(["sync"]), "{dep}");
        }
    }
}

#[test]
fn every_guest_imports_only_the_guest_sdk() {
    let guests = repo_root().join("guests");
    let imports = imports(&guests);
    assert!(imports.len() > 5, "{imports:?}");
    let sdk = "wonopcode-guest-sdk";
    assert!(imports.contains_key(sdk), "{imports:?}");
    let hook_sdk = "wonopcode-hook-sdk";
    for (package, deps) in &imports {
        for dep in deps {
            // A hook guest imports the hook SDK, a loop guest the loop SDK; the fixtures of
            // MCP tests import nothing of either.
            let allowed = dep == sdk || dep == hook_sdk;
            assert!(allowed, "guest `{package}` imports `{dep}`");
        }
    }
}

#[test]
fn the_registry_names_the_component_host_only_to_validate_a_module() {
    // What a loop, an agent and a grant are comes from `contexts`; the host's engine checks
    // a module (`metadata.rs`) and nothing else of the registry reaches it.
    let src = repo_root().join("crates/registry/src");
    let mut reaching = Vec::new();
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        if text.contains("wonopcode_wasm_host") {
            reaching.push(path.file_name().unwrap().to_string_lossy().into_owned());
        }
    }
    assert_eq!(reaching, ["metadata.rs"], "{reaching:?}");
}
