//! Checking an agent file before it runs (`wonopcode loops validate NAME`): there is no
//! module to compile, so what can be wrong is what the file names — a tool wonopcode does
//! not have, a provider it does not know, generation settings its model cannot take. Each
//! check is a line, as a module's are; the first that fails ends the report. What the
//! checks compare against (the run's tools, the config's servers, the model catalog) is
//! the caller's: this crate knows agent files, not tools or providers.

use wonopcode_contexts::AgentDefinition;
use wonopcode_protocol::ModelInfo;

use crate::Entry;
use crate::agent_file::DELEGATION_TOOLS;

/// One check's name and outcome (`Err`: why it failed).
pub type Check = (&'static str, Result<String, String>);

/// The models an agent file may name: the caller's catalog, seen through what the checks
/// ask of it.
pub trait ModelLookup {
    /// `Err` with one line saying the provider is unknown (and which are known).
    fn provider(&self, provider: &str) -> Result<(), String>;
    /// The provider's default model.
    fn default_model(&self, provider: &str) -> Option<String>;
    /// Whether the catalog lists `model` (with its prices) under `provider`.
    fn lists(&self, provider: &str, model: &str) -> bool;
    /// What the catalog says of `model` on `provider`.
    fn model(&self, provider: &str, model: &str) -> Option<ModelInfo>;
}

/// What the checks compare the file against.
pub struct Known<'a> {
    /// The built-in tools a run has (the delegation, skill and search tools are added).
    pub builtin_tools: Vec<String>,
    /// The MCP servers the config file defines.
    pub config_servers: Vec<&'a str>,
    /// The model catalog.
    pub models: &'a dyn ModelLookup,
}

/// Checks an agent file's entry: the file, its tools, its model, its generation settings.
pub fn check(entry: &Entry, agent: &AgentDefinition, known: &Known<'_>) -> Vec<Check> {
    let mut checks: Vec<Check> = vec![("agent file", Ok(format!("read {}", agent.file.display())))];
    checks.push(("tools", tools(entry, known)));
    let passing = |checks: &[Check]| checks.iter().all(|(_, outcome)| outcome.is_ok());
    if passing(&checks) {
        checks.push(("model", model(agent, known.models)));
    }
    if passing(&checks) && !agent.generation.is_unset() {
        checks.push(("generation", generation(agent, known.models)));
    }
    checks
}

/// The file's tool list, each name one wonopcode has: a built-in tool, or a tool of an MCP
/// server of the config file or of the agent's own.
fn tools(entry: &Entry, known: &Known<'_>) -> Result<String, String> {
    let Some(listed) = &entry.context_tools.tools else {
        return Ok("all of its parent's".to_owned());
    };
    // The built-in tools, and those a run adds: delegation, skills, search.
    let builtin: Vec<String> = known
        .builtin_tools
        .iter()
        .cloned()
        .chain(DELEGATION_TOOLS.iter().map(|n| (*n).to_owned()))
        .chain(wonopcode_agent_loop::OPTIONAL_TOOLS.map(str::to_owned))
        .collect();
    let servers: Vec<&str> = known
        .config_servers
        .iter()
        .copied()
        .chain(entry.context_tools.mcp_servers.keys().map(String::as_str))
        .collect();
    for name in listed {
        if let Some(rest) = name.strip_prefix("mcp__") {
            let server = rest.split("__").next().unwrap_or(rest);
            if !servers.contains(&server) {
                return Err(format!(
                    "`{name}` names the MCP server `{server}`, which neither the config file nor the agent defines"
                ));
            }
            continue;
        }
        if !builtin.contains(name) {
            let closest = builtin
                .iter()
                .map(|known| (strsim::levenshtein(known, name), known))
                .min()
                .filter(|(distance, _)| *distance <= 2)
                .map(|(_, known)| format!(" (did you mean `{known}`?)"))
                .unwrap_or_default();
            return Err(format!(
                "`{name}` is not a wonopcode tool{closest}; the tools are {}",
                builtin.join(", ")
            ));
        }
    }
    Ok(if listed.is_empty() {
        "none".to_owned()
    } else {
        listed.join(", ")
    })
}

/// The provider the file names is one wonopcode knows; a model outside its catalog works
/// on servers that take any id, at an unknown cost.
fn model(agent: &AgentDefinition, models: &dyn ModelLookup) -> Result<String, String> {
    let Some(provider) = agent.provider.as_deref() else {
        return Ok(match &agent.model {
            Some(model) => format!("`{model}` of the provider its parent runs on"),
            None => "its parent's".to_owned(),
        });
    };
    models.provider(provider)?;
    Ok(match &agent.model {
        None => format!("{provider}, its default model"),
        Some(model) if models.lists(provider, model) => format!("{provider}/{model}"),
        Some(model) => format!("{provider}/{model} (not in the catalog: its cost is unknown)"),
    })
}

/// The file's `thinking`, `max-output-tokens` and `temperature`, checked against the model it
/// names the way a run checks them before its first request; a file that leaves the model to
/// its parent is checked when it is spawned, against the parent's.
fn generation(agent: &AgentDefinition, models: &dyn ModelLookup) -> Result<String, String> {
    let Some(provider) = agent.provider.as_deref() else {
        return Ok("checked against its parent's model when it is spawned".to_owned());
    };
    let model = agent
        .model
        .clone()
        .or_else(|| models.default_model(provider));
    let Some(info) = model.and_then(|model| models.model(provider, &model)) else {
        return Ok("checked against the model the run picks".to_owned());
    };
    let options = agent.generation.request_options(&info)?;
    let mut said = Vec::new();
    if let Some(budget) = options.thinking_budget {
        said.push(format!("thinking {budget} tokens"));
    }
    if let Some(cap) = options.max_tokens {
        said.push(format!("at most {cap} output tokens"));
    }
    if let Some(t) = options.temperature {
        said.push(format!("temperature {t}"));
    }
    if said.is_empty() {
        said.push("thinking off".to_owned());
    }
    Ok(format!("{} for {provider}/{}", said.join(", "), info.id))
}
