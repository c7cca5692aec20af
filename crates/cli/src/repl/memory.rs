//! `# text` at the prompt, as Claude Code's quick memory: the line goes into the project's
//! instruction file as a list item — the workspace's `CLAUDE.md` when it has one, else its
//! `AGENTS.md` (made when missing) — so every later session is told it; the model is told
//! it with the next prompt of this one. The file is written beneath the workspace (a link
//! out of it, or a file with other hard links, is refused), as the file tools write.

use std::io::{Read, Write};
use std::path::Path;

use wonopcode_os::beneath::{self, Access};

/// The note in `line` (`# always use bun` → `always use bun`), when it is one: a single
/// line after one `#` (`## Heading` and `#!` are prompts).
pub fn note_of(line: &str) -> Option<&str> {
    let rest = line.strip_prefix('#')?;
    if rest.starts_with(['#', '!']) || line.contains('\n') {
        return None;
    }
    Some(rest.trim()).filter(|n| !n.is_empty())
}

/// The instruction file `#` notes go to: the workspace's `CLAUDE.md` when it has one, else
/// its `AGENTS.md`.
pub fn notes_file(workspace: &Path) -> &'static str {
    if workspace.join("CLAUDE.md").exists() {
        "CLAUDE.md"
    } else {
        "AGENTS.md"
    }
}

/// Adds `note` to the workspace's instruction file; the file's name, or why not.
pub fn remember(workspace: &Path, note: &str) -> Result<&'static str, String> {
    let name = notes_file(workspace);
    let path = workspace.join(name);
    let mut text = String::new();
    if path.exists() {
        beneath::open(workspace, &path, Access::Read)
            .and_then(|mut f| f.read_to_string(&mut text))
            .map_err(|e| format!("cannot read {name}: {e}"))?;
    }
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&format!("- {note}\n"));
    beneath::open(workspace, &path, Access::Replace)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|e| format!("cannot write {name}: {e}"))?;
    Ok(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_note_is_one_hash_and_a_line() {
        assert_eq!(note_of("# always use bun"), Some("always use bun"));
        assert_eq!(note_of("#tabs"), Some("tabs"));
        for prompt in ["## Plan", "#!/bin/sh", "# one\ntwo", "#  ", "no hash"] {
            assert_eq!(note_of(prompt), None, "{prompt}");
        }
    }

    #[test]
    fn the_note_goes_to_claude_md_or_agents_md_and_never_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap().join("ws");
        std::fs::create_dir(&ws).unwrap();
        assert_eq!(remember(&ws, "use bun").unwrap(), "AGENTS.md");
        assert_eq!(
            std::fs::read_to_string(ws.join("AGENTS.md")).unwrap(),
            "- use bun\n"
        );
        std::fs::write(ws.join("CLAUDE.md"), "# Project").unwrap();
        assert_eq!(remember(&ws, "tabs").unwrap(), "CLAUDE.md");
        assert_eq!(
            std::fs::read_to_string(ws.join("CLAUDE.md")).unwrap(),
            "# Project\n- tabs\n"
        );
        // A repository's CLAUDE.md that leads out of it is not written through.
        let outside = dir.path().join("bashrc");
        std::fs::write(&outside, "export A=1\n").unwrap();
        std::fs::remove_file(ws.join("CLAUDE.md")).unwrap();
        std::os::unix::fs::symlink(&outside, ws.join("CLAUDE.md")).unwrap();
        assert!(remember(&ws, "x").is_err());
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "export A=1\n");
    }
}
