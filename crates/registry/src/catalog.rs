//! The catalog: every loop found, by name. Built-ins come first (`standard`, the native loop,
//! and `default`, the embedded guest), then each search directory in order: its
//! `registry.yaml`, then its `*.wasm` files (named by file stem), then its `agents/*.md`
//! (an agents directory: its `*.md`). The first of a name wins;
//! later ones are kept as shadowed, with a note. A registry entry and a directory file that
//! are the same file are one module, not a conflict.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use crate::agent_file::AgentFile;
use crate::error::RegistryError;
use crate::file::{FILE_NAME, InputSchema, ModuleTools, RegistryFile};
use crate::paths::{DirKind, SearchPath};
use wonopcode_contexts::LoopSource;

/// The sub-directory of a loop directory that holds agent files.
pub const AGENTS_SUBDIR: &str = "agents";

/// Where an entry was found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Source {
    /// Part of wonopcode.
    BuiltIn,
    /// A `registry.yaml` key.
    Registry {
        /// The registry file.
        file: PathBuf,
    },
    /// A `*.wasm` file in a searched directory.
    Directory {
        /// The directory.
        dir: PathBuf,
    },
    /// An agent file (`*.md`).
    AgentFile {
        /// The file.
        file: PathBuf,
    },
}

impl Source {
    /// The short label of the listing's `source` column.
    pub fn label(&self) -> &'static str {
        match self {
            Source::BuiltIn => "built-in",
            Source::Registry { .. } => "registry",
            Source::Directory { .. } => "directory",
            Source::AgentFile { .. } => "agent file",
        }
    }
}

/// An entry that lost its name to an earlier one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Shadowed {
    /// Where it was found.
    pub source: Source,
    /// What it would have run.
    pub location: LoopSource,
}

/// A named loop.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Entry {
    /// The name users pick it by.
    pub name: String,
    /// Where it was found.
    pub source: Source,
    /// What runs.
    pub location: LoopSource,
    /// What it does, when known.
    pub description: Option<String>,
    /// Its version, when the registry gives one.
    pub version: Option<String>,
    /// What it takes when served as an MCP tool, when the registry says (else a prompt).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<InputSchema>,
    /// The MCP servers and tool allowlist of its contexts, when the registry gives them.
    #[serde(skip_serializing_if = "ModuleTools::is_empty")]
    pub context_tools: ModuleTools,
    /// Later entries of the same name, in discovery order.
    pub shadows: Vec<Shadowed>,
    /// Whether it is one of the workspace's agent files (a repository's).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub from_workspace: bool,
}

/// Every loop found, and what went wrong while looking.
#[derive(Debug, Clone, Default, Serialize)]
pub struct LoopCatalog {
    /// In discovery order.
    pub entries: Vec<Entry>,
    /// Skipped files and directories, unknown keys: one line each.
    pub warnings: Vec<String>,
}

impl LoopCatalog {
    /// The built-in entries.
    pub fn builtins() -> Vec<Entry> {
        vec![
            Entry {
                name: "standard".to_owned(),
                source: Source::BuiltIn,
                location: LoopSource::Native,
                description: Some("the native StandardLoop".to_owned()),
                version: None,
                input_schema: None,
                context_tools: ModuleTools::default(),
                shadows: Vec::new(),
                from_workspace: false,
            },
            Entry {
                name: "default".to_owned(),
                source: Source::BuiltIn,
                location: LoopSource::Embedded,
                description: Some(
                    "the StandardLoop algorithm as the embedded WebAssembly guest".to_owned(),
                ),
                version: None,
                input_schema: None,
                context_tools: ModuleTools::default(),
                shadows: Vec::new(),
                from_workspace: false,
            },
        ]
    }

    /// Discovers loops: the built-ins, then every directory of `search`.
    pub fn discover(search: &SearchPath) -> Self {
        let mut catalog = Self::default();
        for entry in Self::builtins() {
            catalog.add(entry);
        }
        for dir in &search.dirs {
            // A directory the user named is expected to be there; the standard ones are not.
            if dir.kind == DirKind::Flag && !dir.path.exists() {
                catalog.warnings.push(format!(
                    "--loops-dir {}: no such directory",
                    dir.path.display()
                ));
                continue;
            }
            match dir.kind {
                DirKind::Agents => catalog.scan_agents(&dir.path, None),
                DirKind::WorkspaceAgents => {
                    catalog.scan_agents(&dir.path, Some(search.workspace_trusted));
                }
                _ => {
                    catalog.scan(&dir.path);
                    catalog.scan_agents(&dir.path.join(AGENTS_SUBDIR), None);
                }
            }
        }
        catalog
    }

    /// Reads the agent files (`*.md`) of a directory, in name order; one that does not parse
    /// is skipped with its one line. `workspace` is `Some(trusted)` for the workspace's
    /// directories: see [`Catalog::of_workspace`].
    fn scan_agents(&mut self, dir: &Path, workspace: Option<bool>) {
        let Ok(listing) = std::fs::read_dir(dir) else {
            return;
        };
        let mut files: Vec<PathBuf> = listing
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "md") && p.is_file())
            .collect();
        files.sort();
        for file in files {
            match AgentFile::load(&file) {
                Ok(agent) => {
                    self.warnings.extend(agent.warnings);
                    let mut context_tools = agent.context_tools;
                    if let Some(trusted) = workspace {
                        context_tools = self.of_workspace(context_tools, &file, trusted);
                    }
                    self.add(Entry {
                        name: agent.definition.name.clone(),
                        source: Source::AgentFile { file },
                        location: LoopSource::Agent(Arc::new(agent.definition)),
                        description: agent.description,
                        version: None,
                        input_schema: None,
                        context_tools,
                        shadows: Vec::new(),
                        from_workspace: workspace.is_some(),
                    });
                }
                Err(e) => self.warnings.push(format!("{e} (file skipped)")),
            }
        }
    }

    /// A workspace agent's tools as the workspace may have them: the workspace never
    /// widens a run, so its MCP servers run in the sandbox they would get anyway (a
    /// `sandbox` of their own is ignored, with one line) and its hooks may refuse but never
    /// approve; and until the workspace is `trusted`, its hooks and MCP servers are left
    /// out altogether (the session says so once, listing them).
    fn of_workspace(&mut self, mut tools: ModuleTools, file: &Path, trusted: bool) -> ModuleTools {
        if !trusted {
            tools.hooks = None;
            tools.mcp_servers.clear();
            return tools;
        }
        if let Some(hooks) = &mut tools.hooks {
            hooks.from_workspace = true;
        }
        for (name, server) in &mut tools.mcp_servers {
            if let Some(own) = server.as_object_mut().and_then(|s| s.remove("sandbox")) {
                self.warnings.push(format!(
                    "{}: MCP server `{name}` asks for sandbox {own}: ignored (a workspace's file cannot widen the sandbox; the server runs in the run's)",
                    file.display()
                ));
            }
        }
        tools
    }

    /// Adds `entry`, or records it as shadowed by an earlier entry of the same name.
    fn add(&mut self, entry: Entry) {
        let same_file = |e: &Entry| match (&e.location, &entry.location) {
            (LoopSource::File(a), LoopSource::File(b)) => same_path(a, b),
            (LoopSource::Oci(a), LoopSource::Oci(b)) => a == b,
            (LoopSource::Agent(a), LoopSource::Agent(b)) => same_path(&a.file, &b.file),
            _ => false,
        };
        match self.entries.iter_mut().find(|e| e.name == entry.name) {
            Some(first) if same_file(first) => {}
            Some(first) => {
                // A repository's agent named like one of the user's own is said, never
                // silently taken for it.
                if first.from_workspace
                    && !entry.from_workspace
                    && matches!(entry.source, Source::AgentFile { .. })
                    && let (Source::AgentFile { file: theirs }, Source::AgentFile { file: own }) =
                        (&first.source, &entry.source)
                {
                    self.warnings.push(format!(
                        "the workspace's agent `{}` ({}) shadows your agent of the same name ({})",
                        first.name,
                        theirs.display(),
                        own.display()
                    ));
                }
                if !first.shadows.iter().any(|s| s.location == entry.location) {
                    first.shadows.push(Shadowed {
                        source: entry.source,
                        location: entry.location,
                    });
                }
            }
            None => self.entries.push(entry),
        }
    }

    /// Reads one directory: its registry file, then its `*.wasm` files.
    fn scan(&mut self, dir: &Path) {
        if !dir.exists() {
            return;
        }
        let registry = dir.join(FILE_NAME);
        if registry.is_file() {
            match RegistryFile::load(&registry) {
                Ok(file) => {
                    self.warnings.extend(file.warnings);
                    for module in file.modules {
                        self.add(Entry {
                            name: module.name,
                            source: Source::Registry {
                                file: registry.clone(),
                            },
                            location: module.location,
                            description: module.description,
                            version: module.version,
                            input_schema: module.input_schema,
                            context_tools: module.context_tools,
                            shadows: Vec::new(),
                            from_workspace: false,
                        });
                    }
                }
                Err(e) => self.warnings.push(format!("{e} (file skipped)")),
            }
        }
        let listing = match std::fs::read_dir(dir) {
            Ok(listing) => listing,
            Err(e) => {
                self.warnings.push(format!(
                    "{}: cannot read the directory: {e} (skipped)",
                    dir.display()
                ));
                return;
            }
        };
        let mut files: Vec<PathBuf> = listing
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "wasm") && p.is_file())
            .collect();
        files.sort();
        for path in files {
            let Some(name) = path.file_stem().and_then(|s| s.to_str()).map(str::to_owned) else {
                self.warnings.push(format!(
                    "{}: the file name is not UTF-8 (skipped)",
                    path.display()
                ));
                continue;
            };
            self.add(Entry {
                name,
                source: Source::Directory {
                    dir: dir.to_path_buf(),
                },
                location: LoopSource::File(path),
                description: None,
                version: None,
                input_schema: None,
                context_tools: ModuleTools::default(),
                shadows: Vec::new(),
                from_workspace: false,
            });
        }
    }

    /// The entry named `name`, or an error with the closest known names.
    pub fn find(&self, name: &str) -> Result<&Entry, RegistryError> {
        if let Some(entry) = self.entries.iter().find(|e| e.name == name) {
            return Ok(entry);
        }
        let mut scored: Vec<(f64, &str)> = self
            .entries
            .iter()
            .map(|e| (strsim::jaro_winkler(name, &e.name), e.name.as_str()))
            .filter(|(score, _)| *score >= 0.7)
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        Err(RegistryError::Unknown {
            name: name.to_owned(),
            suggestions: scored
                .into_iter()
                .take(3)
                .map(|(_, n)| n.to_owned())
                .collect(),
        })
    }
}

/// Whether two paths name the same file (after resolving links, when both exist).
fn same_path(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn search(dirs: &[&Path]) -> SearchPath {
        SearchPath::from_parts(
            &dirs.iter().map(|d| d.to_path_buf()).collect::<Vec<_>>(),
            Vec::new(),
            None,
            None,
            None,
        )
    }

    #[test]
    fn discovery_order_conflicts_and_suggestions() {
        let first = tempfile::tempdir().unwrap();
        let second = tempfile::tempdir().unwrap();
        std::fs::write(
            first.path().join(FILE_NAME),
            "modules:\n  coder:\n    path: coder.wasm\n    version: '2.0'\n  standard:\n    path: mine.wasm\n",
        )
        .unwrap();
        // The registry's `coder` is this very file: one module, not a conflict.
        std::fs::write(first.path().join("coder.wasm"), b"x").unwrap();
        std::fs::write(first.path().join("reviewer.wasm"), b"x").unwrap();
        std::fs::write(first.path().join("notes.txt"), b"x").unwrap();
        std::fs::write(second.path().join("reviewer.wasm"), b"x").unwrap();
        let catalog = LoopCatalog::discover(&search(&[first.path(), second.path()]));
        let names: Vec<&str> = catalog.entries.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["standard", "default", "coder", "reviewer"]);
        let coder = catalog.find("coder").unwrap();
        assert_eq!(coder.version.as_deref(), Some("2.0"));
        assert!(coder.shadows.is_empty());
        assert_eq!(catalog.find("standard").unwrap().shadows.len(), 1);
        let reviewer = catalog.find("reviewer").unwrap();
        assert_eq!(
            reviewer.shadows,
            vec![Shadowed {
                source: Source::Directory {
                    dir: second.path().to_path_buf()
                },
                location: LoopSource::File(second.path().join("reviewer.wasm")),
            }]
        );
        let err = catalog.find("reviewr").unwrap_err();
        assert_eq!(
            err.to_string(),
            "no agent loop named `reviewr`; did you mean `reviewer`?"
        );
        assert!(catalog.warnings.is_empty(), "{:?}", catalog.warnings);
    }

    #[test]
    fn a_bad_registry_file_is_skipped_with_a_warning() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(FILE_NAME), "modules: [1, 2\n").unwrap();
        std::fs::write(dir.path().join("loose.wasm"), b"x").unwrap();
        let catalog = LoopCatalog::discover(&search(&[dir.path()]));
        assert!(catalog.find("loose").is_ok());
        assert_eq!(catalog.warnings.len(), 1);
        assert!(
            catalog.warnings[0].contains("registry.yaml:"),
            "{:?}",
            catalog.warnings
        );
    }

    #[test]
    fn a_missing_loops_dir_the_user_named_is_a_warning() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope");
        let named =
            SearchPath::from_parts(std::slice::from_ref(&missing), Vec::new(), None, None, None);
        let catalog = LoopCatalog::discover(&named);
        assert_eq!(
            catalog.warnings,
            [format!(
                "--loops-dir {}: no such directory",
                missing.display()
            )]
        );
        // A standard directory that is not there is nothing to say.
        let standard = SearchPath::from_parts(&[], vec![missing], None, None, None);
        assert!(LoopCatalog::discover(&standard).warnings.is_empty());
    }

    #[test]
    fn an_unreadable_directory_is_skipped_with_a_warning() {
        // A "directory" that cannot be listed (a plain file: permissions would not stop root).
        let dir = tempfile::tempdir().unwrap();
        let unreadable = dir.path().join("not-a-dir");
        std::fs::write(&unreadable, b"x").unwrap();
        let other = tempfile::tempdir().unwrap();
        std::fs::write(other.path().join("kept.wasm"), b"x").unwrap();
        let catalog = LoopCatalog::discover(&search(&[&unreadable, other.path()]));
        assert!(catalog.find("kept").is_ok());
        assert_eq!(catalog.warnings.len(), 1, "{:?}", catalog.warnings);
        assert!(
            catalog.warnings[0].contains("not-a-dir: cannot read the directory"),
            "{:?}",
            catalog.warnings
        );
    }
}
