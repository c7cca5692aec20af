//! The seed's authoring route, beside the `wasm32-wasip2` one the other guests take: a guest
//! built for `wasm32-unknown-unknown` (a core module, no WASI) and made a component as
//! `wasm-tools component new core.wasm -o guest.wasm` makes it (`wit-component`, that
//! command's library), then run by the real binary (`docs/guest-authoring.md`).

use std::path::PathBuf;
use std::process::Command;

use crate::support::{Scratch, call, done, repo_root, stderr, text, wonopcode};

/// `examples/guest-hello` built for `wasm32-unknown-unknown`, in a target directory of its
/// own; `None` (the test says why and passes) when the target is not installed, unless CI
/// requires it (`WONOPCODE_REQUIRE_CORE_TARGET`).
fn core_module() -> Option<PathBuf> {
    let root = repo_root();
    let target_dir = root.join("target/guests-core");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(root.join("guests"))
        .args(["build", "--release", "--target", "wasm32-unknown-unknown"])
        .args(["-p", "guest-hello", "--target-dir"])
        .arg(&target_dir)
        .output()
        .unwrap();
    if !out.status.success() {
        let why = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            std::env::var_os("WONOPCODE_REQUIRE_CORE_TARGET").is_none(),
            "the core module did not build: {why}"
        );
        wonopcode_sandbox::test_skip::note(&format!(
            "wasm32-unknown-unknown is not installed ({why})"
        ));
        return None;
    }
    Some(target_dir.join("wasm32-unknown-unknown/release/guest_hello.wasm"))
}

#[test]
fn a_core_module_made_a_component_as_wasm_tools_does_runs_as_a_loop() {
    let Some(core) = core_module() else { return };
    let bytes = std::fs::read(&core).unwrap();
    assert!(
        !String::from_utf8_lossy(&bytes).contains("wasi"),
        "a wasm32-unknown-unknown guest imports no WASI, so it needs no adapter"
    );
    let component = wit_component::ComponentEncoder::default()
        .module(&bytes)
        .unwrap()
        .validate(true)
        .encode()
        .unwrap();
    let s = Scratch::new();
    let guest = s.outside("hello.wasm");
    std::fs::write(&guest, component).unwrap();

    let validated = wonopcode()
        .args(["loops", "validate"])
        .arg(&guest)
        .output()
        .unwrap();
    assert_eq!(validated.status.code(), Some(0), "{}", stderr(&validated));

    let mut counting = call("c1", "word_count", r#"{"text": "one two three"}"#);
    counting.push(done("tool_use"));
    let t = s.transcript(
        "t.jsonl",
        &[counting, vec![text("Three words."), done("end_turn")]],
    );
    let out = wonopcode()
        .arg("--agent-loop")
        .arg(&guest)
        .arg("--json")
        .arg("--replay")
        .arg(&t)
        .arg("-C")
        .arg(s.ws())
        .arg("How many words in `one two three`?")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let events = crate::support::events(&out);
    let counted = events
        .iter()
        .find(|e| e["type"] == "item.completed" && e["item"]["call_id"] == "c1")
        .expect("the custom tool ran in the guest");
    assert!(
        counted["item"]["output"].as_str().unwrap().contains('3'),
        "{counted}"
    );
    let said = events
        .iter()
        .rev()
        .find(|e| e["type"] == "turn.completed")
        .unwrap();
    assert_eq!(said["status"], "complete", "{said}");
}
