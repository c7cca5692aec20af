//! `wonopcode loops validate NAME` (`--validate-module`) for an agent file: there is no
//! module to compile, so what can be wrong is what the file names — a tool wonopcode does
//! not have, or a provider it does not know. Each check is a line, as a module's are; the
//! first that fails ends the report.

use serde_json::json;
use wonopcode_registry::Entry;
use wonopcode_registry::agent_file::DELEGATION_TOOLS;
use wonopcode_session::Config;
use wonopcode_session::models;
use wonopcode_tools::{BuiltinOptions, builtin_tools};
use wonopcode_wasm_host::AgentDefinition;

use crate::exit;

/// One check's name and outcome (`Err`: why it failed).
type Check = (&'static str, Result<String, String>);

/// Checks an agent file's entry and prints the report (JSON with `json`); the exit code.
pub fn validate(entry: &Entry, agent: &AgentDefinition, config: &Config, json: bool) -> u8 {
    let mut checks: Vec<Check> = vec![("agent file", Ok(format!("read {}", agent.file.display())))];
    checks.push(("tools", tools(entry, config)));
    if checks.iter().all(|(_, outcome)| outcome.is_ok()) {
        checks.push(("model", model(agent, config)));
    }
    if checks.iter().all(|(_, outcome)| outcome.is_ok()) && !agent.generation.is_unset() {
        checks.push(("generation", generation(agent, config)));
    }
    let valid = checks.iter().all(|(_, outcome)| outcome.is_ok());
    if json {
        let checks: Vec<_> = checks
            .iter()
            .map(|(check, outcome)| match outcome {
                Ok(detail) => json!({"check": check, "status": "ok", "detail": detail}),
                Err(reason) => json!({"check": check, "status": "failed", "detail": reason}),
            })
            .collect();
        let out = json!({
            "agent": agent.file,
            "name": agent.name,
            "valid": valid,
            "checks": checks,
        });
        println!("{out}");
    } else {
        println!("validating {}", agent.file.display());
        for (check, outcome) in &checks {
            match outcome {
                Ok(detail) => println!("  ok    {check:<16}  {detail}"),
                Err(reason) => println!("  FAIL  {check:<16}  {reason}"),
            }
        }
        if valid {
            println!("valid: agent `{}`", agent.name);
        } else {
            println!("invalid: the agent cannot run as written");
        }
    }
    if valid { exit::SUCCESS } else { exit::ERROR }
}

/// The file's tool list, each name one wonopcode has: a built-in tool, or a tool of an MCP
/// server of the config file or of the agent's own.
fn tools(entry: &Entry, config: &Config) -> Result<String, String> {
    let Some(listed) = &entry.context_tools.tools else {
        return Ok("all of its parent's".to_owned());
    };
    // The built-in tools, and those a run adds: delegation, skills, search.
    let builtin: Vec<String> = builtin_tools(BuiltinOptions::default())
        .iter()
        .map(|t| t.spec().name.clone())
        .chain(DELEGATION_TOOLS.iter().map(|n| (*n).to_owned()))
        .chain(["skill", "websearch"].map(str::to_owned))
        .collect();
    let servers: Vec<&str> = config
        .mcp_servers
        .keys()
        .chain(entry.context_tools.mcp_servers.keys())
        .map(String::as_str)
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
fn model(agent: &AgentDefinition, config: &Config) -> Result<String, String> {
    let Some(provider) = agent.provider.as_deref() else {
        return Ok(match &agent.model {
            Some(model) => format!("`{model}` of the provider its parent runs on"),
            None => "its parent's".to_owned(),
        });
    };
    let catalog = models::catalog(config).map_err(|e| e.to_string())?;
    let Some(entry) = catalog.get(provider) else {
        return Err(catalog.unknown_provider(provider).to_string());
    };
    Ok(match &agent.model {
        None => format!("{provider}, its default model"),
        Some(model) if entry.models.contains_key(model) => format!("{provider}/{model}"),
        Some(model) => format!("{provider}/{model} (not in the catalog: its cost is unknown)"),
    })
}

/// The file's `thinking`, `max-output-tokens` and `temperature`, checked against the model it
/// names the way a run checks them before its first request; a file that leaves the model to
/// its parent is checked when it is spawned, against the parent's.
fn generation(agent: &AgentDefinition, config: &Config) -> Result<String, String> {
    let Some(provider) = agent.provider.as_deref() else {
        return Ok("checked against its parent's model when it is spawned".to_owned());
    };
    let catalog = models::catalog(config).map_err(|e| e.to_string())?;
    let model = agent
        .model
        .clone()
        .or_else(|| catalog.get(provider).and_then(|e| e.default_model.clone()));
    let Some(info) = model.and_then(|model| catalog.model(provider, &model)) else {
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
