//! Reading an instruction file: a regular file, as text, at most [`MAX_BYTES`] of it (and
//! a few more, so a cut is noticed); a repository's only through the path guard.

use std::io::Read;
use std::path::{Path, PathBuf};

use super::MAX_BYTES;

/// `file`'s text, when its real path is a regular file beneath `inside` and in none of
/// `hidden`.
pub(super) fn read_inside(file: &Path, inside: &Path, hidden: &[PathBuf]) -> Option<String> {
    let real = file.canonicalize().ok()?;
    let inside = inside.canonicalize().ok()?;
    if !real.starts_with(&inside) || hidden.iter().any(|h| real.starts_with(h)) {
        tracing::warn!(file = %file.display(), "an instruction file leads out of the repository or into a hidden path: not read");
        return None;
    }
    read_regular(&real)
}

/// The text of one of the person's own files (in their Codex or Claude Code home), when it
/// is a regular file.
pub(super) fn read_own(file: &Path) -> Option<String> {
    read_regular(&file.canonicalize().ok()?)
}

fn read_regular(real: &Path) -> Option<String> {
    if !std::fs::metadata(real).ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    std::fs::File::open(real)
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
