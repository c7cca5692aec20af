//! Named agent loops. Users collect guest loops — their own, their team's, the samples — and
//! agents written as Markdown, and pick one by name. This crate finds them (in search-path
//! order, `registry.yaml`, loose `*.wasm` files and `agents/*.md`), resolves names with "did you mean" suggestions, and describes each
//! module through the host's validation, cached by content hash so a listing recompiles
//! nothing that has not changed.

#![deny(missing_docs)]

pub mod agent_check;
pub mod agent_file;
pub mod catalog;
pub mod command_file;
pub mod error;
pub mod file;
pub mod metadata;
pub mod paths;
pub mod resolver;
pub mod skill;

pub use agent_file::AgentFile;
pub use catalog::{Entry, LoopCatalog, Shadowed, Source};
pub use error::RegistryError;
pub use file::{InputSchema, ModuleGrants, ModuleTools, ScopedHooks};
pub use metadata::{Metadata, MetadataCache, Status};
pub use paths::{SearchDir, SearchPath};
pub use resolver::CatalogResolver;
pub use skill::{Skill, Skills};
pub use wonopcode_contexts::LoopSource;
