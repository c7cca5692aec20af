//! What a hook is told (Claude Code's JSON on its stdin, with wonopcode's context added) and
//! what its answer means: its exit code and, on exit 0, the JSON it printed.

use serde_json::{Value, json};
use wonopcode_agent_loop::hook::HookSite;
use wonopcode_protocol::call::Call;
use wonopcode_protocol::claude_code::{claude_arguments, claude_tool, wonopcode_arguments};
use wonopcode_protocol::event::HookVerdict;

use crate::command::Ran;
use crate::event::HookEvent;
use crate::table::{FailureMode, HookEntry};

/// The longest reason kept from a hook's output (a first line, cut).
const REASON_CHARS: usize = 500;

/// What one hook said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// Its decision.
    pub verdict: HookVerdict,
    /// Why, when it said; how it failed, when it did.
    pub reason: Option<String>,
    /// Arguments to run the call with instead (`updatedInput`, as wonopcode's tool takes
    /// them).
    pub arguments: Option<String>,
    /// What the model is told after the call (`PostToolUse`).
    pub feedback: Option<String>,
}

impl Answer {
    pub(crate) fn new(verdict: HookVerdict, reason: Option<String>) -> Self {
        Self {
            verdict,
            reason,
            arguments: None,
            feedback: None,
        }
    }

    /// The answer that stops what it is about (a prompt, a stop) and tells the model `why`.
    pub(crate) fn blocking(why: String) -> Self {
        let mut answer = Self::new(HookVerdict::Block, Some(why.clone()));
        answer.feedback = Some(why);
        answer
    }

    /// The answer with no say that tells the model `said`, if anything.
    pub(crate) fn telling(said: Option<String>) -> Self {
        let mut answer = Self::new(HookVerdict::None, None);
        answer.feedback = said;
        answer
    }

    /// The answer of a hook of `event` that failed (`how`): reported, and, before a tool
    /// runs, a refusal of the call unless its entry says to fail open.
    pub(crate) fn failed(event: HookEvent, hook: &HookEntry, how: String) -> Self {
        let before_tool = event.gates_a_call();
        let mode = hook.failure.unwrap_or(if before_tool {
            FailureMode::Closed
        } else {
            FailureMode::Open
        });
        if mode == FailureMode::Closed && before_tool {
            Self::new(
                HookVerdict::Deny,
                Some(format!("the hook failed ({how}), and it fails closed")),
            )
        } else {
            Self::new(HookVerdict::Failed, Some(how))
        }
    }

    /// What `ran` means for a command hook of `event`.
    pub fn of(event: HookEvent, hook: &HookEntry, ran: Ran) -> Self {
        let before_tool = event.gates_a_call();
        let failed = |how: String| Self::failed(event, hook, how);
        let (code, stdout, stderr) = match ran {
            Ran::NotStarted(why) => return failed(format!("could not start: {why}")),
            Ran::TimedOut(after) => {
                return failed(format!("ran past its timeout of {} s", after.as_secs_f64()));
            }
            Ran::Exited {
                code: None, stderr, ..
            } => return failed(with_words("killed by a signal", &stderr)),
            Ran::Exited {
                code: Some(code),
                stdout,
                stderr,
            } => (code, stdout, stderr),
        };
        match code {
            0 => match parsed(&stdout) {
                Ok(Some(said)) => Self::from_json(event, &said),
                // What a prompt or session hook prints is context for the model (Claude
                // Code's rule).
                Ok(None) if event.prints_context() && !stdout.trim().is_empty() => {
                    Self::telling(Some(cut(stdout.trim())))
                }
                Ok(None) => Self::new(HookVerdict::None, None),
                Err(why) => failed(why),
            },
            // Claude Code's "blocking error": stderr is the reason the model gets.
            2 => {
                let reason = first_line(&stderr).unwrap_or_else(|| "blocked".to_owned());
                if before_tool {
                    Self::new(HookVerdict::Deny, Some(reason))
                } else {
                    Self::blocking(reason)
                }
            }
            // Claude Code's "non-blocking error": reported, and the call goes on.
            other => Self::new(
                HookVerdict::Failed,
                Some(with_words(&format!("exit code {other}"), &stderr)),
            ),
        }
    }

    /// The answer of a hook that exited 0 and printed a JSON object.
    fn from_json(event: HookEvent, said: &Value) -> Self {
        let specific = &said["hookSpecificOutput"];
        let reason = specific["permissionDecisionReason"]
            .as_str()
            .or_else(|| said["reason"].as_str())
            .map(cut);
        if said["continue"] == Value::Bool(false) {
            let why = said["stopReason"]
                .as_str()
                .map_or_else(|| "the hook said not to go on".to_owned(), cut);
            return if event.gates_a_call() {
                Self::new(HookVerdict::Deny, Some(why))
            } else {
                Self::blocking(why)
            };
        }
        if event == HookEvent::PermissionRequest {
            // `hookSpecificOutput.decision: {behavior: allow|deny, message}`.
            let decision = &specific["decision"];
            let verdict = match decision["behavior"].as_str() {
                Some("allow") => HookVerdict::Allow,
                Some("deny") => HookVerdict::Deny,
                _ => HookVerdict::None,
            };
            let message = decision["message"].as_str().map(cut).or(reason);
            return Self::new(verdict, message);
        }
        if event.gates_a_call() {
            // Claude Code's current field, then its older top-level `decision`.
            let decision =
                specific["permissionDecision"].as_str().or_else(|| {
                    match said["decision"].as_str() {
                        Some("approve") => Some("allow"),
                        Some("block") => Some("deny"),
                        _ => None,
                    }
                });
            let arguments = match &specific["updatedInput"] {
                Value::Object(_) => {
                    Some(wonopcode_arguments(&specific["updatedInput"]).to_string())
                }
                _ => None,
            };
            let verdict = match decision {
                Some("allow") => HookVerdict::Allow,
                Some("deny") => HookVerdict::Deny,
                Some("ask") => HookVerdict::Ask,
                _ if arguments.is_some() => HookVerdict::Rewrite,
                _ => HookVerdict::None,
            };
            let mut answer = Self::new(verdict, reason);
            answer.arguments = arguments;
            return answer;
        }
        let context = specific["additionalContext"].as_str().map(cut);
        match said["decision"].as_str() {
            Some("block") => {
                let mut answer = Self::new(HookVerdict::Block, reason.clone());
                answer.feedback = reason.or(context);
                answer
            }
            _ => Self {
                reason,
                ..Self::telling(context)
            },
        }
    }
}

/// What every hook of `event` is told: Claude Code's common fields, and wonopcode's
/// `context`, `depth` and `agent`.
pub fn common_input(event: HookEvent, site: &HookSite<'_>) -> Value {
    json!({
        "session_id": site.session_id,
        "cwd": site.cwd,
        "permission_mode": "default",
        "hook_event_name": event.name(),
        "context": site.context.to_string(),
        "depth": site.context.depth(),
        "agent": site.agent,
    })
}

/// What a hook of `event` is told about `call` (and, after it ran, its output): the common
/// fields, the call in Claude Code's tool and argument names, and wonopcode's own `tool`
/// name.
pub fn tool_input(
    event: HookEvent,
    site: &HookSite<'_>,
    call: &Call,
    response: Option<(&str, bool)>,
) -> Value {
    let arguments: Value = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
    let mut input = common_input(event, site);
    input["tool_name"] = json!(claude_tool(&call.name));
    input["tool_input"] = claude_arguments(&arguments);
    input["tool_use_id"] = json!(call.id);
    input["tool"] = json!(call.name);
    if let Some((output, is_error)) = response {
        input["tool_response"] = json!({"output": output, "success": !is_error});
    }
    input
}

/// The JSON object a hook printed; `None` for nothing or plain text (Claude Code shows that
/// to the user and decides nothing); `Err` for what looks like JSON and is not.
fn parsed(stdout: &str) -> Result<Option<Value>, String> {
    let text = stdout.trim();
    if !text.starts_with('{') {
        return Ok(None);
    }
    match serde_json::from_str::<Value>(text) {
        Ok(value @ Value::Object(_)) => Ok(Some(value)),
        Ok(_) => Ok(None),
        Err(e) => Err(format!("printed JSON that does not parse: {e}")),
    }
}

/// The first non-empty line of `text`, cut.
fn first_line(text: &str) -> Option<String> {
    text.lines().map(str::trim).find(|l| !l.is_empty()).map(cut)
}

/// `what`, and the hook's own first line of stderr when it said something.
fn with_words(what: &str, stderr: &str) -> String {
    match first_line(stderr) {
        Some(said) => format!("{what}: {said}"),
        None => what.to_owned(),
    }
}

/// At most [`REASON_CHARS`] characters of `text`.
fn cut(text: &str) -> String {
    match text.char_indices().nth(REASON_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn hook() -> HookEntry {
        HookEntry {
            kind: crate::table::HookKind::Command("./h.sh".to_owned()),
            timeout: Duration::from_secs(1),
            failure: None,
            source: "s.json".to_owned(),
            from_workspace: false,
        }
    }

    fn exited(code: i32, stdout: &str, stderr: &str) -> Ran {
        Ran::Exited {
            code: Some(code),
            stdout: stdout.to_owned(),
            stderr: stderr.to_owned(),
        }
    }

    #[test]
    fn claude_code_answers_before_a_tool() {
        let pre = |ran| Answer::of(HookEvent::PreToolUse, &hook(), ran);
        assert_eq!(pre(exited(0, "", "")).verdict, HookVerdict::None);
        assert_eq!(pre(exited(0, "checked\n", "")).verdict, HookVerdict::None);
        let denied = pre(exited(2, "", "no rm -rf here\nmore"));
        assert_eq!(denied.verdict, HookVerdict::Deny);
        assert_eq!(denied.reason.as_deref(), Some("no rm -rf here"));
        let json = r#"{"hookSpecificOutput": {"hookEventName": "PreToolUse",
            "permissionDecision": "allow", "permissionDecisionReason": "safe",
            "updatedInput": {"file_path": "b.txt", "content": "x"}}}"#;
        let allowed = pre(exited(0, json, ""));
        assert_eq!(allowed.verdict, HookVerdict::Allow);
        // Compared as JSON: the text's key order is whichever this build's serde_json keeps.
        let arguments: serde_json::Value =
            serde_json::from_str(allowed.arguments.as_deref().unwrap()).unwrap();
        assert_eq!(
            arguments,
            serde_json::json!({"content": "x", "path": "b.txt"})
        );
        let old = pre(exited(0, r#"{"decision": "block", "reason": "no"}"#, ""));
        assert_eq!(old.verdict, HookVerdict::Deny);
        // Claude Code's non-blocking error: reported, and the call goes on.
        assert_eq!(pre(exited(1, "", "oops")).verdict, HookVerdict::Failed);
        // Broken, hung or unstartable: refused before a tool runs, unless it fails open.
        for ran in [
            exited(0, "{not json", ""),
            Ran::TimedOut(Duration::from_secs(1)),
            Ran::NotStarted("no sh".to_owned()),
        ] {
            let answer = pre(ran);
            assert_eq!(answer.verdict, HookVerdict::Deny, "{answer:?}");
            assert!(answer.reason.unwrap().contains("fails closed"));
        }
        let open = HookEntry {
            failure: Some(FailureMode::Open),
            ..hook()
        };
        let answer = Answer::of(
            HookEvent::PreToolUse,
            &open,
            Ran::TimedOut(Duration::from_secs(1)),
        );
        assert_eq!(answer.verdict, HookVerdict::Failed);
    }

    #[test]
    fn claude_code_answers_a_permission_request() {
        let asked = |ran| Answer::of(HookEvent::PermissionRequest, &hook(), ran);
        let allow = r#"{"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}}"#;
        assert_eq!(asked(exited(0, allow, "")).verdict, HookVerdict::Allow);
        let deny = r#"{"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "deny", "message": "not on Fridays"}}}"#;
        let denied = asked(exited(0, deny, ""));
        assert_eq!(denied.verdict, HookVerdict::Deny);
        assert_eq!(denied.reason.as_deref(), Some("not on Fridays"));
        assert_eq!(asked(exited(0, "", "")).verdict, HookVerdict::None);
        assert_eq!(asked(exited(2, "", "no")).verdict, HookVerdict::Deny);
        // Broken, it refuses the approval unless it fails open.
        assert_eq!(asked(exited(0, "{oops", "")).verdict, HookVerdict::Deny);
    }

    #[test]
    fn claude_code_answers_at_a_prompt_and_a_stop() {
        let prompt = |ran| Answer::of(HookEvent::UserPromptSubmit, &hook(), ran);
        let added = prompt(exited(0, "Use tabs.\n", ""));
        assert_eq!(added.verdict, HookVerdict::None);
        assert_eq!(added.feedback.as_deref(), Some("Use tabs."));
        let json = r#"{"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "Use tabs."}}"#;
        assert_eq!(
            prompt(exited(0, json, "")).feedback.as_deref(),
            Some("Use tabs.")
        );
        assert_eq!(prompt(exited(2, "", "no")).verdict, HookVerdict::Block);
        let stop = Answer::of(
            HookEvent::Stop,
            &hook(),
            exited(0, r#"{"decision": "block", "reason": "run the tests"}"#, ""),
        );
        assert_eq!(stop.verdict, HookVerdict::Block);
        assert_eq!(stop.feedback.as_deref(), Some("run the tests"));
        // Plain text after a stop is no context: only a prompt hook's is.
        assert_eq!(
            Answer::of(HookEvent::Stop, &hook(), exited(0, "ok", "")).feedback,
            None
        );
    }

    #[test]
    fn claude_code_answers_after_a_tool() {
        let post = |ran| Answer::of(HookEvent::PostToolUse, &hook(), ran);
        let blocked = post(exited(
            0,
            r#"{"decision": "block", "reason": "lint failed"}"#,
            "",
        ));
        assert_eq!(blocked.verdict, HookVerdict::Block);
        assert_eq!(blocked.feedback.as_deref(), Some("lint failed"));
        assert_eq!(
            post(exited(2, "", "tests fail")).feedback.as_deref(),
            Some("tests fail")
        );
        let broken = post(Ran::TimedOut(Duration::from_secs(1)));
        assert_eq!(broken.verdict, HookVerdict::Failed);
        assert_eq!(broken.feedback, None);
    }
}
