//! What a listing shows about a module — its loop name, WIT version, capabilities, size,
//! hash, and whether it is valid — read through the host's validation and cached on disk by
//! content hash (and wonopcode's version, since validity depends on the host), so listing
//! does not recompile anything that has not changed.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use wonopcode_wasm_host::check::{check, short_capabilities};
use wonopcode_wasm_host::{WasmEngine, WasmError};

/// Whether a module can run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", content = "reason", rename_all = "snake_case")]
pub enum Status {
    /// Every check passed.
    Ok,
    /// A check failed; the reason is one line.
    Invalid(String),
}

/// What validation found about one module file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Metadata {
    /// The loop's own name (`get-name`), when it answered.
    pub loop_name: Option<String>,
    /// The WIT version it was built against, when known.
    pub wit_version: Option<String>,
    /// Capabilities in short form (`streaming,parallel-tools`), when known.
    pub capabilities: Option<String>,
    /// Size in bytes.
    pub size: u64,
    /// SHA-256 of the bytes, hex.
    pub sha256: String,
    /// Valid, or why not.
    pub status: Status,
}

impl Metadata {
    /// A module nothing is known about but why it cannot run.
    fn invalid(size: u64, sha256: String, reason: String) -> Self {
        Self {
            loop_name: None,
            wit_version: None,
            capabilities: None,
            size,
            sha256,
            status: Status::Invalid(reason),
        }
    }
}

/// The on-disk cache of module metadata.
#[derive(Debug, Clone)]
pub struct MetadataCache {
    dir: Option<PathBuf>,
}

impl MetadataCache {
    /// The cache under the user's cache directory (`None`: no cache).
    pub fn standard() -> Self {
        Self::at(dirs::cache_dir().map(|d| d.join("wonopcode").join("loop-metadata")))
    }

    /// A cache in `dir`, or none.
    pub fn at(dir: Option<PathBuf>) -> Self {
        Self { dir }
    }

    /// The metadata of the component file at `path` (see [`MetadataCache::describe`]).
    pub async fn describe_file(
        &self,
        engine: impl FnOnce() -> Result<Arc<WasmEngine>, WasmError>,
        path: &Path,
    ) -> Metadata {
        match std::fs::read(path) {
            Ok(bytes) => {
                self.describe(engine, &bytes, &path.display().to_string())
                    .await
            }
            Err(e) => Metadata::invalid(
                0,
                String::new(),
                format!("cannot read {}: {e}", path.display()),
            ),
        }
    }

    /// The metadata of a component: from the cache when these bytes were seen before, else
    /// validated (and cached). `engine` is only called on a cache miss, so a warm listing
    /// never builds an engine.
    pub async fn describe(
        &self,
        engine: impl FnOnce() -> Result<Arc<WasmEngine>, WasmError>,
        bytes: &[u8],
        origin: &str,
    ) -> Metadata {
        let sha256 = hex::encode(Sha256::digest(bytes));
        let entry = self.entry(&sha256);
        if let Some(cached) = entry.as_deref().and_then(read_cached) {
            return cached;
        }
        let engine = match engine() {
            Ok(engine) => engine,
            Err(e) => return Metadata::invalid(bytes.len() as u64, sha256, e.to_string()),
        };
        let report = check(engine, bytes, origin).await;
        let metadata = Metadata {
            loop_name: report.name.clone(),
            wit_version: report.wit_version.clone(),
            capabilities: report.capabilities.as_ref().map(short_capabilities),
            size: bytes.len() as u64,
            sha256,
            status: match report.failure() {
                None => Status::Ok,
                Some(reason) => Status::Invalid(reason.to_owned()),
            },
        };
        if let Some(entry) = entry {
            write_cached(&entry, &metadata);
        }
        metadata
    }

    fn entry(&self, sha256: &str) -> Option<PathBuf> {
        let dir = self.dir.as_ref()?;
        Some(dir.join(format!("{sha256}-{}.json", env!("CARGO_PKG_VERSION"))))
    }
}

fn read_cached(path: &Path) -> Option<Metadata> {
    let text = std::fs::read_to_string(path).ok()?;
    match serde_json::from_str(&text) {
        Ok(metadata) => Some(metadata),
        Err(e) => {
            tracing::warn!(path = %path.display(), "unreadable metadata cache entry, validating again: {e}");
            None
        }
    }
}

/// Writes atomically (a temporary file renamed into place); a cache that cannot be written
/// only costs the next listing a validation.
fn write_cached(path: &Path, metadata: &Metadata) {
    let Some(dir) = path.parent() else { return };
    let result = std::fs::create_dir_all(dir)
        .and_then(|()| tempfile::NamedTempFile::new_in(dir))
        .and_then(|mut file| {
            serde_json::to_writer(&mut file, metadata)?;
            file.persist(path).map(drop).map_err(|e| e.error)
        });
    if let Err(e) = result {
        tracing::debug!(path = %path.display(), "cannot write the metadata cache: {e}");
    }
}
