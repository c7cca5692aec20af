//! Which provider and model a run talks to: the built-in presets (`data/catalog.yaml`:
//! endpoints, key variables, windows, output caps, prices), the user's additions and
//! overrides from the config file, and the choice made from `--provider`, `--model`,
//! `--base-url` and the keys present in the environment.

use std::collections::BTreeMap;
use std::time::Duration;

use wonopcode_os::own_processes;
use wonopcode_protocol::usage::ModelCapabilities;
use wonopcode_protocol::{ModelInfo, Pricing, ProviderListing};

use crate::api::Api;
use crate::api::MaxTokensField;
use crate::http::rate_limit::RateLimits;
use crate::http::retry::RetryPolicy;
use crate::http::{HttpSettings, KeyAuth, LocalServer};
use crate::prompt_cache::PromptCache;
use crate::{bedrock, gemini};

mod clouds;
mod entries;
mod keys;

use clouds::{
    aws_region, cloud_set_up, extra_headers, first_set, moved_base_url, switch_set, vertex_base_url,
};
use entries::merge;
pub use entries::{
    ApiName, AuthName, CacheEntry, CacheTtlName, CapField, ModelEntry, OpenAiWire, ProviderEntry,
};
use keys::{Key, has_key, set_value};

/// The built-in presets, embedded at build time.
const BUILTIN: &str = include_str!("../../data/catalog.yaml");

/// How long a `key_command` may run.
const KEY_COMMAND_TIMEOUT: Duration = Duration::from_secs(10);

/// Errors choosing or configuring a provider; each says what to do.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CatalogError {
    /// `--provider` names no known provider.
    #[error("unknown provider `{id}`{closest}; known: {known}")]
    UnknownProvider {
        /// The id given.
        id: String,
        /// ` (did you mean `ollama`?)` when one is close, else empty.
        closest: String,
        /// The ids that exist.
        known: String,
    },
    /// No provider was chosen and none has a key.
    #[error(
        "no model provider: set one of ANTHROPIC_API_KEY, OPENAI_API_KEY, OPENROUTER_API_KEY, DEEPSEEK_API_KEY, GROQ_API_KEY, pass --provider ollama (or vllm, llamacpp) for a local server, or --replay FILE to answer from a recorded transcript"
    )]
    NoProvider,
    /// The provider needs a key and none was found.
    #[error(
        "{provider} needs an API key: set {var}, or `key_command` under providers.{provider} in the config file"
    )]
    MissingKey {
        /// Provider id.
        provider: String,
        /// The variable to set.
        var: String,
    },
    /// The key command failed.
    #[error("the key_command of {provider} failed: {reason}")]
    KeyCommand {
        /// Provider id.
        provider: String,
        /// What went wrong.
        reason: String,
    },
    /// The provider has no base URL.
    #[error("{0} has no base URL: pass --base-url URL (e.g. http://127.0.0.1:8000/v1)")]
    MissingBaseUrl(String),
    /// No model was chosen.
    #[error("{0} has no default model: pass --model ID")]
    NoModel(String),
    /// A line of a provider's headers variable is not a header.
    #[error(
        "{variable} (headers for {provider}): line {line} is not `Name: Value` (one header per line)"
    )]
    HeaderLine {
        /// Provider id.
        provider: String,
        /// The variable.
        variable: String,
        /// Its line, from 1 (its text is not shown: it may hold a key).
        line: usize,
    },
    /// A config entry cannot be used.
    #[error("providers.{provider} in the config file: {reason}")]
    Invalid {
        /// Provider id.
        provider: String,
        /// What is wrong.
        reason: String,
    },
}

/// Every provider wonopcode can talk to in this run.
#[derive(Debug, Clone)]
pub struct ModelCatalog {
    providers: BTreeMap<String, ProviderEntry>,
}

/// What the command line asked for.
#[derive(Debug, Clone, Copy, Default)]
pub struct Choice<'a> {
    /// `--provider`.
    pub provider: Option<&'a str>,
    /// `--model`.
    pub model: Option<&'a str>,
    /// `--base-url`.
    pub base_url: Option<&'a str>,
    /// `--wire`: overrides the provider's `api` between Responses and Chat Completions.
    pub wire: Option<OpenAiWire>,
}

impl ModelCatalog {
    /// The built-in presets.
    pub fn builtin() -> Result<Self, CatalogError> {
        let providers = serde_yaml::from_str(BUILTIN).map_err(|e| CatalogError::Invalid {
            provider: "(built-in catalog)".to_owned(),
            reason: e.to_string(),
        })?;
        Ok(Self { providers })
    }

    /// The presets with the config file's entries laid over them.
    pub fn with_overrides(
        mut self,
        overrides: &BTreeMap<String, ProviderEntry>,
    ) -> Result<Self, CatalogError> {
        for (id, entry) in overrides {
            let merged = match self.providers.remove(id) {
                Some(base) => merge(base, entry.clone()),
                None => {
                    if entry.api.is_none() {
                        return Err(CatalogError::Invalid {
                            provider: id.clone(),
                            reason: "a new provider needs `api: anthropic`, `api: openai` (Chat Completions), `api: responses` or `api: gemini`"
                                .to_owned(),
                        });
                    }
                    entry.clone()
                }
            };
            self.providers.insert(id.clone(), merged);
        }
        Ok(self)
    }

    /// The error for a provider id the catalog lacks, naming the closest id when one is
    /// a typo away (`olama`: `ollama`).
    pub fn unknown_provider(&self, id: &str) -> CatalogError {
        let closest = self
            .ids()
            .map(|known| (strsim::levenshtein(known, id), known))
            .min()
            .filter(|(distance, _)| *distance <= 2)
            .map(|(_, known)| format!(" (did you mean `{known}`?)"))
            .unwrap_or_default();
        CatalogError::UnknownProvider {
            id: id.to_owned(),
            closest,
            known: self.ids().collect::<Vec<_>>().join(", "),
        }
    }

    /// Provider ids, sorted.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.providers.keys().map(String::as_str)
    }

    /// The environment variables keys are read from (`key_env`, `token_env` and the
    /// headers of `headers_env`, which often carry a gateway's key, of every provider): what
    /// commands wonopcode runs must never see.
    pub fn key_variables(&self) -> impl Iterator<Item = &str> {
        self.providers
            .values()
            .flat_map(|p| {
                [
                    p.key_env.as_deref(),
                    p.token_env.as_deref(),
                    p.headers_env.as_deref(),
                ]
            })
            .flatten()
    }

    /// The provider entry with this id.
    pub fn get(&self, id: &str) -> Option<&ProviderEntry> {
        self.providers.get(id)
    }

    /// Settings for the provider and model chosen on the command line, or the first
    /// provider with a key. `env` reads environment variables (a parameter so tests and
    /// embedders choose what it sees).
    pub async fn resolve(
        &self,
        choice: Choice<'_>,
        env: &(dyn Fn(&str) -> Option<String> + Sync),
    ) -> Result<HttpSettings, CatalogError> {
        let id = match choice.provider {
            Some(id) => id.to_owned(),
            None => self.auto_pick(env).ok_or(CatalogError::NoProvider)?,
        };
        let Some(entry) = self.providers.get(&id) else {
            return Err(self.unknown_provider(&id));
        };
        let chat = Api::OpenAi(match entry.max_tokens_field {
            Some(CapField::MaxCompletionTokens) => MaxTokensField::MaxCompletionTokens,
            _ => MaxTokensField::MaxTokens,
        });
        let api = match (entry.api, choice.wire) {
            (
                Some(
                    own @ (ApiName::Anthropic
                    | ApiName::Gemini
                    | ApiName::Bedrock
                    | ApiName::Vertex),
                ),
                Some(_),
            ) => {
                let speaks = if own == ApiName::Gemini {
                    "Gemini's own API"
                } else {
                    "Anthropic Messages"
                };
                return Err(CatalogError::Invalid {
                    provider: id,
                    reason: format!(
                        "--wire chooses between OpenAI's Responses and Chat Completions APIs; this provider speaks {speaks}"
                    ),
                });
            }
            (Some(ApiName::Anthropic), None) => Api::Anthropic,
            (Some(ApiName::Gemini), None) => Api::Gemini,
            (Some(ApiName::Bedrock), None) => Api::Bedrock,
            (Some(ApiName::Vertex), None) => Api::Vertex,
            (_, Some(OpenAiWire::Responses)) | (Some(ApiName::Responses), None) => Api::Responses,
            (_, Some(OpenAiWire::Chat)) | (Some(ApiName::Openai) | None, None) => chat,
        };
        let aws_region = match api {
            Api::Bedrock => Some(aws_region(&id, entry, env).await?),
            _ => None,
        };
        let given_base_url = choice
            .base_url
            .map(str::to_owned)
            .or_else(|| moved_base_url(entry, env))
            .or_else(|| entry.base_url.clone());
        let base_url = match (given_base_url, api) {
            (Some(url), _) => url,
            (None, Api::Bedrock) => bedrock::base_url(aws_region.as_deref().unwrap_or_default()),
            (None, Api::Vertex) => vertex_base_url(&id, entry, env)?,
            (None, _) => return Err(CatalogError::MissingBaseUrl(id.clone())),
        };
        let messages = matches!(api, Api::Anthropic | Api::Bedrock | Api::Vertex);
        // Claude Code's model variable names the Claude model on every Messages provider
        // (a Bedrock inference profile, a Vertex model id), after `--model` and the config.
        let model_id = choice
            .model
            .map(str::to_owned)
            .or_else(|| {
                messages
                    .then(|| first_set(&["ANTHROPIC_MODEL"], env))
                    .flatten()
            })
            .or_else(|| entry.default_model.clone())
            .ok_or_else(|| CatalogError::NoModel(id.clone()))?;
        let model_id = self.unaliased(&id, entry, model_id)?;
        let model_id = match api {
            Api::Gemini => gemini::base_model_id(&model_id).to_owned(),
            _ => model_id,
        };
        let local = entry.local.unwrap_or(false);
        let key = self.key(&id, entry, env).await?;
        if key.is_none() && !local && !entry.key_optional.unwrap_or(false) {
            let var = match (&entry.key_env, &entry.token_env) {
                (Some(key), Some(token)) => format!("{key} (or {token} for a gateway's token)"),
                (Some(key), None) => key.clone(),
                (None, _) => "a key".to_owned(),
            };
            return Err(CatalogError::MissingKey {
                provider: id.clone(),
                var,
            });
        }
        let native = match entry.auth {
            None => KeyAuth::Native,
            Some(AuthName::Bearer) => KeyAuth::Bearer,
            Some(AuthName::ApiKey) => KeyAuth::ApiKeyHeader,
        };
        let (api_key, auth, key_env) = match key {
            Some(Key::Token(token)) => (Some(token), KeyAuth::Bearer, entry.token_env.clone()),
            Some(Key::Key(key)) => (Some(key), native, entry.key_env.clone()),
            None => (None, native, entry.key_env.clone()),
        };
        let extra_headers = extra_headers(&id, entry, env)?;
        let model = model_info(&id, &model_id, entry.models.get(&model_id), local, messages);
        Ok(HttpSettings {
            api,
            base_url,
            api_key,
            auth,
            api_version: entry.api_version.clone(),
            key_env,
            aws_region,
            aws_profile: entry.profile.clone(),
            unsigned: switch_set(entry.unsigned_env.as_deref(), env),
            extra_headers,
            model,
            connect_timeout: entry
                .connect_timeout_ms
                .map_or(HttpSettings::DEFAULT_CONNECT_TIMEOUT, Duration::from_millis),
            idle_timeout: entry
                .idle_timeout_ms
                .map_or(HttpSettings::DEFAULT_IDLE_TIMEOUT, Duration::from_millis),
            retry: RetryPolicy {
                max_attempts: entry.max_attempts.unwrap_or(5).max(1),
                ..RetryPolicy::default()
            },
            rate_limit: RateLimits {
                requests_per_minute: entry.requests_per_minute,
                tokens_per_minute: entry.tokens_per_minute,
            },
            local_server: local.then(|| LocalServer {
                start_command: entry.start_command.clone(),
            }),
            prompt_cache: entry
                .cache
                .and_then(|c| c.ttl)
                .map_or_else(PromptCache::default, PromptCache::from),
        })
    }

    /// The model id `model` names at provider `id`: itself, or what it is short for there.
    /// A short name only other providers know (`sonnet` at `openai`) is refused with the
    /// providers that know it, rather than sent as a model id the API would not know.
    fn unaliased(
        &self,
        id: &str,
        entry: &ProviderEntry,
        model: String,
    ) -> Result<String, CatalogError> {
        if let Some(full) = entry.aliases.get(&model) {
            return Ok(full.clone());
        }
        if entry.models.contains_key(&model) {
            return Ok(model);
        }
        let elsewhere: Vec<&str> = self
            .providers
            .iter()
            .filter(|(_, other)| other.aliases.contains_key(&model))
            .map(|(other, _)| other.as_str())
            .collect();
        if elsewhere.is_empty() {
            return Ok(model);
        }
        Err(CatalogError::Invalid {
            provider: id.to_owned(),
            reason: format!(
                "`{model}` is a short name at {}, not here: choose one of them with --provider, or give this provider's model id",
                elsewhere.join(", ")
            ),
        })
    }

    /// The short names of provider `id`, and what each stands for.
    pub fn aliases(&self, id: &str) -> impl Iterator<Item = (&str, &str)> {
        self.providers
            .get(id)
            .into_iter()
            .flat_map(|entry| entry.aliases.iter())
            .map(|(short, full)| (short.as_str(), full.as_str()))
    }

    /// The providers a run can open a model from without asking for anything: local
    /// servers, servers that need no key, those whose key is set or has a command, and the
    /// clouds that show signs of being set up ([`cloud_set_up`]).
    pub fn listings(&self, env: &(dyn Fn(&str) -> Option<String> + Sync)) -> Vec<ProviderListing> {
        self.providers
            .iter()
            .filter(|(_, e)| match e.api {
                Some(ApiName::Bedrock | ApiName::Vertex) => cloud_set_up(e, env),
                _ => e.local.unwrap_or(false) || e.key_optional.unwrap_or(false) || has_key(e, env),
            })
            .map(|(id, e)| {
                let mut models: Vec<String> = e.models.keys().cloned().collect();
                if let Some(m) = &e.default_model
                    && !models.contains(m)
                {
                    models.push(m.clone());
                }
                models.sort();
                ProviderListing {
                    id: id.clone(),
                    models,
                    supports_tools: true,
                    supports_thinking: e.models.values().any(|m| m.thinking),
                }
            })
            .collect()
    }

    /// The first provider (by id) whose `switch_env` is on: Bedrock or Vertex when Claude
    /// Code's switch for it (`CLAUDE_CODE_USE_BEDROCK=1`, `CLAUDE_CODE_USE_VERTEX=1`) is set.
    /// Where Claude Code runs on a cloud, so does wonopcode when no `--provider` is given (a
    /// `--base-url` then names the cloud's gateway).
    pub fn switched_to(&self, env: &(dyn Fn(&str) -> Option<String> + Sync)) -> Option<&str> {
        self.providers
            .iter()
            .find(|(_, entry)| switch_set(entry.switch_env.as_deref(), env))
            .map(|(id, _)| id.as_str())
    }

    /// What the catalog says of `model` on `provider` (its limits, prices and whether it
    /// thinks), without resolving a key or a URL: for checks made before any run, such as
    /// `agents check` on an agent file's generation settings. `None` for an unknown provider.
    pub fn model(&self, provider: &str, model: &str) -> Option<ModelInfo> {
        let entry = self.providers.get(provider)?;
        let messages = matches!(
            entry.api,
            Some(ApiName::Anthropic | ApiName::Bedrock | ApiName::Vertex)
        );
        Some(model_info(
            provider,
            model,
            entry.models.get(model),
            entry.local.unwrap_or(false),
            messages,
        ))
    }

    /// The first provider with a key — those with a `pick_order`, lowest first, then the
    /// rest by id — after Claude Code's switch to a cloud ([`Self::switched_to`]). Local
    /// servers are never picked silently.
    fn auto_pick(&self, env: &(dyn Fn(&str) -> Option<String> + Sync)) -> Option<String> {
        if let Some(id) = self.switched_to(env) {
            return Some(id.to_owned());
        }
        let mut order: Vec<(&String, &ProviderEntry)> = self.providers.iter().collect();
        // Stable: providers of the same order (or none) stay in id order.
        order.sort_by_key(|(_, entry)| entry.pick_order.unwrap_or(u32::MAX));
        order
            .into_iter()
            .find(|(_, entry)| !entry.local.unwrap_or(false) && has_key(entry, env))
            .map(|(id, _)| id.clone())
    }

    /// The provider's key: its variable, else its command, else its token variable.
    async fn key(
        &self,
        id: &str,
        entry: &ProviderEntry,
        env: &(dyn Fn(&str) -> Option<String> + Sync),
    ) -> Result<Option<Key>, CatalogError> {
        if let Some(key) = set_value(entry.key_env.as_deref(), env) {
            return Ok(Some(Key::Key(key)));
        }
        if let Some(command) = &entry.key_command {
            return run_key_command(id, command)
                .await
                .map(|k| Some(Key::Key(k)));
        }
        Ok(set_value(entry.token_env.as_deref(), env).map(Key::Token))
    }
}

/// USD per million tokens to micro-cents per million tokens.
fn micro_cents(usd: f64) -> u64 {
    // Prices are small positive numbers; the cast saturates on anything absurd.
    (usd.max(0.0) * 1e8).round() as u64
}

/// The model's metadata: the catalog's numbers, or defaults and an unknown price.
/// `messages`: the provider speaks Anthropic Messages, whose thinking must go back signed.
fn model_info(
    provider: &str,
    id: &str,
    entry: Option<&ModelEntry>,
    local: bool,
    messages: bool,
) -> ModelInfo {
    let entry = entry.cloned().unwrap_or_default();
    let pricing = match (entry.input, entry.output) {
        (Some(input), Some(output)) => Some(Pricing {
            input_per_mtok: micro_cents(input),
            output_per_mtok: micro_cents(output),
            cache_read_per_mtok: micro_cents(entry.cache_read.unwrap_or(input)),
            cache_write_per_mtok: micro_cents(entry.cache_write.unwrap_or(input)),
            cache_write_1h_per_mtok: micro_cents(entry.cache_write_1h.unwrap_or(2.0 * input)),
        }),
        _ if local => Some(Pricing::default()),
        _ => None,
    };
    ModelInfo {
        id: id.to_owned(),
        provider: provider.to_owned(),
        context_window: entry.context_window.unwrap_or(128_000),
        max_output: entry.max_output.unwrap_or(8_192),
        pricing,
        capabilities: ModelCapabilities {
            thinking: entry.thinking,
            thinking_must_be_returned: entry.thinking && messages,
            vision: entry.images.unwrap_or(true),
            ..ModelCapabilities::default()
        },
    }
}

/// Runs a key command through the shell under a timeout; its trimmed stdout is the key.
async fn run_key_command(provider: &str, command: &str) -> Result<String, CatalogError> {
    let fail = |reason: String| CatalogError::KeyCommand {
        provider: provider.to_owned(),
        reason,
    };
    let starting = own_processes::starting();
    let child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| fail(e.to_string()))?;
    // Not a leftover of a `bash` call that ends while the key command runs.
    let _own = child.id().map(own_processes::Own::new);
    drop(starting);
    let output = tokio::time::timeout(KEY_COMMAND_TIMEOUT, child.wait_with_output())
        .await
        .map_err(|_| {
            fail(format!(
                "no answer within {} s",
                KEY_COMMAND_TIMEOUT.as_secs()
            ))
        })?
        .map_err(|e| fail(e.to_string()))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let first = stderr.lines().next().unwrap_or("").trim();
        return Err(fail(format!("{} {first}", output.status)));
    }
    let key = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    if key.is_empty() {
        return Err(fail("it printed nothing".to_owned()));
    }
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_with(
        pairs: &'static [(&'static str, &'static str)],
    ) -> impl Fn(&str) -> Option<String> + Sync {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    /// The built-in catalog with the config entries of `yaml` laid over it.
    fn overridden(yaml: &str) -> ModelCatalog {
        let overrides: BTreeMap<String, ProviderEntry> = serde_yaml::from_str(yaml).unwrap();
        ModelCatalog::builtin()
            .unwrap()
            .with_overrides(&overrides)
            .unwrap()
    }

    /// `provider` (and `model`, or its default) resolved in `catalog` with only `env` set.
    async fn resolved(
        catalog: &ModelCatalog,
        provider: &str,
        model: Option<&str>,
        env: &'static [(&'static str, &'static str)],
    ) -> Result<HttpSettings, CatalogError> {
        let choice = Choice {
            provider: Some(provider),
            model,
            ..Choice::default()
        };
        catalog.resolve(choice, &env_with(env)).await
    }

    #[tokio::test]
    async fn a_providers_variables_are_data_a_config_entry_can_state() {
        let catalog = overridden(
            r#"
lab:
  api: anthropic
  base_url: http://127.0.0.1:9/v1
  base_url_env: LAB_GATEWAY
  base_url_env_path: /v1
  key_env: LAB_KEY
  switch_env: USE_LAB
  pick_order: 0
  default_model: m
"#,
        );
        // Its variable moves it, with its path after the trimmed value.
        let moved = resolved(
            &catalog,
            "lab",
            None,
            &[("LAB_GATEWAY", " http://gw/ "), ("LAB_KEY", "l")],
        )
        .await
        .unwrap();
        assert_eq!(moved.base_url, "http://gw/v1");
        let at_home = resolved(
            &catalog,
            "lab",
            None,
            &[("LAB_GATEWAY", "  "), ("LAB_KEY", "l")],
        )
        .await;
        assert_eq!(at_home.unwrap().base_url, "http://127.0.0.1:9/v1");
        // Its switch names it the run's provider, and its pick order puts it before the
        // presets when several keys are set; the presets keep their order.
        assert_eq!(
            catalog.switched_to(&env_with(&[("USE_LAB", "on")])),
            Some("lab")
        );
        assert_eq!(catalog.switched_to(&env_with(&[("USE_LAB", "0")])), None);
        let both = env_with(&[("ANTHROPIC_API_KEY", "a"), ("LAB_KEY", "l")]);
        assert_eq!(catalog.auto_pick(&both).as_deref(), Some("lab"));
        let presets = ModelCatalog::builtin().unwrap();
        let keys = env_with(&[("GROQ_API_KEY", "g"), ("OPENAI_API_KEY", "o")]);
        assert_eq!(presets.auto_pick(&keys).as_deref(), Some("openai"));
    }

    #[tokio::test]
    async fn builtin_catalog_parses_and_prices_known_models() {
        let catalog = ModelCatalog::builtin().unwrap();
        let settings = catalog
            .resolve(
                Choice {
                    provider: Some("anthropic"),
                    model: Some("claude-sonnet-4-5"),
                    ..Choice::default()
                },
                &env_with(&[("ANTHROPIC_API_KEY", "k")]),
            )
            .await
            .unwrap();
        assert_eq!(settings.api, Api::Anthropic);
        let pricing = settings.model.pricing.unwrap();
        assert_eq!(pricing.input_per_mtok, 300_000_000);
        assert_eq!(pricing.cache_read_per_mtok, 30_000_000);
        assert!(settings.model.capabilities.thinking_must_be_returned);
    }

    #[tokio::test]
    async fn a_short_name_is_the_providers_model_and_refused_where_it_is_not_one() {
        let catalog = ModelCatalog::builtin().unwrap();
        let key = &[
            ("ANTHROPIC_API_KEY", "k"),
            ("OPENAI_API_KEY", "k"),
            ("AWS_BEARER_TOKEN_BEDROCK", "k"),
            ("AWS_REGION", "us-east-1"),
            ("GEMINI_API_KEY", "k"),
        ];
        for (provider, short, full) in [
            ("anthropic", "opus", "claude-opus-4-5"),
            ("anthropic", "haiku", "claude-haiku-4-5"),
            (
                "bedrock",
                "sonnet",
                "global.anthropic.claude-sonnet-4-5-20250929-v1:0",
            ),
            ("gemini", "pro", "gemini-2.5-pro"),
            // A full id, and one the catalog does not know, pass as they are.
            ("anthropic", "claude-sonnet-4-0", "claude-sonnet-4-0"),
            ("anthropic", "claude-next", "claude-next"),
        ] {
            let settings = resolved(&catalog, provider, Some(short), key)
                .await
                .unwrap();
            assert_eq!(settings.model.id, full, "{provider} {short}");
        }
        let refused = resolved(&catalog, "openai", Some("sonnet"), key)
            .await
            .unwrap_err()
            .to_string();
        assert!(
            refused.contains("`sonnet` is a short name at anthropic, bedrock"),
            "{refused}"
        );
        // The config file adds its own.
        let over: BTreeMap<String, ProviderEntry> =
            serde_yaml::from_str("openai:\n  aliases:\n    fast: gpt-5-mini\n").unwrap();
        let catalog = catalog.with_overrides(&over).unwrap();
        let settings = resolved(&catalog, "openai", Some("fast"), key)
            .await
            .unwrap();
        assert_eq!(settings.model.id, "gpt-5-mini");
        assert!(catalog.aliases("anthropic").any(|(s, _)| s == "sonnet"));
    }

    #[tokio::test]
    async fn claude_codes_auth_token_is_a_bearer_token_when_no_key_is_set() {
        let catalog = ModelCatalog::builtin().unwrap();
        let anthropic = |env| resolved(&catalog, "anthropic", None, env);
        let token = anthropic(&[("ANTHROPIC_AUTH_TOKEN", " gw \n")])
            .await
            .unwrap();
        assert_eq!(token.api_key.as_deref(), Some("gw"));
        assert_eq!(token.auth, KeyAuth::Bearer);
        assert_eq!(token.key_env.as_deref(), Some("ANTHROPIC_AUTH_TOKEN"));
        let both = anthropic(&[("ANTHROPIC_AUTH_TOKEN", "gw"), ("ANTHROPIC_API_KEY", "k")])
            .await
            .unwrap();
        assert_eq!(both.api_key.as_deref(), Some("k"));
        assert_eq!(both.auth, KeyAuth::Native);
        let none = anthropic(&[]).await.unwrap_err().to_string();
        assert!(
            none.contains("set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN"),
            "{none}"
        );
        // The token alone picks the provider, and is kept from commands like a key.
        let picked = catalog
            .resolve(
                Choice::default(),
                &env_with(&[("ANTHROPIC_AUTH_TOKEN", "gw")]),
            )
            .await
            .unwrap();
        assert_eq!(picked.api, Api::Anthropic);
        assert!(catalog.key_variables().any(|v| v == "ANTHROPIC_AUTH_TOKEN"));
    }

    #[tokio::test]
    async fn headers_come_from_the_config_and_claude_codes_custom_headers() {
        let over: BTreeMap<String, ProviderEntry> =
            serde_yaml::from_str("anthropic:\n  http_headers:\n    X-Org: acme\n").unwrap();
        let catalog = ModelCatalog::builtin()
            .unwrap()
            .with_overrides(&over)
            .unwrap();
        let anthropic = |env| resolved(&catalog, "anthropic", None, env);
        let settings = anthropic(&[
            ("ANTHROPIC_API_KEY", "k"),
            (
                "ANTHROPIC_CUSTOM_HEADERS",
                "cf-aig-authorization: Bearer gw\n\n X-Team :core\n",
            ),
        ])
        .await
        .unwrap();
        let pairs = |v: &[(&str, &str)]| {
            v.iter()
                .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            settings.extra_headers,
            pairs(&[
                ("X-Org", "acme"),
                ("cf-aig-authorization", "Bearer gw"),
                ("X-Team", "core")
            ])
        );
        let bad = anthropic(&[
            ("ANTHROPIC_API_KEY", "k"),
            (
                "ANTHROPIC_CUSTOM_HEADERS",
                "X-Team: core\nsecret-without-colon",
            ),
        ])
        .await
        .unwrap_err()
        .to_string();
        assert_eq!(
            bad,
            "ANTHROPIC_CUSTOM_HEADERS (headers for anthropic): line 2 is not `Name: Value` (one header per line)"
        );
        assert!(
            catalog
                .key_variables()
                .any(|v| v == "ANTHROPIC_CUSTOM_HEADERS")
        );
    }

    #[tokio::test]
    async fn a_gemini_model_named_by_its_resource_name_is_the_catalogs_model() {
        let catalog = ModelCatalog::builtin().unwrap();
        let settings = resolved(
            &catalog,
            "gemini",
            Some("models/gemini-2.5-pro"),
            &[("GEMINI_API_KEY", "k")],
        )
        .await
        .unwrap();
        assert_eq!(settings.model.id, "gemini-2.5-pro");
        assert_eq!(settings.model.context_window, 1_048_576);
        assert!(settings.model.pricing.is_some());
    }

    #[tokio::test]
    async fn unknown_models_have_an_unknown_price_but_local_ones_are_free() {
        let catalog = ModelCatalog::builtin().unwrap();
        let env = env_with(&[("OPENAI_API_KEY", "k")]);
        let remote = catalog
            .resolve(
                Choice {
                    provider: Some("openai"),
                    model: Some("gpt-unreleased"),
                    ..Choice::default()
                },
                &env,
            )
            .await
            .unwrap();
        assert_eq!(remote.model.pricing, None);
        let local = catalog
            .resolve(
                Choice {
                    provider: Some("ollama"),
                    model: Some("llama3"),
                    ..Choice::default()
                },
                &env,
            )
            .await
            .unwrap();
        assert_eq!(local.model.pricing, Some(Pricing::default()));
        assert_eq!(local.api_key, None);
    }

    #[tokio::test]
    async fn the_first_provider_with_a_key_is_picked() {
        let catalog = ModelCatalog::builtin().unwrap();
        let picked = catalog
            .resolve(
                Choice::default(),
                &env_with(&[("DEEPSEEK_API_KEY", "k"), ("GROQ_API_KEY", "g")]),
            )
            .await
            .unwrap();
        assert_eq!(picked.model.provider, "deepseek");
        assert_eq!(picked.api_key.as_deref(), Some("k"));
        let none = catalog.resolve(Choice::default(), &env_with(&[])).await;
        assert_eq!(none.err(), Some(CatalogError::NoProvider));
    }

    #[tokio::test]
    async fn missing_key_and_base_url_say_what_to_do() {
        let catalog = ModelCatalog::builtin().unwrap();
        let err = catalog
            .resolve(
                Choice {
                    provider: Some("groq"),
                    ..Choice::default()
                },
                &env_with(&[]),
            )
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("GROQ_API_KEY"), "{err}");
        let err = catalog
            .resolve(
                Choice {
                    provider: Some("openai-compatible"),
                    model: Some("m"),
                    ..Choice::default()
                },
                &env_with(&[]),
            )
            .await
            .unwrap_err();
        assert_eq!(
            err,
            CatalogError::MissingBaseUrl("openai-compatible".into())
        );
        for (typed, says) in [
            ("nope", "unknown provider `nope`; known: anthropic,"),
            (
                "olama",
                "unknown provider `olama` (did you mean `ollama`?); known:",
            ),
        ] {
            let err = catalog
                .resolve(
                    Choice {
                        provider: Some(typed),
                        ..Choice::default()
                    },
                    &env_with(&[]),
                )
                .await
                .unwrap_err()
                .to_string();
            assert!(err.starts_with(says), "{err}");
        }
    }

    #[tokio::test]
    async fn config_entries_add_providers_and_run_key_commands() {
        let catalog = overridden(
            r#"
mine:
  api: openai
  base_url: http://127.0.0.1:9/v1
  key_command: "printf ' secret \n'"
  default_model: tiny
  models:
    tiny: { context_window: 4096, max_output: 512, input: 0.1, output: 0.2 }
anthropic:
  idle_timeout_ms: 1000
"#,
        );
        let mine = catalog
            .resolve(
                Choice {
                    provider: Some("mine"),
                    ..Choice::default()
                },
                &env_with(&[]),
            )
            .await
            .unwrap();
        assert_eq!(mine.api_key.as_deref(), Some("secret"));
        assert_eq!(mine.model.context_window, 4096);
        assert_eq!(mine.model.pricing.unwrap().output_per_mtok, 20_000_000);
        let anthropic = catalog.get("anthropic").unwrap();
        assert_eq!(anthropic.idle_timeout_ms, Some(1000));
        assert!(anthropic.models.contains_key("claude-haiku-4-5"));

        let bad: BTreeMap<String, ProviderEntry> =
            serde_yaml::from_str("x:\n  base_url: http://h/v1\n").unwrap();
        assert!(
            ModelCatalog::builtin()
                .unwrap()
                .with_overrides(&bad)
                .is_err()
        );
    }

    #[tokio::test]
    async fn bedrock_and_vertex_find_their_region_and_project_as_claude_code_does() {
        let catalog = ModelCatalog::builtin().unwrap();
        // Claude Code's switch picks Bedrock; the region comes from AWS_REGION.
        let bedrock = catalog
            .resolve(
                Choice::default(),
                &env_with(&[
                    ("CLAUDE_CODE_USE_BEDROCK", "1"),
                    ("AWS_REGION", "eu-west-3"),
                    ("ANTHROPIC_API_KEY", "k"),
                ]),
            )
            .await
            .unwrap();
        assert_eq!(bedrock.api, Api::Bedrock);
        assert_eq!(
            bedrock.model.id,
            "global.anthropic.claude-sonnet-4-5-20250929-v1:0"
        );
        assert_eq!(
            bedrock.base_url,
            "https://bedrock-runtime.eu-west-3.amazonaws.com"
        );
        assert_eq!(bedrock.aws_region.as_deref(), Some("eu-west-3"));
        // No Bedrock API key: requests are signed.
        assert_eq!(bedrock.api_key, None);
        assert!(bedrock.model.pricing.is_some());
        assert!(bedrock.model.capabilities.thinking_must_be_returned);

        let vertex = catalog
            .resolve(
                Choice::default(),
                &env_with(&[
                    ("CLAUDE_CODE_USE_VERTEX", "True"),
                    ("ANTHROPIC_VERTEX_PROJECT_ID", "proj-1"),
                    ("CLOUD_ML_REGION", "us-east5"),
                    ("ANTHROPIC_MODEL", "claude-opus-4-5@20251101"),
                ]),
            )
            .await
            .unwrap();
        assert_eq!(vertex.api, Api::Vertex);
        assert_eq!(vertex.model.id, "claude-opus-4-5@20251101");
        assert!(vertex.model.pricing.is_some());
        assert_eq!(
            vertex.base_url,
            "https://us-east5-aiplatform.googleapis.com/v1/projects/proj-1/locations/us-east5/publishers/anthropic/models"
        );
        let no_project = catalog
            .resolve(
                Choice {
                    provider: Some("vertex"),
                    ..Choice::default()
                },
                &env_with(&[]),
            )
            .await
            .unwrap_err();
        assert!(
            no_project
                .to_string()
                .contains("ANTHROPIC_VERTEX_PROJECT_ID"),
            "{no_project}"
        );
        let wire = catalog
            .resolve(
                Choice {
                    provider: Some("bedrock"),
                    wire: Some(OpenAiWire::Chat),
                    ..Choice::default()
                },
                &env_with(&[("AWS_REGION", "us-east-1")]),
            )
            .await
            .unwrap_err();
        assert!(wire.to_string().contains("Anthropic Messages"), "{wire}");

        // Guests are offered a cloud only where it looks set up.
        let listed = |env: &'static [(&'static str, &'static str)]| {
            catalog
                .listings(&env_with(env))
                .into_iter()
                .map(|l| l.id)
                .filter(|id| id == "bedrock" || id == "vertex")
                .collect::<Vec<_>>()
        };
        assert!(listed(&[]).is_empty());
        assert_eq!(listed(&[("AWS_PROFILE", "work")]), ["bedrock"]);
        assert_eq!(listed(&[("CLAUDE_CODE_USE_VERTEX", "1")]), ["vertex"]);

        // Claude Code's switches read as it reads them; a switch that is off picks nothing.
        for (value, picked) in [
            ("yes", Some("bedrock")),
            (" ON ", Some("bedrock")),
            ("0", None),
        ] {
            let env =
                move |name: &str| (name == "CLAUDE_CODE_USE_BEDROCK").then(|| value.to_owned());
            assert_eq!(catalog.switched_to(&env), picked, "{value:?}");
        }
    }

    #[tokio::test]
    async fn the_openai_preset_speaks_responses_and_wire_switches_it() {
        let catalog = ModelCatalog::builtin().unwrap();
        let env = env_with(&[("OPENAI_API_KEY", "k"), ("ANTHROPIC_API_KEY", "k")]);
        let api = |provider: &'static str, wire: Option<OpenAiWire>| {
            let catalog = catalog.clone();
            let env = &env;
            async move {
                catalog
                    .resolve(
                        Choice {
                            provider: Some(provider),
                            model: Some("m"),
                            base_url: Some("http://127.0.0.1:1/v1"),
                            wire,
                        },
                        env,
                    )
                    .await
                    .map(|s| s.api)
            }
        };
        assert_eq!(api("openai", None).await, Ok(Api::Responses));
        assert_eq!(
            api("openai", Some(OpenAiWire::Chat)).await,
            Ok(Api::OpenAi(MaxTokensField::MaxCompletionTokens))
        );
        assert_eq!(
            api("openai-compatible", None).await,
            Ok(Api::OpenAi(MaxTokensField::MaxTokens))
        );
        assert_eq!(
            api("openai-compatible", Some(OpenAiWire::Responses)).await,
            Ok(Api::Responses)
        );
        let refused = api("anthropic", Some(OpenAiWire::Chat)).await.unwrap_err();
        assert!(
            refused.to_string().contains("speaks Anthropic Messages"),
            "{refused}"
        );
    }

    #[tokio::test]
    async fn azure_takes_its_endpoint_variable_and_sends_the_key_as_api_key() {
        let catalog = ModelCatalog::builtin().unwrap();
        let settings = catalog
            .resolve(
                Choice {
                    provider: Some("azure"),
                    model: Some("my-gpt-5"),
                    ..Choice::default()
                },
                &env_with(&[
                    ("AZURE_OPENAI_API_KEY", "k"),
                    ("AZURE_OPENAI_ENDPOINT", "https://res.openai.azure.com/"),
                ]),
            )
            .await
            .unwrap();
        assert_eq!(settings.base_url, "https://res.openai.azure.com/openai/v1");
        assert_eq!(settings.api, Api::Responses);
        assert_eq!(settings.auth, KeyAuth::ApiKeyHeader);
        assert_eq!(
            settings.model.pricing, None,
            "a deployment's price is unknown"
        );
        let missing = catalog
            .resolve(
                Choice {
                    provider: Some("azure"),
                    model: Some("my-gpt-5"),
                    ..Choice::default()
                },
                &env_with(&[("AZURE_OPENAI_API_KEY", "k")]),
            )
            .await
            .unwrap_err();
        assert_eq!(missing, CatalogError::MissingBaseUrl("azure".to_owned()));
    }
}
