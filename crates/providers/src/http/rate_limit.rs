//! One provider account's request and token rates, shared by every request of the process
//! that goes to the same endpoint with the same key: the contexts of one run, the children of
//! a parallel spawn, the tasks of a batch. Limits come from the config (`requests_per_minute`,
//! `tokens_per_minute`) or are learned from the provider's rate-limit headers; a 429 or a
//! `Retry-After` seen by one request holds every other one back until it has passed.
//!
//! A request waits *before* it is sent, for the time reserved for it: requests are spaced
//! evenly (no burst), and tokens are drawn from a bucket holding one minute's worth. A waiting
//! request holds nothing another request could use: the next request's time is reserved after
//! it, and a pause that begins while it waits sends it to the back, after the pause.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant, SystemTime};

use parking_lot::Mutex;
use reqwest::header::HeaderMap;

/// The rates a provider allows, from the config file (unset: unlimited until learned).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RateLimits {
    /// Requests per minute.
    pub requests_per_minute: Option<u32>,
    /// Prompt tokens per minute (estimated from the request's size).
    pub tokens_per_minute: Option<u32>,
}

/// The limiter of one endpoint and key.
#[derive(Debug)]
pub struct RateLimiter {
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    /// From the config; a learned limit applies where this is unset.
    configured: RateLimits,
    learned: RateLimits,
    /// The earliest time the next request may be sent.
    next_request: Instant,
    /// The token bucket's theoretical arrival time (GCRA): empty while it is in the past.
    tokens_due: Instant,
    /// Nothing is sent before this (a 429, a `Retry-After`, an allowance used up).
    paused_until: Instant,
    /// When the last request was let go.
    last_sent: Option<Instant>,
}

/// Every limiter of the process, by endpoint and key.
static LIMITERS: LazyLock<Mutex<HashMap<String, Arc<RateLimiter>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// The longest wait learned from headers that is honoured (a wrong clock must not stall a run).
const LONGEST_LEARNED_PAUSE: Duration = Duration::from_secs(120);

impl RateLimiter {
    /// The process's limiter for `endpoint` used with `key`; `configured` limits, when given,
    /// replace the ones it had.
    pub fn shared(endpoint: &str, key: Option<&str>, configured: RateLimits) -> Arc<Self> {
        let id = format!("{endpoint}\n{}", key.unwrap_or(""));
        let mut all = LIMITERS.lock();
        let limiter = all
            .entry(id)
            .or_insert_with(|| Arc::new(Self::new(RateLimits::default())))
            .clone();
        if configured != RateLimits::default() {
            limiter.state.lock().configured = configured;
        }
        limiter
    }

    /// A limiter of its own (tests, embedders with their own sharing).
    pub fn new(configured: RateLimits) -> Self {
        let now = Instant::now();
        Self {
            state: Mutex::new(State {
                configured,
                learned: RateLimits::default(),
                next_request: now,
                tokens_due: now,
                paused_until: now,
                last_sent: None,
            }),
        }
    }

    /// Waits until a request of about `tokens` prompt tokens may be sent, and counts it.
    ///
    /// The reserved time orders the requests; at that time the request checks, under the
    /// lock, that no pause began while it waited and that the request sent last (perhaps
    /// late, on a busy machine) is a whole interval behind, and waits on when not.
    pub async fn acquire(&self, tokens: u64) {
        let mut at = self.reserve(tokens, Instant::now());
        loop {
            // Not a sleep when the time has come: tokio rounds a deadline up to its next
            // millisecond tick, so a request free to go would still wait up to 1 ms.
            if at > Instant::now() {
                tokio::time::sleep_until(at.into()).await;
            }
            let mut state = self.state.lock();
            let now = Instant::now();
            let spaced = match (state.limits().requests_per_minute, state.last_sent) {
                (Some(rpm), Some(last)) if rpm > 0 => last + per_unit(rpm, 1),
                _ => now,
            };
            let ready = state.paused_until.max(spaced);
            if ready <= now {
                state.last_sent = Some(now);
                return;
            }
            at = ready;
        }
    }

    /// Reserves the next time a request of `tokens` may go, seen at `now`.
    fn reserve(&self, tokens: u64, now: Instant) -> Instant {
        let mut state = self.state.lock();
        let limits = state.limits();
        let mut at = now.max(state.paused_until);
        if let Some(rpm) = limits.requests_per_minute.filter(|r| *r > 0) {
            at = at.max(state.next_request);
            state.next_request = at + per_unit(rpm, 1);
        }
        if let Some(tpm) = limits.tokens_per_minute.filter(|t| *t > 0) {
            // GCRA with a burst of one minute: the bucket holds `tpm` tokens and refills
            // evenly; a request larger than the bucket waits for a full one.
            let cost = per_unit(tpm, tokens.min(u64::from(tpm)));
            let due = state.tokens_due.max(at);
            let allowed = (due + cost).checked_sub(Duration::from_secs(60));
            if let Some(allowed) = allowed {
                at = at.max(allowed);
            }
            state.tokens_due = due.max(at) + cost;
        }
        at
    }

    /// Holds every request back for `wait` (a 429, or a server's `Retry-After`).
    pub fn pause(&self, wait: Duration) {
        let until = Instant::now() + wait;
        let mut state = self.state.lock();
        if until > state.paused_until {
            tracing::info!(
                wait_ms = wait.as_millis() as u64,
                "rate limited: requests wait"
            );
            state.paused_until = until;
        }
        state.next_request = state.next_request.max(until);
    }

    /// Learns from a response's rate-limit headers (Anthropic's `anthropic-ratelimit-*`,
    /// OpenAI's `x-ratelimit-*`): the limits, where the config sets none, and a pause until
    /// the reset when an allowance is used up.
    pub fn observe(&self, headers: &HeaderMap) {
        let now = SystemTime::now();
        let mut pause = None;
        let mut learned = RateLimits::default();
        for kind in [Allowance::Requests, Allowance::Tokens] {
            let Some(read) = kind.read(headers, now) else {
                continue;
            };
            match kind {
                Allowance::Requests => learned.requests_per_minute = read.limit,
                Allowance::Tokens => learned.tokens_per_minute = read.limit,
            }
            if read.remaining == Some(0)
                && let Some(reset) = read.resets_in
            {
                pause = pause.max(Some(reset.min(LONGEST_LEARNED_PAUSE)));
            }
        }
        {
            let mut state = self.state.lock();
            state.learned.requests_per_minute = learned
                .requests_per_minute
                .or(state.learned.requests_per_minute);
            state.learned.tokens_per_minute = learned
                .tokens_per_minute
                .or(state.learned.tokens_per_minute);
        }
        if let Some(wait) = pause {
            self.pause(wait);
        }
    }
}

impl State {
    fn limits(&self) -> RateLimits {
        RateLimits {
            requests_per_minute: self
                .configured
                .requests_per_minute
                .or(self.learned.requests_per_minute),
            tokens_per_minute: self
                .configured
                .tokens_per_minute
                .or(self.learned.tokens_per_minute),
        }
    }
}

/// The time `units` take at `per_minute`.
fn per_unit(per_minute: u32, units: u64) -> Duration {
    Duration::from_secs(60).mul_f64(units as f64 / f64::from(per_minute))
}

/// A request or token allowance as a response's headers state it.
#[derive(Debug, Clone, Copy)]
enum Allowance {
    Requests,
    Tokens,
}

/// What the headers said of one allowance.
#[derive(Debug, Default, PartialEq)]
struct Read {
    limit: Option<u32>,
    remaining: Option<u64>,
    resets_in: Option<Duration>,
}

impl Allowance {
    fn read(self, headers: &HeaderMap, now: SystemTime) -> Option<Read> {
        let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
        let number = |name: &str| text(name).and_then(|v| v.trim().parse::<u64>().ok());
        let (anthropic, openai) = match self {
            Self::Requests => ("anthropic-ratelimit-requests", "requests"),
            Self::Tokens => ("anthropic-ratelimit-tokens", "tokens"),
        };
        if let Some(limit) = number(&format!("{anthropic}-limit")) {
            // Anthropic: an RFC 3339 time.
            let resets_in = text(&format!("{anthropic}-reset"))
                .and_then(|v| humantime::parse_rfc3339_weak(v.trim()).ok())
                .map(|at| at.duration_since(now).unwrap_or(Duration::ZERO));
            return Some(Read {
                limit: u32::try_from(limit).ok(),
                remaining: number(&format!("{anthropic}-remaining")),
                resets_in,
            });
        }
        let limit = number(&format!("x-ratelimit-limit-{openai}"))?;
        Some(Read {
            limit: u32::try_from(limit).ok(),
            remaining: number(&format!("x-ratelimit-remaining-{openai}")),
            // OpenAI: a Go duration (`6m0s`, `1.5s`, `20ms`).
            resets_in: text(&format!("x-ratelimit-reset-{openai}")).and_then(go_duration),
        })
    }
}

/// A Go duration as OpenAI writes its resets: `1h2m3.5s`, `20ms`, `6m0s`.
fn go_duration(text: &str) -> Option<Duration> {
    let mut rest = text.trim();
    if rest.is_empty() {
        return None;
    }
    let mut total = 0.0_f64;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let value: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let seconds = match &rest[..unit_len] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" => 1e-6,
            "ns" => 1e-9,
            _ => return None,
        };
        rest = &rest[unit_len..];
        total += value * seconds;
    }
    (total.is_finite() && total >= 0.0).then(|| Duration::from_secs_f64(total))
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            if let Ok(value) = HeaderValue::from_str(value) {
                map.insert(*name, value);
            }
        }
        map
    }

    #[test]
    fn requests_are_spaced_evenly_without_a_burst() {
        let limiter = RateLimiter::new(RateLimits {
            requests_per_minute: Some(300),
            tokens_per_minute: None,
        });
        let now = Instant::now();
        let times: Vec<Duration> = (0..6).map(|_| limiter.reserve(1, now) - now).collect();
        let expected: Vec<Duration> = (0..6).map(|i| Duration::from_millis(200 * i)).collect();
        assert_eq!(times, expected);
    }

    #[test]
    fn tokens_allow_one_minute_of_burst_then_refill_evenly() {
        let limiter = RateLimiter::new(RateLimits {
            requests_per_minute: None,
            tokens_per_minute: Some(6000),
        });
        let now = Instant::now();
        // 6,000 tokens go at once; the next 1,000 wait for 10 s of refill.
        for _ in 0..6 {
            assert_eq!(limiter.reserve(1000, now), now);
        }
        assert_eq!(limiter.reserve(1000, now) - now, Duration::from_secs(10));
    }

    #[test]
    fn a_pause_holds_back_every_request_after_it() {
        let limiter = RateLimiter::new(RateLimits {
            requests_per_minute: Some(600),
            tokens_per_minute: None,
        });
        limiter.pause(Duration::from_secs(5));
        let now = Instant::now();
        let first = limiter.reserve(1, now) - now;
        let second = limiter.reserve(1, now) - now;
        assert!(first >= Duration::from_millis(4900), "{first:?}");
        assert!(second >= first + Duration::from_millis(99), "{second:?}");
    }

    #[test]
    fn unlimited_until_told() {
        let limiter = RateLimiter::new(RateLimits::default());
        let now = Instant::now();
        for _ in 0..100 {
            assert_eq!(limiter.reserve(10_000, now), now);
        }
    }

    #[test]
    fn anthropic_headers_set_the_limit_and_a_used_up_allowance_pauses() {
        let now = SystemTime::now();
        let reset = humantime::format_rfc3339_seconds(now + Duration::from_secs(30)).to_string();
        let map = headers(&[
            ("anthropic-ratelimit-requests-limit", "50"),
            ("anthropic-ratelimit-requests-remaining", "0"),
            ("anthropic-ratelimit-requests-reset", &reset),
        ]);
        let read = Allowance::Requests
            .read(&map, now)
            .map(|r| (r.limit, r.remaining));
        assert_eq!(read, Some((Some(50), Some(0))));
        let limiter = RateLimiter::new(RateLimits::default());
        limiter.observe(&map);
        let at = Instant::now();
        let wait = limiter.reserve(1, at) - at;
        assert!(
            wait > Duration::from_secs(25) && wait <= Duration::from_secs(30),
            "{wait:?}"
        );
        assert_eq!(limiter.state.lock().limits().requests_per_minute, Some(50));
    }

    #[test]
    fn openai_headers_are_read_with_go_durations() {
        let map = headers(&[
            ("x-ratelimit-limit-tokens", "40000"),
            ("x-ratelimit-remaining-tokens", "18000"),
            ("x-ratelimit-reset-tokens", "6m0s"),
        ]);
        let read = Allowance::Tokens.read(&map, SystemTime::now());
        assert_eq!(
            read,
            Some(Read {
                limit: Some(40_000),
                remaining: Some(18_000),
                resets_in: Some(Duration::from_secs(360)),
            })
        );
        // A configured limit wins over a learned one.
        let limiter = RateLimiter::new(RateLimits {
            requests_per_minute: None,
            tokens_per_minute: Some(1000),
        });
        limiter.observe(&map);
        assert_eq!(limiter.state.lock().limits().tokens_per_minute, Some(1000));
    }

    #[test]
    fn go_durations() {
        for (text, secs) in [
            ("1s", 1.0),
            ("1.5s", 1.5),
            ("20ms", 0.02),
            ("1h2m3s", 3723.0),
            ("6m0s", 360.0),
        ] {
            assert_eq!(
                go_duration(text),
                Some(Duration::from_secs_f64(secs)),
                "{text}"
            );
        }
        for bad in ["", "s", "5", "5x", "-1s"] {
            assert_eq!(go_duration(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_same_endpoint_and_key_share_one_limiter() {
        let a = RateLimiter::shared("http://shared.test/v1", Some("k"), RateLimits::default());
        let b = RateLimiter::shared("http://shared.test/v1", Some("k"), RateLimits::default());
        let other = RateLimiter::shared("http://shared.test/v1", Some("j"), RateLimits::default());
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &other));
    }
}
