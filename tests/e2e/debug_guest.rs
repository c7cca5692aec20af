//! Debugging a guest as its author would (`docs/guest-authoring.md`, "Debug a guest"): a
//! project from `loops new --lang rust` with the guide's example as its loop, built with its
//! debug info (`cargo build`, no `--release`); a trap's backtrace names the guest's source
//! lines under `--debug-guest` and only code offsets without it; gdb and lldb each stop at a
//! breakpoint in the guest's source and step to its next line.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use crate::support::{Scratch, repo_root, stderr, wonopcode};

/// The guide's example loop: the first Rust block under "Debug a guest".
fn guide_example() -> String {
    let page = std::fs::read_to_string(repo_root().join("docs/guest-authoring.md")).unwrap();
    let section = &page[page.find("### Debug a guest").expect("the guide's section")..];
    let start = section.find("```rust\n").expect("a rust block") + "```rust\n".len();
    let len = section[start..].find("```").expect("the block's end");
    section[start..start + len].to_owned()
}

/// The 1-based line of `src/lib.rs` that holds `text`.
fn line_of(source: &str, text: &str) -> usize {
    1 + source
        .lines()
        .position(|l| l.contains(text))
        .unwrap_or_else(|| panic!("`{text}` is not in the example"))
}

/// The example's component, with its debug info: made by `loops new`, built once for every
/// test of this file (a debug build of the SDK takes about 40 s on two cores).
fn debug_build() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        // Named `my-loop`, as the guide's commands name its component (`my_loop.wasm`).
        let dir = repo_root().join("target/debug-guest-example/my-loop");
        let _ = std::fs::remove_dir_all(&dir);
        let out = wonopcode()
            .args(["loops", "new", "--lang", "rust"])
            .arg(&dir)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "loops new: {}", stderr(&out));
        std::fs::write(dir.join("src/lib.rs"), guide_example()).unwrap();
        let target = repo_root().join("target/template-guest");
        let built = Command::new("cargo")
            .args(["build", "--target", "wasm32-wasip2"])
            .env("CARGO_TARGET_DIR", &target)
            .current_dir(&dir)
            .output()
            .unwrap();
        assert!(built.status.success(), "cargo build: {}", stderr(&built));
        target.join("wasm32-wasip2/debug/my_loop.wasm")
    })
}

/// The arguments of a run of the example on `prompt`, offline, in `s`'s workspace.
fn example_args(s: &Scratch, prompt: &str) -> Vec<std::ffi::OsString> {
    let t = s.transcript("t.jsonl", &[]);
    vec![
        "--agent-loop".into(),
        debug_build().into(),
        "--replay".into(),
        t.into(),
        "-C".into(),
        s.ws().into(),
        prompt.into(),
    ]
}

/// Runs the example with `prompt` and `flags`, its journal under `runs`.
fn run(s: &Scratch, runs: &Path, flags: &[&str], prompt: &str) -> Output {
    wonopcode()
        .env("WONOPCODE_RUNS_DIR", runs)
        .env_remove("WONOPCODE_DEBUG_GUEST")
        .args(flags)
        .args(example_args(s, prompt))
        .output()
        .unwrap()
}

/// The backtrace lines of the only run's root context log.
fn logged_backtrace(runs: &Path) -> Vec<String> {
    let (_, dir) = crate::resume::only_run(runs);
    let log = std::fs::read_to_string(dir.join("guest-logs/0.log")).unwrap();
    log.lines()
        .filter_map(|l| l.strip_prefix("backtrace: "))
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_trap_under_debug_guest_shows_the_guests_backtrace_with_its_source_lines() {
    let s = Scratch::new();
    let source = guide_example();
    let panic_line = line_of(&source, "panic!(");
    let call_line = line_of(&source, "let specialist = pick_specialist");

    // The guest runs and keeps its state between prompts, debugged or not.
    let out = run(
        &s,
        &s.outside("ok-runs"),
        &["--debug-guest"],
        "fix the tests",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("coder after 1 prompts"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );

    let runs = s.outside("debug-runs");
    let out = run(&s, &runs, &["--debug-guest"], "please panic");
    let said = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    // The one line of the error, as without the flag.
    let error = said
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_else(|| panic!("no error line: {said}"));
    assert!(
        error.ends_with(&format!(
            "trapped: the guest panicked at src/lib.rs:{panic_line}:9: no specialist for 2 words"
        )),
        "{error}"
    );
    // The backtrace on stderr, innermost first: the panicking function at the panic's line,
    // then its caller at the call's, the toolchain's own frames left out.
    let frames: Vec<&str> = said
        .lines()
        .filter_map(|l| l.strip_prefix("[0 debug-me] #"))
        .collect();
    let at = |function: &str, line: usize| {
        frames.iter().position(|f| {
            f.contains(&format!(" {function} (")) && f.contains(&format!("/src/lib.rs:{line}:"))
        })
    };
    let inner = at("my_loop::pick_specialist", panic_line)
        .unwrap_or_else(|| panic!("no frame at the panic's line: {said}"));
    let outer = at(
        "<my_loop::Guest as wonopcode_guest_sdk::Loop>::run_prompt",
        call_line,
    )
    .unwrap_or_else(|| panic!("no frame at the call's line: {said}"));
    assert_eq!(outer, inner + 1, "{said}");
    assert!(
        said.contains("[0 debug-me] (#0 to #"),
        "the panic's own frames are summed up: {said}"
    );
    assert!(
        !frames[inner..]
            .iter()
            .any(|f| f.contains("/rustc/") && f.contains("panicking")),
        "{said}"
    );
    // The same backtrace in the context's file of the run's journal.
    let logged = logged_backtrace(&runs);
    assert!(
        logged.iter().any(|l| l.contains("my_loop::pick_specialist")
            && l.contains(&format!("src/lib.rs:{panic_line}:"))),
        "{logged:?}"
    );

    // Without the flag: the same error line; the backtrace only in the file, its frames
    // named but placed by code offset alone.
    let runs = s.outside("plain-runs");
    let out = run(&s, &runs, &[], "please panic");
    let said = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.lines().any(|l| l == error), "{said}");
    assert!(!said.contains("#0 "), "no backtrace on stderr: {said}");
    let logged = logged_backtrace(&runs);
    let frame = logged
        .iter()
        .find(|l| l.contains(" my_loop::pick_specialist "))
        .unwrap_or_else(|| panic!("{logged:?}"));
    assert!(
        frame.contains("(at 0x") && !frame.contains("src/lib.rs"),
        "{frame}"
    );
}

/// Whether `debugger` (Debian's package of that name) is installed; said when it is not
/// (CI installs it and requires it through `require`).
fn have(debugger: &str, require: &str) -> bool {
    let found = Command::new(debugger).arg("--version").output().is_ok();
    if !found {
        crate::support::missing_part(
            &format!(
                "{debugger} is not installed: `apt-get install {debugger}` (Debian's package)"
            ),
            require,
        );
    }
    found
}

#[test]
fn gdb_stops_at_a_breakpoint_in_the_guests_source_and_steps_through_it() {
    if !have("gdb", "WONOPCODE_REQUIRE_GDB") {
        return;
    }
    let s = Scratch::new();
    let source = guide_example();
    let first = line_of(&source, "let words = ");
    let next = line_of(&source, "if input.contains(\"panic\")");
    let out = Command::new("timeout")
        .arg("300")
        .arg("gdb")
        .args(["-q", "-batch", "-nx"])
        .args(["-ex", "set breakpoint pending on"])
        .args(["-ex", "set debuginfod enabled off"])
        .args(["-ex", "break my_loop::pick_specialist"])
        .args(["-ex", "run"])
        .args(["-ex", "bt 2"])
        .args(["-ex", "next"])
        .args(["-ex", "kill"])
        .arg("--args")
        .arg(crate::support::bin())
        .arg("--debug-guest")
        .args(example_args(&s, "please panic"))
        .env("WONOPCODE_RUNS_DIR", s.outside("runs"))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout).into_owned() + &stderr(&out);
    assert!(
        said.contains(&format!(
            "hit Breakpoint 1, my_loop::pick_specialist (input=...) at src/lib.rs:{first}"
        )),
        "gdb stops in the guest's function, at its first line: {said}"
    );
    assert!(
        said.lines().any(|l| l.starts_with("#1 ")
            && l.contains("run_prompt")
            && l.ends_with(&format!(
                "src/lib.rs:{}",
                line_of(&source, "let specialist = pick_specialist")
            ))),
        "and knows its caller: {said}"
    );
    assert!(
        said.lines()
            .any(|l| l.starts_with(&format!("{next}\t"))
                && l.contains("if input.contains(\"panic\")")),
        "`next` goes to the guest's next line: {said}"
    );
}

#[test]
fn lldb_stops_at_a_breakpoint_in_the_guests_source_and_steps_through_it() {
    if !have("lldb", "WONOPCODE_REQUIRE_LLDB") {
        return;
    }
    let s = Scratch::new();
    let source = guide_example();
    let first = line_of(&source, "let words = ");
    let next = line_of(&source, "if input.contains(\"panic\")");
    let call = line_of(&source, "let specialist = pick_specialist");
    let out = Command::new("timeout")
        .arg("300")
        .arg("lldb")
        .args(["--batch", "--no-lldbinit"])
        .args(["-O", "settings set plugin.jit-loader.gdb.enable on"])
        .args(["-o", "breakpoint set --name my_loop::pick_specialist"])
        .args(["-o", "run"])
        .args(["-o", "bt 2"])
        .args(["-o", "next"])
        .args(["-o", "kill"])
        .arg("--")
        .arg(crate::support::bin())
        .arg("--debug-guest")
        .args(example_args(&s, "please panic"))
        .env("WONOPCODE_RUNS_DIR", s.outside("runs"))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout).into_owned() + &stderr(&out);
    let frames: Vec<&str> = said
        .lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with("frame #") || l.starts_with("* frame #"))
        .collect();
    let stopped_in = |line: usize| {
        move |l: &&str| {
            l.contains("my_loop::pick_specialist") && l.contains(&format!(" at lib.rs:{line}:"))
        }
    };
    assert!(
        said.contains("stop reason = breakpoint 1.1") && frames.iter().any(stopped_in(first)),
        "lldb stops in the guest's function, at its first line: {said}"
    );
    assert!(
        frames.iter().any(|l| l.contains("frame #1:")
            && l.contains("run_prompt")
            && l.contains(&format!(" at lib.rs:{call}:"))),
        "and knows its caller: {said}"
    );
    assert!(
        said.contains("stop reason = step over") && frames.iter().any(stopped_in(next)),
        "`next` goes to the guest's next line: {said}"
    );
}
