//! Custom slash commands in Claude Code's format: a Markdown file in `.claude/commands/` (the
//! project's) or `~/.claude/commands/` (the person's, under `$CLAUDE_CONFIG_DIR` when set),
//! named by its file (`review-pr.md` is `/review-pr`; a file in a subfolder keeps its name
//! and shows the folder, `(project:frontend)`), with optional front matter
//! (`description`, `argument-hint`; `allowed-tools` and `model` are read and not applied)
//! and a body that is the prompt: `$ARGUMENTS` is what follows the command, `$1`…`$9` its
//! words, an `@path` a file's text (as at the prompt), and a `` !`command` `` line runs the
//! command in the sandbox first, its output put in its place.
//!
//! A project's commands are read only in a trusted workspace: their `` !`…` `` lines run
//! when the person types the command, so a cloned repository must not bring them unasked.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::agent_file::split_front_matter;

/// Files larger than this are skipped (a prompt, not a document).
const MAX_BYTES: u64 = 64 * 1024;

/// Folders deep a command may be.
const MAX_DEPTH: usize = 4;

/// One command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandFile {
    /// Typed as `/name`.
    pub name: String,
    /// What `/help` and Tab show: the front matter's, else the body's first line, and where
    /// it comes from (`(project)`, `(user:git)`).
    pub description: String,
    /// What to type after it, when the file says (`[pr-number]`).
    pub argument_hint: Option<String>,
    /// The prompt, front matter removed.
    pub body: String,
    /// The file.
    pub file: PathBuf,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
struct Front {
    description: Option<String>,
    /// Written `[number]` unquoted in Claude Code's own examples, which YAML reads as a list.
    argument_hint: Option<serde_yaml::Value>,
}

/// An argument hint as written: a list read back as `[a, b]`.
fn hint(value: serde_yaml::Value) -> Option<String> {
    match value {
        serde_yaml::Value::String(text) => Some(text),
        serde_yaml::Value::Sequence(items) => Some(format!(
            "[{}]",
            items
                .iter()
                .filter_map(|i| match i {
                    serde_yaml::Value::String(s) => Some(s.clone()),
                    other => serde_yaml::to_string(other)
                        .ok()
                        .map(|s| s.trim().to_owned()),
                })
                .collect::<Vec<_>>()
                .join(", ")
        )),
        serde_yaml::Value::Null => None,
        other => serde_yaml::to_string(&other)
            .ok()
            .map(|s| s.trim().to_owned()),
    }
}

/// The commands found, and the files skipped (one line each).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommandFiles {
    /// The project's first, then the person's; the first of a name wins.
    pub commands: Vec<CommandFile>,
    /// What was skipped, and why.
    pub warnings: Vec<String>,
}

impl CommandFiles {
    /// The workspace's commands (when `trusted`) and the person's (in `claude_home`).
    pub fn discover(workspace: &Path, trusted: bool, claude_home: Option<&Path>) -> Self {
        let mut found = Self::default();
        if trusted {
            found.read_dir(&workspace.join(".claude/commands"), "project");
        }
        if let Some(home) = claude_home {
            found.read_dir(&home.join("commands"), "user");
        }
        found
    }

    fn read_dir(&mut self, dir: &Path, scope: &str) {
        let mut files = Vec::new();
        markdown_files(dir, 0, &mut files);
        for path in files {
            let folder = path
                .parent()
                .and_then(|p| p.strip_prefix(dir).ok())
                .map(|p| p.display().to_string())
                .filter(|p| !p.is_empty());
            match read(&path, scope, folder.as_deref()) {
                Ok(command) if self.commands.iter().any(|c| c.name == command.name) => {}
                Ok(command) => self.commands.push(command),
                Err(why) => self.warnings.push(why),
            }
        }
    }
}

/// The `.md` files under `dir`, sorted, folders after the files beside them, at most
/// [`MAX_DEPTH`] down. Links are not followed: a command is a file of the folder, never one
/// it points at (`.claude/commands/x.md` → `~/.ssh/id_ed25519`).
fn markdown_files(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    let Ok(listing) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<(PathBuf, std::fs::FileType)> = listing
        .filter_map(Result::ok)
        .filter_map(|e| Some((e.path(), e.file_type().ok()?)))
        .collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    for (path, kind) in &entries {
        if kind.is_file() && path.extension().is_some_and(|e| e == "md") {
            out.push(path.clone());
        }
    }
    if depth + 1 < MAX_DEPTH {
        for (path, kind) in &entries {
            if kind.is_dir() {
                markdown_files(path, depth + 1, out);
            }
        }
    }
}

fn read(file: &Path, scope: &str, folder: Option<&str>) -> Result<CommandFile, String> {
    let shown = file.display();
    let size = std::fs::metadata(file)
        .map_err(|e| format!("{shown}: {e}"))?
        .len();
    if size > MAX_BYTES {
        return Err(format!(
            "{shown}: larger than {} KiB; command skipped",
            MAX_BYTES / 1024
        ));
    }
    let text = std::fs::read_to_string(file).map_err(|e| format!("{shown}: {e}"))?;
    let (front, body) = match split_front_matter(&text) {
        Some((front, body)) => {
            let front: Front =
                serde_yaml::from_str(if front.trim().is_empty() { "{}" } else { front })
                    .map_err(|e| format!("{shown}: its front matter: {e}; command skipped"))?;
            (front, body)
        }
        None => (Front::default(), text.as_str()),
    };
    let name = file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .filter(|n| {
            !n.is_empty()
                && n.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        })
        .ok_or_else(|| {
            format!("{shown}: a command's name is letters, digits, `-` and `_`; command skipped")
        })?;
    let body = body.trim().to_owned();
    let what = front
        .description
        .map(|d| d.trim().to_owned())
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| body.lines().next().unwrap_or("").trim().to_owned());
    let place = match folder {
        Some(folder) => format!("({scope}:{folder})"),
        None => format!("({scope})"),
    };
    Ok(CommandFile {
        name,
        description: format!("{what} {place}"),
        argument_hint: front.argument_hint.and_then(hint),
        body,
        file: file.to_path_buf(),
    })
}

impl CommandFile {
    /// The prompt for `/name ARGUMENTS`: `$ARGUMENTS` and `$1`…`$9` replaced; with neither
    /// in the body, the arguments are added after it, as Claude Code adds them.
    pub fn prompt(&self, arguments: &str) -> String {
        let words: Vec<&str> = arguments.split_whitespace().collect();
        let mut out = self.body.replace("$ARGUMENTS", arguments);
        for n in (1..=9).rev() {
            out = out.replace(&format!("${n}"), words.get(n - 1).copied().unwrap_or(""));
        }
        let takes_arguments = self.body.contains("$ARGUMENTS")
            || (1..=9).any(|n| self.body.contains(&format!("${n}")));
        if !takes_arguments && !arguments.trim().is_empty() {
            out = format!("{out}\n\n{}", arguments.trim());
        }
        out
    }
}

/// The `` !`command` `` lines of a prompt: each command, and the line it is on.
pub fn shell_lines(prompt: &str) -> Vec<(usize, String)> {
    prompt
        .lines()
        .enumerate()
        .filter_map(|(i, line)| {
            let command = line.trim().strip_prefix("!`")?.strip_suffix('`')?;
            (!command.trim().is_empty()).then(|| (i, command.to_owned()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_found_by_scope_and_their_arguments_filled_in() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        let home = dir.path().join("claude");
        std::fs::create_dir_all(ws.join(".claude/commands/frontend")).unwrap();
        std::fs::create_dir_all(home.join("commands")).unwrap();
        std::fs::write(
            ws.join(".claude/commands/fix-issue.md"),
            "---\ndescription: Fix an issue\nargument-hint: [number]\n---\nFix issue #$1 ($ARGUMENTS).\n",
        )
        .unwrap();
        std::fs::write(
            ws.join(".claude/commands/frontend/component.md"),
            "Make a component.\n",
        )
        .unwrap();
        std::fs::write(
            home.join("commands/fix-issue.md"),
            "the person's, shadowed\n",
        )
        .unwrap();
        std::fs::write(
            home.join("commands/status.md"),
            "Say the status.\n!`git status`\n",
        )
        .unwrap();
        std::fs::write(home.join("commands/bad name.md"), "x").unwrap();

        let found = CommandFiles::discover(&ws, true, Some(&home));
        let names: Vec<&str> = found.commands.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["fix-issue", "component", "status"]);
        assert_eq!(found.commands[0].description, "Fix an issue (project)");
        assert_eq!(found.commands[0].argument_hint.as_deref(), Some("[number]"));
        assert_eq!(
            found.commands[1].description,
            "Make a component. (project:frontend)"
        );
        assert_eq!(
            found.commands[0].prompt("42 now"),
            "Fix issue #42 (42 now)."
        );
        assert_eq!(
            found.commands[1].prompt("a button"),
            "Make a component.\n\na button"
        );
        assert_eq!(
            shell_lines(&found.commands[2].prompt("")),
            [(1, "git status".to_owned())]
        );
        assert_eq!(found.warnings.len(), 1, "{:?}", found.warnings);

        // An untrusted workspace's commands are not read.
        let found = CommandFiles::discover(&ws, false, Some(&home));
        let names: Vec<&str> = found.commands.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["fix-issue", "status"]);
        assert_eq!(found.commands[0].body, "the person's, shadowed");
    }
}
