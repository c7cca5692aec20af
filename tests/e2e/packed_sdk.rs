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

/// The Python SDK's wheel as `.ci/run` builds it (`target/wheels/`), if built (said when not).
fn python_wheel() -> Option<PathBuf> {
    let version = std::fs::read_to_string(repo_root().join("guests/sdk-python/pyproject.toml"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("version = \""))
        .and_then(|v| v.strip_suffix('"'))
        .unwrap()
        .to_owned();
    let wheel = repo_root().join(format!(
        "target/wheels/wonopcode_guest-{version}-py3-none-any.whl"
    ));
    if wheel.is_file() {
        return Some(wheel);
    }
    crate::polyglot::missing_tool(&format!(
        "the Python SDK's wheel is not built: run `python3 -m pip wheel guests/sdk-python --no-deps -w target/wheels` ({} is missing)",
        wheel.display()
    ));
    None
}

#[test]
fn the_python_sdks_wheel_builds_an_orchestrator_outside_the_repository_that_validates_and_passes_its_tests()
 {
    if !crate::templates::have_componentize_py() {
        return;
    }
    let Some(wheel) = python_wheel() else {
        return;
    };
    let s = Scratch::new();
    // A project as `loops new` makes one (its WIT), the SDK installed from the wheel alone,
    // and the SDK's README example as its app.
    let project = sdk_less_project(&s, "py-orchestrator", "python");
    let deps = s.outside("deps");
    crate::templates::run(
        Command::new("python3")
            .args(["-m", "pip", "install", "--quiet", "--no-deps", "--target"])
            .arg(&deps)
            .arg(&wheel),
    );
    let example = repo_root().join("guests/sdk-python/example");
    std::fs::copy(example.join("app.py"), project.join("app.py")).unwrap();
    // Its README's example is the app built here.
    let readme = std::fs::read_to_string(repo_root().join("guests/sdk-python/README.md")).unwrap();
    let app = std::fs::read_to_string(project.join("app.py")).unwrap();
    for line in readme
        .split("```python\n")
        .nth(1)
        .unwrap()
        .split("```")
        .next()
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
    {
        assert!(
            app.contains(line),
            "the README's `{line}` is not the example's"
        );
    }
    same_as_the_guides(&app, "## In Python", "```python\n");
    copy_example_tests(&example, &project);
    crate::templates::run(
        Command::new("componentize-py")
            .args([
                "-d",
                "wit",
                "-w",
                "agent-loop-world",
                "componentize",
                "-p",
                ".",
            ])
            .arg("-p")
            .arg(&deps)
            .args(["app", "-o", "py-orchestrator.wasm"])
            .current_dir(&project),
    );
    validates_and_passes_its_tests(&project, "py-orchestrator.wasm");
}

/// The JavaScript SDK's `npm pack` tarball as `.ci/run` builds it (`target/npm/`), if built.
fn js_tarball() -> Option<PathBuf> {
    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo_root().join("guests/sdk-js/package.json")).unwrap(),
    )
    .unwrap();
    let version = manifest["version"].as_str().unwrap();
    let tarball = repo_root().join(format!("target/npm/wonopcode-guest-{version}.tgz"));
    if tarball.is_file() {
        return Some(tarball);
    }
    crate::polyglot::missing_tool(&format!(
        "the JavaScript SDK is not packed: run `npm pack ./guests/sdk-js --pack-destination target/npm` ({} is missing)",
        tarball.display()
    ));
    None
}

#[test]
fn the_js_sdks_tarball_builds_an_orchestrator_outside_the_repository_that_validates_and_passes_its_tests()
 {
    let componentize = repo_root().join("guests/js-researcher/node_modules/@bytecodealliance");
    if !componentize.join("componentize-js").is_dir() {
        crate::polyglot::missing_tool(&format!(
            "componentize-js is not installed: run `{}`",
            crate::polyglot::INSTALL
        ));
        return;
    }
    let Some(tarball) = js_tarball() else {
        return;
    };
    let s = Scratch::new();
    let project = sdk_less_project(&s, "js-orchestrator", "js");
    // The SDK from its tarball alone, where `npm install` puts a package; componentize-js,
    // pinned, from the repository's install.
    let modules = project.join("node_modules");
    let sdk = modules.join("@wonopcode/guest");
    std::fs::create_dir_all(&sdk).unwrap();
    crate::templates::run(
        Command::new("tar")
            .arg("xzf")
            .arg(&tarball)
            .arg("-C")
            .arg(&sdk)
            .arg("--strip-components=1"),
    );
    std::os::unix::fs::symlink(&componentize, modules.join("@bytecodealliance")).unwrap();
    let example = repo_root().join("guests/sdk-js/example");
    for file in ["agent.js", "build.mjs"] {
        std::fs::copy(example.join(file), project.join(file)).unwrap();
    }
    // The README's example is the one built here.
    let readme = std::fs::read_to_string(repo_root().join("guests/sdk-js/README.md")).unwrap();
    let agent = std::fs::read_to_string(project.join("agent.js")).unwrap();
    let block = readme
        .split("```js\n")
        .nth(1)
        .unwrap()
        .split("```")
        .next()
        .unwrap();
    for line in block.lines().filter(|l| !l.trim().is_empty()) {
        assert!(
            agent.contains(line),
            "the README's `{line}` is not the example's"
        );
    }
    same_as_the_guides(&agent, "## In JavaScript", "```js\n");
    copy_example_tests(&example, &project);
    crate::templates::run(Command::new("node").arg("build.mjs").current_dir(&project));
    validates_and_passes_its_tests(&project, "js-orchestrator.wasm");
    // No WIT version in the author's code.
    assert!(!agent.contains("@0."), "{agent}");
}

/// The guide's first `fence` block under `heading` is the example built here, line for line.
fn same_as_the_guides(example: &str, heading: &str, fence: &str) {
    let guide = std::fs::read_to_string(repo_root().join("docs/guest-authoring.md")).unwrap();
    let section = &guide[guide.find(heading).unwrap()..];
    let block = section
        .split(fence)
        .nth(1)
        .unwrap()
        .split("```")
        .next()
        .unwrap();
    let code = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .map(str::to_owned)
            .collect()
    };
    let example = code(example);
    let block = code(block);
    assert!(
        example.ends_with(&block),
        "the guide's block under {heading} is not the example's code:\n{}",
        block.join("\n")
    );
}

/// A project as `loops new --lang LANG` makes it (its WIT, its build files), without the
/// SDK it vendors: the test installs the SDK from its packed artifact instead.
fn sdk_less_project(s: &Scratch, name: &str, lang: &str) -> PathBuf {
    let project = s.outside(name);
    let out = crate::support::wonopcode()
        .args(["loops", "new"])
        .arg(&project)
        .args(["--lang", lang])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", crate::support::stderr(&out));
    std::fs::remove_dir_all(project.join("vendor")).unwrap();
    project
}

/// The SDK example's tests, with the sample registry it spawns from named where it is.
fn copy_example_tests(example: &Path, project: &Path) {
    let tests = std::fs::read_to_string(example.join("tests.yaml"))
        .unwrap()
        .replace(
            "loops_dir: ../../../examples/agents",
            &format!(
                "loops_dir: {}",
                repo_root().join("examples/agents").display()
            ),
        );
    std::fs::write(project.join("tests.yaml"), tests).unwrap();
}

/// The built example validates (its tool's `{}` call refused by the host's argument check)
/// and passes its two tests.
fn validates_and_passes_its_tests(project: &Path, wasm: &str) {
    let (code, said) = crate::polyglot::validate(&project.join(wasm));
    assert_eq!(code, Some(0), "{said}");
    assert!(
        said.contains("refused   word_count      invalid arguments for `word_count`: arguments: \"text\" is a required property"),
        "{said}"
    );
    let out = crate::support::wonopcode()
        .args(["loops", "test", "tests.yaml"])
        .current_dir(project)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}{}",
        crate::support::stderr(&out)
    );
    assert!(text.ends_with("2 passed, 0 failed\n"), "{text}");
}
