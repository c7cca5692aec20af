//! Instruction files, read as Codex and Claude Code read them and told to every context of
//! a run after its own system prompt:
//!
//! - the person's own: Codex's `AGENTS.override.md`, else `AGENTS.md`, in its home
//!   (`$CODEX_HOME`, default `~/.codex`), and Claude Code's `CLAUDE.md` in its
//!   (`$CLAUDE_CONFIG_DIR`, default `~/.claude`);
//! - the project's, in the workspace and each directory above it up to the repository's
//!   root (the nearest one holding `.git`): in each, `AGENTS.override.md` else `AGENTS.md`
//!   (one per directory, as Codex), then `CLAUDE.md`, `.claude/CLAUDE.md` and
//!   `CLAUDE.local.md` (as Claude Code).
//!
//! The person's first, then the project's outermost first, so the workspace's own file has
//! the last word; a `CLAUDE.md` file's `@path` imports follow it ([`imports`]). At most
//! [`MAX_BYTES`] of the person's and as much of the project's.
//!
//! A repository's file is read through the same guard as the file tools': it must be a
//! regular file whose real path stays inside the repository (or the workspace) and is not
//! hidden, so `AGENTS.md` as a link to `~/.ssh/id_ed25519` is not told to the model. Claude
//! Code also reads the directories above the repository up to `/`; those are not the
//! repository's, and another user of the machine may write them, so they are not read.

mod imports;
mod read;

use std::path::{Path, PathBuf};

use read::{read_inside, read_own};

/// Codex's file, and the one that takes its place in a directory.
pub const FILE_NAME: &str = "AGENTS.md";
const OVERRIDE: &str = "AGENTS.override.md";

/// Claude Code's files in a project directory, in the order read.
const CLAUDE_FILES: [&str; 3] = ["CLAUDE.md", ".claude/CLAUDE.md", "CLAUDE.local.md"];

/// The most of the project's files together that is told (Codex's default, 32 KiB), and as
/// much of the person's; the rest is left out, and the event says so.
pub const MAX_BYTES: usize = 32 * 1024;

/// What was found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProjectInstructions {
    /// The files read, in the order told.
    pub files: Vec<PathBuf>,
    /// The text told to the model; empty when no file was found.
    pub text: String,
    /// Whether the files were longer than [`MAX_BYTES`] and were cut.
    pub truncated: bool,
}

/// Where the person's own instruction files are: Codex's and Claude Code's homes.
#[derive(Debug, Clone, Default)]
pub struct Homes {
    /// `$CODEX_HOME`, else `~/.codex`.
    pub codex: Option<PathBuf>,
    /// `$CLAUDE_CONFIG_DIR`, else `~/.claude`.
    pub claude: Option<PathBuf>,
}

impl Homes {
    /// The homes the environment names.
    pub fn from_env() -> Self {
        let home = dirs::home_dir();
        let named = |var: &str, dir: &str| {
            std::env::var_os(var)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .or_else(|| home.as_ref().map(|h| h.join(dir)))
        };
        Self {
            codex: named("CODEX_HOME", ".codex"),
            claude: named("CLAUDE_CONFIG_DIR", ".claude"),
        }
    }
}

/// One instruction file as told: where it is, how it is named, and its text.
struct Found {
    file: PathBuf,
    shown: String,
    text: String,
}

/// Text told under a budget of bytes.
struct Budget {
    left: usize,
    truncated: bool,
}

impl Budget {
    fn new() -> Self {
        Self {
            left: MAX_BYTES,
            truncated: false,
        }
    }

    /// As much of `text` as the budget has left.
    fn take<'t>(&mut self, text: &'t str) -> &'t str {
        if text.len() <= self.left {
            self.left -= text.len();
            return text;
        }
        self.truncated = true;
        let mut end = self.left;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        self.left = 0;
        &text[..end]
    }
}

impl ProjectInstructions {
    /// The instruction files for `workspace`, the person's found in the homes the
    /// environment names; none of the project's in `hidden`. A file that cannot be read as
    /// text, or that leads out of the repository, is skipped.
    pub fn find(workspace: &Path, hidden: &[PathBuf]) -> Self {
        Self::find_with(workspace, hidden, &Homes::from_env())
    }

    /// [`ProjectInstructions::find`] with the person's files in `homes`.
    pub fn find_with(workspace: &Path, hidden: &[PathBuf], homes: &Homes) -> Self {
        let mut found = Self::default();
        let mut sections = Vec::new();
        let mut own = Budget::new();
        for file in own_files(homes) {
            let Some(text) = read_own(&file) else {
                continue;
            };
            let shown = file.display().to_string();
            let claude = is_claude_file(&file);
            let first = Found { file, shown, text };
            let imported = if claude {
                imports::of_own(&first.file, &first.text)
            } else {
                Vec::new()
            };
            found.tell(&mut sections, &mut own, first, imported);
        }
        let dirs = directories(workspace);
        let outermost = dirs.last().map_or(workspace, PathBuf::as_path);
        let mut project = Budget::new();
        'dirs: for dir in dirs.iter().rev() {
            for file in project_files(dir) {
                if project.left == 0 {
                    break 'dirs;
                }
                let Some(text) = read_inside(&file, outermost, hidden) else {
                    continue;
                };
                let shown = match file.strip_prefix(workspace) {
                    Ok(rel) => rel.display().to_string(),
                    Err(_) => file.display().to_string(),
                };
                let imported = if is_claude_file(&file) {
                    imports::of_project(&file, &text, outermost, hidden, homes)
                } else {
                    Vec::new()
                };
                found.tell(
                    &mut sections,
                    &mut project,
                    Found { file, shown, text },
                    imported,
                );
            }
        }
        found.truncated = own.truncated || project.truncated;
        if !sections.is_empty() {
            found.text = format!(
                "# Project instructions\n\nThe instruction files (AGENTS.md, CLAUDE.md): the person's own first, then the project's outermost first; a later one wins where they disagree. Follow them for work in this workspace.\n\n{}",
                sections.join("\n\n")
            );
        }
        found
    }

    /// Adds `file` and what it imports to what is told, as far as `budget` goes; an empty
    /// file is skipped, as Codex skips one.
    fn tell(
        &mut self,
        sections: &mut Vec<String>,
        budget: &mut Budget,
        file: Found,
        imported: Vec<Found>,
    ) {
        for part in std::iter::once(file).chain(imported) {
            let text = part.text.trim();
            if text.is_empty() || budget.left == 0 {
                continue;
            }
            sections.push(format!("## {}\n\n{}", part.shown, budget.take(text)));
            self.files.push(part.file);
        }
    }
}

/// The person's own files, in the order told: Codex's (its override in place of its
/// `AGENTS.md`), then Claude Code's.
fn own_files(homes: &Homes) -> Vec<PathBuf> {
    let mut files = Vec::new();
    if let Some(codex) = &homes.codex {
        files.push(one_of(codex));
    }
    if let Some(claude) = &homes.claude {
        files.push(claude.join("CLAUDE.md"));
    }
    files
}

/// A project directory's files, in the order told.
fn project_files(dir: &Path) -> Vec<PathBuf> {
    std::iter::once(one_of(dir))
        .chain(CLAUDE_FILES.iter().map(|name| dir.join(name)))
        .collect()
}

/// `dir`'s Codex file: its `AGENTS.override.md` when it has one that is not empty, else
/// its `AGENTS.md`.
fn one_of(dir: &Path) -> PathBuf {
    let preferred = dir.join(OVERRIDE);
    let has_text = std::fs::metadata(&preferred).is_ok_and(|m| m.is_file() && m.len() > 0);
    if has_text {
        preferred
    } else {
        dir.join(FILE_NAME)
    }
}

/// Whether `file` is one of Claude Code's, whose `@path` imports are followed.
fn is_claude_file(file: &Path) -> bool {
    file.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("CLAUDE"))
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
mod tests;
