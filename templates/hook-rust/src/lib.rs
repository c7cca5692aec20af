//! {{name}}: a wonopcode hook. Before a `bash` call it refuses commands containing a phrase
//! of its settings' `deny` list; everywhere else it has no say.
//!
//! Build: `cargo build --release --target wasm32-wasip2`
//! Use: name `target/wasm32-wasip2/release/{{crate}}.wasm` in a hook entry (see README.md).

wit_bindgen::generate!({ path: "wit", world: "hook" });

use std::cell::RefCell;

use exports::wonopcode::hooks::handler::{
    BeforeToolAnswer, Guest, Site, ToolCall, ToolVerdict, TurnAnswer, TurnEvent,
};

thread_local! {
    /// The phrases a command may not contain (the instance lives for the whole run).
    static DENY: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

struct Hook;

impl Guest for Hook {
    fn configure(settings: String) -> Result<(), String> {
        let settings: serde_json::Value =
            serde_json::from_str(&settings).map_err(|e| format!("settings: {e}"))?;
        let deny = match &settings["deny"] {
            serde_json::Value::Null => vec!["rm -rf /".to_owned()],
            serde_json::Value::Array(list) => list
                .iter()
                .map(|p| p.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .ok_or("`deny` must be a list of strings")?,
            _ => return Err("`deny` must be a list of strings".to_owned()),
        };
        DENY.with_borrow_mut(|d| *d = deny);
        Ok(())
    }

    fn before_tool(_site: Site, call: ToolCall) -> BeforeToolAnswer {
        let arguments: serde_json::Value =
            serde_json::from_str(&call.arguments).unwrap_or_default();
        let command = arguments["command"].as_str().unwrap_or_default();
        let refused = DENY.with_borrow(|deny| {
            deny.iter()
                .find(|phrase| call.name == "bash" && command.contains(phrase.as_str()))
                .cloned()
        });
        BeforeToolAnswer {
            verdict: match refused {
                Some(phrase) => ToolVerdict::Deny(format!("commands containing `{phrase}` are not allowed")),
                None => ToolVerdict::Pass,
            },
            arguments: None,
        }
    }

    fn permission_request(_site: Site, _call: ToolCall) -> ToolVerdict {
        ToolVerdict::Pass
    }

    fn after_tool(_site: Site, _call: ToolCall, _output: String, _is_error: bool) -> Option<String> {
        None
    }

    fn on_turn(_site: Site, _event: TurnEvent) -> TurnAnswer {
        TurnAnswer {
            block: None,
            context: None,
        }
    }
}

export!(Hook);
