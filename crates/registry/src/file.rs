//! `registry.yaml`:
//!
//! ```yaml
//! modules:
//!   my-loop:
//!     path: /path/to/my-loop.wasm
//!     description: "My custom agent loop"
//!     version: "1.0.0"
//!   published:
//!     path: oci://ghcr.io/acme/loops/planner:1.2   # fetched when used (`crates/oci`)
//! ```
//!
//! A module may also give its contexts MCP servers of their own and an allowlist of tools:
//!
//! ```yaml
//!     mcp_servers:
//!       docs: { command: docs-mcp, args: [--read-only] }
//!     tools: [read, grep, mcp__docs]
//!     skills: [release-notes]        # the only skills its contexts see
//! ```
//!
//! and grants that narrow what its contexts may do (`docs/grants.md`):
//!
//! ```yaml
//!     grants:
//!       sandbox: read-only        # or a policy: {mode, write, read, network, ...}
//!       max_cost: 0.50            # dollars, for the context and its descendants
//!       max_tokens: 200000
//! ```
//!
//! and hooks of its own, in the shape of the config file's `hooks:` (`docs/hooks.md`), asked
//! in its contexts after the hooks they inherit:
//!
//! ```yaml
//!     hooks:
//!       PreToolUse:
//!         - matcher: Bash
//!           hooks: [{type: command, command: ./guard.sh}]
//! ```
//!
//! and generation settings for its contexts' models, as the flags of the same names
//! (`docs/providers.md`); what it leaves unset is its parent's:
//!
//! ```yaml
//!     thinking: medium             # off, low, medium, high or tokens
//!     max_output_tokens: 8000
//!     temperature: 0.2
//! ```
//!
//! Relative paths resolve against the file's directory. Unknown keys are reported as
//! warnings, never silently ignored; a file that does not parse is an error naming the file,
//! line and column.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use wonopcode_contexts::LoopSource;
use wonopcode_oci::OciRef;
use wonopcode_protocol::generation::{Generation, Thinking};
use wonopcode_sandbox::SandboxPolicy;

use crate::error::RegistryError;

/// The file name looked for in each directory.
pub const FILE_NAME: &str = "registry.yaml";

/// The names under `modules` in file order, refused when one repeats. (A map deserializes
/// with the last duplicate winning, and `flatten` hides the position; this pass streams, so
/// a duplicate is reported with a position.)
struct UniqueNames(Vec<String>);

impl<'de> Deserialize<'de> for UniqueNames {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Names;
        impl<'de> serde::de::Visitor<'de> for Names {
            type Value = UniqueNames;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a map of module names")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<UniqueNames, A::Error> {
                let mut seen = Vec::new();
                while let Some(name) = map.next_key::<String>()? {
                    if seen.contains(&name) {
                        return Err(serde::de::Error::custom(format!(
                            "module `{name}` is defined twice"
                        )));
                    }
                    map.next_value::<serde::de::IgnoredAny>()?;
                    seen.push(name);
                }
                Ok(UniqueNames(seen))
            }
        }
        deserializer.deserialize_map(Names)
    }
}

#[derive(Deserialize)]
struct NameCheck {
    #[serde(default)]
    modules: Option<UniqueNames>,
}

#[derive(Deserialize)]
struct RawFile {
    #[serde(default)]
    modules: BTreeMap<String, RawModule>,
    #[serde(flatten)]
    unknown: BTreeMap<String, serde_yaml::Value>,
}

#[derive(Deserialize)]
struct RawModule {
    path: PathBuf,
    description: Option<String>,
    version: Option<String>,
    input_schema: Option<serde_json::Value>,
    mcp_servers: Option<serde_json::Map<String, serde_json::Value>>,
    tools: Option<Vec<String>>,
    grants: Option<RawGrants>,
    skills: Option<Vec<String>>,
    hooks: Option<serde_json::Value>,
    thinking: Option<Thinking>,
    max_output_tokens: Option<u32>,
    temperature: Option<f32>,
    #[serde(flatten)]
    unknown: BTreeMap<String, serde_yaml::Value>,
}

/// `grants:` as written; `tools` may be given here or beside it, not both.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawGrants {
    tools: Option<Vec<String>>,
    #[serde(default, deserialize_with = "SandboxPolicy::optional_mode_or_policy")]
    sandbox: Option<SandboxPolicy>,
    max_cost: Option<f64>,
    max_tokens: Option<u64>,
}

impl RawGrants {
    /// The allowlist and grants of a module (or agent) whose `tools` may be given beside
    /// `grants` or in it, not both; a cost limit is checked.
    pub(crate) fn merge(
        grants: Option<Self>,
        tools: Option<Vec<String>>,
    ) -> Result<(Option<Vec<String>>, ModuleGrants), String> {
        let Some(grants) = grants else {
            return Ok((tools, ModuleGrants::default()));
        };
        if grants.tools.is_some() && tools.is_some() {
            return Err("`tools` is given twice, beside `grants` and in it: keep one".into());
        }
        if let Some(max) = grants.max_cost {
            wonopcode_agent_loop::budget::micro_cents(max)
                .map_err(|e| format!("grants.max_cost: {e}"))?;
        }
        Ok((
            grants.tools.or(tools),
            ModuleGrants {
                sandbox: grants.sandbox,
                max_cost: grants.max_cost,
                max_tokens: grants.max_tokens,
            },
        ))
    }
}

/// One module of a registry file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEntry {
    /// Its name (the key under `modules`).
    pub name: String,
    /// The component: a file, resolved against the registry file's directory, or a module
    /// published to an OCI registry (`path: oci://HOST/REPO:TAG`).
    pub location: LoopSource,
    /// What it does.
    pub description: Option<String>,
    /// Its version, as the author gave it.
    pub version: Option<String>,
    /// What it takes when served as an MCP tool, when not a prompt.
    pub input_schema: Option<InputSchema>,
    /// The MCP servers and the tool allowlist of the contexts that run it.
    pub context_tools: ModuleTools,
}

/// What a module's contexts get besides what their parent lets them have: MCP servers of
/// their own (`mcp_servers`, entries as in the config file), started when such a context
/// starts and stopped when it ends; and `tools`, the only tools they may use (of their
/// parent's and their own servers').
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ModuleTools {
    /// `mcp_servers`, as written (checked when a context starts them).
    #[serde(skip_serializing_if = "serde_json::Map::is_empty")]
    pub mcp_servers: serde_json::Map<String, serde_json::Value>,
    /// `tools`: names of tools (`mcp__SERVER` names every tool of a server); `None`: all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// `grants`: the sandbox and limits its contexts are narrowed to.
    #[serde(skip_serializing_if = "ModuleGrants::is_empty")]
    pub grants: ModuleGrants,
    /// `skills`: the only skills its contexts see; `None`: all of them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skills: Option<Vec<String>>,
    /// `hooks`: hooks asked in its contexts after the ones they inherit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hooks: Option<ScopedHooks>,
    /// `thinking`, `max_output_tokens`, `temperature`: its contexts' generation settings
    /// over their parent's.
    #[serde(skip_serializing_if = "Generation::is_unset")]
    pub generation: Generation,
}

/// A module's or an agent's own hook table, as written (checked when a context of it
/// starts), and the file it is in (for messages and relative paths).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScopedHooks {
    /// The table, in the shape of the config file's `hooks:`.
    pub table: serde_json::Value,
    /// The registry or agent file it is written in.
    pub file: PathBuf,
    /// Whether that file is the workspace's (its hooks may refuse, never approve).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub from_workspace: bool,
}

// JSON values parsed by serde_json hold no NaN, and a cost limit is checked finite, so
// equality is an equivalence.
impl Eq for ModuleTools {}

impl ModuleTools {
    /// Whether the module adds or restricts nothing.
    pub fn is_empty(&self) -> bool {
        self.mcp_servers.is_empty()
            && self.tools.is_none()
            && self.grants.is_empty()
            && self.skills.is_none()
            && self.hooks.is_none()
            && self.generation.is_unset()
    }
}

/// What `registry.yaml` grants a module's contexts besides tools: a sandbox policy (paths
/// relative to the workspace, `~/` the home directory) that must be within the parent
/// context's, and limits on what the context and its descendants spend.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ModuleGrants {
    /// The sandbox its commands and MCP servers run in; `None`: its parent's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxPolicy>,
    /// Dollars it may spend (more than 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_cost: Option<f64>,
    /// Tokens it may spend.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
}

impl ModuleGrants {
    /// Whether it narrows nothing.
    pub fn is_empty(&self) -> bool {
        self == &Self::default()
    }
}

/// The JSON Schema of a module's input (`input_schema` in `registry.yaml`): served as an
/// MCP tool (`wonopcode mcp-server`), the module takes arguments of this shape instead of
/// a prompt. Always an object schema (`"type": "object"`), as MCP requires.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InputSchema(pub serde_json::Map<String, serde_json::Value>);

// JSON values parsed by serde_json hold no NaN, so their equality is an equivalence.
impl Eq for InputSchema {}

impl InputSchema {
    /// Checks that `value` is an object schema; the error says what it is instead.
    fn new(value: serde_json::Value) -> Result<Self, String> {
        match value {
            serde_json::Value::Object(map)
                if map.get("type") == Some(&serde_json::Value::from("object")) =>
            {
                Ok(Self(map))
            }
            serde_json::Value::Object(_) => {
                Err("`input_schema` must say `type: object` (MCP tools take an object)".to_owned())
            }
            other => Err(format!(
                "`input_schema` must be a JSON Schema object, not `{other}`"
            )),
        }
    }
}

/// A parsed registry file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RegistryFile {
    /// Modules, in file order.
    pub modules: Vec<FileEntry>,
    /// Unknown keys, one line each.
    pub warnings: Vec<String>,
}

impl RegistryFile {
    /// Reads and parses `path`.
    pub fn load(path: &Path) -> Result<Self, RegistryError> {
        Self::parse(&read_text(path)?, path)
    }

    /// Parses registry text; `path` locates it (relative module paths resolve against its
    /// directory) and names it in messages.
    pub fn parse(text: &str, path: &Path) -> Result<Self, RegistryError> {
        if text.trim().is_empty() {
            return Ok(Self::default());
        }
        let error = |e: serde_yaml::Error| yaml_error(path, &e, 0);
        let order = serde_yaml::from_str::<NameCheck>(text)
            .map_err(error)?
            .modules
            .map(|names| names.0)
            .unwrap_or_default();
        let mut raw: RawFile = serde_yaml::from_str(text).map_err(error)?;
        let base = path.parent().unwrap_or(Path::new("."));
        let mut warnings: Vec<String> = raw
            .unknown
            .keys()
            .map(|k| format!("{}: unknown key `{k}` ignored", path.display()))
            .collect();
        let mut modules = Vec::with_capacity(raw.modules.len());
        for name in order {
            let Some(module) = raw.modules.remove(&name) else {
                continue;
            };
            warnings.extend(module.unknown.keys().map(|k| {
                format!(
                    "{}: module `{name}`: unknown key `{k}` ignored",
                    path.display()
                )
            }));
            let input_schema = match module.input_schema {
                Some(value) => {
                    Some(
                        InputSchema::new(value).map_err(|reason| RegistryError::File {
                            at: path.display().to_string(),
                            reason: format!("module `{name}`: {reason}"),
                        })?,
                    )
                }
                None => None,
            };
            let refused = |reason: String| RegistryError::File {
                at: path.display().to_string(),
                reason: format!("module `{name}`: {reason}"),
            };
            let (tools, grants) = RawGrants::merge(module.grants, module.tools).map_err(refused)?;
            let location = match module.path.to_str() {
                Some(text) if OciRef::is_reference(text) => {
                    OciRef::parse(text).map_err(|e| refused(e.to_string()))?;
                    LoopSource::Oci(text.to_owned())
                }
                _ => LoopSource::File(base.join(&module.path)),
            };
            modules.push(FileEntry {
                location,
                name,
                description: module.description,
                version: module.version,
                input_schema,
                context_tools: ModuleTools {
                    mcp_servers: module.mcp_servers.unwrap_or_default(),
                    tools,
                    grants,
                    skills: module.skills,
                    hooks: module.hooks.map(|table| ScopedHooks {
                        table,
                        file: path.to_path_buf(),
                        from_workspace: false,
                    }),
                    generation: Generation {
                        thinking: module.thinking,
                        max_output_tokens: module.max_output_tokens,
                        temperature: module.temperature,
                    },
                },
            });
        }
        Ok(Self { modules, warnings })
    }
}

/// The text of a file the registry reads (a registry or agent file), or one line naming it.
pub(crate) fn read_text(path: &Path) -> Result<String, RegistryError> {
    std::fs::read_to_string(path).map_err(|e| RegistryError::File {
        at: path.display().to_string(),
        reason: format!("cannot read: {e}"),
    })
}

/// A YAML error of `path` as one line naming the file, line and column; `lines_before` is
/// how many lines of the file come before the YAML text (an agent file's `---`).
pub(crate) fn yaml_error(path: &Path, e: &serde_yaml::Error, lines_before: usize) -> RegistryError {
    RegistryError::File {
        at: match e.location() {
            Some(l) => format!(
                "{}:{}:{}",
                path.display(),
                l.line() + lines_before,
                l.column()
            ),
            None => path.display().to_string(),
        },
        // The position is in `at`; serde_yaml repeats it at the end of its message.
        reason: match (e.location(), e.to_string()) {
            (Some(l), text) => text
                .trim_end_matches(&format!(" at line {} column {}", l.line(), l.column()))
                .to_owned(),
            (None, text) => text,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_module_may_be_published_and_a_bad_reference_names_its_module() {
        let file = RegistryFile::parse(
            "modules:\n  planner:\n    path: oci://ghcr.io/acme/planner:1.2\n",
            Path::new("/cfg/registry.yaml"),
        )
        .unwrap();
        assert_eq!(
            file.modules[0].location,
            LoopSource::Oci("oci://ghcr.io/acme/planner:1.2".into())
        );
        let bad = RegistryFile::parse(
            "modules:\n  planner:\n    path: oci://planner:1.2\n",
            Path::new("/cfg/registry.yaml"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            bad.contains("/cfg/registry.yaml") && bad.contains("module `planner`"),
            "{bad}"
        );
        assert!(bad.contains("names no repository"), "{bad}");
    }

    #[test]
    fn the_seed_format() {
        let file = RegistryFile::parse(
            "modules:\n  my-loop:\n    path: loops/my-loop.wasm\n    description: \"My custom agent loop\"\n    version: \"1.0.0\"\n  abs:\n    path: /opt/abs.wasm\n",
            Path::new("/cfg/registry.yaml"),
        )
        .unwrap();
        assert_eq!(file.warnings, Vec::<String>::new());
        assert_eq!(file.modules[0].name, "my-loop");
        assert_eq!(
            file.modules[0].location,
            LoopSource::File(PathBuf::from("/cfg/loops/my-loop.wasm"))
        );
        assert_eq!(file.modules[0].version.as_deref(), Some("1.0.0"));
        assert_eq!(
            file.modules[1].location,
            LoopSource::File(PathBuf::from("/opt/abs.wasm"))
        );
    }

    #[test]
    fn a_modules_generation_settings_are_read() {
        let file = RegistryFile::parse(
            "modules:\n  coder:\n    path: coder.wasm\n    thinking: medium\n    max_output_tokens: 8000\n    temperature: 0.5\n",
            Path::new("/cfg/registry.yaml"),
        )
        .unwrap();
        assert_eq!(file.warnings, Vec::<String>::new());
        let tools = &file.modules[0].context_tools;
        assert_eq!(
            tools.generation,
            Generation {
                thinking: Some(Thinking::Medium),
                max_output_tokens: Some(8000),
                temperature: Some(0.5),
            }
        );
        assert!(!tools.is_empty());
        let bad = RegistryFile::parse(
            "modules:\n  coder:\n    path: coder.wasm\n    thinking: lots\n",
            Path::new("/cfg/registry.yaml"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            bad.contains("registry.yaml") && bad.contains("off, low, medium, high"),
            "{bad}"
        );
    }

    #[test]
    fn an_input_schema_must_be_an_object_schema() {
        let file = RegistryFile::parse(
            "modules:\n  t:\n    path: t.wasm\n    input_schema: {type: object, properties: {n: {type: integer}}}\n",
            Path::new("r.yaml"),
        )
        .unwrap();
        let schema = file.modules[0].input_schema.as_ref().unwrap();
        assert_eq!(schema.0["properties"]["n"]["type"], "integer");
        for (bad, says) in [
            ("[1, 2]", "must be a JSON Schema object"),
            ("{type: string}", "must say `type: object`"),
        ] {
            let text = format!("modules:\n  t:\n    path: t.wasm\n    input_schema: {bad}\n");
            let error = RegistryFile::parse(&text, Path::new("r.yaml"))
                .unwrap_err()
                .to_string();
            assert!(
                error.contains("module `t`") && error.contains(says),
                "{error}"
            );
        }
    }

    #[test]
    fn a_modules_hooks_are_kept_with_their_file() {
        let file = RegistryFile::parse(
            "modules:\n  a:\n    path: a.wasm\n    hooks:\n      PreToolUse:\n        - matcher: Bash\n          hooks: [{type: command, command: ./guard.sh}]\n",
            Path::new("/cfg/registry.yaml"),
        )
        .unwrap();
        assert_eq!(file.warnings, Vec::<String>::new());
        let hooks = file.modules[0].context_tools.hooks.as_ref().unwrap();
        assert_eq!(hooks.file, PathBuf::from("/cfg/registry.yaml"));
        assert_eq!(
            hooks.table["PreToolUse"][0]["hooks"][0]["command"],
            "./guard.sh"
        );
        assert!(!file.modules[0].context_tools.is_empty());
    }

    #[test]
    fn grants_are_read_and_checked() {
        let file = RegistryFile::parse(
            "modules:\n  a:\n    path: a.wasm\n    grants:\n      tools: [read]\n      sandbox: read-only\n      max_cost: 0.5\n  b:\n    path: b.wasm\n    grants: {sandbox: {write: [out], network: ['127.0.0.1:80']}, max_tokens: 10}\n",
            Path::new("r.yaml"),
        )
        .unwrap();
        let a = &file.modules[0].context_tools;
        assert_eq!(a.tools.as_deref(), Some(&["read".to_owned()][..]));
        assert_eq!(
            a.grants.sandbox.as_ref().map(|p| p.mode),
            Some(wonopcode_sandbox::SandboxMode::ReadOnly)
        );
        assert_eq!(a.grants.max_cost, Some(0.5));
        let b = &file.modules[1].context_tools.grants;
        assert_eq!(b.sandbox.as_ref().map(|p| p.write.len()), Some(1));
        assert_eq!(b.max_tokens, Some(10));
        for (bad, says) in [
            (
                "{max_cost: -1}",
                "grants.max_cost: -1 must be more than 0 dollars",
            ),
            ("{sandbox: everything}", "unknown sandbox mode"),
            ("{colour: blue}", "unknown field `colour`"),
        ] {
            let text = format!("modules:\n  t:\n    path: t.wasm\n    grants: {bad}\n");
            let error = RegistryFile::parse(&text, Path::new("r.yaml"))
                .unwrap_err()
                .to_string();
            assert!(error.contains(says), "{bad}: {error}");
            assert!(error.starts_with("r.yaml"), "{error}");
        }
        let twice =
            "modules:\n  t:\n    path: t.wasm\n    tools: [read]\n    grants: {tools: [grep]}\n";
        let error = RegistryFile::parse(twice, Path::new("r.yaml"))
            .unwrap_err()
            .to_string();
        assert!(error.contains("`tools` is given twice"), "{error}");
    }

    #[test]
    fn unknown_keys_are_warnings() {
        let file = RegistryFile::parse(
            "modules:\n  a:\n    path: a.wasm\n    colour: blue\nextra: 1\n",
            Path::new("r.yaml"),
        )
        .unwrap();
        assert_eq!(
            file.warnings,
            vec![
                "r.yaml: unknown key `extra` ignored",
                "r.yaml: module `a`: unknown key `colour` ignored"
            ]
        );
    }

    #[test]
    fn malformed_yaml_names_file_line_and_column() {
        let err = RegistryFile::parse("modules:\n  a:\n    path: [unclosed\n", Path::new("r.yaml"))
            .unwrap_err();
        let RegistryError::File { at, .. } = &err else {
            panic!("{err:?}")
        };
        assert!(at.starts_with("r.yaml:"), "{at}");
        assert_eq!(at.matches(':').count(), 2, "{at}");
    }

    #[test]
    fn duplicate_names_are_an_error() {
        let err = RegistryFile::parse(
            "modules:\n  a:\n    path: a.wasm\n  a:\n    path: b.wasm\n",
            Path::new("r.yaml"),
        )
        .unwrap_err();
        // The position is the map's: serde reports errors of a map where it starts.
        assert!(err.to_string().starts_with("r.yaml:2:3: "), "{err}");
        assert!(err.to_string().contains("`a` is defined twice"), "{err}");
    }

    #[test]
    fn a_module_without_a_path_is_an_error() {
        let err = RegistryFile::parse("modules:\n  a:\n    version: '1'\n", Path::new("r.yaml"))
            .unwrap_err();
        assert!(err.to_string().contains("path"), "{err}");
    }
}
