//! The on-disk cache of compiled components. A Python or JavaScript guest holds an
//! interpreter (12 to 18 MB of WebAssembly) that takes seconds to compile and milliseconds to
//! load once compiled, so the first run compiles and stores, the next ones load.
//!
//! An entry is named by the SHA-256 of the component's bytes, the Wasmtime version, the
//! engine's compatibility hash (its settings, the host CPU's features) and wonopcode's
//! version, so a change of any of them misses instead of loading code built for something
//! else. Entries are written whole (a temporary file, then a rename); only files this host
//! wrote are read. Loading an entry renews its modification time, and after every store the
//! cache is pruned: entries unused for longer than the age limit go, then the least recently
//! used ones until the total is under the size limit.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

/// The Wasmtime version the host is built with (from `Cargo.lock`, by the build script).
pub const WASMTIME_VERSION: &str = env!("WONOPCODE_WASMTIME_VERSION");

/// Entry file extension.
const EXTENSION: &str = "cwasm";

/// How big and how old the cache may grow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CachePolicy {
    /// Total size of the entries after a prune (default 1 GiB).
    pub max_bytes: u64,
    /// Entries unused for longer are removed (default 30 days); `None`: no age limit.
    pub max_age: Option<Duration>,
}

impl Default for CachePolicy {
    fn default() -> Self {
        Self {
            max_bytes: 1 << 30,
            max_age: Some(Duration::from_secs(30 * 24 * 3600)),
        }
    }
}

/// What a prune removed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Pruned {
    /// Entries removed.
    pub entries: usize,
    /// Bytes freed.
    pub bytes: u64,
}

/// A cache directory and its policy.
#[derive(Debug, Clone)]
pub struct CompileCache {
    dir: PathBuf,
    policy: CachePolicy,
}

impl CompileCache {
    /// A cache in `dir` (created on first store).
    pub fn new(dir: PathBuf, policy: CachePolicy) -> Self {
        Self { dir, policy }
    }

    /// The entry for these bytes under this engine.
    pub fn entry_path(&self, engine: &Engine, bytes: &[u8]) -> PathBuf {
        let mut settings = std::collections::hash_map::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut settings);
        let mut hasher = Sha256::new();
        hasher.update(bytes);
        hasher.update(WASMTIME_VERSION.as_bytes());
        hasher.update(settings.finish().to_le_bytes());
        hasher.update(env!("CARGO_PKG_VERSION").as_bytes());
        self.dir
            .join(format!("{}.{EXTENSION}", hex::encode(hasher.finalize())))
    }

    /// Loads an entry this host wrote, renewing its time of use.
    #[allow(unsafe_code)]
    pub fn load(&self, engine: &Engine, path: &Path) -> wasmtime::Result<Component> {
        // SAFETY: `deserialize_file` trusts its input to be a component this Wasmtime version
        // compiled. Only files this host wrote are read: the cache directory is the user's own,
        // entries are named by the SHA-256 of the source bytes, the Wasmtime version and the
        // engine's settings, and are written whole by `store` (temporary file, then rename).
        // Wasmtime checks the header's version and settings and refuses a mismatch.
        let component = unsafe { Component::deserialize_file(engine, path) }?;
        let renewed = std::fs::File::options()
            .write(true)
            .open(path)
            .and_then(|f| f.set_modified(SystemTime::now()));
        if let Err(e) = renewed {
            tracing::debug!(path = %path.display(), error = %e, "cannot renew a cache entry's time");
        }
        Ok(component)
    }

    /// Stores a compiled component, then prunes.
    pub fn store(&self, component: &Component, path: &Path) -> std::io::Result<()> {
        let bytes = component.serialize().map_err(std::io::Error::other)?;
        std::fs::create_dir_all(&self.dir)?;
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&tmp, bytes)?;
        std::fs::rename(&tmp, path)?;
        let pruned = self.prune()?;
        if pruned.entries > 0 {
            tracing::info!(
                entries = pruned.entries,
                bytes = pruned.bytes,
                "pruned the compiled-component cache"
            );
        }
        Ok(())
    }

    /// Removes entries unused for longer than the age limit, then the least recently used
    /// ones until the total fits the size limit, and temporary files a crashed writer left
    /// (older than an hour). Files it did not write are left alone.
    pub fn prune(&self) -> std::io::Result<Pruned> {
        let now = SystemTime::now();
        let age = |modified: SystemTime| now.duration_since(modified).unwrap_or_default();
        let mut entries: Vec<(PathBuf, SystemTime, u64)> = Vec::new();
        let mut pruned = Pruned::default();
        for entry in std::fs::read_dir(&self.dir)? {
            let entry = entry?;
            let path = entry.path();
            let Ok(meta) = entry.metadata() else { continue };
            let modified = meta.modified().unwrap_or(now);
            let extension = path
                .extension()
                .and_then(|e| e.to_str())
                .unwrap_or_default();
            let is_entry = extension == EXTENSION;
            // `store`'s temporary files end in `.tmp<pid>`.
            let is_tmp = extension
                .strip_prefix("tmp")
                .is_some_and(|pid| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()));
            let expired = match (is_entry, is_tmp) {
                (true, _) => self.policy.max_age.is_some_and(|max| age(modified) > max),
                (false, true) => age(modified) > Duration::from_secs(3600),
                (false, false) => continue,
            };
            if expired {
                remove(&path, meta.len(), &mut pruned);
            } else if is_entry {
                entries.push((path, modified, meta.len()));
            }
        }
        let mut total: u64 = entries.iter().map(|(_, _, len)| len).sum();
        // Oldest use first.
        entries.sort_by_key(|(_, modified, _)| *modified);
        for (path, _, len) in entries {
            if total <= self.policy.max_bytes {
                break;
            }
            total -= len;
            remove(&path, len, &mut pruned);
        }
        Ok(pruned)
    }
}

fn remove(path: &Path, len: u64, pruned: &mut Pruned) {
    match std::fs::remove_file(path) {
        Ok(()) => {
            pruned.entries += 1;
            pruned.bytes += len;
        }
        Err(e) => tracing::debug!(path = %path.display(), error = %e, "cannot prune a cache entry"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(dir: &Path, name: &str, len: usize, age_secs: u64) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, vec![0u8; len]).unwrap();
        let when = SystemTime::now() - Duration::from_secs(age_secs);
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(when)
            .unwrap();
        path
    }

    #[test]
    fn prunes_by_age_then_least_recently_used_until_under_the_size_limit() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let ancient = file(d, "a.cwasm", 10, 90 * 24 * 3600);
        let old = file(d, "b.cwasm", 400, 3000);
        let recent = file(d, "c.cwasm", 400, 200);
        let newest = file(d, "d.cwasm", 400, 10);
        let stale_tmp = file(d, "e.cwasm.tmp123", 50, 7200);
        let fresh_tmp = file(d, "f.cwasm.tmp124", 50, 10);
        let foreign = file(d, "notes.txt", 5000, 90 * 24 * 3600);
        let lookalike = file(d, "notes.tmp", 5, 7200);
        let cache = CompileCache::new(
            d.to_path_buf(),
            CachePolicy {
                max_bytes: 900,
                ..CachePolicy::default()
            },
        );
        let pruned = cache.prune().unwrap();
        assert_eq!(
            pruned,
            Pruned {
                entries: 3,
                bytes: 460
            }
        );
        assert!(!ancient.exists() && !old.exists() && !stale_tmp.exists());
        assert!(recent.exists() && newest.exists() && fresh_tmp.exists());
        assert!(foreign.exists() && lookalike.exists());
        // Within the limits, nothing goes.
        assert_eq!(cache.prune().unwrap(), Pruned::default());
    }

    #[test]
    fn entries_differ_by_bytes_and_name_the_cache_directory() {
        let engine = Engine::default();
        let cache = CompileCache::new(PathBuf::from("/c"), CachePolicy::default());
        let a = cache.entry_path(&engine, b"one");
        assert_ne!(a, cache.entry_path(&engine, b"two"));
        assert_eq!(a, cache.entry_path(&engine, b"one"));
        assert!(a.starts_with("/c") && a.extension().is_some_and(|e| e == "cwasm"));
        assert!(
            WASMTIME_VERSION.starts_with(char::is_numeric),
            "{WASMTIME_VERSION}"
        );
    }
}
