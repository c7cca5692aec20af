//! Test guest that misbehaves on request, so the host's limits and error paths are tested
//! against a real component. The prompt names the misbehaviour; anything else is echoed.

use std::hint::black_box;

use serde_json::Value;
use wonopcode_guest_sdk::{
    Attachment, Grants, Loop, LoopError, Spawn, config, context, custom_tools_host, describe,
    export_loop, prompt_attachments, providers, set_result_data, spawn_all, storage, system, tools,
    ui, user_message,
};

#[derive(Default)]
struct Misbehave;

/// A child described as JSON: `{"module": "same" | {"named": N} | {"path": P}, "task": T,
/// "allow": [..], "deny": [..], "max_iterations": N, "max_tokens": N, "timeout_ms": N,
/// "inherit": true, "data": "...", "provider": P, "model": M, "grants": {"sandbox": MODE,
/// "write": [..], "read": [..], "network": [..], "max_processes": N, "max_cost_usd": X},
/// "thinking": T, "max_output_tokens": N, "temperature": X}`.
fn child(spec: &Value) -> Spawn {
    let task = spec["task"].as_str().unwrap_or_default();
    let mut child = match &spec["module"] {
        Value::Object(m) if m.contains_key("named") => {
            Spawn::named(m["named"].as_str().unwrap_or_default(), task)
        }
        Value::Object(m) if m.contains_key("path") => {
            Spawn::path(m["path"].as_str().unwrap_or_default(), task)
        }
        _ => Spawn::same(task),
    };
    let names = |key: &str| -> Option<Vec<String>> {
        spec[key].as_array().map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
    };
    if let Some(allow) = names("allow") {
        child = child.allow(&allow.iter().map(String::as_str).collect::<Vec<_>>());
    }
    if let Some(deny) = names("deny") {
        child = child.deny(&deny.iter().map(String::as_str).collect::<Vec<_>>());
    }
    if let Some(n) = spec["max_iterations"].as_u64() {
        child = child.max_iterations(u32::try_from(n).unwrap_or(u32::MAX));
    }
    if let Some(n) = spec["max_tokens"].as_u64() {
        child = child.max_tokens(n);
    }
    if let Some(n) = spec["timeout_ms"].as_u64() {
        child = child.timeout_ms(n);
    }
    if spec["inherit"].as_bool() == Some(true) {
        child = child.inherit_messages();
    }
    if let Some(data) = spec["data"].as_str() {
        child = child.custom_data(data);
    }
    let grants = &spec["grants"];
    if grants.is_object() {
        let list = |key: &str| -> Vec<String> {
            grants[key]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default()
        };
        child = child.grants(Grants {
            sandbox: grants["sandbox"].as_str().map(str::to_owned),
            write: list("write"),
            read: list("read"),
            network: list("network"),
            max_processes: grants["max_processes"]
                .as_u64()
                .map(|n| u32::try_from(n).unwrap_or(u32::MAX)),
            max_cost_usd: grants["max_cost_usd"].as_f64(),
        });
    }
    let (provider, model) = (spec["provider"].as_str(), spec["model"].as_str());
    if provider.is_some() || model.is_some() {
        child = child.prefer(provider, model);
    }
    if let Some(thinking) = &spec["thinking"]
        .as_str()
        .map(str::to_owned)
        .or_else(|| spec["thinking"].as_u64().map(|n| n.to_string()))
    {
        child = child.thinking(thinking.as_str());
    }
    if let Some(n) = spec["max_output_tokens"].as_u64() {
        child = child.max_output_tokens(u32::try_from(n).unwrap_or(u32::MAX));
    }
    if let Some(t) = spec["temperature"].as_f64() {
        child = child.temperature(t as f32);
    }
    child
}

/// `handles SPEC`: a child held across three follow-ups, a fork of it whose follow-up is
/// cancelled, both dropped, then two more children started in their places (WIT 0.2.8
/// `child`).
fn handles(spec: &Value) -> Result<String, String> {
    let answer = |r: &wonopcode_guest_sdk::ContextResult| {
        format!(
            "{} {}",
            wonopcode_guest_sdk::status_text(&r.status),
            r.response
        )
    };
    let held = child(spec).start()?;
    let mut said = vec![answer(&held.wait()?)];
    for follow_up in ["two", "three", "four"] {
        said.push(answer(&held.ask(follow_up)?));
    }
    let fork = held.fork("five")?;
    let mut forked = answer(&fork.wait()?);
    // A follow-up of the fork, cancelled: the held child is not touched.
    fork.send("five more")?;
    fork.cancel();
    forked = format!("{forked}, then {}", answer(&fork.wait()?));
    let ids = format!("{} {}", held.id(), fork.id());
    drop(fork);
    drop(held);
    let mut later = Vec::new();
    for task in ["six", "seven"] {
        let module = spec["module"]["named"].as_str().unwrap_or("standard");
        let next = Spawn::named(module, task).start()?;
        later.push(format!("{} {}", next.id(), answer(&next.wait()?)));
    }
    Ok(format!(
        "held: {}\nfork: {forked}\nids: {ids}\nlater: {}",
        said.join(" | "),
        later.join(" | ")
    ))
}

/// Runs the spawn commands: `spawn JSON`, `spawn-all MAX JSON-ARRAY`, `bomb` (spawns itself
/// until the host refuses), `fanout N` (every child spawns N more, in parallel).
fn spawning(input: &str) -> Option<String> {
    if let Some(spec) = input.strip_prefix("spawn-attached ") {
        // The prompt joins the history as a loop adds it; its attachments go to the child.
        storage::add_message(&user_message(input));
        let spec: Value = serde_json::from_str(spec).unwrap_or_default();
        let attachments = prompt_attachments();
        return Some(match child(&spec).run_with(&attachments) {
            Ok(result) => format!("passed {}\n{}", attachments.len(), describe(&result)),
            Err(e) => format!("spawn failed: {e}"),
        });
    }
    if let Some(spec) = input.strip_prefix("spawn-forged ") {
        // An attachment that says PNG but is not one.
        let spec: Value = serde_json::from_str(spec).unwrap_or_default();
        let forged = Attachment {
            media_type: "image/png".to_owned(),
            data: b"#!/bin/sh\nrm -rf ~".to_vec(),
            name: Some("innocent.png".to_owned()),
        };
        return Some(match child(&spec).run_with(&[forged]) {
            Ok(result) => describe(&result),
            Err(e) => format!("spawn failed: {e}"),
        });
    }
    if let Some(spec) = input.strip_prefix("spawn-extended ") {
        // A request with a setting newer than this host: `{"extensions": {"NAME": "VALUE"}}`.
        let spec: Value = serde_json::from_str(spec).unwrap_or_default();
        let mut request = child(&spec).request().clone();
        if let Some(extensions) = spec["extensions"].as_object() {
            request.extensions = extensions
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                .collect();
        }
        return Some(match context::spawn(&request) {
            Ok(result) => describe(&result),
            Err(e) => format!("spawn failed: {e}"),
        });
    }
    if let Some(spec) = input.strip_prefix("spawn ") {
        let spec: Value = serde_json::from_str(spec).unwrap_or_default();
        return Some(match child(&spec).run() {
            Ok(result) => describe(&result),
            Err(e) => format!("spawn failed: {e}"),
        });
    }
    if let Some(spec) = input.strip_prefix("handles ") {
        let spec: Value = serde_json::from_str(spec).unwrap_or_default();
        return Some(handles(&spec).unwrap_or_else(|e| format!("handles failed: {e}")));
    }
    if let Some(rest) = input.strip_prefix("spawn-all ") {
        let (max, specs) = rest.split_once(' ').unwrap_or(("0", "[]"));
        let specs: Vec<Value> = serde_json::from_str(specs).unwrap_or_default();
        let children: Vec<Spawn> = specs.iter().map(child).collect();
        let max = max.parse::<u32>().ok().filter(|m| *m > 0);
        let results = spawn_all(&children, max);
        return Some(
            results
                .iter()
                .enumerate()
                .map(|(i, r)| match r {
                    Ok(result) => format!("[{i}] {}", describe(result)),
                    Err(e) => format!("[{i}] spawn failed: {e}\n"),
                })
                .collect(),
        );
    }
    if let Some(n) = input
        .strip_prefix("spawn-seq ")
        .and_then(|n| n.parse::<u32>().ok())
    {
        // N children one after another, each echoing: a guest spawning in a loop.
        let mut completed = 0u32;
        for i in 0..n {
            match Spawn::same(format!("child {i}")).run() {
                Ok(_) => completed += 1,
                Err(e) => return Some(format!("spawn {i} failed: {e}")),
            }
        }
        return Some(format!("{completed} children completed"));
    }
    if let Some(n) = input
        .strip_prefix("send-seq ")
        .and_then(|n| n.parse::<u32>().ok())
    {
        // One child held, N turns of it one after another, each echoing: what `spawn-seq`
        // does with a fresh child each time.
        let held = match Spawn::same("child 0").start() {
            Ok(held) => held,
            Err(e) => return Some(format!("start failed: {e}")),
        };
        let mut completed = u32::from(held.wait().is_ok());
        for i in 1..n {
            match held.ask(&format!("child {i}")) {
                Ok(_) => completed += 1,
                Err(e) => return Some(format!("send {i} failed: {e}")),
            }
        }
        return Some(format!("{completed} turns completed"));
    }
    if let Some(rest) = input.strip_prefix("nest ") {
        // `nest K TASK`: a chain K children deep whose last child runs TASK.
        let (k, task) = rest.split_once(' ').unwrap_or((rest, ""));
        let k = k.parse::<u32>().unwrap_or(0);
        if k == 0 {
            return None;
        }
        let inner = if k == 1 {
            task.to_owned()
        } else {
            format!("nest {} {task}", k - 1)
        };
        return Some(match Spawn::same(inner).run() {
            Ok(result) => describe(&result),
            Err(e) => format!("spawn failed: {e}"),
        });
    }
    if input == "bomb" {
        return Some(match Spawn::same("bomb").run() {
            Ok(result) => format!(
                "depth {}: {}",
                context::get_context_depth(),
                describe(&result)
            ),
            Err(e) => format!("depth {}: spawn failed: {e}", context::get_context_depth()),
        });
    }
    if let Some(n) = input
        .strip_prefix("fanout ")
        .and_then(|n| n.parse::<usize>().ok())
    {
        // Refusals of this context's spawns plus those its children reported.
        let children = vec![Spawn::same(format!("fanout {n}")); n];
        let refused: usize = spawn_all(&children, None)
            .iter()
            .map(|r| match r {
                Err(_) => 1,
                Ok(result) => result
                    .response
                    .strip_prefix("fanout: ")
                    .and_then(|rest| rest.split(' ').next())
                    .and_then(|k| k.parse().ok())
                    .unwrap_or(0),
            })
            .sum();
        return Some(format!("fanout: {refused} refused"));
    }
    None
}

fn recurse(depth: u64) -> u64 {
    if black_box(depth) == u64::MAX {
        return 0;
    }
    let frame = black_box([depth; 64]);
    recurse(depth + 1) + frame[0]
}

fn custom(name: &str, schema: &str) -> Result<(), String> {
    custom_tools_host::register_tool(&custom_tools_host::CustomToolDefinition {
        id: name.to_owned(),
        name: name.to_owned(),
        description: "test".to_owned(),
        parameters_schema: schema.to_owned(),
        enabled_by_default: true,
    })
}

/// `tools.run-tool-round` on an unknown turn, an unstored one, a stored one twice, and a turn
/// that calls one of this guest's own tools, with the first turn stored twice between: one
/// line per answer. The model's first turn should call `read`, its second `shout`.
fn round_misuse() -> String {
    let options = wonopcode_guest_sdk::HOST_OPTIONS;
    let mut said = vec![format!("{:?}", tools::run_tool_round(9999))];
    match wonopcode_guest_sdk::stream_history(&["read".to_owned()], &options) {
        Ok(turn) => {
            said.push(format!("{:?}", tools::run_tool_round(turn.handle)));
            said.push(format!("{:?}", storage::add_streamed_message(turn.handle)));
            said.push(format!("{:?}", storage::add_streamed_message(turn.handle)));
            said.push(format!("{:?}", tools::run_tool_round(turn.handle)));
            said.push(format!("{:?}", tools::run_tool_round(turn.handle)));
        }
        Err(e) => said.push(e),
    }
    if let Err(e) = custom("shout", r#"{"type": "object"}"#) {
        said.push(e);
    }
    match wonopcode_guest_sdk::run_turn(&["shout".to_owned()], &options) {
        Ok(turn) => said.push(format!("{:?}", tools::run_tool_round(turn.handle))),
        Err(e) => said.push(e),
    }
    said.join("\n")
}

/// `switch PROVIDER [MODEL]`: switches, then answers.
fn switch(spec: &str) -> String {
    let mut words = spec.split_whitespace();
    let provider = words.next().unwrap_or_default();
    if let Err(e) = providers::set_provider(provider) {
        return format!("set-provider refused: {e}");
    }
    if let Some(model) = words.next()
        && let Err(e) = providers::set_model(model)
    {
        return format!("set-model refused: {e}");
    }
    answer()
}

/// `answer`: streams one turn from the history and says which model answered.
fn answer() -> String {
    let who = format!(
        "{}/{}",
        providers::get_current_provider().unwrap_or_default(),
        providers::get_current_model().unwrap_or_default()
    );
    match wonopcode_guest_sdk::stream_history(&[], &wonopcode_guest_sdk::HOST_OPTIONS) {
        Ok(turn) => format!("{who}: {}", turn.text),
        Err(e) => format!("{who}: stream refused: {e}"),
    }
}

fn run_tool(name: &str, arguments: &str) -> String {
    match tools::execute_tool(name, arguments) {
        Ok(result) => format!("success={} {}", result.success, result.content),
        Err(e) => format!("refused: {e}"),
    }
}

impl Loop for Misbehave {
    fn name(&self) -> String {
        "misbehave".to_owned()
    }

    fn run_prompt(&mut self, input: String) -> Result<String, LoopError> {
        if let Some(out) = spawning(&input) {
            return Ok(out);
        }
        match input.as_str() {
            "trap" => panic!("deliberate failure in run-prompt"),
            "spin" => loop {
                black_box(0u64);
            },
            "alloc" => {
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    hoard.push(black_box(vec![1u8; 1 << 20]));
                }
            }
            "recurse" => Ok(recurse(0).to_string()),
            "hoard-state" => {
                // 1 MiB values under new keys until the host says no.
                let value = "v".repeat(1 << 20);
                for i in 0.. {
                    storage::set_state(&format!("k{i}"), &value);
                }
                Ok(String::new())
            }
            "hoard-messages" => {
                let text = "m".repeat(1 << 20);
                loop {
                    storage::add_message(&providers::Message {
                        role: providers::MessageRole::User,
                        content: text.clone(),
                        tool_calls: None,
                        tool_results: None,
                    });
                }
            }
            "bad-handle" => Ok(format!("{:?}", providers::read_stream_chunk(9999))),
            "disabled-tool" => {
                tools::disable_tool("read").map_err(LoopError::Internal)?;
                Ok(run_tool("read", r#"{"path": "a.txt"}"#))
            }
            "outside" => Ok(run_tool("read", r#"{"path": "../secret.txt"}"#)),
            "round-misuse" => Ok(round_misuse()),
            "custom-invalid-json" => Ok(format!("{:?}", custom("shout", "{not json"))),
            "custom-invalid-schema" => Ok(format!(
                "{:?}",
                custom("shout", r#"{"type": "no-such-type"}"#)
            )),
            "config" => Ok(format!(
                "{:?} {:?}",
                config::get_config("greeting"),
                config::get_user_preferences()
            )),
            "ask" => Ok(format!(
                "{:?} {}",
                ui::request_input("your name?"),
                ui::request_confirmation("go on?")
            )),
            "custom-collides" => Ok(format!("{:?}", custom("read", r#"{"type": "object"}"#))),
            "tools" => Ok(tools::get_enabled_tools().join(",")),
            "providers" => Ok(providers::list_providers()
                .iter()
                .map(|p| format!("{}[{}]", p.id, p.models.join(",")))
                .collect::<Vec<_>>()
                .join(" ")),
            other if other.starts_with("switch ") => Ok(switch(&other["switch ".len()..])),
            "answer" => Ok(answer()),
            other if other.starts_with("run-tool ") => {
                let (name, arguments) = other["run-tool ".len()..]
                    .split_once(' ')
                    .unwrap_or(("", "{}"));
                Ok(run_tool(name, arguments))
            }
            "history" => Ok(format!("{} messages", storage::get_messages().len())),
            "attachments" => {
                storage::add_message(&user_message(&input));
                let seen: Vec<String> = prompt_attachments()
                    .iter()
                    .map(|a| format!("{} {} bytes {:?}", a.media_type, a.data.len(), a.name))
                    .collect();
                Ok(format!("attachments: [{}]", seen.join(", ")))
            }
            "progress" => {
                ui::show_progress("reading the notes", Some(0.25));
                ui::show_progress("reading the notes", Some(0.75));
                ui::show_message(ui::MessageLevel::Info, "found 3 notes");
                ui::hide_progress();
                ui::show_progress("left open", None);
                Ok("shown".to_owned())
            }
            "widen" => Ok(format!(
                "{:?} {}",
                tools::enable_tool("bash"),
                tools::get_enabled_tools().join(",")
            )),
            other if other.starts_with("set-enabled ") => {
                let names: Vec<String> = other["set-enabled ".len()..]
                    .split(',')
                    .map(str::to_owned)
                    .collect();
                let set = tools::set_enabled_tools(&names);
                let enabled: Vec<String> = names
                    .iter()
                    .map(|n| format!("{n}={}", tools::is_tool_enabled(n)))
                    .collect();
                Ok(format!(
                    "{set:?} {} [{}]",
                    tools::get_enabled_tools().join(","),
                    enabled.join(" ")
                ))
            }
            other if other.starts_with("enable ") => Ok(format!(
                "{:?} {}",
                tools::enable_tool(&other["enable ".len()..]),
                tools::get_enabled_tools().join(",")
            )),
            "whoami" => {
                let me = context::get_current_context();
                let params = context::get_spawn_request();
                Ok(format!(
                    "id={} depth={} parent={:?} data={:?} provider={:?}",
                    me.id,
                    me.depth,
                    me.parent_id,
                    params.and_then(|p| p.custom_data),
                    config::get_user_preferred_provider()
                ))
            }
            other if other.starts_with("result-data ") => {
                set_result_data(&other["result-data ".len()..]);
                Ok("data set".to_owned())
            }
            other => match other
                .strip_prefix("calls ")
                .and_then(|n| n.parse::<u32>().ok())
            {
                // For benchmarks: `calls N` makes N trivial host calls.
                Some(n) => {
                    let mut cancelled = 0u32;
                    for _ in 0..n {
                        cancelled += u32::from(wonopcode_guest_sdk::system::is_cancelled());
                    }
                    Ok(cancelled.to_string())
                }
                None if other.starts_with("sleep ") => {
                    let ms = other["sleep ".len()..].parse::<u64>().unwrap_or(0);
                    system::sleep_ms(ms);
                    if system::is_cancelled() {
                        return Err(LoopError::Cancelled);
                    }
                    Ok(format!("slept {ms} ms"))
                }
                None => match other
                    .strip_prefix("busy ")
                    .and_then(|n| n.parse::<u64>().ok())
                {
                    // `busy MS`: computes for MS milliseconds, calling the host all along.
                    Some(ms) => {
                        let until = system::current_time_ms() + ms;
                        let mut rounds = 0u64;
                        while system::current_time_ms() < until {
                            rounds += black_box(1);
                        }
                        Ok(format!("busy for {ms} ms, {rounds} rounds"))
                    }
                    None => Ok(format!("echo: {other}")),
                },
            },
        }
    }
}

export_loop!(Misbehave);
