//! `@path` of a text file in a typed line, as Claude Code takes it: the file's text goes
//! into the prompt, after the line as typed, so the model reads it without a tool call.
//! A file named relative to the workspace is read through the file tools' guard (its real
//! path inside the workspace, opened beneath it, not hidden); one named by its own path
//! (`/…`, `~/…`) is the person's choice. At most [`MAX_FILE_BYTES`] of each; a file that is
//! not text leaves the line unsent with one line saying so. Images and PDFs are attached
//! instead (`crate::attach`).

use std::io::Read;
use std::path::{Path, PathBuf};

use wonopcode_protocol::attachment::{self, AttachmentError};

/// The most of one file's text that goes into a prompt; the rest is left out, said in the
/// prompt.
const MAX_FILE_BYTES: usize = 64 * 1024;

/// `line` with the text of each text file it mentions (`@path`) after it, each file once;
/// `line` itself when it mentions none. `hidden` are the paths the sandbox hides.
pub fn with_file_texts(
    line: &str,
    workspace: &Path,
    hidden: &[PathBuf],
) -> Result<String, AttachmentError> {
    let mut out = line.to_owned();
    let mut seen = Vec::new();
    for word in crate::attach::words(line) {
        let Some(named) = word.strip_prefix('@') else {
            continue;
        };
        let named = crate::attach::trimmed(named);
        if named.is_empty() || attachment::looks_attachable(named) {
            continue;
        }
        let own_path = named.starts_with('/') || named.starts_with("~/");
        let path = crate::attach::expand_home(named);
        let path = if path.is_absolute() {
            path
        } else {
            workspace.join(path)
        };
        // A word that is no file (`@alice`, `@here`) stays a word.
        if !path.is_file() {
            continue;
        }
        let Ok(real) = path.canonicalize() else {
            continue;
        };
        if seen.contains(&real) {
            continue;
        }
        seen.push(real.clone());
        let refused = |reason: String| AttachmentError::Read {
            name: format!("@{named}"),
            reason,
        };
        let bytes = if own_path {
            let file = std::fs::File::open(&real).map_err(|e| refused(e.to_string()))?;
            read_capped(file).map_err(|e| refused(e.to_string()))?
        } else {
            read_in_workspace(&real, workspace, hidden).map_err(refused)?
        };
        let (text, cut) = as_text(&bytes)
            .ok_or_else(|| refused("it is not text, an image or a PDF".to_owned()))?;
        out.push_str(&format!(
            "\n\n<file path=\"{named}\">\n{text}{}\n</file>",
            if cut {
                format!("\n[… cut at {} KiB]", MAX_FILE_BYTES / 1024)
            } else {
                String::new()
            }
        ));
    }
    Ok(out)
}

/// The bytes of `real`, a file named relative to the workspace: opened as attachments are
/// (`crate::attach::open_in_workspace`), and not one the sandbox hides.
fn read_in_workspace(real: &Path, workspace: &Path, hidden: &[PathBuf]) -> Result<Vec<u8>, String> {
    if hidden.iter().any(|h| real.starts_with(h)) {
        return Err("the sandbox hides it".to_owned());
    }
    let file = crate::attach::open_in_workspace(real, workspace)?;
    read_capped(file).map_err(|e| e.to_string())
}

/// At most [`MAX_FILE_BYTES`] of `reader`, and one byte more, so a cut is noticed.
fn read_capped(reader: impl Read) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    reader
        .take(MAX_FILE_BYTES as u64 + 1)
        .read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// `bytes` as text (cut at [`MAX_FILE_BYTES`], at a character's end) and whether it was cut;
/// `None` when it is not text (not UTF-8, or with NUL bytes).
fn as_text(bytes: &[u8]) -> Option<(String, bool)> {
    let cut = bytes.len() > MAX_FILE_BYTES;
    let bytes = &bytes[..bytes.len().min(MAX_FILE_BYTES)];
    if bytes.contains(&0) {
        return None;
    }
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) if cut && e.error_len().is_none() => {
            std::str::from_utf8(&bytes[..e.valid_up_to()]).ok()?
        }
        Err(_) => return None,
    };
    Some((text.trim_end().to_owned(), cut))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mentioned_text_file_follows_the_line_once_and_a_word_that_is_no_file_stays() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.txt"), "buy milk\n").unwrap();
        let line = "summarize @notes.txt, ask @alice, and @notes.txt again";
        let out = with_file_texts(line, dir.path(), &[]).unwrap();
        assert_eq!(
            out,
            format!("{line}\n\n<file path=\"notes.txt\">\nbuy milk\n</file>")
        );
        assert_eq!(
            with_file_texts("no mention", dir.path(), &[]).unwrap(),
            "no mention"
        );
    }

    #[test]
    fn a_binary_a_hidden_or_a_linked_out_file_is_refused_and_a_long_one_cut() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let (ws, secret) = (root.join("ws"), root.join("secret"));
        std::fs::create_dir_all(ws.join(".ssh")).unwrap();
        std::fs::write(&secret, "PRIVATE").unwrap();
        std::fs::write(ws.join("blob.bin"), b"\0\x01\x02").unwrap();
        std::fs::write(ws.join(".ssh/key"), "KEY").unwrap();
        std::os::unix::fs::symlink(&secret, ws.join("link.txt")).unwrap();
        std::fs::write(ws.join("long.txt"), "x".repeat(MAX_FILE_BYTES + 10)).unwrap();
        let said = |line: &str| {
            with_file_texts(line, &ws, &[ws.join(".ssh")])
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            said("@blob.bin"),
            "cannot read @blob.bin: it is not text, an image or a PDF"
        );
        assert_eq!(
            said("@.ssh/key"),
            "cannot read @.ssh/key: the sandbox hides it"
        );
        assert!(said("@link.txt").contains("leads out of the workspace"));
        // The person's own path is theirs to name.
        let own = with_file_texts(&format!("@{}", secret.display()), &ws, &[]).unwrap();
        assert!(own.contains("PRIVATE"));
        let long = with_file_texts("@long.txt", &ws, &[]).unwrap();
        assert!(
            long.ends_with("[… cut at 64 KiB]\n</file>"),
            "{}",
            &long[long.len() - 40..]
        );
    }
}
