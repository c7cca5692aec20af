//! The objects of a run's checkpoints (`checkpoints/objects/`): each content kept once,
//! named by its BLAKE3 hash; a content larger than 64 KiB is cut where its content says
//! (FastCDC) and kept as the list of its pieces (`HASH.pieces`), each piece an object of
//! its own — so an edit of a large file adds the pieces it changed and a list, not the
//! whole file again. A content read back is checked against its name.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::JournalError;

/// Contents up to this size are kept whole; larger ones in pieces.
const WHOLE_UP_TO: usize = 64 << 10;
/// The pieces' sizes: at least, on average, at most.
const PIECE_MIN: usize = 2 << 10;
const PIECE_AVG: usize = 8 << 10;
const PIECE_MAX: usize = 64 << 10;

/// An object's name: the BLAKE3 hash of its content, in hex.
pub(crate) fn content_name(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}

/// Whether `name` is an object's name (a hash in hex), never a path.
pub(crate) fn is_object_name(name: &str) -> bool {
    name.len() == 64 && name.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Writes `bytes` at `path` through a temporary name, so an object is whole or absent. The
/// name is this write's own: two contexts keeping the same content at once (two coders
/// editing copies of one file) each rename their own, the second replacing the first with
/// the same bytes.
fn write_once(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    static WRITES: AtomicU64 = AtomicU64::new(0);
    let partial = path.with_extension(format!(
        "{}-{}.partial",
        std::process::id(),
        WRITES.fetch_add(1, Ordering::Relaxed)
    ));
    crate::private::write(&partial, bytes)?;
    std::fs::rename(&partial, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&partial);
    })
}

/// A directory of objects.
#[derive(Debug, Clone)]
pub(crate) struct Objects {
    dir: PathBuf,
}

impl Objects {
    /// The objects in `dir`.
    pub fn at(dir: PathBuf) -> Self {
        Self { dir }
    }

    /// Keeps `bytes` as an object; its name.
    pub fn put(&self, bytes: &[u8]) -> std::io::Result<String> {
        let hash = content_name(bytes);
        let (whole, listed) = (
            self.dir.join(&hash),
            self.dir.join(format!("{hash}.pieces")),
        );
        if whole.exists() || listed.exists() {
            return Ok(hash);
        }
        if bytes.len() <= WHOLE_UP_TO {
            write_once(&whole, bytes)?;
            return Ok(hash);
        }
        let mut list = String::new();
        for piece in fastcdc::v2020::FastCDC::new(bytes, PIECE_MIN, PIECE_AVG, PIECE_MAX) {
            let piece = &bytes[piece.offset..piece.offset + piece.length];
            let name = content_name(piece);
            let path = self.dir.join(&name);
            if !path.exists() {
                write_once(&path, piece)?;
            }
            list.push_str(&name);
            list.push('\n');
        }
        write_once(&listed, list.as_bytes())?;
        Ok(hash)
    }

    /// The content kept as `hash`, checked against its hash.
    pub fn get(&self, hash: &str) -> Result<Vec<u8>, JournalError> {
        if !is_object_name(hash) {
            let path = self.dir.join("?");
            return Err(JournalError::io(
                &path,
                &std::io::Error::other(format!("`{hash}` is not an object's name")),
            ));
        }
        let whole = self.dir.join(hash);
        let bytes = match std::fs::read(&whole) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => self.pieces_of(hash)?,
            Err(e) => return Err(JournalError::io(&whole, &e)),
        };
        if content_name(&bytes) != hash {
            return Err(JournalError::io(
                &whole,
                &std::io::Error::other("its content does not match its name"),
            ));
        }
        Ok(bytes)
    }

    /// The content kept in pieces as `hash`, put together (checked by the caller).
    fn pieces_of(&self, hash: &str) -> Result<Vec<u8>, JournalError> {
        let listed = self.dir.join(format!("{hash}.pieces"));
        let list = std::fs::read_to_string(&listed).map_err(|e| JournalError::io(&listed, &e))?;
        let mut bytes = Vec::new();
        for name in list.lines() {
            // A piece is checked with the whole; its name must be an object's.
            if !is_object_name(name) {
                return Err(JournalError::io(
                    &listed,
                    &std::io::Error::other("a piece's name is not an object's"),
                ));
            }
            let piece = self.dir.join(name);
            bytes.extend(std::fs::read(&piece).map_err(|e| JournalError::io(&piece, &e))?);
        }
        Ok(bytes)
    }
}

#[cfg(test)]
mod same_content_at_once {
    use super::*;

    #[test]
    fn contexts_keeping_the_same_content_at_once_all_succeed() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let objects = Objects::at(dir.path().to_path_buf());
        let small = vec![7u8; 1000];
        let large: Vec<u8> = (0..300_000u32).flat_map(|i| i.to_le_bytes()).collect();
        std::thread::scope(|s| {
            let writers: Vec<_> = (0..8)
                .map(|i| {
                    let objects = objects.clone();
                    let bytes = if i % 2 == 0 {
                        small.clone()
                    } else {
                        large.clone()
                    };
                    s.spawn(move || objects.put(&bytes))
                })
                .collect();
            for writer in writers {
                let put = writer
                    .join()
                    .unwrap_or_else(|_| panic!("a writer panicked"));
                assert!(put.is_ok(), "{put:?}");
            }
        });
        assert_eq!(objects.get(&content_name(&large)).ok(), Some(large));
        let partials = std::fs::read_dir(dir.path())
            .unwrap_or_else(|e| panic!("{e}"))
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".partial"))
            .count();
        assert_eq!(partials, 0);
    }
}
