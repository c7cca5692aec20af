//! Loading the loop a session runs, from its [`LoopSource`], reloading a guest file that
//! changed between prompts (hot reload), and listing the named loops with what checking
//! each one found.

use std::sync::{Arc, OnceLock};

use wonopcode_agent_loop::{AgentLoop, StandardLoop};
use wonopcode_contexts::LoopSource;

use crate::error::SessionError;
use wonopcode_registry::{Entry, LoopCatalog, Metadata, MetadataCache, SearchPath};
use wonopcode_wasm_host::{
    CachePolicy, DEFAULT_LOOP, EngineOptions, GuestFile, HostConfig, WasmAgentLoop, WasmEngine,
    WasmError,
};

/// The WebAssembly engine with the compile cache under `cache` (`None`: no cache).
pub fn engine(cache: Option<CachePolicy>) -> Result<Arc<WasmEngine>, WasmError> {
    let mut options = EngineOptions::default();
    match cache {
        Some(policy) => options.cache_policy = policy,
        None => options.cache_dir = None,
    }
    WasmEngine::new(options)
}

/// Fetches the module an `oci://` reference names into the user's module cache (or finds it
/// there, when the reference pins a digest it holds). `Err`: one line naming the reference.
pub async fn fetch_module(reference: &str) -> Result<wonopcode_oci::Fetched, SessionError> {
    let choice = |e: wonopcode_oci::OciError| SessionError::Choice(e.to_string());
    let reference = wonopcode_oci::OciRef::parse(reference).map_err(choice)?;
    let cache = wonopcode_oci::ModuleCache::standard().ok_or_else(|| {
        SessionError::Choice(format!(
            "{reference}: this system has no cache directory to keep fetched modules in"
        ))
    })?;
    wonopcode_oci::fetch(&reference, &cache)
        .await
        .map_err(choice)
}

/// Loads the loop `source` names; a guest file comes with a [`Reloader`] for hot reload.
pub async fn load(
    source: &LoopSource,
    cache: Option<CachePolicy>,
    host_config: HostConfig,
) -> Result<(Arc<dyn AgentLoop>, Option<Reloader>), WasmError> {
    let Some(component) = wonopcode_wasm_host::Component::of(source)? else {
        return Ok((Arc::new(StandardLoop::new()), None));
    };
    let engine = engine(cache)?;
    let agent = WasmAgentLoop::from_bytes(
        engine.clone(),
        &component.bytes,
        &component.origin,
        host_config.clone(),
    )
    .await?;
    let reloader = match source {
        LoopSource::File(path) => Some(Reloader {
            file: GuestFile::new(path, &component.bytes),
            engine,
            host_config,
        }),
        // A published module changes by a new digest, not under the run's feet.
        LoopSource::Native | LoopSource::Embedded | LoopSource::Agent(_) | LoopSource::Oci(_) => {
            None
        }
    };
    Ok((Arc::new(agent), reloader))
}

/// A guest file watched between prompts, and what reloading it takes.
pub struct Reloader {
    file: GuestFile,
    engine: Arc<WasmEngine>,
    host_config: HostConfig,
}

/// What a look at the guest file found.
pub enum Reload {
    /// The file has not changed.
    Unchanged,
    /// It changed and its new version is valid: run this from now on.
    Loaded(Reloaded),
    /// It changed but cannot be read or is not valid: the running version stays.
    Rejected(String),
}

/// A newly loaded version of the guest.
pub struct Reloaded {
    /// The loop.
    pub agent: Arc<dyn AgentLoop>,
    /// Its file.
    pub module: String,
    /// SHA-256 of its bytes.
    pub sha256: String,
}

impl Reloader {
    /// Looks at the guest file: a new valid version is loaded, an unreadable or invalid one
    /// is rejected with the reason (the running version stays).
    pub async fn check(&mut self) -> Reload {
        let module = self.file.path().display().to_string();
        let bytes = match self.file.changed() {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return Reload::Unchanged,
            Err(e) => return Reload::Rejected(e.to_string()),
        };
        match WasmAgentLoop::from_bytes(
            self.engine.clone(),
            &bytes,
            &module,
            self.host_config.clone(),
        )
        .await
        {
            Ok(agent) => Reload::Loaded(Reloaded {
                agent: Arc::new(agent),
                module,
                sha256: self.file.sha256().to_owned(),
            }),
            Err(e) => Reload::Rejected(format!("the new version is not valid: {e}")),
        }
    }
}

/// A named loop and what checking it found (`None` for the native loop, which needs no
/// check), with the same for each entry it shadows, in order.
pub struct ListedLoop {
    /// The registry's entry.
    pub entry: Entry,
    /// What the entry's module is (WIT version, capabilities, whether it loads).
    pub metadata: Option<Metadata>,
    /// The metadata of `entry.shadows`, one for each.
    pub shadows: Vec<Option<Metadata>>,
}

/// Every named loop on the search path, checked;
/// what went wrong while looking comes back as warnings. Modules are checked through the
/// metadata cache (`cache`: `None` checks afresh each time) and the compile cache under
/// `compile` (`None`: none); a warm cache needs no engine at all.
pub async fn list(
    search: &SearchPath,
    cache: Option<MetadataCache>,
    compile: Option<CachePolicy>,
) -> (Vec<ListedLoop>, Vec<String>) {
    let catalog = LoopCatalog::discover(search);
    let cache = cache.unwrap_or_else(|| MetadataCache::at(None));
    let engine = LazyEngine {
        engine: OnceLock::new(),
        cache: compile,
    };
    let mut listed = Vec::with_capacity(catalog.entries.len());
    for entry in catalog.entries {
        let metadata = describe(&entry.location, &cache, &engine).await;
        let mut shadows = Vec::with_capacity(entry.shadows.len());
        for shadow in &entry.shadows {
            shadows.push(describe(&shadow.location, &cache, &engine).await);
        }
        listed.push(ListedLoop {
            entry,
            metadata,
            shadows,
        });
    }
    (listed, catalog.warnings)
}

/// The engine, built on first use only.
struct LazyEngine {
    engine: OnceLock<Arc<WasmEngine>>,
    cache: Option<CachePolicy>,
}

impl LazyEngine {
    fn get(&self) -> Result<Arc<WasmEngine>, WasmError> {
        if let Some(engine) = self.engine.get() {
            return Ok(engine.clone());
        }
        let engine = engine(self.cache)?;
        Ok(self.engine.get_or_init(|| engine).clone())
    }
}

async fn describe(
    location: &LoopSource,
    cache: &MetadataCache,
    engine: &LazyEngine,
) -> Option<Metadata> {
    match location {
        // A published module is checked when it is fetched (`loops validate oci://…`).
        LoopSource::Native | LoopSource::Agent(_) | LoopSource::Oci(_) => None,
        LoopSource::Embedded => Some(
            cache
                .describe(|| engine.get(), DEFAULT_LOOP, "the default guest")
                .await,
        ),
        LoopSource::File(path) => Some(cache.describe_file(|| engine.get(), path).await),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wonopcode_wasm_host::guest_paths;

    fn loaded(reload: Reload) -> Reloaded {
        match reload {
            Reload::Loaded(reloaded) => reloaded,
            Reload::Unchanged => panic!("expected a new version, the file is unchanged"),
            Reload::Rejected(why) => panic!("expected a new version, it was rejected: {why}"),
        }
    }

    #[tokio::test]
    async fn a_changed_guest_file_is_reloaded_and_an_invalid_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("loop.wasm");
        std::fs::copy(guest_paths::MISBEHAVE, &path).unwrap();
        let (agent, reloader) = load(&LoopSource::File(path.clone()), None, HostConfig::default())
            .await
            .unwrap();
        assert_eq!(agent.name(), "misbehave");
        let mut reloader = reloader.unwrap();
        assert!(matches!(reloader.check().await, Reload::Unchanged));

        std::fs::copy(guest_paths::GUEST_HELLO, &path).unwrap();
        let reloaded = loaded(reloader.check().await);
        assert_eq!(reloaded.agent.name(), "hello");
        assert_eq!(reloaded.module, path.display().to_string());
        assert!(
            matches!(reloader.check().await, Reload::Unchanged),
            "each change loads once"
        );

        std::fs::write(&path, b"\0asm broken").unwrap();
        match reloader.check().await {
            Reload::Rejected(why) => {
                assert!(why.starts_with("the new version is not valid"), "{why}")
            }
            _ => panic!("an invalid version is not loaded"),
        }
        std::fs::copy(guest_paths::MISBEHAVE, &path).unwrap();
        assert_eq!(loaded(reloader.check().await).agent.name(), "misbehave");
    }
}
