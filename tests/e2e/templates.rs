//! `--new-guest DIR --lang LANG [--kind hook]`: each loop template builds with its
//! language's documented command, passes `--validate-module`, and runs a tool turn; each hook
//! template builds and, named in a hook entry, refuses the call its settings list. The
//! Python and JavaScript ones need the componentizers (skipped without them, unless
//! `WONOPCODE_REQUIRE_POLYGLOT` is set).

use std::path::Path;
use std::process::Command;

use crate::polyglot::{INSTALL, missing_tool, validate};
use crate::support::{
    Scratch, call, calling, done, events, repo_root, stderr, text, transcript, wonopcode,
};

/// Creates the loop project `name` in a scratch directory.
fn new_guest(scratch: &Scratch, name: &str, lang: &str) -> std::path::PathBuf {
    let dir = new_project(scratch, name, &["--lang", lang]);
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    assert!(readme.contains("wonopcode --agent-loop "), "{readme}");
    assert!(dir.join("wit/world.wit").is_file());
    dir
}

/// Creates the hook project `name` in a scratch directory.
fn new_hook(scratch: &Scratch, name: &str, lang: &str) -> std::path::PathBuf {
    let dir = new_project(scratch, name, &["--lang", lang, "--kind", "hook"]);
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    assert!(readme.contains("type: component"), "{readme}");
    assert!(dir.join("wit/hooks.wit").is_file());
    dir
}

/// Runs `--new-guest DIR ARGS` and checks what every project has.
fn new_project(scratch: &Scratch, name: &str, args: &[&str]) -> std::path::PathBuf {
    let dir = scratch.outside(name);
    let out = wonopcode()
        .arg("--new-guest")
        .arg(&dir)
        .args(args)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("build:"), "{said}");
    // A project of its own: README (how to build and use it), .gitignore, git.
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    assert!(readme.contains("## Build"), "{readme}");
    assert!(
        std::fs::read_to_string(dir.join(".gitignore"))
            .unwrap()
            .contains("*.wasm")
    );
    assert!(said.contains("(a new git repository)"), "{said}");
    assert!(dir.join(".git").is_dir());
    dir
}

/// Names the hook component `wasm` for `PreToolUse` in a config file and replays a model
/// that runs a listed command, then answers: the hook refuses it.
fn refuses_a_listed_command(scratch: &Scratch, wasm: &Path) {
    // `loops validate` tells a hook from a loop and starts it as an entry would.
    let (code, said) = validate(wasm);
    assert_eq!(code, Some(0), "{said}");
    assert!(
        said.contains("ok    start") && said.contains("valid: hook component"),
        "{said}"
    );
    let config = scratch.config(&format!(
        "hooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks:\n        - type: component\n          component: {}\n          settings: {{deny: [\"git push --force\"]}}\n",
        wasm.display()
    ));
    let turns = [
        calling(
            "c1",
            "bash",
            r#"{"command": "git push --force origin main"}"#,
        ),
        vec![text("Not pushed."), done("end_turn")],
    ];
    let t = scratch.outside("hook-t.jsonl");
    std::fs::write(&t, transcript(&turns)).unwrap();
    let out = wonopcode()
        .arg("--config")
        .arg(&config)
        .args(["--json", "--yes", "--replay"])
        .arg(&t)
        .arg("-C")
        .arg(scratch.ws())
        .arg("push it")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let hook = events(&out)
        .into_iter()
        .find(|e| e["item"]["kind"] == "hook")
        .unwrap_or_else(|| panic!("no hook item: {}", stderr(&out)));
    assert_eq!(hook["item"]["decision"], "deny", "{hook}");
    assert_eq!(
        hook["item"]["reason"],
        "commands containing `git push --force` are not allowed"
    );
}

pub(crate) fn run(command: &mut Command) {
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "{command:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Validates the component and runs a turn that reads a file and answers.
pub(crate) fn validates_and_runs(scratch: &Scratch, wasm: &Path, name: &str) {
    let (code, said) = validate(wasm);
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains(&format!("valid: loop `{name}`")), "{said}");
    scratch.file("a.txt", "hello\n");
    let mut first = call("c1", "read", r#"{"path": "a.txt"}"#);
    first.push(done("tool_use"));
    let turns = [first, vec![text("It says hello."), done("end_turn")]];
    let t = scratch.outside("t.jsonl");
    std::fs::write(&t, transcript(&turns)).unwrap();
    let out = wonopcode()
        .arg("--agent-loop")
        .arg(wasm)
        .arg("--replay")
        .arg(&t)
        .arg("-C")
        .arg(scratch.ws())
        .arg("what does a.txt say?")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "It says hello."
    );
    assert!(stderr(&out).contains("read a.txt"), "{}", stderr(&out));
}

/// The project's own tests (`tests.yaml`, which `loops new` writes) pass with `loops test`,
/// run in the project as its README says, on the component built from it.
pub(crate) fn its_tests_pass(dir: &Path, wasm: &Path) {
    let tests = std::fs::read_to_string(dir.join("tests.yaml")).unwrap();
    let guest = tests
        .lines()
        .find_map(|l| l.strip_prefix("guest: "))
        .unwrap()
        .to_owned();
    let at = dir.join(&guest);
    if at != wasm {
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::fs::copy(wasm, &at).unwrap();
    }
    let out = wonopcode()
        .args(["loops", "test", "tests.yaml"])
        .current_dir(dir)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{said}{}", stderr(&out));
    assert!(said.ends_with("1 passed, 0 failed\n"), "{said}");
}

/// Builds the Rust project in `dir` (in a target directory kept between runs, so only the
/// first one compiles everything); its component.
pub(crate) fn build_rust(dir: &Path, crate_name: &str) -> std::path::PathBuf {
    let target = repo_root().join("target/template-guest");
    run(Command::new("cargo")
        .args(["build", "--release", "--target", "wasm32-wasip2"])
        .env("CARGO_TARGET_DIR", &target)
        .current_dir(dir));
    target.join(format!("wasm32-wasip2/release/{crate_name}.wasm"))
}

/// Whether componentize-py is installed (said when it is not).
pub(crate) fn have_componentize_py() -> bool {
    let found = Command::new("componentize-py")
        .arg("--version")
        .output()
        .is_ok();
    if !found {
        missing_tool(&format!(
            "componentize-py is not installed: run `{INSTALL}`"
        ));
    }
    found
}

/// Builds the Python project `name` in `dir`; its component.
fn build_python(dir: &Path, name: &str) -> std::path::PathBuf {
    run(Command::new("sh").arg("build.sh").current_dir(dir));
    dir.join(format!("{name}.wasm"))
}

/// The repository's pinned componentize-js (the JavaScript guest's `node_modules`), when
/// installed (said when it is not).
fn componentize_js() -> Option<std::path::PathBuf> {
    let modules = repo_root().join("guests/js-researcher/node_modules");
    if modules.join("@bytecodealliance/componentize-js").is_dir() {
        return Some(modules);
    }
    missing_tool(&format!(
        "componentize-js is not installed: run `{INSTALL}`"
    ));
    None
}

/// Builds the JavaScript project `name` in `dir` with `modules` (the template's own `npm
/// install` would fetch componentize-js again); its component.
fn build_js(dir: &Path, modules: &Path, name: &str) -> std::path::PathBuf {
    std::os::unix::fs::symlink(modules, dir.join("node_modules")).unwrap();
    run(Command::new("node").arg("build.mjs").current_dir(dir));
    dir.join(format!("{name}.wasm"))
}

#[test]
fn the_rust_template_builds_validates_and_runs() {
    let scratch = Scratch::new();
    let dir = new_guest(&scratch, "my-rust-loop", "rust");
    // The SDK comes with the project (vendored), so it builds outside this repository.
    assert!(
        dir.join("vendor/wonopcode-guest-sdk/wit/context.wit")
            .is_file()
    );
    let wasm = build_rust(&dir, "my_rust_loop");
    validates_and_runs(&scratch, &wasm, "my-rust-loop");
    its_tests_pass(&dir, &wasm);
}

#[test]
fn the_python_template_builds_validates_and_runs() {
    if !have_componentize_py() {
        return;
    }
    let scratch = Scratch::new();
    let dir = new_guest(&scratch, "my-python-loop", "python");
    let wasm = build_python(&dir, "my-python-loop");
    validates_and_runs(&scratch, &wasm, "my-python-loop");
    its_tests_pass(&dir, &wasm);
}

#[test]
fn the_js_template_builds_validates_and_runs() {
    let Some(modules) = componentize_js() else {
        return;
    };
    let scratch = Scratch::new();
    let dir = new_guest(&scratch, "my-js-loop", "js");
    let wasm = build_js(&dir, &modules, "my-js-loop");
    validates_and_runs(&scratch, &wasm, "my-js-loop");
    its_tests_pass(&dir, &wasm);
}

/// Whether clang can build for wasm32-wasi with wasi-libc (said when it cannot; CI installs
/// Debian's packages and requires them, `WONOPCODE_REQUIRE_C`).
fn have_clang_for_wasi() -> bool {
    let probe = Command::new("clang")
        .args([
            "--target=wasm32-wasi",
            "--sysroot=/usr",
            "-print-file-name=libc.a",
        ])
        .output();
    let found = probe.is_ok_and(|o| {
        o.status.success() && Path::new(String::from_utf8_lossy(&o.stdout).trim()).is_file()
    });
    if !found {
        crate::support::missing_part(
            "clang with wasi-libc is not installed: `apt-get install clang lld wasi-libc \
             libclang-rt-14-dev-wasm32` (Debian's packages)",
            "WONOPCODE_REQUIRE_C",
        );
    }
    found
}

#[test]
fn the_c_template_builds_with_clang_and_wasi_libc_validates_and_runs() {
    if !have_clang_for_wasi() {
        return;
    }
    let scratch = Scratch::new();
    let dir = new_guest(&scratch, "my-c-loop", "c");
    // The bindings come with the project: no wit-bindgen to install.
    for file in [
        "agent_loop_world.c",
        "agent_loop_world.h",
        "agent_loop_world_component_type.o",
    ] {
        assert!(dir.join(file).is_file(), "{file}");
    }
    run(Command::new("sh")
        .arg("build.sh")
        .env("WONOPCODE", crate::support::bin())
        .current_dir(&dir));
    let wasm = dir.join("my-c-loop.wasm");
    validates_and_runs(&scratch, &wasm, "my-c-loop");
    its_tests_pass(&dir, &wasm);
    // The core module the compiler wrote is no component until `loops componentize` makes it.
    let core = dir.join("target/core.wasm");
    let (code, said) = validate(&core);
    assert_ne!(code, Some(0), "{said}");
    // Made again over the component, a failure keeps the file that was there.
    let before = std::fs::read(&wasm).unwrap();
    let out = wonopcode()
        .args(["loops", "componentize"])
        .arg(&wasm)
        .arg("-o")
        .arg(&wasm)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let said = stderr(&out);
    assert_eq!(said.lines().count(), 1, "{said}");
    assert!(said.contains("already a component"), "{said}");
    assert_eq!(std::fs::read(&wasm).unwrap(), before);
}

#[test]
fn the_c_team_example_sends_two_specialists_at_once_and_passes_its_tests() {
    if !have_clang_for_wasi() {
        return;
    }
    let scratch = Scratch::new();
    let dir = new_guest(&scratch, "team", "c");
    let example = repo_root().join("examples/c-team");
    for file in ["loop.c", "tests.yaml"] {
        std::fs::copy(example.join(file), dir.join(file)).unwrap();
    }
    run(Command::new("sh")
        .arg("build.sh")
        .env("WONOPCODE", crate::support::bin())
        .current_dir(&dir));
    let out = wonopcode()
        .args(["loops", "test", "tests.yaml"])
        .current_dir(&dir)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{said}{}", stderr(&out));
    assert!(said.ends_with("2 passed, 0 failed\n"), "{said}");
}

#[test]
fn a_c_hook_is_refused_before_anything_is_written() {
    let scratch = Scratch::new();
    let dir = scratch.outside("my-c-hook");
    let out = wonopcode()
        .args(["loops", "new", "--lang", "c", "--kind", "hook"])
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("a hook in C has no template"),
        "{}",
        stderr(&out)
    );
    assert!(!dir.exists());
}

#[test]
fn the_rust_hook_template_builds_and_refuses_what_its_settings_list() {
    let scratch = Scratch::new();
    let dir = new_hook(&scratch, "my-rust-hook", "rust");
    refuses_a_listed_command(&scratch, &build_rust(&dir, "my_rust_hook"));
}

#[test]
fn the_python_hook_template_builds_and_refuses_what_its_settings_list() {
    if !have_componentize_py() {
        return;
    }
    let scratch = Scratch::new();
    let dir = new_hook(&scratch, "my-python-hook", "python");
    refuses_a_listed_command(&scratch, &build_python(&dir, "my-python-hook"));
}

#[test]
fn the_js_hook_template_builds_and_refuses_what_its_settings_list() {
    let Some(modules) = componentize_js() else {
        return;
    };
    let scratch = Scratch::new();
    let dir = new_hook(&scratch, "my-js-hook", "js");
    refuses_a_listed_command(&scratch, &build_js(&dir, &modules, "my-js-hook"));
}

#[test]
fn new_guest_never_writes_into_a_directory_with_files_and_checks_the_name() {
    let scratch = Scratch::new();
    let taken = scratch.outside("taken");
    std::fs::create_dir(&taken).unwrap();
    std::fs::write(taken.join("keep.txt"), "mine").unwrap();
    let out = wonopcode()
        .arg("--new-guest")
        .arg(&taken)
        .args(["--lang", "rust"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("exists and is not empty; nothing was written"));
    assert!(stderr(&out).contains("--new-guest "), "{}", stderr(&out));
    // The refusal names the command as it was typed.
    let out = wonopcode()
        .args(["loops", "new"])
        .arg(&taken)
        .args(["--lang", "rust"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("loops new ") && !stderr(&out).contains("--new-guest"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        std::fs::read_to_string(taken.join("keep.txt")).unwrap(),
        "mine"
    );
    assert_eq!(std::fs::read_dir(&taken).unwrap().count(), 1);
    let out = wonopcode()
        .arg("--new-guest")
        .arg(scratch.outside("My Loop"))
        .args(["--lang", "js"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("must be lower-case letters, digits and dashes"));
}
