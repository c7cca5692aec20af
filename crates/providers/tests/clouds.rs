//! Claude on Bedrock and on Vertex AI against recorded Anthropic streams (see
//! `tests/fixtures/SOURCES-shared.md`, section F). Vertex streams them as they were recorded;
//! Bedrock carries each event base64-encoded in an event-stream `chunk` message, framed here
//! with `aws-smithy-eventstream`'s encoder as the Vercel AI SDK's Bedrock tests frame theirs.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::time::Duration;

use serde_json::{Value, json};
use support::{Reply, collect, fixture, run, serve, settings};
use wonopcode_protocol::StopReason;
use wonopcode_providers::Api;
use wonopcode_providers::bedrock::frames::{exception_message, sse_as_frames};

/// A recorded Anthropic stream as Bedrock sends it: each `data:` line's event in a `chunk`.
fn bedrock_frames(sse: &[u8]) -> Vec<u8> {
    sse_as_frames(&String::from_utf8_lossy(sse))
}

fn frames(body: Vec<u8>) -> Reply {
    Reply::status(200, "application/vnd.amazon.eventstream", body)
}

fn sent(server: &support::Server, index: usize) -> Value {
    serde_json::from_str(&server.requests.lock().unwrap()[index]).unwrap()
}

#[tokio::test]
async fn bedrock_reads_a_recorded_thinking_stream_from_its_frames() {
    let (got, server) = run(
        Api::Bedrock,
        vec![frames(bedrock_frames(&fixture(
            "anthropic/thinking-signature-text.sse",
        )))],
    )
    .await;
    assert_eq!(got.error, None);
    assert!(!got.thinking.is_empty());
    assert_eq!(got.signatures.len(), 1);
    assert!(
        got.text
            .starts_with("Here are the basic steps for safely crossing the street:"),
        "{}",
        got.text
    );
    assert_eq!((got.usage.input_tokens, got.usage.output_tokens), (43, 282));
    assert_eq!(got.done, Some(StopReason::EndTurn));
    let head = server.heads.lock().unwrap()[0].to_ascii_lowercase();
    assert!(
        head.starts_with("post /v1/model/test-model/invoke-with-response-stream http/1.1"),
        "{head}"
    );
    // A Bedrock API key goes as a bearer token, in place of a signature.
    assert!(
        head.contains("\r\nauthorization: bearer test-key\r\n"),
        "{head}"
    );
    let body = sent(&server, 0);
    assert_eq!(body["anthropic_version"], "bedrock-2023-05-31");
    assert!(
        body.get("model").is_none() && body.get("stream").is_none(),
        "{body}"
    );
    // Bedrock's Claude takes the same cache breakpoints.
    assert_eq!(body["system"][0]["text"], "be brief");
    assert_eq!(body["system"][0]["cache_control"]["type"], "ephemeral");
}

#[tokio::test]
async fn bedrock_parallel_tool_calls_arrive_whole_across_any_cut() {
    let body = bedrock_frames(&fixture("anthropic/parallel-tool-use-empty-input.sse"));
    // Frames cut across every boundary: 7-byte pieces.
    let reply = support::Reply::Pieces {
        status: 200,
        content_type: "application/vnd.amazon.eventstream".to_owned(),
        headers: Vec::new(),
        pieces: body.chunks(7).map(<[u8]>::to_vec).collect(),
        delay: Duration::ZERO,
    };
    let (got, _) = run(Api::Bedrock, vec![reply]).await;
    assert_eq!(got.tools.len(), 2, "{:?}", got.tools);
    for (id, name, arguments) in &got.tools {
        assert_eq!(name, "pelican_name_generator");
        assert_eq!(serde_json::from_str::<Value>(arguments).unwrap(), json!({}));
        assert!(got.ended.contains(id));
    }
    assert_eq!(got.done, Some(StopReason::ToolUse));
    assert_eq!((got.usage.input_tokens, got.usage.output_tokens), (542, 62));
}

#[tokio::test]
async fn bedrock_throttling_before_content_is_retried_and_after_it_ends_the_stream() {
    let throttled = exception_message(
        "throttlingException",
        "Too many requests, please wait before trying again.",
    );
    let text = bedrock_frames(&fixture("anthropic/text-ping-padded.sse"));
    let (got, server) = run(
        Api::Bedrock,
        vec![frames(throttled.clone()), frames(text.clone())],
    )
    .await;
    assert_eq!(got.text, "2");
    assert_eq!(got.retries.len(), 1, "{:?}", got.retries);
    assert!(
        got.retries[0].1.contains("throttlingException"),
        "{:?}",
        got.retries
    );
    assert_eq!(server.requests.lock().unwrap().len(), 2);

    // The recording's events up to its text, then the exception: the text stays, the
    // stream ends with the error, and nothing is asked again.
    let recorded = String::from_utf8(fixture("anthropic/text-ping-padded.sse")).unwrap();
    let events: Vec<&str> = recorded
        .split("\n\n")
        .filter(|e| !e.contains("message_delta") && !e.contains("message_stop"))
        .collect();
    let mut broken = bedrock_frames(events.join("\n\n").as_bytes());
    broken.extend(exception_message(
        "modelStreamErrorException",
        "The model stream broke.",
    ));
    let (got, server) = run(Api::Bedrock, vec![frames(broken)]).await;
    assert_eq!(got.text, "2");
    let error = got.error.unwrap();
    assert!(
        error.contains("broke off after it had started")
            && error.contains("modelStreamErrorException"),
        "{error}"
    );
    assert_eq!(server.requests.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn bedrock_http_errors_say_what_bedrock_said() {
    let (got, _) = run(
        Api::Bedrock,
        vec![
            Reply::status(
                429,
                "application/json",
                r#"{"message":"Too many tokens, please wait before trying again."}"#,
            )
            .header("retry-after", "0"),
            frames(bedrock_frames(&fixture("anthropic/text-ping-padded.sse"))),
        ],
    )
    .await;
    assert_eq!(got.text, "2");
    assert_eq!(got.retries.len(), 1);

    let (got, _) = run(
        Api::Bedrock,
        vec![Reply::status(
            403,
            "application/json",
            r#"{"message":"Authentication failed: Please make sure your API Key is valid."}"#,
        )],
    )
    .await;
    let error = got.error.unwrap();
    assert!(
        error.contains("refused the key (HTTP 403): Authentication failed")
            && error.contains("check the key in TEST_API_KEY"),
        "{error}"
    );
}

#[tokio::test]
async fn bedrock_a_stream_cut_inside_a_frame_is_retried_not_taken_as_finished() {
    let whole = bedrock_frames(&fixture("anthropic/text-ping-padded.sse"));
    // The first frame only, and half of the second.
    let first = u32::from_be_bytes(whole[..4].try_into().unwrap()) as usize;
    let cut = whole[..first + 10].to_vec();
    let (got, server) = run(Api::Bedrock, vec![frames(cut), frames(whole)]).await;
    assert_eq!(got.text, "2");
    assert_eq!(got.retries.len(), 1, "{:?}", got.retries);
    assert!(
        got.retries[0].1.contains("inside a frame"),
        "{:?}",
        got.retries
    );
    assert_eq!(server.requests.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn vertex_streams_the_recorded_events_with_its_own_version() {
    let (got, server) = run(
        Api::Vertex,
        vec![Reply::sse(fixture(
            "anthropic/parallel-tool-use-empty-input.sse",
        ))],
    )
    .await;
    assert_eq!(got.tools.len(), 2, "{:?}", got.tools);
    assert_eq!(got.done, Some(StopReason::ToolUse));
    let head = server.heads.lock().unwrap()[0].to_ascii_lowercase();
    assert!(
        head.starts_with("post /v1/test-model:streamrawpredict http/1.1"),
        "{head}"
    );
    assert!(
        head.contains("\r\nauthorization: bearer test-key\r\n"),
        "{head}"
    );
    let body = sent(&server, 0);
    assert_eq!(body["anthropic_version"], "vertex-2023-10-16");
    assert_eq!(body["stream"], true);
    assert!(body.get("model").is_none(), "{body}");
}

#[tokio::test]
async fn vertex_overloaded_mid_stream_error_after_content_keeps_the_text() {
    let mut body = fixture("anthropic/text-ping-padded.sse");
    let stop = String::from_utf8_lossy(&body)
        .find("event: message_delta")
        .unwrap();
    body.truncate(stop);
    body.extend(fixture("anthropic/docs-error-event-overloaded.sse"));
    let server = serve(vec![Reply::sse(body)]).await;
    let got = collect(settings(Api::Vertex, &server.base_url)).await;
    assert_eq!(got.text, "2");
    assert!(
        got.error
            .as_deref()
            .is_some_and(|e| e.contains("Overloaded")),
        "{:?}",
        got.error
    );
}

#[tokio::test]
async fn vertex_quota_errors_wait_and_refused_tokens_are_named() {
    // Google's error shape, as Vertex AI answers a used-up quota.
    let exhausted = r#"{"error":{"code":429,"message":"Quota exceeded for aiplatform.googleapis.com/online_prediction_requests_per_base_model with base model: anthropic-claude-sonnet-4-5.","status":"RESOURCE_EXHAUSTED"}}"#;
    let (got, server) = run(
        Api::Vertex,
        vec![
            Reply::status(429, "application/json", exhausted).header("retry-after", "0"),
            Reply::sse(fixture("anthropic/text-ping-padded.sse")),
        ],
    )
    .await;
    assert_eq!(got.text, "2");
    assert_eq!(got.retries.len(), 1);
    assert!(
        got.retries[0].1.contains("Quota exceeded"),
        "{:?}",
        got.retries
    );
    assert_eq!(server.requests.lock().unwrap().len(), 2);

    let unauthenticated = r#"{"error":{"code":401,"message":"Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.","status":"UNAUTHENTICATED"}}"#;
    let (got, server) = run(
        Api::Vertex,
        vec![Reply::status(401, "application/json", unauthenticated)],
    )
    .await;
    let error = got.error.unwrap();
    assert!(
        error.contains("refused the key (HTTP 401)")
            && error.contains("invalid authentication credentials"),
        "{error}"
    );
    assert_eq!(server.requests.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn bedrock_an_input_too_long_is_an_overflow_named_by_its_type() {
    let (got, _) = run(
        Api::Bedrock,
        vec![
            Reply::status(
                400,
                "application/json",
                r#"{"message":"Input is too long for requested model."}"#,
            )
            .header(
                "x-amzn-ErrorType",
                "ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/",
            ),
        ],
    )
    .await;
    let overflow = got.overflow.expect("an overflow");
    assert!(
        overflow.contains("ValidationException: Input is too long"),
        "{overflow}"
    );
}
