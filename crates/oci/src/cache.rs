//! Fetched modules, one file per manifest digest (`sha256-HEX.wasm`) beside the engine's
//! compile cache (`~/.cache/wonopcode/oci`). A file is written whole (a temporary file in
//! the same directory, then a rename) and only after its digests were checked, so a name in
//! the cache always holds the bytes its digest names; loading it then goes through the
//! engine's compile cache like any component file.

use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

use crate::OciError;
use crate::reference::is_sha256;

/// Where fetched modules are kept.
#[derive(Debug, Clone)]
pub struct ModuleCache {
    dir: PathBuf,
}

impl ModuleCache {
    /// A cache in `dir` (created on first store).
    pub fn new(dir: PathBuf) -> Self {
        Self { dir }
    }

    /// The user's: `oci/` in wonopcode's cache directory; `None` where the system has none.
    pub fn standard() -> Option<Self> {
        dirs::cache_dir().map(|d| Self::new(d.join("wonopcode").join("oci")))
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of the module whose manifest has `digest`, when it was fetched before.
    pub fn get(&self, digest: &str) -> Option<PathBuf> {
        let path = self.path_of(digest)?;
        path.is_file().then_some(path)
    }

    /// A temporary file in the cache to fetch into.
    pub(crate) fn temporary(&self) -> Result<NamedTempFile, OciError> {
        std::fs::create_dir_all(&self.dir).map_err(|e| self.error(&self.dir, &e))?;
        tempfile::Builder::new()
            .prefix(".fetching-")
            .tempfile_in(&self.dir)
            .map_err(|e| self.error(&self.dir, &e))
    }

    /// Keeps `file`, whose digests were checked, as the module of manifest `digest`.
    pub(crate) fn keep(&self, digest: &str, file: NamedTempFile) -> Result<PathBuf, OciError> {
        let path = self.path_of(digest).ok_or_else(|| OciError::Cache {
            path: self.dir.display().to_string(),
            why: format!("`{digest}` is not a sha256 digest"),
        })?;
        file.persist(&path)
            .map_err(|e| self.error(&path, &e.error))?;
        Ok(path)
    }

    /// `sha256-HEX.wasm` for a well-formed digest, nothing for anything else (a digest from a
    /// registry never becomes a path of its choosing).
    fn path_of(&self, digest: &str) -> Option<PathBuf> {
        is_sha256(digest).then(|| self.dir.join(format!("{}.wasm", digest.replace(':', "-"))))
    }

    fn error(&self, path: &Path, e: &std::io::Error) -> OciError {
        OciError::Cache {
            path: path.display().to_string(),
            why: e.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_sha256_digest_names_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ModuleCache::new(dir.path().to_path_buf());
        let digest = format!("sha256:{}", "a".repeat(64));
        assert_eq!(cache.get(&digest), None);
        let mut file = cache.temporary().unwrap();
        std::io::Write::write_all(&mut file, b"\0asm").unwrap();
        let kept = cache.keep(&digest, file).unwrap();
        assert_eq!(cache.get(&digest), Some(kept.clone()));
        assert_eq!(
            kept,
            dir.path().join(format!("sha256-{}.wasm", "a".repeat(64)))
        );
        for bad in [
            "sha256:../../x",
            "md5:abc",
            &format!("sha256:{}", "A".repeat(64)),
        ] {
            assert_eq!(cache.get(bad), None, "{bad}");
            assert!(
                cache.keep(bad, cache.temporary().unwrap()).is_err(),
                "{bad}"
            );
        }
    }
}
