//! Names in `context-module::named` resolved through the catalog, so a guest spawns
//! `named("coder")` (or `named("coder.wasm")`: a name resolves with or without its `.wasm`) from the
//! same registry files and directories `--agent-loop-name` uses. The catalog is discovered
//! on the first spawn by name, so a run that spawns nothing by name never reads the registry.

use std::sync::OnceLock;

use wonopcode_contexts::{LoopSource, ModuleResolver};

use crate::catalog::{Entry, LoopCatalog};
use crate::paths::SearchPath;

/// A resolver over the catalog of a search path, discovered on first use.
pub struct CatalogResolver {
    search: SearchPath,
    catalog: OnceLock<LoopCatalog>,
}

impl CatalogResolver {
    /// A resolver over `search`.
    pub fn new(search: SearchPath) -> Self {
        Self {
            search,
            catalog: OnceLock::new(),
        }
    }
}

impl CatalogResolver {
    /// A resolver over a catalog its caller discovered (and reported the warnings of).
    pub fn discovered(search: SearchPath, catalog: LoopCatalog) -> Self {
        Self {
            search,
            catalog: OnceLock::from(catalog),
        }
    }

    fn catalog(&self) -> &LoopCatalog {
        self.catalog.get_or_init(|| {
            let catalog = LoopCatalog::discover(&self.search);
            for warning in &catalog.warnings {
                tracing::warn!("{warning}");
            }
            catalog
        })
    }

    /// Every entry's name and description, in the order names are looked up.
    pub fn entries(&self) -> Vec<(String, Option<String>)> {
        self.catalog()
            .entries
            .iter()
            .map(|e| (e.name.clone(), e.description.clone()))
            .collect()
    }

    /// The entry called `name` (with or without `.wasm`), or one line saying why not.
    pub fn entry(&self, name: &str) -> Result<Entry, String> {
        entry(self.catalog(), name).cloned()
    }
}

#[async_trait::async_trait]
impl ModuleResolver for CatalogResolver {
    async fn resolve(&self, name: &str) -> Result<LoopSource, String> {
        resolve(self.catalog(), name)
    }

    fn module_dirs(&self) -> Vec<std::path::PathBuf> {
        self.search.dirs.iter().map(|d| d.path.clone()).collect()
    }
}

/// The entry `name`, else `name` without its `.wasm`.
fn entry<'c>(catalog: &'c LoopCatalog, name: &str) -> Result<&'c Entry, String> {
    catalog
        .find(name)
        .or_else(|e| match name.strip_suffix(".wasm") {
            Some(stem) => catalog.find(stem),
            None => Err(e),
        })
        .map_err(|e| e.to_string())
}

/// Where the module `name` (or `name` without its `.wasm`) lives.
fn resolve(catalog: &LoopCatalog, name: &str) -> Result<LoopSource, String> {
    Ok(entry(catalog, name)?.location.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_resolve_with_or_without_their_extension() {
        let catalog = LoopCatalog {
            entries: LoopCatalog::builtins(),
            ..LoopCatalog::default()
        };
        assert_eq!(resolve(&catalog, "standard"), Ok(LoopSource::Native));
        assert_eq!(resolve(&catalog, "default.wasm"), Ok(LoopSource::Embedded));
        let unknown = resolve(&catalog, "standrd").unwrap_err();
        assert!(unknown.contains("standard"), "{unknown}");
    }
}
