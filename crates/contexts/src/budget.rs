//! `max-tokens` of a child context: a [`Budget`] that counts the tokens of every response
//! of the models drawing on it (`BudgetedModel`, the run's wrapper too) and refuses new
//! requests once it is spent. A grandchild's
//! model wraps its parent's, so a descendant's tokens count against every ancestor's budget.
//! A context granted a cost limit (`max_cost` of its module, `max-cost-usd` of its spawn)
//! also reserves each request's worst case against a [`RunBudget`] of its own before the
//! request goes to its ancestors' budgets, so it is clamped to what they have left.

use std::sync::Arc;

use parking_lot::Mutex;

use wonopcode_agent_loop::budget::{Budget, BudgetedModel, Reservation, RunBudget};
use wonopcode_protocol::{
    ModelError, ModelInfo, ModelRequest, ModelSource, SharedModel, SingleModel, Usage,
};

/// Tokens (input, cached input and output) a context and its descendants may spend, and what
/// they spent: the context's rolled-up usage, priced, whatever became of its run.
#[derive(Debug, Default)]
pub struct TokenBudget {
    limit: Option<u64>,
    used: Mutex<Usage>,
    /// The context's granted cost limit, kept before each request.
    cap: Option<Arc<RunBudget>>,
}

impl TokenBudget {
    /// A budget of `limit` tokens whose requests are also reserved against `cap` first.
    pub fn new(limit: Option<u64>, cap: Option<Arc<RunBudget>>) -> Arc<Self> {
        Arc::new(Self {
            limit,
            used: Mutex::new(Usage::default()),
            cap,
        })
    }

    fn spend(&self, usage: &Usage) {
        self.used.lock().add(usage);
    }

    /// Everything spent so far.
    pub fn usage(&self) -> Usage {
        *self.used.lock()
    }

    /// Whether the limit is reached.
    pub fn exhausted(&self) -> bool {
        let Some(limit) = self.limit else {
            return false;
        };
        let used = self.usage();
        used.input_tokens + used.cache_read_tokens + used.cache_write_tokens + used.output_tokens
            >= limit
    }
}

/// `model` drawing on every budget of a context's lineage (ancestors' first): what a model a
/// context opens itself must be wrapped in, as its given model already is.
pub fn draw_on(model: SharedModel, budgets: &[Arc<TokenBudget>]) -> SharedModel {
    budgets.iter().fold(model, |inner, budget| {
        BudgetedModel::wrap(inner, budget.clone())
    })
}

/// Opens a model for a context: from the host's source, drawing on the context's token
/// budgets; without a source, only the context's current model can be "opened".
pub async fn open_model(
    source: Option<&dyn ModelSource>,
    current: &SharedModel,
    budgets: &[Arc<TokenBudget>],
    provider: &str,
    model: Option<&str>,
) -> Result<SharedModel, String> {
    let opened = match source {
        Some(source) => source
            .open(provider, model)
            .await
            .map(|m| draw_on(m, budgets)),
        None => SingleModel(current.clone()).open(provider, model).await,
    };
    opened.map_err(|e| e.to_string())
}

impl Budget for TokenBudget {
    /// Refused once the limit is reached; a context granted a cost limit reserves the
    /// request's worst case against it too.
    fn reserve(
        self: &Arc<Self>,
        model: &ModelInfo,
        request: &ModelRequest,
    ) -> Result<Option<Reservation>, ModelError> {
        if self.exhausted() {
            return Err(ModelError::Other(format!(
                "the context's limit of {} tokens is reached",
                self.limit.unwrap_or(0)
            )));
        }
        match &self.cap {
            Some(cap) => cap.reserve(model, request).map(Some),
            None => Ok(None),
        }
    }

    fn charge(&self, usage: &Usage) {
        self.spend(usage);
        if let Some(cap) = &self.cap {
            cap.charge(usage);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_without_a_limit_is_never_spent() {
        let tokens = |input_tokens, output_tokens| Usage {
            input_tokens,
            output_tokens,
            ..Usage::default()
        };
        let budget = TokenBudget::new(None, None);
        budget.spend(&tokens(u64::MAX / 4, 1));
        assert!(!budget.exhausted());
        let budget = TokenBudget::new(Some(10), None);
        budget.spend(&tokens(5, 4));
        assert!(!budget.exhausted());
        budget.spend(&tokens(0, 1));
        assert!(budget.exhausted());
        assert_eq!(budget.usage().input_tokens, 5);
    }
}
