//! MCP servers (the reference `everything` server from `tests/mcp-servers`; skipped with a
//! message when it is not installed):
//! - `mcp/call_through_wonopcode` against `mcp/call_bare_rmcp`: one `echo` call made through
//!   wonopcode's registry (schema check, permission gate, the MCP tool, result to text) and
//!   the same call made by a bare `rmcp` client to the same kind of server. Goal: ≤ 1.2×.
//! - `mcp/start_10_servers` against `mcp/start_1_server`: starting ten servers (until their
//!   tools are listed) and one. Goal: ten take at most one's time plus 100 ms.

// Benchmark set-up has no user input; a failure there is a bug to see at once.
#![allow(clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use wonopcode_agent_loop::{ToolEnv, ToolRegistry};
use wonopcode_mcp::config::Transport;
use wonopcode_mcp::{ServerConfig, start_all};
use wonopcode_protocol::AllowAll;

fn server_program() -> Option<PathBuf> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/mcp-servers/node_modules/.bin/mcp-server-everything");
    if path.exists() {
        Some(path)
    } else {
        eprintln!("mcp benchmarks skipped: npm ci --prefix tests/mcp-servers");
        None
    }
}

fn config(name: &str, program: &Path) -> ServerConfig {
    ServerConfig {
        name: name.to_owned(),
        transport: Transport::Stdio {
            command: program.display().to_string(),
            args: Vec::new(),
            env: Default::default(),
            cwd: None,
        },
        startup_timeout: Duration::from_secs(30),
        tool_timeout: Duration::from_secs(30),
        enabled_tools: None,
        disabled_tools: Vec::new(),
        sign_in: None,
        sandbox: None,
    }
}

fn bench_mcp(c: &mut Criterion) {
    let Some(program) = server_program() else {
        return;
    };
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let workspace = std::env::temp_dir();
    let mut group = c.benchmark_group("mcp");
    group.sample_size(200);

    // Through wonopcode: the registry's dispatch of the MCP tool.
    let (registry, _started) = rt.block_on(async {
        let started = start_all(vec![config("everything", &program)], &workspace, None, None).await;
        let mut registry = ToolRegistry::new();
        for source in started.sources() {
            assert!(registry.watch(source).is_empty(), "register");
        }
        (registry, started)
    });
    let env = ToolEnv::outside_a_run(workspace.clone());
    let arguments = r#"{"message": "benchmark"}"#;
    group.bench_function("call_through_wonopcode", |b| {
        b.to_async(&rt).iter(|| async {
            let outcome = registry
                .dispatch("mcp__everything__echo", arguments, &env, &AllowAll)
                .await;
            // A failed call is not a finished one: the echo must come back.
            match outcome {
                wonopcode_agent_loop::Dispatch::Finished { output, status, .. } => {
                    assert_eq!(
                        status,
                        wonopcode_protocol::event::ItemStatus::Completed,
                        "{output:?}"
                    );
                    assert!(output.content.contains("benchmark"), "{output:?}");
                }
                other => panic!("the call did not finish: {other:?}"),
            }
        });
    });

    // A bare rmcp client to the same server program.
    let client = rt.block_on(async {
        let transport =
            TokioChildProcess::new(tokio::process::Command::new(&program)).expect("spawn");
        ().serve(transport).await.expect("initialize")
    });
    let object = serde_json::json!({"message": "benchmark"})
        .as_object()
        .cloned()
        .expect("object");
    group.bench_function("call_bare_rmcp", |b| {
        b.to_async(&rt).iter(|| async {
            let request = CallToolRequestParams::new("echo").with_arguments(object.clone());
            let result = client.call_tool(request).await.expect("call");
            assert_ne!(result.is_error, Some(true), "{result:?}");
            assert!(format!("{result:?}").contains("benchmark"), "{result:?}");
        });
    });

    group.sample_size(10);
    group.bench_function("start_1_server", |b| {
        b.to_async(&rt).iter(|| async {
            let started = start_all(vec![config("s", &program)], &workspace, None, None).await;
            assert_eq!(started.servers.len(), 1);
        });
    });
    group.bench_function("start_10_servers", |b| {
        b.to_async(&rt).iter(|| start_ten(&program, &workspace));
    });
    // What starting ten costs beyond the slowest of them (each server's own start, measured
    // in the same run, so that ten Node processes sharing the cores are not counted as
    // wonopcode's): the goal is at most 100 ms.
    group.bench_function("start_10_servers_beyond_the_slowest", |b| {
        b.to_async(&rt).iter_custom(|iterations| {
            let (program, workspace) = (program.clone(), workspace.clone());
            async move {
                let mut beyond = Duration::ZERO;
                for _ in 0..iterations {
                    let begun = std::time::Instant::now();
                    let started = start_ten(&program, &workspace).await;
                    let slowest = started
                        .servers
                        .iter()
                        .map(|s| s.startup())
                        .max()
                        .unwrap_or_default();
                    beyond += begun.elapsed().saturating_sub(slowest);
                }
                beyond
            }
        });
    });
    group.finish();
}

async fn start_ten(program: &Path, workspace: &Path) -> wonopcode_mcp::Started {
    let configs = (0..10).map(|i| config(&format!("s{i}"), program)).collect();
    let started = start_all(configs, workspace, None, None).await;
    assert_eq!(started.servers.len(), 10);
    started
}

criterion_group!(benches, bench_mcp);
criterion_main!(benches);
