//! Test guest that misbehaves on request, so the host's limits and error paths are tested
//! against a real component. The prompt names the misbehaviour; anything else is echoed.

use std::hint::black_box;

use wonopcode_guest_sdk::{
    Loop, LoopError, config, custom_tools_host, export_loop, providers, system, tools, ui,
};

struct Misbehave;

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

fn run_tool(name: &str, arguments: &str) -> String {
    match tools::execute_tool(name, arguments) {
        Ok(result) => format!("success={} {}", result.success, result.content),
        Err(e) => format!("refused: {e}"),
    }
}

impl Loop for Misbehave {
    fn name() -> String {
        "misbehave".to_owned()
    }

    fn run_prompt(input: String) -> Result<String, LoopError> {
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
            "bad-handle" => Ok(format!("{:?}", providers::read_stream_chunk(9999))),
            "disabled-tool" => {
                tools::disable_tool("read").map_err(LoopError::Internal)?;
                Ok(run_tool("read", r#"{"path": "a.txt"}"#))
            }
            "outside" => Ok(run_tool("read", r#"{"path": "../secret.txt"}"#)),
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
