//! What a run asks providers to cache (`cache.ttl` of a provider's config), and the key
//! that keeps a context's requests on one cache where an API routes by key.

use sha2::{Digest, Sha256};
use wonopcode_protocol::ModelRequest;

/// Whether and how long requests ask the API to keep their prefix: the `cache.ttl` of the
/// provider's config (`5m` by default, `1h`, or `off`). On the Messages API, breakpoints
/// (`anthropic`); on OpenAI's Responses API, a `prompt_cache_key` ([`prefix_key`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PromptCache {
    /// Five minutes, refreshed by each read: the API's default.
    #[default]
    FiveMinutes,
    /// An hour for the stable prefix (writes bill at 2× instead of 1.25×); the moving
    /// breakpoints stay at five minutes, as each is replaced by the next response's.
    OneHour,
    /// Nothing asked (a server that refuses it, or the user's choice).
    Off,
}

/// `prompt_cache_key` for `request`: a digest of its stable prefix (system prompt and tool
/// definitions), so a context's requests, and sibling contexts started with the same prompt
/// and tools, are routed to the cache the first of them wrote. Nothing of the history or
/// the workspace is in it.
pub fn prefix_key(request: &ModelRequest) -> String {
    let mut digest = Sha256::new();
    digest.update(request.system.as_deref().unwrap_or_default());
    for tool in &request.tools {
        digest.update([0]);
        digest.update(&tool.name);
        digest.update([0]);
        digest.update(&tool.description);
        digest.update([0]);
        digest.update(tool.parameters.to_string());
    }
    format!("wonopcode-{}", hex::encode(&digest.finalize()[..8]))
}
