//! Project instructions: the `AGENTS.md` files of the workspace and of each directory above
//! it up to the repository's root (the nearest one holding `.git`), as Codex and opencode
//! read them, told to every context of a run after its own system prompt. Outermost first,
//! so the workspace's own file has the last word; at most [`MAX_BYTES`] in all.

use std::path::{Path, PathBuf};

/// The file looked for in each directory.
pub const FILE_NAME: &str = "AGENTS.md";

/// The most of all the files together that is told (Codex's default, 32 KiB); the rest is
/// left out, and the event says so.
pub const MAX_BYTES: usize = 32 * 1024;

/// What was found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProjectInstructions {
    /// The files read, outermost first.
    pub files: Vec<PathBuf>,
    /// The text told to the model; empty when no file was found.
    pub text: String,
    /// Whether the files together were longer than [`MAX_BYTES`] and were cut.
    pub truncated: bool,
}

impl ProjectInstructions {
    /// The `AGENTS.md` files from the repository's root down to `workspace` (only the
    /// workspace's when it is in no repository). A file that cannot be read as text is
    /// skipped.
    pub fn find(workspace: &Path) -> Self {
        let dirs = directories(workspace);
        let mut found = Self::default();
        let mut sections = Vec::new();
        let mut budget = MAX_BYTES;
        for dir in dirs.iter().rev() {
            let file = dir.join(FILE_NAME);
            let Ok(text) = std::fs::read_to_string(&file) else {
                continue;
            };
            let text = text.trim();
            if text.is_empty() {
                continue;
            }
            let shown = match dir.strip_prefix(workspace) {
                Ok(rel) if rel.as_os_str().is_empty() => FILE_NAME.to_owned(),
                _ => file.display().to_string(),
            };
            let kept = if text.len() > budget {
                found.truncated = true;
                let mut end = budget;
                while !text.is_char_boundary(end) {
                    end -= 1;
                }
                &text[..end]
            } else {
                text
            };
            budget -= kept.len();
            sections.push(format!("## {shown}\n\n{kept}"));
            found.files.push(file);
            if budget == 0 {
                break;
            }
        }
        if !sections.is_empty() {
            found.text = format!(
                "# Project instructions\n\nThe project's {FILE_NAME} files, outermost first; a later one wins where they disagree. Follow them for work in this workspace.\n\n{}",
                sections.join("\n\n")
            );
        }
        found
    }
}

/// `workspace` and its ancestors up to the nearest one holding `.git`; only `workspace`
/// when none does.
fn directories(workspace: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for dir in workspace.ancestors() {
        dirs.push(dir.to_path_buf());
        if dir.join(".git").exists() {
            return dirs;
        }
    }
    vec![workspace.to_path_buf()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_up_to_the_repository_root_outermost_first() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        let ws = repo.join("crates/app");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir(repo.join(".git")).unwrap();
        std::fs::write(dir.path().join(FILE_NAME), "outside the repository").unwrap();
        std::fs::write(repo.join(FILE_NAME), "Use cargo nextest.").unwrap();
        std::fs::write(ws.join(FILE_NAME), "This crate is the app.\n").unwrap();
        let found = ProjectInstructions::find(&ws);
        assert_eq!(found.files, vec![repo.join(FILE_NAME), ws.join(FILE_NAME)]);
        assert!(!found.text.contains("outside the repository"));
        let outer = found.text.find("Use cargo nextest.").unwrap();
        let inner = found
            .text
            .find("## AGENTS.md\n\nThis crate is the app.")
            .unwrap();
        assert!(outer < inner, "{}", found.text);
        assert!(!found.truncated);
    }

    #[test]
    fn outside_a_repository_only_the_workspace_and_long_files_are_cut() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        std::fs::write(dir.path().join(FILE_NAME), "parent").unwrap();
        assert_eq!(
            ProjectInstructions::find(&ws),
            ProjectInstructions::default()
        );
        std::fs::write(ws.join(FILE_NAME), "é".repeat(MAX_BYTES)).unwrap();
        let found = ProjectInstructions::find(&ws);
        assert!(found.truncated);
        assert!(found.text.len() < MAX_BYTES + 200);
    }
}
