//! A run's limits and request settings — the iteration limit, the system prompt, the
//! generation settings, compaction and the clearing of old outputs — and the budget cap
//! its model and model source draw on.

use std::sync::Arc;

use wonopcode_agent_loop::LoopConfig;
use wonopcode_agent_loop::budget::{BudgetedModel, CappedSource, RunBudget};
use wonopcode_contexts::AgentDefinition;
use wonopcode_protocol::{ModelSource, SharedModel};

use super::super::{DEFAULT_MAX_ITERATIONS, DEFAULT_SYSTEM_PROMPT, SessionBuilder};
use crate::config::{ClearSetting, Config};
use crate::error::SessionError;

/// The run's limits and request settings: the iteration limit, the system prompt, the
/// generation settings (the caller's over the agent file's over the config's over the
/// ambient ones, checked against the model), compaction and the clearing of old outputs.
pub(super) fn limits(
    builder: &SessionBuilder,
    agent_file: Option<&AgentDefinition>,
    provider: &SharedModel,
) -> Result<LoopConfig, SessionError> {
    let config = &builder.config;
    let ambient = match provider.info().capabilities.thinking {
        true => builder.ambient_generation,
        false => Default::default(),
    };
    let agent_generation = agent_file.map(|a| a.generation).unwrap_or_default();
    let request = builder
        .settings
        .generation
        .over(agent_generation)
        .over(config.generation())
        .over(ambient)
        .request_options(provider.info())
        .map_err(SessionError::Choice)?;
    let mut loop_config = LoopConfig {
        max_iterations: builder
            .settings
            .max_iterations
            .or(agent_file.and_then(|a| a.max_iterations))
            .or(config.max_iterations)
            .unwrap_or(DEFAULT_MAX_ITERATIONS),
        system_prompt: Some(system_prompt(&builder.settings, agent_file, config)),
        request,
        ..LoopConfig::default()
    };
    loop_config.compaction.max_messages = config.compact_after_messages;
    match config.clear_tool_outputs {
        Some(ClearSetting::Off) => loop_config.compaction.clear_tool_outputs = None,
        Some(ClearSetting::On(sizes)) => {
            loop_config.compaction.clear_tool_outputs = Some(sizes);
        }
        None => {}
    }
    Ok(loop_config)
}

/// The system prompt: `--system-prompt`, else the agent file's, the config's or the
/// default one; then `--append-system-prompt`.
pub(super) fn system_prompt(
    settings: &crate::Settings,
    agent_file: Option<&AgentDefinition>,
    config: &Config,
) -> String {
    let base = match (&settings.system_prompt, agent_file) {
        (Some(own), _) => own.clone(),
        (None, Some(agent)) => agent.system_prompt.clone(),
        (None, None) => config
            .system_prompt
            .clone()
            .unwrap_or_else(|| DEFAULT_SYSTEM_PROMPT.to_owned()),
    };
    match &settings.append_system_prompt {
        Some(added) => format!("{base}\n\n{added}"),
        None => base,
    }
}

/// The model and the source of the models it may switch to, both drawing on `budget` when
/// there is one; a model without prices under a cost limit is refused.
pub(super) fn capped(
    provider: SharedModel,
    models: Arc<dyn ModelSource>,
    budget: Option<Arc<RunBudget>>,
) -> Result<(SharedModel, Arc<dyn ModelSource>), SessionError> {
    let Some(budget) = budget else {
        return Ok((provider, models));
    };
    budget
        .check_model(provider.info())
        .map_err(SessionError::Choice)?;
    Ok((
        BudgetedModel::wrap(provider, budget.clone()),
        CappedSource::wrap(models, budget),
    ))
}
