//! `wonopcode acp` (`docs/editors.md`) driven by the official ACP TypeScript client
//! (`@agentclientprotocol/sdk`, pinned in `tests/acp-client` and installed by `.ci/run`; the
//! tests skip with a message without it), the real binary answering from recorded
//! transcripts: a session in the editor's folder, the tool calls with their diffs and the
//! answer as updates, a permission round trip both ways, a cancelled turn, an unknown
//! session refused; every message wonopcode sent checked against the protocol's JSON
//! schema shipped in that package.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::{Scratch, answer, bin, calling, repo_root};

/// The client's directory, or `None` (with a message) when it is not installed.
fn client_dir() -> Option<PathBuf> {
    let dir = repo_root().join("tests/acp-client");
    if dir.join("node_modules/.bin/node").exists() {
        return Some(dir);
    }
    let how = "the ACP client is not installed: npm ci --prefix tests/acp-client";
    if std::env::var_os("WONOPCODE_REQUIRE_ACP_CLIENT").is_some() {
        panic!("{how}");
    }
    eprintln!("skipped: {how}");
    None
}

/// Runs the client on `scenario` against `wonopcode acp FLAGS`; what it saw, and the wire.
fn drive(s: &Scratch, dir: &Path, scenario: &Value, flags: &[&str]) -> (Value, Vec<Value>) {
    drive_with(s, dir, scenario, flags, &[])
}

/// [`drive`] with these variables in wonopcode's environment.
fn drive_with(
    s: &Scratch,
    dir: &Path,
    scenario: &Value,
    flags: &[&str],
    env: &[(&str, &str)],
) -> (Value, Vec<Value>) {
    let scenario_path = s.outside("scenario.json");
    std::fs::write(&scenario_path, scenario.to_string()).unwrap();
    let wire = s.outside("wire.jsonl");
    let _ = std::fs::remove_file(&wire);
    let out = std::process::Command::new(dir.join("node_modules/.bin/node"))
        .current_dir(dir)
        .env("WONOPCODE_RUNS_DIR", s.outside("runs"))
        .env("XDG_CONFIG_HOME", "/nonexistent-wonopcode-config")
        .env("NO_COLOR", "1")
        .envs(env.iter().copied())
        .arg("drive.mjs")
        .arg(&scenario_path)
        .arg(&wire)
        .arg("--")
        .arg(bin())
        .arg("acp")
        .args(flags)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let seen: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{stderr}", String::from_utf8_lossy(&out.stdout)));
    let wire: Vec<Value> = std::fs::read_to_string(&wire)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (seen, wire)
}

/// Checks every message wonopcode sent against the schema's definition for it: updates and
/// permission requests by method, responses by the method of the request they answer.
fn check_against_schema(dir: &Path, wire: &[Value]) {
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(
            dir.join("node_modules/@agentclientprotocol/sdk/schema/v1/schema.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let validator = |definition: &str| {
        let mut one = schema.clone();
        one["$ref"] = json!(format!("#/$defs/{definition}"));
        if let Some(object) = one.as_object_mut() {
            object.remove("anyOf");
        }
        jsonschema::validator_for(&one).unwrap()
    };
    let mut asked = std::collections::HashMap::new();
    for entry in wire {
        let message = &entry["message"];
        if entry["from"] == "client" {
            if let Some(method) = message["method"].as_str() {
                asked.insert(message["id"].to_string(), method.to_owned());
            }
            continue;
        }
        let (definition, body) = match message["method"].as_str() {
            Some("session/update") => ("SessionNotification", &message["params"]),
            Some("session/request_permission") => ("RequestPermissionRequest", &message["params"]),
            Some(other) => panic!("wonopcode sent an unexpected `{other}`"),
            None if message.get("error").is_some() => continue,
            None => {
                let method = asked
                    .get(&message["id"].to_string())
                    .unwrap_or_else(|| panic!("a response to no request: {message}"));
                let definition = match method.as_str() {
                    "initialize" => "InitializeResponse",
                    "session/new" => "NewSessionResponse",
                    "session/prompt" => "PromptResponse",
                    "session/set_mode" => "SetSessionModeResponse",
                    other => panic!("a response to `{other}`"),
                };
                (definition, &message["result"])
            }
        };
        let errors: Vec<String> = validator(definition)
            .iter_errors(body)
            .map(|e| format!("{e} at {}", e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{definition}: {errors:?}\n{body}");
    }
}

/// A transcript: write `a.txt`, then answer.
fn writing(s: &Scratch) -> PathBuf {
    s.transcript(
        "t.jsonl",
        &[
            calling("w1", "write", r#"{"path": "a.txt", "content": "hi\n"}"#),
            answer("Wrote a.txt."),
        ],
    )
}

/// The client asking for `a.txt` to be written, the scenario's `fields` laid over the
/// plain one; the workspace, and what the client saw (every message checked against the
/// schema).
fn asked_to_write(s: &Scratch, dir: &Path, fields: Value) -> (PathBuf, Value) {
    let t = writing(s);
    let ws = s.ws().canonicalize().unwrap();
    let mut scenario = json!({
        "cwd": ws,
        "prompts": [{"prompt": [{"type": "text", "text": "Write a.txt."}]}],
    });
    if let (Some(scenario), Some(fields)) = (scenario.as_object_mut(), fields.as_object()) {
        scenario.extend(fields.clone());
    }
    let (seen, wire) = drive(s, dir, &scenario, &["--replay", t.to_str().unwrap()]);
    check_against_schema(dir, &wire);
    (ws, seen)
}

fn kinds(seen: &Value) -> Vec<String> {
    seen["updates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["sessionUpdate"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn an_editor_runs_a_turn_sees_its_tool_calls_and_diff_and_approves_the_write() {
    let Some(dir) = client_dir() else { return };
    let s = Scratch::new();
    let (ws, seen) = asked_to_write(
        &s,
        &dir,
        json!({
            "permission": "allow_once",
            "prompts": [
                {"prompt": [{"type": "text", "text": "Write a.txt."}]},
                {"prompt": [{"type": "text", "text": "/clear"}]},
            ],
        }),
    );
    assert_eq!(seen["exitCode"], 0, "{seen}");
    assert_eq!(seen["initialize"]["agentInfo"]["name"], "wonopcode");
    assert_eq!(seen["stops"], json!(["end_turn", "end_turn"]), "{seen}");
    assert_eq!(
        kinds(&seen),
        [
            "available_commands_update",
            "tool_call",
            "tool_call_update",
            "agent_message_chunk",
            "usage_update",
            "usage_update"
        ],
        "{seen}"
    );
    let commands: Vec<&str> = seen["updates"][0]["availableCommands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(commands, ["compact", "clear"]);
    // The turn left a conversation; `/clear` emptied it (no model was asked).
    let (held, cleared) = (&seen["updates"][4], &seen["updates"][5]);
    assert!(held["used"].as_u64().unwrap() > 0, "{held}");
    assert_eq!(cleared["used"], 0, "{cleared}");
    assert_eq!(held["size"], 200000, "{held}");
    let updates = &seen["updates"].as_array().unwrap()[1..];
    assert_eq!(updates[0]["kind"], "edit");
    assert_eq!(
        updates[0]["locations"][0]["path"],
        ws.join("a.txt").display().to_string()
    );
    assert_eq!(updates[1]["status"], "completed");
    assert_eq!(updates[1]["content"][0]["type"], "diff");
    assert_eq!(updates[1]["content"][0]["newText"], "hi\n");
    assert_eq!(updates[2]["content"]["text"], "Wrote a.txt.");
    // The write asked the editor, which allowed it once.
    assert_eq!(seen["permissions"][0]["toolCall"]["toolCallId"], "w1");
    assert_eq!(std::fs::read_to_string(ws.join("a.txt")).unwrap(), "hi\n");
    // The session is the run's journal.
    let run = s.outside("runs").join(seen["sessionId"].as_str().unwrap());
    assert!(run.join("run.json").is_file(), "{}", run.display());
    // A prompt for a session that does not exist is refused, and the agent goes on.
    assert!(
        seen["unknownSession"]
            .as_str()
            .unwrap()
            .contains("no session `no-such-session`"),
        "{seen}"
    );
}

#[test]
fn a_rejected_write_does_not_happen_and_the_model_is_told() {
    let Some(dir) = client_dir() else { return };
    let s = Scratch::new();
    let (ws, seen) = asked_to_write(&s, &dir, json!({"permission": "reject_once"}));
    assert!(!ws.join("a.txt").exists());
    let update = &seen["updates"][2];
    assert_eq!(update["status"], "failed", "{seen}");
    assert!(
        update["rawOutput"]["output"]
            .as_str()
            .unwrap()
            .contains("refused"),
        "{update}"
    );
}

#[test]
fn a_cancel_stops_the_turn_and_its_command() {
    let Some(dir) = client_dir() else { return };
    let s = Scratch::new();
    let t = s.transcript(
        "t.jsonl",
        &[
            calling("b1", "bash", r#"{"command": "sleep 30"}"#),
            answer("never"),
        ],
    );
    let ws = s.ws().canonicalize().unwrap();
    let scenario = json!({
        "cwd": ws,
        "prompts": [{"prompt": [{"type": "text", "text": "Wait."}], "cancelAfterUpdate": 1}],
    });
    let (seen, wire) = drive(
        &s,
        &dir,
        &scenario,
        &["--replay", t.to_str().unwrap(), "--yes"],
    );
    check_against_schema(&dir, &wire);
    assert_eq!(seen["stops"], json!(["cancelled"]), "{seen}");
    // Not a timing target (the benchmarks hold those): the 30 s command did not run out.
    let cancel_ms = seen["cancelMs"].as_u64().unwrap();
    assert!(
        cancel_ms < 10_000,
        "the turn ended {cancel_ms} ms after the cancel"
    );
}

#[test]
fn the_multi_agent_example_reads_in_the_editor_as_its_specialists_tool_calls() {
    let Some(dir) = client_dir() else { return };
    let transcript = repo_root().join("examples/agents/transcripts/orchestrator.jsonl");
    let server = crate::resume::example_server(&transcript);
    let s = crate::resume::example_workspace();
    let ws = s.ws().canonicalize().unwrap();
    let agents = repo_root().join("examples/agents");
    let prompt = std::fs::read_to_string(agents.join("prompts/orchestrator.txt")).unwrap();
    let scenario = json!({
        "cwd": ws,
        "prompts": [{"prompt": [{"type": "text", "text": prompt.trim_end()}]}],
    });
    let (seen, wire) = drive_with(
        &s,
        &dir,
        &scenario,
        &[
            "--loops-dir",
            agents.to_str().unwrap(),
            "--agent-loop-name",
            "orchestrator",
            "--yes",
            "--provider",
            "anthropic",
            "--model",
            "claude-sonnet-4-5",
        ],
        &[
            ("ANTHROPIC_API_KEY", "k"),
            ("ANTHROPIC_BASE_URL", &server.base_url),
        ],
    );
    check_against_schema(&dir, &wire);
    assert_eq!(seen["stops"], json!(["end_turn"]), "{seen}");
    let updates = seen["updates"].as_array().unwrap();
    // Each specialist is a tool call of its own, started and completed.
    let specialists: Vec<&str> = updates
        .iter()
        .filter(|u| {
            u["sessionUpdate"] == "tool_call"
                && u["toolCallId"].as_str().unwrap().starts_with("context-")
        })
        .map(|u| u["title"].as_str().unwrap())
        .collect();
    assert_eq!(specialists.len(), 4, "{specialists:?}");
    assert!(
        specialists[0].starts_with("[0.1] planner: "),
        "{specialists:?}"
    );
    for context in ["0.1", "0.2", "0.3", "0.4"] {
        let done = updates.iter().any(|u| {
            u["toolCallId"] == format!("context-{context}").as_str() && u["status"] == "completed"
        });
        assert!(done, "context {context} did not complete: {seen}");
    }
    // A specialist's own calls are labelled by its context, with its edit as a diff.
    let edit = updates
        .iter()
        .find(|u| u["toolCallId"] == "0.2/toolu_06" && u["sessionUpdate"] == "tool_call_update")
        .unwrap_or_else(|| panic!("no update of the coder's edit: {seen}"));
    assert_eq!(edit["content"][0]["type"], "diff", "{edit}");
    let answer: String = updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|u| u["content"]["text"].as_str())
        .collect();
    assert!(answer.contains("Specialists"), "{answer}");
    let greet = std::fs::read_to_string(ws.join("greet.sh")).unwrap();
    assert!(greet.contains("shout"), "{greet}");
}

#[test]
fn the_editors_mcp_server_joins_the_session() {
    let Some(dir) = client_dir() else { return };
    let Some(everything) = crate::mcp::everything() else {
        return;
    };
    let s = Scratch::new();
    let t = s.transcript(
        "t.jsonl",
        &[
            calling(
                "e1",
                "mcp__editor__echo",
                r#"{"message": "from the editor"}"#,
            ),
            answer("Echoed."),
        ],
    );
    let ws = s.ws().canonicalize().unwrap();
    let scenario = json!({
        "cwd": ws,
        "permission": "allow_once",
        "mcpServers": [{"name": "editor", "command": everything, "args": [], "env": []}],
        "prompts": [{"prompt": [{"type": "text", "text": "Echo."}]}],
    });
    let (seen, wire) = drive(&s, &dir, &scenario, &["--replay", t.to_str().unwrap()]);
    check_against_schema(&dir, &wire);
    let update = seen["updates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["toolCallId"] == "e1" && u["sessionUpdate"] == "tool_call_update")
        .cloned()
        .unwrap_or_else(|| panic!("no update of the call: {seen}"));
    assert_eq!(update["status"], "completed", "{update}");
    assert!(
        update["rawOutput"]["output"]
            .as_str()
            .unwrap()
            .contains("from the editor"),
        "{update}"
    );
}

#[test]
fn in_auto_edit_mode_a_write_runs_unasked() {
    let Some(dir) = client_dir() else { return };
    let s = Scratch::new();
    let (ws, seen) = asked_to_write(
        &s,
        &dir,
        json!({"mode": "auto-edit", "permission": "reject_once"}),
    );
    let offered: Vec<&str> = seen["modes"]["availableModes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(offered, ["ask", "auto-edit", "full-auto"]);
    assert_eq!(seen["modes"]["currentModeId"], "ask");
    assert!(
        kinds(&seen).contains(&"current_mode_update".to_owned()),
        "{seen}"
    );
    assert_eq!(seen["permissions"], json!([]), "nothing was asked: {seen}");
    assert_eq!(std::fs::read_to_string(ws.join("a.txt")).unwrap(), "hi\n");
}
