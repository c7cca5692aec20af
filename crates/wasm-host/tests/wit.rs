//! `wit/` and the seed's 0.2.0 fixture must parse, so a broken edit fails CI, and the 0.2.11
//! package must only add to 0.2.0: every interface and function of the fixture is still there.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use wit_parser::{Resolve, WorldItem};

fn parse(dir: &str) -> (Resolve, wit_parser::PackageId) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(dir);
    let mut resolve = Resolve::new();
    let (package, _) = resolve
        .push_dir(&root)
        .unwrap_or_else(|e| panic!("{dir} does not parse: {e:#}"));
    (resolve, package)
}

fn functions(resolve: &Resolve, package: wit_parser::PackageId) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (name, id) in &resolve.packages[package].interfaces {
        for func in resolve.interfaces[*id].functions.keys() {
            out.push((name.clone(), func.clone()));
        }
    }
    out.sort();
    out
}

#[test]
fn wit_parses_and_declares_the_world() {
    let (resolve, package) = parse("wit");
    let pkg = &resolve.packages[package];
    assert_eq!(pkg.name.to_string(), "wonopcode:agent-loop@0.2.11");
    let world = &resolve.worlds[pkg.worlds["agent-loop-world"]];
    let exports: Vec<String> = world
        .exports
        .values()
        .filter_map(|item| match item {
            WorldItem::Interface { id, .. } => resolve.interfaces[*id].name.clone(),
            _ => None,
        })
        .collect();
    assert_eq!(exports, ["agent-loop", "custom-tool-handler"]);
    assert_eq!(
        world.imports.len(),
        9,
        "config, providers, tools, custom-tools, context, ui, storage, system (and types)"
    );
    // The resumable world is the same world plus the `resumable` export.
    let resumable = &resolve.worlds[pkg.worlds["resumable-agent-loop-world"]];
    let names = |items: &mut dyn Iterator<Item = &WorldItem>| -> Vec<String> {
        let mut names: Vec<String> = items
            .filter_map(|item| match item {
                WorldItem::Interface { id, .. } => resolve.interfaces[*id].name.clone(),
                _ => None,
            })
            .collect();
        names.sort();
        names
    };
    assert_eq!(
        names(&mut resumable.exports.values()),
        ["agent-loop", "custom-tool-handler", "resumable"]
    );
    assert_eq!(
        names(&mut resumable.imports.values()),
        names(&mut world.imports.values())
    );
}

#[test]
fn version_0_2_5_only_adds_to_the_seed_text() {
    let (old, old_pkg) = parse("wit/fixtures/v0.2.0");
    let (new, new_pkg) = parse("wit");
    assert_eq!(
        old.packages[old_pkg].name.to_string(),
        "wonopcode:agent-loop@0.2.0"
    );
    let before = functions(&old, old_pkg);
    let after = functions(&new, new_pkg);
    for f in &before {
        assert!(after.contains(f), "0.2.11 removed {}.{}", f.0, f.1);
    }
    assert!(after.len() > before.len());
}
