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
