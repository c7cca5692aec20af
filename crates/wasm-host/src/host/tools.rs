//! `tools`: the host's tools, the context's enabled set, and execution through the same
//! dispatch path as the native loop (schema validation, permissions, timeouts, truncation,
//! `tool_call` items).

use std::collections::BTreeSet;

use wasmtime::component::HasData;

use wonopcode_agent_loop::{Next, canonical_tool_name, unavailable_tool, unknown_tool_line};
use wonopcode_protocol::call::Call;
use wonopcode_protocol::{
    PermissionDecision, PermissionRequest, PermissionStatus as Status, ToolCategory,
};

use crate::bindings::providers::StreamHandle;
use crate::bindings::tools::{
    Host, PermissionStatus, ToolCategory as WitCategory, ToolExecutionRequest, ToolExecutionResult,
    ToolInfo,
};
use crate::state::{ContextTools, HostState, Responses, RunSlot};

/// What `tools` and `custom-tools` see of a store: the run (its tools, gate and steps), the
/// context's tools, and the streamed responses whose tool rounds run here.
pub(crate) struct ToolsView<'a> {
    pub(crate) run: &'a mut RunSlot,
    pub(crate) responses: &'a mut Responses,
    pub(crate) tools: &'a mut ContextTools,
}

impl<'a> ToolsView<'a> {
    pub(crate) fn of(state: &'a mut HostState) -> Self {
        Self {
            run: &mut state.run,
            responses: &mut state.responses,
            tools: &mut state.tools,
        }
    }
}

/// Links `tools` and `custom-tools` on [`ToolsView`].
pub(crate) struct ToolsData;

impl HasData for ToolsData {
    type Data<'a> = ToolsView<'a>;
}

fn category(c: ToolCategory) -> WitCategory {
    match c {
        ToolCategory::FileSystem => WitCategory::FileSystem,
        ToolCategory::Process => WitCategory::Process,
        ToolCategory::Network => WitCategory::Network,
        ToolCategory::Mcp => WitCategory::Mcp,
        ToolCategory::Internal => WitCategory::Internal,
        ToolCategory::Custom => WitCategory::Custom,
    }
}

impl ToolsView<'_> {
    fn permission_request(
        &self,
        name: &str,
        arguments: &str,
    ) -> wasmtime::Result<Option<PermissionRequest>> {
        let services = self.run.services()?;
        let Some(tool) = services.tools.get(name) else {
            return Ok(None);
        };
        let value: serde_json::Value = serde_json::from_str(arguments).unwrap_or_default();
        Ok(Some(PermissionRequest {
            tool: name.to_owned(),
            kind: tool.spec().kind,
            subject: tool.permission_subject(&value, &services.cwd),
            preview: None,
        }))
    }

    fn all_tools(&self) -> wasmtime::Result<Vec<ToolInfo>> {
        let env = self.run.services()?;
        let mut out = Vec::new();
        for name in env.tools.names() {
            let Some(tool) = env.tools.get(name) else {
                continue;
            };
            let spec = tool.spec();
            let request = PermissionRequest {
                tool: name.to_owned(),
                kind: spec.kind,
                subject: None,
                preview: None,
            };
            out.push(ToolInfo {
                id: name.to_owned(),
                name: name.to_owned(),
                description: spec.description.clone(),
                parameters_schema: spec.parameters.to_string(),
                category: category(spec.category),
                requires_permission: env.gate.status(&request) != Status::Allowed,
                is_custom: false,
            });
        }
        for (id, tool) in &self.tools.custom {
            out.push(ToolInfo {
                id: id.clone(),
                name: tool.label.clone(),
                description: tool.description.clone(),
                parameters_schema: tool.schema.clone(),
                category: WitCategory::Custom,
                requires_permission: false,
                is_custom: true,
            });
        }
        Ok(out)
    }

    /// `execute-tool(s)`: calls the guest runs itself, through the run's step for them (the
    /// shared dispatch path, restricted to the enabled host tools); the answers come in call
    /// order, as the guest sees them.
    async fn execute(
        &mut self,
        requests: Vec<ToolExecutionRequest>,
    ) -> wasmtime::Result<Vec<ToolExecutionResult>> {
        // A guest written to the seed names `patch`: the host's `apply_patch`.
        let calls: Vec<Call> = requests
            .into_iter()
            .map(|r| Call {
                id: r.id,
                name: match self.tools.custom.contains_key(&r.name) {
                    true => r.name,
                    false => canonical_tool_name(&r.name).to_owned(),
                },
                arguments: r.arguments,
            })
            .collect();
        let run = self.run.get_mut()?;
        let results = run
            .execute_for_loop(&calls, self.tools.enabled.as_ref())
            .await;
        // Only a failed call needs the names the model may call: a call of none of them
        // reads every one, the guest's own tools among them, not the host's alone.
        let offered = match results.iter().any(|r| r.is_error) {
            true => self.offered_names()?,
            false => Vec::new(),
        };
        Ok(calls
            .into_iter()
            .zip(results)
            .map(|(call, r)| {
                let content = if r.is_error && !offered.contains(&call.name) {
                    let known: Vec<&str> = offered.iter().map(String::as_str).collect();
                    unavailable_tool(&call.name, &known)
                } else {
                    r.content
                };
                ToolExecutionResult {
                    call_id: call.id,
                    success: !r.is_error,
                    error: r.is_error.then(|| content.clone()),
                    content,
                    duration_ms: u64::try_from(r.duration.as_millis()).unwrap_or(u64::MAX),
                }
            })
            .collect())
    }

    /// Every tool name this context's model may call, sorted: its enabled host tools and
    /// its enabled custom tools.
    fn offered_names(&self) -> wasmtime::Result<Vec<String>> {
        let mut names = self.tools.enabled_host_tools(&self.run.services()?.tools);
        names.extend(self.tools.custom_enabled.iter().cloned());
        names.sort();
        Ok(names)
    }

    /// The tool a guest's name for one names: one of its custom tools, else a host tool by
    /// the name it is registered under (the seed's `patch` is `apply_patch`); `Err` with the
    /// line for a name neither has, the guest's own tools among those it offers.
    fn named(&self, id: &str) -> wasmtime::Result<Result<Named, String>> {
        if self.tools.custom.contains_key(id) {
            return Ok(Ok(Named::Custom(id.to_owned())));
        }
        let tools = &self.run.services()?.tools;
        let host = canonical_tool_name(id);
        if tools.get(host).is_some() {
            return Ok(Ok(Named::Host(host.to_owned())));
        }
        let custom = self.tools.custom.keys().map(String::as_str);
        Ok(Err(unknown_tool_line(id, tools.names().chain(custom))))
    }
}

/// A tool as [`ToolsView::named`] found it, by the name it is kept under.
enum Named {
    /// One of the guest's own.
    Custom(String),
    /// One of the host's.
    Host(String),
}

impl Host for ToolsView<'_> {
    fn list_tools(&mut self) -> wasmtime::Result<Vec<ToolInfo>> {
        self.all_tools()
    }

    fn get_tools_by_category(&mut self, wanted: WitCategory) -> wasmtime::Result<Vec<ToolInfo>> {
        Ok(self
            .all_tools()?
            .into_iter()
            .filter(|t| t.category == wanted)
            .collect())
    }

    fn enable_tool(&mut self, tool_id: String) -> wasmtime::Result<Result<(), String>> {
        match self.named(&tool_id)? {
            Ok(Named::Custom(name)) => {
                self.tools.custom_enabled.insert(name);
            }
            Ok(Named::Host(name)) => {
                if let Some(set) = &mut self.tools.enabled {
                    set.insert(name);
                }
            }
            Err(unknown) => return Ok(Err(unknown)),
        }
        Ok(Ok(()))
    }

    fn disable_tool(&mut self, tool_id: String) -> wasmtime::Result<Result<(), String>> {
        match self.named(&tool_id)? {
            Ok(Named::Custom(name)) => {
                self.tools.custom_enabled.remove(&name);
            }
            Ok(Named::Host(name)) => {
                let mut set: BTreeSet<String> = self
                    .tools
                    .enabled_host_tools(&self.run.services()?.tools)
                    .into_iter()
                    .collect();
                set.remove(&name);
                self.tools.enabled = Some(set);
            }
            Err(unknown) => return Ok(Err(unknown)),
        }
        Ok(Ok(()))
    }

    fn get_enabled_tools(&mut self) -> wasmtime::Result<Vec<String>> {
        self.offered_names()
    }

    fn set_enabled_tools(&mut self, tool_ids: Vec<String>) -> wasmtime::Result<Result<(), String>> {
        let mut host = BTreeSet::new();
        let mut custom = BTreeSet::new();
        for id in &tool_ids {
            match self.named(id)? {
                Ok(Named::Custom(name)) => custom.insert(name),
                Ok(Named::Host(name)) => host.insert(name),
                Err(unknown) => return Ok(Err(unknown)),
            };
        }
        self.tools.custom_enabled = custom;
        self.tools.enabled = Some(host);
        Ok(Ok(()))
    }

    fn is_tool_enabled(&mut self, tool_id: String) -> wasmtime::Result<bool> {
        Ok(match self.named(&tool_id)? {
            Ok(Named::Custom(name)) => self.tools.custom_enabled.contains(&name),
            Ok(Named::Host(name)) => self
                .tools
                .enabled_host_tools(&self.run.services()?.tools)
                .contains(&name),
            Err(_) => false,
        })
    }

    async fn execute_tool(
        &mut self,
        name: String,
        arguments: String,
    ) -> wasmtime::Result<Result<ToolExecutionResult, String>> {
        if self.tools.custom.contains_key(&name) {
            return Ok(Err(format!(
                "`{name}` is a custom tool of this loop: run it in the guest (the host cannot call back into a guest that is waiting on it)"
            )));
        }
        let mut results = self
            .execute(vec![ToolExecutionRequest {
                id: "call".to_owned(),
                name,
                arguments,
            }])
            .await?;
        Ok(results
            .pop()
            .ok_or_else(|| "the tool gave no result".to_owned()))
    }

    async fn execute_tools_parallel(
        &mut self,
        calls: Vec<ToolExecutionRequest>,
    ) -> wasmtime::Result<Vec<ToolExecutionResult>> {
        self.execute(calls).await
    }

    async fn run_tool_round(
        &mut self,
        turn: StreamHandle,
    ) -> wasmtime::Result<Result<Vec<bool>, String>> {
        let Some(stream) = self.responses.streams.get_mut(&turn) else {
            return Ok(Err(format!("unknown turn {turn}")));
        };
        let calls = match stream.round_calls(turn) {
            Ok(calls) => calls,
            Err(e) => return Ok(Err(e)),
        };
        // A custom tool is refused before anything runs or the turn is marked.
        if let Some(call) = calls
            .iter()
            .find(|c| self.tools.custom.contains_key(&c.name))
        {
            return Ok(Err(format!(
                "`{}` is a custom tool of this loop: run it in the guest, and the rest with execute-tools-parallel",
                call.name
            )));
        }
        stream.mark_round_run();
        let run = self.run.get_mut()?;
        let round = run
            .tool_round(&calls, Vec::new(), self.tools.enabled.as_ref())
            .await;
        Ok(match round.next {
            Next::Continue => Ok(round.succeeded),
            // The run has ended (suspended, completed by a tool, cancelled): the guest hears
            // why and stops; the host reports the run's own outcome.
            Next::Stop(Ok(_)) => Err("a tool completed the run: stop here".to_owned()),
            Next::Stop(Err(e)) => Err(e.to_string()),
        })
    }

    fn check_permission(
        &mut self,
        tool_name: String,
        arguments: String,
    ) -> wasmtime::Result<PermissionStatus> {
        let Some(request) = self.permission_request(&tool_name, &arguments)? else {
            return Ok(PermissionStatus::Denied);
        };
        Ok(match self.run.services()?.gate.status(&request) {
            Status::Allowed => PermissionStatus::Allowed,
            Status::Denied => PermissionStatus::Denied,
            Status::NeedsApproval => PermissionStatus::NeedsApproval,
        })
    }

    async fn request_permission(
        &mut self,
        tool_name: String,
        arguments: String,
    ) -> wasmtime::Result<bool> {
        let Some(request) = self.permission_request(&tool_name, &arguments)? else {
            return Ok(false);
        };
        let gate = self.run.services()?.gate.clone();
        Ok(gate.decide(&request).await == PermissionDecision::Allow)
    }
}
