//! `wonopcode loops test FILE...`: a guest's tests, offline and fast. A test file names the
//! guest and, per test, the prompt, what the model answers in each context (hand-written
//! responses: no recording, no request fingerprints), stand-ins for host tools, and what
//! must hold at the end. Each test is one real run of the guest through this binary
//! (`--replay` of a transcript written from the script, `--tool-stand-ins`, `--json`) in a
//! workspace of its own, so a test passes only where a real run would behave the same; the
//! verdict comes from the run's events (`docs/events.md`). The format is in
//! `docs/guest-authoring.md`, "Testing a guest".

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow};
use serde::Deserialize;
use serde_json::{Value, json};

use wonopcode_batch::scratch::copy_tree;
use wonopcode_protocol::{ContextPath, ModelInfo, Pricing, StopReason, StreamChunk, Usage};
use wonopcode_providers::transcript::{
    ContextMatch, FORMAT, Record, ResponseRecord, VERSION, to_line,
};

use crate::exit;

/// A test file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TestFile {
    /// The guest component, relative to the file.
    guest: PathBuf,
    /// Named loops the guest spawns (`--loops-dir`), relative to the file.
    #[serde(default)]
    loops_dir: Option<PathBuf>,
    /// A directory copied as each test's workspace, relative to the file (else an empty
    /// one).
    #[serde(default)]
    workspace: Option<PathBuf>,
    /// The provider the scripted model stands for (`test`; `anthropic` to test tier routing).
    #[serde(default = "default_provider")]
    provider: String,
    /// The model the run starts on.
    #[serde(default = "default_model")]
    model: String,
    /// How long one test may run, in seconds.
    #[serde(default = "default_timeout")]
    timeout_secs: u64,
    tests: Vec<GuestTest>,
}

fn default_provider() -> String {
    "test".to_owned()
}

fn default_model() -> String {
    "test-model".to_owned()
}

fn default_timeout() -> u64 {
    120
}

/// One test.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GuestTest {
    name: String,
    prompt: String,
    /// The model's responses, by context path (`0` the root, `0.1` its first child, ...),
    /// in the order that context asks.
    #[serde(default)]
    model: BTreeMap<String, Vec<Response>>,
    /// Host tools answered by fixed text (`read: "text"`) or an error (`bash: {error: ...}`).
    #[serde(default)]
    tools: BTreeMap<String, ToolAnswer>,
    #[serde(default)]
    expect: Expect,
}

/// One scripted model response.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Response {
    #[serde(default)]
    thinking: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    calls: Vec<Call>,
    /// The model that answers (a context that switched models asks this one).
    #[serde(default)]
    model: Option<String>,
    /// Input and output tokens, for costs (priced at $1 and $10 per million).
    #[serde(default)]
    usage: Option<[u64; 2]>,
}

/// A tool call in a scripted response.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Call {
    name: String,
    #[serde(default = "empty_object")]
    arguments: Value,
}

fn empty_object() -> Value {
    json!({})
}

/// A stand-in's answer.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum ToolAnswer {
    Text(String),
    Error { error: String },
}

/// What must hold at the end of a test.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Expect {
    /// Texts the root's answer contains.
    #[serde(default)]
    answer_contains: Vec<String>,
    /// The root turn's status (`complete`, `max_iterations`, `error`, ...; default
    /// `complete`).
    #[serde(default)]
    status: Option<String>,
    /// Tools called, in any context.
    #[serde(default)]
    tools_called: Vec<String>,
    /// Tools never called.
    #[serde(default)]
    tools_not_called: Vec<String>,
    /// For each tool, a text one of its calls answered with (in any context): what a
    /// guest's own tool returned, or the refusal the model read.
    #[serde(default)]
    tool_outputs: BTreeMap<String, String>,
    /// Children that ran: each must match one started child.
    #[serde(default)]
    children: Vec<ChildExpect>,
    /// What the whole run may cost at most, in dollars.
    #[serde(default)]
    max_cost_usd: Option<f64>,
}

/// A child a test expects.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ChildExpect {
    /// The loop it ran.
    #[serde(default)]
    module: Option<String>,
    /// The model its responses came from.
    #[serde(default)]
    model: Option<String>,
    /// How it ended (`completed`, `error`, ...).
    #[serde(default)]
    status: Option<String>,
}

/// One test's verdict.
struct Verdict {
    file: String,
    name: String,
    failures: Vec<String>,
    duration: Duration,
    /// What a failed run said on stderr, kept under `--debug-guest` (a trap's backtrace).
    said: Option<String>,
}

/// `wonopcode loops test FILE...`: runs every test of every file; exit 0 when all pass.
/// With `debug_guest`, each run is under `--debug-guest` and a failed one's stderr is shown.
pub fn command(files: &[PathBuf], json_out: bool, debug_guest: bool) -> anyhow::Result<u8> {
    let exe = std::env::current_exe().context("cannot find this program's own path")?;
    let mut verdicts = Vec::new();
    for file in files {
        let suite = load(file)?;
        let base = file.parent().unwrap_or(Path::new("."));
        // Every test's transcript first: a bad script is one line before anything runs.
        let transcripts = suite
            .tests
            .iter()
            .map(|test| transcript_of(&suite, test))
            .collect::<anyhow::Result<Vec<String>>>()
            .map_err(|e| crate::session::usage(format!("{}: {e}", file.display())))?;
        for (test, transcript) in suite.tests.iter().zip(&transcripts) {
            let verdict = run_test(&exe, file, base, &suite, test, transcript, debug_guest)?;
            if !json_out {
                print_verdict(&verdict);
            }
            verdicts.push(verdict);
        }
    }
    let failed = verdicts.iter().filter(|v| !v.failures.is_empty()).count();
    if json_out {
        let tests: Vec<Value> = verdicts
            .iter()
            .map(|v| {
                let mut test = json!({"file": v.file, "name": v.name,
                       "passed": v.failures.is_empty(), "failures": v.failures,
                       "duration_ms": v.duration.as_millis() as u64});
                if let Some(said) = &v.said {
                    test["stderr"] = json!(said);
                }
                test
            })
            .collect();
        println!(
            "{}",
            json!({"passed": verdicts.len() - failed, "failed": failed, "tests": tests})
        );
    } else {
        println!("{} passed, {failed} failed", verdicts.len() - failed);
    }
    Ok(if failed == 0 {
        exit::SUCCESS
    } else {
        exit::ERROR
    })
}

/// Reads a test file; a file that is not one is one line naming it and what is wrong.
fn load(file: &Path) -> anyhow::Result<TestFile> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| crate::session::usage(format!("{}: {e}", file.display())))?;
    let suite: TestFile = serde_yaml::from_str(&text)
        .map_err(|e| crate::session::usage(format!("{}: {e}", file.display())))?;
    if suite.tests.is_empty() {
        return Err(crate::session::usage(format!(
            "{}: no tests (`tests:` is empty)",
            file.display()
        )));
    }
    Ok(suite)
}

fn print_verdict(verdict: &Verdict) {
    let secs = verdict.duration.as_secs_f64();
    match verdict.failures.as_slice() {
        [] => println!("ok    {} ({secs:.1} s)", verdict.name),
        failures => println!(
            "FAIL  {} ({secs:.1} s): {}",
            verdict.name,
            failures.join("; ")
        ),
    }
    for line in verdict.said.iter().flat_map(|said| said.lines()) {
        println!("      {line}");
    }
}

/// Runs one test in a workspace of its own and checks what it expects.
fn run_test(
    exe: &Path,
    file: &Path,
    base: &Path,
    suite: &TestFile,
    test: &GuestTest,
    transcript_text: &str,
    debug_guest: bool,
) -> anyhow::Result<Verdict> {
    let scratch = tempfile::tempdir().context("cannot make a directory for the test")?;
    let workspace = scratch.path().join("workspace");
    match &suite.workspace {
        Some(dir) => copy_tree(&base.join(dir), &workspace)
            .with_context(|| format!("the workspace {}", base.join(dir).display()))?,
        None => std::fs::create_dir_all(&workspace)?,
    }
    let transcript = scratch.path().join("model.jsonl");
    std::fs::write(&transcript, transcript_text)?;
    let stand_ins = scratch.path().join("tools.json");
    let answers: BTreeMap<&String, Value> = test
        .tools
        .iter()
        .map(|(tool, answer)| {
            let answer = match answer {
                ToolAnswer::Text(text) => json!({"text": text}),
                ToolAnswer::Error { error } => json!({"error": error}),
            };
            (tool, answer)
        })
        .collect();
    std::fs::write(&stand_ins, serde_json::to_string(&answers)?)?;
    // Nothing of the person's own configuration reaches a test.
    let config = scratch.path().join("config.yaml");
    std::fs::write(&config, "{}\n")?;
    let mut command = Command::new(exe);
    command
        .args(["run", "--json", "--yes", "--config"])
        .arg(&config)
        .arg("--agent-loop")
        .arg(base.join(&suite.guest))
        .arg("--replay")
        .arg(&transcript)
        .arg("--tool-stand-ins")
        .arg(&stand_ins)
        .arg("-C")
        .arg(&workspace);
    if let Some(dir) = &suite.loops_dir {
        command.arg("--loops-dir").arg(base.join(dir));
    }
    if debug_guest {
        command.arg("--debug-guest");
    }
    command.arg(&test.prompt);
    let started = Instant::now();
    let (status, stdout, stderr) = run_bounded(command, Duration::from_secs(suite.timeout_secs))?;
    let mut failures = match status {
        None => vec![format!(
            "the run took longer than {} s and was stopped",
            suite.timeout_secs
        )],
        Some(_) => check(&events_of(&stdout), &test.expect),
    };
    // Where the run ended before its turn did (a refused setting, a trap at load), what it
    // said is the reason.
    let cut_short = failures
        .iter()
        .any(|f| f.starts_with("no answer") || f.starts_with("the status is `none`"));
    if (cut_short || status.is_none())
        && let Some(line) = stderr.lines().rev().find(|l| !l.trim().is_empty())
    {
        failures.push(format!("the run said: {}", line.trim()));
    }
    let said = (debug_guest && !failures.is_empty() && !stderr.trim().is_empty())
        .then(|| last_lines(&stderr, SAID_LINES));
    Ok(Verdict {
        file: file.display().to_string(),
        name: test.name.clone(),
        failures,
        duration: started.elapsed(),
        said,
    })
}

/// Lines of a failed run's stderr a verdict shows: a backtrace fits, a guest's flood does not.
const SAID_LINES: usize = 100;

/// The last `keep` lines of `text`, after a line counting those left out.
fn last_lines(text: &str, keep: usize) -> String {
    let lines: Vec<&str> = text.trim_end().lines().collect();
    let left_out = lines.len().saturating_sub(keep);
    let mut out = if left_out > 0 {
        format!("({left_out} earlier lines left out)\n")
    } else {
        String::new()
    };
    out.push_str(&lines[left_out..].join("\n"));
    out
}

/// The transcript a test's script stands for: a priced model ($1 and $10 per million
/// tokens), one record per response, in the format `--replay` reads. A context key that is
/// not a context path is one line naming it.
fn transcript_of(suite: &TestFile, test: &GuestTest) -> anyhow::Result<String> {
    let model = |id: &str| ModelInfo {
        id: id.to_owned(),
        provider: suite.provider.clone(),
        context_window: 200_000,
        max_output: 8192,
        pricing: Some(Pricing {
            input_per_mtok: 100_000_000,
            output_per_mtok: 1_000_000_000,
            ..Pricing::default()
        }),
        capabilities: Default::default(),
    };
    let mut text = to_line(&Record::Header {
        format: FORMAT.to_owned(),
        version: VERSION,
        model: model(&suite.model),
    });
    for (key, responses) in &test.model {
        let (context, matching) = context_key(key).ok_or_else(|| {
            anyhow!(
                "test `{}`: model: `{key}` is not a context path (`0`, `0.1`, `0.1.2`, ...), \
                 `module:NAME` or `role:CUSTOM-DATA`",
                test.name
            )
        })?;
        for (index, response) in responses.iter().enumerate() {
            text.push_str(&to_line(&Record::Response(ResponseRecord {
                context: context.clone(),
                matching: matching.clone(),
                index: u32::try_from(index).unwrap_or(u32::MAX),
                model: response.model.as_deref().map(model),
                request: None,
                chunks: chunks_of(key, index, response),
                error: None,
            })));
        }
    }
    Ok(text)
}

/// What a script's key names: one context by its path, or every context of a module
/// (`module:researcher`) or role (`role:reviewer`, its `custom-data`).
fn context_key(key: &str) -> Option<(ContextPath, Option<ContextMatch>)> {
    let named = |name: &str| Some(name.trim().to_owned()).filter(|n| !n.is_empty());
    if let Some(module) = key.strip_prefix("module:") {
        return Some((
            ContextPath::root(),
            Some(ContextMatch::Module(named(module)?)),
        ));
    }
    if let Some(role) = key.strip_prefix("role:") {
        return Some((ContextPath::root(), Some(ContextMatch::Role(named(role)?))));
    }
    Some((ContextPath::parse(key)?, None))
}

/// The chunks a scripted response streams.
fn chunks_of(context: &str, index: usize, response: &Response) -> Vec<StreamChunk> {
    let mut chunks = Vec::new();
    if let Some(text) = &response.thinking {
        chunks.push(StreamChunk::ThinkingDelta { text: text.clone() });
    }
    if let Some(text) = &response.text {
        chunks.push(StreamChunk::TextDelta { text: text.clone() });
    }
    for (i, call) in response.calls.iter().enumerate() {
        let key: String = context
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let id = format!("call_{key}_{index}_{i}");
        chunks.push(StreamChunk::ToolCallStart {
            id: id.clone(),
            name: call.name.clone(),
        });
        chunks.push(StreamChunk::ToolCallDelta {
            id: id.clone(),
            arguments_delta: call.arguments.to_string(),
        });
        chunks.push(StreamChunk::ToolCallEnd { id });
    }
    if let Some([input_tokens, output_tokens]) = response.usage {
        chunks.push(StreamChunk::Usage {
            usage: Usage {
                input_tokens,
                output_tokens,
                ..Usage::default()
            },
        });
    }
    let stop_reason = if response.calls.is_empty() {
        StopReason::EndTurn
    } else {
        StopReason::ToolUse
    };
    chunks.push(StreamChunk::Done { stop_reason });
    chunks
}

/// Runs `command` to its end, or stops it after `limit` (`None` then).
fn run_bounded(
    mut command: Command,
    limit: Duration,
) -> anyhow::Result<(Option<std::process::ExitStatus>, String, String)> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("cannot start the run")?;
    let mut stdout = child.stdout.take().ok_or_else(|| anyhow!("no stdout"))?;
    let mut stderr = child.stderr.take().ok_or_else(|| anyhow!("no stderr"))?;
    let out = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let err = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    Ok((status, stdout, stderr))
}

fn events_of(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// What of `expect` the events do not show, one line each.
fn check(events: &[Value], expect: &Expect) -> Vec<String> {
    let mut failures = Vec::new();
    let in_root = |e: &&Value| e["context"] == "0";
    // The answer is everything the root said to the person: a loop may end its answer with
    // a message of its own (the sample orchestrator's ledger).
    let said: Vec<&str> = events
        .iter()
        .filter(in_root)
        .filter(|e| e["type"] == "item.completed" && e["item"]["kind"] == "agent_message")
        .filter_map(|e| e["item"]["text"].as_str())
        .collect();
    let joined = said.join("\n");
    let answer = (!said.is_empty()).then_some(joined.as_str());
    let ended = events
        .iter()
        .filter(in_root)
        .rfind(|e| e["type"] == "turn.completed" || e["type"] == "turn.failed");
    let status = ended.and_then(|e| e["status"].as_str()).unwrap_or("none");
    let wanted = expect.status.as_deref().unwrap_or("complete");
    if status != wanted {
        let why = ended
            .and_then(|e| e["error"].as_str())
            .map(|e| format!(" ({e})"))
            .unwrap_or_default();
        failures.push(format!("the status is `{status}`{why}, not `{wanted}`"));
    }
    for text in &expect.answer_contains {
        match answer {
            None => failures.push("no answer from the root context".to_owned()),
            Some(a) if !a.contains(text.as_str()) => {
                failures.push(format!("the answer lacks {text:?} (it is {a:?})"))
            }
            Some(_) => {}
        }
    }
    let called: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "item.completed")
        .filter(|e| {
            matches!(
                e["item"]["kind"].as_str(),
                Some("tool_call" | "mcp_tool_call")
            )
        })
        .filter_map(|e| e["item"]["name"].as_str())
        .collect();
    for tool in &expect.tools_called {
        if !called.contains(&tool.as_str()) {
            failures.push(format!(
                "`{tool}` was not called (called: {})",
                listed(&called)
            ));
        }
    }
    for tool in &expect.tools_not_called {
        if called.contains(&tool.as_str()) {
            failures.push(format!("`{tool}` was called"));
        }
    }
    for (tool, wanted) in &expect.tool_outputs {
        let outputs: Vec<&str> = events
            .iter()
            .filter(|e| e["type"] == "item.completed" && e["item"]["name"] == tool.as_str())
            .filter_map(|e| e["item"]["output"].as_str())
            .collect();
        if !outputs.iter().any(|o| o.contains(wanted.as_str())) {
            failures.push(format!(
                "no call of `{tool}` answered {wanted:?} (it answered: {})",
                if outputs.is_empty() {
                    "nothing".to_owned()
                } else {
                    outputs
                        .iter()
                        .map(|o| format!("{o:?}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            ));
        }
    }
    let children = children_of(events);
    // Each expected child is a different child: two alike need two.
    let mut taken = vec![false; children.len()];
    for wanted in &expect.children {
        let found = children.iter().enumerate().position(|(i, c)| {
            !taken[i]
                && wanted.module.as_deref().is_none_or(|m| c.module == m)
                && wanted
                    .model
                    .as_deref()
                    .is_none_or(|m| c.models.iter().any(|x| x == m))
                && wanted.status.as_deref().is_none_or(|s| c.status == s)
        });
        if let Some(i) = found {
            taken[i] = true;
        } else {
            let seen: Vec<String> = children
                .iter()
                .map(|c| {
                    format!(
                        "{} {} on {} ({})",
                        c.path,
                        c.module,
                        listed(&c.models.iter().map(String::as_str).collect::<Vec<_>>()),
                        c.status
                    )
                })
                .collect();
            failures.push(format!(
                "no child ran {} (children: {})",
                describe_child(wanted),
                if seen.is_empty() {
                    "none".to_owned()
                } else {
                    seen.join(", ")
                }
            ));
        }
    }
    if let Some(limit) = expect.max_cost_usd {
        let micro_cents = ended
            .and_then(|e| e["usage"]["cost_micro_cents"].as_u64())
            .unwrap_or(0);
        let cost = micro_cents as f64 / 1e8;
        if cost > limit {
            failures.push(format!("the run cost ${cost:.4}, more than ${limit:.4}"));
        }
    }
    failures
}

/// A child as the events tell it.
struct ChildSeen {
    path: String,
    module: String,
    models: Vec<String>,
    status: String,
}

fn children_of(events: &[Value]) -> Vec<ChildSeen> {
    events
        .iter()
        .filter(|e| e["type"] == "context.started")
        .filter_map(|e| {
            let path = e["context"].as_str()?;
            let mut models: Vec<String> = events
                .iter()
                .filter(|r| r["type"] == "response.completed" && r["context"] == path)
                .filter_map(|r| r["model"].as_str().map(str::to_owned))
                .collect();
            models.dedup();
            let status = events
                .iter()
                .find(|c| c["type"] == "context.completed" && c["context"] == path)
                .and_then(|c| c["status"].as_str())
                .unwrap_or("running")
                .to_owned();
            Some(ChildSeen {
                path: path.to_owned(),
                module: e["module"].as_str().unwrap_or_default().to_owned(),
                models,
                status,
            })
        })
        .collect()
}

fn describe_child(child: &ChildExpect) -> String {
    let mut parts = Vec::new();
    if let Some(m) = &child.module {
        parts.push(format!("module `{m}`"));
    }
    if let Some(m) = &child.model {
        parts.push(format!("on `{m}`"));
    }
    if let Some(s) = &child.status {
        parts.push(format!("ending `{s}`"));
    }
    if parts.is_empty() {
        "at all".to_owned()
    } else {
        parts.join(" ")
    }
}

fn listed(names: &[&str]) -> String {
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    }
}
