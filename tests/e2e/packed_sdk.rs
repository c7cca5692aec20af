//! The guest author outside this repository, with the SDK as `cargo package` packs it (the
//! `.crate` crates.io would serve): unpacked into a directory of its own, named by version
//! from a project elsewhere (`[patch.crates-io]` stands in for the registry), built for
//! `wasm32-wasip2`, validated and run. The crate's own WIT is the host's, byte for byte.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{Scratch, repo_root};
use crate::templates::{build_rust, validates_and_runs};

/// The SDK crates, each with the WIT it carries and the host's it must equal.
const SDKS: [(&str, &str, &str); 2] = [("sdk", "wit", "wit"), ("hook-sdk", "wit", "wit/hooks")];

/// `cargo package` of the crate in `guests/DIR`, unpacked under `into`; the unpacked crate.
fn packed(dir: &str, into: &Path) -> PathBuf {
    let root = repo_root();
    let manifest = root.join("guests").join(dir).join("Cargo.toml");
    let (name, version) = (field(&manifest, "name"), field(&manifest, "version"));
    let target = root.join("target/packed-sdk");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(root.join("guests"))
        .args(["package", "--no-verify", "--allow-dirty", "-p", &name])
        .arg("--target-dir")
        .arg(&target)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cargo package: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let file = target.join(format!("package/{name}-{version}.crate"));
    std::fs::create_dir_all(into).unwrap();
    let out = Command::new("tar")
        .arg("xzf")
        .arg(&file)
        .arg("-C")
        .arg(into)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    into.join(format!("{name}-{version}"))
}

/// The `KEY = "…"` of a manifest's package (`name`, `version`).
fn field(manifest: &Path, key: &str) -> String {
    let text = std::fs::read_to_string(manifest).unwrap();
    let prefix = format!("{key} = \"");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|v| v.strip_suffix('"'))
        .unwrap_or_else(|| panic!("no {key} in {}", manifest.display()))
        .to_owned()
}

/// The first ```rust block of a Markdown page.
fn rust_block(page: &str) -> String {
    let start = page.find("```rust\n").expect("a rust block") + "```rust\n".len();
    let len = page[start..].find("```").expect("the block's end");
    page[start..start + len].to_owned()
}

#[test]
fn the_packed_sdk_builds_a_loop_outside_the_repository_that_validates_and_runs() {
    let s = Scratch::new();
    let sdk = packed("sdk", &s.outside("registry"));
    // Nothing of the checkout is needed: the crate holds its WIT.
    assert!(sdk.join("wit/world.wit").is_file());
    let version = field(&repo_root().join("guests/sdk/Cargo.toml"), "version");
    let project = s.outside("my-loop");
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::write(
        project.join("Cargo.toml"),
        format!(
            "[package]\nname = \"my-loop\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n\
             [lib]\ncrate-type = [\"cdylib\"]\n\n\
             [dependencies]\nwonopcode-guest-sdk = \"{version}\"\n\n\
             [patch.crates-io]\nwonopcode-guest-sdk = {{ path = {:?} }}\n\n\
             [profile.release]\nopt-level = \"s\"\nstrip = true\n\n[workspace]\n",
            sdk.display().to_string()
        ),
    )
    .unwrap();
    // The crate's own page's example is the loop.
    let readme = std::fs::read_to_string(sdk.join("README.md")).unwrap();
    std::fs::write(project.join("src/lib.rs"), rust_block(&readme)).unwrap();
    let wasm = build_rust(&project, "my_loop");
    validates_and_runs(&s, &wasm, "my-loop");
}

#[test]
fn each_sdk_carries_the_hosts_wit_byte_for_byte() {
    let root = repo_root();
    let s = Scratch::new();
    for (crate_dir, own, host) in SDKS {
        // In the crate as packed, not only in the checkout.
        let own = packed(crate_dir, &s.outside(crate_dir)).join(own);
        let host = root.join(host);
        let names = |dir: &Path| -> Vec<String> {
            let mut names: Vec<String> = std::fs::read_dir(dir)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".wit"))
                .collect();
            names.sort();
            names
        };
        assert_eq!(names(&own), names(&host), "{}", own.display());
        for name in names(&host) {
            assert!(
                std::fs::read(own.join(&name)).unwrap() == std::fs::read(host.join(&name)).unwrap(),
                "guests/{crate_dir}/wit/{name}, as packed, differs from {}/{name}: copy the host's",
                host.display()
            );
        }
    }
}
