//! Why an attempt failed, and what to tell the user: classifying HTTP statuses and error
//! bodies of every API into one line that says what to do.

use std::time::Duration;

/// A failed attempt (or a failed stream), with what the retry loop needs to decide.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// One line for the user.
    pub message: String,
    /// Worth another attempt (rate limit, overload, server error, dropped connection).
    pub retryable: bool,
    /// The conversation does not fit the context window.
    pub overflow: bool,
    /// How long the server asked us to wait, when it said.
    pub retry_after: Option<Duration>,
    /// The provider said too many requests (HTTP 429): every request to it waits, not only
    /// this one.
    pub rate_limited: bool,
}

impl Failure {
    /// A failure no retry can fix.
    pub fn fatal(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            retryable: false,
            overflow: false,
            retry_after: None,
            rate_limited: false,
        }
    }

    /// A failure another attempt may not have.
    pub fn transient(message: impl Into<String>) -> Self {
        Self {
            retryable: true,
            ..Self::fatal(message)
        }
    }
}

/// Statuses worth retrying: timeout, conflict, rate limit, server errors, Anthropic's 529.
pub fn retryable_status(status: u16) -> bool {
    matches!(status, 408 | 409 | 429) || (500..=599).contains(&status)
}

/// Phrases providers use when the prompt does not fit the context window.
const OVERFLOW_PHRASES: &[&str] = &[
    "prompt is too long",
    // Bedrock's own check, before the model sees the prompt.
    "input is too long",
    "context_length_exceeded",
    "context length",
    "maximum context",
    "context window",
    "too many tokens",
    "reduce the length",
];

/// True when a provider's message says the conversation is too long for the model.
pub fn is_overflow(message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    OVERFLOW_PHRASES.iter().any(|p| lower.contains(p))
}

/// What the caller knows about the request, for messages that say what to do.
pub struct RequestSite<'a> {
    /// Provider id (`anthropic`, `openai`, ...).
    pub provider: &'a str,
    /// Model id requested.
    pub model: &'a str,
    /// The URL requested.
    pub url: &'a str,
    /// The environment variable holding the key, when there is one.
    pub key_env: Option<&'a str>,
    /// The cloud credentials that signed the request, when no key did.
    pub credentials: Option<String>,
}

/// Classifies a non-success HTTP answer.
pub fn from_status(
    status: u16,
    body: &str,
    retry_after: Option<Duration>,
    site: &RequestSite<'_>,
) -> Failure {
    let said = provider_message(body);
    let message = match status {
        401 | 403 => {
            let fix = match (&site.credentials, site.key_env) {
                (Some(credentials), _) => format!("check {credentials}"),
                (None, Some(var)) => format!("check the key in {var}"),
                (None, None) => "check the provider's key in the config file".to_owned(),
            };
            format!(
                "{} refused the key (HTTP {status}): {said}; {fix}",
                site.provider
            )
        }
        404 => format!(
            "{} has no model `{}` at {} (HTTP 404): {said}; check --model and --base-url",
            site.provider, site.model, site.url
        ),
        400 | 413 | 422 => format!(
            "{} refused the request (HTTP {status}): {said}",
            site.provider
        ),
        529 => format!("{} is overloaded (HTTP 529): {said}", site.provider),
        429 => format!("{} rate limit (HTTP 429): {said}", site.provider),
        _ => format!("{} answered HTTP {status}: {said}", site.provider),
    };
    Failure {
        overflow: (status == 400 || status == 413) && is_overflow(&said),
        retryable: retryable_status(status),
        retry_after,
        rate_limited: status == 429,
        message,
    }
}

/// The human part of an error body: `error.message` (every API), `message`, an HTML page
/// named as such, or the text itself, cut to one short line.
pub fn provider_message(body: &str) -> String {
    let trimmed = body.trim();
    if let Ok(json) = serde_json::from_str::<serde_json::Value>(trimmed) {
        let error = json.get("error").unwrap_or(&json);
        let message = error
            .get("message")
            .and_then(|m| m.as_str())
            .or_else(|| error.as_str());
        let kind = error
            .get("type")
            .and_then(|t| t.as_str())
            .or_else(|| error.get("code").and_then(|c| c.as_str()));
        if let Some(message) = message {
            return match kind {
                Some(kind) => one_line(&format!("{kind}: {message}")),
                None => one_line(message),
            };
        }
    }
    if looks_like_html(trimmed) {
        return "the server answered with an HTML page, not the API".to_owned();
    }
    if trimmed.is_empty() {
        return "no details".to_owned();
    }
    one_line(trimmed)
}

/// True for a body that is an HTML page (a proxy's or a web server's, not the API's).
pub fn looks_like_html(body: &str) -> bool {
    let head: String = body
        .trim_start()
        .chars()
        .take(15)
        .collect::<String>()
        .to_ascii_lowercase();
    head.starts_with("<!doctype html") || head.starts_with("<html")
}

/// Collapses whitespace and cuts to 300 characters, so an error stays one line.
fn one_line(text: &str) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if joined.chars().count() <= 300 {
        joined
    } else {
        let cut: String = joined.chars().take(300).collect();
        format!("{cut}…")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site() -> RequestSite<'static> {
        RequestSite {
            provider: "openai",
            model: "gpt-x",
            url: "http://127.0.0.1/v1/chat/completions",
            key_env: Some("OPENAI_API_KEY"),
            credentials: None,
        }
    }

    #[test]
    fn auth_failure_names_the_key_variable() {
        let f = from_status(401, r#"{"error":{"message":"bad key"}}"#, None, &site());
        assert!(!f.retryable);
        assert!(f.message.contains("OPENAI_API_KEY"), "{}", f.message);
        assert!(f.message.contains("bad key"), "{}", f.message);
    }

    #[test]
    fn not_found_names_the_model() {
        let f = from_status(404, "", None, &site());
        assert!(f.message.contains("`gpt-x`"), "{}", f.message);
    }

    #[test]
    fn overflow_is_recognised_in_a_400() {
        let body = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#;
        let f = from_status(400, body, None, &site());
        assert!(f.overflow && !f.retryable);
        assert!(
            f.message
                .contains("invalid_request_error: prompt is too long")
        );
    }

    #[test]
    fn server_errors_and_rate_limits_are_retried() {
        for status in [408, 409, 429, 500, 502, 503, 529] {
            assert!(from_status(status, "", None, &site()).retryable, "{status}");
        }
        assert!(!from_status(400, "", None, &site()).retryable);
    }

    #[test]
    fn html_bodies_are_named_not_dumped() {
        let m = provider_message("<!DOCTYPE html><html><body>Bad gateway</body></html>");
        assert_eq!(m, "the server answered with an HTML page, not the API");
    }
}
