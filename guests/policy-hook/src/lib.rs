//! A policy hook: refuses `bash` commands that contain any phrase of its `deny` list, and,
//! when its settings name a `tests` command, keeps a context that changed files from
//! stopping until that command ran successfully after the last change.
//!
//! ```yaml
//! settings: {deny: ["rm -rf", "git push --force"], tests: "make test"}
//! ```
//!
//! It counts per context (`0`, `0.1`, ...), so a child that edits must test before it
//! returns, whatever its parent did.

use std::cell::RefCell;
use std::collections::BTreeSet;

use wonopcode_hook_sdk::{
    BeforeToolAnswer, Hook, Site, ToolCall, TurnAnswer, TurnEvent, TurnPoint, Value, arguments,
    deny, export_hook, pass,
};

/// Tools that change files.
const WRITERS: &[&str] = &["write", "edit", "multiedit", "apply_patch"];

#[derive(Default)]
struct Policy {
    deny: Vec<String>,
    tests: Option<String>,
    /// Contexts that changed files since the tests last passed in them.
    untested: BTreeSet<String>,
}

thread_local! {
    static POLICY: RefCell<Policy> = RefCell::default();
}

/// The command of a `bash` call.
fn command(call: &ToolCall) -> Option<String> {
    (call.name == "bash")
        .then(|| arguments(call)["command"].as_str().map(str::to_owned))
        .flatten()
}

struct PolicyHook;

impl Hook for PolicyHook {
    fn configure(settings: Value) -> Result<(), String> {
        let deny = match &settings["deny"] {
            Value::Null => Vec::new(),
            Value::Array(list) => list
                .iter()
                .map(|p| p.as_str().filter(|p| !p.is_empty()).map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .ok_or("`deny` must be a list of non-empty strings")?,
            _ => return Err("`deny` must be a list of non-empty strings".to_owned()),
        };
        let tests = match &settings["tests"] {
            Value::Null => None,
            Value::String(t) if !t.trim().is_empty() => Some(t.clone()),
            _ => return Err("`tests` must be a command".to_owned()),
        };
        POLICY.with_borrow_mut(|p| {
            *p = Policy {
                deny,
                tests,
                untested: BTreeSet::new(),
            }
        });
        Ok(())
    }

    fn before_tool(_site: &Site, call: &ToolCall) -> BeforeToolAnswer {
        let Some(command) = command(call) else {
            return pass();
        };
        POLICY.with_borrow(|p| {
            match p
                .deny
                .iter()
                .find(|phrase| command.contains(phrase.as_str()))
            {
                Some(phrase) => deny(format!(
                    "the workspace policy refuses commands containing `{phrase}`"
                )),
                None => pass(),
            }
        })
    }

    fn after_tool(site: &Site, call: &ToolCall, _output: &str, is_error: bool) -> Option<String> {
        if is_error {
            return None;
        }
        POLICY.with_borrow_mut(|p| {
            if WRITERS.contains(&call.name.as_str()) {
                p.untested.insert(site.context.clone());
            } else if let (Some(tests), Some(command)) = (&p.tests, command(call))
                && command.contains(tests.as_str())
            {
                p.untested.remove(&site.context);
            }
        });
        None
    }

    fn on_turn(site: &Site, event: &TurnEvent) -> TurnAnswer {
        let stopping = matches!(event.point, TurnPoint::Stop | TurnPoint::SubagentStop);
        let block = POLICY.with_borrow(|p| match &p.tests {
            Some(tests) if stopping && p.untested.contains(&site.context) => Some(format!(
                "Files changed since the tests last passed here: run `{tests}` before you stop."
            )),
            _ => None,
        });
        TurnAnswer {
            block,
            context: None,
        }
    }
}

export_hook!(PolicyHook);
