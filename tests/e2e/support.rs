//! Helpers: build the real binary once, write transcripts, run wonopcode in a scratch
//! workspace, read its JSONL events.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};

/// The workspace root: these tests belong to the `wonopcode` package (`crates/cli`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Path of the `wonopcode` binary: cargo builds it with the tests, from the same sources
/// and with the same features, before any test runs.
pub fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_wonopcode"))
}

/// A `wonopcode` command with a clean environment for deterministic output.
pub fn wonopcode() -> assert_cmd::Command {
    assert_cmd::Command::from_std(command())
}

/// Where the tests' runs keep their journals: in the target directory, out of the
/// machine's data directory and gone with `cargo clean`.
fn test_runs_dir() -> PathBuf {
    repo_root().join("target/e2e-runs")
}

/// The same, as a plain process command (for a pseudo-terminal).
pub fn command() -> std::process::Command {
    let mut cmd = std::process::Command::new(bin());
    cmd.env("NO_COLOR", "1")
        .env_remove("WONOPCODE_LOG")
        .env("XDG_CONFIG_HOME", "/nonexistent-wonopcode-config")
        // Nor the person's Codex and Claude Code homes (their instruction files).
        .env("CODEX_HOME", "/nonexistent-wonopcode-codex")
        .env("CLAUDE_CONFIG_DIR", "/nonexistent-wonopcode-claude")
        .env_remove("WONOPCODE_AGENT_LOOPS_PATH")
        // The tests' run journals stay out of the machine's data directory.
        .env("WONOPCODE_RUNS_DIR", test_runs_dir());
    for key in [
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "OPENROUTER_API_KEY",
        "DEEPSEEK_API_KEY",
        "GROQ_API_KEY",
        "GEMINI_API_KEY",
        "AZURE_OPENAI_API_KEY",
        "AZURE_OPENAI_ENDPOINT",
        // A developer's proxy must not move the providers the tests point elsewhere.
        "ANTHROPIC_BASE_URL",
        "OPENAI_BASE_URL",
        "ANTHROPIC_AUTH_TOKEN",
        "ANTHROPIC_CUSTOM_HEADERS",
        // Nor their cloud credentials, nor Claude Code's switches to the clouds.
        "ANTHROPIC_MODEL",
        "CLAUDE_CODE_USE_BEDROCK",
        "CLAUDE_CODE_USE_VERTEX",
        "CLAUDE_CODE_SKIP_BEDROCK_AUTH",
        "CLAUDE_CODE_SKIP_VERTEX_AUTH",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_CONFIG_FILE",
        "AWS_SHARED_CREDENTIALS_FILE",
        "AWS_BEARER_TOKEN_BEDROCK",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "ANTHROPIC_VERTEX_PROJECT_ID",
        "GOOGLE_CLOUD_PROJECT",
        "CLOUDSDK_CORE_PROJECT",
        "CLOUD_ML_REGION",
    ] {
        cmd.env_remove(key);
    }
    cmd
}

/// `sh -c SCRIPT` where `"$0" "$@"` in SCRIPT runs wonopcode with the arguments the caller
/// adds, in the environment [`command`] gives it (to set up a terminal, or join its output
/// streams, before wonopcode starts).
pub fn through_shell(script: &str) -> std::process::Command {
    let mut cmd = std::process::Command::new("sh");
    cmd.arg("-c").arg(script).arg(bin());
    for (key, value) in command().get_envs() {
        match value {
            Some(v) => cmd.env(key, v),
            None => cmd.env_remove(key),
        };
    }
    cmd
}

/// The header every transcript starts with.
pub fn header() -> Value {
    json!({"type":"header","format":"wonopcode-transcript","version":1,
           "model":{"id":"test-model","provider":"test","context_window":200000,"max_output":8192}})
}

/// A text delta chunk.
pub fn text(t: &str) -> Value {
    json!({"type":"text_delta","text":t})
}

/// The chunks of one tool call whose raw argument text is `args`.
pub fn call(id: &str, name: &str, args: &str) -> Vec<Value> {
    vec![
        json!({"type":"tool_call_start","id":id,"name":name}),
        json!({"type":"tool_call_delta","id":id,"arguments_delta":args}),
        json!({"type":"tool_call_end","id":id}),
    ]
}

/// The chunks of a response that makes one tool call and ends for its result.
pub fn calling(id: &str, name: &str, args: &str) -> Vec<Value> {
    let mut chunks = call(id, name, args);
    chunks.push(done("tool_use"));
    chunks
}

/// The chunks of a response that answers `words` and ends.
pub fn answer(words: &str) -> Vec<Value> {
    vec![text(words), done("end_turn")]
}

/// The `bash` call `call_id` of a run, which a read-only sandbox stopped from writing.
pub fn assert_blocked_write(out: &Output, call_id: &str) {
    let item = events(out)
        .into_iter()
        .find(|e| e["type"] == "item.completed" && e["item"]["call_id"] == call_id)
        .unwrap_or_else(|| panic!("no result for the bash call {call_id}"))["item"]
        .clone();
    assert_eq!(item["command"]["sandbox"], "read-only", "{item}");
    assert!(
        item["output"]
            .as_str()
            .is_some_and(|o| o.starts_with("blocked by the sandbox: write to")),
        "{item}"
    );
}

/// A `done` chunk.
pub fn done(reason: &str) -> Value {
    json!({"type":"done","stop_reason":reason})
}

/// A transcript for context 0 with one record per turn (no request fingerprints).
pub fn transcript(turns: &[Vec<Value>]) -> String {
    transcript_of("0", turns)
}

/// A transcript of one context's turns, one record per turn (no request fingerprints).
pub fn transcript_of(context: &str, turns: &[Vec<Value>]) -> String {
    transcript_of_after(context, 0, turns)
}

/// A transcript of the root's responses after the first `answered` of a conversation (the
/// answers its history holds): numbered from `answered`, as a recording of the continued
/// conversation is.
pub fn transcript_after(answered: usize, turns: &[Vec<Value>]) -> String {
    transcript_of_after("0", answered, turns)
}

fn transcript_of_after(context: &str, answered: usize, turns: &[Vec<Value>]) -> String {
    let mut out = header().to_string();
    out.push('\n');
    for (i, chunks) in turns.iter().enumerate() {
        out.push_str(
            &json!({"type":"turn","context":context,"turn":answered + i,"chunks":chunks})
                .to_string(),
        );
        out.push('\n');
    }
    out
}

/// A transcript of a priced model ($1 in and $10 out per million tokens, at most 1,000 output
/// tokens a response) holding `turns` (context, chunks), numbered per context in order.
pub fn priced_transcript_of(turns: &[(&str, Vec<Value>)]) -> String {
    let header = json!({"type":"header","format":"wonopcode-transcript","version":1,
        "model":{"id":"priced","provider":"test","context_window":200000,"max_output":1000,
                 "pricing":{"input_per_mtok":100000000,"output_per_mtok":1000000000}}});
    let mut numbers: std::collections::HashMap<&str, usize> = Default::default();
    let mut lines = vec![header.to_string()];
    for (context, chunks) in turns {
        let number = numbers.entry(context).or_default();
        lines.push(
            json!({"type":"turn","context":context,"turn":*number,"chunks":chunks}).to_string(),
        );
        *number += 1;
    }
    lines.join("\n") + "\n"
}

/// Runs the loop `name` of the registry in `loops` on `scratch`'s workspace (`--yes
/// --json`), replaying the priced `turns` (`priced_transcript_of`).
pub fn run_named_priced(
    scratch: &Scratch,
    loops: &Path,
    name: &str,
    turns: &[(&str, Vec<Value>)],
    prompt: &str,
) -> Output {
    let t = scratch.outside("t.jsonl");
    std::fs::write(&t, priced_transcript_of(turns)).unwrap();
    wonopcode()
        .arg("--loops-dir")
        .arg(loops)
        .args(["--agent-loop-name", name, "--yes", "--json", "--replay"])
        .arg(&t)
        .arg("-C")
        .arg(scratch.ws())
        .arg(prompt)
        .output()
        .unwrap()
}

/// A transcript of `(context, model, chunks)` responses, numbered per context in order, under
/// a header of `model`; a response's own model (a context that switched) is recorded with it.
pub fn model_transcript(model: Value, responses: &[(&str, Option<Value>, Vec<Value>)]) -> String {
    let header = json!({"type":"header","format":"wonopcode-transcript","version":1,"model":model});
    let mut numbers: std::collections::HashMap<&str, usize> = Default::default();
    let mut lines = vec![header.to_string()];
    for (context, model, chunks) in responses {
        let number = numbers.entry(context).or_default();
        let mut record = json!({"type":"turn","context":context,"turn":*number,"chunks":chunks});
        if let Some(model) = model {
            record["model"] = model.clone();
        }
        lines.push(record.to_string());
        *number += 1;
    }
    lines.join("\n") + "\n"
}

/// Whether this machine can confine commands; the tests that need it say so and pass when
/// it cannot (`wonopcode sandbox check` tells why) — unless `WONOPCODE_REQUIRE_SANDBOX`
/// names Landlock (CI does), where a machine that cannot confine fails them: a regression that
/// breaks confinement must not turn them green.
pub fn confining() -> bool {
    let out = command().args(["sandbox", "check"]).output().unwrap();
    if out.status.success() {
        return true;
    }
    let why = String::from_utf8_lossy(&out.stdout);
    wonopcode_sandbox::test_skip::skipped(
        "landlock",
        &format!("this machine cannot confine: {why}"),
    );
    false
}

/// A usage chunk.
pub fn usage(input_tokens: u64, output_tokens: u64) -> Value {
    json!({"type":"usage","usage":{"input_tokens":input_tokens,"output_tokens":output_tokens}})
}

/// A scratch workspace plus a place for transcripts and history files.
pub struct Scratch {
    pub dir: tempfile::TempDir,
}

impl Scratch {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("ws")).unwrap();
        Self { dir }
    }

    /// The workspace root.
    pub fn ws(&self) -> PathBuf {
        self.dir.path().join("ws")
    }

    /// A path outside the workspace (in the scratch dir).
    pub fn outside(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Writes a file inside the workspace.
    pub fn file(&self, rel: &str, content: &str) -> PathBuf {
        let path = self.ws().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, content).unwrap();
        path
    }

    /// Writes a transcript outside the workspace and returns its path.
    pub fn transcript(&self, name: &str, turns: &[Vec<Value>]) -> PathBuf {
        let path = self.outside(name);
        std::fs::write(&path, transcript(turns)).unwrap();
        path
    }

    /// Writes a transcript of the responses after the first `answered` of a continued
    /// conversation ([`transcript_after`]) outside the workspace; its path.
    pub fn transcript_after(&self, name: &str, answered: usize, turns: &[Vec<Value>]) -> PathBuf {
        let path = self.outside(name);
        std::fs::write(&path, transcript_after(answered, turns)).unwrap();
        path
    }

    /// Writes `yaml` as a config file beside the workspace; its path, for `--config`.
    pub fn config(&self, yaml: &str) -> String {
        let path = self.outside("config.yaml");
        std::fs::write(&path, yaml).unwrap();
        path.to_string_lossy().into_owned()
    }

    /// Runs `wonopcode mcp ARGS...` in the workspace.
    pub fn mcp(&self, args: &[&str]) -> Output {
        command()
            .current_dir(self.ws())
            .arg("mcp")
            .args(args)
            .output()
            .unwrap()
    }

    /// Runs `wonopcode` (terminal output) with the transcript, in the workspace, with extra
    /// flags.
    pub fn run(&self, transcript: &Path, extra: &[&str], prompt: &str) -> Output {
        wonopcode()
            .arg("--replay")
            .arg(transcript)
            .arg("-C")
            .arg(self.ws())
            .args(extra)
            .arg(prompt)
            .output()
            .unwrap()
    }

    /// Runs `wonopcode --json` with the transcript, in the workspace, with extra flags.
    pub fn run_json(&self, transcript: &Path, extra: &[&str], prompt: &str) -> Output {
        self.run_json_with_env(transcript, &[], extra, prompt)
    }

    /// [`Self::run_json`] with these variables added to wonopcode's environment.
    pub fn run_json_with_env(
        &self,
        transcript: &Path,
        env: &[(&str, &str)],
        extra: &[&str],
        prompt: &str,
    ) -> Output {
        let mut cmd = wonopcode();
        cmd.envs(env.iter().copied());
        cmd.arg("--json")
            .arg("--replay")
            .arg(transcript)
            .arg("-C")
            .arg(self.ws());
        cmd.args(extra).arg(prompt);
        cmd.output().unwrap()
    }
}

/// Parses stdout as JSON Lines; panics on any line that is not JSON.
pub fn events(output: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| {
            serde_json::from_str(l).unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {l}"))
        })
        .collect()
}

/// What a tool-call item gave the model. An item without a text output fails the test at
/// once, so that a check that something is absent from it cannot pass on nothing.
pub fn tool_output(item: &Value) -> &str {
    item["output"]
        .as_str()
        .unwrap_or_else(|| panic!("a tool-call item without a text output: {item}"))
}

/// The completed tool-call items (`tool_call` and `mcp_tool_call`), in order.
pub fn tool_results(events: &[Value]) -> Vec<Value> {
    events
        .iter()
        .filter(|e| {
            e["type"] == "item.completed"
                && (e["item"]["kind"] == "tool_call" || e["item"]["kind"] == "mcp_tool_call")
        })
        .map(|e| e["item"].clone())
        .collect()
}

/// Runs one turn holding a single tool call, then a final answer; returns the call's item.
/// The run exits 0, or 6 when the call needed an approval nobody could give.
pub fn single_call(scratch: &Scratch, name: &str, args: &str, extra: &[&str]) -> Value {
    let mut turn0 = call("c1", name, args);
    turn0.push(done("tool_use"));
    let t = scratch.transcript("t.jsonl", &[turn0, vec![text("ok"), done("end_turn")]]);
    let out = scratch.run_json(&t, extra, "go");
    let results = tool_results(&events(&out));
    assert_eq!(results.len(), 1, "{results:?}");
    let unapproved = results[0]["status"] == "declined"
        && results[0]["output"]
            .as_str()
            .is_some_and(|o| o.contains("nobody can be asked"));
    assert_eq!(
        out.status.code(),
        Some(if unapproved { 6 } else { 0 }),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    results[0].clone()
}

/// stderr as text.
pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Copies a directory tree.
pub fn copy_dir(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// wonopcode started with stdout read line by line, stopped at the first line holding
/// every one of `marks` (the rest of stdout is what is left of the lines).
// The child goes back to the caller, who waits for it (`interrupt`).
#[allow(clippy::zombie_processes)]
pub fn spawn_until(
    command: &mut std::process::Command,
    marks: &[&str],
) -> (
    std::process::Child,
    std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
) {
    use std::io::BufRead;
    let mut child = command
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    loop {
        let line = lines
            .next()
            .unwrap_or_else(|| panic!("stdout closed before a line with {marks:?}"))
            .unwrap();
        if marks.iter().all(|m| line.contains(m)) {
            return (child, lines);
        }
    }
}

/// Sends SIGINT to `child`, as Ctrl-C does, and waits (10 s at most) for its exit code.
pub fn interrupt(child: &mut std::process::Child) -> Option<i32> {
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let interrupted = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        assert!(
            interrupted.elapsed() < std::time::Duration::from_secs(10),
            "wonopcode did not stop after SIGINT"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The head of an HTTP request on `stream` (up to its blank line), read a byte at a time so
/// nothing of the body is taken; `None` when the peer goes away first. For the tests'
/// loopback servers.
pub fn request_head(stream: &mut impl std::io::Read) -> Option<String> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return None,
        }
    }
    Some(String::from_utf8_lossy(&head).into_owned())
}

/// What the root context answered (its completed `agent_message`); a run without one fails
/// the test, showing its output.
pub fn root_answer(out: &Output) -> String {
    events(out)
        .into_iter()
        .find(|e| {
            e["type"] == "item.completed"
                && e["context"] == "0"
                && e["item"]["kind"] == "agent_message"
        })
        .and_then(|e| e["item"]["text"].as_str().map(str::to_owned))
        .unwrap_or_else(|| panic!("no answer: {}", String::from_utf8_lossy(&out.stdout)))
}

/// A test's outside part (a tool, a package) is missing: `how` says how to install it. Where
/// CI requires it (`required_by` is set) the test fails; elsewhere it passes and says why in
/// the run's skip log.
pub fn missing_part(how: &str, required_by: &str) {
    if std::env::var_os(required_by).is_some() {
        panic!("{how}");
    }
    wonopcode_sandbox::test_skip::note(how);
}

/// `git ARGS` in `dir`, as a person with a name and a `trunk` default branch; it must
/// succeed.
pub fn git(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(["-c", "init.defaultBranch=trunk"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
