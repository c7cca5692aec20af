//! Which loop runs a context. One type for every place that chooses one: the command line
//! (`--loop-type`, `--agent-loop`, `--agent-loop-name`), the registry's entries and agent
//! files, hot reload and `context-module::named` spawns.

use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;

use crate::agent_definition::AgentDefinition;

/// Which loop runs a context.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "kind", content = "path", rename_all = "snake_case")]
pub enum LoopSource {
    /// The native StandardLoop.
    Native,
    /// The default guest embedded in the binary.
    Embedded,
    /// A component file.
    File(PathBuf),
    /// A component published to an OCI registry (`oci://HOST/REPO:TAG`), which the session
    /// fetches into a file before it loads (the tree itself never reaches the network).
    Oci(String),
    /// An agent file: the native loop with the file's settings (shown as its file).
    Agent(#[serde(serialize_with = "agent_file")] Arc<AgentDefinition>),
}

fn agent_file<S: serde::Serializer>(
    agent: &Arc<AgentDefinition>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    agent.file.serialize(serializer)
}

impl LoopSource {
    /// The agent file's settings, when this is one.
    pub fn agent(&self) -> Option<&Arc<AgentDefinition>> {
        match self {
            Self::Agent(agent) => Some(agent),
            _ => None,
        }
    }
}
