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
    wonopcode_sandbox::test_skip::note(how);
    None
}

/// Runs the client on `scenario` against `wonopcode acp FLAGS`; what it saw. Every message
/// wonopcode sent on the wire is checked against the protocol's schema.
fn drive(s: &Scratch, dir: &Path, scenario: &Value, flags: &[&str]) -> Value {
    drive_with(s, dir, scenario, flags, &[])
}

/// [`drive`] with these variables in wonopcode's environment.
fn drive_with(
    s: &Scratch,
    dir: &Path,
    scenario: &Value,
    flags: &[&str],
    env: &[(&str, &str)],
) -> Value {
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
    // Whatever a test looks at, everything wonopcode sent is held to the protocol.
    check_against_schema(dir, &wire);
    seen
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
            Some("fs/read_text_file") => ("ReadTextFileRequest", &message["params"]),
            Some("fs/write_text_file") => ("WriteTextFileRequest", &message["params"]),
            Some(other) => panic!("wonopcode sent an unexpected `{other}`"),
            None if message.get("error").is_some() => ("Error", &message["error"]),
            None => {
                let method = asked
                    .get(&message["id"].to_string())
                    .unwrap_or_else(|| panic!("a response to no request: {message}"));
                let definition = match method.as_str() {
                    "initialize" => "InitializeResponse",
                    "session/new" => "NewSessionResponse",
                    "session/prompt" => "PromptResponse",
                    "session/set_mode" => "SetSessionModeResponse",
                    "session/load" => "LoadSessionResponse",
                    "session/resume" => "ResumeSessionResponse",
                    "session/list" => "ListSessionsResponse",
                    "session/close" => "CloseSessionResponse",
                    "session/set_config_option" => "SetSessionConfigOptionResponse",
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
    let seen = drive(s, dir, &scenario, &["--replay", t.to_str().unwrap()]);
    (ws, seen)
}

/// The update of `kind` (`tool_call`, `tool_call_update`) about the call `id` in `updates`.
fn update_of(updates: &Value, id: &str, kind: &str) -> Value {
    updates
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["toolCallId"] == id && u["sessionUpdate"] == kind)
        .cloned()
        .unwrap_or_else(|| panic!("no {kind} of {id}: {updates}"))
}

/// A transcript whose call runs `sleep 30` (a turn to stop or leave in the middle).
fn sleeping(s: &Scratch) -> PathBuf {
    s.transcript(
        "t.jsonl",
        &[
            calling("b1", "bash", r#"{"command": "sleep 30"}"#),
            answer("never"),
        ],
    )
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
    // The transcript's model takes no images, so prompts are not offered them.
    assert_eq!(
        seen["initialize"]["agentCapabilities"]["promptCapabilities"]["image"],
        false
    );
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
    assert_eq!(
        commands,
        ["compact", "clear", "rewind"],
        "no skills, only the session's own"
    );
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
    let meta: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("run.json")).unwrap()).unwrap();
    // `/clear` is kept in its place, for a resume to give again.
    assert_eq!(
        meta["commands"],
        json!([{"after_prompts": 1, "command": "clear"}]),
        "{meta}"
    );
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
    let t = sleeping(&s);
    let ws = s.ws().canonicalize().unwrap();
    let scenario = json!({
        "cwd": ws,
        "prompts": [{"prompt": [{"type": "text", "text": "Wait."}],
                     "overlapAfterUpdate": 1, "cancelAfterOverlap": true}],
    });
    let seen = drive(
        &s,
        &dir,
        &scenario,
        &["--replay", t.to_str().unwrap(), "--yes"],
    );
    assert_eq!(seen["stops"], json!(["cancelled"]), "{seen}");
    // A second prompt while the first ran was refused, saying why.
    let overlap = seen["overlap"]["error"].as_str().unwrap_or_default();
    assert!(overlap.contains("is running a prompt"), "{seen}");
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
    let seen = drive_with(
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
    assert_eq!(seen["stops"], json!(["end_turn"]), "{seen}");
    // Claude Sonnet 4.5 takes images: prompts are offered them.
    assert_eq!(
        seen["initialize"]["agentCapabilities"]["promptCapabilities"]["image"],
        true
    );
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
    // Once it answers, a specialist's call names its model.
    let named = updates.iter().any(|u| {
        u["toolCallId"] == "context-0.2"
            && u["title"]
                .as_str()
                .is_some_and(|t| t.ends_with(" · anthropic/claude-opus-4-5"))
    });
    assert!(named, "no title with the coder's model: {seen}");
    // A specialist's own calls are labelled by its context, with its edit as a diff.
    let edit = update_of(&seen["updates"], "0.2/toolu_06", "tool_call_update");
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
    let seen = drive(&s, &dir, &scenario, &["--replay", t.to_str().unwrap()]);
    let update = update_of(&seen["updates"], "e1", "tool_call_update");
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

/// The text of every update of `kind` in `updates`, joined.
fn texts(updates: &Value, kind: &str) -> String {
    updates
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u["sessionUpdate"] == kind)
        .filter_map(|u| u["content"]["text"].as_str())
        .collect()
}

#[test]
fn a_session_is_loaded_after_the_editor_restarts_and_nothing_runs_again() {
    let Some(dir) = client_dir() else { return };
    let s = Scratch::new();
    let (ws, first) = asked_to_write(&s, &dir, json!({"permission": "allow_once"}));
    let id = first["sessionId"].as_str().unwrap().to_owned();
    // What the write did is undone by hand: a load that ran it again would bring it back.
    std::fs::remove_file(ws.join("a.txt")).unwrap();
    let next = s.transcript_after("next.jsonl", 2, &[answer("Continued.")]);
    let flags = ["--replay", next.to_str().unwrap()];
    let scenario = json!({
        "cwd": ws, "load": id, "list": true,
        "prompts": [{"prompt": [{"type": "text", "text": "Go on."}]}],
    });
    let seen = drive(&s, &dir, &scenario, &flags);
    assert_eq!(seen["initialize"]["agentCapabilities"]["loadSession"], true);
    let listed = &seen["listed"]["sessions"];
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(listed[0]["sessionId"], id.as_str());
    assert_eq!(listed[0]["title"], "Write a.txt.");
    // The past comes back as it was seen: the prompt, the call, its end, the answer.
    let past = &seen["loadUpdates"];
    assert_eq!(
        kinds(&json!({"updates": past})),
        [
            "user_message_chunk",
            "tool_call",
            "tool_call_update",
            "agent_message_chunk"
        ],
        "{past}"
    );
    assert_eq!(texts(past, "user_message_chunk"), "Write a.txt.");
    assert_eq!(past[2]["status"], "completed");
    assert_eq!(texts(past, "agent_message_chunk"), "Wrote a.txt.");
    assert!(!ws.join("a.txt").exists(), "the write ran again");
    // The conversation goes on with the model's next response (a replay that would have
    // been asked for the first two again has none of them).
    assert_eq!(seen["stops"], json!(["end_turn"]), "{seen}");
    assert_eq!(texts(&seen["updates"], "agent_message_chunk"), "Continued.");
    // Loaded again, it holds both prompts; from another folder, or by a name it does not
    // have, it is refused.
    let scenario = json!({"cwd": ws, "load": id, "prompts": []});
    let again = drive(&s, &dir, &scenario, &flags);
    assert_eq!(
        texts(&again["loadUpdates"], "user_message_chunk"),
        "Write a.txt.Go on."
    );
    assert_eq!(
        texts(&again["loadUpdates"], "agent_message_chunk"),
        "Wrote a.txt.Continued."
    );
    let elsewhere = s.outside("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let scenario = json!({"cwd": elsewhere.canonicalize().unwrap(), "load": id, "prompts": []});
    let refused = drive(&s, &dir, &scenario, &flags);
    let why = refused["loadError"].as_str().unwrap();
    assert!(why.contains(&format!("session `{id}` ran in")), "{why}");
    let scenario = json!({"cwd": ws, "load": "20990101T000000-000000", "prompts": []});
    let unknown = drive(&s, &dir, &scenario, &flags);
    let why = unknown["loadError"].as_str().unwrap();
    assert!(why.contains("no session `20990101T000000-000000`"), "{why}");
}

#[test]
fn a_resumed_session_goes_on_without_its_past_sent_and_a_closed_one_ends() {
    let Some(dir) = client_dir() else { return };
    let s = Scratch::new();
    let (ws, first) = asked_to_write(&s, &dir, json!({"permission": "allow_once"}));
    let id = first["sessionId"].as_str().unwrap();
    let next = s.transcript_after("next.jsonl", 2, &[answer("Continued.")]);
    let scenario = json!({
        "cwd": ws, "resume": id, "close": true,
        "prompts": [{"prompt": [{"type": "text", "text": "Go on."}]}],
    });
    let seen = drive(&s, &dir, &scenario, &["--replay", next.to_str().unwrap()]);
    assert_eq!(seen["loadUpdates"], json!([]), "{seen}");
    assert_eq!(texts(&seen["updates"], "agent_message_chunk"), "Continued.");
    assert_eq!(seen["closed"], json!({}), "{seen}");
    // The run that went on ended when the editor closed the session.
    let runs = std::fs::read_dir(s.outside("runs")).unwrap();
    let metas: Vec<Value> = runs
        .map(|e| {
            serde_json::from_str(
                &std::fs::read_to_string(e.unwrap().path().join("run.json")).unwrap(),
            )
            .unwrap()
        })
        .collect();
    let went_on = metas
        .iter()
        .find(|m| m["continues"] == id)
        .unwrap_or_else(|| panic!("no run continues {id}: {metas:?}"));
    assert_eq!(went_on["status"], "finished", "{went_on}");
    assert_eq!(went_on["prompts"], json!(["Go on."]), "{went_on}");
}

#[test]
fn an_editor_that_leaves_mid_turn_stops_it_and_the_session_loads_again() {
    let Some(dir) = client_dir() else { return };
    let s = Scratch::new();
    let t = sleeping(&s);
    let ws = s.ws().canonicalize().unwrap();
    let scenario = json!({
        "cwd": ws,
        "prompts": [{"prompt": [{"type": "text", "text": "Wait."}], "leaveAfterUpdate": 1}],
    });
    let started = std::time::Instant::now();
    let seen = drive(
        &s,
        &dir,
        &scenario,
        &["--replay", t.to_str().unwrap(), "--yes"],
    );
    // Not a timing target: the 30 s command did not hold the agent up.
    let took = started.elapsed();
    assert!(took < std::time::Duration::from_secs(20), "took {took:?}");
    assert_eq!(seen["left"], true, "{seen}");
    assert_eq!(seen["exitCode"], 0, "{seen}");
    let id = seen["sessionId"].as_str().unwrap();
    let meta: Value = serde_json::from_str(
        &std::fs::read_to_string(s.outside("runs").join(id).join("run.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(meta["status"], "interrupted", "{meta}");
    // Loaded again, the cut call is there, and the model is told it was interrupted.
    let next = s.transcript_after("next.jsonl", 1, &[answer("Understood.")]);
    let scenario = json!({
        "cwd": ws, "load": id,
        "prompts": [{"prompt": [{"type": "text", "text": "What happened?"}]}],
    });
    let loaded = drive(&s, &dir, &scenario, &["--replay", next.to_str().unwrap()]);
    let call = update_of(&loaded["loadUpdates"], "b1", "tool_call_update");
    assert_eq!(call["status"], "failed", "{call}");
    assert_eq!(loaded["stops"], json!(["end_turn"]), "{loaded}");
    assert_eq!(
        texts(&loaded["updates"], "agent_message_chunk"),
        "Understood."
    );
}

#[test]
fn the_editor_sets_the_model_and_thinking_and_the_journal_keeps_them() {
    let Some(dir) = client_dir() else { return };
    let s = Scratch::new();
    let model = |id: &str| {
        json!({"id": id, "provider": "test", "context_window": 200000, "max_output": 32000,
               "capabilities": {"tools": true, "thinking": true,
                                "thinking_must_be_returned": false, "vision": false}})
    };
    let t = s.outside("models.jsonl");
    std::fs::write(
        &t,
        crate::support::model_transcript(
            model("m1"),
            &[("0", Some(model("m2")), answer("From m2."))],
        ),
    )
    .unwrap();
    let ws = s.ws().canonicalize().unwrap();
    let scenario = json!({
        "cwd": ws,
        "options": [
            {"configId": "thinking", "value": "high"},
            {"configId": "model", "value": "test/m2"},
            {"configId": "model", "value": "nowhere/x"},
            {"configId": "colour", "value": "blue"},
        ],
        "prompts": [{"prompt": [{"type": "text", "text": "Hi."}]}],
    });
    let seen = drive(&s, &dir, &scenario, &["--replay", t.to_str().unwrap()]);
    let options = &seen["configOptions"];
    assert_eq!(options[0]["id"], "model", "{options}");
    assert_eq!(options[0]["currentValue"], "test/m1", "{options}");
    let offered: Vec<&str> = options[0]["options"][0]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["value"].as_str().unwrap())
        .collect();
    assert_eq!(offered, ["test/m1", "test/m2"], "{options}");
    assert_eq!(options[1]["id"], "thinking", "{options}");
    assert_eq!(options[1]["currentValue"], "off", "{options}");
    let set = &seen["optionsSet"];
    assert_eq!(set[0]["configOptions"][1]["currentValue"], "high", "{set}");
    assert_eq!(
        set[1]["configOptions"][0]["currentValue"], "test/m2",
        "{set}"
    );
    assert!(
        set[2]["error"]
            .as_str()
            .unwrap()
            .contains("model `nowhere/x`"),
        "{set}"
    );
    assert!(
        set[3]["error"]
            .as_str()
            .unwrap()
            .contains("no option `colour`"),
        "{set}"
    );
    // The prompt after the switch is answered by the model switched to.
    assert_eq!(texts(&seen["updates"], "agent_message_chunk"), "From m2.");
    let run = s.outside("runs").join(seen["sessionId"].as_str().unwrap());
    let meta: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("run.json")).unwrap()).unwrap();
    assert_eq!(
        meta["commands"],
        json!([
            {"after_prompts": 0, "command": "thinking", "thinking": "high"},
            {"after_prompts": 0, "command": "model", "provider": "test", "model": "m2"},
        ]),
        "{meta}"
    );
}

/// How long a workspace must be left alone before the editor is asked about its files:
/// the directories on the way are held still only once they have been quiet this long.
const QUIET: std::time::Duration = std::time::Duration::from_millis(2100);

#[test]
fn with_the_editors_file_system_the_tools_read_its_buffers_and_edits_land_on_disk() {
    let Some(dir) = client_dir() else { return };
    let s = Scratch::new();
    s.file("a.txt", "on disk\n");
    std::fs::write(s.outside("secret.txt"), "outside\n").unwrap();
    let t = s.transcript(
        "t.jsonl",
        &[
            calling("r1", "read", r#"{"path": "a.txt"}"#),
            calling(
                "e1",
                "edit",
                r#"{"path": "a.txt", "old_string": "unsaved", "new_string": "edited"}"#,
            ),
            calling("r2", "read", r#"{"path": "../secret.txt"}"#),
            answer("Done."),
        ],
    );
    let ws = s.ws().canonicalize().unwrap();
    let a = ws.join("a.txt").display().to_string();
    let scenario = json!({
        "cwd": ws,
        "permission": "allow_once",
        "buffers": {a.clone(): "unsaved line\n"},
        "prompts": [{"prompt": [{"type": "text", "text": "Edit a.txt."}]}],
    });
    std::thread::sleep(QUIET);
    let seen = drive(&s, &dir, &scenario, &["--replay", t.to_str().unwrap()]);
    let ended = |id: &str| update_of(&seen["updates"], id, "tool_call_update");
    // The read saw the editor's unsaved text, not the disk's.
    let read = ended("r1");
    let output = read["rawOutput"]["output"].as_str().unwrap();
    assert!(output.contains("unsaved line"), "{read}");
    // The edit was made on that text and written on disk, never by name through the
    // editor (which sees the change there).
    assert_eq!(ended("e1")["status"], "completed");
    assert_eq!(seen["fsWrites"], json!([]), "{seen}");
    assert_eq!(
        std::fs::read_to_string(ws.join("a.txt")).unwrap(),
        "edited line\n"
    );
    // A path outside the workspace is refused before the editor is asked.
    assert_eq!(ended("r2")["status"], "failed");
    assert_eq!(seen["fsReads"], json!([a, a]), "{seen}");
}

#[test]
fn a_directory_swapped_for_a_link_while_the_editor_opens_a_file_leads_nowhere() {
    let Some(dir) = client_dir() else { return };
    let s = Scratch::new();
    s.file("notes/plan.txt", "the plan\n");
    let ssh = s.outside("ssh");
    std::fs::create_dir_all(&ssh).unwrap();
    std::fs::write(
        ssh.join("plan.txt"),
        "-----BEGIN OPENSSH PRIVATE KEY-----\n",
    )
    .unwrap();
    let t = s.transcript(
        "t.jsonl",
        &[
            calling("r1", "read", r#"{"path": "notes/plan.txt"}"#),
            calling(
                "w1",
                "write",
                r#"{"path": "notes/authorized_keys", "content": "ssh-ed25519 AAAA attacker\n"}"#,
            ),
            answer("Done."),
        ],
    );
    let ws = s.ws().canonicalize().unwrap();
    // The editor opens by name; a sibling swaps `notes` for a link to `ssh` around every
    // open, and back.
    let scenario = json!({
        "cwd": ws,
        "permission": "allow_once",
        "buffers": {},
        "swap": {"dir": ws.join("notes"), "link": ssh},
        "prompts": [{"prompt": [{"type": "text", "text": "Read the plan."}]}],
    });
    std::thread::sleep(QUIET);
    let seen = drive(&s, &dir, &scenario, &["--replay", t.to_str().unwrap()]);
    let ended = |id: &str| update_of(&seen["updates"], id, "tool_call_update");
    // The editor was asked, and its answer (the key) was dropped for the disk's text.
    assert_eq!(seen["fsReads"].as_array().map(Vec::len), Some(1), "{seen}");
    let read = ended("r1");
    let output = read["rawOutput"]["output"].as_str().unwrap_or_default();
    assert!(output.contains("the plan"), "{read}");
    assert!(!seen.to_string().contains("PRIVATE KEY"), "{seen}");
    let requests = std::fs::read_dir(s.outside("runs")).unwrap();
    for run in requests.flatten() {
        let events = std::fs::read_to_string(run.path().join("events.jsonl")).unwrap_or_default();
        assert!(!events.contains("PRIVATE KEY"), "the key reached the run");
    }
    // The write went to disk beneath the workspace, not by name through the editor.
    assert_eq!(ended("w1")["status"], "completed", "{seen}");
    assert_eq!(seen["fsWrites"], json!([]), "{seen}");
    assert!(!ssh.join("authorized_keys").exists());
    assert!(ws.join("notes/authorized_keys").is_file());
}

#[test]
fn a_refused_answer_ends_the_prompt_as_a_refusal() {
    let Some(dir) = client_dir() else { return };
    let s = Scratch::new();
    let t = s.transcript(
        "t.jsonl",
        &[vec![
            crate::support::text("I can't help with that."),
            crate::support::done("refusal"),
        ]],
    );
    let ws = s.ws().canonicalize().unwrap();
    let scenario = json!({
        "cwd": ws,
        "prompts": [{"prompt": [{"type": "text", "text": "Something I should not ask."}]}],
    });
    let seen = drive(&s, &dir, &scenario, &["--replay", t.to_str().unwrap()]);
    assert_eq!(seen["stops"], json!(["refusal"]), "{seen}");
}

#[test]
fn a_skill_is_a_command_and_asking_for_it_gives_the_model_its_instructions() {
    let Some(dir) = client_dir() else { return };
    let s = Scratch::new();
    s.file(
        ".claude/skills/review/SKILL.md",
        "---\nname: review\ndescription: Review a change for bugs\n---\nCheck every changed line for off-by-one errors.\n",
    );
    let t = s.transcript("t.jsonl", &[answer("Reviewed.")]);
    let ws = s.ws().canonicalize().unwrap();
    let scenario = json!({
        "cwd": ws,
        "prompts": [{"prompt": [{"type": "text", "text": "/review the parser"}]}],
    });
    let seen = drive(&s, &dir, &scenario, &["--replay", t.to_str().unwrap()]);
    let offered = seen["updates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["sessionUpdate"] == "available_commands_update")
        .cloned()
        .unwrap_or_else(|| panic!("no commands: {seen}"));
    let review = offered["availableCommands"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "review")
        .cloned()
        .unwrap_or_else(|| panic!("the skill is not a command: {offered}"));
    assert_eq!(review["description"], "Skill: Review a change for bugs");
    assert_eq!(review["input"]["hint"], "what to use it for");
    assert_eq!(seen["stops"], json!(["end_turn"]), "{seen}");
    // The prompt the model was given holds the skill's instructions and the request.
    let run = s.outside("runs").join(seen["sessionId"].as_str().unwrap());
    let meta: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("run.json")).unwrap()).unwrap();
    let prompt = meta["prompts"][0].as_str().unwrap();
    assert!(prompt.contains("<skill name=\"review\""), "{prompt}");
    assert!(prompt.contains("off-by-one errors"), "{prompt}");
    assert!(prompt.ends_with("the parser"), "{prompt}");
}

#[test]
fn thinking_and_the_todo_list_reach_the_editor_as_thought_chunks_and_a_plan() {
    let Some(dir) = client_dir() else { return };
    let s = Scratch::new();
    let mut planning = vec![json!({"type": "thinking_delta", "text": "Two steps."})];
    planning.extend(calling(
        "t1",
        "todo",
        r#"{"todos": [{"content": "Read", "status": "completed"}, {"content": "Write", "status": "in_progress"}]}"#,
    ));
    let t = s.transcript("t.jsonl", &[planning, answer("Planned.")]);
    let ws = s.ws().canonicalize().unwrap();
    let scenario = json!({
        "cwd": ws,
        "prompts": [{"prompt": [{"type": "text", "text": "Plan."}]}],
    });
    let seen = drive(&s, &dir, &scenario, &["--replay", t.to_str().unwrap()]);
    assert_eq!(texts(&seen["updates"], "agent_thought_chunk"), "Two steps.");
    let plan = seen["updates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["sessionUpdate"] == "plan")
        .cloned()
        .unwrap_or_else(|| panic!("no plan: {seen}"));
    let entries: Vec<(&str, &str)> = plan["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["content"].as_str().unwrap(),
                e["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(entries, [("Read", "completed"), ("Write", "in_progress")]);
    let think = update_of(&seen["updates"], "t1", "tool_call");
    assert_eq!(think["kind"], "think", "{think}");
}

#[test]
fn a_turn_cancelled_while_a_question_waits_ends_cancelled_and_nothing_runs() {
    let Some(dir) = client_dir() else { return };
    let s = Scratch::new();
    let (ws, seen) = asked_to_write(&s, &dir, json!({"permission": "cancel"}));
    assert_eq!(seen["permissions"].as_array().unwrap().len(), 1, "{seen}");
    assert_eq!(seen["stops"], json!(["cancelled"]), "{seen}");
    assert!(!ws.join("a.txt").exists(), "the write ran");
}

/// `wonopcode acp` spoken to directly, frame by frame: the process, its stdin, and its
/// stdout read by line.
pub(crate) fn raw_agent(
    s: &Scratch,
) -> (
    std::process::Child,
    std::process::ChildStdin,
    std::io::BufReader<std::process::ChildStdout>,
) {
    let mut agent = crate::support::command()
        .arg("acp")
        .env("WONOPCODE_RUNS_DIR", s.outside("runs"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let to = agent.stdin.take().unwrap();
    let from = std::io::BufReader::new(agent.stdout.take().unwrap());
    (agent, to, from)
}

#[test]
fn malformed_messages_and_unknown_methods_get_errors_and_the_agent_goes_on() {
    use std::io::{BufRead, Write};
    let s = Scratch::new();
    let (mut agent, mut to, mut from) = raw_agent(&s);
    let mut ask = |line: &str| -> Value {
        writeln!(to, "{line}").unwrap();
        let mut answer = String::new();
        from.read_line(&mut answer).unwrap();
        serde_json::from_str(&answer).unwrap_or_else(|e| panic!("{e}: {answer}"))
    };
    let init = ask(
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#,
    );
    assert_eq!(init["result"]["protocolVersion"], 1, "{init}");
    let garbage = ask("{not json");
    assert_eq!(garbage["error"]["code"], -32700, "{garbage}");
    let unknown = ask(r#"{"jsonrpc":"2.0","id":1,"method":"session/fly","params":{}}"#);
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    let bad = ask(
        r#"{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"relative/dir","mcpServers":[]}}"#,
    );
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    assert!(
        bad["error"]["data"]
            .as_str()
            .unwrap()
            .contains("not an absolute path"),
        "{bad}"
    );
    let wrong =
        ask(r#"{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":7}}"#);
    assert_eq!(wrong["error"]["code"], -32602, "{wrong}");
    // Still serving: a well-formed request is answered.
    let listed = ask(r#"{"jsonrpc":"2.0","id":4,"method":"session/list","params":{}}"#);
    assert_eq!(listed["result"]["sessions"], json!([]), "{listed}");
    drop(to);
    let status = agent.wait().unwrap();
    assert!(status.success(), "{status}");
}

#[test]
fn rewind_in_the_editor_takes_back_the_last_prompts_changes() {
    let Some(dir) = client_dir() else { return };
    let s = Scratch::new();
    let (ws, seen) = asked_to_write(
        &s,
        &dir,
        json!({
            "permission": "allow_once",
            "prompts": [
                {"prompt": [{"type": "text", "text": "Write a.txt."}]},
                {"prompt": [{"type": "text", "text": "/rewind 5"}]},
                {"prompt": [{"type": "text", "text": "/rewind"}]},
            ],
        }),
    );
    // A prompt the run does not have is refused, saying how many there are.
    assert_eq!(seen["stops"], json!(["end_turn", "end_turn"]), "{seen}");
    let refused = seen["errors"][0].as_str().unwrap_or_default();
    assert!(refused.contains("has 1 prompt(s)"), "{seen}");
    // The write is taken back, and the editor is told.
    assert!(!ws.join("a.txt").exists(), "{seen}");
    let said = texts(&seen["updates"], "agent_message_chunk");
    assert!(said.ends_with("removed a.txt"), "{said}");
}
