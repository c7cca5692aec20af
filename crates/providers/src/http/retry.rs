//! When to try a failed request again: attempts, exponential backoff with jitter, and the
//! server's own `Retry-After` / `retry-after-ms`.

use std::time::{Duration, SystemTime};

use reqwest::header::HeaderMap;

/// Retry settings of a provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included.
    pub max_attempts: u32,
    /// Wait before the first retry; each further retry doubles it.
    pub initial_delay: Duration,
    /// The longest backoff wait (a server's `Retry-After` may ask for longer, up to
    /// `max_server_delay`).
    pub max_delay: Duration,
    /// The longest wait a server's `Retry-After` is honoured for; past it the failure is
    /// reported instead of waiting.
    pub max_server_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 5,
            initial_delay: Duration::from_secs(2),
            max_delay: Duration::from_secs(30),
            max_server_delay: Duration::from_secs(300),
        }
    }
}

impl RetryPolicy {
    /// The wait before attempt `next` (2 for the first retry), or `None` when no attempt is
    /// left or the server asks for a longer wait than is honoured. A rate limit's wait is
    /// the server's (its window ends then); any other failure's is at least the backoff,
    /// the server's only when longer: an overloaded API answering `retry-after: 1` to
    /// every attempt would otherwise use the five up in four seconds, where a refused
    /// connection is given half a minute.
    pub fn delay(
        &self,
        next: u32,
        server: Option<Duration>,
        rate_limited: bool,
    ) -> Option<Duration> {
        if next > self.max_attempts {
            return None;
        }
        let doublings = next.saturating_sub(2).min(16);
        let backoff = self
            .initial_delay
            .saturating_mul(1 << doublings)
            .min(self.max_delay);
        // Jitter: between 80% and 100% of the backoff, so clients that failed together do not
        // come back together.
        let backoff = backoff.mul_f64(0.8 + 0.2 * fastrand::f64());
        match server {
            Some(asked) if asked > self.max_server_delay => None,
            Some(asked) if rate_limited => Some(asked),
            Some(asked) => Some(asked.max(backoff)),
            None => Some(backoff),
        }
    }
}

/// The wait a server asked for: `retry-after-ms` (milliseconds, Anthropic and OpenAI), else
/// `Retry-After` as seconds or as an HTTP date.
pub fn server_delay(headers: &HeaderMap) -> Option<Duration> {
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    let value = text("retry-after")?;
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(
        when.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

/// The wait a Google error body asks for: `error.details[]`'s `RetryInfo` `retryDelay`
/// (`"34.4s"`), which Gemini sends instead of a `Retry-After` header.
pub fn body_delay(body: &str) -> Option<Duration> {
    let json: serde_json::Value = serde_json::from_str(body).ok()?;
    json.get("error")?
        .get("details")?
        .as_array()?
        .iter()
        .filter(|d| {
            d.get("@type")
                .and_then(|t| t.as_str())
                .is_some_and(|t| t.ends_with("RetryInfo"))
        })
        .find_map(|d| {
            d.get("retryDelay")?
                .as_str()?
                .strip_suffix('s')?
                .parse::<f64>()
                .ok()
        })
        .filter(|secs| secs.is_finite() && *secs >= 0.0)
        .map(Duration::from_secs_f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_the_cap_with_jitter() {
        let policy = RetryPolicy::default();
        let d2 = policy.delay(2, None, false).unwrap();
        assert!(
            d2 >= Duration::from_millis(1600) && d2 <= Duration::from_secs(2),
            "{d2:?}"
        );
        let d3 = policy.delay(3, None, false).unwrap();
        assert!(
            d3 >= Duration::from_millis(3200) && d3 <= Duration::from_secs(4),
            "{d3:?}"
        );
        let big = RetryPolicy {
            max_attempts: 20,
            ..policy
        };
        let d10 = big.delay(10, None, false).unwrap();
        assert!(
            d10 >= Duration::from_secs(24) && d10 <= Duration::from_secs(30),
            "{d10:?}"
        );
        assert_eq!(policy.delay(6, None, false), None, "five attempts in all");
    }

    #[test]
    fn a_rate_limit_waits_as_asked_an_overload_at_least_the_backoff() {
        let policy = RetryPolicy::default();
        let second = Some(Duration::from_secs(1));
        for rate_limited in [true, false] {
            assert_eq!(
                policy.delay(2, Some(Duration::from_secs(7)), rate_limited),
                Some(Duration::from_secs(7))
            );
            assert_eq!(
                policy.delay(2, Some(Duration::from_secs(3600)), rate_limited),
                None
            );
        }
        assert_eq!(policy.delay(3, second, true), second);
        // A 529's `retry-after: 1` on every attempt: the backoff still grows (about 2, 4, 8,
        // 16 s).
        let waits: Vec<Duration> = (2..=5)
            .map(|next| policy.delay(next, second, false).unwrap())
            .collect();
        assert!(waits[0] >= Duration::from_millis(1600), "{waits:?}");
        assert!(waits[3] >= Duration::from_millis(12_800), "{waits:?}");
    }

    #[test]
    fn retry_after_forms_are_read() {
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", "3".parse().unwrap());
        assert_eq!(server_delay(&headers), Some(Duration::from_secs(3)));
        headers.insert("retry-after-ms", "1500".parse().unwrap());
        assert_eq!(server_delay(&headers), Some(Duration::from_millis(1500)));

        let mut dated = HeaderMap::new();
        let later = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(20));
        dated.insert("retry-after", later.parse().unwrap());
        let wait = server_delay(&dated).unwrap();
        assert!(
            wait > Duration::from_secs(15) && wait <= Duration::from_secs(20),
            "{wait:?}"
        );

        let mut past = HeaderMap::new();
        past.insert(
            "retry-after",
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
        );
        assert_eq!(server_delay(&past), Some(Duration::ZERO));
    }

    #[test]
    fn a_google_retry_info_in_the_body_is_a_delay() {
        let body = include_str!("../../tests/fixtures/gemini/429-retry-info.json");
        assert_eq!(body_delay(body), Some(Duration::from_millis(34_400)));
        assert_eq!(body_delay(r#"{"error":{"message":"x"}}"#), None);
        assert_eq!(body_delay("not json"), None);
    }
}
