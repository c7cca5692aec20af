//! Every Rust block of `docs/guest-authoring.md` is built: the guide's loop (section 2) is a
//! crate's loop, validated and run for a turn that reads a file; each fragment (a tool, a
//! spawn, a child that lives on) is compiled in the same crate, in a module of its own,
//! where `self` has custom tools and `task` is a `&str`, as the guide supposes. The team of
//! section 5 (one component, several roles) is a crate of its own that passes the test file
//! the guide gives beside it. The debugging example (section 7) is built and run by
//! `debug_guest.rs`.

use std::path::{Path, PathBuf};

use crate::support::{Scratch, repo_root};
use crate::templates::{build_rust, its_tests_pass, validates_and_runs};

/// The Rust blocks of the guide, in order.
fn rust_blocks() -> Vec<String> {
    let page = std::fs::read_to_string(repo_root().join("docs/guest-authoring.md")).unwrap();
    page.split("```rust\n")
        .skip(1)
        .map(|rest| rest.split("```").next().unwrap().to_owned())
        .collect()
}

/// A fragment as a module: items where it is items (a function of its own), a method
/// where it takes `&mut self`, else statements in a method's body.
fn as_module(index: usize, block: &str) -> String {
    let items = block.lines().any(|l| l.starts_with("fn "));
    let body = if block.contains("(&mut self") {
        format!("impl Snippet {{\n{block}\n}}\n")
    } else if items {
        block.to_owned()
    } else {
        format!(
            "impl Snippet {{\n    fn snippet(&mut self, task: &str) -> Result<(), Box<dyn std::error::Error>> {{\n        \
             let _ = {{\n{block}\n}};\n        Ok(())\n    }}\n}}\n"
        )
    };
    format!(
        "#[allow(unused, unreachable_code, dead_code)]\nmod block_{index} {{\n\
         use wonopcode_guest_sdk::*;\n\
         struct Snippet {{ tools: CustomTools }}\n{body}}}\n\n"
    )
}

/// A guest crate `name` in `dir` on the repository's SDK, with `source` as its `lib.rs`.
fn guest_crate(dir: &Path, name: &str, source: &str) -> PathBuf {
    let project = dir.join(name);
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::write(
        project.join("Cargo.toml"),
        format!(
            "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n\
             [lib]\ncrate-type = [\"cdylib\"]\n\n\
             [dependencies]\nwonopcode-guest-sdk = {{ path = {:?} }}\n\
             serde = {{ version = \"1\", features = [\"derive\"] }}\nschemars = \"1\"\n\n\
             [profile.release]\nopt-level = \"s\"\nlto = true\nstrip = true\n\n[workspace]\n",
            repo_root().join("guests/sdk").display().to_string()
        ),
    )
    .unwrap();
    std::fs::write(project.join("src/lib.rs"), source).unwrap();
    project
}

#[test]
fn the_guides_team_of_roles_passes_the_test_beside_it() {
    let page = std::fs::read_to_string(repo_root().join("docs/guest-authoring.md")).unwrap();
    let section = &page[page.find("### One component, several roles").unwrap()..];
    let block = |fence: &str| {
        section
            .split(fence)
            .nth(1)
            .unwrap()
            .split("```")
            .next()
            .unwrap()
            .to_owned()
    };
    let source = block("```rust\n");
    assert!(source.contains("export_loop!(Team)"), "{source}");
    let s = Scratch::new();
    let project = guest_crate(&s.outside("guide"), "team", &source);
    std::fs::write(project.join("tests.yaml"), block("```yaml\n")).unwrap();
    let wasm = build_rust(&project, "team");
    its_tests_pass(&project, &wasm);
}

#[test]
fn the_guides_test_file_passes_against_the_sample_orchestrator() {
    let page = std::fs::read_to_string(repo_root().join("docs/guest-authoring.md")).unwrap();
    let section = &page[page.find("## 6. Test your guest").unwrap()..];
    let yaml = section
        .split("```yaml\n")
        .nth(1)
        .unwrap()
        .split("```")
        .next()
        .unwrap();
    // Its paths are relative to examples/agents/, where the sample's own tests live.
    let agents = repo_root().join("examples/agents");
    let mut file = String::new();
    for line in yaml.lines() {
        let (key, rest) = line.split_once(": ").unwrap_or((line, ""));
        match key {
            "guest" | "loops_dir" | "workspace" => {
                let value = rest.split('#').next().unwrap().trim();
                file.push_str(&format!("{key}: {}\n", agents.join(value).display()));
            }
            _ => {
                file.push_str(line);
                file.push('\n');
            }
        }
    }
    let s = Scratch::new();
    let tests = s.outside("tests.yaml");
    std::fs::write(&tests, file).unwrap();
    let out = crate::support::command()
        .args(["loops", "test"])
        .arg(&tests)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{said}{}",
        crate::support::stderr(&out)
    );
    assert!(said.ends_with("1 passed, 0 failed\n"), "{said}");
}

#[test]
fn every_rust_block_of_the_guide_builds_and_its_loop_runs() {
    let blocks = rust_blocks();
    assert!(blocks.len() >= 8, "{} blocks", blocks.len());
    let (complete, fragments): (Vec<_>, Vec<_>) = blocks
        .iter()
        .enumerate()
        .partition(|(_, b)| b.contains("export_loop!"));
    // The loop of section 2 first, then the team of section 5 and the debugging example
    // (each built by its own test).
    assert_eq!(complete.len(), 3, "{complete:?}");
    let mut source = complete[0].1.clone();
    for (index, block) in &fragments {
        source.push_str(&as_module(*index, block));
    }

    let s = Scratch::new();
    let project = guest_crate(&s.outside("guide"), "guide-loop", &source);
    let wasm = build_rust(&project, "guide_loop");
    validates_and_runs(&s, &wasm, "my-loop");
}
