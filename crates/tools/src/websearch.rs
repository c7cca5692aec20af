//! `websearch`: a web search through the engine the config file names — a SearXNG instance
//! (its JSON API) or Brave Search's API. Without that setting the tool does not exist: a
//! search tool with nothing behind it would only fail. Results come back as a numbered list
//! of titles, URLs and snippets, for `webfetch` to read further.

use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use wonopcode_agent_loop::{ToolEnv, ToolError, ToolOutput, parameters_of};
use wonopcode_protocol::{ToolCategory, ToolKind, ToolSpec};

use crate::spec::spec;

/// How long a search may take.
const TIMEOUT: Duration = Duration::from_secs(20);
/// Most results returned.
const MAX_RESULTS: usize = 10;
/// Bytes of a search engine's answer read at most.
const MAX_ANSWER_BYTES: usize = 2 << 20;

/// The engine behind the tool, from the config file's `websearch:`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "engine", rename_all = "snake_case", deny_unknown_fields)]
pub enum SearchEngine {
    /// A SearXNG instance with its JSON format enabled.
    Searxng {
        /// Its address (`http://127.0.0.1:8888`).
        url: String,
    },
    /// Brave Search's web search API.
    Brave {
        /// The API's address (default: Brave's own).
        #[serde(default = "brave_url")]
        url: String,
        /// The variable holding the subscription token (default `BRAVE_API_KEY`).
        #[serde(default = "brave_key_env")]
        key_env: String,
    },
}

fn brave_url() -> String {
    "https://api.search.brave.com/res/v1/web/search".to_owned()
}

fn brave_key_env() -> String {
    "BRAVE_API_KEY".to_owned()
}

/// Searches the web.
pub struct WebSearchTool {
    spec: ToolSpec,
    engine: SearchEngine,
    /// Brave's token, read when the run starts.
    key: Option<String>,
    client: reqwest::Client,
}

/// A `websearch` call's arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WebSearchArgs {
    // What to search for.
    #[schemars(length(min = 1))]
    query: String,
}

impl WebSearchTool {
    /// The tool over `engine`; a Brave token is read with `env`. `Err`: one line saying what
    /// is missing.
    pub fn new(engine: SearchEngine, env: &dyn Fn(&str) -> Option<String>) -> Result<Self, String> {
        let key =
            match &engine {
                SearchEngine::Searxng { .. } => None,
                SearchEngine::Brave { key_env, .. } => Some(env(key_env).ok_or_else(|| {
                    format!("websearch: Brave Search needs a token: set {key_env}")
                })?),
            };
        let client = reqwest::Client::builder()
            .timeout(TIMEOUT)
            .user_agent(concat!("wonopcode/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("websearch: cannot make an HTTP client: {e}"))?;
        Ok(Self {
            spec: spec(
                "websearch",
                "Search the web. Returns titles, URLs and snippets; read a result with webfetch.",
                ToolKind::Mutating,
                ToolCategory::Network,
                parameters_of::<WebSearchArgs>(),
            ),
            engine,
            key,
            client,
        })
    }

    async fn search(&self, query: &str) -> Result<Vec<Hit>, String> {
        let request = match &self.engine {
            SearchEngine::Searxng { url } => self
                .client
                .get(format!("{}/search", url.trim_end_matches('/')))
                .query(&[("q", query), ("format", "json")]),
            SearchEngine::Brave { url, .. } => self
                .client
                .get(url)
                .query(&[("q", query), ("count", &MAX_RESULTS.to_string())])
                .header(
                    "X-Subscription-Token",
                    self.key.as_deref().unwrap_or_default(),
                )
                .header(reqwest::header::ACCEPT, "application/json"),
        };
        let response = request.send().await.map_err(|e| e.to_string())?;
        let status = response.status();
        let body = read_capped(response).await?;
        if !status.is_success() {
            return Err(format!(
                "the search engine answered {status}: {}",
                String::from_utf8_lossy(&body[..body.len().min(200)])
            ));
        }
        let answer: serde_json::Value = serde_json::from_slice(&body)
            .map_err(|e| format!("the search engine's answer is not JSON: {e}"))?;
        let (results, snippet) = match self.engine {
            SearchEngine::Searxng { .. } => (&answer["results"], "content"),
            SearchEngine::Brave { .. } => (&answer["web"]["results"], "description"),
        };
        Ok(results
            .as_array()
            .map(|list| {
                list.iter()
                    .filter_map(|r| {
                        Some(Hit {
                            title: r["title"].as_str()?.to_owned(),
                            url: r["url"].as_str()?.to_owned(),
                            snippet: r[snippet].as_str().unwrap_or_default().to_owned(),
                        })
                    })
                    .take(MAX_RESULTS)
                    .collect()
            })
            .unwrap_or_default())
    }
}

/// One result.
struct Hit {
    title: String,
    url: String,
    snippet: String,
}

/// The body of `response`, refused past [`MAX_ANSWER_BYTES`].
async fn read_capped(response: reqwest::Response) -> Result<Vec<u8>, String> {
    use futures::StreamExt;
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        body.extend_from_slice(&chunk.map_err(|e| e.to_string())?);
        if body.len() > MAX_ANSWER_BYTES {
            return Err(format!(
                "the search engine's answer is past {} MiB",
                MAX_ANSWER_BYTES >> 20
            ));
        }
    }
    Ok(body)
}

#[async_trait]
impl wonopcode_agent_loop::TypedTool for WebSearchTool {
    type Args = WebSearchArgs;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn run(&self, a: WebSearchArgs, env: &ToolEnv) -> Result<ToolOutput, ToolError> {
        let hits = tokio::select! {
            hits = self.search(&a.query) => hits.map_err(|e| ToolError::Failed(format!("websearch: {e}")))?,
            () = env.cancel.cancelled() => return Err(ToolError::Cancelled),
        };
        if hits.is_empty() {
            return Ok(ToolOutput::text(format!("no results for `{}`", a.query)));
        }
        let lines: Vec<String> = hits
            .iter()
            .enumerate()
            .map(|(i, h)| {
                let snippet = h.snippet.split_whitespace().collect::<Vec<_>>().join(" ");
                format!("{}. {}\n   {}\n   {snippet}", i + 1, h.title, h.url)
            })
            .collect();
        Ok(ToolOutput::text(lines.join("\n")))
    }
}
