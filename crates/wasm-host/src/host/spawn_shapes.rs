//! The WIT shapes of a spawn (`context-params`, `context-grants`, `context-generation`,
//! `context-result`) as the context tree's own (`wonopcode_contexts::spawn`), both ways.

use wonopcode_agent_loop::ContextStatus;
use wonopcode_agent_loop::generation::Generation;
use wonopcode_contexts::{
    ChildResult, ModuleRef, SpawnAsks, SpawnGrants, SpawnRequest, SpawnSandbox,
};

use crate::bindings::context::{
    ContextGeneration, ContextGrants, ContextModule, ContextParams, ContextResult,
    ContextStatus as WitStatus, TokenUsage,
};
use crate::bindings::storage::Attachment;
use crate::host::shapes::attachments_from_wit;

/// A guest's `context-params` as the tree's request.
pub(crate) fn request(params: ContextParams) -> SpawnRequest {
    SpawnRequest {
        module: match params.module {
            ContextModule::Same => ModuleRef::Same,
            ContextModule::Named(name) => ModuleRef::Named(name),
            ContextModule::Path(path) => ModuleRef::Path(path),
        },
        task: params.task,
        allowed_tools: params.allowed_tools,
        denied_tools: params.denied_tools,
        preferred_provider: params.preferred_provider,
        preferred_model: params.preferred_model,
        max_iterations: params.max_iterations,
        max_tokens: params.max_tokens,
        timeout_ms: params.timeout_ms,
        inherit_messages: params.inherit_messages,
        custom_data: params.custom_data,
        system_prompt: params.system_prompt,
        attachments: Vec::new(),
    }
}

/// A spawn that passes attachments (`spawn-with-attachments`, `start-with-attachments`):
/// its request, with them in its task's message, and what it asks for.
pub(crate) fn attached(
    params: ContextParams,
    with: Option<ContextGrants>,
    generation: Option<ContextGeneration>,
    attachments: Vec<Attachment>,
) -> Result<(SpawnRequest, SpawnAsks), String> {
    let asks = match generation {
        Some(generation) => generating(with, generation)?,
        None => granted(with),
    };
    let mut request = request(params);
    request.attachments = attachments_from_wit(attachments)?;
    Ok((request, asks))
}

/// The request a child was started with, as its guest reads it
/// (`context.get-context-params`).
pub(crate) fn wit_params(request: &SpawnRequest) -> ContextParams {
    let request = request.clone();
    ContextParams {
        module: match request.module {
            ModuleRef::Same => ContextModule::Same,
            ModuleRef::Named(name) => ContextModule::Named(name),
            ModuleRef::Path(path) => ContextModule::Path(path),
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

/// A spawn's grants split into the part the resolver checks (`None` for a sandbox that asks
/// for nothing) and the cost limit the tree keeps.
fn grants(grants: ContextGrants) -> SpawnGrants {
    let sandbox = SpawnSandbox {
        mode: grants.sandbox,
        write: grants.write,
        read: grants.read,
        network: grants.network,
        max_processes: grants.max_processes,
    };
    SpawnGrants {
        sandbox: (!sandbox.is_empty()).then_some(sandbox),
        max_cost_usd: grants.max_cost_usd,
    }
}

/// What a spawn asks for when it names grants alone.
pub(crate) fn granted(with: Option<ContextGrants>) -> SpawnAsks {
    SpawnAsks::granted(with.map(grants))
}

/// What a spawn asks for with generation settings too (a thinking setting that is not one
/// is one line).
pub(crate) fn generating(
    with: Option<ContextGrants>,
    generation: ContextGeneration,
) -> Result<SpawnAsks, String> {
    let thinking = generation
        .thinking
        .as_deref()
        .map(str::parse)
        .transpose()
        .map_err(|e: String| format!("generation: {e}"))?;
    Ok(SpawnAsks {
        grants: with.map(grants),
        generation: Generation {
            thinking,
            max_output_tokens: generation.max_output_tokens,
            temperature: generation.temperature,
        },
    })
}

/// A child's result as its guest parent reads it: its input tokens count what was read
/// from and written to the cache too, and its status is the 0.2 WIT's.
pub(crate) fn wit_result(result: ChildResult) -> ContextResult {
    let (status, error) = result.reported();
    let usage = result.usage;
    ContextResult {
        response: result.response,
        data: result.data,
        usage: TokenUsage {
            input_tokens: usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens,
            output_tokens: usage.output_tokens,
            total_cost_microcents: usage.cost_micro_cents,
        },
        status: match status {
            ContextStatus::Completed => WitStatus::Completed,
            ContextStatus::Cancelled => WitStatus::Cancelled,
            ContextStatus::MaxIterationsReached => WitStatus::MaxIterationsReached,
            ContextStatus::TokenLimitReached => WitStatus::TokenLimitReached,
            ContextStatus::Timeout => WitStatus::Timeout,
            _ => WitStatus::Error(error.unwrap_or_default()),
        },
        modified_files: result.modified_files,
        duration_ms: result.duration_ms,
    }
}
