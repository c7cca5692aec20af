//! Claude on Amazon Bedrock: the Anthropic Messages body (without `model` and `stream`, with
//! Bedrock's `anthropic_version`) posted to `InvokeModelWithResponseStream`
//! (`{base}/model/{model id}/invoke-with-response-stream`), signed with SigV4 (`auth`), and
//! answered in AWS event-stream framing whose `chunk` events carry Anthropic's stream events
//! (`frames`), read by the Anthropic decoder.
//!
//! A Bedrock API key (`AWS_BEARER_TOKEN_BEDROCK`) replaces the signature with a bearer token.

pub mod auth;
pub mod frames;

use crate::http::path_segment;
use wonopcode_protocol::attachment::AttachmentLimits;

/// The `anthropic_version` Bedrock wants in the body.
pub const ANTHROPIC_VERSION: &str = "bedrock-2023-05-31";

/// How Bedrock takes the Messages body: the model and the streaming in the URL, its own
/// `anthropic_version` in the body.
pub const HOST: crate::anthropic::Host = crate::anthropic::Host {
    model_in_body: false,
    version_in_body: Some(ANTHROPIC_VERSION),
    stream_in_body: false,
};

/// The streaming endpoint of `model` (a model id, an inference profile id such as
/// `us.anthropic.claude-…`, or an ARN) under `base` (`https://bedrock-runtime.REGION.amazonaws.com`).
/// The id is one path segment, encoded as the AWS SDKs encode it (`…-v1:0` → `…-v1%3A0`, an
/// ARN's `/` → `%2F`).
pub fn endpoint(base: &str, model: &str) -> String {
    format!(
        "{base}/model/{}/invoke-with-response-stream",
        path_segment(model)
    )
}

/// Bedrock's runtime endpoint in `region`.
pub fn base_url(region: &str) -> String {
    format!("https://bedrock-runtime.{region}.amazonaws.com")
}

/// The error's type, as AWS's JSON services name it in `x-amzn-ErrorType`
/// (`ValidationException:http://internal.amazon.com/...` → `ValidationException`).
pub fn error_type(headers: &reqwest::header::HeaderMap) -> Option<String> {
    let value = headers.get("x-amzn-errortype")?.to_str().ok()?;
    let kind = value.split(':').next()?.trim();
    (!kind.is_empty()).then(|| kind.to_owned())
}

/// Bedrock's error body (`{"message": ...}`) with the header's type added where the body has
/// none, so the line says which error it was (`ValidationException: Input is too long`).
pub fn typed_error(body: &str, kind: &str) -> String {
    match serde_json::from_str::<serde_json::Value>(body) {
        Ok(serde_json::Value::Object(mut error)) if !error.contains_key("type") => {
            error.insert("type".to_owned(), kind.into());
            serde_json::Value::Object(error).to_string()
        }
        _ => body.to_owned(),
    }
}

/// Bedrock's wire: the Messages body and events, in AWS's framing, signed with SigV4.
pub(crate) struct BedrockWire;

impl crate::http::Wire for BedrockWire {
    /// Bedrock's limits for Claude: 3.75 MB an image, 4.5 MB a document.
    fn attachment_limits(&self) -> AttachmentLimits {
        AttachmentLimits {
            api: "Bedrock",
            image_bytes: 3_750_000,
            document_bytes: Some(4_500_000),
        }
    }

    fn endpoint(&self, base: &str, model: &str) -> String {
        endpoint(base, model)
    }

    fn body(
        &self,
        model: &wonopcode_protocol::ModelInfo,
        request: &wonopcode_protocol::ModelRequest,
        cache: crate::prompt_cache::PromptCache,
    ) -> serde_json::Result<Vec<u8>> {
        crate::anthropic::MessagesWire(HOST).body(model, request, cache)
    }

    fn decoder(&self) -> Box<dyn crate::http::decoder::Decoder> {
        Box::<crate::anthropic::decode::AnthropicDecoder>::default()
    }

    fn frames(&self) -> Option<Box<dyn crate::http::Frames>> {
        Some(Box::<frames::FrameReader>::default())
    }

    fn accept(&self) -> &'static str {
        "application/vnd.amazon.eventstream"
    }

    fn signer(
        &self,
        settings: &crate::http::HttpSettings,
    ) -> Option<std::sync::Arc<dyn crate::http::Signer>> {
        Some(auth::AwsAuth::shared(
            settings.aws_region.as_deref().unwrap_or("us-east-1"),
            settings.aws_profile.as_deref(),
        ))
    }

    fn error_type(&self, headers: &reqwest::header::HeaderMap) -> Option<String> {
        error_type(headers)
    }

    fn typed_error(&self, body: String, kind: &str) -> String {
        typed_error(&body, kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_ids_and_arns_are_one_path_segment() {
        assert_eq!(
            endpoint("https://b", "us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
            "https://b/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke-with-response-stream"
        );
        assert_eq!(
            endpoint(
                "https://b",
                "arn:aws:bedrock:us-east-1:1:inference-profile/x"
            ),
            "https://b/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Ainference-profile%2Fx/invoke-with-response-stream"
        );
    }

    #[test]
    fn an_error_says_its_type() {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(
            "x-amzn-ErrorType",
            "ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/"
                .parse()
                .unwrap(),
        );
        let kind = error_type(&headers).unwrap();
        let body = typed_error(
            r#"{"message":"Input is too long for requested model."}"#,
            &kind,
        );
        assert_eq!(
            crate::http::failure::provider_message(&body),
            "ValidationException: Input is too long for requested model."
        );
        assert_eq!(typed_error("not json", &kind), "not json");
        assert!(crate::http::failure::is_overflow(&body));
    }
}
