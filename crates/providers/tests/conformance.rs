//! Every fixture in `tests/fixtures` served by a loopback server through the real client:
//! the assembled text, thinking, tool calls, usage and errors are what the provider meant.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use serde_json::{Value, json};
use support::{OPENAI, Reply, fixture, run};
use wonopcode_protocol::StopReason;
use wonopcode_providers::Api;

fn args(raw: &str) -> Value {
    serde_json::from_str(raw).unwrap_or_else(|e| panic!("arguments {raw:?}: {e}"))
}

#[tokio::test]
async fn anthropic_padded_text_with_ping() {
    let (got, server) = run(
        Api::Anthropic,
        vec![Reply::sse(fixture("anthropic/text-ping-padded.sse"))],
    )
    .await;
    assert_eq!(got.text, "2");
    assert_eq!(got.done, Some(StopReason::EndTurn));
    assert_eq!((got.usage.input_tokens, got.usage.output_tokens), (20, 5));
    assert_eq!(got.error, None);
    let sent: Value = serde_json::from_str(&server.requests.lock().unwrap()[0]).unwrap();
    assert_eq!(sent["stream"], true);
    assert_eq!(sent["system"][0]["text"], "be brief");
    assert_eq!(sent["system"][0]["cache_control"]["type"], "ephemeral");
}

#[tokio::test]
async fn anthropic_thinking_keeps_its_signature() {
    let (got, _) = run(
        Api::Anthropic,
        vec![Reply::sse(fixture("anthropic/thinking-signature-text.sse"))],
    )
    .await;
    assert!(!got.thinking.is_empty());
    assert_eq!(got.signatures.len(), 1);
    assert!(got.signatures[0].len() > 20, "{:?}", got.signatures);
    assert!(
        got.text
            .starts_with("Here are the basic steps for safely crossing the street:"),
        "{}",
        got.text
    );
    assert_eq!((got.usage.input_tokens, got.usage.output_tokens), (43, 282));
    assert_eq!(got.done, Some(StopReason::EndTurn));
}

#[tokio::test]
async fn anthropic_parallel_tools_without_arguments_get_empty_objects() {
    let (got, _) = run(
        Api::Anthropic,
        vec![Reply::sse(fixture(
            "anthropic/parallel-tool-use-empty-input.sse",
        ))],
    )
    .await;
    assert_eq!(got.tools.len(), 2, "{:?}", got.tools);
    for (id, name, arguments) in &got.tools {
        assert_eq!(name, "pelican_name_generator");
        assert_eq!(args(arguments), json!({}));
        assert!(got.ended.contains(id));
    }
    assert_ne!(got.tools[0].0, got.tools[1].0);
    assert_eq!(got.done, Some(StopReason::ToolUse));
    assert_eq!((got.usage.input_tokens, got.usage.output_tokens), (542, 62));
}

#[tokio::test]
async fn anthropic_docs_tool_use_with_fragments_split_inside_keys() {
    // The file ends after its last `data:` line with no blank line.
    let (got, _) = run(
        Api::Anthropic,
        vec![Reply::sse(fixture(
            "anthropic/docs-tool-use-text-then-tool.sse",
        ))],
    )
    .await;
    assert_eq!(
        got.text,
        "Okay, let's check the weather for San Francisco, CA:"
    );
    assert_eq!(got.tools.len(), 1);
    assert_eq!(got.tools[0].1, "get_weather");
    assert_eq!(
        args(&got.tools[0].2),
        json!({"location": "San Francisco, CA", "unit": "fahrenheit"})
    );
    assert_eq!(got.done, Some(StopReason::ToolUse));
    assert_eq!((got.usage.input_tokens, got.usage.output_tokens), (472, 89));
}

#[tokio::test]
async fn anthropic_error_event_after_content_ends_the_stream_keeping_the_text() {
    // The docs' error snippet appended to a stream cut after its text block.
    let full = String::from_utf8(fixture("anthropic/docs-tool-use-text-then-tool.sse")).unwrap();
    let cut = &full[..full
        .find("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1")
        .unwrap()];
    let body = format!(
        "{cut}{}",
        String::from_utf8(fixture("anthropic/docs-error-event-overloaded.sse")).unwrap()
    );
    let (got, server) = run(Api::Anthropic, vec![Reply::sse(body)]).await;
    assert_eq!(
        got.text,
        "Okay, let's check the weather for San Francisco, CA:"
    );
    let error = got.error.unwrap();
    assert!(error.contains("overloaded_error: Overloaded"), "{error}");
    assert!(got.retries.is_empty(), "content was shown: no retry");
    assert_eq!(server.requests.lock().unwrap().len(), 1);
    assert_eq!(got.usage.input_tokens, 472, "billed input is still counted");
}

#[tokio::test]
async fn anthropic_overloaded_before_content_is_retried() {
    let (got, server) = run(
        Api::Anthropic,
        vec![
            Reply::sse(fixture("anthropic/docs-error-event-overloaded.sse")),
            Reply::sse(fixture("anthropic/text-ping-padded.sse")),
        ],
    )
    .await;
    assert_eq!(got.text, "2");
    assert_eq!(got.error, None);
    assert_eq!(got.retries.len(), 1);
    assert!(
        got.retries[0].1.contains("overloaded_error"),
        "{:?}",
        got.retries
    );
    assert_eq!(server.requests.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn anthropic_usage_with_a_compaction_iteration_is_what_was_billed() {
    let (got, _) = run(
        Api::Anthropic,
        vec![Reply::sse(fixture(
            "own/anthropic-compaction-iterations.sse",
        ))],
    )
    .await;
    assert_eq!(got.text, "Done.");
    assert_eq!(got.done, Some(StopReason::EndTurn));
    // The compaction iteration's 55,096 cache reads are billed though the message
    // iteration (the top-level fields) read none.
    assert_eq!(got.usage.cache_read_tokens, 55_096);
    assert_eq!(got.usage.cache_write_tokens, 50_090 + 559);
    assert_eq!(got.usage.input_tokens, 48 + 3);
    assert_eq!(got.usage.output_tokens, 496 + 97);
    assert_eq!(got.error, None);
}

#[tokio::test]
async fn anthropic_hour_long_cache_writes_are_told_apart() {
    let (got, _) = run(
        Api::Anthropic,
        vec![Reply::sse(fixture("own/anthropic-cache-1h.sse"))],
    )
    .await;
    assert_eq!(got.text, "Cached.");
    assert_eq!(got.usage.cache_write_tokens, 2_400);
    assert_eq!(got.usage.cache_write_1h_tokens, 2_000);
    assert_eq!(got.usage.cache_read_tokens, 900);
    assert_eq!(got.usage.output_tokens, 4);
}

#[tokio::test]
async fn anthropic_redacted_thinking_passes_through_and_unknowns_are_ignored() {
    let (got, _) = run(
        Api::Anthropic,
        vec![Reply::sse(fixture("own/anthropic-redacted-thinking.sse"))],
    )
    .await;
    assert_eq!(
        got.redacted,
        vec!["EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"]
    );
    assert_eq!(got.text, "Done.");
    assert!(
        got.tools.is_empty(),
        "server tools are not client tool calls"
    );
    assert_eq!(got.usage.cache_write_tokens, 100);
    assert_eq!(got.usage.cache_read_tokens, 2000);
    assert_eq!(got.usage.output_tokens, 12);
    assert_eq!(got.error, None);
}

#[tokio::test]
async fn openai_tool_call_with_usage_chunk() {
    let (got, server) = run(
        OPENAI,
        vec![Reply::sse(fixture("openai/tool-call-include-usage.sse"))],
    )
    .await;
    assert_eq!(got.tools.len(), 1);
    assert_eq!(got.tools[0].1, "get_capital");
    assert_eq!(args(&got.tools[0].2), json!({"country": "UK"}));
    assert_eq!(got.done, Some(StopReason::ToolUse));
    assert_eq!((got.usage.input_tokens, got.usage.output_tokens), (53, 15));
    let sent: Value = serde_json::from_str(&server.requests.lock().unwrap()[0]).unwrap();
    assert_eq!(sent["stream_options"]["include_usage"], true);
    assert_eq!(sent["messages"][0]["role"], "system");
}

#[tokio::test]
async fn openai_text_with_usage_chunk() {
    let (got, _) = run(
        OPENAI,
        vec![Reply::sse(fixture("openai/text-include-usage.sse"))],
    )
    .await;
    assert_eq!(got.text, "The capital of the UK is London.");
    assert_eq!(got.done, Some(StopReason::EndTurn));
    assert_eq!((got.usage.input_tokens, got.usage.output_tokens), (78, 9));
}

#[tokio::test]
async fn openrouter_comments_reasoning_and_an_error_inside_a_chunk() {
    let (got, server) = run(
        OPENAI,
        vec![Reply::sse(fixture(
            "openrouter/processing-comments-midstream-error.sse",
        ))],
    )
    .await;
    assert!(
        got.thinking
            .starts_with("We need to respond to a greeting."),
        "{}",
        got.thinking
    );
    let error = got.error.expect("the chunk's error fails the stream");
    assert!(error.contains("Token limit reached"), "{error}");
    assert_eq!(got.done, None);
    assert_eq!(got.usage.input_tokens, 43);
    assert_eq!(got.usage.reasoning_tokens, 11);
    assert_eq!(
        got.usage.cost_micro_cents,
        Some(0),
        "OpenRouter reports the cost"
    );
    assert_eq!(
        server.requests.lock().unwrap().len(),
        1,
        "a 400 is not retried"
    );
}

#[tokio::test]
async fn error_bodies_say_what_the_provider_said() {
    let cases = [
        (
            Api::Anthropic,
            "errors/anthropic-400-invalid-request.json",
            400,
            "invalid_request_error",
        ),
        (
            OPENAI,
            "errors/openai-400-invalid-request.json",
            400,
            "unsupported_value",
        ),
    ];
    for (api, file, status, expected) in cases {
        let body = fixture(file);
        let said: Value = serde_json::from_slice(&body).unwrap();
        let (got, server) = run(api, vec![Reply::status(status, "application/json", body)]).await;
        let error = got.error.unwrap_or_else(|| panic!("{file}: no error"));
        assert!(error.contains(&format!("HTTP {status}")), "{error}");
        let message = said["error"]["message"].as_str().unwrap();
        assert!(
            error.contains(&message[..40.min(message.len())]),
            "{file}: {error}"
        );
        assert!(
            error.contains(expected) || said.to_string().contains(expected),
            "{error}"
        );
        assert_eq!(
            server.requests.lock().unwrap().len(),
            1,
            "{file}: a 400 is not retried"
        );
    }
}

#[tokio::test]
async fn rate_limits_are_retried_then_reported() {
    let body = fixture("errors/openrouter-429-rate-limit.json");
    let replies = vec![Reply::status(429, "application/json", body); 5];
    let (got, server) = run(OPENAI, replies).await;
    assert_eq!(server.requests.lock().unwrap().len(), 5);
    assert_eq!(
        got.retries.iter().map(|r| r.0).collect::<Vec<_>>(),
        vec![2, 3, 4, 5]
    );
    let error = got.error.unwrap();
    assert!(
        error.contains("HTTP 429") && error.contains("after 5 attempts"),
        "{error}"
    );
}

#[tokio::test]
async fn anthropic_rate_limit_and_overload_bodies() {
    let (got, _) = run(
        Api::Anthropic,
        vec![
            Reply::status(
                429,
                "application/json",
                fixture("own/anthropic-429-rate-limit.json"),
            )
            .header("retry-after", "0"),
            Reply::status(
                529,
                "application/json",
                fixture("own/anthropic-529-overloaded.json"),
            ),
            Reply::sse(fixture("anthropic/text-ping-padded.sse")),
        ],
    )
    .await;
    assert_eq!(got.text, "2");
    assert_eq!(got.retries.len(), 2);
    assert!(
        got.retries[0].1.contains("rate_limit_error"),
        "{:?}",
        got.retries
    );
    assert!(got.retries[1].1.contains("HTTP 529") && got.retries[1].1.contains("overloaded_error"));
}

#[tokio::test]
async fn ollama_whole_tool_call_and_stop_reason() {
    let (got, _) = run(
        OPENAI,
        vec![Reply::sse(fixture("own/ollama-tool-call.sse"))],
    )
    .await;
    assert_eq!(
        got.tools,
        vec![(
            "call_k3x9p2aa".into(),
            "read".into(),
            r#"{"path":"src/main.rs"}"#.into()
        )]
    );
    assert_eq!(got.done, Some(StopReason::ToolUse));
    assert_eq!(got.usage.input_tokens, 212);
}

#[tokio::test]
async fn ollama_calls_without_index_are_matched_by_id() {
    let (got, _) = run(OPENAI, vec![Reply::sse(fixture("own/ollama-no-index.sse"))]).await;
    let names: Vec<&str> = got.tools.iter().map(|t| t.1.as_str()).collect();
    assert_eq!(names, ["glob", "grep"]);
    assert_eq!(args(&got.tools[1].2), json!({"pattern": "TODO"}));
}

#[tokio::test]
async fn llamacpp_text_with_timings() {
    let (got, _) = run(OPENAI, vec![Reply::sse(fixture("own/llamacpp-text.sse"))]).await;
    assert_eq!(got.text, "Hello, wörld 👋");
    assert_eq!((got.usage.input_tokens, got.usage.output_tokens), (18, 4));
}

#[tokio::test]
async fn vllm_tool_call_fragments_and_vendor_fields() {
    let (got, _) = run(OPENAI, vec![Reply::sse(fixture("own/vllm-tool-call.sse"))]).await;
    assert_eq!(got.tools.len(), 1);
    assert_eq!(got.tools[0].0, "chatcmpl-tool-5c2e");
    assert_eq!(args(&got.tools[0].2), json!({"command": "ls -la"}));
    assert_eq!(got.usage.input_tokens, 301);
}

#[tokio::test]
async fn deepseek_reasoning_content_and_cache_hits() {
    let (got, _) = run(
        OPENAI,
        vec![Reply::sse(fixture("own/deepseek-reasoning.sse"))],
    )
    .await;
    assert_eq!(got.thinking, "The user greets me; reply briefly.");
    assert_eq!(got.text, "Hi!");
    assert_eq!(got.usage.cache_read_tokens, 64);
    assert_eq!(got.usage.input_tokens, 56);
    assert_eq!(got.usage.reasoning_tokens, 22);
}

#[tokio::test]
async fn groq_reasoning_and_usage_under_x_groq() {
    let (got, _) = run(
        OPENAI,
        vec![Reply::sse(fixture("own/groq-reasoning-xgroq-usage.sse"))],
    )
    .await;
    assert_eq!(got.thinking, "Short answer.");
    assert_eq!(got.text, "Four.");
    assert_eq!((got.usage.input_tokens, got.usage.output_tokens), (40, 9));
}

#[tokio::test]
async fn missing_done_after_a_finish_reason_is_fine() {
    let (got, _) = run(
        OPENAI,
        vec![Reply::sse(fixture("own/openai-obfuscation-no-done.sse"))],
    )
    .await;
    assert_eq!(got.text, "Yes.");
    assert_eq!(got.done, Some(StopReason::EndTurn));
    assert_eq!(got.error, None);
}

#[tokio::test]
async fn a_named_error_event_is_an_error() {
    let replies = vec![
        Reply::sse(fixture("own/named-error-event.sse")),
        Reply::sse(fixture("openai/text-include-usage.sse")),
    ];
    let (got, _) = run(OPENAI, replies).await;
    // 503 before any content: retried, and the second attempt answers.
    assert_eq!(got.retries.len(), 1);
    assert!(
        got.retries[0].1.contains("Upstream provider returned 503"),
        "{:?}",
        got.retries
    );
    assert_eq!(got.text, "The capital of the UK is London.");
}

#[tokio::test]
async fn crlf_framing_reads_the_same() {
    let lf = String::from_utf8(fixture("openai/tool-call-include-usage.sse")).unwrap();
    let crlf = lf.replace('\n', "\r\n");
    let (a, _) = run(OPENAI, vec![Reply::sse(lf)]).await;
    let (b, _) = run(OPENAI, vec![Reply::sse(crlf)]).await;
    assert_eq!(a, b);
    assert_eq!(b.tools.len(), 1);
}
