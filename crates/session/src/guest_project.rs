//! A new guest project, ready to build: an agent loop or a hook, from a template for its
//! language (`templates/` in the repository, embedded) with a copy of the host's WIT for
//! its world, so the project builds anywhere, outside this repository too. It never writes
//! into a directory that has files.

use std::path::{Path, PathBuf};

use crate::error::SessionError;

/// The languages a guest project can be written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuestLanguage {
    /// A Rust crate on the guest SDK.
    Rust,
    /// A Python app built with componentize-py.
    Python,
    /// A JavaScript module built with ComponentizeJS.
    Js,
    /// C on wit-bindgen's bindings, built with clang's wasm32-wasi target and wasi-libc.
    C,
}

/// What a guest project builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuestKind {
    /// An agent loop, of the `wonopcode:agent-loop` world.
    Loop,
    /// A hook, of the `wonopcode:hooks` world.
    Hook,
}

/// A project written by [`create`]: how to build it, and the component it builds.
#[derive(Debug, Clone)]
pub struct GuestProject {
    /// The command that builds it, run in its directory.
    pub build: String,
    /// The component the build writes, relative to the project.
    pub component: PathBuf,
}

/// The host's WIT package, as guests build against it.
const WIT: &[(&str, &str)] = &[
    (
        "agent-loop.wit",
        include_str!("../../../wit/agent-loop.wit"),
    ),
    ("config.wit", include_str!("../../../wit/config.wit")),
    ("context.wit", include_str!("../../../wit/context.wit")),
    (
        "custom-tool-handler.wit",
        include_str!("../../../wit/custom-tool-handler.wit"),
    ),
    (
        "custom-tools.wit",
        include_str!("../../../wit/custom-tools.wit"),
    ),
    ("providers.wit", include_str!("../../../wit/providers.wit")),
    ("resumable.wit", include_str!("../../../wit/resumable.wit")),
    ("storage.wit", include_str!("../../../wit/storage.wit")),
    ("system.wit", include_str!("../../../wit/system.wit")),
    ("tools.wit", include_str!("../../../wit/tools.wit")),
    ("types.wit", include_str!("../../../wit/types.wit")),
    ("ui.wit", include_str!("../../../wit/ui.wit")),
    ("world.wit", include_str!("../../../wit/world.wit")),
];

/// Every loop project's tests (`wonopcode loops test tests.yaml`).
const LOOP_TESTS: &str = include_str!("../../../templates/tests.yaml");

/// The hook world's WIT package.
const HOOK_WIT: &[(&str, &str)] = &[("hooks.wit", include_str!("../../../wit/hooks/hooks.wit"))];

const C: &[(&str, &str)] = &[
    ("loop.c", include_str!("../../../templates/c/loop.c")),
    ("build.sh", include_str!("../../../templates/c/build.sh")),
];

const RUST: &[(&str, &str)] = &[
    (
        "Cargo.toml",
        include_str!("../../../templates/rust/Cargo.toml"),
    ),
    (
        "src/lib.rs",
        include_str!("../../../templates/rust/src/lib.rs"),
    ),
];

/// The guest SDK, vendored into a Rust project (`vendor/wonopcode-guest-sdk/`, its WIT
/// beside it as `WIT`) until it is on crates.io: the project builds outside this repository.
const RUST_SDK: &[(&str, &str)] = &[
    (
        "Cargo.toml",
        include_str!("../../../templates/rust/vendor/Cargo.toml"),
    ),
    ("README.md", include_str!("../../../guests/sdk/README.md")),
    ("src/lib.rs", include_str!("../../../guests/sdk/src/lib.rs")),
    (
        "src/agent.rs",
        include_str!("../../../guests/sdk/src/agent.rs"),
    ),
    (
        "src/custom_tools.rs",
        include_str!("../../../guests/sdk/src/custom_tools.rs"),
    ),
    (
        "src/json_answer.rs",
        include_str!("../../../guests/sdk/src/json_answer.rs"),
    ),
    (
        "src/spawn.rs",
        include_str!("../../../guests/sdk/src/spawn.rs"),
    ),
    (
        "src/tiers.rs",
        include_str!("../../../guests/sdk/src/tiers.rs"),
    ),
    (
        "src/turn.rs",
        include_str!("../../../guests/sdk/src/turn.rs"),
    ),
];

/// Where a Rust project's vendored SDK goes.
const RUST_SDK_DIR: &str = "vendor/wonopcode-guest-sdk";

/// The JavaScript guest SDK (`guests/sdk-js`), vendored into a JavaScript project's
/// `vendor/wonopcode-guest/` until it is on npm.
const JS_SDK: &[(&str, &str)] = &[
    (
        "package.json",
        include_str!("../../../guests/sdk-js/package.json"),
    ),
    ("index.js", include_str!("../../../guests/sdk-js/index.js")),
    (
        "index.d.ts",
        include_str!("../../../guests/sdk-js/index.d.ts"),
    ),
    ("build.js", include_str!("../../../guests/sdk-js/build.js")),
    (
        "build.d.ts",
        include_str!("../../../guests/sdk-js/build.d.ts"),
    ),
    (
        "README.md",
        include_str!("../../../guests/sdk-js/README.md"),
    ),
];

/// The Python guest SDK (`guests/sdk-python`), vendored into a Python project's `vendor/`
/// (on componentize-py's path) until it is on PyPI.
const PYTHON_SDK: &[(&str, &str)] = &[
    (
        "__init__.py",
        include_str!("../../../guests/sdk-python/src/wonopcode_guest/__init__.py"),
    ),
    (
        "agent.py",
        include_str!("../../../guests/sdk-python/src/wonopcode_guest/agent.py"),
    ),
    (
        "loop.py",
        include_str!("../../../guests/sdk-python/src/wonopcode_guest/loop.py"),
    ),
    (
        "spawn.py",
        include_str!("../../../guests/sdk-python/src/wonopcode_guest/spawn.py"),
    ),
    (
        "tiers.py",
        include_str!("../../../guests/sdk-python/src/wonopcode_guest/tiers.py"),
    ),
    (
        "tools.py",
        include_str!("../../../guests/sdk-python/src/wonopcode_guest/tools.py"),
    ),
    ("py.typed", ""),
];

const PYTHON: &[(&str, &str)] = &[
    ("app.py", include_str!("../../../templates/python/app.py")),
    (
        "requirements.txt",
        include_str!("../../../templates/python/requirements.txt"),
    ),
    (
        "build.sh",
        include_str!("../../../templates/python/build.sh"),
    ),
];

const JS: &[(&str, &str)] = &[
    ("agent.js", include_str!("../../../templates/js/agent.js")),
    ("build.mjs", include_str!("../../../templates/js/build.mjs")),
    (
        "package.json",
        include_str!("../../../templates/js/package.json"),
    ),
];

const HOOK_RUST: &[(&str, &str)] = &[
    (
        "Cargo.toml",
        include_str!("../../../templates/hook-rust/Cargo.toml"),
    ),
    (
        "src/lib.rs",
        include_str!("../../../templates/hook-rust/src/lib.rs"),
    ),
];

const HOOK_PYTHON: &[(&str, &str)] = &[
    (
        "app.py",
        include_str!("../../../templates/hook-python/app.py"),
    ),
    (
        "requirements.txt",
        include_str!("../../../templates/hook-python/requirements.txt"),
    ),
    (
        "build.sh",
        include_str!("../../../templates/hook-python/build.sh"),
    ),
];

const HOOK_JS: &[(&str, &str)] = &[
    (
        "hook.js",
        include_str!("../../../templates/hook-js/hook.js"),
    ),
    (
        "build.mjs",
        include_str!("../../../templates/hook-js/build.mjs"),
    ),
    (
        "package.json",
        include_str!("../../../templates/hook-js/package.json"),
    ),
];

/// A name a guest can have: lower-case ASCII letters, digits and dashes, starting with a
/// letter (it becomes a crate, a file and a loop name).
fn valid_name(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// Writes a `language` guest project of `kind` into `dir`, named after the directory. A
/// name that cannot be a guest's, or a directory with files in it, is refused before
/// anything is written.
pub fn create(
    dir: &Path,
    language: GuestLanguage,
    kind: GuestKind,
) -> Result<GuestProject, SessionError> {
    let name = dir
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_owned();
    if !valid_name(&name) {
        return Err(SessionError::Choice(format!(
            "{}: the name `{name}` must be lower-case letters, digits and dashes, starting with a letter",
            dir.display()
        )));
    }
    if dir.exists()
        && std::fs::read_dir(dir)
            .map(|mut d| d.next().is_some())
            .unwrap_or(true)
    {
        return Err(SessionError::Choice(format!(
            "{}: the directory exists and is not empty; nothing was written",
            dir.display()
        )));
    }
    let (files, wit) = match (kind, language) {
        (GuestKind::Loop, GuestLanguage::Rust) => (RUST, WIT),
        (GuestKind::Loop, GuestLanguage::Python) => (PYTHON, WIT),
        (GuestKind::Loop, GuestLanguage::Js) => (JS, WIT),
        (GuestKind::Loop, GuestLanguage::C) => (C, WIT),
        (GuestKind::Hook, GuestLanguage::C) => {
            return Err(SessionError::Choice(format!(
                "{}: a hook in C has no template (`--kind hook` takes --lang rust, python \
                 or js); nothing was written",
                dir.display()
            )));
        }
        (GuestKind::Hook, GuestLanguage::Rust) => (HOOK_RUST, HOOK_WIT),
        (GuestKind::Hook, GuestLanguage::Python) => (HOOK_PYTHON, HOOK_WIT),
        (GuestKind::Hook, GuestLanguage::Js) => (HOOK_JS, HOOK_WIT),
    };
    let crate_name = name.replace('-', "_");
    let (build, component) = match language {
        GuestLanguage::Rust => (
            "rustup target add wasm32-wasip2 && cargo build --release --target wasm32-wasip2",
            format!("target/wasm32-wasip2/release/{crate_name}.wasm"),
        ),
        GuestLanguage::Python => (
            "python3 -m pip install -r requirements.txt && sh build.sh",
            format!("{name}.wasm"),
        ),
        GuestLanguage::Js => ("npm install && node build.mjs", format!("{name}.wasm")),
        GuestLanguage::C => ("sh build.sh", format!("{name}.wasm")),
    };
    let fill = |text: &str| {
        text.replace("{{name}}", &name)
            .replace("{{crate}}", &crate_name)
            .replace("{{component}}", &component)
    };
    for (rel, text) in files {
        write(&dir.join(rel), &fill(text))?;
    }
    for (rel, text) in wit {
        write(&dir.join("wit").join(rel), text)?;
    }
    if kind == GuestKind::Loop {
        write(&dir.join("tests.yaml"), &fill(LOOP_TESTS))?;
    }
    if (kind, language) == (GuestKind::Loop, GuestLanguage::Js) {
        for (rel, text) in JS_SDK {
            write(&dir.join("vendor/wonopcode-guest").join(rel), text)?;
        }
    }
    if (kind, language) == (GuestKind::Loop, GuestLanguage::Python) {
        for (rel, text) in PYTHON_SDK {
            write(&dir.join("vendor/wonopcode_guest").join(rel), text)?;
        }
    }
    if (kind, language) == (GuestKind::Loop, GuestLanguage::C) {
        write_c_bindings(dir)?;
    }
    if (kind, language) == (GuestKind::Loop, GuestLanguage::Rust) {
        let sdk = dir.join(RUST_SDK_DIR);
        for (rel, text) in RUST_SDK {
            write(&sdk.join(rel), text)?;
        }
        for (rel, text) in WIT {
            write(&sdk.join("wit").join(rel), text)?;
        }
    }
    let ignored = match language {
        GuestLanguage::Rust => "/target/\n*.wasm\n",
        GuestLanguage::Python => "*.wasm\n__pycache__/\n.venv/\n",
        GuestLanguage::Js => "*.wasm\nnode_modules/\n",
        GuestLanguage::C => "/target/\n*.wasm\n",
    };
    write(&dir.join(".gitignore"), ignored)?;
    write(
        &dir.join("README.md"),
        &match kind {
            GuestKind::Loop => readme(&name, language, build, &component),
            GuestKind::Hook => hook_readme(&name, language, build, &component),
        },
    )?;
    Ok(GuestProject {
        build: build.to_owned(),
        component: component.into(),
    })
}

/// The project's README: what it is, how to build, check and run it.
fn readme(name: &str, language: GuestLanguage, build: &str, component: &str) -> String {
    let (language, source) = match language {
        GuestLanguage::Rust => ("Rust", "src/lib.rs"),
        GuestLanguage::Python => ("Python", "app.py"),
        GuestLanguage::Js => ("JavaScript", "agent.js"),
        GuestLanguage::C => ("C", "loop.c"),
    };
    format!(
        "# {name}\n\n\
A wonopcode agent loop written in {language}: a WebAssembly component of the world\n\
`wonopcode:agent-loop` (its WIT is in `wit/`). The loop is in `{source}`.\n\n\
## Build\n\n```sh\n{build}\n```\n\nThe component is `{component}`.\n\n\
## Check\n\n```sh\nwonopcode loops validate {component}\n```\n\n\
## Test\n\n```sh\nwonopcode loops test tests.yaml\n```\n\n\
## Run\n\n```sh\nwonopcode --agent-loop {component} \"Say hello\"\n```\n\n\
To run it by name, put it in a directory given with `--loops-dir`, or list it in a\n\
`registry.yaml` (see wonopcode's `docs/guest-authoring.md`).\n"
    )
}

/// A hook project's README: what it is, how to build it, and a hook entry that uses it.
fn hook_readme(name: &str, language: GuestLanguage, build: &str, component: &str) -> String {
    let (language, source) = match language {
        GuestLanguage::Rust => ("Rust", "src/lib.rs"),
        GuestLanguage::Python => ("Python", "app.py"),
        GuestLanguage::Js => ("JavaScript", "hook.js"),
        GuestLanguage::C => ("C", "hook.c"),
    };
    format!(
        "# {name}\n\n\
A wonopcode hook written in {language}: a WebAssembly component of the world\n\
`wonopcode:hooks` (its WIT is in `wit/`). The hook is in `{source}`: before a `bash` call\n\
it refuses commands containing a phrase of its settings' `deny` list.\n\n\
## Build\n\n```sh\n{build}\n```\n\nThe component is `{component}`.\n\n\
## Use\n\nIn wonopcode's config file (a relative `component` is relative to that file):\n\n\
```yaml\nhooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks:\n        - type: component\n\
          component: {component}\n          settings: {{deny: [\"rm -rf\", \"git push --force\"]}}\n```\n\n\
The hook gets no files, network or environment unless the entry grants them\n\
(`grants: {{read: [DIR], env: [NAME]}}`); see wonopcode's `docs/hooks.md`.\n"
    )
}

/// The C bindings of the project's `wit/` (written before), as `wit-bindgen c` writes them:
/// `agent_loop_world.{c,h}` and the `_component_type.o` that carries the world into the
/// module, for `loops componentize`.
fn write_c_bindings(dir: &Path) -> Result<(), SessionError> {
    let wit = dir.join("wit");
    let failed = |e: &dyn std::fmt::Display| {
        SessionError::Files(format!(
            "cannot write the C bindings of {}: {e}",
            wit.display()
        ))
    };
    let mut resolve = wit_parser::Resolve::default();
    let (package, _) = resolve.push_dir(&wit).map_err(|e| failed(&e))?;
    let world = resolve
        .select_world(&[package], Some("agent-loop-world"))
        .map_err(|e| failed(&e))?;
    let mut files = wit_bindgen_core::Files::default();
    wit_bindgen_c::Opts::default()
        .build()
        .generate(&mut resolve, world, &mut files)
        .map_err(|e| failed(&e))?;
    for (name, bytes) in files.iter() {
        let path = dir.join(name);
        std::fs::write(&path, bytes).map_err(|e| failed(&format!("{}: {e}", path.display())))?;
    }
    Ok(())
}

fn write(path: &Path, text: &str) -> Result<(), SessionError> {
    let failed = |what: &Path, e: std::io::Error| {
        SessionError::Files(format!("cannot write {}: {e}", what.display()))
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| failed(parent, e))?;
    }
    std::fs::write(path, text).map_err(|e| failed(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_plain_lower_case_words_with_dashes() {
        assert!(valid_name("my-loop2"));
        assert!(!valid_name("My-Loop"));
        assert!(!valid_name("2loop"));
        assert!(!valid_name("a b"));
        assert!(!valid_name(""));
    }

    #[test]
    fn the_embedded_wit_is_every_file_of_the_package() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../wit");
        let mut on_disk: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".wit"))
            .collect();
        on_disk.sort();
        let embedded: Vec<&str> = WIT.iter().map(|(name, _)| *name).collect();
        assert_eq!(on_disk, embedded);
    }

    #[test]
    fn the_vendored_sdk_is_every_source_file_and_the_same_version_and_dependencies() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../guests/sdk/src");
        let mut on_disk: Vec<String> = std::fs::read_dir(src)
            .unwrap()
            .map(|e| format!("src/{}", e.unwrap().file_name().to_string_lossy()))
            .collect();
        on_disk.sort();
        let mut vendored: Vec<&str> = RUST_SDK
            .iter()
            .map(|(name, _)| *name)
            .filter(|n| n.starts_with("src/"))
            .collect();
        vendored.sort();
        assert_eq!(on_disk, vendored);
        // The manifests' lines: the package's version, and each dependency's line.
        let version = |text: &str| -> String {
            text.lines()
                .find(|l| l.starts_with("version = "))
                .unwrap()
                .to_owned()
        };
        let dependencies = |text: &str| -> Vec<String> {
            text.lines()
                .skip_while(|l| *l != "[dependencies]")
                .skip(1)
                .take_while(|l| !l.starts_with('['))
                .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
                .map(str::to_owned)
                .collect()
        };
        let vendored = RUST_SDK[0].1;
        let sdk = include_str!("../../../guests/sdk/Cargo.toml");
        let workspace = include_str!("../../../guests/Cargo.toml");
        assert_eq!(version(vendored), version(sdk));
        let name = |line: &String| line.split([' ', '.']).next().unwrap_or_default().to_owned();
        let ours = dependencies(vendored);
        assert_eq!(
            ours.iter().map(name).collect::<Vec<_>>(),
            dependencies(sdk).iter().map(name).collect::<Vec<_>>()
        );
        for line in &ours {
            assert!(workspace.lines().any(|l| l == line), "{line}");
        }
        // The template asks for the vendored SDK's version.
        let asked = format!(
            "version = \"{}\" }}",
            version(vendored)
                .trim_start_matches("version = \"")
                .trim_end_matches('"')
        );
        assert!(RUST[0].1.contains(&asked), "{asked}");
    }

    #[test]
    fn the_vendored_js_sdk_is_every_file_the_package_ships() {
        let manifest: serde_json::Value =
            serde_json::from_str(include_str!("../../../guests/sdk-js/package.json")).unwrap();
        let mut shipped: Vec<&str> = manifest["files"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|f| f.as_str())
            .chain(["package.json"])
            .collect();
        shipped.sort();
        let mut vendored: Vec<&str> = JS_SDK.iter().map(|(name, _)| *name).collect();
        vendored.sort();
        assert_eq!(shipped, vendored);
    }

    #[test]
    fn the_vendored_python_sdk_is_every_module_of_the_package() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../guests/sdk-python/src/wonopcode_guest");
        let mut on_disk: Vec<String> = std::fs::read_dir(src)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".py") || n == "py.typed")
            .collect();
        on_disk.sort();
        let mut vendored: Vec<&str> = PYTHON_SDK.iter().map(|(name, _)| *name).collect();
        vendored.sort();
        assert_eq!(on_disk, vendored);
    }

    #[test]
    fn the_embedded_hook_wit_is_the_hook_package() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../wit/hooks");
        let on_disk: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(on_disk, ["hooks.wit"]);
    }

    #[test]
    fn every_template_file_names_the_guest() {
        for files in [RUST, PYTHON, JS, C, HOOK_RUST, HOOK_PYTHON, HOOK_JS] {
            assert!(files.iter().any(|(_, text)| text.contains("{{name}}")));
        }
    }
}
