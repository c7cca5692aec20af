//! The Rust SDK of wonopcode's component hooks: write a hook — the user's policy, asked at
//! fixed points of every context of a run — as a WebAssembly component of the
//! `wonopcode:hooks` world (`wit/hooks/`).
//!
//! Implement [`Hook`] (every method has a default that has no say), export it with
//! [`export_hook!`], build with `cargo build --release --target wasm32-wasip2`, and name the
//! component in a hook entry:
//!
//! ```yaml
//! hooks:
//!   PreToolUse:
//!     - matcher: Bash
//!       hooks: [{type: component, component: policy.wasm, settings: {deny: ["rm -rf"]}}]
//! ```
//!
//! A hook gets no files, network or environment unless its entry grants them. One instance
//! serves the entry for the whole run, so a hook may keep state between calls (in a
//! `thread_local!`); a trap discards that instance and the next call starts a fresh one.

#![deny(missing_docs)]

#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "wit",
        world: "hook",
        pub_export_macro: true,
        export_macro_name: "export_bindings",
        default_bindings_module: "wonopcode_hook_sdk::bindings",
    });
}

pub use bindings::exports::wonopcode::hooks::handler::{BeforeToolAnswer, ToolVerdict, TurnAnswer};
pub use bindings::wonopcode::hooks::types::{Site, ToolCall, TurnEvent, TurnPoint};
pub use serde_json::Value;

/// A hook. Each method is one entry point of the world; its default has no say.
pub trait Hook {
    /// Called once when the instance starts, with the entry's `settings` (`null` when it
    /// has none). An error refuses the hook, with the message.
    fn configure(_settings: Value) -> Result<(), String> {
        Ok(())
    }

    /// Before a tool call runs (`PreToolUse`).
    fn before_tool(_site: &Site, _call: &ToolCall) -> BeforeToolAnswer {
        pass()
    }

    /// When a call needs the user's approval (`PermissionRequest`).
    fn permission_request(_site: &Site, _call: &ToolCall) -> ToolVerdict {
        ToolVerdict::Pass
    }

    /// After a call ran (`PostToolUse`): what the model is told besides its output.
    fn after_tool(
        _site: &Site,
        _call: &ToolCall,
        _output: &str,
        _is_error: bool,
    ) -> Option<String> {
        None
    }

    /// At a point of a context's turn (a prompt, a start, a stop, a compaction, the end).
    fn on_turn(_site: &Site, _event: &TurnEvent) -> TurnAnswer {
        TurnAnswer {
            block: None,
            context: None,
        }
    }
}

/// The answer that has no say over a call.
pub fn pass() -> BeforeToolAnswer {
    BeforeToolAnswer {
        verdict: ToolVerdict::Pass,
        arguments: None,
    }
}

/// The answer that refuses a call, telling the model `why`.
pub fn deny(why: impl Into<String>) -> BeforeToolAnswer {
    BeforeToolAnswer {
        verdict: ToolVerdict::Deny(why.into()),
        arguments: None,
    }
}

/// A call's arguments as JSON (`Value::Null` when the model sent something else).
pub fn arguments(call: &ToolCall) -> Value {
    serde_json::from_str(&call.arguments).unwrap_or(Value::Null)
}

/// Parses the settings the host gives and hands them to `H`.
#[doc(hidden)]
pub fn configure<H: Hook>(settings: &str) -> Result<(), String> {
    let settings =
        serde_json::from_str(settings).map_err(|e| format!("the settings are not JSON: {e}"))?;
    H::configure(settings)
}

/// Exports a [`Hook`] implementation as the component's `wonopcode:hooks/handler`.
#[macro_export]
macro_rules! export_hook {
    ($ty:ident) => {
        const _: () = {
            struct __WonopcodeHook;
            impl $crate::bindings::exports::wonopcode::hooks::handler::Guest for __WonopcodeHook {
                fn configure(settings: String) -> Result<(), String> {
                    $crate::configure::<$ty>(&settings)
                }
                fn before_tool(
                    site: $crate::Site,
                    call: $crate::ToolCall,
                ) -> $crate::BeforeToolAnswer {
                    <$ty as $crate::Hook>::before_tool(&site, &call)
                }
                fn permission_request(
                    site: $crate::Site,
                    call: $crate::ToolCall,
                ) -> $crate::ToolVerdict {
                    <$ty as $crate::Hook>::permission_request(&site, &call)
                }
                fn after_tool(
                    site: $crate::Site,
                    call: $crate::ToolCall,
                    output: String,
                    is_error: bool,
                ) -> Option<String> {
                    <$ty as $crate::Hook>::after_tool(&site, &call, &output, is_error)
                }
                fn on_turn(site: $crate::Site, event: $crate::TurnEvent) -> $crate::TurnAnswer {
                    <$ty as $crate::Hook>::on_turn(&site, &event)
                }
            }
            $crate::bindings::export_bindings!(__WonopcodeHook);
        };
    };
}
