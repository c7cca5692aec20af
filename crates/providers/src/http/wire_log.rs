//! The raw payloads of every request and response, for `--verbose` (the `wonopcode::wire`
//! tracing target at `trace`): the request's URL, headers and JSON body, then each event of
//! the answer as it arrives, or the body of a refusal. Keys and credentials never appear:
//! a header whose name says key, token, secret, auth, signature or cookie is shown as
//! `[redacted]`, and long strings (an image's base64) are cut. Nothing is formatted unless
//! the target is on.

use reqwest::header::HeaderMap;
use serde_json::Value;

/// The tracing target `--verbose` turns on.
pub const TARGET: &str = "wonopcode::wire";

/// Characters of one JSON string shown before it is cut.
const STRING_CHARS: usize = 2_000;

/// Whether the payloads are being shown.
fn on() -> bool {
    tracing::enabled!(target: TARGET, tracing::Level::TRACE)
}

/// A request about to be sent.
pub(crate) fn request(endpoint: &str, headers: &HeaderMap, body: &[u8]) {
    if !on() {
        return;
    }
    let mut lines = vec![format!("→ POST {endpoint}")];
    for (name, value) in headers {
        let shown = if secret(name.as_str()) {
            "[redacted]".to_owned()
        } else {
            value.to_str().unwrap_or("(not text)").to_owned()
        };
        lines.push(format!("  {name}: {shown}"));
    }
    lines.push(shortened(body));
    tracing::trace!(target: TARGET, "{}", lines.join("\n"));
}

/// One event of an answer (its name, when the API names them, and its data).
pub(crate) fn event(name: &str, data: &str) {
    if !on() {
        return;
    }
    let named = if name.is_empty() || name == "message" {
        String::new()
    } else {
        format!("{name} ")
    };
    tracing::trace!(target: TARGET, "← {named}{}", shortened(data.as_bytes()));
}

/// A refusal's status and body.
pub(crate) fn refusal(status: u16, body: &str) {
    if on() {
        tracing::trace!(target: TARGET, "← HTTP {status} {}", shortened(body.as_bytes()));
    }
}

/// Whether a header's value is a credential, by its name.
fn secret(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    [
        "key",
        "token",
        "secret",
        "auth",
        "signature",
        "cookie",
        "credential",
    ]
    .iter()
    .any(|word| name.contains(word))
}

/// A body as text, its long strings cut; JSON re-serialized compactly, anything else as it is.
fn shortened(body: &[u8]) -> String {
    match serde_json::from_slice::<Value>(body) {
        Ok(mut value) => {
            cut_strings(&mut value);
            value.to_string()
        }
        Err(_) => {
            let text = String::from_utf8_lossy(body);
            cut(&text).unwrap_or_else(|| text.into_owned())
        }
    }
}

fn cut_strings(value: &mut Value) {
    match value {
        Value::String(s) => {
            if let Some(short) = cut(s) {
                *s = short;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(cut_strings),
        Value::Object(map) => map.values_mut().for_each(cut_strings),
        _ => {}
    }
}

/// `text` cut to [`STRING_CHARS`] with how much was left out, or `None` when it is short.
fn cut(text: &str) -> Option<String> {
    let (at, _) = text.char_indices().nth(STRING_CHARS)?;
    Some(format!("{}…({} more bytes)", &text[..at], text.len() - at))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_told_by_their_header_names() {
        for name in [
            "x-api-key",
            "Authorization",
            "api-key",
            "x-goog-api-key",
            "X-Amz-Security-Token",
            "x-gateway-secret",
        ] {
            assert!(secret(name), "{name}");
        }
        for name in ["content-type", "anthropic-version", "accept"] {
            assert!(!secret(name), "{name}");
        }
    }

    #[test]
    fn long_strings_are_cut_and_short_ones_kept() {
        let body = serde_json::json!({"a": "x".repeat(5_000), "b": ["short"]}).to_string();
        let shown = shortened(body.as_bytes());
        assert!(shown.contains("…(3000 more bytes)"), "{shown}");
        assert!(shown.contains("\"short\""));
        assert_eq!(shortened(b"data: not json"), "data: not json");
    }
}
