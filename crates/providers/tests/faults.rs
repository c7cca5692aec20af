//! Faults against the loopback server: every one ends in the answer or in one clear line,
//! with nothing shown twice and the retries visible.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::time::{Duration, Instant};

use support::{OPENAI, Reply, collect, fixture, run, serve, settings};
use wonopcode_providers::Api;

fn text_stream() -> Vec<u8> {
    fixture("openai/text-include-usage.sse")
}

#[tokio::test]
async fn rate_limit_with_retry_after_then_success() {
    let started = Instant::now();
    let (got, server) = run(
        OPENAI,
        vec![
            Reply::status(
                429,
                "application/json",
                r#"{"error":{"message":"slow down"}}"#,
            )
            .header("retry-after-ms", "300"),
            Reply::sse(text_stream()),
        ],
    )
    .await;
    assert_eq!(got.text, "The capital of the UK is London.");
    assert_eq!(got.retries.len(), 1);
    assert!(got.retries[0].1.contains("HTTP 429") && got.retries[0].1.contains("slow down"));
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "the server's wait is honoured"
    );
    assert_eq!(server.requests.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn server_errors_twice_then_success() {
    let (got, _) = run(
        Api::Anthropic,
        vec![
            Reply::status(500, "application/json", r#"{"type":"error","error":{"type":"api_error","message":"Internal server error"}}"#),
            Reply::status(503, "text/plain", "upstream connect error"),
            Reply::sse(fixture("anthropic/text-ping-padded.sse")),
        ],
    )
    .await;
    assert_eq!(got.text, "2");
    assert_eq!(
        got.retries.iter().map(|r| r.0).collect::<Vec<_>>(),
        vec![2, 3]
    );
    assert!(
        got.retries[1].1.contains("upstream connect error"),
        "{:?}",
        got.retries
    );
    assert_eq!(got.error, None);
}

#[tokio::test]
async fn reset_before_any_content_is_retried() {
    let body = text_stream();
    let (got, server) = run(
        OPENAI,
        vec![
            Reply::ResetAfter {
                body: body.clone(),
                bytes: 10,
            },
            Reply::sse(body),
        ],
    )
    .await;
    assert_eq!(
        got.text, "The capital of the UK is London.",
        "nothing duplicated"
    );
    assert_eq!(got.retries.len(), 1, "{:?}", got.retries);
    assert_eq!(server.requests.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn reset_after_content_keeps_the_partial_text_and_reports_once() {
    let body = text_stream();
    let text = String::from_utf8(body.clone()).unwrap();
    // Cut after the chunk carrying "The capital".
    let at = text.find("capital").unwrap();
    let at = at + text[at..].find("\n\n").unwrap() + 2;
    let (got, server) = run(
        OPENAI,
        vec![
            Reply::ResetAfter { body, bytes: at },
            Reply::sse(text_stream()),
        ],
    )
    .await;
    assert!(got.text.starts_with("The"), "{}", got.text);
    assert!(!got.text.contains("London"), "{}", got.text);
    let error = got.error.unwrap();
    assert!(
        error.starts_with("the response broke off after it had started"),
        "{error}"
    );
    assert!(got.retries.is_empty());
    assert_eq!(
        server.requests.lock().unwrap().len(),
        1,
        "shown text is never asked for twice"
    );
}

#[tokio::test]
async fn stream_cut_before_the_end_event() {
    let full = String::from_utf8(fixture("anthropic/thinking-signature-text.sse")).unwrap();
    let cut = &full[..full.find("event: message_delta").unwrap()];
    let (got, _) = run(Api::Anthropic, vec![Reply::sse(cut.to_owned())]).await;
    assert!(got.text.starts_with("Here are the basic steps"));
    let error = got.error.unwrap();
    assert!(error.contains("ended before the model finished"), "{error}");
    assert_eq!(got.done, None);
    assert_eq!(
        got.usage.input_tokens, 43,
        "usage seen before the cut is kept"
    );
}

#[tokio::test]
async fn malformed_json_chunk_names_the_event() {
    let body = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3}}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"\n\n";
    let (got, server) = run(Api::Anthropic, vec![Reply::sse(body)]).await;
    let error = got.error.unwrap();
    assert!(
        error.contains("malformed JSON in content_block_delta"),
        "{error}"
    );
    assert_eq!(server.requests.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn a_silent_server_hits_the_idle_timeout() {
    let server = serve(vec![Reply::Silent]).await;
    let mut s = settings(OPENAI, &server.base_url);
    s.idle_timeout = Duration::from_millis(300);
    s.retry.max_attempts = 1;
    let got = collect(s).await;
    let error = got.error.unwrap();
    assert_eq!(error, "no data from the model for 300 ms");
}

#[tokio::test]
async fn html_with_status_200_is_named() {
    let page = "<!DOCTYPE html><html><head><title>Login</title></head><body>Sign in</body></html>";
    let (got, server) = run(
        OPENAI,
        vec![Reply::status(200, "text/html; charset=utf-8", page)],
    )
    .await;
    let error = got.error.unwrap();
    assert!(
        error
            .contains("answered HTTP 200 with an HTML page, not an event stream; check --base-url"),
        "{error}"
    );
    assert_eq!(server.requests.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn nobody_listening_is_retried_then_named() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let mut s = settings(OPENAI, &format!("http://127.0.0.1:{port}/v1"));
    s.retry.max_attempts = 2;
    let got = collect(s).await;
    assert_eq!(got.retries.len(), 1);
    let error = got.error.unwrap();
    assert!(
        error.starts_with(&format!(
            "cannot connect to http://127.0.0.1:{port}/v1/chat/completions"
        )),
        "{error}"
    );
    assert!(error.ends_with("(after 2 attempts)"), "{error}");
}

#[tokio::test]
async fn context_overflow_is_reported_as_such() {
    let body = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 201234 tokens > 200000 maximum"}}"#;
    let (got, _) = run(
        Api::Anthropic,
        vec![Reply::status(400, "application/json", body)],
    )
    .await;
    let overflow = got.overflow.unwrap();
    assert!(overflow.contains("prompt is too long"), "{overflow}");
    assert_eq!(got.error, None);
}

#[tokio::test]
async fn extra_headers_reach_the_server_and_a_bad_one_is_refused_before_any_request() {
    let server = serve(vec![Reply::sse(fixture("anthropic/text-ping-padded.sse"))]).await;
    let mut with_headers = settings(Api::Anthropic, &server.base_url);
    with_headers.extra_headers = vec![
        ("cf-aig-authorization".into(), "Bearer gateway".into()),
        ("X-Team".into(), "core".into()),
    ];
    let got = collect(with_headers.clone()).await;
    assert_eq!(got.text, "2");
    let head = server.heads.lock().unwrap()[0].to_ascii_lowercase();
    assert!(
        head.contains("\r\ncf-aig-authorization: bearer gateway\r\n"),
        "{head}"
    );
    assert!(head.contains("\r\nx-team: core\r\n"), "{head}");
    assert!(head.contains("\r\nx-api-key: test-key\r\n"), "{head}");

    for (name, value) in [("bad name", "v"), ("X-Ok", "two\nlines")] {
        let mut bad = with_headers.clone();
        bad.extra_headers = vec![(name.into(), value.into())];
        let err = wonopcode_providers::HttpModel::new(bad)
            .err()
            .expect("refused");
        let err = err.to_string();
        assert!(
            err.contains(&format!("the header `{name}` for test")),
            "{err}"
        );
    }
    assert_eq!(server.requests.lock().unwrap().len(), 1);
}
