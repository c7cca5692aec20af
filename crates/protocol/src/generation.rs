//! Generation settings a person chooses for a run: how much the model thinks, a cap on its
//! output, a temperature (`--thinking`, `--max-output-tokens`, `--temperature`; the config
//! file's `thinking`, `max_output_tokens` and `temperature`; an agent file's `thinking`,
//! `max-output-tokens` and `temperature`; Claude Code's `MAX_THINKING_TOKENS`). Checked
//! against the model before any request: a setting it cannot take is one line naming the
//! model and what it accepts.

use std::str::FromStr;

use crate::{ModelInfo, RequestOptions};
use serde::{Deserialize, Serialize};

/// The least thinking budget the Messages API takes.
const MIN_MESSAGES_BUDGET: u32 = 1024;

/// How much a model thinks before it answers: a level, or a budget in tokens. Each API
/// gets it in its own terms: Anthropic's budget, OpenAI's `reasoning.effort` (up to 2,048
/// tokens `low`, up to 16,384 `medium`, above `high`), Gemini's `thinkingBudget`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Thinking {
    /// No thinking asked for.
    Off,
    /// 2,048 tokens.
    Low,
    /// 8,192 tokens.
    Medium,
    /// 24,576 tokens.
    High,
    /// This many tokens.
    Tokens(u32),
}

impl Thinking {
    /// The budget in tokens; `None` for `off`.
    pub fn budget(self) -> Option<u32> {
        match self {
            Self::Off => None,
            Self::Low => Some(2_048),
            Self::Medium => Some(8_192),
            Self::High => Some(24_576),
            Self::Tokens(n) => Some(n),
        }
    }
}

impl Thinking {
    /// The setting a budget stands for: its level when it is one's, else the tokens.
    pub fn of_budget(budget: Option<u32>) -> Self {
        [Self::Low, Self::Medium, Self::High]
            .into_iter()
            .find(|level| level.budget() == budget)
            .unwrap_or(match budget {
                None => Self::Off,
                Some(n) => Self::Tokens(n),
            })
    }
}

impl FromStr for Thinking {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim().to_ascii_lowercase().as_str() {
            "off" | "none" | "0" => Ok(Self::Off),
            "low" => Ok(Self::Low),
            "medium" => Ok(Self::Medium),
            "high" => Ok(Self::High),
            other => other.parse::<u32>().map(Self::Tokens).map_err(|_| {
                format!("`{text}` is not a thinking setting: off, low, medium, high or a number of tokens")
            }),
        }
    }
}

impl Serialize for Thinking {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Off => serializer.serialize_str("off"),
            Self::Low => serializer.serialize_str("low"),
            Self::Medium => serializer.serialize_str("medium"),
            Self::High => serializer.serialize_str("high"),
            Self::Tokens(n) => serializer.serialize_u32(*n),
        }
    }
}

impl<'de> Deserialize<'de> for Thinking {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Tokens(u32),
            Text(String),
        }
        match Raw::deserialize(deserializer)? {
            Raw::Tokens(n) => Ok(Self::Tokens(n)),
            Raw::Text(text) => text.parse().map_err(serde::de::Error::custom),
        }
    }
}

/// A run's generation settings; a field left `None` is the model's default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Generation {
    /// How much the model thinks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking: Option<Thinking>,
    /// The most tokens one response may have.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
    /// Sampling temperature, 0 to 2.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
}

// Settings are compared and hashed as written: a temperature by its bits.
impl Eq for Generation {}

impl std::hash::Hash for Generation {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.thinking.hash(state);
        self.max_output_tokens.hash(state);
        self.temperature.map(f32::to_bits).hash(state);
    }
}

impl Generation {
    /// Whether it sets nothing.
    pub fn is_unset(&self) -> bool {
        *self == Self::default()
    }

    /// The settings request options were made from (a parent context's, which a child
    /// started from an agent file lays its own over).
    pub fn of_options(options: &RequestOptions) -> Generation {
        Generation {
            thinking: options.thinking_budget.map(Thinking::Tokens),
            max_output_tokens: options.max_tokens,
            temperature: options.temperature,
        }
    }

    /// `self`, with what it leaves unset taken from `under`.
    pub fn over(self, under: Generation) -> Generation {
        Generation {
            thinking: self.thinking.or(under.thinking),
            max_output_tokens: self.max_output_tokens.or(under.max_output_tokens),
            temperature: self.temperature.or(under.temperature),
        }
    }

    /// Claude Code's `MAX_THINKING_TOKENS`, read as it reads it (a number of tokens; `0` is
    /// off); anything else in it is one line.
    pub fn from_env(value: Option<&str>) -> Result<Generation, String> {
        let Some(value) = value.filter(|v| !v.trim().is_empty()) else {
            return Ok(Generation::default());
        };
        let tokens: u32 = value
            .trim()
            .parse()
            .map_err(|_| format!("MAX_THINKING_TOKENS=`{value}` is not a number of tokens"))?;
        Ok(Generation {
            thinking: Some(if tokens == 0 {
                Thinking::Off
            } else {
                Thinking::Tokens(tokens)
            }),
            ..Generation::default()
        })
    }

    /// The request options these settings give `model`, or one line saying which setting it
    /// cannot take and what it accepts.
    pub fn request_options(&self, model: &ModelInfo) -> Result<RequestOptions, String> {
        let name = format!("model `{}` ({})", model.id, model.provider);
        if let Some(cap) = self.max_output_tokens
            && u64::from(cap) > model.max_output
        {
            return Err(format!(
                "--max-output-tokens {cap}: {name} writes at most {} tokens a response",
                model.max_output
            ));
        }
        if let Some(t) = self.temperature
            && !(0.0..=2.0).contains(&t)
        {
            return Err(format!("--temperature {t}: a temperature is from 0 to 2"));
        }
        let budget = self.thinking.and_then(Thinking::budget);
        if let Some(budget) = budget {
            if !model.capabilities.thinking {
                return Err(format!(
                    "--thinking: {name} does not think, by its catalog entry; if it does, set `thinking: true` under providers.{}.models.{}",
                    model.provider, model.id
                ));
            }
            // The Messages API (thinking that must go back signed) has its own bounds.
            if model.capabilities.thinking_must_be_returned {
                let cap = self.max_output_tokens.map_or(model.max_output, u64::from);
                if budget < MIN_MESSAGES_BUDGET || u64::from(budget) >= cap {
                    return Err(format!(
                        "--thinking {budget}: {name} takes from {MIN_MESSAGES_BUDGET} thinking tokens to fewer than its output cap ({cap})"
                    ));
                }
                if self.temperature.is_some() {
                    return Err(format!(
                        "--temperature: {name} takes no temperature while it thinks; leave one of them out"
                    ));
                }
            }
        }
        Ok(RequestOptions {
            max_tokens: self.max_output_tokens,
            temperature: self.temperature,
            thinking_budget: budget,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::usage::ModelCapabilities;

    fn model(thinking: bool, messages: bool) -> ModelInfo {
        ModelInfo {
            id: "m".into(),
            provider: "p".into(),
            context_window: 200_000,
            max_output: 64_000,
            pricing: None,
            capabilities: ModelCapabilities {
                thinking,
                thinking_must_be_returned: thinking && messages,
                ..ModelCapabilities::default()
            },
        }
    }

    #[test]
    fn levels_and_numbers_parse_and_anything_else_says_what_is_accepted() {
        assert_eq!("high".parse(), Ok(Thinking::High));
        assert_eq!("Off".parse(), Ok(Thinking::Off));
        assert_eq!("5000".parse(), Ok(Thinking::Tokens(5000)));
        let wrong = "lots".parse::<Thinking>().unwrap_err();
        assert!(wrong.contains("off, low, medium, high"), "{wrong}");
        assert_eq!(
            Generation::from_env(Some("0")).unwrap().thinking,
            Some(Thinking::Off)
        );
        assert!(Generation::from_env(Some("many")).is_err());
    }

    #[test]
    fn settings_a_model_cannot_take_are_refused_before_any_request() {
        let high = Generation {
            thinking: Some(Thinking::High),
            ..Generation::default()
        };
        let options = high.request_options(&model(true, true)).unwrap();
        assert_eq!(options.thinking_budget, Some(24_576));
        let refused = high.request_options(&model(false, true)).unwrap_err();
        assert!(refused.contains("does not think") && refused.contains("providers.p.models.m"));
        let tiny = Generation {
            thinking: Some(Thinking::Tokens(100)),
            ..Generation::default()
        };
        assert!(tiny.request_options(&model(true, true)).is_err());
        assert!(
            tiny.request_options(&model(true, false)).is_ok(),
            "OpenAI's effort"
        );
        let over_cap = Generation {
            max_output_tokens: Some(100_000),
            ..Generation::default()
        };
        assert!(
            over_cap
                .request_options(&model(false, false))
                .unwrap_err()
                .contains("at most 64000")
        );
        let hot = Generation {
            thinking: Some(Thinking::Low),
            temperature: Some(0.5),
            ..Generation::default()
        };
        assert!(hot.request_options(&model(true, true)).is_err());
        let flag = Generation {
            temperature: Some(0.2),
            ..Generation::default()
        };
        assert_eq!(flag.over(high).thinking, Some(Thinking::High));
        assert_eq!(flag.over(high).temperature, Some(0.2));
    }
}
