//! WIT 0.2.x, frozen at 0.2.11 in `wit/since_v0_2/`: guests built before 0.3 (the seed's
//! 0.2.0 included) keep loading unchanged.
//!
//! Only `context` changed in 0.3 (ten ways to start a child became one `spawn-request` and
//! three calls), so only 0.2's `context` has bindings here; every other interface of 0.2 is
//! linked to the 0.3 host code as it is (`crate::engine`). Each 0.2 call below builds the
//! 0.3 request and forwards to 0.3's implementation, so a rule of a spawn is written once.
//! A new WIT version is one more file like this one.

use wasmtime::component::Resource;
use wonopcode_contexts::ChildTurns;

use crate::bindings::context as latest;
use crate::bindings::storage::Attachment;
use crate::host::context::ContextView;

/// The oldest version this file serves.
pub const MIN_VERSION: &str = "0.2.0";
/// The newest: the snapshot's.
pub const MAX_VERSION: &str = "0.2.11";

wasmtime::component::bindgen!({
    path: "../../wit/since_v0_2",
    interfaces: "import wonopcode:agent-loop/context@0.2.11;",
    imports: {
        "wonopcode:agent-loop/context.spawn": async | trappable,
        "wonopcode:agent-loop/context.spawn-parallel": async | trappable,
        "wonopcode:agent-loop/context.spawn-with-grants": async | trappable,
        "wonopcode:agent-loop/context.spawn-parallel-with-grants": async | trappable,
        "wonopcode:agent-loop/context.start": async | trappable,
        "wonopcode:agent-loop/context.start-with-grants": async | trappable,
        "wonopcode:agent-loop/context.spawn-with-generation": async | trappable,
        "wonopcode:agent-loop/context.start-with-generation": async | trappable,
        "wonopcode:agent-loop/context.spawn-with-attachments": async | trappable,
        "wonopcode:agent-loop/context.start-with-attachments": async | trappable,
        "wonopcode:agent-loop/context.[method]child.wait": async | trappable,
        "wonopcode:agent-loop/context.[method]child.fork": async | trappable,
        default: trappable,
    },
    with: {
        // The same live child as 0.3's handle, and 0.3's attachment (its shape is 0.2.11's).
        "wonopcode:agent-loop/context.child": wonopcode_contexts::ChildTurns,
        "wonopcode:agent-loop/storage": crate::bindings::storage,
    },
});

pub use wonopcode::agent_loop::context;

use context::{
    ChildState, ContextGeneration, ContextGrants, ContextInfo, ContextModule, ContextParams,
    ContextResult, ContextStatus, Host, HostChild, TokenUsage,
};

type Spawned = wasmtime::Result<Result<ContextResult, String>>;
type Started = wasmtime::Result<Result<Resource<ChildTurns>, String>>;

impl Host for ContextView<'_> {
    async fn spawn(&mut self, params: ContextParams) -> Spawned {
        let request = request(params, None, None, Vec::new());
        result(latest::Host::spawn(self, request).await)
    }

    async fn spawn_with_grants(&mut self, params: ContextParams, grants: ContextGrants) -> Spawned {
        let request = request(params, Some(grants), None, Vec::new());
        result(latest::Host::spawn(self, request).await)
    }

    async fn spawn_with_generation(
        &mut self,
        params: ContextParams,
        grants: Option<ContextGrants>,
        generation: ContextGeneration,
    ) -> Spawned {
        let request = request(params, grants, Some(generation), Vec::new());
        result(latest::Host::spawn(self, request).await)
    }

    async fn spawn_with_attachments(
        &mut self,
        params: ContextParams,
        grants: Option<ContextGrants>,
        generation: Option<ContextGeneration>,
        attachments: Vec<Attachment>,
    ) -> Spawned {
        let request = request(params, grants, generation, attachments);
        result(latest::Host::spawn(self, request).await)
    }

    async fn spawn_parallel(
        &mut self,
        params: Vec<ContextParams>,
        max_concurrent: Option<u32>,
    ) -> wasmtime::Result<Vec<Result<ContextResult, String>>> {
        let requests = params
            .into_iter()
            .map(|p| request(p, None, None, Vec::new()))
            .collect();
        let results = latest::Host::spawn_parallel(self, requests, max_concurrent).await?;
        Ok(results.into_iter().map(|r| r.map(context_result)).collect())
    }

    async fn spawn_parallel_with_grants(
        &mut self,
        children: Vec<(ContextParams, ContextGrants)>,
        max_concurrent: Option<u32>,
    ) -> wasmtime::Result<Vec<Result<ContextResult, String>>> {
        let requests = children
            .into_iter()
            .map(|(p, g)| request(p, Some(g), None, Vec::new()))
            .collect();
        let results = latest::Host::spawn_parallel(self, requests, max_concurrent).await?;
        Ok(results.into_iter().map(|r| r.map(context_result)).collect())
    }

    async fn start(&mut self, params: ContextParams) -> Started {
        latest::Host::start(self, request(params, None, None, Vec::new())).await
    }

    async fn start_with_grants(&mut self, params: ContextParams, grants: ContextGrants) -> Started {
        latest::Host::start(self, request(params, Some(grants), None, Vec::new())).await
    }

    async fn start_with_generation(
        &mut self,
        params: ContextParams,
        grants: Option<ContextGrants>,
        generation: ContextGeneration,
    ) -> Started {
        let request = request(params, grants, Some(generation), Vec::new());
        latest::Host::start(self, request).await
    }

    async fn start_with_attachments(
        &mut self,
        params: ContextParams,
        grants: Option<ContextGrants>,
        generation: Option<ContextGeneration>,
        attachments: Vec<Attachment>,
    ) -> Started {
        let request = request(params, grants, generation, attachments);
        latest::Host::start(self, request).await
    }

    fn get_current_context(&mut self) -> wasmtime::Result<ContextInfo> {
        let info = latest::Host::get_current_context(self)?;
        Ok(ContextInfo {
            id: info.id,
            depth: info.depth,
            module: info.module,
            parent_id: info.parent_id,
            started_at: info.started_at,
        })
    }

    fn get_context_depth(&mut self) -> wasmtime::Result<u32> {
        latest::Host::get_context_depth(self)
    }

    fn get_context_params(&mut self) -> wasmtime::Result<Option<ContextParams>> {
        Ok(latest::Host::get_spawn_request(self)?.map(params))
    }
}

impl HostChild for ContextView<'_> {
    fn id(&mut self, child: Resource<ChildTurns>) -> wasmtime::Result<String> {
        latest::HostChild::id(self, child)
    }

    fn send(
        &mut self,
        child: Resource<ChildTurns>,
        message: String,
    ) -> wasmtime::Result<Result<(), String>> {
        latest::HostChild::send(self, child, message)
    }

    async fn wait(&mut self, child: Resource<ChildTurns>) -> Spawned {
        result(latest::HostChild::wait(self, child).await)
    }

    fn poll(&mut self, child: Resource<ChildTurns>) -> wasmtime::Result<Option<ContextResult>> {
        Ok(latest::HostChild::poll(self, child)?.map(context_result))
    }

    fn state(&mut self, child: Resource<ChildTurns>) -> wasmtime::Result<ChildState> {
        Ok(match latest::HostChild::state(self, child)? {
            latest::ChildState::Working => ChildState::Working,
            latest::ChildState::Answered => ChildState::Answered,
            latest::ChildState::Idle => ChildState::Idle,
        })
    }

    fn cancel(&mut self, child: Resource<ChildTurns>) -> wasmtime::Result<()> {
        latest::HostChild::cancel(self, child)
    }

    async fn fork(&mut self, child: Resource<ChildTurns>, task: String) -> Started {
        latest::HostChild::fork(self, child, task).await
    }

    fn drop(&mut self, child: Resource<ChildTurns>) -> wasmtime::Result<()> {
        latest::HostChild::drop(self, child)
    }
}

/// A 0.2 spawn's parts as one 0.3 request.
fn request(
    params: ContextParams,
    grants: Option<ContextGrants>,
    generation: Option<ContextGeneration>,
    attachments: Vec<Attachment>,
) -> latest::SpawnRequest {
    let grants = grants.unwrap_or(ContextGrants {
        sandbox: None,
        write: Vec::new(),
        read: Vec::new(),
        network: Vec::new(),
        max_processes: None,
        max_cost_usd: None,
    });
    let generation = generation.unwrap_or(ContextGeneration {
        thinking: None,
        max_output_tokens: None,
        temperature: None,
    });
    latest::SpawnRequest {
        module: match params.module {
            ContextModule::Same => latest::ContextModule::Same,
            ContextModule::Named(name) => latest::ContextModule::Named(name),
            ContextModule::Path(path) => latest::ContextModule::Path(path),
        },
        task: params.task,
        system_prompt: params.system_prompt,
        allowed_tools: params.allowed_tools,
        denied_tools: params.denied_tools,
        preferred_provider: params.preferred_provider,
        preferred_model: params.preferred_model,
        max_iterations: params.max_iterations,
        max_tokens: params.max_tokens,
        timeout_ms: params.timeout_ms,
        inherit_messages: params.inherit_messages,
        custom_data: params.custom_data,
        grants: latest::ContextGrants {
            sandbox: grants.sandbox,
            write: grants.write,
            read: grants.read,
            network: grants.network,
            max_processes: grants.max_processes,
            max_cost_usd: grants.max_cost_usd,
        },
        generation: latest::ContextGeneration {
            thinking: generation.thinking,
            max_output_tokens: generation.max_output_tokens,
            temperature: generation.temperature,
        },
        attachments,
        extensions: Vec::new(),
    }
}

/// The request a child was started with, as 0.2's `get-context-params` reads it.
fn params(request: latest::SpawnRequest) -> ContextParams {
    ContextParams {
        module: match request.module {
            latest::ContextModule::Same => ContextModule::Same,
            latest::ContextModule::Named(name) => ContextModule::Named(name),
            latest::ContextModule::Path(path) => ContextModule::Path(path),
        },
        task: request.task,
        allowed_tools: request.allowed_tools,
        denied_tools: request.denied_tools,
        preferred_provider: request.preferred_provider,
        preferred_model: request.preferred_model,
        max_iterations: request.max_iterations,
        max_tokens: request.max_tokens,
        timeout_ms: request.timeout_ms,
        inherit_messages: request.inherit_messages,
        custom_data: request.custom_data,
        system_prompt: request.system_prompt,
    }
}

/// A 0.3 call's result as 0.2's.
fn result(spawned: wasmtime::Result<Result<latest::ContextResult, String>>) -> Spawned {
    Ok(spawned?.map(context_result))
}

/// A child's result as 0.2 reads it: 0.2's `context-status` has no `suspended` and no
/// `budget-exceeded`; they are `error`s whose text says which.
fn context_result(result: latest::ContextResult) -> ContextResult {
    ContextResult {
        response: result.response,
        data: result.data,
        usage: TokenUsage {
            input_tokens: result.usage.input_tokens,
            output_tokens: result.usage.output_tokens,
            total_cost_microcents: result.usage.total_cost_microcents,
        },
        status: match result.status {
            latest::ContextStatus::Completed => ContextStatus::Completed,
            latest::ContextStatus::Cancelled => ContextStatus::Cancelled,
            latest::ContextStatus::MaxIterationsReached => ContextStatus::MaxIterationsReached,
            latest::ContextStatus::TokenLimitReached => ContextStatus::TokenLimitReached,
            latest::ContextStatus::Timeout => ContextStatus::Timeout,
            latest::ContextStatus::Error(e) | latest::ContextStatus::BudgetExceeded(e) => {
                ContextStatus::Error(e)
            }
            latest::ContextStatus::Suspended(e) => ContextStatus::Error(format!("suspended: {e}")),
        },
        modified_files: result.modified_files,
        duration_ms: result.duration_ms,
    }
}
