//! Images and PDFs the person attaches to a prompt: `-i/--image` (a file, `-` for stdin or a
//! `data:` URL), `@path` in a prompt they typed, and a path dropped (pasted) into the REPL's
//! line. Only what the person types is looked at: a batch task's or an MCP client's prompt
//! never reads a file through a mention.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use wonopcode_protocol::Part;
use wonopcode_protocol::attachment::{self, AttachmentError};

/// An attachment named by `-i/--image`: a path (relative to where wonopcode was started),
/// `-` for stdin, or a `data:` URL.
pub fn from_flag(value: &str) -> Result<Part, AttachmentError> {
    if value == "-" {
        return attachment::from_reader(std::io::stdin().lock(), "stdin");
    }
    if value.starts_with("data:") {
        return attachment::from_data_url(value);
    }
    from_path(&expand_home(value))
}

/// The attachments a typed line names: each `@path` of an image or PDF, and, when `pasted`
/// is set (the REPL), each path of one that was dropped into the line (quoted, with escaped
/// spaces, absolute or from `~`). Paths are read from `workspace` when relative. A mention
/// of a file that cannot be read is an error; a bare word that is no file is just a word.
pub fn mentioned(line: &str, workspace: &Path, pasted: bool) -> Result<Vec<Part>, AttachmentError> {
    let mut seen = HashSet::new();
    let mut parts = Vec::new();
    for word in words(line) {
        let (word, mention) = match word.strip_prefix('@') {
            Some(rest) => (rest.to_owned(), true),
            None => (word, false),
        };
        let looks_like_a_path =
            word.starts_with('/') || word.starts_with("~/") || word.starts_with("./");
        let named = mention || (pasted && looks_like_a_path);
        if !named {
            continue;
        }
        let Some(path) = existing(&word, workspace) else {
            if mention && attachment::looks_attachable(trimmed(&word)) {
                return Err(AttachmentError::Read {
                    name: format!("@{}", trimmed(&word)),
                    reason: "no such file".to_owned(),
                });
            }
            continue;
        };
        if !attachment::looks_attachable(&path.to_string_lossy()) || !seen.insert(path.clone()) {
            continue;
        }
        let relative = !(word.starts_with('/') || word.starts_with("~/"));
        parts.push(if relative {
            in_workspace(&path, workspace, &word)?
        } else {
            from_path(&path)?
        });
    }
    Ok(parts)
}

/// The attachment at `path`, a file the person named by its own path (absolute, from `~`, or
/// given to `-i`), read no further than the protocol's cap.
fn from_path(path: &Path) -> Result<Part, AttachmentError> {
    let name = path.display().to_string();
    let file = std::fs::File::open(path).map_err(|e| AttachmentError::Read {
        name: name.clone(),
        reason: e.to_string(),
    })?;
    attachment::from_reader(file, &name)
}

/// The attachment at `path`, a file the person named relative to the workspace, which a
/// repository they did not write may hold: read only when its real path stays in the
/// workspace, opened beneath it (no link on the way, one swapped in since the check
/// included), as file tools open files. `docs/spec.pdf -> ~/Documents/passport.pdf` is not
/// sent; the person can attach a file outside by its own path.
fn in_workspace(path: &Path, workspace: &Path, word: &str) -> Result<Part, AttachmentError> {
    let name = format!("@{}", trimmed(word));
    let file = open_in_workspace(path, workspace).map_err(|reason| AttachmentError::Read {
        name: name.clone(),
        reason,
    })?;
    attachment::from_reader(file, &name)
}

/// `path`, a file the person named relative to the workspace, opened for reading only when
/// its real path stays in the workspace and it opens beneath it (no link on the way); the
/// reason in a few words otherwise. Attachments and `@file` texts are read through it.
pub(crate) fn open_in_workspace(path: &Path, workspace: &Path) -> Result<std::fs::File, String> {
    let root = workspace
        .canonicalize()
        .map_err(|e| format!("the workspace cannot be read: {e}"))?;
    let real = path.canonicalize().map_err(|e| e.to_string())?;
    if !real.starts_with(&root) {
        return Err(format!(
            "it is a link that leads out of the workspace (to {}); name that file by its own path if you mean it",
            wonopcode_protocol::shown::one_line(&real.display().to_string())
        ));
    }
    wonopcode_os::beneath::open(&root, &real, wonopcode_os::beneath::Access::Read)
        .map_err(|e| e.to_string())
}

/// One line per attachment for the person: `attached: image/png, 12 KiB`.
pub fn announce(parts: &[Part]) {
    for part in parts {
        if let Some(what) = attachment::describe(part) {
            eprintln!("attached: {what}");
        }
    }
}

/// The file a word names, trailing punctuation left off when the word with it names none
/// (`look at @shot.png.`).
fn existing(word: &str, workspace: &Path) -> Option<PathBuf> {
    [word, trimmed(word)].into_iter().find_map(|w| {
        let path = expand_home(w);
        let path = if path.is_absolute() {
            path
        } else {
            workspace.join(path)
        };
        path.is_file().then_some(path)
    })
}

pub(crate) fn trimmed(word: &str) -> &str {
    word.trim_end_matches([',', '.', ';', ':', '!', '?', ')', '\'', '"'])
}

pub(crate) fn expand_home(path: &str) -> PathBuf {
    match (path.strip_prefix("~/"), dirs::home_dir()) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => PathBuf::from(path),
    }
}

/// The words of a line as a terminal pastes a dropped file: `\ ` keeps a space in a word,
/// and a word opened by a quote runs to its closing quote (when there is one: an apostrophe
/// in `don't` opens nothing).
pub(crate) fn words(line: &str) -> Vec<String> {
    let chars: Vec<char> = line.chars().collect();
    let mut words = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i].is_whitespace() {
            i += 1;
            continue;
        }
        let quote = chars[i];
        if (quote == '\'' || quote == '"')
            && let Some(len) = chars[i + 1..].iter().position(|c| *c == quote)
        {
            words.push(chars[i + 1..i + 1 + len].iter().collect());
            i += len + 2;
            continue;
        }
        let mut word = String::new();
        while i < chars.len() && !chars[i].is_whitespace() {
            if chars[i] == '\\' && chars.get(i + 1).is_some_and(|c| c.is_whitespace()) {
                word.push(chars[i + 1]);
                i += 2;
                continue;
            }
            word.push(chars[i]);
            i += 1;
        }
        words.push(word);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

    #[test]
    fn dropped_paths_split_as_a_terminal_pastes_them() {
        assert_eq!(
            words(r"look at /tmp/a\ b.png and '/tmp/c d.png' don't"),
            ["look", "at", "/tmp/a b.png", "and", "/tmp/c d.png", "don't"]
        );
    }

    #[test]
    fn mentions_and_dropped_paths_attach_once_each() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("shot one.png"), PNG).unwrap();
        std::fs::write(dir.path().join("notes.txt"), "text").unwrap();
        let full = dir.path().join("shot one.png");
        let line = format!(
            "what is in @'shot one.png', '{}' and @notes.txt?",
            full.display()
        );
        // A quoted mention is `@` then a quoted word: not how people type; the dropped
        // path is what counts here.
        let parts = mentioned(&line, dir.path(), true).unwrap();
        assert_eq!(parts.len(), 1);
        let typed = mentioned(&line, dir.path(), false).unwrap();
        assert!(typed.is_empty(), "a one-shot prompt reads only `@path`");
        std::fs::write(dir.path().join("b.png"), PNG).unwrap();
        let parts = mentioned("compare @b.png, and @b.png.", dir.path(), false).unwrap();
        assert_eq!(parts.len(), 1);
    }

    #[test]
    fn a_mention_of_a_missing_image_is_an_error_and_other_words_are_words() {
        let dir = tempfile::tempdir().unwrap();
        let error = mentioned("see @gone.png", dir.path(), false)
            .map(|_| ())
            .map_err(|e| e.to_string());
        assert_eq!(
            error.err().as_deref(),
            Some("cannot read @gone.png: no such file")
        );
        assert!(
            mentioned("mail me @alice /not/a/file.png", dir.path(), true)
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn a_mentioned_file_that_is_no_image_is_refused_by_its_bytes() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("key.png"), "-----BEGIN PRIVATE KEY-----").unwrap();
        let error = mentioned("@key.png", dir.path(), false).map(|_| ());
        assert!(matches!(error, Err(AttachmentError::UnknownKind { .. })));
    }
}
