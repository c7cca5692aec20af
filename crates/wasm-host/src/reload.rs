//! Hot reload: notices when the file a guest was loaded from changes on disk, so an
//! interactive session can validate and load the new version before its next prompt. The
//! file's size and modification time are checked first; its contents are hashed only when
//! one of them moved, and only different contents count as a change.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use sha2::{Digest, Sha256};

/// The file a guest was loaded from, and what it held then.
#[derive(Debug, Clone)]
pub struct GuestFile {
    path: PathBuf,
    stamp: Option<(SystemTime, u64)>,
    sha256: String,
}

fn stamp(path: &Path) -> Option<(SystemTime, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

impl GuestFile {
    /// Remembers `path` as holding `bytes` (the bytes the guest was loaded from).
    pub fn new(path: &Path, bytes: &[u8]) -> Self {
        Self {
            path: path.to_path_buf(),
            stamp: stamp(path),
            sha256: hex::encode(Sha256::digest(bytes)),
        }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// SHA-256 of the contents last seen, hex.
    pub fn sha256(&self) -> &str {
        &self.sha256
    }

    /// The new contents when the file changed since it was last seen; `Err` when it can no
    /// longer be read (the running guest stays). Each change is reported once: the new
    /// contents become the ones last seen, valid or not.
    pub fn changed(&mut self) -> Result<Option<Vec<u8>>, String> {
        let now = stamp(&self.path);
        if now.is_some() && now == self.stamp {
            return Ok(None);
        }
        let bytes = std::fs::read(&self.path)
            .map_err(|e| format!("cannot read {}: {e}", self.path.display()))?;
        self.stamp = now;
        let sha256 = hex::encode(Sha256::digest(&bytes));
        if sha256 == self.sha256 {
            return Ok(None);
        }
        self.sha256 = sha256;
        Ok(Some(bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_each_change_of_contents_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.wasm");
        std::fs::write(&path, b"one").unwrap();
        let mut file = GuestFile::new(&path, b"one");
        assert_eq!(file.changed().unwrap(), None);
        // Rewritten with the same contents: not a change.
        std::fs::write(&path, b"one").unwrap();
        assert_eq!(file.changed().unwrap(), None);
        std::fs::write(&path, b"two!").unwrap();
        assert_eq!(file.changed().unwrap(), Some(b"two!".to_vec()));
        assert_eq!(file.changed().unwrap(), None);
        std::fs::remove_file(&path).unwrap();
        assert!(file.changed().unwrap_err().contains("cannot read"));
    }
}
