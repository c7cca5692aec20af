//! `wit/` (0.3.0), its 0.2.11 snapshot and the seed's 0.2.0 fixture must parse, so a broken
//! edit fails CI; 0.2.11 must only add to 0.2.0 (every interface and function of the fixture
//! is still there), and 0.3.0 must keep every interface of 0.2.11 and change only how a
//! child starts.

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
    assert_eq!(pkg.name.to_string(), "wonopcode:agent-loop@0.3.0");
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
fn version_0_2_11_only_adds_to_the_seed_text() {
    let (old, old_pkg) = parse("wit/fixtures/v0.2.0");
    let (new, new_pkg) = parse("wit/since_v0_2");
    assert_eq!(
        old.packages[old_pkg].name.to_string(),
        "wonopcode:agent-loop@0.2.0"
    );
    assert_eq!(
        new.packages[new_pkg].name.to_string(),
        "wonopcode:agent-loop@0.2.11"
    );
    let before = functions(&old, old_pkg);
    let after = functions(&new, new_pkg);
    for f in &before {
        assert!(after.contains(f), "0.2.11 removed {}.{}", f.0, f.1);
    }
    assert!(after.len() > before.len());
}

#[test]
fn version_0_3_changes_only_how_a_child_starts() {
    let (old, old_pkg) = parse("wit/since_v0_2");
    let (new, new_pkg) = parse("wit");
    let before = functions(&old, old_pkg);
    let after = functions(&new, new_pkg);
    let context = |fs: &[(String, String)]| -> Vec<String> {
        fs.iter()
            .filter(|(i, _)| i == "context")
            .map(|(_, f)| f.clone())
            .collect()
    };
    let others = |fs: &[(String, String)]| -> Vec<(String, String)> {
        fs.iter().filter(|(i, _)| i != "context").cloned().collect()
    };
    // Every other interface keeps its functions (the host links one implementation under
    // both versions, so their shapes must match too: the e2e tests run 0.2 guests), and
    // adds only the custom tools' argument check.
    let (kept, added): (Vec<_>, Vec<_>) = others(&after)
        .into_iter()
        .partition(|f| others(&before).contains(f));
    assert_eq!(kept, others(&before));
    assert_eq!(
        added,
        [("custom-tools".to_owned(), "check-arguments".to_owned())]
    );
    let mut starts: Vec<String> = context(&after)
        .into_iter()
        .filter(|f| f.starts_with("spawn") || f.starts_with("start"))
        .collect();
    starts.sort();
    assert_eq!(starts, ["spawn", "spawn-parallel", "start"]);
    assert_eq!(context(&before).len(), 20);
}

#[test]
fn every_item_of_0_3_has_a_doc_comment() {
    let (resolve, package) = parse("wit");
    let mut missing = Vec::new();
    for (name, id) in &resolve.packages[package].interfaces {
        let iface = &resolve.interfaces[*id];
        if iface.docs.contents.is_none() {
            missing.push(name.clone());
        }
        for (fname, func) in &iface.functions {
            if func.docs.contents.is_none() {
                missing.push(format!("{name}.{fname}"));
            }
        }
        for (tname, ty) in &iface.types {
            let def = &resolve.types[*ty];
            // A `use` of another interface's type is documented where it is defined.
            if matches!(
                def.kind,
                wit_parser::TypeDefKind::Type(wit_parser::Type::Id(_))
            ) {
                continue;
            }
            if def.docs.contents.is_none() {
                missing.push(format!("{name}.{tname}"));
            }
            let fields: Vec<(&str, bool)> = match &def.kind {
                wit_parser::TypeDefKind::Record(r) => r
                    .fields
                    .iter()
                    .map(|f| (f.name.as_str(), f.docs.contents.is_some()))
                    .collect(),
                wit_parser::TypeDefKind::Variant(v) => v
                    .cases
                    .iter()
                    .map(|c| (c.name.as_str(), c.docs.contents.is_some()))
                    .collect(),
                wit_parser::TypeDefKind::Enum(e) => e
                    .cases
                    .iter()
                    .map(|c| (c.name.as_str(), c.docs.contents.is_some()))
                    .collect(),
                _ => Vec::new(),
            };
            for (field, documented) in fields {
                if !documented {
                    missing.push(format!("{name}.{tname}.{field}"));
                }
            }
        }
    }
    assert!(missing.is_empty(), "undocumented: {}", missing.join(", "));
}
