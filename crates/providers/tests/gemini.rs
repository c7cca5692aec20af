//! The Gemini client against recorded streams (see `tests/fixtures/SOURCES-shared.md`,
//! section E): text with a thought signature, a Gemini 3 function call whose signature goes
//! back on the call, thought summaries, and a 429 whose wait is in its body.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use serde_json::{Value, json};
use support::{Reply, collect_from, fixture, request, run, serve, settings};
use wonopcode_protocol::{Message, Part, Role, StopReason};
use wonopcode_providers::signature::Marked;
use wonopcode_providers::{Api, HttpModel};

/// A chunks file framed as the Vercel AI SDK's Gemini tests serve it, with no end marker.
fn chunks_sse(name: &str) -> String {
    support::chunks_sse(&String::from_utf8(fixture(name)).unwrap(), "")
}

#[tokio::test]
async fn text_then_its_thought_signature() {
    let (got, server) = run(
        Api::Gemini,
        vec![Reply::sse(chunks_sse("gemini/text-signature.chunks.txt"))],
    )
    .await;
    assert_eq!(
        got.text,
        "There are **3** \"r\"s in strawberry.\n\nst**r**awbe**rr**y"
    );
    assert_eq!(got.signatures.len(), 1);
    assert!(
        Marked::Gemini
            .unmark(&got.signatures[0])
            .is_some_and(|s| s.starts_with("EqsFCqgFAb4")),
        "{:?}",
        got.signatures
    );
    assert_eq!(got.done, Some(StopReason::EndTurn));
    assert_eq!(
        (
            got.usage.input_tokens,
            got.usage.output_tokens,
            got.usage.reasoning_tokens
        ),
        (9, 23 + 185, 185)
    );
    let head = server.heads.lock().unwrap()[0].to_ascii_lowercase();
    assert!(
        head.starts_with("post /v1/models/test-model:streamgeneratecontent?alt=sse http/1.1"),
        "{head}"
    );
    assert!(head.contains("\r\nx-goog-api-key: test-key\r\n"), "{head}");
    let sent: Value = serde_json::from_str(&server.requests.lock().unwrap()[0]).unwrap();
    assert_eq!(sent["systemInstruction"]["parts"][0]["text"], "be brief");
    assert_eq!(
        sent["contents"],
        json!([{"role": "user", "parts": [{"text": "hello"}]}])
    );
}

/// Gemini 3 refuses a function call sent back without its signature: the second request
/// carries it on the call, and the result under the function's name.
#[tokio::test]
async fn a_signed_call_goes_back_with_its_signature() {
    let server = serve(vec![
        Reply::sse(chunks_sse("gemini/tool-call-signature.chunks.txt")),
        Reply::sse(chunks_sse("gemini/text-signature.chunks.txt")),
    ])
    .await;
    let mut config = settings(Api::Gemini, &server.base_url);
    config.model.capabilities.thinking = true;
    let model = HttpModel::new(config).unwrap();
    let got = collect_from(&model, request()).await;
    assert_eq!(got.done, Some(StopReason::ToolUse));
    assert_eq!(got.tools.len(), 1);
    let (id, name, arguments) = got.tools[0].clone();
    assert_eq!(name, "weather");
    assert_eq!(
        serde_json::from_str::<Value>(&arguments).unwrap(),
        json!({"location": "San Francisco"})
    );
    assert_eq!(got.ended, vec![id.clone()]);
    let signature = got.signatures[0].clone();
    let raw = Marked::Gemini.unmark(&signature).unwrap().to_owned();
    assert!(raw.starts_with("EpEgCo4gAb4"), "{raw}");

    let mut next = request();
    next.messages = vec![
        Message::user("hello"),
        Message::new(
            Role::Assistant,
            vec![
                Part::Thinking {
                    text: String::new(),
                    signature: Some(signature),
                },
                Part::ToolCall {
                    id: id.clone(),
                    name,
                    arguments,
                },
            ],
        ),
        Message::new(
            Role::Tool,
            vec![Part::ToolResult {
                call_id: id,
                content: "foggy, 14°C".into(),
                is_error: false,
            }],
        ),
    ]
    .into();
    let answer = collect_from(&model, next).await;
    assert!(
        answer.text.starts_with("There are **3**"),
        "{}",
        answer.text
    );
    let sent: Value = serde_json::from_str(&server.requests.lock().unwrap()[1]).unwrap();
    assert_eq!(sent["contents"][1]["role"], "model");
    assert_eq!(
        sent["contents"][1]["parts"][0]["thoughtSignature"],
        raw.as_str()
    );
    assert_eq!(
        sent["contents"][1]["parts"][0]["functionCall"],
        json!({"name": "weather", "args": {"location": "San Francisco"}})
    );
    assert_eq!(
        sent["contents"][2]["parts"][0]["functionResponse"],
        json!({"name": "weather", "response": {"content": "foggy, 14°C"}})
    );
    assert_eq!(
        sent["generationConfig"]["thinkingConfig"]["includeThoughts"],
        true
    );
}

#[tokio::test]
async fn thought_summaries_stream_as_thinking() {
    let (got, _) = run(
        Api::Gemini,
        vec![Reply::sse(fixture("gemini/thought-summaries.sse"))],
    )
    .await;
    assert!(
        got.thinking.starts_with("**Clarifying User Goals**"),
        "{}",
        got.thinking
    );
    assert!(
        got.text
            .starts_with("This is a great question! Safely crossing the street"),
        "{}",
        got.text
    );
    assert_eq!(got.done, Some(StopReason::EndTurn));
    assert_eq!(
        (got.usage.input_tokens, got.usage.output_tokens),
        (34, 469 + 787)
    );
}

/// A 429 whose `RetryInfo` asks for 34.4 s, past what this client waits for (2 s in these
/// settings): reported at once, in one line.
#[tokio::test]
async fn a_429_asking_for_a_long_wait_is_reported_not_waited() {
    let started = std::time::Instant::now();
    let (got, server) = run(
        Api::Gemini,
        vec![Reply::status(
            429,
            "application/json",
            fixture("gemini/429-retry-info.json"),
        )],
    )
    .await;
    let error = got.error.expect("an error");
    assert!(error.contains("rate limit (HTTP 429)"), "{error}");
    assert!(error.contains("You exceeded your current quota"), "{error}");
    assert!(got.retries.is_empty());
    assert_eq!(server.requests.lock().unwrap().len(), 1);
    assert!(started.elapsed() < std::time::Duration::from_secs(2));
}
