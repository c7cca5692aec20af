//! Token usage, cost and model metadata.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Tokens consumed by one or more model requests, and what they cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Usage {
    /// Prompt tokens billed at the normal input rate.
    #[serde(default)]
    pub input_tokens: u64,
    /// Generated tokens (including reasoning when the provider counts it there).
    #[serde(default)]
    pub output_tokens: u64,
    /// Prompt tokens read from the provider's cache.
    #[serde(default)]
    pub cache_read_tokens: u64,
    /// Prompt tokens written to the provider's cache.
    #[serde(default)]
    pub cache_write_tokens: u64,
    /// Of `cache_write_tokens`, those written to be kept an hour (Anthropic's `1h` TTL),
    /// which cost more than the 5-minute writes.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_1h_tokens: u64,
    /// Reasoning tokens, when the provider reports them separately.
    #[serde(default)]
    pub reasoning_tokens: u64,
    /// Cost in micro-cents (1e-8 USD), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_micro_cents: Option<u64>,
    /// Web searches made (`websearch` calls that ran), which a search engine bills apart
    /// from tokens.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub web_search_count: u64,
}

impl Usage {
    /// Adds another usage to this one. A known cost plus an unknown one stays known for the
    /// part that is known; the sum is unknown only when both are.
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
        self.cache_write_1h_tokens += other.cache_write_1h_tokens;
        self.reasoning_tokens += other.reasoning_tokens;
        self.web_search_count += other.web_search_count;
        self.cost_micro_cents = match (self.cost_micro_cents, other.cost_micro_cents) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        };
    }

    /// What was spent since `earlier` (a reading of the same running total).
    pub fn since(&self, earlier: &Usage) -> Usage {
        Usage {
            input_tokens: self.input_tokens.saturating_sub(earlier.input_tokens),
            output_tokens: self.output_tokens.saturating_sub(earlier.output_tokens),
            cache_read_tokens: self
                .cache_read_tokens
                .saturating_sub(earlier.cache_read_tokens),
            cache_write_tokens: self
                .cache_write_tokens
                .saturating_sub(earlier.cache_write_tokens),
            cache_write_1h_tokens: self
                .cache_write_1h_tokens
                .saturating_sub(earlier.cache_write_1h_tokens),
            reasoning_tokens: self
                .reasoning_tokens
                .saturating_sub(earlier.reasoning_tokens),
            cost_micro_cents: self
                .cost_micro_cents
                .map(|now| now.saturating_sub(earlier.cost_micro_cents.unwrap_or(0))),
            web_search_count: self
                .web_search_count
                .saturating_sub(earlier.web_search_count),
        }
    }

    /// The share of the prompt tokens read from the provider's cache (0 to 1); `None`
    /// when nothing was sent.
    pub fn cache_hit_ratio(&self) -> Option<f64> {
        let prompt = self.input_tokens + self.cache_read_tokens + self.cache_write_tokens;
        (prompt > 0).then(|| self.cache_read_tokens as f64 / prompt as f64)
    }

    /// All tokens counted, of every kind.
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_write_tokens
    }
}

/// Prices per million tokens, in micro-cents (so $3.00 / Mtok is 300_000_000).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Pricing {
    /// Input price per million tokens.
    pub input_per_mtok: u64,
    /// Output price per million tokens.
    pub output_per_mtok: u64,
    /// Cache-read price per million tokens.
    #[serde(default)]
    pub cache_read_per_mtok: u64,
    /// Cache-write price per million tokens (Anthropic: a 5-minute write, 1.25× input).
    #[serde(default)]
    pub cache_write_per_mtok: u64,
    /// An hour-long cache write's price per million tokens; 0: twice the input price, as
    /// Anthropic bills it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_1h_per_mtok: u64,
}

/// Whether a count is zero (left out of what is written).
fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Pricing {
    /// The cost of a usage at these prices, in micro-cents.
    pub fn cost(&self, usage: &Usage) -> u64 {
        let part = |tokens: u64, price: u64| u128::from(tokens) * u128::from(price) / 1_000_000;
        let hour = usage.cache_write_1h_tokens.min(usage.cache_write_tokens);
        let total = part(usage.input_tokens, self.input_per_mtok)
            + part(usage.output_tokens, self.output_per_mtok)
            + part(usage.cache_read_tokens, self.cache_read_per_mtok)
            + part(usage.cache_write_tokens - hour, self.cache_write_per_mtok)
            + part(hour, self.cache_write_1h_price());
        u64::try_from(total).unwrap_or(u64::MAX)
    }

    /// An hour-long cache write's price per million tokens: the catalog's, else twice the
    /// input price, as Anthropic bills it.
    pub fn cache_write_1h_price(&self) -> u64 {
        match self.cache_write_1h_per_mtok {
            0 => self.input_per_mtok.saturating_mul(2),
            price => price,
        }
    }
}

/// What a model can do, as far as the loop needs to know.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ModelCapabilities {
    /// Accepts tool schemas and emits tool calls.
    pub tools: bool,
    /// Emits extended thinking.
    pub thinking: bool,
    /// Requires thinking blocks (with signatures) to be sent back on later requests.
    pub thinking_must_be_returned: bool,
    /// Accepts images.
    pub vision: bool,
}

impl Default for ModelCapabilities {
    fn default() -> Self {
        Self {
            tools: true,
            thinking: false,
            thinking_must_be_returned: false,
            vision: false,
        }
    }
}

/// Metadata about a model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ModelInfo {
    /// Provider's model id.
    pub id: String,
    /// Provider id this model belongs to.
    pub provider: String,
    /// Context window in tokens.
    pub context_window: u64,
    /// Maximum output tokens per request.
    pub max_output: u64,
    /// Prices, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pricing: Option<Pricing>,
    /// Capabilities.
    #[serde(default)]
    pub capabilities: ModelCapabilities,
}

impl ModelInfo {
    /// Whether `other` names the same model of the same provider (whatever the metadata).
    pub fn same_model(&self, other: &ModelInfo) -> bool {
        self.id == other.id && self.provider == other.provider
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_is_computed_per_million() {
        let pricing = Pricing {
            input_per_mtok: 300_000_000,
            output_per_mtok: 1_500_000_000,
            ..Pricing::default()
        };
        let usage = Usage {
            input_tokens: 1000,
            output_tokens: 100,
            ..Usage::default()
        };
        // $0.003 + $0.0015 = $0.0045 = 450_000 micro-cents
        assert_eq!(pricing.cost(&usage), 450_000);
    }

    #[test]
    fn an_hour_long_cache_write_costs_twice_the_input_price_unless_the_catalog_says() {
        let mut pricing = Pricing {
            input_per_mtok: 300_000_000,
            cache_write_per_mtok: 375_000_000,
            ..Pricing::default()
        };
        let usage = Usage {
            cache_write_tokens: 3_000_000,
            cache_write_1h_tokens: 1_000_000,
            ..Usage::default()
        };
        // 2M five-minute writes at $3.75 and 1M hour-long ones at $6.00.
        assert_eq!(pricing.cost(&usage), 750_000_000 + 600_000_000);
        pricing.cache_write_1h_per_mtok = 500_000_000;
        assert_eq!(pricing.cost(&usage), 750_000_000 + 500_000_000);
    }

    #[test]
    fn add_keeps_known_cost() {
        let mut a = Usage {
            input_tokens: 1,
            cost_micro_cents: Some(5),
            ..Usage::default()
        };
        a.add(&Usage {
            output_tokens: 2,
            ..Usage::default()
        });
        assert_eq!(a.cost_micro_cents, Some(5));
        assert_eq!(a.total_tokens(), 3);
    }
}
