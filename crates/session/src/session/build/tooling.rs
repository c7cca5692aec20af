//! The sandbox and what runs under it, set up before anything of the session is stored:
//! the built-in and optional tools, the MCP servers' configs, the permission rules checked
//! against the tools.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use wonopcode_agent_loop::ToolRegistry;
use wonopcode_hooks::HookEnv;
use wonopcode_mcp::ServerConfig;
use wonopcode_registry::Skills;
use wonopcode_sandbox::{Sandbox, SandboxPolicy};
use wonopcode_tools::permission::PolicyConfig;
use wonopcode_tools::{BuiltinOptions, WebSearchTool, register_builtins};

use super::super::SessionBuilder;
use crate::config::Config;
use crate::error::SessionError;
use crate::mcp;
use crate::skill_tool::SkillTool;

/// The sandbox and what runs under it: the built-in tools, the optional ones, the MCP
/// servers' configs (confined like commands, with the same environment: the run's secrets
/// stay out), and the permission rules checked against the tools.
pub(super) struct Tooling {
    pub(super) tools: ToolRegistry,
    pub(super) options: BuiltinOptions,
    pub(super) sandbox: Arc<Sandbox>,
    pub(super) sandbox_policy: SandboxPolicy,
    pub(super) command_env: Arc<std::collections::BTreeMap<String, String>>,
    pub(super) mcp_configs: Vec<ServerConfig>,
    pub(super) skill_tool: Option<Arc<SkillTool>>,
    pub(super) skill_warnings: Vec<String>,
}

impl Tooling {
    /// What the model is told of the machine and the moment, described off the build: its
    /// `git status` runs while the rest of the session is built.
    pub(super) fn describe_environment(&self, root: &Path) -> tokio::task::JoinHandle<String> {
        tokio::spawn(crate::environment::describe(
            root.to_path_buf(),
            HookEnv {
                workspace: root.to_path_buf(),
                env: Some(self.command_env.clone()),
                sandbox: Some(self.sandbox.clone()),
            },
        ))
    }

    /// The skills the run offers (none without a skill tool).
    pub(super) fn skills(&self) -> Arc<[wonopcode_registry::Skill]> {
        self.skill_tool
            .as_ref()
            .map_or_else(|| Arc::from([]), |tool| tool.skills().into())
    }

    /// Sets it up; a sandbox the kernel cannot enforce, or a rule for a tool the run lacks,
    /// is refused here, before anything is stored.
    pub(super) fn set_up(
        builder: &SessionBuilder,
        root: &Path,
        permissions: &PolicyConfig,
        trusted_scripts: Vec<PathBuf>,
    ) -> Result<Self, SessionError> {
        let config = &builder.config;
        let command_env = mcp::command_environment(config)?;
        let mut sandbox_policy = config.sandbox_policy(builder.settings.sandbox, root);
        sandbox_policy
            .write
            .extend(builder.settings.add_dirs.iter().cloned());
        sandbox_policy.read_only.extend(trusted_scripts);
        let sandbox = Sandbox::new(sandbox_policy.clone())
            .map(Arc::new)
            .map_err(|e| SessionError::Choice(e.to_string()))?;
        let mut options = BuiltinOptions {
            command_env: command_env.clone(),
            sandbox: Some(sandbox.clone()),
            ..BuiltinOptions::default()
        };
        if let Some(limit) = builder.settings.bash_timeout {
            options = options.with_bash_limit(limit);
        }
        let mut tools = ToolRegistry::new();
        register_builtins(&mut tools, options.clone())
            .map_err(|e| SessionError::Choice(format!("the built-in tools: {e}")))?;
        let skills = Skills::discover(root);
        let skill_tool = register_optional_tools(&mut tools, config, &skills)?;
        crate::stand_in::put(&mut tools, &builder.settings.tool_stand_ins)?;
        let mut servers = config.mcp_servers.clone();
        for (name, entry) in &builder.session_servers {
            if servers.insert(name.clone(), entry.clone()).is_some() {
                return Err(SessionError::Choice(format!(
                    "the MCP server name `{name}` is given twice (the session's and the config file's)"
                )));
            }
        }
        let mut mcp_configs = mcp::server_configs(&servers, &builder.settings.mcp)?;
        mcp::confine_servers(&mut mcp_configs, &sandbox_policy, root);
        check_rules(permissions, &tools)?;
        Ok(Self {
            tools,
            options,
            sandbox,
            sandbox_policy,
            command_env,
            mcp_configs,
            skill_tool,
            skill_warnings: skills.warnings,
        })
    }
}

/// A rule for a tool the run lacks, or with a path pattern that does not compile, would
/// match nothing: refused (MCP tools are not known until their servers start).
pub(super) fn check_rules(
    permissions: &PolicyConfig,
    tools: &ToolRegistry,
) -> Result<(), SessionError> {
    for rule in &permissions.rules {
        rule.check_pattern()
            .map_err(|e| SessionError::Choice(e.to_string()))?;
        if !mcp::names_a_server(&rule.tool) {
            rule.check_tool(tools.names())
                .map_err(|e| SessionError::Choice(e.to_string()))?;
        }
    }
    Ok(())
}

/// The tools a run has only when it is set up for them: `websearch` when the config names a
/// search engine, `skill` when there are skills (its description lists them). The skill
/// tool is returned too, for the contexts whose skills are narrowed.
pub(super) fn register_optional_tools(
    tools: &mut ToolRegistry,
    config: &Config,
    skills: &Skills,
) -> Result<Option<Arc<SkillTool>>, SessionError> {
    if let Some(engine) = &config.websearch {
        let tool = WebSearchTool::new(engine.clone(), &|name| std::env::var(name).ok())
            .map_err(SessionError::Choice)?;
        tools
            .register(Arc::new(tool))
            .map_err(|e| SessionError::Choice(format!("the websearch tool: {e}")))?;
    }
    let skill_tool = SkillTool::of(skills).map(Arc::new);
    if let Some(tool) = &skill_tool {
        tools
            .register(tool.clone())
            .map_err(|e| SessionError::Choice(format!("the skill tool: {e}")))?;
    }
    Ok(skill_tool)
}
