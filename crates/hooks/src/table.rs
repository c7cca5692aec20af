//! The hook table: per event, groups of hooks with a matcher, in Claude Code's shape
//! (`{"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "..."}]}]}`),
//! read from wonopcode's config file and Claude Code's settings files alike.

use std::time::Duration;

use regex::Regex;
use serde_json::Value;

use crate::HookError;

/// The events a hook can be configured for.
pub const EVENTS: &[&str] = &[
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PermissionRequest",
    "PreCompact",
    "SubagentStart",
    "SubagentStop",
    "Stop",
    "SessionEnd",
];

/// The events this version runs hooks on; hooks of the others are read, checked and
/// reported as not run yet.
pub const RUN_EVENTS: &[&str] = &[
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "Stop",
    "SubagentStart",
    "SubagentStop",
];

/// How long a hook may run when its entry does not say (seconds).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// What happens when a hook crashes, hangs or prints what cannot be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureMode {
    /// The call goes on as if the hook had not spoken.
    Open,
    /// The call is refused.
    Closed,
}

/// One command hook.
#[derive(Debug, Clone)]
pub struct CommandHook {
    /// The shell command (run with `sh -c`).
    pub command: String,
    /// How long it may run.
    pub timeout: Duration,
    /// What a failure of it means; `None`: the event's default (closed before a tool runs,
    /// open elsewhere).
    pub failure: Option<FailureMode>,
    /// The file it was configured in, for messages.
    pub source: String,
}

/// Hooks of one event that share a matcher.
#[derive(Debug, Clone)]
pub struct HookGroup {
    /// Which tool names it applies to (anchored); `None`: all.
    pub matcher: Option<Regex>,
    /// Its hooks, in order.
    pub hooks: Vec<CommandHook>,
}

impl HookGroup {
    /// Whether the group applies to a call of wonopcode's `tool` (matched by its own name or
    /// by Claude Code's name for it, so `Bash` and `bash` both match).
    pub fn matches(&self, tool: &str) -> bool {
        self.matcher.as_ref().is_none_or(|re| {
            re.is_match(tool) || re.is_match(wonopcode_agent_loop::claude_code::claude_tool(tool))
        })
    }
}

/// Every configured hook, by event.
#[derive(Debug, Clone, Default)]
pub struct HookTable {
    events: Vec<(String, Vec<HookGroup>)>,
}

impl HookTable {
    /// The table of a `hooks` value (a JSON object in Claude Code's shape) read from
    /// `source`. A shape error names the file and where in it.
    pub fn parse(value: &Value, source: &str) -> Result<Self, HookError> {
        let bad = |at: &str, why: &str| HookError::Config {
            file: source.to_owned(),
            at: at.to_owned(),
            why: why.to_owned(),
        };
        let Value::Object(events) = value else {
            return Err(bad("hooks", "must be a map of event names"));
        };
        let mut table = Self::default();
        for (event, groups) in events {
            if !EVENTS.contains(&event.as_str()) {
                return Err(bad(
                    &format!("hooks.{event}"),
                    &format!("unknown event; the events are {}", EVENTS.join(", ")),
                ));
            }
            let Value::Array(groups) = groups else {
                return Err(bad(&format!("hooks.{event}"), "must be a list of groups"));
            };
            let mut parsed = Vec::with_capacity(groups.len());
            for (i, group) in groups.iter().enumerate() {
                let at = format!("hooks.{event}[{i}]");
                parsed.push(parse_group(group, &at, source).map_err(|why| bad(&at, &why))?);
            }
            table.events.push((event.clone(), parsed));
        }
        Ok(table)
    }

    /// This table with `other`'s hooks after its own.
    pub fn merged(mut self, other: Self) -> Self {
        for (event, groups) in other.events {
            match self.events.iter_mut().find(|(e, _)| *e == event) {
                Some((_, own)) => own.extend(groups),
                None => self.events.push((event, groups)),
            }
        }
        self
    }

    /// The hooks of `event` that apply to a call of `tool`, in configuration order (each
    /// command once, as Claude Code runs identical handlers once).
    pub fn for_call(&self, event: &str, tool: &str) -> Vec<&CommandHook> {
        let mut hooks: Vec<&CommandHook> = Vec::new();
        for group in self.groups(event).filter(|g| g.matches(tool)) {
            for hook in &group.hooks {
                if !hooks.iter().any(|h| h.command == hook.command) {
                    hooks.push(hook);
                }
            }
        }
        hooks
    }

    /// The hooks of `event`, an event Claude Code gives no matcher to (`UserPromptSubmit`,
    /// `Stop`) or one whose matcher wonopcode cannot match yet (`SubagentStop`'s agent type):
    /// every group's, in configuration order, each command once.
    pub fn for_event(&self, event: &str) -> Vec<&CommandHook> {
        let mut hooks: Vec<&CommandHook> = Vec::new();
        for hook in self.groups(event).flat_map(|g| &g.hooks) {
            if !hooks.iter().any(|h| h.command == hook.command) {
                hooks.push(hook);
            }
        }
        hooks
    }

    /// Whether no hook is configured.
    pub fn is_empty(&self) -> bool {
        self.events
            .iter()
            .all(|(_, groups)| groups.iter().all(|g| g.hooks.is_empty()))
    }

    /// The events with hooks this version does not run yet.
    pub fn not_run(&self) -> Vec<&str> {
        self.events
            .iter()
            .filter(|(event, groups)| {
                !RUN_EVENTS.contains(&event.as_str()) && groups.iter().any(|g| !g.hooks.is_empty())
            })
            .map(|(event, _)| event.as_str())
            .collect()
    }

    fn groups(&self, event: &str) -> impl Iterator<Item = &HookGroup> {
        self.events
            .iter()
            .filter(move |(e, _)| e == event)
            .flat_map(|(_, groups)| groups)
    }
}

/// One `{matcher, hooks}` group.
fn parse_group(group: &Value, at: &str, source: &str) -> Result<HookGroup, String> {
    let Value::Object(fields) = group else {
        return Err("must be a map with `matcher` and `hooks`".to_owned());
    };
    let matcher = match fields.get("matcher") {
        None | Some(Value::Null) => None,
        Some(Value::String(m)) if m.is_empty() || m == "*" => None,
        Some(Value::String(m)) => Some(Regex::new(&format!("^(?:{m})$")).map_err(|e| {
            // The regex crate's message draws the pattern over several lines; its
            // last line says what is wrong.
            let what = e.to_string();
            let what = what.lines().last().unwrap_or_default().trim().to_owned();
            format!(
                "matcher `{m}` is not a valid pattern: {}",
                what.trim_start_matches("error: ")
            )
        })?),
        Some(_) => return Err("`matcher` must be a string".to_owned()),
    };
    let Some(Value::Array(hooks)) = fields.get("hooks") else {
        return Err("`hooks` (a list) is required".to_owned());
    };
    let hooks = hooks
        .iter()
        .enumerate()
        .map(|(i, hook)| {
            parse_hook(hook, source).map_err(|why| format!("hooks[{i}] of {at}: {why}"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(HookGroup { matcher, hooks })
}

/// One `{type: command, command, timeout}` hook.
fn parse_hook(hook: &Value, source: &str) -> Result<CommandHook, String> {
    let Value::Object(fields) = hook else {
        return Err("must be a map with `type` and `command`".to_owned());
    };
    match fields.get("type").and_then(Value::as_str) {
        Some("command") => {}
        Some(other) => {
            return Err(format!(
                "type `{other}` is not supported; wonopcode runs `command` hooks"
            ));
        }
        None => return Err("`type` is required (`command`)".to_owned()),
    }
    let command = fields
        .get("command")
        .and_then(Value::as_str)
        .filter(|c| !c.trim().is_empty())
        .ok_or("`command` (a non-empty string) is required")?;
    let timeout = match fields.get("timeout") {
        None | Some(Value::Null) => DEFAULT_TIMEOUT,
        Some(t) => t
            .as_f64()
            .filter(|s| *s > 0.0 && s.is_finite())
            .map(Duration::from_secs_f64)
            .ok_or("`timeout` must be a positive number of seconds")?,
    };
    let failure = match fields.get("failure").and_then(Value::as_str) {
        None => None,
        Some("open") => Some(FailureMode::Open),
        Some("closed") => Some(FailureMode::Closed),
        Some(other) => {
            return Err(format!("failure `{other}` is not `open` or `closed`"));
        }
    };
    Ok(CommandHook {
        command: command.to_owned(),
        timeout,
        failure,
        source: source.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn claude_code_settings_parse_and_match_by_either_name() {
        let value = json!({
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [{"type": "command", "command": "./check.sh", "timeout": 5}]},
                {"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "./fmt.sh"}]},
                {"hooks": [{"type": "command", "command": "./log.sh"}, {"type": "command", "command": "./check.sh"}]}
            ],
            "SessionEnd": [{"hooks": [{"type": "command", "command": "./bye.sh"}]}]
        });
        let table = HookTable::parse(&value, ".claude/settings.json").unwrap();
        let names = |tool: &str| -> Vec<String> {
            table
                .for_call("PreToolUse", tool)
                .iter()
                .map(|h| h.command.clone())
                .collect()
        };
        assert_eq!(names("bash"), ["./check.sh", "./log.sh"]);
        assert_eq!(names("write"), ["./fmt.sh", "./log.sh", "./check.sh"]);
        // Anchored: `Bash` does not match `bash_extra`.
        assert_eq!(names("bash_extra"), ["./log.sh", "./check.sh"]);
        assert_eq!(
            table.for_call("PreToolUse", "bash")[0].timeout,
            Duration::from_secs(5)
        );
        assert_eq!(table.not_run(), ["SessionEnd"]);
    }

    #[test]
    fn a_bad_entry_names_its_file_and_place() {
        let cases = [
            (json!({"PreToolUs": []}), "hooks.PreToolUs: unknown event"),
            (
                json!({"PreToolUse": [{"matcher": "(", "hooks": []}]}),
                "hooks.PreToolUse[0]: matcher `(` is not a valid pattern",
            ),
            (
                json!({"PreToolUse": [{"hooks": [{"type": "prompt", "prompt": "?"}]}]}),
                "hooks[0] of hooks.PreToolUse[0]: type `prompt` is not supported",
            ),
            (
                json!({"PostToolUse": [{"hooks": [{"type": "command", "command": "x", "timeout": -1}]}]}),
                "`timeout` must be a positive number of seconds",
            ),
        ];
        for (value, says) in cases {
            let e = HookTable::parse(&value, "s.json").unwrap_err().to_string();
            assert!(e.starts_with("s.json: "), "{e}");
            assert!(e.contains(says), "{e}");
        }
    }
}
