//! A core WebAssembly module made a component, as `wasm-tools component new --adapt` makes
//! it: for a guest written in a language whose toolchain writes core modules (C with
//! clang and wasi-libc), so its author needs no other tool. The module carries its world in
//! a `component-type` custom section (the bindings put it there); its WASI preview 1 imports
//! are met by Wasmtime's reactor adapter of the release the host runs on.

use wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER;

use crate::error::SessionError;

/// The component of the core module `bytes` (from `origin`, a path for messages).
/// `Err`: one line saying why it cannot be one.
pub fn componentize(bytes: &[u8], origin: &str) -> Result<Vec<u8>, SessionError> {
    let refused = |why: String| SessionError::Choice(format!("{origin}: {why}"));
    if !bytes.starts_with(b"\0asm") {
        return Err(refused("not a WebAssembly file".to_owned()));
    }
    if wasmparser::Parser::is_component(bytes) {
        return Err(refused(
            "already a component; give the core module the compiler wrote".to_owned(),
        ));
    }
    if !carries_its_world(bytes) {
        return Err(refused(
            "carries no world (no `component-type` section): link it with its bindings' \
             `_component_type.o`"
                .to_owned(),
        ));
    }
    wit_component::ComponentEncoder::default()
        .module(bytes)
        .map_err(|e| refused(format!("cannot be made a component: {}", first_line(&e))))?
        .validate(true)
        .adapter(
            "wasi_snapshot_preview1",
            WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER,
        )
        .map_err(|e| refused(first_line(&e)))?
        .encode()
        .map_err(|e| refused(format!("cannot be made a component: {}", first_line(&e))))
}

/// Whether the module has the custom section its bindings put its world in.
fn carries_its_world(bytes: &[u8]) -> bool {
    wasmparser::Parser::new(0).parse_all(bytes).any(|payload| {
        matches!(payload, Ok(wasmparser::Payload::CustomSection(s))
            if s.name().starts_with("component-type"))
    })
}

/// The first line of an error and its causes.
fn first_line(e: &dyn std::fmt::Display) -> String {
    let text = format!("{e:#}");
    text.lines().next().unwrap_or("no reason given").to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_not_a_core_module_is_refused_in_one_line() {
        let not_wasm = componentize(b"#!/bin/sh\n", "x.wasm")
            .unwrap_err()
            .to_string();
        assert_eq!(not_wasm, "x.wasm: not a WebAssembly file");
        let component = wat::parse_str("(component)").unwrap();
        let said = componentize(&component, "c.wasm").unwrap_err().to_string();
        assert!(said.starts_with("c.wasm: already a component"), "{said}");
        // A module without its world: nothing says what it exports.
        let bare = wat::parse_str("(module (func (export \"f\")))").unwrap();
        let said = componentize(&bare, "m.wasm").unwrap_err().to_string();
        assert!(said.starts_with("m.wasm: carries no world"), "{said}");
    }
}
