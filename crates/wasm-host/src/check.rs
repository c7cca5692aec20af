//! The checks a guest goes through before it runs, one by one, for `--validate-module` and
//! registry listings: each check passes with a detail, fails with the reason, or is skipped
//! because an earlier one failed.

use std::sync::Arc;

use serde::Serialize;
use wonopcode_agent_loop::{AgentLoop, LoopCapabilities};

use crate::engine::WasmEngine;
use crate::error::WasmError;
use crate::state::HostConfig;
use crate::wasm_loop::WasmAgentLoop;

/// One step of validation, in the order they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Check {
    /// The bytes are WebAssembly and parse to the end.
    Parse,
    /// A component, not a core module.
    Component,
    /// It uses the `wonopcode:agent-loop` world.
    World,
    /// Built against a version the host supports (0.2.x).
    WitVersion,
    /// It exports `agent-loop` and `custom-tool-handler`.
    Exports,
    /// Cranelift compiles it.
    Compile,
    /// The host satisfies every import.
    Imports,
    /// It instantiates within the limits.
    Instantiate,
    /// `get-name` answers.
    GetName,
    /// `get-capabilities` answers.
    GetCapabilities,
}

impl Check {
    /// Every check, in order.
    pub const ALL: [Check; 10] = [
        Check::Parse,
        Check::Component,
        Check::World,
        Check::WitVersion,
        Check::Exports,
        Check::Compile,
        Check::Imports,
        Check::Instantiate,
        Check::GetName,
        Check::GetCapabilities,
    ];

    /// The check's name as users see it.
    pub fn label(self) -> &'static str {
        match self {
            Check::Parse => "parse",
            Check::Component => "component",
            Check::World => "world",
            Check::WitVersion => "wit version",
            Check::Exports => "exports",
            Check::Compile => "compile",
            Check::Imports => "imports",
            Check::Instantiate => "instantiate",
            Check::GetName => "get-name",
            Check::GetCapabilities => "get-capabilities",
        }
    }

    /// The check an error comes from (`None` for errors outside validation).
    pub fn of(error: &WasmError) -> Option<Check> {
        Some(match error {
            WasmError::Read { .. } | WasmError::NotWasm { .. } | WasmError::Malformed { .. } => {
                Check::Parse
            }
            WasmError::CoreModule { .. } => Check::Component,
            WasmError::OtherWorld { .. } => Check::World,
            WasmError::IncompatibleVersion { .. } | WasmError::MixedVersions { .. } => {
                Check::WitVersion
            }
            WasmError::MissingExport { .. } => Check::Exports,
            WasmError::Compile { .. } => Check::Compile,
            WasmError::UnsatisfiedImport { .. } => Check::Imports,
            WasmError::Instantiate { .. } => Check::Instantiate,
            WasmError::GuestCall { export, .. } if *export == "get-name" => Check::GetName,
            WasmError::GuestCall { .. } => Check::GetCapabilities,
            WasmError::Engine(_) => return None,
        })
    }
}

/// How one check went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", content = "detail", rename_all = "snake_case")]
pub enum Outcome {
    /// Passed; the detail says what was found.
    Ok(String),
    /// Failed, with the reason.
    Failed(String),
    /// Not run, because an earlier check failed.
    Skipped,
}

/// Everything validation found about a guest.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Each check and how it went, in order.
    pub checks: Vec<(Check, Outcome)>,
    /// The loop's name, when `get-name` answered.
    pub name: Option<String>,
    /// The WIT version it was built against, when known.
    pub wit_version: Option<String>,
    /// Its capabilities, when `get-capabilities` answered.
    pub capabilities: Option<LoopCapabilities>,
    /// Size in bytes.
    pub size: usize,
    /// SHA-256 of the bytes, hex.
    pub sha256: String,
}

impl Report {
    /// Whether every check passed.
    pub fn passed(&self) -> bool {
        self.checks
            .iter()
            .all(|(_, outcome)| matches!(outcome, Outcome::Ok(_)))
    }

    /// The first failure, as one line.
    pub fn failure(&self) -> Option<&str> {
        self.checks.iter().find_map(|(_, outcome)| match outcome {
            Outcome::Failed(reason) => Some(reason.as_str()),
            _ => None,
        })
    }
}

/// Runs every check on `bytes`; `origin` names them in messages.
pub async fn check(engine: Arc<WasmEngine>, bytes: &[u8], origin: &str) -> Report {
    load_checked(engine, bytes, origin).await.0
}

/// Runs every check and keeps the loaded guest when they all pass, so a caller that goes on
/// (to smoke-call its tools) does not load it twice.
pub async fn load_checked(
    engine: Arc<WasmEngine>,
    bytes: &[u8],
    origin: &str,
) -> (Report, Option<WasmAgentLoop>) {
    match WasmAgentLoop::from_bytes(engine, bytes, origin, HostConfig::default()).await {
        Ok(guest) => {
            let info = guest.info();
            let capabilities = guest.capabilities();
            let details = [
                format!("{} bytes", info.size),
                "a component".to_owned(),
                "wonopcode:agent-loop".to_owned(),
                info.api_version.clone(),
                "agent-loop, custom-tool-handler".to_owned(),
                "compiled".to_owned(),
                format!("{} imports, all provided", info.imports.len()),
                "instantiated".to_owned(),
                guest.name().to_owned(),
                short_capabilities(&capabilities),
            ];
            let report = Report {
                checks: Check::ALL
                    .into_iter()
                    .zip(details.map(Outcome::Ok))
                    .collect(),
                name: Some(guest.name().to_owned()),
                wit_version: Some(info.api_version.clone()),
                capabilities: Some(capabilities),
                size: info.size,
                sha256: info.sha256.clone(),
            };
            (report, Some(guest))
        }
        Err(error) => {
            use sha2::Digest;
            let failed = Check::of(&error).unwrap_or(Check::Instantiate);
            let checks = Check::ALL
                .into_iter()
                .map(|check| {
                    let outcome = match check {
                        c if c == failed => Outcome::Failed(error.to_string()),
                        c if (c as u8) < (failed as u8) => Outcome::Ok(String::new()),
                        _ => Outcome::Skipped,
                    };
                    (check, outcome)
                })
                .collect();
            // Past the header checks the version is known, though a later check failed.
            let wit_version = ((failed as u8) > (Check::Exports as u8))
                .then(|| crate::loader::inspect(bytes, origin).ok())
                .flatten()
                .map(|info| info.api_version);
            let report = Report {
                checks,
                name: None,
                wit_version,
                capabilities: None,
                size: bytes.len(),
                sha256: hex::encode(sha2::Sha256::digest(bytes)),
            };
            (report, None)
        }
    }
}

/// Capabilities in short form: the flags that are set, comma-separated.
pub fn short_capabilities(caps: &LoopCapabilities) -> String {
    let flags = [
        (caps.streaming, "streaming"),
        (caps.extended_thinking, "thinking"),
        (caps.parallel_tools, "parallel-tools"),
        (caps.tool_observation, "observation"),
        (caps.auto_compaction, "compaction"),
        (caps.supports_sub_contexts, "sub-contexts"),
        (caps.supports_custom_tools, "custom-tools"),
    ];
    let set: Vec<&str> = flags
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, name)| *name)
        .collect();
    if set.is_empty() {
        "none".to_owned()
    } else {
        set.join(",")
    }
}

/// How a smoke call of one custom tool went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolSmoke {
    /// The tool.
    pub tool: String,
    /// Its answer, or its error (a trap included).
    pub outcome: Result<String, String>,
}

/// A model for validation runs: there is none, and a guest that asks gets an error.
struct NoModel(wonopcode_protocol::ModelInfo);

#[async_trait::async_trait]
impl wonopcode_protocol::LanguageModel for NoModel {
    fn info(&self) -> &wonopcode_protocol::ModelInfo {
        &self.0
    }

    async fn stream(
        &self,
        _request: wonopcode_protocol::ModelRequest,
    ) -> Result<wonopcode_protocol::ChunkStream, wonopcode_protocol::ModelError> {
        Err(wonopcode_protocol::ModelError::Other(
            "validation runs no model".to_owned(),
        ))
    }
}

/// Starts the guest (`on-start`, where guests register their tools) in an empty world — no
/// model, no host tools, no workspace — and calls each custom tool it registered with `{}`
/// arguments through `custom-tool-handler`. The outer `Err` says why the guest could not be
/// started at all.
pub async fn smoke_custom_tools(guest: &WasmAgentLoop) -> Result<Vec<ToolSmoke>, String> {
    use wonopcode_agent_loop::{LoopConfig, LoopContext, RunStats, ToolRegistry};
    use wonopcode_protocol::{
        AllowAll, ContextPath, Emitter, ModelInfo, SharedGate, SharedModel, event::NullSink,
    };
    let provider: SharedModel = Arc::new(NoModel(ModelInfo {
        id: "none".to_owned(),
        provider: "none".to_owned(),
        context_window: 0,
        max_output: 0,
        pricing: None,
        capabilities: Default::default(),
    }));
    let gate: SharedGate = Arc::new(AllowAll);
    let (tools, config) = (ToolRegistry::new(), LoopConfig::default());
    let cancel = tokio_util::sync::CancellationToken::new();
    let events = Emitter::new(Arc::new(NullSink), ContextPath::root());
    let cwd = std::env::temp_dir();
    let mut messages = Vec::new();
    let mut ctx = LoopContext {
        cwd: &cwd,
        messages: &mut messages,
        provider: &provider,
        tools: &tools,
        permissions: &gate,
        config: &config,
        shared: Arc::default(),
        cancel: &cancel,
        events: &events,
        session_id: "validate".to_owned(),
        stats: RunStats::default(),
        attachments: Vec::new(),
        steering: Default::default(),
    };
    guest
        .on_start(&mut ctx)
        .await
        .map_err(|e| format!("on-start failed: {e}"))?;
    let mut results = Vec::new();
    for tool in guest.custom_tool_names().await {
        let outcome = match guest.call_custom_tool(&mut ctx, &tool, "{}").await {
            Ok(answer) => answer,
            Err(trap) => Err(trap.to_string()),
        };
        results.push(ToolSmoke { tool, outcome });
    }
    Ok(results)
}
