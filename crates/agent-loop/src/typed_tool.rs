//! `TypedTool`: a tool whose arguments are a Rust type. Its JSON Schema is derived from that
//! type ([`parameters_of`]), and the blanket [`Tool`] implementation below parses the call's
//! JSON into it before any of the tool's own methods run, so a tool never reads an untyped
//! `serde_json::Value` and never states its schema twice. The registry and both loops see an
//! ordinary `Tool`.

use std::path::Path;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use wonopcode_protocol::earlier_calls::Interrupted;
use wonopcode_protocol::{ToolKind, ToolSpec};

use crate::tool::{Tool, ToolEnv, ToolError, ToolOutput};

/// A tool with typed arguments. See the module documentation.
#[async_trait]
pub trait TypedTool: Send + Sync {
    /// The call's arguments. `#[serde(deny_unknown_fields)]` on it makes the derived schema
    /// refuse unknown properties, as the model is told.
    type Args: DeserializeOwned + JsonSchema + Send + Sync;

    /// Name, description, schema (usually [`parameters_of`] of [`Self::Args`]), kind and
    /// category.
    fn spec(&self) -> &ToolSpec;

    /// What a call acts on, for permission rules ([`Tool::permission_subject`]).
    fn permission_subject(&self, _args: &Self::Args, _workspace_root: &Path) -> Option<String> {
        None
    }

    /// The change the call would make, as a unified diff ([`Tool::preview`]).
    async fn preview(&self, _args: &Self::Args, _workspace_root: &Path) -> Option<String> {
        None
    }

    /// The most bytes of output the tool gives the model ([`Tool::output_cap`]).
    fn output_cap(&self) -> Option<usize> {
        None
    }

    /// For a call an interrupted run started and never finished, whether it had its
    /// effect ([`Tool::interrupted`]). By default a read-only tool runs again and any other
    /// cannot tell.
    async fn interrupted(&self, _args: &Self::Args, _workspace_root: &Path) -> Interrupted {
        match TypedTool::spec(self).kind {
            ToolKind::ReadOnly => Interrupted::RunAgain,
            ToolKind::Mutating => Interrupted::Unknown,
        }
    }

    /// Runs the tool.
    async fn run(&self, args: Self::Args, env: &ToolEnv) -> Result<ToolOutput, ToolError>;
}

/// The JSON Schema of `A` as a tool's parameters: the schema `schemars` derives, without its
/// `$schema`, `title` and `description` (a model is told the tool's name and description
/// already; the type's doc comment is for its reader), and
/// with each property as plain as a hand-written one: an optional field is its type (not
/// required says it may be left out; `["string", "null"]` would invite a `null`), and
/// integers carry no Rust `format` (`uint`), which some APIs refuse.
pub fn parameters_of<A: JsonSchema>() -> serde_json::Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(A)).unwrap_or_default();
    if let Some(fields) = schema.as_object_mut() {
        fields.remove("$schema");
        fields.remove("title");
        fields.remove("description");
    }
    if let Some(properties) = schema
        .get_mut("properties")
        .and_then(serde_json::Value::as_object_mut)
    {
        properties.values_mut().for_each(plain);
    }
    schema
}

/// One property's schema without `null` in its type and without a `format` on an integer.
fn plain(property: &mut serde_json::Value) {
    let Some(fields) = property.as_object_mut() else {
        return;
    };
    if let Some(serde_json::Value::Array(types)) = fields.get("type") {
        let kept: Vec<serde_json::Value> = types
            .iter()
            .filter(|t| t.as_str() != Some("null"))
            .cloned()
            .collect();
        let kept = match <[serde_json::Value; 1]>::try_from(kept) {
            Ok([one]) => one,
            Err(many) => serde_json::Value::Array(many),
        };
        fields.insert("type".to_owned(), kept);
    }
    if fields.get("type").and_then(serde_json::Value::as_str) == Some("integer") {
        fields.remove("format");
    }
}

/// The call's arguments as `A`, or the one line saying what is wrong with them: read from
/// the JSON in place (`&Value`, no copy of it) where a method borrows it, and moved out of
/// it (`Value`, its strings not copied) for `run`.
fn typed<'de, A, D>(arguments: D) -> Result<A, ToolError>
where
    A: Deserialize<'de>,
    D: serde::Deserializer<'de, Error = serde_json::Error>,
{
    A::deserialize(arguments).map_err(|e| ToolError::InvalidArguments(e.to_string()))
}

#[async_trait]
impl<T: TypedTool> Tool for T {
    fn spec(&self) -> &ToolSpec {
        TypedTool::spec(self)
    }

    /// Arguments that do not parse act on nothing: the call is refused when it runs.
    fn permission_subject(
        &self,
        arguments: &serde_json::Value,
        workspace_root: &Path,
    ) -> Option<String> {
        let args = typed(arguments).ok()?;
        TypedTool::permission_subject(self, &args, workspace_root)
    }

    async fn preview(
        &self,
        arguments: &serde_json::Value,
        workspace_root: &Path,
    ) -> Option<String> {
        let args = typed(arguments).ok()?;
        TypedTool::preview(self, &args, workspace_root).await
    }

    fn output_cap(&self) -> Option<usize> {
        TypedTool::output_cap(self)
    }

    /// A call whose arguments do not parse did nothing (it failed before it began): it
    /// runs again, and fails the same way.
    async fn interrupted(
        &self,
        arguments: &serde_json::Value,
        workspace_root: &Path,
    ) -> Interrupted {
        match typed(arguments) {
            Ok(args) => TypedTool::interrupted(self, &args, workspace_root).await,
            Err(_) => Interrupted::RunAgain,
        }
    }

    async fn run(
        &self,
        arguments: serde_json::Value,
        env: &ToolEnv,
    ) -> Result<ToolOutput, ToolError> {
        TypedTool::run(self, typed(arguments)?, env).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Arguments of a tool that finds things (not told to the model).
    #[derive(serde::Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Find {
        /// What to look for.
        #[schemars(length(min = 1))]
        pattern: String,
        /// Where (default: the workspace).
        path: Option<String>,
    }

    #[test]
    fn the_schema_is_the_types_with_its_docs_and_refuses_unknown_properties() {
        let schema = parameters_of::<Find>();
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["required"], serde_json::json!(["pattern"]));
        assert_eq!(schema["additionalProperties"], false);
        assert_eq!(schema["properties"]["pattern"]["minLength"], 1);
        assert_eq!(
            schema["properties"]["pattern"]["description"],
            "What to look for."
        );
        assert!(
            ["$schema", "title", "description"]
                .iter()
                .all(|key| schema.get(key).is_none())
        );
        assert_eq!(
            schema["properties"]["path"],
            serde_json::json!({"type": "string", "description": "Where (default: the workspace)."})
        );
        // The registry's check takes it.
        assert!(crate::ArgumentCheck::new(&schema).is_ok());
    }

    #[test]
    fn bad_arguments_are_one_line_saying_what_is_wrong() {
        let wrong = typed::<Find, _>(&serde_json::json!({"pattern": 3})).err();
        let Some(ToolError::InvalidArguments(line)) = wrong else {
            panic!("{wrong:?}");
        };
        assert!(line.contains("invalid type"), "{line}");
        let unknown = typed::<Find, _>(&serde_json::json!({"pattern": "x", "depth": 1})).err();
        assert!(matches!(unknown, Some(ToolError::InvalidArguments(l)) if l.contains("depth")));
    }
}
