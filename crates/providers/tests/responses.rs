//! The Responses API client against recorded streams (see `tests/fixtures/SOURCES.md`):
//! text, tool calls, a reasoning model's tool loop that carries its reasoning from request to
//! request, parallel calls, an error event, a 429 with `Retry-After`, and a refused key.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use serde_json::{Value, json};
use support::{Reply, collect_from, fixture, request, run, serve, settings};
use wonopcode_protocol::{
    ContextPath, Message, ModelRequest, Part, RequestOptions, Role, StopReason, ToolSchema,
};
use wonopcode_providers::responses::{encrypted_content, reasoning_signature};
use wonopcode_providers::{Api, HttpModel, KeyAuth};

/// A chunks file framed as the Vercel AI SDK's OpenAI tests serve it, `[DONE]` at the end.
fn chunks_sse(lines: &str) -> String {
    support::chunks_sse(lines, "data: [DONE]\n\n")
}

/// A chunks file that holds several responses, one after another: one body each, cut
/// where each `response.created` begins.
fn responses_of(name: &str) -> Vec<String> {
    let text = String::from_utf8(fixture(name)).unwrap();
    let mut responses: Vec<String> = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        if line.contains("\"type\":\"response.created\"") || responses.is_empty() {
            responses.push(String::new());
        }
        let last = responses.last_mut().unwrap();
        last.push_str(line);
        last.push('\n');
    }
    responses.iter().map(|r| chunks_sse(r)).collect()
}

fn sent(server: &support::Server, index: usize) -> Value {
    serde_json::from_str(&server.requests.lock().unwrap()[index]).unwrap()
}

#[tokio::test]
async fn text_of_two_message_items_reads_as_two_paragraphs() {
    let body =
        chunks_sse(&String::from_utf8(fixture("responses/text-two-messages.chunks.txt")).unwrap());
    let (got, server) = run(Api::Responses, vec![Reply::sse(body)]).await;
    assert!(
        got.text.starts_with("Got it\n\nHere are a few **AI"),
        "{}",
        got.text
    );
    assert_eq!(got.done, Some(StopReason::EndTurn));
    assert_eq!(
        (
            got.usage.input_tokens,
            got.usage.cache_read_tokens,
            got.usage.output_tokens,
            got.usage.reasoning_tokens
        ),
        (7112 - 3072, 3072, 463, 64)
    );
    let body = sent(&server, 0);
    assert_eq!(body["store"], false);
    assert_eq!(body["stream"], true);
    assert_eq!(body["instructions"], "be brief");
    assert_eq!(
        body["input"],
        json!([{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hello"}]}])
    );
}

#[tokio::test]
async fn a_tool_call_with_event_lines_then_the_answer() {
    let (got, _) = run(
        Api::Responses,
        vec![Reply::sse(fixture("responses/tool-call-event-lines.sse"))],
    )
    .await;
    assert_eq!(
        got.tools,
        vec![(
            "call_kL0PCQV7M2WMoVX8V8OtYSAL".to_owned(),
            "get_capital".to_owned(),
            r#"{"country":"France"}"#.to_owned()
        )]
    );
    assert_eq!(got.ended, vec!["call_kL0PCQV7M2WMoVX8V8OtYSAL".to_owned()]);
    assert_eq!(got.done, Some(StopReason::ToolUse));
    assert_eq!((got.usage.input_tokens, got.usage.output_tokens), (255, 16));

    let (got, _) = run(
        Api::Responses,
        vec![Reply::sse(fixture(
            "responses/text-after-tool-event-lines.sse",
        ))],
    )
    .await;
    assert_eq!(got.text, "The capital of France is Paris.");
    assert_eq!((got.usage.input_tokens, got.usage.output_tokens), (278, 9));
    assert_eq!(got.done, Some(StopReason::EndTurn));
}

#[tokio::test]
async fn parallel_calls_are_assembled_by_their_item() {
    let (got, _) = run(
        Api::Responses,
        vec![Reply::sse(fixture("own/responses-parallel-calls.sse"))],
    )
    .await;
    assert_eq!(
        got.tools,
        vec![
            (
                "call_weather".into(),
                "weather".into(),
                r#"{"city":"Paris"}"#.into()
            ),
            (
                "call_time".into(),
                "time".into(),
                r#"{"zone":"CET"}"#.into()
            ),
        ]
    );
    assert_eq!(
        got.ended,
        vec!["call_weather".to_owned(), "call_time".to_owned()]
    );
    assert_eq!(got.done, Some(StopReason::ToolUse));
}

/// gpt-5.1-codex-max reasons, calls the calculator three times and answers: each request
/// after the first sends back the reasoning item (its encrypted content, no item id) with
/// the calls and their results, and nothing is kept by the server (`store: false`).
#[tokio::test]
async fn a_reasoning_tool_loop_carries_its_reasoning_to_the_next_request() {
    let bodies = responses_of("responses/reasoning-tool-loop.chunks.txt");
    assert_eq!(bodies.len(), 4);
    let server = serve(bodies.into_iter().map(Reply::sse).collect()).await;
    let mut config = settings(Api::Responses, &server.base_url);
    config.model.capabilities.thinking = true;
    let model = HttpModel::new(config).unwrap();
    let mut history = vec![Message::user("Use the calculator: (12 + 7) * 3 * 10")];
    let results = ["19", "57", "570"];
    let mut reasoning = None;
    for round in 0..4 {
        let got = collect_from(
            &model,
            ModelRequest {
                context: ContextPath::root(),
                system: Some("be brief".into()),
                messages: history.clone().into(),
                tools: vec![ToolSchema {
                    name: "calculator".into(),
                    description: "A minimal calculator for basic arithmetic.".into(),
                    parameters: json!({"type": "object"}),
                }],
                options: RequestOptions::default(),
            },
        )
        .await;
        assert_eq!(got.error, None, "round {round}");
        if round == 3 {
            assert_eq!(got.text, "The final result is **570**.");
            assert_eq!(got.done, Some(StopReason::EndTurn));
            break;
        }
        let mut parts = Vec::new();
        if round == 0 {
            assert!(
                got.thinking.starts_with(
                    "**Calculating step-by-step using calculator**\n\nI'll compute 12 plus 7"
                ),
                "{}",
                got.thinking
            );
            assert_eq!(got.signatures.len(), 1);
            let content =
                encrypted_content(&got.signatures[0]).expect("marked as Responses reasoning");
            assert!(
                content.starts_with("gAAAAABpPDIVOKrs"),
                "the done item's content"
            );
            reasoning = Some(content.to_owned());
            parts.push(Part::Thinking {
                text: got.thinking.clone(),
                signature: Some(got.signatures[0].clone()),
            });
        }
        assert_eq!(got.done, Some(StopReason::ToolUse), "round {round}");
        let (id, name, arguments) = got.tools[0].clone();
        assert_eq!(name, "calculator");
        let expected = [
            json!({"a": 12, "b": 7, "op": "add"}),
            json!({"a": 19, "b": 3, "op": "multiply"}),
            json!({"a": 57, "b": 10, "op": "multiply"}),
        ];
        assert_eq!(
            serde_json::from_str::<Value>(&arguments).unwrap(),
            expected[round]
        );
        parts.push(Part::ToolCall {
            id: id.clone(),
            name,
            arguments,
        });
        history.push(Message::new(Role::Assistant, parts));
        history.push(Message::new(
            Role::Tool,
            vec![Part::ToolResult {
                call_id: id,
                content: results[round].into(),
                is_error: false,
            }],
        ));
    }
    let last = sent(&server, 3);
    assert_eq!(last["store"], false);
    assert_eq!(last["include"], json!(["reasoning.encrypted_content"]));
    let input = last["input"].as_array().unwrap();
    let kinds: Vec<&str> = input.iter().map(|i| i["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "message",
            "reasoning",
            "function_call",
            "function_call_output",
            "function_call",
            "function_call_output",
            "function_call",
            "function_call_output"
        ]
    );
    assert_eq!(input[1]["encrypted_content"], reasoning.unwrap());
    assert_eq!(input[1].get("id"), None, "no item id with store: false");
    assert_eq!(input[2]["call_id"], "call_AB6AaRZ1FYZB2RwS6A5vbdqn");
    assert_eq!(input[7]["output"], "570");
}

#[tokio::test]
async fn an_error_event_before_any_output_is_one_line_and_not_retried() {
    let body = chunks_sse(
        &String::from_utf8(fixture(
            "responses/error-event-insufficient-quota.chunks.txt",
        ))
        .unwrap(),
    );
    let (got, server) = run(Api::Responses, vec![Reply::sse(body)]).await;
    let error = got.error.expect("an error");
    assert!(
        error.contains(
            "You exceeded your current quota, please check your plan and billing details."
        ),
        "{error}"
    );
    assert!(!error.contains('\n'), "{error}");
    assert!(got.retries.is_empty(), "{:?}", got.retries);
    assert_eq!(server.requests.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn a_429_with_retry_after_is_waited_out_then_answered() {
    let started = std::time::Instant::now();
    let (got, server) = run(
        Api::Responses,
        vec![
            Reply::status(
                429,
                "application/json",
                fixture("errors/openrouter-429-rate-limit.json"),
            )
            .header("retry-after", "1"),
            Reply::sse(fixture("responses/text-after-tool-event-lines.sse")),
        ],
    )
    .await;
    assert_eq!(got.text, "The capital of France is Paris.");
    assert_eq!(got.retries.len(), 1, "{:?}", got.retries);
    assert!(started.elapsed() >= std::time::Duration::from_millis(900));
    assert_eq!(server.requests.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn a_refused_key_names_the_variable_it_came_from() {
    let (got, server) = run(
        Api::Responses,
        vec![Reply::status(
            401,
            "application/json",
            fixture("own/openai-401-invalid-key.json"),
        )],
    )
    .await;
    let error = got.error.expect("an error");
    assert!(error.contains("refused the key (HTTP 401)"), "{error}");
    assert!(error.contains("Incorrect API key provided"), "{error}");
    assert!(error.contains("TEST_API_KEY"), "{error}");
    assert!(!error.contains('\n'), "{error}");
    assert_eq!(
        server.requests.lock().unwrap().len(),
        1,
        "a refused key is not retried"
    );
}

#[test]
fn reasoning_from_another_api_is_not_sent() {
    // An Anthropic signature in the history stays out of a Responses request, and a
    // Responses reasoning item stays out of an Anthropic one.
    let mut request = request();
    request.messages = vec![
        Message::user("go"),
        Message::new(
            Role::Assistant,
            vec![
                Part::Thinking {
                    text: "anthropic".into(),
                    signature: Some("EqQBCkYIBxgCKkA".into()),
                },
                Part::Thinking {
                    text: "openai".into(),
                    signature: Some(reasoning_signature("gAAAA")),
                },
                Part::Text { text: "ok".into() },
            ],
        ),
    ]
    .into();
    let responses = serde_json::to_value(wonopcode_providers::responses::request_body(
        "m",
        10,
        true,
        &request,
        wonopcode_providers::prompt_cache::PromptCache::default(),
    ))
    .unwrap();
    let reasoning: Vec<&Value> = responses["input"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["type"] == "reasoning")
        .collect();
    assert_eq!(reasoning.len(), 1);
    assert_eq!(reasoning[0]["encrypted_content"], "gAAAA");
    let anthropic = serde_json::to_value(wonopcode_providers::anthropic::request_body(
        wonopcode_providers::anthropic::Host::ANTHROPIC,
        "m",
        10,
        &request,
        wonopcode_providers::prompt_cache::PromptCache::default(),
    ))
    .unwrap();
    let thinking: Vec<&Value> = anthropic["messages"][1]["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "thinking")
        .collect();
    assert_eq!(thinking.len(), 1);
    assert_eq!(thinking[0]["signature"], "EqQBCkYIBxgCKkA");
}

/// Azure OpenAI: the key goes as `api-key` (never as a bearer token), and a dated API's
/// `api-version` rides on every request's URL.
#[tokio::test]
async fn azure_sends_its_key_header_and_api_version() {
    let server = serve(vec![Reply::sse(fixture(
        "responses/text-after-tool-event-lines.sse",
    ))])
    .await;
    let mut config = settings(Api::Responses, &server.base_url);
    config.auth = KeyAuth::ApiKeyHeader;
    config.api_version = Some("2025-04-01-preview".into());
    let got = collect_from(&HttpModel::new(config).unwrap(), request()).await;
    assert_eq!(got.text, "The capital of France is Paris.");
    let head = server.heads.lock().unwrap()[0].to_ascii_lowercase();
    assert!(
        head.starts_with("post /v1/responses?api-version=2025-04-01-preview http/1.1"),
        "{head}"
    );
    assert!(head.contains("\r\napi-key: test-key\r\n"), "{head}");
    assert!(!head.contains("authorization:"), "{head}");
}
