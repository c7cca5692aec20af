//! `custom-tools`: tools a guest defines and runs itself. The host checks the name (no
//! collision with a host tool) and the JSON Schema, offers them to the model, and checks a
//! call's arguments against the schema with the same check as its own tools'.

use std::sync::Arc;

use wonopcode_agent_loop::ArgumentCheck;

use crate::bindings::custom_tools::{CustomToolDefinition, Host};
use crate::host::tools::ToolsView;
use crate::state::CustomTool;

impl Host for ToolsView<'_> {
    fn register_tool(
        &mut self,
        definition: CustomToolDefinition,
    ) -> wasmtime::Result<Result<(), String>> {
        // The seed's rule: `id` is the tool's unique key, which the model calls it by (and
        // `handle-tool-call` names); `name` is its label on screen.
        let name = definition.id.clone();
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Ok(Err(format!(
                "invalid tool id `{name}`: use letters, digits, `_` and `-`"
            )));
        }
        if self.run.services()?.tools.get(&name).is_some() {
            return Ok(Err(format!("`{name}` is a host tool; choose another id")));
        }
        if self.tools.custom.contains_key(&name) {
            return Ok(Err(format!(
                "a custom tool with the id `{name}` is already registered"
            )));
        }
        let schema: serde_json::Value = match serde_json::from_str(&definition.parameters_schema) {
            Ok(v) => v,
            Err(e) => {
                return Ok(Err(format!(
                    "the parameter schema of `{name}` is not JSON: {e}"
                )));
            }
        };
        let check = match ArgumentCheck::new(&schema) {
            Ok(check) => Arc::new(check),
            Err(e) => {
                return Ok(Err(format!(
                    "the parameter schema of `{name}` is not a valid JSON Schema: {e}"
                )));
            }
        };
        if definition.enabled_by_default {
            self.tools.custom_enabled.insert(name.clone());
        }
        self.tools.custom.insert(
            name,
            CustomTool {
                label: definition.name,
                description: definition.description,
                schema: definition.parameters_schema,
                parameters: schema,
                check,
            },
        );
        Ok(Ok(()))
    }

    fn unregister_tool(&mut self, tool_id: String) -> wasmtime::Result<Result<(), String>> {
        self.tools.custom_enabled.remove(&tool_id);
        Ok(match self.tools.custom.remove(&tool_id) {
            Some(_) => Ok(()),
            None => Err(format!("no custom tool named `{tool_id}`")),
        })
    }

    fn list_custom_tools(&mut self) -> wasmtime::Result<Vec<String>> {
        Ok(self.tools.custom.keys().cloned().collect())
    }

    fn check_arguments(
        &mut self,
        tool_id: String,
        arguments: String,
    ) -> wasmtime::Result<Result<(), String>> {
        Ok(match self.tools.custom.get(&tool_id) {
            Some(tool) => tool.check.parse(&tool_id, &arguments).map(|_| ()),
            None => Err(format!("no custom tool named `{tool_id}`")),
        })
    }
}
