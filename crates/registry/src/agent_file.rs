//! Agent files: a specialist written as Markdown, the way Claude Code users write subagents.
//!
//! ```markdown
//! ---
//! name: reviewer
//! description: Reviews a change for bugs and missing tests
//! tools: Read, Grep, Glob          # or a list; wonopcode's names (read, grep) work too
//! model: haiku                     # inherit, sonnet, opus, haiku, or a model id
//! provider: anthropic              # wonopcode's: the provider of `model`
//! max-iterations: 20               # Claude Code's `maxTurns` too
//! max-tokens: 200000
//! timeout: 5m
//! thinking: high                   # wonopcode's: off, low, medium, high or tokens
//! max-output-tokens: 8000          # wonopcode's
//! temperature: 0.2                 # wonopcode's
//! grants: { sandbox: read-only, max_cost: 0.50 }
//! skills: [release-notes]          # the only skills it sees
//! hooks:                            # its own, as Claude Code's (`Stop` also when it ends
//!   PreToolUse:                     # as a child)
//!     - matcher: Bash
//!       hooks: [{type: command, command: ./check.sh}]
//! ---
//! You are a careful reviewer. ...
//! ```
//!
//! The body is the system prompt. Claude Code's tool names and model aliases map to
//! wonopcode's (`docs/agents.md` has the table); fields wonopcode does not use are listed once
//! as ignored, never silently dropped. Bad front matter is one line naming the file and line.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use wonopcode_agent_loop::budget::tighter;
use wonopcode_contexts::AgentDefinition;
use wonopcode_protocol::generation::{Generation, Thinking};

use crate::error::RegistryError;
use crate::file::{ModuleTools, RawGrants, ScopedHooks, read_text, yaml_error};

/// A parsed agent file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentFile {
    /// What it runs with.
    pub definition: AgentDefinition,
    /// When to use it.
    pub description: Option<String>,
    /// Its tool allowlist, MCP servers and grants, as a registry module's.
    pub context_tools: ModuleTools,
    /// What was left out or ignored, one line each.
    pub warnings: Vec<String>,
}

/// The tools a context delegates with; Claude Code's `Task` (or `Agent`) is all of them.
pub const DELEGATION_TOOLS: &[&str] = &wonopcode_contexts::DELEGATION_TOOLS;

/// Claude Code's model aliases and the Anthropic models they stand for.
const CLAUDE_MODELS: &[(&str, &str)] = &[
    ("sonnet", "claude-sonnet-4-5"),
    ("opus", "claude-opus-4-5"),
    ("haiku", "claude-haiku-4-5"),
];

#[derive(Deserialize)]
struct RawAgent {
    name: Option<String>,
    description: Option<String>,
    tools: Option<NameList>,
    #[serde(rename = "disallowed-tools", alias = "disallowedTools")]
    disallowed_tools: Option<NameList>,
    model: Option<String>,
    provider: Option<String>,
    #[serde(rename = "max-iterations", alias = "maxTurns")]
    max_iterations: Option<u32>,
    #[serde(rename = "max-tokens")]
    max_tokens: Option<u64>,
    timeout: Option<Timeout>,
    thinking: Option<Thinking>,
    #[serde(rename = "max-output-tokens")]
    max_output_tokens: Option<u32>,
    temperature: Option<f32>,
    grants: Option<RawGrants>,
    #[serde(rename = "mcp-servers", alias = "mcpServers")]
    mcp_servers: Option<McpServers>,
    skills: Option<NameList>,
    hooks: Option<serde_json::Value>,
    #[serde(flatten)]
    unknown: BTreeMap<String, serde_yaml::Value>,
}

/// Claude Code writes a tool list as one comma-separated string; YAML lists work too.
#[derive(Deserialize)]
#[serde(untagged)]
enum NameList {
    One(String),
    Many(Vec<String>),
}

impl NameList {
    fn names(self) -> Vec<String> {
        match self {
            Self::One(text) => text
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect(),
            Self::Many(names) => names,
        }
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Timeout {
    Seconds(u64),
    Text(String),
}

/// wonopcode's map of servers (as in the config file), or Claude Code's list of server names
/// (servers the run already has) and inline `{name: config}` entries.
#[derive(Deserialize)]
#[serde(untagged)]
enum McpServers {
    Map(serde_json::Map<String, serde_json::Value>),
    List(Vec<McpServerRef>),
}

#[derive(Deserialize)]
#[serde(untagged)]
enum McpServerRef {
    Name(String),
    Inline(serde_json::Map<String, serde_json::Value>),
}

impl AgentFile {
    /// Reads and parses `path`.
    pub fn load(path: &Path) -> Result<Self, RegistryError> {
        Self::parse(&read_text(path)?, path)
    }

    /// Parses an agent file's text; `path` names it in messages and gives the default name
    /// (its stem).
    pub fn parse(text: &str, path: &Path) -> Result<Self, RegistryError> {
        let at = |line: usize, reason: String| RegistryError::File {
            at: format!("{}:{line}", path.display()),
            reason,
        };
        let (front, body) = split_front_matter(text).ok_or_else(|| {
            at(
                1,
                "an agent file starts with front matter between `---` lines (name, description, tools, model)".to_owned(),
            )
        })?;
        // The front matter's first line is the file's second.
        let line_of = |key: &str| {
            front
                .lines()
                .position(|l| l.trim_start().starts_with(&format!("{key}:")))
                .map_or(1, |i| i + 2)
        };
        let raw: RawAgent = if front.trim().is_empty() {
            serde_yaml::from_str("{}")
        } else {
            serde_yaml::from_str(front)
        }
        .map_err(|e| yaml_error(path, &e, 1))?;
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        let name = raw.name.unwrap_or_else(|| stem.to_owned());
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        {
            return Err(at(
                line_of("name"),
                format!("`name: {name}`: use letters, digits, `-`, `_` and `.` only"),
            ));
        }
        let system_prompt = body.trim().to_owned();
        if system_prompt.is_empty() {
            return Err(at(
                front.lines().count() + 3,
                "the body, the agent's system prompt, is empty".to_owned(),
            ));
        }
        let mut warnings = Vec::new();
        let warn = |warnings: &mut Vec<String>, line: String| {
            warnings.push(format!("{}: {line}", path.display()));
        };
        let mut allowlist = raw.tools.map(|list| {
            let mut names = Vec::new();
            for written in list.names() {
                match map_tool(&written) {
                    Ok(mapped) => names.extend(mapped.iter().map(|s| s.to_string())),
                    Err(why) => warn(&mut warnings, format!("tools: {why}")),
                }
            }
            names.dedup();
            names
        });
        let denied: Vec<String> = raw
            .disallowed_tools
            .map(NameList::names)
            .unwrap_or_default()
            .iter()
            // Denying more than was written is the safe side: `Bash(rm:*)` denies `bash`.
            .flat_map(|written| map_tool(written).unwrap_or_else(|_| map_tool_base(written)))
            .map(|s| s.to_string())
            .collect();
        let mut mcp_servers = serde_json::Map::new();
        match raw.mcp_servers {
            None => {}
            Some(McpServers::Map(map)) => mcp_servers = map,
            Some(McpServers::List(list)) => {
                for server in list {
                    match server {
                        // A server the run has: the agent may use its tools.
                        McpServerRef::Name(name) => {
                            if let Some(names) = &mut allowlist {
                                names.push(format!("mcp__{name}"));
                            }
                        }
                        McpServerRef::Inline(map) => mcp_servers.extend(map),
                    }
                }
            }
        }
        let (tools, mut grants) =
            RawGrants::merge(raw.grants, allowlist).map_err(|e| at(line_of("grants"), e))?;
        grants.max_tokens = tighter(grants.max_tokens, raw.max_tokens);
        let (provider, model) = match raw.model.as_deref().map(str::trim) {
            None | Some("inherit") => (raw.provider, None),
            Some(alias) => match CLAUDE_MODELS.iter().find(|(a, _)| *a == alias) {
                Some((_, id)) if raw.provider.is_none() => {
                    (Some("anthropic".to_owned()), Some((*id).to_owned()))
                }
                _ => (raw.provider, Some(alias.to_owned())),
            },
        };
        let timeout_ms = match raw.timeout {
            None => None,
            Some(Timeout::Seconds(s)) => Some(s.saturating_mul(1000)),
            Some(Timeout::Text(text)) => Some(
                humantime::parse_duration(&text)
                    .map_err(|e| {
                        at(
                            line_of("timeout"),
                            format!("`timeout: {text}`: {e} (write it as `90s` or `5m`)"),
                        )
                    })?
                    .as_millis()
                    .try_into()
                    .unwrap_or(u64::MAX),
            ),
        };
        if timeout_ms == Some(0) || raw.max_iterations == Some(0) {
            let key = if timeout_ms == Some(0) {
                "timeout"
            } else {
                "max-iterations"
            };
            return Err(at(line_of(key), format!("`{key}` must be more than 0")));
        }
        if !raw.unknown.is_empty() {
            let keys: Vec<&str> = raw.unknown.keys().map(String::as_str).collect();
            warn(
                &mut warnings,
                format!(
                    "fields wonopcode does not use, ignored: {}",
                    keys.join(", ")
                ),
            );
        }
        Ok(Self {
            definition: AgentDefinition {
                name,
                file: path.to_path_buf(),
                system_prompt,
                provider,
                model,
                max_iterations: raw.max_iterations,
                timeout_ms,
                denied_tools: denied,
                generation: Generation {
                    thinking: raw.thinking,
                    max_output_tokens: raw.max_output_tokens,
                    temperature: raw.temperature,
                },
            },
            description: raw.description.map(|d| d.trim().to_owned()),
            context_tools: ModuleTools {
                mcp_servers,
                tools,
                grants,
                skills: raw.skills.map(NameList::names),
                hooks: raw.hooks.map(|table| ScopedHooks {
                    table,
                    file: path.to_path_buf(),
                    from_workspace: false,
                }),
                // An agent's are its definition's, which reach a root run too.
                generation: Generation::default(),
            },
            warnings,
        })
    }
}

/// The front matter and the body of `text`: the lines between a first line `---` and the
/// next `---` line, and what follows. Agent files and skills are written this way.
pub(crate) fn split_front_matter(text: &str) -> Option<(&str, &str)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Some((&rest[..offset], &rest[offset + line.len()..]));
        }
        offset += line.len();
    }
    None
}

/// wonopcode's tools for a tool name as an agent file writes it: wonopcode's own names and
/// MCP tools as they are, Claude Code's mapped. `Err`: why it is left out.
fn map_tool(written: &str) -> Result<Vec<&str>, String> {
    if written.contains('(') {
        return Err(format!(
            "`{written}` is left out: wonopcode grants a tool whole, not for some of its arguments; write `{}` to grant it (and narrow it with permission rules)",
            written.split('(').next().unwrap_or(written).trim()
        ));
    }
    // Claude Code's `Task` (or `Agent`) is every delegation tool.
    if matches!(written, "Task" | "Agent") {
        return Ok(DELEGATION_TOOLS.to_vec());
    }
    if let Some(mapped) = wonopcode_protocol::claude_code::wonopcode_tool(written) {
        return Ok(vec![mapped]);
    }
    if written.starts_with(|c: char| c.is_ascii_uppercase()) {
        return Err(format!(
            "`{written}` has no counterpart in wonopcode and is left out"
        ));
    }
    Ok(vec![written])
}

/// The tools of `written` without its parenthesized part (`Bash(rm:*)` → `bash`).
fn map_tool_base(written: &str) -> Vec<&str> {
    let base = written.split('(').next().unwrap_or(written).trim();
    map_tool(base).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<AgentFile, String> {
        AgentFile::parse(text, Path::new("/p/.claude/agents/code-reviewer.md"))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_claude_code_subagent_maps_to_wonopcode() {
        let agent = parse(
            "---\nname: code-reviewer\ndescription: Expert code reviewer. Use PROACTIVELY.\ntools: Read, Grep, Glob, Bash, NotebookEdit, mcp__github__get_pr\nmodel: sonnet\ncolor: red\npermissionMode: default\n---\n\nYou are a senior code reviewer.\n",
        )
        .unwrap();
        let d = &agent.definition;
        assert_eq!(d.name, "code-reviewer");
        assert_eq!(d.system_prompt, "You are a senior code reviewer.");
        assert_eq!(d.provider.as_deref(), Some("anthropic"));
        assert_eq!(d.model.as_deref(), Some("claude-sonnet-4-5"));
        assert_eq!(
            agent.context_tools.tools.as_deref(),
            Some(&["read", "grep", "glob", "bash", "mcp__github__get_pr"].map(String::from)[..])
        );
        assert_eq!(
            agent.description.as_deref(),
            Some("Expert code reviewer. Use PROACTIVELY.")
        );
        assert_eq!(agent.warnings.len(), 2, "{:?}", agent.warnings);
        assert!(agent.warnings[0].contains("`NotebookEdit` has no counterpart"));
        assert!(
            agent.warnings[1].ends_with("ignored: color, permissionMode"),
            "{:?}",
            agent.warnings
        );
    }

    #[test]
    fn wonopcode_fields_and_defaults() {
        let agent = AgentFile::parse(
            "---\ntools: [read, grep]\ndisallowedTools: Bash(rm:*)\nprovider: openai\nmodel: gpt-4.1-mini\nmaxTurns: 7\nmax-tokens: 5000\ntimeout: 90s\ngrants: {sandbox: read-only, max_tokens: 4000}\n---\nResearch.\n",
            Path::new("/a/researcher.md"),
        )
        .unwrap();
        let d = &agent.definition;
        assert_eq!(d.name, "researcher", "the stem names it");
        assert_eq!(d.max_iterations, Some(7));
        assert_eq!(d.timeout_ms, Some(90_000));
        assert_eq!(d.denied_tools, vec!["bash"]);
        assert_eq!(
            (d.provider.as_deref(), d.model.as_deref()),
            (Some("openai"), Some("gpt-4.1-mini"))
        );
        assert_eq!(agent.context_tools.grants.max_tokens, Some(4000));
        assert!(agent.context_tools.grants.sandbox.is_some());
        assert!(agent.warnings.is_empty(), "{:?}", agent.warnings);
        let inherit = parse("---\nmodel: inherit\n---\nx").unwrap();
        assert_eq!(inherit.definition.model_choice("ollama"), None);
    }

    #[test]
    fn generation_settings_are_read_and_a_bad_level_names_its_line() {
        let agent =
            parse("---\nthinking: high\nmax-output-tokens: 8000\ntemperature: 0.2\n---\nThink.\n")
                .unwrap();
        assert_eq!(
            agent.definition.generation,
            Generation {
                thinking: Some(Thinking::High),
                max_output_tokens: Some(8000),
                temperature: Some(0.2),
            }
        );
        assert!(agent.warnings.is_empty(), "{:?}", agent.warnings);
        let tokens = parse("---\nthinking: 5000\n---\nThink.\n").unwrap();
        assert_eq!(
            tokens.definition.generation.thinking,
            Some(Thinking::Tokens(5000))
        );
        let bad = parse("---\nname: x\nthinking: lots\n---\nThink.\n").unwrap_err();
        assert!(
            bad.contains("code-reviewer.md") && bad.contains("off, low, medium, high"),
            "{bad}"
        );
    }

    #[test]
    fn delegation_and_patterns() {
        let agent = parse("---\ntools: Task, Bash(git diff:*), read\n---\nx").unwrap();
        let tools = agent.context_tools.tools.unwrap();
        assert!(tools.contains(&"spawn_agent".to_owned()));
        assert!(
            !tools.contains(&"bash".to_owned()),
            "a narrowed Bash is left out"
        );
        assert!(agent.warnings[0].contains("write `Bash` to grant it"));
    }

    #[test]
    fn bad_files_say_where() {
        for (text, says) in [
            (
                "no front matter",
                "code-reviewer.md:1: an agent file starts with front matter",
            ),
            ("---\nname: x\n", "code-reviewer.md:1: an agent file starts"),
            ("---\nname: [x\n---\nbody", "code-reviewer.md:2"),
            (
                "---\ndescription: d\nname: a b\n---\nbody",
                "code-reviewer.md:3: `name: a b`",
            ),
            ("---\nmaxTurns: many\n---\nbody", "code-reviewer.md:2"),
            (
                "---\ntimeout: soon\n---\nbody",
                "code-reviewer.md:2: `timeout: soon`",
            ),
            ("---\nname: a\n---\n\n", "code-reviewer.md:4: the body"),
            (
                "---\ngrants: {max_cost: -1}\n---\nx",
                "code-reviewer.md:2: grants.max_cost",
            ),
        ] {
            let error = parse(text).unwrap_err();
            assert!(error.contains(says), "{text:?}: {error}");
            assert!(!error.contains('\n'), "one line: {error}");
        }
    }

    #[test]
    fn claude_code_server_lists() {
        let agent = parse(
            "---\ntools: [read]\nmcpServers:\n  - github\n  - docs: {command: docs-mcp}\n---\nx",
        )
        .unwrap();
        assert_eq!(
            agent.context_tools.tools.as_deref(),
            Some(&["read".to_owned(), "mcp__github".to_owned()][..])
        );
        assert!(agent.context_tools.mcp_servers.contains_key("docs"));
    }
}
