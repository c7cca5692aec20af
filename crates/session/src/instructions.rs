//! Project instructions: the `AGENTS.md` files of the workspace and of each directory above
//! it up to the repository's root (the nearest one holding `.git`), as Codex and opencode
//! read them, told to every context of a run after its own system prompt. Outermost first,
//! so the workspace's own file has the last word; at most [`MAX_BYTES`] in all.
//!
//! A repository's file is read through the same guard as the file tools': it must be a
//! regular file whose real path stays inside the repository (or the workspace) and is not
//! hidden, so `AGENTS.md` as a link to `~/.ssh/id_ed25519` is not told to the model.

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
    /// workspace's when it is in no repository), none of them in `hidden`. A file that
    /// cannot be read as text, or that leads out of the repository, is skipped.
    pub fn find(workspace: &Path, hidden: &[PathBuf]) -> Self {
        let dirs = directories(workspace);
        let outermost = dirs.last().map_or(workspace, PathBuf::as_path);
        let mut found = Self::default();
        let mut sections = Vec::new();
        let mut budget = MAX_BYTES;
        for dir in dirs.iter().rev() {
            let file = dir.join(FILE_NAME);
            let Some(text) = read_inside(&file, outermost, hidden) else {
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

/// `file`'s text, when its real path is a regular file beneath `inside` and in none of
/// `hidden`; at most [`MAX_BYTES`] of it (and a few more, so a cut is noticed).
fn read_inside(file: &Path, inside: &Path, hidden: &[PathBuf]) -> Option<String> {
    use std::io::Read;
    let real = file.canonicalize().ok()?;
    let inside = inside.canonicalize().ok()?;
    if !real.starts_with(&inside) || hidden.iter().any(|h| real.starts_with(h)) {
        tracing::warn!(file = %file.display(), "AGENTS.md leads out of the repository or into a hidden path: not read");
        return None;
    }
    if !std::fs::metadata(&real).ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    std::fs::File::open(&real)
        .ok()?
        .take(MAX_BYTES as u64 + 4)
        .read_to_end(&mut bytes)
        .ok()?;
    match String::from_utf8(bytes) {
        Ok(text) => Some(text),
        // Cut inside a character at the end: keep what is whole.
        Err(e) if e.utf8_error().error_len().is_none() => {
            let valid = e.utf8_error().valid_up_to();
            let mut bytes = e.into_bytes();
            bytes.truncate(valid);
            String::from_utf8(bytes).ok()
        }
        Err(_) => None,
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
        let found = ProjectInstructions::find(&ws, &[]);
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
    fn a_link_out_of_the_repository_or_into_a_hidden_path_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let dir = dir.path().canonicalize().unwrap();
        let (ws, home) = (dir.join("ws"), dir.join("home"));
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::create_dir_all(ws.join("docs")).unwrap();
        std::fs::write(home.join(".ssh/id_ed25519"), "PRIVATE KEY").unwrap();
        std::os::unix::fs::symlink(home.join(".ssh/id_ed25519"), ws.join(FILE_NAME)).unwrap();
        assert_eq!(
            ProjectInstructions::find(&ws, &[]),
            ProjectInstructions::default()
        );
        // Inside, but hidden (a workspace that holds the home directory).
        std::fs::remove_file(ws.join(FILE_NAME)).unwrap();
        std::os::unix::fs::symlink(home.join(".ssh/id_ed25519"), home.join(FILE_NAME)).unwrap();
        let found = ProjectInstructions::find(&home, &[home.join(".ssh")]);
        assert!(!found.text.contains("PRIVATE KEY"), "{}", found.text);
        // A link that stays inside is read.
        std::fs::write(ws.join("docs/agents.md"), "Use tabs.").unwrap();
        std::os::unix::fs::symlink(ws.join("docs/agents.md"), ws.join(FILE_NAME)).unwrap();
        assert!(
            ProjectInstructions::find(&ws, &[])
                .text
                .contains("Use tabs.")
        );
    }

    #[test]
    fn outside_a_repository_only_the_workspace_and_long_files_are_cut() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        std::fs::write(dir.path().join(FILE_NAME), "parent").unwrap();
        assert_eq!(
            ProjectInstructions::find(&ws, &[]),
            ProjectInstructions::default()
        );
        std::fs::write(ws.join(FILE_NAME), "é".repeat(MAX_BYTES)).unwrap();
        let found = ProjectInstructions::find(&ws, &[]);
        assert!(found.truncated);
        assert!(found.text.len() < MAX_BYTES + 200);
    }
}
