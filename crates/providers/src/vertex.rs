//! Claude on Google Vertex AI: the Anthropic Messages body (without `model`, with Vertex's
//! `anthropic_version`) posted to `{base}/{model}:streamRawPredict`, answered with
//! Anthropic's own event stream. The bearer token comes from Application Default
//! Credentials, read by `gcp_auth` as Google's SDKs read them (`GOOGLE_APPLICATION_CREDENTIALS`'s
//! service-account key, gcloud's user credentials file, the metadata server, then
//! `gcloud auth print-access-token`); a provider's `key_command` replaces them.

use std::sync::Arc;
use std::time::Duration;
use wonopcode_protocol::attachment::AttachmentLimits;

use tokio::sync::OnceCell;

use crate::http::failure::Failure;

/// The `anthropic_version` Vertex wants in the body.
pub const ANTHROPIC_VERSION: &str = "vertex-2023-10-16";

/// How Vertex takes the Messages body: the model in the URL, its own `anthropic_version`
/// in the body.
pub const HOST: crate::anthropic::Host = crate::anthropic::Host {
    model_in_body: false,
    version_in_body: Some(ANTHROPIC_VERSION),
    stream_in_body: true,
};

/// The OAuth scope Vertex AI's calls need.
const SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";

/// Longest wait for a token (a key exchange, the metadata server, gcloud).
const TOKEN_TIMEOUT: Duration = Duration::from_secs(30);

/// The models collection of `project` in `region` (a location such as `us-east5`, a
/// multi-region `us` or `eu`, or `global`), as Google's SDKs build it.
pub fn base_url(project: &str, region: &str) -> String {
    let host = match region {
        "global" => "aiplatform.googleapis.com".to_owned(),
        "us" | "eu" => format!("aiplatform.{region}.rep.googleapis.com"),
        _ => format!("{region}-aiplatform.googleapis.com"),
    };
    format!("https://{host}/v1/projects/{project}/locations/{region}/publishers/anthropic/models")
}

/// The streaming endpoint of `model` under `base`.
pub fn endpoint(base: &str, model: &str) -> String {
    format!("{base}/{model}:streamRawPredict")
}

/// Access tokens from Application Default Credentials, found on first use; `gcp_auth`
/// keeps each token until shortly before it expires.
#[derive(Default)]
pub struct GoogleAuth {
    provider: OnceCell<Arc<dyn gcp_auth::TokenProvider>>,
}

impl std::fmt::Debug for GoogleAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GoogleAuth").finish_non_exhaustive()
    }
}

#[async_trait::async_trait]
impl crate::http::Signer for GoogleAuth {
    async fn sign(
        &self,
        request: reqwest::RequestBuilder,
        _url: &str,
        _body: &[u8],
    ) -> Result<reqwest::RequestBuilder, Failure> {
        Ok(request.bearer_auth(self.token().await?))
    }

    fn described(&self) -> String {
        "the Google Application Default Credentials".to_owned()
    }
}

impl GoogleAuth {
    /// The process's one token source: every model, context and batch task shares it.
    pub fn shared() -> Arc<Self> {
        static SHARED: std::sync::LazyLock<Arc<GoogleAuth>> =
            std::sync::LazyLock::new(Default::default);
        SHARED.clone()
    }

    /// A bearer token for Vertex AI.
    pub async fn token(&self) -> Result<String, Failure> {
        let found = tokio::time::timeout(TOKEN_TIMEOUT, async {
            self.provider
                .get_or_try_init(gcp_auth::provider)
                .await
                .cloned()
        });
        let provider = match found.await {
            Err(_) => return Err(not_found("looking for them took too long")),
            Ok(Err(e)) => return Err(not_found(&e.to_string())),
            Ok(Ok(provider)) => provider,
        };
        match tokio::time::timeout(TOKEN_TIMEOUT, provider.token(&[SCOPE])).await {
            Err(_) => Err(Failure::transient(format!(
                "vertex: no access token within {} s",
                TOKEN_TIMEOUT.as_secs()
            ))),
            Ok(Err(e)) => Err(Failure::fatal(format!(
                "vertex: the Google credentials gave no access token: {e}"
            ))),
            Ok(Ok(token)) => Ok(token.as_str().to_owned()),
        }
    }
}

/// One line: why no credentials, and where they were looked for.
fn not_found(why: &str) -> Failure {
    let key = std::env::var("GOOGLE_APPLICATION_CREDENTIALS").map_or_else(
        |_| "GOOGLE_APPLICATION_CREDENTIALS (unset)".to_owned(),
        |p| format!("GOOGLE_APPLICATION_CREDENTIALS ({p})"),
    );
    Failure::fatal(format!(
        "vertex: no Google credentials ({why}); looked in {key}, \
         ~/.config/gcloud/application_default_credentials.json (`gcloud auth application-default login`), \
         the metadata server and `gcloud auth print-access-token`; or give the provider a key_command that prints a token"
    ))
}

/// Vertex's wire: the Messages body and events at Vertex's endpoint, with a Google token.
pub(crate) struct VertexWire;

impl crate::http::Wire for VertexWire {
    /// 5 MB an image, as Anthropic's own API; a document under Vertex's 30 MB request once base64.
    fn attachment_limits(&self) -> AttachmentLimits {
        AttachmentLimits {
            api: "Vertex AI",
            image_bytes: 5 * 1024 * 1024,
            document_bytes: Some(20 * 1024 * 1024),
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

    fn signer(
        &self,
        _settings: &crate::http::HttpSettings,
    ) -> Option<Arc<dyn crate::http::Signer>> {
        Some(GoogleAuth::shared())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_choose_their_host() {
        assert_eq!(
            endpoint(&base_url("p", "us-east5"), "claude-sonnet-4-5@20250929"),
            "https://us-east5-aiplatform.googleapis.com/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict"
        );
        assert!(base_url("p", "global").starts_with("https://aiplatform.googleapis.com/v1/"));
        assert!(base_url("p", "eu").starts_with("https://aiplatform.eu.rep.googleapis.com/v1/"));
    }
}
