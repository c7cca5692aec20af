//! A provider's entry as the catalog (`data/catalog.yaml`) and the config file write it:
//! its wire format, endpoint, key, limits, cache and models, and how the config's entry is
//! laid over the built-in one.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::prompt_cache::PromptCache;

/// A provider's wire format, as the catalog and config name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApiName {
    /// Anthropic Messages.
    Anthropic,
    /// OpenAI-compatible Chat Completions.
    Openai,
    /// OpenAI's Responses API.
    Responses,
    /// Gemini's own API.
    Gemini,
    /// Claude on Amazon Bedrock.
    Bedrock,
    /// Claude on Google Vertex AI.
    Vertex,
}

/// `--wire`: which of OpenAI's two APIs to speak to a provider that has both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OpenAiWire {
    /// The Responses API.
    Responses,
    /// Chat Completions.
    Chat,
}

/// How the output cap is named in Chat Completions requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CapField {
    /// `max_tokens`.
    MaxTokens,
    /// `max_completion_tokens`.
    MaxCompletionTokens,
}

/// How a provider wants the key sent, as the catalog and config name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AuthName {
    /// `Authorization: Bearer KEY` (an Entra ID token for Azure, a gateway's token).
    Bearer,
    /// Azure OpenAI's `api-key: KEY`.
    ApiKey,
}

/// One provider: a built-in preset, or an entry of the config file's `providers:` (which
/// overrides the preset of the same id field by field, or adds a new provider).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderEntry {
    /// Wire format (required for a provider that is not built in).
    pub api: Option<ApiName>,
    /// Base URL up to the API version.
    pub base_url: Option<String>,
    /// Environment variable that moves the base URL elsewhere (a proxy, a gateway), as the
    /// provider's SDKs and Claude Code or Codex read it (`ANTHROPIC_BASE_URL`); `--base-url`
    /// wins over it, and it over `base_url`.
    pub base_url_env: Option<String>,
    /// Appended to `base_url_env`'s value when it names a resource rather than its API
    /// (Azure's `/openai/v1` under `AZURE_OPENAI_ENDPOINT`).
    pub base_url_env_path: Option<String>,
    /// Environment variable holding the key.
    pub key_env: Option<String>,
    /// Shell command printing the key (used when the variable is unset).
    pub key_command: Option<String>,
    /// Headers sent with every request (Codex's `http_headers`), for a gateway or proxy.
    pub http_headers: Option<BTreeMap<String, String>>,
    /// Environment variable holding more headers, one `Name: Value` per line: Claude Code's
    /// `ANTHROPIC_CUSTOM_HEADERS`.
    pub headers_env: Option<String>,
    /// Environment variable holding a bearer token, sent as `Authorization: Bearer` when
    /// the key's variable is unset: Claude Code's `ANTHROPIC_AUTH_TOKEN`, a gateway's token.
    pub token_env: Option<String>,
    /// The server works without a key.
    pub key_optional: Option<bool>,
    /// How the key is sent (default: the API's own header).
    pub auth: Option<AuthName>,
    /// `api-version` query parameter added to every request (Azure OpenAI's dated APIs).
    pub api_version: Option<String>,
    /// The cloud region: Bedrock's AWS region, Vertex AI's location.
    pub region: Option<String>,
    /// Variables read for the region when `region` is not set, the first set one wins
    /// (`AWS_REGION`, `AWS_DEFAULT_REGION` for Bedrock).
    pub region_env: Option<Vec<String>>,
    /// Vertex AI's Google Cloud project.
    pub project: Option<String>,
    /// Variables read for the project when `project` is not set, likewise.
    pub project_env: Option<Vec<String>>,
    /// Bedrock: the AWS profile whose credentials sign requests.
    pub profile: Option<String>,
    /// A switch naming this provider the run's when no `--provider` is given: `1`, `true`,
    /// `yes` or `on` in any case (Claude Code's `CLAUDE_CODE_USE_BEDROCK`).
    pub switch_env: Option<String>,
    /// A switch sending requests with neither signature nor token, to a gateway that adds
    /// the cloud's credentials itself (Claude Code's `CLAUDE_CODE_SKIP_BEDROCK_AUTH`).
    pub unsigned_env: Option<String>,
    /// Variables whose presence says a cloud is set up, so its provider is offered to a
    /// guest though no key is set (`AWS_PROFILE`, `GOOGLE_APPLICATION_CREDENTIALS`).
    pub set_up_env: Option<Vec<String>>,
    /// Where among the providers tried for a key when no `--provider` is given (lowest
    /// first); providers without one are tried after, in id order.
    pub pick_order: Option<u32>,
    /// A local server: requests cost nothing, and no key is needed.
    pub local: Option<bool>,
    /// How a person starts the local server (`ollama serve`), said when it cannot be reached.
    pub start_command: Option<String>,
    /// Model used when `--model` is not given.
    pub default_model: Option<String>,
    /// How Chat Completions requests name the output cap (default `max_tokens`).
    pub max_tokens_field: Option<CapField>,
    /// Connection timeout in milliseconds (default 10,000).
    pub connect_timeout_ms: Option<u64>,
    /// Longest silence from the server, in milliseconds (default 300,000).
    pub idle_timeout_ms: Option<u64>,
    /// Attempts per request, the first included (default 5).
    pub max_attempts: Option<u32>,
    /// Requests per minute this account may send, shared by every request of the process
    /// (default: what the provider's rate-limit headers say, else unlimited).
    pub requests_per_minute: Option<u32>,
    /// Prompt tokens per minute, likewise (estimated from each request's size).
    pub tokens_per_minute: Option<u32>,
    /// Prompt caching (the Messages API's breakpoints): `cache: { ttl: 5m | 1h | off }`.
    pub cache: Option<CacheEntry>,
    /// Models with their window, cap and prices.
    #[serde(default)]
    pub models: BTreeMap<String, ModelEntry>,
    /// Short names a person types for a model (`--model opus`), and the ids they stand
    /// for at this provider: Claude Code's `opus`, `sonnet` and `haiku` on every provider
    /// of Claude models, each provider's own elsewhere.
    #[serde(default)]
    pub aliases: BTreeMap<String, String>,
}

/// A provider's prompt caching, as the config states it.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheEntry {
    /// How long the stable prefix is kept (default `5m`).
    pub ttl: Option<CacheTtlName>,
}

/// `cache.ttl`'s values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum CacheTtlName {
    /// Five minutes, the API's default.
    #[serde(rename = "5m")]
    FiveMinutes,
    /// An hour for the stable prefix.
    #[serde(rename = "1h")]
    OneHour,
    /// No caching asked for.
    #[serde(rename = "off")]
    Off,
}

impl From<CacheTtlName> for PromptCache {
    fn from(name: CacheTtlName) -> Self {
        match name {
            CacheTtlName::FiveMinutes => Self::FiveMinutes,
            CacheTtlName::OneHour => Self::OneHour,
            CacheTtlName::Off => Self::Off,
        }
    }
}

/// What the catalog knows of a model. Prices are USD per million tokens.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelEntry {
    /// Context window in tokens (default 128,000).
    pub context_window: Option<u64>,
    /// Output cap per request (default 8,192).
    pub max_output: Option<u64>,
    /// Input price.
    pub input: Option<f64>,
    /// Output price.
    pub output: Option<f64>,
    /// Cache-read price (default: the input price).
    pub cache_read: Option<f64>,
    /// Cache-write price (default: the input price).
    pub cache_write: Option<f64>,
    /// An hour-long cache write's price (default: twice the input price, as Anthropic
    /// bills a `1h` breakpoint).
    pub cache_write_1h: Option<f64>,
    /// Emits extended thinking.
    #[serde(default)]
    pub thinking: bool,
    /// Reads images and PDFs (default: yes; `false` for a model that reads only text).
    pub images: Option<bool>,
}

/// Lays `over` on `base`, field by field; models merge by id.
pub(super) fn merge(base: ProviderEntry, over: ProviderEntry) -> ProviderEntry {
    let mut models = base.models;
    models.extend(over.models);
    let mut aliases = base.aliases;
    aliases.extend(over.aliases);
    ProviderEntry {
        api: over.api.or(base.api),
        base_url: over.base_url.or(base.base_url),
        base_url_env: over.base_url_env.or(base.base_url_env),
        base_url_env_path: over.base_url_env_path.or(base.base_url_env_path),
        key_env: over.key_env.or(base.key_env),
        key_command: over.key_command.or(base.key_command),
        token_env: over.token_env.or(base.token_env),
        http_headers: over.http_headers.or(base.http_headers),
        headers_env: over.headers_env.or(base.headers_env),
        key_optional: over.key_optional.or(base.key_optional),
        auth: over.auth.or(base.auth),
        api_version: over.api_version.or(base.api_version),
        region: over.region.or(base.region),
        region_env: over.region_env.or(base.region_env),
        project: over.project.or(base.project),
        project_env: over.project_env.or(base.project_env),
        switch_env: over.switch_env.or(base.switch_env),
        unsigned_env: over.unsigned_env.or(base.unsigned_env),
        set_up_env: over.set_up_env.or(base.set_up_env),
        pick_order: over.pick_order.or(base.pick_order),
        profile: over.profile.or(base.profile),
        local: over.local.or(base.local),
        start_command: over.start_command.or(base.start_command),
        default_model: over.default_model.or(base.default_model),
        max_tokens_field: over.max_tokens_field.or(base.max_tokens_field),
        connect_timeout_ms: over.connect_timeout_ms.or(base.connect_timeout_ms),
        idle_timeout_ms: over.idle_timeout_ms.or(base.idle_timeout_ms),
        max_attempts: over.max_attempts.or(base.max_attempts),
        requests_per_minute: over.requests_per_minute.or(base.requests_per_minute),
        tokens_per_minute: over.tokens_per_minute.or(base.tokens_per_minute),
        cache: over.cache.or(base.cache),
        models,
        aliases,
    }
}
