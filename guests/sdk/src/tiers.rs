//! Model tiers: which model of the run's provider suits a kind of work. Reading and
//! summing up (research, a plan) does well on a fast, cheap model; changing code wants a
//! strong one; finding why a test fails, or judging a change, the deepest the provider has.
//! A guest asks for a tier and gets a model only where the host can open it (the host lists
//! it under `providers.list-providers`: a provider with a key, or a transcript that has it),
//! so a tier never names a model the run cannot use; `None` means "keep the model you have".
//!
//! A person's choice comes first: [`Route::parse`] reads a `provider/model` (or a bare model
//! of the current provider) from the config file's `guest:` keys, and a route the person
//! named is used as given — opened, or the spawn fails saying why — never swapped for a tier.

use crate::bindings::wonopcode::agent_loop::providers;

/// How much model a kind of work needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    /// Fast and cheap: reading, searching, summing up, planning.
    Fast,
    /// Strong: writing and changing code.
    Strong,
    /// The deepest: debugging a failure, judging a change.
    Deep,
}

/// Each known provider's model of each tier (fast, strong, deep). A provider not listed here
/// has no tiers: its contexts keep the run's model unless the config names one.
const TIERS: &[(&str, [&str; 3])] = &[
    (
        "anthropic",
        ["claude-haiku-4-5", "claude-sonnet-4-5", "claude-opus-4-5"],
    ),
    ("openai", ["gpt-5-mini", "gpt-5", "gpt-5"]),
    (
        "deepseek",
        ["deepseek-chat", "deepseek-chat", "deepseek-reasoner"],
    ),
];

/// A provider and one of its models.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The provider's id (`anthropic`).
    pub provider: String,
    /// The model's id (`claude-haiku-4-5`).
    pub model: String,
}

impl Route {
    /// `provider/model`, or a bare model of the current provider. The part before the first
    /// `/` is a provider only when the host knows a provider by that name, so OpenRouter's
    /// `anthropic/claude-sonnet-4.5` stays one model id of the current provider when the
    /// run is on OpenRouter. `None` for an empty text or when no provider is current.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        if text.is_empty() {
            return None;
        }
        if let Some((provider, model)) = text.split_once('/') {
            let known = providers::list_providers().iter().any(|p| p.id == provider);
            if known && !model.is_empty() {
                return Some(Self {
                    provider: provider.to_owned(),
                    model: model.to_owned(),
                });
            }
        }
        Some(Self {
            provider: providers::get_current_provider()?,
            model: text.to_owned(),
        })
    }

    /// The context's current model.
    pub fn current() -> Option<Self> {
        Some(Self {
            provider: providers::get_current_provider()?,
            model: providers::get_current_model()?,
        })
    }

    /// The model of `tier` for the current provider, when that provider has tiers and the
    /// host can open the model.
    pub fn of_tier(tier: Tier) -> Option<Self> {
        let provider = providers::get_current_provider()?;
        let models = TIERS.iter().find(|(id, _)| *id == provider)?.1;
        let model = models[tier as usize];
        let openable = providers::list_providers()
            .iter()
            .any(|p| p.id == provider && p.models.iter().any(|m| m == model));
        openable.then(|| Self {
            provider,
            model: model.to_owned(),
        })
    }

    /// Makes this the context's model (`providers.set-provider`, then `set-model`).
    pub fn select(&self) -> Result<(), String> {
        if providers::get_current_provider().as_deref() != Some(self.provider.as_str()) {
            providers::set_provider(&self.provider)?;
        }
        providers::set_model(&self.model)
    }
}

impl std::fmt::Display for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.provider, self.model)
    }
}
