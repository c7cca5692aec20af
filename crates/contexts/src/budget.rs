//! `max-tokens` of a child context: a model wrapper that counts the tokens of every response
//! passing through it and refuses new requests once the budget is spent. A grandchild's
//! model wraps its parent's, so a descendant's tokens count against every ancestor's budget.
//! A context granted a cost limit (`max_cost` of its module, `max-cost-usd` of its spawn)
//! also reserves each request's worst case against a [`RunBudget`] of its own before the
//! request goes to its ancestors' budgets, so it is clamped to what they have left.

use std::sync::Arc;

use parking_lot::Mutex;

use async_trait::async_trait;
use futures::StreamExt;
use wonopcode_agent_loop::assemble::price;
use wonopcode_agent_loop::budget::RunBudget;
use wonopcode_protocol::{
    ChunkStream, LanguageModel, ModelError, ModelInfo, ModelRequest, ModelSource, SharedModel,
    SingleModel, StreamChunk, Usage,
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
        Arc::new(BudgetedModel::new(inner, budget.clone()))
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

/// A model whose requests draw on a [`TokenBudget`].
pub struct BudgetedModel {
    inner: SharedModel,
    budget: Arc<TokenBudget>,
}

impl BudgetedModel {
    /// `inner`, its responses counted against `budget`.
    pub fn new(inner: SharedModel, budget: Arc<TokenBudget>) -> Self {
        Self { inner, budget }
    }
}

#[async_trait]
impl LanguageModel for BudgetedModel {
    fn info(&self) -> &ModelInfo {
        self.inner.info()
    }

    fn skip_response(&self, context: &wonopcode_protocol::ContextPath) {
        self.inner.skip_response(context);
    }

    fn context_began(
        &self,
        context: &wonopcode_protocol::ContextPath,
        module: &str,
        role: Option<&str>,
    ) {
        self.inner.context_began(context, module, role);
    }

    async fn stream(&self, request: ModelRequest) -> Result<ChunkStream, ModelError> {
        if self.budget.exhausted() {
            return Err(ModelError::Other(format!(
                "the context's limit of {} tokens is reached",
                self.budget.limit.unwrap_or(0)
            )));
        }
        let reservation = match &self.budget.cap {
            Some(cap) => Some(cap.reserve(self.inner.info(), &request)?),
            None => None,
        };
        let stream = self.inner.stream(request).await?;
        let (budget, model) = (self.budget.clone(), self.inner.clone());
        // The reservation lives as long as the stream: released when it is dropped.
        Ok(Box::pin(stream.inspect(move |chunk| {
            let _held = &reservation;
            if let StreamChunk::Usage { usage } = chunk {
                let mut usage = *usage;
                price(&model, &mut usage);
                budget.spend(&usage);
                if let Some(cap) = &budget.cap {
                    cap.charge(&usage);
                }
            }
        })))
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
