//! Prompt caching through the real client: the breakpoints go out, and a server that
//! refuses them gets the same request again without, once, and no more of them after.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use serde_json::Value;
use support::{Reply, collect_from, fixture, request, serve, settings};
use wonopcode_providers::Api;
use wonopcode_providers::http::HttpModel;

const REFUSAL: &str = r#"{"type":"error","error":{"type":"invalid_request_error","message":"system.0.cache_control: Extra inputs are not permitted"}}"#;

#[tokio::test]
async fn a_server_refusing_cache_markers_is_asked_again_without_them_once_for_the_run() {
    let server = serve(vec![
        Reply::status(400, "application/json", REFUSAL),
        Reply::sse(fixture("anthropic/text-ping-padded.sse")),
        Reply::sse(fixture("anthropic/text-ping-padded.sse")),
    ])
    .await;
    let model = HttpModel::new(settings(Api::Anthropic, &server.base_url)).unwrap();
    let first = collect_from(&model, request()).await;
    assert_eq!(first.error, None, "retried without the markers");
    assert_eq!(first.text, "2");
    let second = collect_from(&model, request()).await;
    assert_eq!(second.text, "2");
    let sent: Vec<Value> = server
        .requests
        .lock()
        .unwrap()
        .iter()
        .map(|body| serde_json::from_str(body).unwrap())
        .collect();
    assert_eq!(
        sent.len(),
        3,
        "one refusal, one retry, then no more refusals"
    );
    assert_eq!(sent[0]["system"][0]["cache_control"]["type"], "ephemeral");
    for later in &sent[1..] {
        assert!(!later.to_string().contains("cache_control"), "{later}");
        assert_eq!(later["system"], "be brief");
    }
}

#[tokio::test]
async fn a_refusal_for_another_reason_is_not_taken_for_one_of_caching() {
    let other = r#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: too large"}}"#;
    let server = serve(vec![Reply::status(400, "application/json", other)]).await;
    let model = HttpModel::new(settings(Api::Anthropic, &server.base_url)).unwrap();
    let got = collect_from(&model, request()).await;
    let error = got.error.expect("the refusal");
    assert!(error.contains("max_tokens: too large"), "{error}");
    assert_eq!(server.requests.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn responses_requests_carry_one_cache_key_per_prompt_and_tools() {
    let page = || Reply::sse(fixture("responses/text-after-tool-event-lines.sse"));
    let server = serve(vec![page(), page(), page()]).await;
    let model = HttpModel::new(settings(Api::Responses, &server.base_url)).unwrap();
    let mut later = request();
    later.messages = vec![
        wonopcode_protocol::Message::user("hello"),
        wonopcode_protocol::Message::user("and again"),
    ]
    .into();
    let mut other = request();
    other.system = Some("be thorough".to_owned());
    for r in [request(), later, other] {
        collect_from(&model, r).await;
    }
    let keys: Vec<Value> = server
        .requests
        .lock()
        .unwrap()
        .iter()
        .map(|body| serde_json::from_str::<Value>(body).unwrap()["prompt_cache_key"].clone())
        .collect();
    assert!(
        keys[0]
            .as_str()
            .is_some_and(|k| k.starts_with("wonopcode-")),
        "{keys:?}"
    );
    assert_eq!(keys[0], keys[1], "the history is not in the key");
    assert_ne!(keys[0], keys[2], "the system prompt is");
}

#[tokio::test]
async fn a_responses_server_refusing_the_cache_key_is_asked_again_without_it() {
    let refusal = r#"{"error":{"message":"Unrecognized request argument supplied: prompt_cache_key","type":"invalid_request_error"}}"#;
    let server = serve(vec![
        Reply::status(400, "application/json", refusal),
        Reply::sse(fixture("responses/text-after-tool-event-lines.sse")),
    ])
    .await;
    let model = HttpModel::new(settings(Api::Responses, &server.base_url)).unwrap();
    let got = collect_from(&model, request()).await;
    assert_eq!(got.error, None);
    let sent = server.requests.lock().unwrap().clone();
    assert_eq!(sent.len(), 2);
    assert!(sent[0].contains("prompt_cache_key") && !sent[1].contains("prompt_cache_key"));
}
