//! Helpers to declare a built-in tool's spec and read its validated arguments.

use serde::de::DeserializeOwned;
use wonopcode_agent_loop::ToolError;
use wonopcode_protocol::{ToolCategory, ToolKind, ToolSpec};

/// Builds a spec from a JSON Schema literal.
pub(crate) fn spec(
    name: &str,
    description: &str,
    kind: ToolKind,
    category: ToolCategory,
    parameters: serde_json::Value,
) -> ToolSpec {
    ToolSpec {
        name: name.to_owned(),
        description: description.to_owned(),
        parameters,
        kind,
        category,
    }
}

/// Deserializes arguments the registry already validated; a mismatch the schema did not
/// catch is reported to the model.
pub(crate) fn args<T: DeserializeOwned>(value: serde_json::Value) -> Result<T, ToolError> {
    serde_json::from_value(value).map_err(|e| ToolError::InvalidArguments(e.to_string()))
}
