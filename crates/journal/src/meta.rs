//! `run.json`: what a run is, written when it starts and again when it ends (to a temporary
//! file first, then renamed, so it is never half written).

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::JournalError;

/// Where a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Started, not ended (or the process died: `events.jsonl` says how far it got).
    Running,
    /// Its last turn ended (whatever its answer).
    Finished,
    /// Stopped by a signal or Ctrl-C.
    Interrupted,
    /// Its last turn ended suspended: calls wait for the person's answer (or approval), in
    /// its root or in a child context; `wonopcode resume` goes on with them.
    Suspended,
    /// Its last turn ended in an error (the model could not be reached, or refused the
    /// request): what it did before is kept; it is not resumed.
    Failed,
}

/// What a run is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunMeta {
    /// Its id (`20261126T052700-1a2b3c`): sortable by start.
    pub id: String,
    /// The workspace it ran in.
    pub workspace: String,
    /// When it started (RFC 3339).
    pub started: String,
    /// When it ended, once it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<String>,
    /// The root's loop or agent.
    pub loop_name: String,
    /// The root's model (`provider/id`).
    pub model: String,
    /// The first prompt, cut to a line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// Where it stands.
    pub status: RunStatus,
    /// The run it was forked from (`RUN_ID` or `RUN_ID@CONTEXT:RESPONSE`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    /// The process running it, while it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// The interrupted run this one resumes (it gave that run's prompts again, so its
    /// journal holds the whole conversation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumes: Option<String>,
    /// The run whose conversation this one goes on with, started from where that one's
    /// ended (an editor's session loaded again): its journal holds only what came after.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continues: Option<String>,
    /// How it was started: the command line's arguments (after the program's name) and the
    /// directory it was started in, so `wonopcode resume` can start it again the same way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invocation: Option<Invocation>,
    /// Every prompt the root was given, whole, in order: what a resume gives it again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prompts: Vec<String>,
    /// Each `oci://` tag the run fetched a module by, and the reference pinned to the digest
    /// it named: what a resume or fork fetches, so it runs the same bytes.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub modules: std::collections::BTreeMap<String, String>,
    /// The session commands given between its prompts (`/clear`, `/compact`, a switch of
    /// model), each with its place: what a resume gives again between the prompts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<KeptCommand>,
}

impl std::fmt::Display for SessionCommand {
    /// As the REPL's command is typed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Clear => f.write_str("/clear"),
            Self::Compact => f.write_str("/compact"),
            Self::Model {
                provider,
                model: Some(model),
            } => write!(f, "/model {provider}/{model}"),
            Self::Model { provider, .. } => write!(f, "/model {provider}"),
            Self::Thinking { thinking } => write!(
                f,
                "/thinking {}",
                serde_json::to_value(thinking).unwrap_or_default()
            ),
            Self::Rewind { prompt } => write!(f, "/rewind {prompt} conversation"),
        }
    }
}

/// A session command, kept in its place among the prompts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeptCommand {
    /// How many prompts were given before it.
    pub after_prompts: usize,
    /// What it did.
    #[serde(flatten)]
    pub command: SessionCommand,
}

/// A command that changes a session's conversation or model between prompts; the REPL's
/// `/clear`, `/compact` and `/model`, an editor's equivalents and its thinking level.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "command", rename_all = "snake_case")]
pub enum SessionCommand {
    /// The conversation started afresh.
    Clear,
    /// The conversation was compacted on request.
    Compact,
    /// The root's model was switched: `provider`'s `model` (its default when `None`).
    Model {
        /// The provider.
        provider: String,
        /// The model, when one was named.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
    },
    /// How much the root's model thinks was set.
    Thinking {
        /// The setting.
        thinking: wonopcode_protocol::generation::Thinking,
    },
    /// The conversation was taken back to before prompt `prompt` (from 1).
    Rewind {
        /// The prompt.
        prompt: usize,
    },
}

/// How a run was started: its settings (the session's `Settings`, as the front-end gave
/// them) and the shape of the front-end's run. A run journaled before settings were kept has
/// its command line instead (`args`), which `resume` still reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Invocation {
    /// The command line's arguments after the program's name (journals from before
    /// `settings`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// The run's settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<serde_json::Value>,
    /// The directory it was started in (relative paths in its settings are relative to it).
    pub cwd: String,
    /// Whether it was one prompt (from the command line, stdin, a batch task or an MCP
    /// call; the run then ends) rather than an interactive session.
    pub one_shot: bool,
    /// Whether its events were shown as JSON Lines (`--json`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub json: bool,
    /// Its seal under the user's key (`SealKey`), when it was sealed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seal: Option<String>,
}

impl RunMeta {
    /// Its status as it stands now: a run `running` whose process is gone died before its
    /// end, and reads as interrupted.
    pub fn current_status(&self) -> RunStatus {
        match (self.status, self.pid) {
            (RunStatus::Running, Some(pid)) if !process_lives(pid) => RunStatus::Interrupted,
            (status, _) => status,
        }
    }

    /// Writes the metadata to `path`, through a temporary file and a rename.
    pub fn write(&self, path: &Path) -> Result<(), JournalError> {
        let text = serde_json::to_string_pretty(self).unwrap_or_default();
        let partial = path.with_extension("json.partial");
        let written = crate::private::create(&partial).and_then(|mut file| {
            std::io::Write::write_all(&mut file, (text + "\n").as_bytes())?;
            wonopcode_os::durable::sync_data(&file)
        });
        written.map_err(|e| JournalError::io(&partial, &e))?;
        std::fs::rename(&partial, path).map_err(|e| JournalError::io(path, &e))
    }

    /// Reads the metadata at `path`.
    pub fn read(path: &Path) -> Result<Self, JournalError> {
        let text = std::fs::read_to_string(path).map_err(|e| JournalError::io(path, &e))?;
        serde_json::from_str(&text).map_err(|e| JournalError::Corrupt {
            path: path.display().to_string(),
            line: e.line(),
            why: e.to_string(),
        })
    }
}

/// Whether process `pid` runs: on Linux by its `/proc` entry, a zombie not counting;
/// elsewhere (macOS) by whether a signal could be sent to it.
fn process_lives(pid: u32) -> bool {
    if !cfg!(target_os = "linux") {
        let Ok(pid) = i32::try_from(pid) else {
            return false;
        };
        // No signal is sent: only whether the process exists (EPERM: it does, as another user's).
        return !matches!(
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None),
            Err(nix::errno::Errno::ESRCH)
        );
    }
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // `pid (name) S ...`: the state follows the name, which may hold anything.
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.trim_start().chars().next());
    !matches!(state, Some('Z' | 'X'))
}
