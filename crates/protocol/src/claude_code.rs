//! Claude Code's names for wonopcode's tools and their arguments. An agent file, a settings
//! file or a hook script written for Claude Code works unchanged in wonopcode, so its names
//! are mapped, here and once, for every part that reads them.

/// Claude Code's tools that are one of wonopcode's, and that tool. (`Task` delegates; an
/// agent file's `Task` grants every delegation tool, a hook's `Task` matches `spawn_agent`.)
pub const TOOL_NAMES: &[(&str, &str)] = &[
    ("Read", "read"),
    ("Write", "write"),
    ("Edit", "edit"),
    ("MultiEdit", "edit"),
    ("Bash", "bash"),
    ("Grep", "grep"),
    ("Glob", "glob"),
    ("LS", "list"),
    ("TodoWrite", "todo"),
    ("WebFetch", "webfetch"),
    ("WebSearch", "websearch"),
    ("Skill", "skill"),
    ("Task", "spawn_agent"),
];

/// Argument names Claude Code's tools use for what wonopcode's call otherwise: a file is
/// `file_path` there and `path` here.
pub const ARGUMENT_NAMES: &[(&str, &str)] = &[("file_path", "path")];

/// wonopcode's tool `tool` as Claude Code names it; a tool Claude Code has no name for (an
/// MCP tool, `apply_patch`) keeps its own.
pub fn claude_tool(tool: &str) -> &str {
    TOOL_NAMES
        .iter()
        .find(|(_, ours)| *ours == tool)
        .map_or(tool, |(theirs, _)| theirs)
}

/// Claude Code's tool `name` as wonopcode's, when it is one of Claude Code's.
pub fn wonopcode_tool(name: &str) -> Option<&'static str> {
    TOOL_NAMES
        .iter()
        .find(|(theirs, _)| *theirs == name)
        .map(|(_, ours)| *ours)
}

/// wonopcode's tools that Claude Code has no name for, which its rule lists may name too.
const OWN_TOOLS: &[&str] = &[
    "apply_patch",
    "patch",
    "wait",
    "send_input",
    "close_agent",
    "list_agents",
];

/// Whether `name` is one of wonopcode's tools that Claude Code names.
fn ours(name: &str) -> bool {
    TOOL_NAMES.iter().any(|(_, ours)| *ours == name)
}

/// A permission rule as Claude Code writes it (`--allowedTools`, `permissions.allow`) as
/// wonopcode's `TOOL` or `TOOL:PATTERN`: `Read` → `read`, `Bash(git diff:*)` → `bash:git
/// diff` (a command prefix), `Bash(npm test)` → `bash:npm test` (the exact command, as a
/// prefix: `npm test -- --watch` matches it too), `Edit(./src/**)` → `edit:src/**`, an MCP
/// tool as it is. `Err`: why it has no counterpart (one line).
pub fn permission_rule(written: &str) -> Result<String, String> {
    let written = written.trim();
    let (name, specifier) = match written.split_once('(') {
        Some((name, rest)) => {
            let inner = rest.strip_suffix(')').ok_or_else(|| {
                format!("`{written}`: a rule's `(` needs its `)`, as in `Bash(git diff:*)`")
            })?;
            (name.trim(), Some(inner.trim()))
        }
        None => (written, None),
    };
    let tool = match wonopcode_tool(name) {
        Some(tool) => tool,
        None if name.starts_with("mcp__") || OWN_TOOLS.contains(&name) || ours(name) => name,
        None if name.starts_with(|c: char| c.is_ascii_uppercase()) => {
            return Err(format!(
                "`{written}`: wonopcode has no tool Claude Code calls `{name}`"
            ));
        }
        // Most likely the prompt, taken as one more rule (the flag takes every word after
        // it, as Claude Code's does).
        None => {
            return Err(format!(
                "`{written}` is no tool; give the prompt before the flag, or after `--`"
            ));
        }
    };
    let Some(specifier) = specifier.filter(|s| !s.is_empty() && *s != "*") else {
        return Ok(tool.to_owned());
    };
    let pattern = match tool {
        "bash" => specifier.strip_suffix(":*").unwrap_or(specifier).trim(),
        "read" | "write" | "edit" | "grep" | "glob" | "list" => {
            specifier.strip_prefix("./").unwrap_or(specifier)
        }
        _ => {
            return Err(format!(
                "`{written}`: wonopcode's rules for `{tool}` take no `({specifier})`; give `{name}` to cover the whole tool"
            ));
        }
    };
    Ok(format!("{tool}:{pattern}"))
}

/// Claude Code's tool-rule lists as one value gives them: separated by commas or spaces,
/// but not inside a rule's parentheses (`"Bash(git log:*) Read, Edit"`).
pub fn split_rules(value: &str) -> Vec<String> {
    let (mut rules, mut current, mut depth) = (Vec::new(), String::new(), 0usize);
    for c in value.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' | ' ' | '\t' | '\n' if depth == 0 => {
                if !current.trim().is_empty() {
                    rules.push(std::mem::take(&mut current));
                }
                current.clear();
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    if !current.trim().is_empty() {
        rules.push(current);
    }
    rules
}

/// A call's arguments as Claude Code's tool would take them (`path` → `file_path`).
pub fn claude_arguments(arguments: &serde_json::Value) -> serde_json::Value {
    rename_keys(arguments, |key| {
        ARGUMENT_NAMES
            .iter()
            .find(|(_, ours)| *ours == key)
            .map(|(theirs, _)| *theirs)
    })
}

/// Arguments written for Claude Code's tool as wonopcode's take them (`file_path` → `path`).
pub fn wonopcode_arguments(arguments: &serde_json::Value) -> serde_json::Value {
    rename_keys(arguments, |key| {
        ARGUMENT_NAMES
            .iter()
            .find(|(theirs, _)| *theirs == key)
            .map(|(_, ours)| *ours)
    })
}

/// `value` with its top-level keys renamed where `rename` says.
fn rename_keys(
    value: &serde_json::Value,
    rename: impl Fn(&str) -> Option<&'static str>,
) -> serde_json::Value {
    match value {
        serde_json::Value::Object(map) => map
            .iter()
            .map(|(key, v)| {
                let key = rename(key).map_or_else(|| key.clone(), str::to_owned);
                (key, v.clone())
            })
            .collect::<serde_json::Map<_, _>>()
            .into(),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn claude_codes_rules_are_wonopcodes() {
        let rules =
            split_rules("Bash(git log:*) Bash(git diff:*), Read Edit(./src/**) mcp__fs__read");
        let mapped: Vec<String> = rules.iter().map(|r| permission_rule(r).unwrap()).collect();
        assert_eq!(
            mapped,
            [
                "bash:git log",
                "bash:git diff",
                "read",
                "edit:src/**",
                "mcp__fs__read"
            ]
        );
        assert_eq!(permission_rule("Bash(npm test)").unwrap(), "bash:npm test");
        assert_eq!(permission_rule("Bash(*)").unwrap(), "bash");
        assert_eq!(
            permission_rule("NotebookEdit").unwrap_err(),
            "`NotebookEdit`: wonopcode has no tool Claude Code calls `NotebookEdit`"
        );
        assert!(
            permission_rule("Bash(git")
                .unwrap_err()
                .contains("needs its `)`")
        );
        assert_eq!(permission_rule("apply_patch").unwrap(), "apply_patch");
        assert_eq!(
            permission_rule("fix").unwrap_err(),
            "`fix` is no tool; give the prompt before the flag, or after `--`"
        );
        assert!(
            permission_rule("WebFetch(domain:x.org)")
                .unwrap_err()
                .contains("take no")
        );
    }

    #[test]
    fn names_map_both_ways() {
        assert_eq!(claude_tool("bash"), "Bash");
        assert_eq!(claude_tool("list"), "LS");
        assert_eq!(claude_tool("mcp__fs__read"), "mcp__fs__read");
        assert_eq!(wonopcode_tool("Write"), Some("write"));
        assert_eq!(wonopcode_tool("NotebookEdit"), None);
        let ours = json!({"path": "a.txt", "content": "x"});
        let theirs = claude_arguments(&ours);
        assert_eq!(theirs, json!({"file_path": "a.txt", "content": "x"}));
        assert_eq!(wonopcode_arguments(&theirs), ours);
    }
}
