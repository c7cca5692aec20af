//! Delegation from the native loop: the tools `spawn_agent`, `send_input`, `wait`,
//! `close_agent` and `list_agents`, in the shapes of Codex's. A spawned agent is a child
//! context on the same stack as a guest's children (`crate::child`): the same limits, grants,
//! budgets, statuses, events and replay keys. It lives on after its turn — `send_input` gives
//! it a follow-up with its history kept — until `close_agent` (or the end of the run) frees
//! its place. Its turns run in the background, so the model can start several and `wait` on
//! them together; what a turn spent is added to the parent's usage when `wait` collects it.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use parking_lot::Mutex;
use serde::Deserialize;
use serde_json::json;
use wonopcode_agent_loop::{
    BreakLoop, RunServices, Tool, ToolEnv, ToolError, ToolOutput, ToolRegistry,
};
use wonopcode_protocol::{PendingCall, ToolCategory, ToolKind, ToolSpec, Usage};

use crate::DELEGATION_TOOLS;
use crate::child::{LiveChild, ParentPlace, ParentView};
use crate::child_turns::{ChildTurns, TurnState};
use crate::spawn::{ChildResult, ModuleRef, SpawnAsks, SpawnRequest};

/// How long `wait` waits when the call does not say.
const DEFAULT_WAIT: Duration = Duration::from_secs(600);
/// The longest `wait` may be asked to wait.
const MAX_WAIT_MS: u64 = 3_600_000;

/// One context's delegation: where its children go in the tree, what they may run, and the
/// agents it has spawned. Its tools share it.
pub struct Delegation {
    place: ParentPlace,
    /// What may be spawned: names and descriptions.
    spawnable: Vec<(String, Option<String>)>,
    /// Children started so far (their paths are numbered in order).
    started: AtomicU32,
    agents: Mutex<BTreeMap<String, Agent>>,
}

/// A spawned agent: its turns, and how its last collected turn ended.
struct Agent {
    turns: ChildTurns,
    last: Option<String>,
}

impl Delegation {
    /// The delegation of a run's root context on the native loop, at `place` (a tree of
    /// its own); `allowed` narrows what may be spawned (`None`: every name the tree's
    /// resolver knows). `Err`: an allowed name the resolver does not know.
    pub fn root(place: ParentPlace, allowed: Option<&[String]>) -> Result<Arc<Self>, String> {
        let known = place
            .tree
            .resolver
            .as_ref()
            .map(|r| r.names())
            .unwrap_or_default();
        let spawnable = match allowed {
            None => known,
            Some(names) => {
                let mut kept = Vec::new();
                for name in names {
                    let Some(entry) = known.iter().find(|(n, _)| n == name) else {
                        return Err(format!(
                            "--agents: no agent or loop named `{name}`; `wonopcode loops list` shows them"
                        ));
                    };
                    kept.push(entry.clone());
                }
                kept
            }
        };
        Ok(Arc::new(Self {
            place,
            spawnable,
            started: AtomicU32::new(0),
            agents: Mutex::new(BTreeMap::new()),
        }))
    }

    /// The delegation of a native child at `place`: what it may spawn is its parent's.
    pub fn child(&self, place: ParentPlace) -> Arc<Self> {
        Arc::new(Self {
            place,
            spawnable: self.spawnable.clone(),
            started: AtomicU32::new(0),
            agents: Mutex::new(BTreeMap::new()),
        })
    }

    /// Its five tools.
    pub fn tools(self: &Arc<Self>) -> Vec<Arc<dyn Tool>> {
        DELEGATION_TOOLS
            .iter()
            .map(|name| {
                Arc::new(DelegationTool {
                    spec: spec_of(name, &self.spawnable),
                    delegation: self.clone(),
                }) as Arc<dyn Tool>
            })
            .collect()
    }

    /// Puts this delegation's tools in place of those `tools` has (a child's own).
    pub fn replace_in(self: &Arc<Self>, tools: &mut ToolRegistry) {
        for tool in self.tools() {
            if let Err(e) = tools.replace(tool) {
                tracing::warn!(error = %e, "a delegation tool could not be given to a child");
            }
        }
    }

    async fn spawn(&self, run: &RunServices, a: SpawnArgs) -> Result<String, String> {
        if !self.spawnable.iter().any(|(n, _)| *n == a.agent) {
            return Err(format!(
                "`{}` may not be spawned here; these may: {}",
                a.agent,
                self.names()
            ));
        }
        let (preferred_provider, preferred_model) = match a.model.as_deref() {
            Some(m) => match m.split_once('/') {
                Some((provider, model)) => (Some(provider.to_owned()), Some(model.to_owned())),
                None => (None, Some(m.to_owned())),
            },
            None => (None, None),
        };
        let params = SpawnRequest {
            preferred_provider,
            preferred_model,
            max_iterations: a.max_iterations,
            max_tokens: a.max_tokens,
            timeout_ms: a.timeout_ms,
            ..SpawnRequest::new(ModuleRef::Named(a.agent.clone()), a.task.clone())
        };
        let number = self.started.fetch_add(1, Ordering::AcqRel) + 1;
        let path = run.events.context().child(number);
        let parent = ParentView {
            place: self.place.clone(),
            services: run.clone(),
            messages: Vec::new(),
        };
        let mut child = LiveChild::start(&parent, path, params, SpawnAsks::default()).await?;
        child.give_delegation(self);
        let turns = ChildTurns::begin(child, a.task);
        let (id, module) = (turns.id().to_owned(), turns.module().to_owned());
        self.agents
            .lock()
            .insert(id.clone(), Agent { turns, last: None });
        Ok(format!(
            "agent {id} (`{module}`) is working on it; `wait` for its answer, `send_input` a follow-up after, `close_agent` when done"
        ))
    }

    fn send(&self, a: SendArgs) -> Result<String, String> {
        let mut agents = self.agents.lock();
        let agent = agents.get_mut(&a.id).ok_or_else(|| self.unknown(&a.id))?;
        agent.turns.send(a.message)?;
        Ok(format!(
            "agent {} (`{}`) is working on it; `wait` for its answer",
            a.id,
            agent.turns.module()
        ))
    }

    /// Waits for the agents' turns: what to tell the model, what they spent, and the calls
    /// the agents that suspended wait on (the run then suspends on them).
    async fn wait(&self, a: WaitArgs) -> Result<Waited, String> {
        let ids: Vec<String> = match a.ids {
            Some(ids) if !ids.is_empty() => ids,
            _ => self
                .agents
                .lock()
                .iter()
                .filter(|(_, agent)| agent.turns.state() != TurnState::Idle)
                .map(|(id, _)| id.clone())
                .collect(),
        };
        if ids.is_empty() {
            return Ok(Waited {
                text: "no agent is working".to_owned(),
                ..Waited::default()
            });
        }
        let mut turns = Vec::new();
        {
            let mut agents = self.agents.lock();
            for id in &ids {
                let agent = agents.get_mut(id).ok_or_else(|| self.unknown(id))?;
                turns.push((id.clone(), agent.turns.take_turn()));
            }
        }
        let limit = a.timeout_ms.map_or(DEFAULT_WAIT, |ms| {
            Duration::from_millis(ms.min(MAX_WAIT_MS))
        });
        let deadline = tokio::time::Instant::now() + limit;
        let mut lines = Vec::new();
        let mut waited = Waited::default();
        for (id, turn) in turns {
            let Some(mut turn) = turn else {
                let agents = self.agents.lock();
                let last = agents.get(&id).and_then(|a| a.last.clone());
                lines.push(format!(
                    "[{id}] idle; its last answer was read{}",
                    last.map(|l| format!(" ({l})")).unwrap_or_default()
                ));
                continue;
            };
            match tokio::time::timeout_at(deadline, &mut turn).await {
                Ok(Ok((mut result, usage))) => {
                    waited.spent.add(&usage);
                    waited.pending.append(&mut result.pending);
                    let (line, status) = describe(&id, &result);
                    if let Some(agent) = self.agents.lock().get_mut(&id) {
                        agent.last = Some(status);
                    }
                    lines.push(line);
                }
                Ok(Err(e)) => lines.push(format!("[{id}] stopped: {e}")),
                Err(_) => {
                    lines.push(format!(
                        "[{id}] still working after {} ms",
                        limit.as_millis()
                    ));
                    if let Some(agent) = self.agents.lock().get_mut(&id) {
                        agent.turns.put_back(turn);
                    }
                }
            }
        }
        waited.text = lines.join("\n\n");
        Ok(waited)
    }

    async fn close(&self, id: &str) -> Result<(String, Usage), String> {
        let agent = self
            .agents
            .lock()
            .remove(id)
            .ok_or_else(|| self.unknown(id))?;
        let mut turns = agent.turns;
        turns.cancel();
        let mut spent = Usage::default();
        if let Some(turn) = turns.take_turn()
            && let Ok(Ok((_, usage))) = tokio::time::timeout(Duration::from_secs(10), turn).await
        {
            spent = usage;
        }
        // Dropping the child frees its place in the tree.
        Ok((format!("closed agent {id} (`{}`)", turns.module()), spent))
    }

    fn list(&self) -> String {
        let agents = self.agents.lock();
        let mut lines: Vec<String> = agents
            .iter()
            .map(|(id, a)| {
                let state = match a.turns.state() {
                    TurnState::Working => "working".to_owned(),
                    TurnState::Answered => "answered (not yet read: `wait`)".to_owned(),
                    TurnState::Idle => format!(
                        "idle{}",
                        a.last
                            .as_ref()
                            .map(|l| format!(", last {l}"))
                            .unwrap_or_default()
                    ),
                };
                format!("{id} `{}`: {state}", a.turns.module())
            })
            .collect();
        if lines.is_empty() {
            lines.push("no agents".to_owned());
        }
        lines.push(format!("may spawn: {}", self.names()));
        lines.join("\n")
    }

    fn names(&self) -> String {
        self.spawnable
            .iter()
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn unknown(&self, id: &str) -> String {
        let agents = self.agents.lock();
        let known: Vec<&str> = agents.keys().map(String::as_str).collect();
        format!(
            "no agent {id}; {}",
            if known.is_empty() {
                "none is open".to_owned()
            } else {
                format!("open: {}", known.join(", "))
            }
        )
    }
}

/// What a `wait` collected.
#[derive(Default)]
struct Waited {
    /// For the model.
    text: String,
    /// What the turns spent.
    spent: Usage,
    /// The calls the suspended agents wait on.
    pending: Vec<PendingCall>,
}

/// A finished turn for the model, and its status in a word.
fn describe(id: &str, result: &ChildResult) -> (String, String) {
    let status = match result.reported() {
        (status, Some(error)) => format!("{}: {error}", status.as_str()),
        (status, None) => status.as_str().to_owned(),
    };
    let mut line = format!("[{id}] {status}");
    if !result.modified_files.is_empty() {
        line.push_str(&format!("; changed {}", result.modified_files.join(", ")));
    }
    if !result.response.is_empty() {
        line.push('\n');
        line.push_str(&result.response);
    }
    (line, status)
}

#[derive(Deserialize)]
struct SpawnArgs {
    agent: String,
    task: String,
    model: Option<String>,
    max_iterations: Option<u32>,
    max_tokens: Option<u64>,
    timeout_ms: Option<u64>,
}

#[derive(Deserialize)]
struct SendArgs {
    id: String,
    message: String,
}

#[derive(Deserialize)]
struct WaitArgs {
    ids: Option<Vec<String>>,
    timeout_ms: Option<u64>,
}

#[derive(Deserialize)]
struct CloseArgs {
    id: String,
}

/// One of the five tools, over its context's delegation.
struct DelegationTool {
    spec: ToolSpec,
    delegation: Arc<Delegation>,
}

fn spec_of(name: &str, spawnable: &[(String, Option<String>)]) -> ToolSpec {
    let (description, parameters) = match name {
        "spawn_agent" => {
            let listing: Vec<String> = spawnable
                .iter()
                .map(|(n, d)| match d {
                    Some(d) => format!("- {n}: {d}"),
                    None => format!("- {n}"),
                })
                .collect();
            let names: Vec<&str> = spawnable.iter().map(|(n, _)| n.as_str()).collect();
            (
                format!(
                    "Start an agent on a task in a context of its own (its own history, tools and limits). It works in the background: `wait` for its answer. Agents:\n{}",
                    listing.join("\n")
                ),
                json!({
                    "type": "object",
                    "properties": {
                        "agent": {"type": "string", "enum": names},
                        "task": {"type": "string", "minLength": 1},
                        "model": {"type": "string", "description": "PROVIDER/MODEL or MODEL (of this run's provider); default: the agent's own, else this one's"},
                        "max_iterations": {"type": "integer", "minimum": 1},
                        "max_tokens": {"type": "integer", "minimum": 1},
                        "timeout_ms": {"type": "integer", "minimum": 1}
                    },
                    "required": ["agent", "task"],
                    "additionalProperties": false
                }),
            )
        }
        "send_input" => (
            "Give an agent that finished its turn a follow-up; it keeps its history. `wait` for its answer.".to_owned(),
            json!({
                "type": "object",
                "properties": {
                    "id": {"type": "string"},
                    "message": {"type": "string", "minLength": 1}
                },
                "required": ["id", "message"],
                "additionalProperties": false
            }),
        ),
        "wait" => (
            "Wait for agents' answers (by id; default: every agent working), up to timeout_ms (default 600000).".to_owned(),
            json!({
                "type": "object",
                "properties": {
                    "ids": {"type": "array", "items": {"type": "string"}},
                    "timeout_ms": {"type": "integer", "minimum": 1, "maximum": MAX_WAIT_MS}
                },
                "additionalProperties": false
            }),
        ),
        "close_agent" => (
            "Close an agent: stop it if it works and free its place.".to_owned(),
            json!({
                "type": "object",
                "properties": {"id": {"type": "string"}},
                "required": ["id"],
                "additionalProperties": false
            }),
        ),
        _ => (
            "List the open agents and what may be spawned.".to_owned(),
            json!({"type": "object", "properties": {}, "additionalProperties": false}),
        ),
    };
    ToolSpec {
        name: name.to_owned(),
        description,
        parameters,
        // Starting and waiting on agents changes no file; what the agents do is asked about
        // call by call, under their own rules.
        kind: ToolKind::ReadOnly,
        category: ToolCategory::Internal,
    }
}

#[async_trait]
impl Tool for DelegationTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn run(
        &self,
        arguments: serde_json::Value,
        env: &ToolEnv,
    ) -> Result<ToolOutput, ToolError> {
        let parse = |e: serde_json::Error| ToolError::InvalidArguments(e.to_string());
        let d = &self.delegation;
        let (text, spent) = match self.spec.name.as_str() {
            "spawn_agent" => {
                let run = env.run.as_ref().ok_or_else(|| {
                    ToolError::Failed("spawn_agent runs only inside a run".to_owned())
                })?;
                let a: SpawnArgs = serde_json::from_value(arguments).map_err(parse)?;
                (d.spawn(run, a).await.map_err(ToolError::Failed)?, None)
            }
            "send_input" => {
                let a: SendArgs = serde_json::from_value(arguments).map_err(parse)?;
                (d.send(a).map_err(ToolError::Failed)?, None)
            }
            "wait" => {
                let a: WaitArgs = serde_json::from_value(arguments).map_err(parse)?;
                let waited = tokio::select! {
                    waited = d.wait(a) => waited,
                    () = env.cancel.cancelled() => return Err(ToolError::Cancelled),
                };
                let waited = waited.map_err(ToolError::Failed)?;
                let mut out = ToolOutput::text(waited.text);
                out.spent = Some(waited.spent);
                // An agent that suspended suspends this run on the calls it waits on.
                if !waited.pending.is_empty() {
                    out.break_loop = Some(BreakLoop::WaitsOn(waited.pending));
                }
                return Ok(out);
            }
            "close_agent" => {
                let a: CloseArgs = serde_json::from_value(arguments).map_err(parse)?;
                let (text, spent) = d.close(&a.id).await.map_err(ToolError::Failed)?;
                (text, Some(spent))
            }
            _ => (d.list(), None),
        };
        let mut out = ToolOutput::text(text);
        out.spent = spent;
        Ok(out)
    }
}
