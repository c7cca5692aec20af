//! The tree's limits and where named modules come from: what the embedder gives the host
//! (the session answers from the registry), shared by the native loop's delegation and a
//! guest's `context` calls.

use crate::loop_source::LoopSource;

/// Limits on the context tree: depth 100, 1,000 live contexts, 10,000 contexts in a turn, 4
/// children of a batch at once, and a quarter of the machine's memory for all guests together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextLimits {
    /// Deepest context allowed (the root is depth 0).
    pub max_depth: usize,
    /// Contexts alive at once in the whole tree, the root included.
    pub max_live: usize,
    /// Contexts started in one turn of the root, ended ones included: a tree that keeps
    /// replacing its children (a fan-out that never ends) stops here.
    pub max_total: usize,
    /// Bytes of linear memory all live guest instances of the tree may hold together.
    pub max_memory_bytes: usize,
    /// Children of one `spawn-parallel` call running at once.
    pub max_parallel: usize,
}

impl Default for ContextLimits {
    fn default() -> Self {
        Self {
            max_depth: 100,
            max_live: 1000,
            max_total: 10_000,
            max_memory_bytes: default_memory_limit(),
            max_parallel: 4,
        }
    }
}

/// Where a module named in `context-module::named` lives. The CLI answers from the registry
/// (`registry.yaml`, loop directories, built-ins); a library embedder may answer as it likes.
#[async_trait::async_trait]
pub trait ModuleResolver: Send + Sync {
    /// The module called `name` (with or without `.wasm`), or one line saying why not. A
    /// module published to a registry comes back fetched (a file), where the resolver can
    /// fetch.
    async fn resolve(&self, name: &str) -> Result<LoopSource, String>;

    /// What a context gets besides its parent's tools, given its `lineage` (every grant from
    /// the root to it, its own last) and the module it runs when named: that module's own MCP
    /// servers, started now, and allowlist; a `bash` confined by the sandbox the lineage
    /// narrows the run's to; its module's limits. `Err`: one line naming a grant wider than
    /// its parent's (the context does not start). Default: nothing, and no spawn grants.
    async fn context_tools(
        &self,
        _module: Option<&str>,
        lineage: &[crate::grants::Grant],
    ) -> Result<crate::context_tools::ContextTools, String> {
        crate::grants::without_resolver(lineage)
    }

    /// Directories a `context-module::path` may name a file in, besides the workspace.
    fn module_dirs(&self) -> Vec<std::path::PathBuf> {
        Vec::new()
    }

    /// Every name `resolve` knows, with what it does when known, in lookup order: what the
    /// native loop's `spawn_agent` offers. Default: none.
    fn names(&self) -> Vec<(String, Option<String>)> {
        Vec::new()
    }
}

/// The default budget: a quarter of the machine's memory, at least 1 GiB (4 GiB when the
/// machine's memory cannot be read).
pub fn default_memory_limit() -> usize {
    limit_of(std::fs::read_to_string("/proc/meminfo").ok().as_deref())
}

/// The default budget for a machine whose `/proc/meminfo` reads `meminfo`.
fn limit_of(meminfo: Option<&str>) -> usize {
    let machine = meminfo.and_then(|text| {
        let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
        let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
        kib.checked_mul(1024)
    });
    machine.map_or(4 << 30, |bytes| (bytes / 4).max(1 << 30))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_a_quarter_of_the_machine_at_least_a_gibibyte() {
        let kib = |gib: usize| format!("MemTotal:       {} kB\nMemFree: 1 kB\n", gib << 20);
        assert_eq!(limit_of(Some(&kib(64))), 16 << 30);
        assert_eq!(limit_of(Some(&kib(24))), 6 << 30);
        assert_eq!(limit_of(Some(&kib(2))), 1 << 30, "never under a gibibyte");
        assert_eq!(limit_of(None), 4 << 30, "unreadable: 4 GiB");
        assert_eq!(limit_of(Some("MemTotal: lots\n")), 4 << 30);
        assert_eq!(limit_of(Some("MemFree: 1 kB\n")), 4 << 30);
    }
}
