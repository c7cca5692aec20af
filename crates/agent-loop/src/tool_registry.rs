//! The tool registry and its single dispatch path: look up, parse, validate against the
//! schema, ask the permission gate, run under a timeout and the cancellation token, truncate.
//! The native loop and the WebAssembly host both execute tools through here, so policy and
//! truncation are the same whichever loop runs.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tracing::Instrument;

use wonopcode_protocol::event::ItemStatus;
use wonopcode_protocol::model::ToolSchema;
use wonopcode_protocol::permission::{
    PermissionDecision, PermissionGate, PermissionRequest, PermissionStatus,
};

use crate::tool::{Tool, ToolEnv, ToolError, ToolOutput};
use crate::truncate::{DEFAULT_MAX_OUTPUT_BYTES, truncate_middle};

/// How long a tool may take to say what a call would change before it is asked about.
const PREVIEW_TIMEOUT: Duration = Duration::from_secs(2);

/// Errors registering a tool.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ToolRegistryError {
    /// Another tool already has the name.
    #[error("a tool named `{0}` is already registered")]
    Duplicate(String),
    /// The tool's parameter schema is not a valid JSON Schema.
    #[error("tool `{name}` has an invalid parameter schema: {reason}")]
    InvalidSchema {
        /// The tool.
        name: String,
        /// What the schema compiler said.
        reason: String,
    },
}

impl ToolRegistryError {
    /// The tool that could not be registered, to say whose it was.
    pub fn tool(&self) -> &str {
        match self {
            Self::Duplicate(name) | Self::InvalidSchema { name, .. } => name,
        }
    }
}

struct Registered {
    tool: Arc<dyn Tool>,
    check: ArgumentCheck,
}

/// What the model reads for a call of `name` when no tool it may call has that name: each
/// one it may call (`known`, in the order given). The registry's line for its own tools, and
/// a guest's for its host and custom tools together.
pub fn unavailable_tool(name: &str, known: &[&str]) -> String {
    if known.is_empty() {
        format!("unknown tool `{name}`; no tools are available here")
    } else {
        format!(
            "unknown tool `{name}`; available tools: {}",
            known.join(", ")
        )
    }
}

/// A tool's compiled argument schema: the check every call of a tool goes through, a host
/// tool's in the registry and a guest's custom tool's in the WebAssembly host alike, so a
/// model reads the same line for the same mistake whichever tool it called.
pub struct ArgumentCheck {
    validator: jsonschema::Validator,
}

impl std::fmt::Debug for ArgumentCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArgumentCheck").finish_non_exhaustive()
    }
}

impl ArgumentCheck {
    /// Compiles `schema`; `Err` is what the schema compiler said.
    pub fn new(schema: &serde_json::Value) -> Result<Self, String> {
        jsonschema::validator_for(schema)
            .map(|validator| Self { validator })
            .map_err(|e| e.to_string())
    }

    /// The arguments of a call of `name` (empty text is `{}`), or the one line the model
    /// reads: not JSON, or each field that breaks the schema.
    pub fn parse(&self, name: &str, arguments: &str) -> Result<serde_json::Value, String> {
        let text = if arguments.trim().is_empty() {
            "{}"
        } else {
            arguments
        };
        let value: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| format!("arguments for `{name}` are not valid JSON: {e}"))?;
        let problems: Vec<String> = self
            .validator
            .iter_errors(&value)
            .map(|e| {
                let path = e.instance_path().to_string();
                let field = if path.is_empty() {
                    "arguments".to_owned()
                } else {
                    format!("field `{path}`")
                };
                format!("{field}: {e}")
            })
            .collect();
        if problems.is_empty() {
            Ok(value)
        } else {
            Err(format!(
                "invalid arguments for `{name}`: {}",
                problems.join("; ")
            ))
        }
    }
}

/// How a dispatched call ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Dispatch {
    /// The call finished (successfully or not); `output` goes to the model.
    Finished {
        /// The (truncated) output (boxed: it is most of the value's size).
        output: Box<ToolOutput>,
        /// Item status for the event stream.
        status: ItemStatus,
        /// Wall time.
        duration: Duration,
    },
    /// The permission gate suspended the run; the call stays pending.
    Suspended {
        /// Why.
        reason: String,
    },
}

/// Limits applied to every call.
#[derive(Debug, Clone, Copy)]
pub struct DispatchLimits {
    /// Outer bound on one call; tools with their own timeout (bash) stop sooner.
    pub timeout: Duration,
    /// Output cap in bytes.
    pub max_output_bytes: usize,
}

impl Default for DispatchLimits {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(600),
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
        }
    }
}

/// Tools that may change while a run goes on, such as an MCP server's after it says its list
/// changed. A registry that watches a source takes its new tools at the next model request
/// ([`ToolRegistry::refresh`]), so a response never names a tool the request did not offer.
pub trait ToolSource: Send + Sync {
    /// A number that changes whenever the tools do.
    fn generation(&self) -> u64;
    /// The tools as they are now.
    fn tools(&self) -> Vec<Arc<dyn Tool>>;
}

/// Which names a filtered registry may hold, judged again for each tool a watched source
/// brings later (an MCP server that starts after the registry was narrowed).
pub type ToolFilter = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// A source a registry watches: the generation it last took, the names that gave, and
/// which names it may give this registry (a filtered registry's; `None`: any).
#[derive(Clone)]
struct Watched {
    source: Arc<dyn ToolSource>,
    generation: u64,
    names: Vec<String>,
    allowed: Option<ToolFilter>,
}

/// Tools by name. Cloning is cheap (the tools are shared), so a context can take its own copy
/// and add tools of its own.
#[derive(Default, Clone)]
pub struct ToolRegistry {
    tools: BTreeMap<String, Arc<Registered>>,
    limits: DispatchLimits,
    /// Sources whose tools may change.
    watched: Vec<Watched>,
}

impl ToolRegistry {
    /// An empty registry with default limits.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the limits applied to every call.
    pub fn with_limits(mut self, limits: DispatchLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Adds a tool, compiling its schema. Fails on a duplicate name or an invalid schema.
    pub fn register(&mut self, tool: Arc<dyn Tool>) -> Result<(), ToolRegistryError> {
        let name = tool.spec().name.clone();
        if self.tools.contains_key(&name) {
            return Err(ToolRegistryError::Duplicate(name));
        }
        let check = ArgumentCheck::new(&tool.spec().parameters).map_err(|reason| {
            ToolRegistryError::InvalidSchema {
                name: name.clone(),
                reason,
            }
        })?;
        self.tools
            .insert(name, Arc::new(Registered { tool, check }));
        Ok(())
    }

    /// Adds the tools of `source`, and takes its new ones whenever it changes (at
    /// [`ToolRegistry::refresh`]). A tool whose name is taken is left out, with the reason.
    pub fn watch(&mut self, source: Arc<dyn ToolSource>) -> Vec<ToolRegistryError> {
        let mut watched = Watched {
            generation: source.generation(),
            source,
            names: Vec::new(),
            allowed: None,
        };
        let errors = self.take(&mut watched);
        self.watched.push(watched);
        errors
    }

    /// Puts `tool` in the place of the tool of the same name (a context's narrower `bash`),
    /// compiling its schema; a name the registry lacks is not added (a context never gains
    /// a tool this way). Whether it replaced one.
    pub fn replace(&mut self, tool: Arc<dyn Tool>) -> Result<bool, ToolRegistryError> {
        let name = tool.spec().name.clone();
        if !self.tools.contains_key(&name) {
            return Ok(false);
        }
        self.tools.remove(&name);
        self.register(tool)?;
        Ok(true)
    }

    /// Whether a watched source's tools changed since they were taken, so that
    /// [`Self::refresh`] has something to do (checked before every request, without
    /// needing the registry mutably).
    pub fn changed(&self) -> bool {
        self.watched
            .iter()
            .any(|source| source.source.generation() != source.generation)
    }

    /// Takes the tools of every watched source that changed since it was last read: its old
    /// tools go, its new ones come (a filtered registry keeps to its names). Called before
    /// each model request; what could not be added is returned.
    pub fn refresh(&mut self) -> Vec<ToolRegistryError> {
        let mut errors = Vec::new();
        let mut watched = std::mem::take(&mut self.watched);
        for source in &mut watched {
            let generation = source.source.generation();
            if generation == source.generation {
                continue;
            }
            source.generation = generation;
            for name in source.names.drain(..) {
                self.tools.remove(&name);
            }
            errors.extend(self.take(source));
        }
        self.watched = watched;
        errors
    }

    /// Registers the current tools of `watched` that this registry may hold.
    fn take(&mut self, watched: &mut Watched) -> Vec<ToolRegistryError> {
        let mut errors = Vec::new();
        for tool in watched.source.tools() {
            let name = tool.spec().name.clone();
            if watched.allowed.as_ref().is_some_and(|keep| !keep(&name)) {
                continue;
            }
            match self.register(tool) {
                Ok(()) => watched.names.push(name),
                Err(e) => errors.push(e),
            }
        }
        errors
    }

    /// A registry holding only the tools named in `names` (a context's enabled set). Calls
    /// of any other tool are then unknown tools, reported to the model as such. Watched
    /// sources stay watched, within the same names.
    pub fn filtered<'n>(&self, names: impl IntoIterator<Item = &'n str>) -> Self {
        let names: BTreeSet<String> = names.into_iter().map(str::to_owned).collect();
        self.filtered_by(Arc::new(move |name: &str| names.contains(name)))
    }

    /// A registry holding only the tools `keep` accepts, now and later: a watched source's
    /// tools that arrive afterwards are judged by it too (and by any filter this registry
    /// already had), so a rule such as "every tool of server `s`" or "all but `bash`"
    /// holds for a server that was still starting.
    pub fn filtered_by(&self, keep: ToolFilter) -> Self {
        let tools = self
            .tools
            .iter()
            .filter(|(name, _)| keep(name))
            .map(|(name, entry)| (name.clone(), Arc::clone(entry)))
            .collect();
        let watched = self
            .watched
            .iter()
            .map(|w| Watched {
                source: w.source.clone(),
                generation: w.generation,
                names: w.names.iter().filter(|n| keep(n)).cloned().collect(),
                allowed: Some(match &w.allowed {
                    Some(outer) => {
                        let (outer, inner) = (outer.clone(), keep.clone());
                        Arc::new(move |name: &str| outer(name) && inner(name))
                    }
                    None => keep.clone(),
                }),
            })
            .collect();
        Self {
            tools,
            limits: self.limits,
            watched,
        }
    }

    /// The tool with this name.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.get(name).map(|r| &r.tool)
    }

    /// Tool names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> + Clone {
        self.tools.keys().map(String::as_str)
    }

    /// Schemas of every tool, sorted by name, for the model.
    pub fn schemas(&self) -> Vec<ToolSchema> {
        self.tools.values().map(|r| schema_of(&r.tool)).collect()
    }

    /// The schema of the tool named `name`, when the registry holds it.
    pub fn schema(&self, name: &str) -> Option<ToolSchema> {
        self.get(name).map(schema_of)
    }

    /// Parses a call's arguments: they must be JSON that fits the tool's schema. The error names the tool
    /// and the offending field, and goes back to the model.
    pub fn parse_arguments(
        &self,
        name: &str,
        arguments: &str,
    ) -> Result<serde_json::Value, String> {
        let Some(registered) = self.tools.get(name) else {
            return Err(unavailable_tool(name, &self.names().collect::<Vec<_>>()));
        };
        registered.check.parse(name, arguments)
    }

    /// Runs one call through the whole path. Never fails: every problem becomes an error
    /// output for the model, except a suspension.
    pub async fn dispatch(
        &self,
        name: &str,
        arguments: &str,
        env: &ToolEnv,
        gate: &dyn PermissionGate,
    ) -> Dispatch {
        let mut started = Instant::now();
        let span = tracing::info_span!("tool", context = %env.context, depth = env.context.depth(), tool = name);
        async move {
            let finished = |output: ToolOutput, status: ItemStatus, started: Instant| Dispatch::Finished {
                output: Box::new(output),
                status,
                duration: started.elapsed(),
            };
            let value = match self.parse_arguments(name, arguments) {
                Ok(v) => v,
                Err(message) => return finished(ToolOutput::error(message), ItemStatus::Failed, started),
            };
            let Some(registered) = self.tools.get(name) else {
                return finished(ToolOutput::error(format!("unknown tool `{name}`")), ItemStatus::Failed, started);
            };
            let tool = &registered.tool;
            let mut request = PermissionRequest {
                tool: name.to_owned(),
                kind: tool.spec().kind,
                subject: tool.permission_subject(&value, &env.workspace_root),
                preview: None,
            };
            // Whoever is asked sees what the call would change; a file read, bounded in size
            // by the tool and in time here.
            if gate.status(&request) == PermissionStatus::NeedsApproval {
                request.preview = tokio::time::timeout(PREVIEW_TIMEOUT, tool.preview(&value, &env.workspace_root))
                    .await
                    .ok()
                    .flatten();
            }
            match gate.decide(&request).await {
                PermissionDecision::Allow => {}
                PermissionDecision::Deny(reason) => {
                    return finished(
                        ToolOutput::error(format!("permission denied for `{name}`: {reason}")),
                        ItemStatus::Declined,
                        started,
                    );
                }
                PermissionDecision::Suspend(reason) => return Dispatch::Suspended { reason },
            }
            // The call's duration is its run time, not the time someone took to approve it.
            started = Instant::now();
            let result = tokio::select! {
                biased;
                () = env.cancel.cancelled() => Err(ToolError::Cancelled),
                r = tokio::time::timeout(self.limits.timeout, tool.run(value, env)) => match r {
                    Ok(r) => r,
                    Err(_) => Err(ToolError::Timeout { after_ms: u64::try_from(self.limits.timeout.as_millis()).unwrap_or(u64::MAX) }),
                },
            };
            let (mut output, status) = match result {
                Ok(out) if out.is_error => (out, ItemStatus::Failed),
                Ok(out) => (out, ItemStatus::Completed),
                Err(e) => (ToolOutput::error(format!("`{name}` failed: {e}")), ItemStatus::Failed),
            };
            let cap = tool.output_cap().unwrap_or_default().max(self.limits.max_output_bytes);
            output.content = truncate_middle(&output.content, cap, output.omitted_bytes);
            tracing::debug!(latency_ms = started.elapsed().as_millis() as u64, ?status, "tool finished");
            finished(output, status, started)
        }
        .instrument(span)
        .await
    }
}

/// A tool as the model sees it.
fn schema_of(tool: &Arc<dyn Tool>) -> ToolSchema {
    let spec = tool.spec();
    ToolSchema {
        name: spec.name.clone(),
        description: spec.description.clone(),
        parameters: spec.parameters.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_trait::async_trait;
    use wonopcode_protocol::permission::AllowAll;
    use wonopcode_protocol::{ToolCategory, ToolKind, ToolSpec};

    struct Echo(ToolSpec);

    #[async_trait]
    impl Tool for Echo {
        fn spec(&self) -> &ToolSpec {
            &self.0
        }
        async fn run(
            &self,
            args: serde_json::Value,
            _env: &ToolEnv,
        ) -> Result<ToolOutput, ToolError> {
            Ok(ToolOutput::text(
                args["text"].as_str().unwrap_or_default().repeat(3000),
            ))
        }
    }

    fn echo_named(name: &str) -> Arc<dyn Tool> {
        Arc::new(Echo(ToolSpec {
            name: name.into(),
            description: name.into(),
            parameters: serde_json::json!({"type": "object"}),
            kind: ToolKind::ReadOnly,
            category: ToolCategory::Mcp,
        }))
    }

    /// A source whose tools a test changes.
    #[derive(Default)]
    struct Changing {
        generation: std::sync::atomic::AtomicU64,
        names: std::sync::Mutex<Vec<&'static str>>,
    }

    impl Changing {
        fn set(&self, names: &[&'static str]) {
            *self.names.lock().unwrap() = names.to_vec();
            self.generation
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }

    impl ToolSource for Changing {
        fn generation(&self) -> u64 {
            self.generation.load(std::sync::atomic::Ordering::SeqCst)
        }
        fn tools(&self) -> Vec<Arc<dyn Tool>> {
            self.names
                .lock()
                .unwrap()
                .iter()
                .map(|n| echo_named(n))
                .collect()
        }
    }

    #[test]
    fn a_changed_source_is_taken_at_refresh_and_filters_still_hold() {
        let source = Arc::new(Changing::default());
        source.set(&["mcp__s__a"]);
        let mut parent = registry();
        assert!(parent.watch(source.clone()).is_empty());
        let mut child = parent.filtered(["echo", "mcp__s__a", "mcp__s__c"]);
        source.set(&["mcp__s__b", "mcp__s__c", "echo"]);
        // Nothing moves before the next request.
        assert!(parent.get("mcp__s__a").is_some());
        let errors = parent.refresh();
        let names: Vec<&str> = parent.names().collect();
        assert_eq!(names, ["echo", "mcp__s__b", "mcp__s__c"]);
        // A changed tool that clashes with one the registry has is refused, said.
        assert_eq!(errors, [ToolRegistryError::Duplicate("echo".into())]);
        // The child keeps to the names it was given.
        child.refresh();
        let names: Vec<&str> = child.names().collect();
        assert_eq!(names, ["echo", "mcp__s__c"]);
    }

    #[test]
    fn a_rule_filter_judges_the_tools_a_source_brings_later() {
        // A server still starting: no tools yet.
        let source = Arc::new(Changing::default());
        let mut parent = registry();
        assert!(parent.watch(source.clone()).is_empty());
        // "Every tool of server `s`, but not `mcp__s__drop`", narrowed again: "no `echo`".
        let server: ToolFilter =
            Arc::new(|n: &str| n == "echo" || n.starts_with("mcp__s__") && n != "mcp__s__drop");
        let mut child = parent.filtered_by(server);
        let mut grandchild = child.filtered_by(Arc::new(|n: &str| n != "echo"));
        source.set(&["mcp__s__a", "mcp__s__drop", "mcp__t__x"]);
        child.refresh();
        grandchild.refresh();
        let names: Vec<&str> = child.names().collect();
        assert_eq!(names, ["echo", "mcp__s__a"]);
        let names: Vec<&str> = grandchild.names().collect();
        assert_eq!(names, ["mcp__s__a"]);
    }

    fn registry() -> ToolRegistry {
        let mut r = ToolRegistry::new();
        r.register(Arc::new(Echo(ToolSpec {
            name: "echo".into(),
            description: "echo".into(),
            parameters: serde_json::json!({"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}),
            kind: ToolKind::ReadOnly,
            category: ToolCategory::Internal,
        })))
        .unwrap();
        r
    }

    fn env() -> ToolEnv {
        ToolEnv::outside_a_run(std::env::temp_dir())
    }

    #[test]
    fn validation_names_the_field() {
        let r = registry();
        let err = r.parse_arguments("echo", r#"{"text": 5}"#).unwrap_err();
        assert!(err.contains("field `/text`"), "{err}");
        let err = r.parse_arguments("echo", r#"{}"#).unwrap_err();
        assert!(err.contains("text"), "{err}");
        let err = r.parse_arguments("echo", r#"{"text": "#).unwrap_err();
        assert!(err.contains("not valid JSON"), "{err}");
        let err = r.parse_arguments("nope", "{}").unwrap_err();
        assert!(
            err.contains("unknown tool `nope`; available tools: echo"),
            "{err}"
        );
        let err = ToolRegistry::new()
            .parse_arguments("nope", "{}")
            .unwrap_err();
        assert_eq!(err, "unknown tool `nope`; no tools are available here");
    }

    #[test]
    fn invalid_schema_is_refused() {
        let mut r = registry();
        let err = r
            .register(Arc::new(Echo(ToolSpec {
                name: "bad".into(),
                description: String::new(),
                parameters: serde_json::json!({"type": "no-such-type"}),
                kind: ToolKind::ReadOnly,
                category: ToolCategory::Custom,
            })))
            .unwrap_err();
        assert!(matches!(err, ToolRegistryError::InvalidSchema { .. }));
    }

    #[tokio::test]
    async fn output_is_truncated() {
        let r = registry();
        let Dispatch::Finished { output, status, .. } = r
            .dispatch("echo", r#"{"text":"abcd"}"#, &env(), &AllowAll)
            .await
        else {
            panic!("suspended");
        };
        assert_eq!(status, ItemStatus::Completed);
        assert!(output.content.len() < 10_200);
        assert!(output.content.contains("cut from the middle"));
    }
}
