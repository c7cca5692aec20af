//! A specialist defined by settings instead of code: a Markdown file's system prompt, tool
//! list, model and limits (`wonopcode-registry` parses the files). It runs on the native
//! StandardLoop, as a root run or as a child context, under the same limits, grants, budgets
//! and events as a guest's child, so an agent is a [`LoopSource`](crate::LoopSource) like any
//! other and a guest spawns one with `named("...")`.

use std::path::PathBuf;

use serde::Serialize;
use wonopcode_protocol::generation::Generation;

/// What an agent file sets. The tool allowlist, MCP servers and grants are not here: they
/// are a module's tools in the registry's terms and reach a context the way a registry
/// module's do.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct AgentDefinition {
    /// The name it is found by.
    pub name: String,
    /// The file it was read from.
    pub file: PathBuf,
    /// Its system prompt (the file's body).
    pub system_prompt: String,
    /// The provider it asks for; `None`: its parent's (or the run's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The model it asks for (of `provider`, else of its parent's provider); `None`: its
    /// parent's model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Model requests in one turn before it stops.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_iterations: Option<u32>,
    /// How long one of its turns may take, in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Tools it must not use, even when its parent has them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub denied_tools: Vec<String>,
    /// How much its model thinks, its output cap, its temperature; what it leaves unset is
    /// its parent's (or the run's).
    #[serde(skip_serializing_if = "Generation::is_unset")]
    pub generation: Generation,
}

impl AgentDefinition {
    /// The model it asks for as `(provider, model)` when it asks for one: a model alone is
    /// one of `current_provider`'s.
    pub fn model_choice<'a>(
        &'a self,
        current_provider: &'a str,
    ) -> Option<(&'a str, Option<&'a str>)> {
        match (&self.provider, &self.model) {
            (None, None) => None,
            (provider, model) => Some((
                provider.as_deref().unwrap_or(current_provider),
                model.as_deref(),
            )),
        }
    }
}
