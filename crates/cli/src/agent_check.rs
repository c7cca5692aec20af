//! `wonopcode loops validate NAME` (`--validate-module`) for an agent file: the checks are
//! the registry's (`wonopcode_registry::agent_check`); here they are given the run's
//! built-in tools, the config's MCP servers and the model catalog, and printed a line each,
//! as a module's are.

use serde_json::json;
use wonopcode_contexts::AgentDefinition;
use wonopcode_protocol::ModelInfo;
use wonopcode_providers::catalog::ModelCatalog;
use wonopcode_registry::Entry;
use wonopcode_registry::agent_check::{self, Known, ModelLookup};
use wonopcode_session::Config;
use wonopcode_session::models;
use wonopcode_tools::{BuiltinOptions, builtin_tools};

use crate::exit;

/// Checks an agent file's entry and prints the report (JSON with `json`); the exit code.
pub fn validate(entry: &Entry, agent: &AgentDefinition, config: &Config, json: bool) -> u8 {
    let catalog = models::catalog(config).map_err(|e| e.to_string());
    let models = Models(catalog.as_ref());
    let known = Known {
        builtin_tools: builtin_tools(BuiltinOptions::default())
            .iter()
            .map(|t| t.spec().name.clone())
            .collect(),
        config_servers: config.mcp_servers.keys().map(String::as_str).collect(),
        models: &models,
    };
    let checks = agent_check::check(entry, agent, &known);
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

/// The model catalog as the checks see it (or why it could not be read).
struct Models<'a>(Result<&'a ModelCatalog, &'a String>);

impl ModelLookup for Models<'_> {
    fn provider(&self, provider: &str) -> Result<(), String> {
        let catalog = self.0.map_err(Clone::clone)?;
        match catalog.get(provider) {
            Some(_) => Ok(()),
            None => Err(catalog.unknown_provider(provider).to_string()),
        }
    }

    fn default_model(&self, provider: &str) -> Option<String> {
        self.0.ok()?.get(provider)?.default_model.clone()
    }

    fn lists(&self, provider: &str, model: &str) -> bool {
        self.0
            .ok()
            .and_then(|c| c.get(provider))
            .is_some_and(|e| e.models.contains_key(model))
    }

    fn model(&self, provider: &str, model: &str) -> Option<ModelInfo> {
        self.0.ok()?.model(provider, model)
    }
}
