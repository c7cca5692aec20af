//! Tab at the prompt: a slash command at the start of the line (with what it does), or the
//! workspace's files after `@` (`@src/ma` → `@src/main.rs`), as Claude Code completes them:
//! the files git would see (`.gitignore` honoured, hidden ones left out), those whose path
//! starts with what is typed first, then those that hold it.

use std::path::PathBuf;

use reedline::{Completer, Span, Suggestion};

use super::commands::CommandCompleter;

/// Files offered at most.
const MAX_FILES: usize = 30;

/// Files looked at at most (a huge repository answers at once all the same).
const MAX_WALKED: usize = 20_000;

/// The prompt's completer.
pub struct PromptCompleter {
    /// The workspace whose files `@` completes.
    pub workspace: PathBuf,
    /// The custom commands (`.claude/commands`): name and description.
    pub custom: Vec<(String, String)>,
}

impl Completer for PromptCompleter {
    /// The completions; where there is none, the word typed as its own only completion,
    /// which the editor (taking a lone completion at once) puts back unchanged: no
    /// `NO RECORDS FOUND` menu, and no Enter spent closing it.
    fn complete(&mut self, line: &str, pos: usize) -> Vec<Suggestion> {
        let pos = pos.min(line.len());
        let typed = &line[..pos];
        let start = typed.rfind(char::is_whitespace).map_or(0, |i| i + 1);
        let found = self.completions(line, pos);
        if !found.is_empty() {
            return found;
        }
        vec![Suggestion {
            value: typed[start..].to_owned(),
            span: Span::new(start, pos),
            append_whitespace: false,
            ..Suggestion::default()
        }]
    }
}

impl PromptCompleter {
    fn completions(&self, line: &str, pos: usize) -> Vec<Suggestion> {
        let typed = &line[..pos];
        if typed.starts_with('/') {
            let mut found = CommandCompleter.complete(line, pos);
            if !typed.contains(char::is_whitespace) {
                found.extend(
                    self.custom
                        .iter()
                        .filter(|(name, _)| format!("/{name}").starts_with(typed))
                        .map(|(name, what)| Suggestion {
                            value: format!("/{name}"),
                            description: Some(what.clone()),
                            span: Span::new(0, typed.len()),
                            append_whitespace: true,
                            ..Suggestion::default()
                        }),
                );
            }
            return found;
        }
        let start = typed.rfind(char::is_whitespace).map_or(0, |i| i + 1);
        let Some(prefix) = typed[start..].strip_prefix('@') else {
            return Vec::new();
        };
        files_like(&self.workspace, prefix)
            .into_iter()
            .map(|path| Suggestion {
                value: format!("@{path}"),
                description: None,
                span: Span::new(start, pos),
                append_whitespace: true,
                ..Suggestion::default()
            })
            .collect()
    }
}

/// The workspace's files (relative paths) that start with `prefix`, then those that hold
/// it, each sorted; at most [`MAX_FILES`].
fn files_like(workspace: &std::path::Path, prefix: &str) -> Vec<String> {
    let (mut starting, mut holding) = (Vec::new(), Vec::new());
    let walk = ignore::WalkBuilder::new(workspace)
        .hidden(true)
        .git_ignore(true)
        .require_git(false)
        .build();
    for entry in walk.flatten().take(MAX_WALKED) {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Ok(relative) = entry.path().strip_prefix(workspace) else {
            continue;
        };
        let relative = relative.to_string_lossy().into_owned();
        if relative.starts_with(prefix) {
            starting.push(relative);
        } else if !prefix.is_empty() && relative.contains(prefix) {
            holding.push(relative);
        }
    }
    starting.sort();
    holding.sort();
    starting.extend(holding);
    starting.truncate(MAX_FILES);
    starting
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_at_completes_the_workspaces_files_that_git_would_see() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        for file in [
            "src/main.rs",
            "src/lib.rs",
            "docs/main.md",
            "target/out.rs",
            ".env",
        ] {
            let path = ws.join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "").unwrap();
        }
        std::fs::write(ws.join(".gitignore"), "target/\n").unwrap();
        let mut completer = PromptCompleter {
            workspace: ws.to_path_buf(),
            custom: vec![("fix-issue".to_owned(), "Fix an issue (project)".to_owned())],
        };
        let line = "look at @src/m";
        let offered = completer.complete(line, line.len());
        let values: Vec<&str> = offered.iter().map(|s| s.value.as_str()).collect();
        assert_eq!(values, ["@src/main.rs"]);
        assert_eq!(
            (offered[0].span.start, offered[0].span.end),
            (8, line.len())
        );
        let values: Vec<String> = completer
            .complete("@main", 5)
            .into_iter()
            .map(|s| s.value)
            .collect();
        assert_eq!(values, ["@docs/main.md", "@src/main.rs"]);
        // Ignored and hidden files are not offered; a word without `@` gets nothing.
        let all: Vec<String> = completer
            .complete("@", 1)
            .into_iter()
            .map(|s| s.value)
            .collect();
        assert!(
            !all.iter()
                .any(|v| v.contains("target") || v.contains(".env")),
            "{all:?}"
        );
        // Nothing to complete: the word as typed, the line unchanged.
        let kept = completer.complete("src/m", 5);
        assert_eq!((kept.len(), kept[0].value.as_str()), (1, "src/m"));
        assert_eq!(completer.complete("/he", 3)[0].value, "/help");
        let custom = completer.complete("/fix", 4);
        assert_eq!(custom[0].value, "/fix-issue");
        assert_eq!(
            custom[0].description.as_deref(),
            Some("Fix an issue (project)")
        );
    }
}
