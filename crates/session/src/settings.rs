//! [`Settings`]: everything a run is built from that whoever started it chose — the model,
//! the permissions, the limits, the sandbox, the servers, the loop. A front-end maps its
//! input into one value (the binary's flags, once; a batch task or an MCP call lays its own
//! choices over the server's), [`crate::SessionBuilder`] builds from it, and the run's
//! journal keeps it, so `resume` and `fork` start a run again from this value — a batch
//! task's and an MCP call's like any other — and never from a command line read again.
//!
//! What is not here is not chosen per run: the services a front-end gives the builder (a
//! renderer, the prompters, telemetry), where the journal goes, and the config file's
//! contents, which are read again from [`Settings::config_file`] when a run starts.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use wonopcode_agent_loop::budget::BudgetLimits;
use wonopcode_protocol::generation::Generation;
use wonopcode_sandbox::SandboxMode;
use wonopcode_tools::permission::{Mode, PolicyConfig, Rule, Unattended};

use crate::models::ModelChoice;
use crate::stand_in::StandIn;

/// A run's settings, as its journal keeps them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// The workspace (canonical once a front-end has checked it).
    pub workspace: PathBuf,
    /// The model: a transcript to replay, a provider and model, a recording.
    pub model: ModelChoice,
    /// Thinking, output cap and temperature (the config file's fill in what these leave
    /// unset).
    pub generation: Generation,
    /// Permission rules, first match wins, before the config file's.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<Rule>,
    /// What `ask` becomes without a terminal, over the config file's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unattended: Option<Unattended>,
    /// The approval mode the run starts in (`--permission-mode`; Shift-Tab switches it at
    /// the REPL).
    #[serde(skip_serializing_if = "Mode::is_ask")]
    pub mode: Mode,
    /// Every `ask` approved without asking.
    pub yes: bool,
    /// Nobody is asked for an approval, even at a terminal: an `ask` becomes what
    /// `unattended` says (Codex's `-a never`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub never_ask: bool,
    /// The sandbox mode of commands (default: the config file's, else `workspace-write`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxMode>,
    /// The user's limit on each `bash` command.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bash_timeout: Option<Duration>,
    /// Host tools answered by fixed text instead of run (a guest's tests).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tool_stand_ins: Vec<StandIn>,
    /// The run's spending limits, shared by all its contexts.
    pub budget: BudgetLimits,
    /// Model requests allowed per prompt (default: the config's, else 50).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_iterations: Option<u32>,
    /// Children of one parallel spawn running at once (default: the config's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_parallel: Option<u32>,
    /// Which loop runs the prompts.
    #[serde(rename = "loop")]
    pub loop_choice: LoopChoice,
    /// Directories searched first for named loops.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub loops_dirs: Vec<PathBuf>,
    /// The agents and loops the native loop may delegate to (`all`: every one).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<String>,
    /// MCP servers for this run besides the config file's: a name and a command line each.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mcp: Vec<(String, String)>,
    /// The config file read (`None`: the user's, if present).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config_file: Option<PathBuf>,
    /// Whether compiled guests are cached (the config file says where and how much).
    pub compile_cache: bool,
    /// The system prompt instead of the agent file's, the config's or the default one
    /// (`--system-prompt`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Text added at the end of the system prompt (`--append-system-prompt`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub append_system_prompt: Option<String>,
    /// Directories commands may write besides the workspace (`--add-dir`), canonical.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub add_dirs: Vec<PathBuf>,
    /// Whether the project's `AGENTS.md` files are told to every context.
    pub project_instructions: bool,
    /// The workspace trusted for this run (`--trust-workspace`): its hooks and its agents'
    /// hooks and MCP servers are used. A yes given at a terminal is not kept here: a
    /// resumed run asks again, unless the user's trust file remembers it.
    pub trust_workspace: bool,
    /// The conversation kept in this file (and continued from it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history: Option<PathBuf>,
}

impl Default for Settings {
    fn default() -> Self {
        Self::new(".")
    }
}

/// Which loop runs a session's prompts, as it was chosen (a name is looked up when the
/// run starts, so a resumed run finds the loop by the name it was started with).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoopChoice {
    /// The native StandardLoop.
    #[default]
    Standard,
    /// The default guest embedded in the binary.
    Embedded,
    /// A component published to an OCI registry (`oci://HOST/REPO:TAG`), fetched when the
    /// run starts; the run keeps it pinned to the digest it fetched
    /// (`oci://HOST/REPO@sha256:…`), so its journal starts it again with the same bytes.
    Oci(String),
    /// A component file.
    File(PathBuf),
    /// A loop of the registry, or an agent, by name.
    Named(String),
}

impl LoopChoice {
    /// The component `--agent-loop` names: an `oci://` reference, else a file.
    pub fn component(path: &std::path::Path) -> Self {
        match path.to_str() {
            Some(text) if wonopcode_oci::OciRef::is_reference(text) => Self::Oci(text.to_owned()),
            _ => Self::File(path.to_path_buf()),
        }
    }

    /// The registry name, when the loop was chosen by one.
    pub fn name(&self) -> Option<&str> {
        match self {
            Self::Named(name) => Some(name),
            _ => None,
        }
    }
}

impl Settings {
    /// The defaults, in `workspace`.
    pub fn new(workspace: impl Into<PathBuf>) -> Self {
        Self {
            workspace: workspace.into(),
            model: ModelChoice::default(),
            generation: Generation::default(),
            rules: Vec::new(),
            unattended: None,
            mode: Mode::Ask,
            yes: false,
            never_ask: false,
            sandbox: None,
            bash_timeout: None,
            tool_stand_ins: Vec::new(),
            budget: BudgetLimits::default(),
            max_iterations: None,
            max_parallel: None,
            loop_choice: LoopChoice::Standard,
            loops_dirs: Vec::new(),
            agents: Vec::new(),
            mcp: Vec::new(),
            config_file: None,
            compile_cache: true,
            system_prompt: None,
            append_system_prompt: None,
            add_dirs: Vec::new(),
            project_instructions: true,
            trust_workspace: false,
            history: None,
        }
    }

    /// The permission policy: these rules first, then `config`'s; `unattended` over its.
    pub fn policy(&self, config: &PolicyConfig) -> PolicyConfig {
        let mut policy = config.clone();
        policy.rules = self.rules.iter().chain(&config.rules).cloned().collect();
        if let Some(unattended) = self.unattended {
            policy.unattended = unattended;
        }
        policy
    }

    /// `self` with what `given` chose laid over it: every setting where `given` differs
    /// from `base` (the same front-end's settings when nothing is chosen) is `given`'s, and
    /// a list gains `given`'s entries it lacks. How `resume ID -- FLAGS` adds flags to a
    /// run's own, whatever the setting.
    pub fn overlaid(&self, given: &Settings, base: &Settings) -> Result<Settings, SettingsError> {
        let mut merged = to_value(self)?;
        lay_over(&mut merged, &to_value(given)?, &to_value(base)?);
        serde_json::from_value(merged).map_err(|e| SettingsError(e.to_string()))
    }

    /// The settings a journal keeps (`Invocation::settings`), read back; a value that does
    /// not read says why in one line.
    pub fn from_journal(value: &Value) -> Result<Settings, SettingsError> {
        Settings::deserialize(value).map_err(|e| SettingsError(e.to_string()))
    }

    /// The value a journal keeps.
    pub fn to_journal(&self) -> Value {
        to_value(self).unwrap_or(Value::Null)
    }
}

/// Settings that do not read (a journal's, or an overlay's).
#[derive(Debug, thiserror::Error)]
#[error("the run's settings do not read: {0}")]
pub struct SettingsError(String);

fn to_value(settings: &Settings) -> Result<Value, SettingsError> {
    serde_json::to_value(settings).map_err(|e| SettingsError(e.to_string()))
}

/// Lays `given` over `into` where it differs from `base`: a struct (an object in all three)
/// field by field, lists by adding the entries `into` lacks, anything else — an enum's
/// variant among them — replaced whole.
fn lay_over(into: &mut Value, given: &Value, base: &Value) {
    match (into, given) {
        (Value::Object(into), Value::Object(given)) if base.is_object() => {
            for (key, value) in given {
                let unchosen = base.get(key).unwrap_or(&Value::Null);
                if value == unchosen {
                    continue;
                }
                match into.get_mut(key) {
                    Some(slot) => lay_over(slot, value, unchosen),
                    None => {
                        into.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        (Value::Array(into), Value::Array(given)) => {
            for entry in given {
                if !into.contains(entry) {
                    into.push(entry.clone());
                }
            }
        }
        (into, given) => {
            if given != base {
                *into = given.clone();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wonopcode_tools::permission::Action;

    #[test]
    fn settings_survive_the_journal() {
        let mut settings = Settings::new("/ws");
        settings.model.replay = Some("t.jsonl".into());
        settings.rules = vec![Rule::parse("bash:cargo test", Action::Allow).unwrap()];
        settings.sandbox = Some(SandboxMode::ReadOnly);
        settings.budget.max_wall = Some(Duration::from_secs(90));
        settings.loop_choice = LoopChoice::Named("coder".into());
        settings.mcp = vec![("fs".into(), "npx server".into())];
        let read = Settings::from_journal(&settings.to_journal()).unwrap();
        assert_eq!(read, settings);
    }

    #[test]
    fn a_journal_value_that_does_not_read_says_so() {
        let e = Settings::from_journal(&serde_json::json!({"yes": "maybe"})).unwrap_err();
        assert!(
            e.to_string().starts_with("the run's settings do not read"),
            "{e}"
        );
    }

    #[test]
    fn an_overlay_takes_only_what_was_chosen() {
        let base = Settings::new("/ws");
        let mut stored = base.clone();
        stored.model.replay = Some("t.jsonl".into());
        stored.rules = vec![Rule::parse("read", Action::Allow).unwrap()];
        stored.max_iterations = Some(5);
        let mut given = base.clone();
        given.yes = true;
        given.rules = vec![
            Rule::parse("read", Action::Allow).unwrap(),
            Rule::parse("bash", Action::Deny).unwrap(),
        ];
        let merged = stored.overlaid(&given, &base).unwrap();
        assert!(merged.yes);
        assert_eq!(merged.max_iterations, Some(5));
        assert_eq!(merged.model.replay, stored.model.replay);
        assert_eq!(merged.rules.len(), 2, "{:?}", merged.rules);
        // Nothing chosen: nothing changes.
        assert_eq!(stored.overlaid(&base, &base).unwrap(), stored);
        // A loop chosen again replaces the stored one whole.
        let mut filed = base.clone();
        filed.loop_choice = LoopChoice::File("a.wasm".into());
        let mut named = base.clone();
        named.loop_choice = LoopChoice::Named("coder".into());
        let merged = filed.overlaid(&named, &base).unwrap();
        assert_eq!(merged.loop_choice, LoopChoice::Named("coder".into()));
    }
}
