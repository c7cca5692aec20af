//! Images and documents through the real client of each API: what goes on the wire is the
//! API's own content shape, and what a model or an API cannot take is refused before any
//! request is sent, with one line naming why.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use serde_json::Value;
use support::{OPENAI, Reply, chunks_sse, collect_from, fixture, serve, settings};
use wonopcode_protocol::{LanguageModel, Message, ModelRequest, Part, Role};
use wonopcode_providers::Api;
use wonopcode_providers::bedrock::frames::sse_as_frames;
use wonopcode_providers::http::HttpModel;

/// "PNG" in base64 after its signature: small, and recognisable in a body.
const IMAGE: &str = "iVBORw0KGgoAAAANSUhEUg==";
const PDF: &str = "JVBERi0xLjcK";

fn attached_request() -> ModelRequest {
    let mut request = support::request();
    request.messages = vec![Message::new(
        Role::User,
        vec![
            Part::Image {
                media_type: "image/png".into(),
                data: IMAGE.into(),
            },
            Part::Document {
                media_type: "application/pdf".into(),
                data: PDF.into(),
                name: "spec.pdf".into(),
            },
            Part::Text {
                text: "what do these show?".into(),
            },
        ],
    )]
    .into();
    request
}

/// The body the API was sent, after one request with attachments.
async fn sent_body(api: Api, reply: Reply) -> Value {
    let server = serve(vec![reply]).await;
    let mut settings = settings(api, &server.base_url);
    settings.model.capabilities.vision = true;
    let model = HttpModel::new(settings).unwrap();
    let got = collect_from(&model, attached_request()).await;
    assert_eq!(got.error, None, "{api:?}");
    serde_json::from_str(&server.requests.lock().unwrap()[0]).unwrap()
}

fn anthropic_reply() -> Reply {
    Reply::sse(fixture("anthropic/text-ping-padded.sse"))
}

/// The Messages API's blocks, on Anthropic, Bedrock and Vertex alike.
fn assert_messages_blocks(body: &Value) {
    let content = &body["messages"][0]["content"];
    assert_eq!(content[0]["type"], "image", "{body}");
    assert_eq!(content[0]["source"]["type"], "base64");
    assert_eq!(content[0]["source"]["media_type"], "image/png");
    assert_eq!(content[0]["source"]["data"], IMAGE);
    assert_eq!(content[1]["type"], "document");
    assert_eq!(content[1]["source"]["media_type"], "application/pdf");
    assert_eq!(content[1]["source"]["data"], PDF);
    assert_eq!(content[1]["title"], "spec.pdf");
    assert_eq!(content[2]["type"], "text");
}

#[tokio::test]
async fn anthropic_bedrock_and_vertex_get_image_and_document_blocks() {
    assert_messages_blocks(&sent_body(Api::Anthropic, anthropic_reply()).await);
    assert_messages_blocks(&sent_body(Api::Vertex, anthropic_reply()).await);
    let frames = sse_as_frames(&String::from_utf8_lossy(&fixture(
        "anthropic/text-ping-padded.sse",
    )));
    let bedrock = Reply::status(200, "application/vnd.amazon.eventstream", frames);
    assert_messages_blocks(&sent_body(Api::Bedrock, bedrock).await);
}

#[tokio::test]
async fn chat_completions_gets_content_parts_with_data_urls() {
    let reply = Reply::sse(fixture("openai/text-include-usage.sse"));
    let body = sent_body(OPENAI, reply).await;
    let content = &body["messages"][1]["content"];
    assert_eq!(content[0]["type"], "image_url", "{body}");
    assert_eq!(
        content[0]["image_url"]["url"],
        format!("data:image/png;base64,{IMAGE}")
    );
    assert_eq!(content[1]["type"], "file");
    assert_eq!(content[1]["file"]["filename"], "spec.pdf");
    assert_eq!(
        content[1]["file"]["file_data"],
        format!("data:application/pdf;base64,{PDF}")
    );
    assert_eq!(content[2]["type"], "text");
    assert_eq!(content[2]["text"], "what do these show?");
}

#[tokio::test]
async fn a_chat_message_without_attachments_stays_a_string() {
    let server = serve(vec![Reply::sse(fixture("openai/text-include-usage.sse"))]).await;
    let model = HttpModel::new(settings(OPENAI, &server.base_url)).unwrap();
    collect_from(&model, support::request()).await;
    let body: Value = serde_json::from_str(&server.requests.lock().unwrap()[0]).unwrap();
    assert_eq!(body["messages"][1]["content"], "hello");
}

#[tokio::test]
async fn responses_gets_input_image_and_input_file() {
    let reply = Reply::sse(chunks_sse(
        &String::from_utf8(fixture("responses/text-two-messages.chunks.txt")).unwrap(),
        "",
    ));
    let body = sent_body(Api::Responses, reply).await;
    let content = &body["input"][0]["content"];
    assert_eq!(content[0]["type"], "input_image", "{body}");
    assert_eq!(
        content[0]["image_url"],
        format!("data:image/png;base64,{IMAGE}")
    );
    assert_eq!(content[1]["type"], "input_file");
    assert_eq!(content[1]["filename"], "spec.pdf");
    assert_eq!(
        content[1]["file_data"],
        format!("data:application/pdf;base64,{PDF}")
    );
    assert_eq!(content[2]["type"], "input_text");
}

#[tokio::test]
async fn gemini_gets_inline_data() {
    let reply = Reply::sse(chunks_sse(
        &String::from_utf8(fixture("gemini/text-signature.chunks.txt")).unwrap(),
        "",
    ));
    let body = sent_body(Api::Gemini, reply).await;
    let parts = &body["contents"][0]["parts"];
    assert_eq!(parts[0]["inlineData"]["mimeType"], "image/png", "{body}");
    assert_eq!(parts[0]["inlineData"]["data"], IMAGE);
    assert_eq!(parts[1]["inlineData"]["mimeType"], "application/pdf");
    assert_eq!(parts[2]["text"], "what do these show?");
}

#[tokio::test]
async fn a_model_that_reads_only_text_is_not_sent_an_image() {
    let server = serve(vec![anthropic_reply()]).await;
    let mut settings = settings(Api::Anthropic, &server.base_url);
    settings.model.capabilities.vision = false;
    let model = HttpModel::new(settings).unwrap();
    let refused = model
        .stream(attached_request())
        .await
        .err()
        .map(|e| e.to_string());
    assert_eq!(
        refused.as_deref(),
        Some(
            "test-model (test) does not take images; choose a model that does (`--model`), or leave the image out"
        )
    );
    assert!(
        server.requests.lock().unwrap().is_empty(),
        "nothing was sent"
    );
}

#[tokio::test]
async fn an_image_over_the_apis_limit_is_refused_naming_the_limit() {
    let server = serve(vec![]).await;
    let mut settings = settings(Api::Bedrock, &server.base_url);
    settings.model.capabilities.vision = true;
    let model = HttpModel::new(settings).unwrap();
    let mut request = support::request();
    // 4 MB of image: under Anthropic's own 5 MB, over Bedrock's 3.75 MB.
    let big = "A".repeat(4_000_000 / 3 * 4);
    request.messages = vec![Message::new(
        Role::User,
        vec![Part::Image {
            media_type: "image/jpeg".into(),
            data: big,
        }],
    )]
    .into();
    let refused = model.stream(request).await.err().map(|e| e.to_string());
    assert_eq!(
        refused.as_deref(),
        Some(
            "an attached image/jpeg image is 3.8 MiB, over the 3.6 MiB the Bedrock API takes; make it smaller (fewer pixels, JPEG) and attach it again"
        )
    );
    assert!(server.requests.lock().unwrap().is_empty());
}
