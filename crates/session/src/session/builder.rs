//! What a session is built from: its [`Settings`], the services the caller gives it (a
//! model, a renderer, prompters, an editor's files) and how it starts (resuming, forking or
//! going on with a conversation). [`SessionBuilder::build`] (`build.rs`) opens it.

use std::path::PathBuf;
use std::sync::Arc;

use wonopcode_contexts::LoopSource;
use wonopcode_journal::{EarlierRun, Runs};
use wonopcode_mcp::Elicitor;
use wonopcode_protocol::{ContextPath, ModelSource, OnInterrupted, SharedModel};
use wonopcode_registry::LoopCatalog;
use wonopcode_tools::permission::{PolicyConfig, Prompter};
use wonopcode_wasm_host::{CachePolicy, GuestPrompter};

use crate::config::Config;
use crate::generation::Generation;
use crate::settings::{LoopChoice, Settings};
use crate::sink::Renderer;
use crate::telemetry::SpanRecorder;

/// Builds a [`Session`](super::Session) from its [`Settings`] and the services the caller
/// gives it; every setting has a default but the workspace.
pub struct SessionBuilder {
    pub(super) settings: Settings,
    pub(super) config: Config,
    pub(super) model: Option<(SharedModel, Arc<dyn ModelSource>)>,
    /// The loop as the caller found it already; else looked up from the settings' choice.
    pub(super) source: Option<LoopSource>,
    pub(super) renderer: Box<dyn Renderer>,
    pub(super) trace: bool,
    /// Whether the guests' own lines go to stderr ([`SessionBuilder::guest_output_on_stderr`]).
    pub(super) guest_echo: bool,
    /// A whole permission policy of the caller's, instead of the settings' over the config's.
    pub(super) permissions: Option<PolicyConfig>,
    pub(super) prompter: Option<Arc<dyn Prompter>>,
    pub(super) guest_prompter: Option<Arc<dyn GuestPrompter>>,
    pub(super) ambient_generation: Generation,
    /// The compile cache's policy: the config file's, when the settings cache at all.
    pub(super) cache: Option<CachePolicy>,
    pub(super) hot_reload: bool,
    /// Who fills in MCP servers' forms.
    pub(super) elicitor: Option<Arc<dyn Elicitor>>,
    pub(super) catalog: Option<LoopCatalog>,
    /// Where the run's journal goes; `None`: no journal.
    pub(super) runs: Option<Runs>,
    /// How the front-end started the run, for its journal: one prompt (else a REPL), and
    /// its events shown as JSON Lines.
    pub(super) one_shot: bool,
    pub(super) json: bool,
    /// The interrupted run this one resumes, and what to do with its cut-off calls.
    pub(super) resuming: Option<(EarlierRun, OnInterrupted)>,
    /// The run this one forks.
    pub(super) fork: Option<Fork>,
    /// The editor's files, for the file tools, when the front-end is an editor offering them.
    pub(super) editor_files: Option<wonopcode_protocol::editor_files::SharedEditorFiles>,
    /// The run whose conversation this one goes on with, and that conversation.
    pub(super) continued: Option<(String, Vec<wonopcode_protocol::Message>)>,
    /// Turns the events into OpenTelemetry spans.
    pub(super) telemetry: Option<Arc<SpanRecorder>>,
    /// The person trusted the workspace for this run when asked (not kept in the settings).
    pub(super) trusted_when_asked: bool,
    /// The run's published modules (with the pins of the run resumed or forked).
    pub(super) published: Arc<crate::oci_pins::PublishedModules>,
    /// MCP servers a front-end brings for this session only (an editor's), beside the config
    /// file's; not kept in the journal (their variables may hold secrets).
    pub(super) session_servers: std::collections::BTreeMap<String, wonopcode_mcp::ServerEntry>,
}

/// A run forked from another at one of its responses (`wonopcode fork`): the other run's
/// responses before that point are served from its journal, its tool calls run again (in the
/// workspace as it is), and from that response on the run asks its own model.
#[derive(Debug, Clone)]
pub struct Fork {
    /// The run forked.
    pub origin: String,
    /// Its journal's `responses.jsonl`.
    pub responses: PathBuf,
    /// The context forked.
    pub at: ContextPath,
    /// Its first response asked of the model.
    pub response: u32,
}

impl Fork {
    /// Where it forks, `CONTEXT:RESPONSE`.
    pub fn point(&self) -> String {
        format!("{}:{}", self.at, self.response)
    }
}

impl SessionBuilder {
    /// Keeps the run's journal under `runs` (`None`: no journal; the default for an
    /// embedder, which keeps its own records).
    pub fn journal(mut self, runs: Option<Runs>) -> Self {
        self.runs = runs;
        self
    }

    /// How the front-end started the run — one prompt (`true`, the default) or an
    /// interactive session, its events shown as JSON Lines or not — kept in its journal
    /// with the settings, so `wonopcode resume` starts it again the same way.
    pub fn started_as(mut self, one_shot: bool, json: bool) -> Self {
        self.one_shot = one_shot;
        self.json = json;
        self
    }

    /// Every setting at once (what [`Session::builder`](super::Session::builder) starts
    /// from: the defaults).
    pub fn settings(mut self, settings: Settings) -> Self {
        self.settings = settings;
        self
    }

    /// Changes the settings in place — the one way a front-end or an embedder sets one
    /// (`.with_settings(|s| s.yes = true)`), as Codex's config overrides are a closure
    /// every front-end passes: [`Settings`] is the list of what can be set, and the
    /// journal keeps all of it.
    pub fn with_settings(mut self, change: impl FnOnce(&mut Settings)) -> Self {
        change(&mut self.settings);
        self
    }

    /// Resumes `earlier`: its model responses are served from its journal before the
    /// model is asked anything, and its finished tool calls are answered from there in
    /// every context; a call it cut off is run again where that is safe, else as
    /// `on_interrupted` says. The caller gives the root the same prompts again.
    pub fn resuming(mut self, earlier: EarlierRun, on_interrupted: OnInterrupted) -> Self {
        self.resuming = Some((earlier, on_interrupted));
        self
    }

    /// The digests the `oci://` tags of the run resumed or forked named (its `run.json`'s
    /// `modules`): those tags fetch the same bytes again.
    pub fn module_pins(mut self, pins: std::collections::BTreeMap<String, String>) -> Self {
        self.published = Arc::new(crate::oci_pins::PublishedModules::new(pins));
        self
    }

    /// MCP servers for this session only (an editor's), started and sandboxed as the config
    /// file's are; a name the config file also gives is refused when the session is built.
    pub fn session_mcp_servers(
        mut self,
        servers: std::collections::BTreeMap<String, wonopcode_mcp::ServerEntry>,
    ) -> Self {
        self.session_servers = servers;
        self
    }

    /// The file tools of every context read and write through the editor the session is
    /// driven from (its unsaved buffers seen, its writes landing there), the path guard,
    /// hidden list and permission rules checked first as always.
    pub fn editor_files(
        mut self,
        files: wonopcode_protocol::editor_files::SharedEditorFiles,
    ) -> Self {
        self.editor_files = Some(files);
        self
    }

    /// Goes on with the conversation `run` left (an editor loading its session): the root
    /// starts with `messages` — the conversation of `run` and the runs it went on from
    /// (`wonopcode_session::history::conversation_of`) — and nothing is run or asked again;
    /// the new run's journal says it continues `run`. A `--history` file, when the settings
    /// name one, holds the conversation instead.
    pub fn continuing(mut self, run: String, messages: Vec<wonopcode_protocol::Message>) -> Self {
        self.continued = Some((run, messages));
        self
    }

    /// Forks another run ([`Fork`]); the caller gives the root the same prompts again.
    pub fn forking(mut self, fork: Fork) -> Self {
        self.fork = Some(fork);
        self
    }

    /// The settings of the config file (default: none).
    pub fn config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    /// The model and the models guests may switch to, opened by the caller.
    pub fn model(mut self, model: SharedModel, models: Arc<dyn ModelSource>) -> Self {
        self.model = Some((model, models));
        self
    }

    /// Which loop runs the prompts (default: the native StandardLoop), found already; the
    /// settings keep how it was chosen (a name given with [`Self::loop_name`] stays).
    pub fn loop_source(mut self, source: LoopSource) -> Self {
        let choice = match &source {
            LoopSource::Native | LoopSource::Agent(_) => LoopChoice::Standard,
            LoopSource::Embedded => LoopChoice::Embedded,
            LoopSource::File(path) => LoopChoice::File(path.clone()),
            LoopSource::Oci(reference) => LoopChoice::Oci(reference.clone()),
        };
        if self.settings.loop_choice.name().is_none() {
            self.settings.loop_choice = choice;
        }
        self.source = Some(source);
        self
    }

    /// Shows the events (default: nothing is shown).
    pub fn renderer(mut self, renderer: Box<dyn Renderer>) -> Self {
        self.renderer = renderer;
        self
    }

    /// Records a trace of the run (`Session::write_trace`).
    pub fn trace(mut self, trace: bool) -> Self {
        self.trace = trace;
        self
    }

    /// Whether the guests' own lines (their stdout, stderr and `system.log` calls) go to
    /// stderr too, besides their files in the run's journal (`--verbose`).
    pub fn guest_output_on_stderr(mut self, on: bool) -> Self {
        self.guest_echo = on;
        self
    }

    /// The permission policy (default: the config file's).
    pub fn permissions(mut self, policy: PolicyConfig) -> Self {
        self.permissions = Some(policy);
        self
    }

    /// Who answers permission questions and guests' questions (default: nobody).
    pub fn prompters(
        mut self,
        permissions: Arc<dyn Prompter>,
        guests: Arc<dyn GuestPrompter>,
    ) -> Self {
        self.prompter = Some(permissions);
        self.guest_prompter = Some(guests);
        self
    }

    /// The catalog of named loops, when the caller has discovered it already (and reported
    /// what went wrong while looking); else the session discovers it on first use.
    pub fn catalog(mut self, catalog: LoopCatalog) -> Self {
        self.catalog = Some(catalog);
        self
    }

    /// Who fills in the forms MCP servers ask for (`elicitation/create`). Default: with
    /// `yes`, every form is accepted with its defaults; else servers are told nobody can.
    pub fn elicitor(mut self, elicitor: Arc<dyn Elicitor>) -> Self {
        self.elicitor = Some(elicitor);
        self
    }

    /// Claude Code's `MAX_THINKING_TOKENS`, read by the front-end: it fills in what the
    /// settings' generation and the config file's leave unset, and only for a model that
    /// thinks, so a setting made for Claude models refuses no other.
    pub fn ambient_generation(mut self, ambient: Generation) -> Self {
        self.ambient_generation = ambient;
        self
    }

    /// Reloads a guest file that changed, before each prompt (`Session::reload_if_changed`).
    pub fn hot_reload(mut self, on: bool) -> Self {
        self.hot_reload = on;
        self
    }

    /// Turns the session's events into OpenTelemetry spans (`Telemetry::recorder`).
    pub fn telemetry(mut self, recorder: Option<Arc<SpanRecorder>>) -> Self {
        self.telemetry = recorder;
        self
    }

    /// The person, asked at a prompt, trusts the workspace for this run: as
    /// [`Self::trust_workspace`], but not kept with the run's settings, so a resumed run
    /// asks again (unless the trust file remembers the answer).
    pub fn trusted_when_asked(mut self, trusted: bool) -> Self {
        self.trusted_when_asked = trusted;
        self
    }
}
