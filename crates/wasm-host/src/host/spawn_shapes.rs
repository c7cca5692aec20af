//! The WIT shapes of a spawn (`spawn-request`, `context-grants`, `context-generation`,
//! `context-result`) as the context tree's own (`wonopcode_contexts::spawn`), both ways.

use wonopcode_contexts::{
    ChildResult, ModuleRef, SpawnAsks, SpawnGrants, SpawnRequest, SpawnSandbox,
};
use wonopcode_protocol::ContextStatus;
use wonopcode_protocol::generation::Generation;

use crate::bindings::context::{
    ContextGeneration, ContextGrants, ContextModule, ContextResult, ContextStatus as WitStatus,
    SpawnRequest as WitRequest, TokenUsage,
};
use crate::host::shapes::attachments_from_wit;

/// A guest's `spawn-request` as the tree's request and what it asks for beyond it. `Err`
/// (one line) for a thinking setting that is not one, a bad attachment, or an extension
/// this host does not know.
pub(crate) fn asked(request: WitRequest) -> Result<(SpawnRequest, SpawnAsks), String> {
    if let Some((name, _)) = request.extensions.first() {
        return Err(format!(
            "spawn-request.extensions: `{name}` is not a setting this host knows (it knows none)"
        ));
    }
    let asks = SpawnAsks {
        grants: grants(request.grants),
        generation: generation(request.generation)?,
    };
    let tree = SpawnRequest {
        module: match request.module {
            ContextModule::Same => ModuleRef::Same,
            ContextModule::Named(name) => ModuleRef::Named(name),
            ContextModule::Path(path) => ModuleRef::Path(path),
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
        attachments: attachments_from_wit(request.attachments)?,
    };
    Ok((tree, asks))
}

/// The request a child was started with, as its guest reads it
/// (`context.get-spawn-request`): grants, generation and attachments empty.
pub(crate) fn wit_request(request: &SpawnRequest) -> WitRequest {
    let request = request.clone();
    WitRequest {
        module: match request.module {
            ModuleRef::Same => ContextModule::Same,
            ModuleRef::Named(name) => ContextModule::Named(name),
            ModuleRef::Path(path) => ContextModule::Path(path),
        },
        task: request.task,
        system_prompt: request.system_prompt,
        allowed_tools: request.allowed_tools,
        denied_tools: request.denied_tools,
        preferred_provider: request.preferred_provider,
        preferred_model: request.preferred_model,
        max_iterations: request.max_iterations,
        max_tokens: request.max_tokens,
        timeout_ms: request.timeout_ms,
        inherit_messages: request.inherit_messages,
        custom_data: request.custom_data,
        grants: ContextGrants {
            sandbox: None,
            write: Vec::new(),
            read: Vec::new(),
            network: Vec::new(),
            max_processes: None,
            max_cost_usd: None,
        },
        generation: ContextGeneration {
            thinking: None,
            max_output_tokens: None,
            temperature: None,
        },
        attachments: Vec::new(),
        extensions: Vec::new(),
    }
}

/// A spawn's grants split into the part the resolver checks (`None` for a sandbox that asks
/// for nothing) and the cost limit the tree keeps; `None` when they narrow nothing.
fn grants(grants: ContextGrants) -> Option<SpawnGrants> {
    let sandbox = SpawnSandbox {
        mode: grants.sandbox,
        write: grants.write,
        read: grants.read,
        network: grants.network,
        max_processes: grants.max_processes,
    };
    let sandbox = (!sandbox.is_empty()).then_some(sandbox);
    (sandbox.is_some() || grants.max_cost_usd.is_some()).then_some(SpawnGrants {
        sandbox,
        max_cost_usd: grants.max_cost_usd,
    })
}

/// A spawn's generation settings (a thinking setting that is not one is one line).
fn generation(generation: ContextGeneration) -> Result<Generation, String> {
    let thinking = generation
        .thinking
        .as_deref()
        .map(str::parse)
        .transpose()
        .map_err(|e: String| format!("generation: {e}"))?;
    Ok(Generation {
        thinking,
        max_output_tokens: generation.max_output_tokens,
        temperature: generation.temperature,
    })
}

/// A child's result as its guest parent reads it: its input tokens count what was read
/// from and written to the cache too.
pub(crate) fn wit_result(result: ChildResult) -> ContextResult {
    let usage = result.usage;
    let error = result.error.unwrap_or_default();
    ContextResult {
        response: result.response,
        data: result.data,
        usage: TokenUsage {
            input_tokens: usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens,
            output_tokens: usage.output_tokens,
            total_cost_microcents: usage.cost_micro_cents,
        },
        status: match result.status {
            ContextStatus::Completed => WitStatus::Completed,
            ContextStatus::Cancelled => WitStatus::Cancelled,
            ContextStatus::MaxIterationsReached => WitStatus::MaxIterationsReached,
            ContextStatus::TokenLimitReached => WitStatus::TokenLimitReached,
            ContextStatus::Timeout => WitStatus::Timeout,
            ContextStatus::Suspended => WitStatus::Suspended(error),
            ContextStatus::BudgetExceeded => WitStatus::BudgetExceeded(error),
            ContextStatus::Error => WitStatus::Error(error),
        },
        modified_files: result.modified_files,
        duration_ms: result.duration_ms,
    }
}
