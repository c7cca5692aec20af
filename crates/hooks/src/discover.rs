//! Where hooks are configured: wonopcode's config file (`hooks:`), then Claude Code's
//! settings files — the user's `~/.claude/settings.json`, the workspace's
//! `.claude/settings.json` and `.claude/settings.local.json` — each read for its `hooks`
//! table only. Hooks of every file run; none replaces another's. The workspace's files are
//! read only when the person trusts the workspace, and their hooks are marked as the
//! workspace's ([`HookTable::from_workspace`]).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::HookError;
use crate::table::HookTable;

/// Claude Code's settings files that may hold hooks, in the order they are read, each with
/// whether it is the workspace's: the user's, then the workspace's shared and local ones.
pub fn settings_files(workspace: &Path, home: Option<&Path>) -> Vec<(PathBuf, bool)> {
    let mut files = Vec::new();
    if let Some(home) = home {
        files.push((home.join(".claude/settings.json"), false));
    }
    files.push((workspace.join(".claude/settings.json"), true));
    files.push((workspace.join(".claude/settings.local.json"), true));
    files
}

/// The run's hook table: `configured` (the config file's `hooks`, with its file's name),
/// then the `hooks` of every settings file of [`settings_files`] that exists — the
/// workspace's only when `workspace_trusted`. Also one line per grant a workspace's hook
/// was refused.
pub fn discover(
    configured: Option<(&Value, &str)>,
    workspace: &Path,
    home: Option<&Path>,
    workspace_trusted: bool,
) -> Result<(HookTable, Vec<String>), HookError> {
    let mut table = match configured {
        Some((value, file)) => HookTable::parse(value, file)?,
        None => HookTable::default(),
    };
    let mut refused = Vec::new();
    let users = home.map(|h| h.join(".claude/settings.json"));
    for (file, of_workspace) in settings_files(workspace, home) {
        // The user's own file, when the workspace is the home directory, is the user's.
        let of_workspace = of_workspace && users.as_ref() != Some(&file);
        if of_workspace && !workspace_trusted {
            continue;
        }
        let text = match std::fs::read_to_string(&file) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                return Err(HookError::Read {
                    file: file.display().to_string(),
                    why: e.to_string(),
                });
            }
        };
        let settings: Value = serde_json::from_str(&text).map_err(|e| HookError::Read {
            file: file.display().to_string(),
            why: format!("not JSON: {e}"),
        })?;
        if let Some(hooks) = settings.get("hooks") {
            let mut hooks = HookTable::parse(hooks, &file.display().to_string())?;
            if of_workspace {
                let (marked, lines) = hooks.from_workspace();
                hooks = marked;
                refused.extend(lines);
            }
            table = table.merged(hooks);
        }
    }
    Ok((table, refused))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_files_add_up_and_a_broken_one_names_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let (ws, home) = (dir.path().join("ws"), dir.path().join("home"));
        std::fs::create_dir_all(ws.join(".claude")).unwrap();
        std::fs::create_dir_all(home.join(".claude")).unwrap();
        let hook = |command: &str| {
            format!(
                r#"{{"model": "opus", "hooks": {{"PreToolUse": [{{"matcher": "Bash", "hooks": [{{"type": "command", "command": "{command}"}}]}}]}}}}"#
            )
        };
        std::fs::write(home.join(".claude/settings.json"), hook("user.sh")).unwrap();
        std::fs::write(ws.join(".claude/settings.json"), hook("project.sh")).unwrap();
        let configured = serde_json::json!({"PreToolUse": [{"hooks": [{"type": "command", "command": "config.sh"}]}]});
        let (untrusted, _) =
            discover(Some((&configured, "config.yaml")), &ws, Some(&home), false).unwrap();
        let names = |table: &HookTable| -> Vec<String> {
            table
                .matching(crate::HookEvent::PreToolUse, Some("bash"))
                .iter()
                .map(|h| h.name())
                .collect()
        };
        assert_eq!(names(&untrusted), ["config.sh", "user.sh"]);
        let (table, _) =
            discover(Some((&configured, "config.yaml")), &ws, Some(&home), true).unwrap();
        let commands: Vec<String> = table
            .matching(crate::HookEvent::PreToolUse, Some("bash"))
            .iter()
            .map(|h| h.name())
            .collect();
        assert_eq!(commands, ["config.sh", "user.sh", "project.sh"]);

        std::fs::write(
            ws.join(".claude/settings.local.json"),
            "{\n  \"hooks\": [\n",
        )
        .unwrap();
        let e = discover(None, &ws, Some(&home), true)
            .unwrap_err()
            .to_string();
        assert!(e.contains("settings.local.json: not JSON"), "{e}");
        assert!(e.contains("line 3"), "{e}");
    }
}
