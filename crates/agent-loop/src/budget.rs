//! A run's spending limits (`--max-cost`, `--max-tokens`, `--max-wall`), kept *before* money
//! is spent: every request reserves its worst case (the prompt as sent, the whole output
//! allowance) and is refused when that could pass a limit, so a run never starts a request
//! it cannot pay for. What the response really used replaces the reservation. One budget
//! is shared by every context of the run (its model is wrapped in a [`BudgetedModel`]), so
//! children running in parallel cannot overspend it between them.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures::StreamExt;
use parking_lot::Mutex;

use wonopcode_protocol::context_path::ContextPath;
use wonopcode_protocol::model::{
    ChunkStream, LanguageModel, ModelError, ModelRequest, SharedModel, StreamChunk,
};
use wonopcode_protocol::model_source::{ModelSource, ProviderListing};
use wonopcode_protocol::usage::{ModelInfo, Usage};

use crate::assemble::price;
use crate::compaction::TokenTally;

/// The limits of a run; `None`: no limit of that kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct BudgetLimits {
    /// The most the run may cost, in micro-cents (1e-8 USD).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_cost_micro_cents: Option<u64>,
    /// The most tokens (prompt, cached, output) the run may use.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// How long after its start the run may still send a request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_wall: Option<Duration>,
}

impl BudgetLimits {
    /// Whether any limit is set.
    pub fn any(&self) -> bool {
        self.max_cost_micro_cents.is_some() || self.max_tokens.is_some() || self.max_wall.is_some()
    }
}

/// `dollars` as micro-cents (1e-8 USD), the unit of cost limits: more than 0 and at most a
/// billion dollars. The one rule for `--max-cost`, registry grants and spawn grants.
pub fn micro_cents(dollars: f64) -> Result<u64, String> {
    if !dollars.is_finite() || dollars <= 0.0 || dollars > 1e9 {
        return Err(format!("{dollars} must be more than 0 dollars"));
    }
    Ok((dollars * 1e8).round() as u64)
}

/// The tighter of two optional limits: where two settings limit the same thing (a spawn's
/// and its agent file's timeout, a module's grants and its own token limit), the smaller
/// holds, and either alone holds.
pub fn tighter<T: Ord>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// What the run spent and what requests in flight may still spend.
#[derive(Debug, Default)]
struct Ledger {
    cost: u64,
    tokens: u64,
    reserved_cost: u64,
    reserved_tokens: u64,
}

/// The budget of a run, shared by all its contexts; or of one context and its descendants
/// (its grants' `max_cost`, `max_tokens`), whose model is capped by its ancestors' too.
#[derive(Debug)]
pub struct RunBudget {
    limits: BudgetLimits,
    /// Whose limits they are, for messages: `None` for the run's (`--max-cost`), else
    /// e.g. "context 0.1 (module `coder`)".
    scope: Option<String>,
    started: Instant,
    ledger: Mutex<Ledger>,
    /// Each context's history estimate, kept as it grows.
    tallies: Mutex<HashMap<ContextPath, TokenTally>>,
}

/// A request's worst case, held against the budget while it streams.
#[derive(Debug)]
pub struct Reservation {
    budget: Arc<RunBudget>,
    cost: u64,
    tokens: u64,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let mut ledger = self.budget.ledger.lock();
        ledger.reserved_cost = ledger.reserved_cost.saturating_sub(self.cost);
        ledger.reserved_tokens = ledger.reserved_tokens.saturating_sub(self.tokens);
    }
}

/// Dollars with four decimals, as a limit is written.
fn dollars(micro_cents: u64) -> String {
    format!("${:.4}", micro_cents as f64 / 1e8)
}

impl RunBudget {
    /// A budget with these limits, its wall clock started now.
    pub fn new(limits: BudgetLimits) -> Arc<Self> {
        Arc::new(Self {
            limits,
            scope: None,
            started: Instant::now(),
            ledger: Mutex::new(Ledger::default()),
            tallies: Mutex::default(),
        })
    }

    /// A budget of `scope` (one context and its descendants), named so in its messages.
    pub fn scoped(limits: BudgetLimits, scope: String) -> Arc<Self> {
        Arc::new(Self {
            limits,
            scope: Some(scope),
            started: Instant::now(),
            ledger: Mutex::new(Ledger::default()),
            tallies: Mutex::default(),
        })
    }

    /// How a limit is named in messages: the run's flag, or the grant of a scope.
    fn limit_name(&self, flag: &str) -> String {
        match &self.scope {
            None => format!("--{flag}"),
            Some(scope) => format!("{} of {scope}", flag.replace('-', "_")),
        }
    }

    /// Refuses a model whose prices are unknown under a cost limit, saying how to fix it.
    pub fn check_model(&self, model: &ModelInfo) -> Result<(), String> {
        if self.limits.max_cost_micro_cents.is_some() && model.pricing.is_none() {
            return Err(format!(
                "{} needs the prices of `{}` (provider `{}`), which wonopcode does not know: add them under `providers.{}.models` in the config file (`pricing`), or limit tokens with {} instead",
                self.limit_name("max-cost"),
                model.id,
                model.provider,
                model.provider,
                self.limit_name("max-tokens")
            ));
        }
        Ok(())
    }

    /// Reserves `request`'s worst case on `model`, or says which limit it could pass.
    pub fn reserve(
        self: &Arc<Self>,
        model: &ModelInfo,
        request: &ModelRequest,
    ) -> Result<Reservation, ModelError> {
        // A model without prices would reserve nothing against a cost limit.
        self.check_model(model)
            .map_err(ModelError::BudgetExceeded)?;
        if let Some(wall) = self.limits.max_wall
            && self.started.elapsed() >= wall
        {
            return Err(ModelError::BudgetExceeded(format!(
                "--max-wall {}s: the run has used its time",
                wall.as_secs()
            )));
        }
        let history = self
            .tallies
            .lock()
            .entry(request.context.clone())
            .or_default()
            .estimate(request.system.as_deref(), &request.messages);
        let worst = worst_case(model, request, history);
        let cost = model.pricing.map_or(0, |p| p.cost(&worst));
        let tokens = worst.total_tokens();
        let mut ledger = self.ledger.lock();
        if let Some(max) = self.limits.max_cost_micro_cents {
            let committed = ledger.cost + ledger.reserved_cost;
            if committed.saturating_add(cost) > max {
                return Err(ModelError::BudgetExceeded(format!(
                    "{} {}: the next request could cost up to {} and {} is spent or reserved",
                    self.limit_name("max-cost"),
                    dollars(max),
                    dollars(cost),
                    dollars(committed)
                )));
            }
        }
        if let Some(max) = self.limits.max_tokens {
            let committed = ledger.tokens + ledger.reserved_tokens;
            if committed.saturating_add(tokens) > max {
                return Err(ModelError::BudgetExceeded(format!(
                    "{} {max}: the next request could use up to {tokens} tokens and {committed} are spent or reserved",
                    self.limit_name("max-tokens")
                )));
            }
        }
        ledger.reserved_cost += cost;
        ledger.reserved_tokens += tokens;
        Ok(Reservation {
            budget: self.clone(),
            cost,
            tokens,
        })
    }

    /// Adds what a response really used (priced).
    pub fn charge(&self, usage: &Usage) {
        let mut ledger = self.ledger.lock();
        ledger.cost += usage.cost_micro_cents.unwrap_or(0);
        ledger.tokens += usage.total_tokens();
    }
}

/// The most `request` can use on `model`: its prompt (the history's estimate of one token
/// per four bytes, raised to one per three, more than real text and code take; the tool
/// schemas counted the same way), all of it at the dearest of the input and cache-write
/// prices, and the whole output allowance.
/// `history` is the estimate of the request's system prompt and messages
/// ([`crate::compaction::estimate_tokens`], or a [`TokenTally`] of the context).
pub fn worst_case(model: &ModelInfo, request: &ModelRequest, history: usize) -> Usage {
    let schemas: usize = request
        .tools
        .iter()
        .map(|tool| serde_json::to_string(tool).map_or(0, |t| t.len()))
        .sum();
    let prompt = u64::try_from((history * 4).div_ceil(3) + schemas.div_ceil(3)).unwrap_or(u64::MAX);
    let output = request
        .options
        .max_tokens
        .map_or(model.max_output, u64::from);
    let Some(pricing) = model.pricing else {
        return Usage {
            input_tokens: prompt,
            output_tokens: output,
            ..Usage::default()
        };
    };
    // Whichever way the prompt is billed (sent whole, written for five minutes or, where
    // writes are billed at all, for an hour: a `cache.ttl: 1h` prefix), the dearest is
    // reserved.
    let writes_billed = pricing.cache_write_per_mtok > pricing.input_per_mtok;
    let hour = if writes_billed {
        pricing.cache_write_1h_price()
    } else {
        0
    };
    let dearest = pricing
        .input_per_mtok
        .max(pricing.cache_write_per_mtok)
        .max(hour);
    let mut worst = Usage {
        output_tokens: output,
        ..Usage::default()
    };
    if dearest == pricing.input_per_mtok {
        worst.input_tokens = prompt;
    } else {
        worst.cache_write_tokens = prompt;
        if dearest == hour && hour > pricing.cache_write_per_mtok {
            worst.cache_write_1h_tokens = prompt;
        }
    }
    worst
}

/// What a model's requests draw on: a run's [`RunBudget`], or a context's token budget
/// (`wonopcode_contexts::TokenBudget`). One [`BudgetedModel`] keeps any of them, so the
/// rule of a request — asked of the budget before it is sent, held while it streams, charged
/// with what it really used — is written once.
pub trait Budget: Send + Sync + 'static {
    /// Before `request` goes to `model`: `Err` refuses it (the limit it would pass);
    /// `Ok` holds what it reserved until its stream ends.
    fn reserve(
        self: &Arc<Self>,
        model: &ModelInfo,
        request: &ModelRequest,
    ) -> Result<Option<Reservation>, ModelError>;

    /// What a response really used, priced.
    fn charge(&self, usage: &Usage);
}

impl Budget for RunBudget {
    fn reserve(
        self: &Arc<Self>,
        model: &ModelInfo,
        request: &ModelRequest,
    ) -> Result<Option<Reservation>, ModelError> {
        RunBudget::reserve(self, model, request).map(Some)
    }

    fn charge(&self, usage: &Usage) {
        RunBudget::charge(self, usage);
    }
}

/// A model whose every request is reserved against a budget first, and charged with what it
/// really used.
pub struct BudgetedModel<B: Budget> {
    inner: SharedModel,
    budget: Arc<B>,
}

impl<B: Budget> BudgetedModel<B> {
    /// `inner` drawing on `budget`.
    pub fn wrap(inner: SharedModel, budget: Arc<B>) -> SharedModel {
        Arc::new(Self { inner, budget })
    }
}

#[async_trait]
impl<B: Budget> LanguageModel for BudgetedModel<B> {
    fn info(&self) -> &ModelInfo {
        self.inner.info()
    }

    fn skip_response(&self, context: &ContextPath) {
        self.inner.skip_response(context);
    }

    fn context_began(&self, context: &ContextPath, module: &str, role: Option<&str>) {
        self.inner.context_began(context, module, role);
    }

    async fn stream(&self, request: ModelRequest) -> Result<ChunkStream, ModelError> {
        let reservation = self.budget.reserve(self.inner.info(), &request)?;
        let stream = self.inner.stream(request).await?;
        let (budget, model) = (self.budget.clone(), self.inner.clone());
        // The reservation lives as long as the stream: released when it is dropped.
        Ok(Box::pin(stream.inspect(move |chunk| {
            let _held = &reservation;
            if let StreamChunk::Usage { usage } = chunk {
                let mut usage = *usage;
                price(&model, &mut usage);
                budget.charge(&usage);
            }
        })))
    }
}

/// A model source whose every model is capped by the same budget (a guest that switches
/// model still spends the run's money).
pub struct CappedSource {
    inner: Arc<dyn ModelSource>,
    budget: Arc<RunBudget>,
}

impl CappedSource {
    /// `inner` under `budget`.
    pub fn wrap(inner: Arc<dyn ModelSource>, budget: Arc<RunBudget>) -> Arc<dyn ModelSource> {
        Arc::new(Self { inner, budget })
    }
}

#[async_trait]
impl ModelSource for CappedSource {
    fn providers(&self) -> Vec<ProviderListing> {
        self.inner.providers()
    }

    async fn open(&self, provider: &str, model: Option<&str>) -> Result<SharedModel, ModelError> {
        let opened = self.inner.open(provider, model).await?;
        self.budget
            .check_model(opened.info())
            .map_err(ModelError::BudgetExceeded)?;
        Ok(BudgetedModel::wrap(opened, self.budget.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wonopcode_protocol::usage::Pricing;

    fn model() -> ModelInfo {
        ModelInfo {
            id: "m".into(),
            provider: "p".into(),
            context_window: 100_000,
            max_output: 1_000,
            pricing: Some(Pricing {
                input_per_mtok: 100_000_000,
                output_per_mtok: 1_000_000_000,
                ..Pricing::default()
            }),
            capabilities: Default::default(),
        }
    }

    fn request() -> ModelRequest {
        ModelRequest {
            context: Default::default(),
            system: Some("x".repeat(3_000)),
            messages: Vec::new().into(),
            tools: Vec::new(),
            options: Default::default(),
        }
    }

    #[test]
    fn reservations_in_flight_count_and_are_released() {
        // Worst case: 1,000 prompt tokens at $1/M and 1,000 output at $10/M: $0.011.
        let budget = RunBudget::new(BudgetLimits {
            max_cost_micro_cents: Some(3_000_000),
            ..BudgetLimits::default()
        });
        let first = budget.reserve(&model(), &request()).unwrap();
        let second = budget.reserve(&model(), &request()).unwrap();
        let third = budget.reserve(&model(), &request());
        assert!(
            matches!(third, Err(ModelError::BudgetExceeded(m)) if m.starts_with("--max-cost $0.0300"))
        );
        drop(first);
        let again = budget.reserve(&model(), &request()).unwrap();
        budget.charge(&Usage {
            cost_micro_cents: Some(2_500_000),
            ..Usage::default()
        });
        drop((second, again));
        assert!(
            budget.reserve(&model(), &request()).is_err(),
            "spent $0.025 + $0.011 > $0.03"
        );
    }

    #[test]
    fn the_worst_case_prices_the_prompt_at_the_dearest_way_it_can_be_billed() {
        let priced = |write: u64, hour: u64| ModelInfo {
            pricing: Some(Pricing {
                input_per_mtok: 100_000_000,
                cache_write_per_mtok: write,
                cache_write_1h_per_mtok: hour,
                ..Pricing::default()
            }),
            ..model()
        };
        let prompt_cost = |m: &ModelInfo| {
            let worst = worst_case(m, &request(), 3_000);
            let p = m.pricing.unwrap();
            p.cost(&Usage {
                output_tokens: 0,
                ..worst
            })
        };
        // No write premium (OpenAI): the input price; nothing is written for an hour.
        assert_eq!(prompt_cost(&priced(0, 0)), 4_000 * 100);
        // Anthropic: an hour-long write, twice the input price, is the dearest.
        assert_eq!(prompt_cost(&priced(125_000_000, 0)), 4_000 * 200);
        // A catalog price for it is used as given.
        assert_eq!(prompt_cost(&priced(125_000_000, 110_000_000)), 4_000 * 125);
    }

    #[test]
    fn a_context_budget_names_its_scope() {
        let budget = RunBudget::scoped(
            BudgetLimits {
                max_cost_micro_cents: Some(1_000_000),
                ..BudgetLimits::default()
            },
            "context 0.1 (module `coder`)".into(),
        );
        let refused = budget.reserve(&model(), &request()).unwrap_err();
        assert!(
            refused
                .to_string()
                .contains("max_cost of context 0.1 (module `coder`) $0.0100"),
            "{refused}"
        );
    }

    #[test]
    fn a_cost_limit_needs_prices_and_tokens_and_time_are_limits_too() {
        let budget = RunBudget::new(BudgetLimits {
            max_cost_micro_cents: Some(1),
            ..BudgetLimits::default()
        });
        let unpriced = ModelInfo {
            pricing: None,
            ..model()
        };
        assert!(
            budget
                .check_model(&unpriced)
                .unwrap_err()
                .contains("providers.p.models")
        );
        let tokens = RunBudget::new(BudgetLimits {
            max_tokens: Some(1_999),
            ..BudgetLimits::default()
        });
        assert!(tokens.reserve(&model(), &request()).is_err());
        let time = RunBudget::new(BudgetLimits {
            max_wall: Some(Duration::ZERO),
            ..BudgetLimits::default()
        });
        assert!(
            matches!(time.reserve(&model(), &request()), Err(ModelError::BudgetExceeded(m)) if m.contains("--max-wall"))
        );
    }
}
