//! `storage`: the context's history and key/value state. Every change to the history is
//! announced as an event (`message.created`, `context.compacted`), so the consumer persists
//! it exactly as for the native loop; compaction uses the core's compaction code.

use wonopcode_agent_loop::compaction::{Compactor, estimate_tokens};
use wonopcode_agent_loop::{EventKind, LoopConfig, Message, Part, Role};

use crate::bindings::providers::{Message as WitMessage, StreamHandle};
use crate::bindings::storage::{CompactionStrategy, Host};
use crate::host::providers::{from_wit, to_wit};
use crate::state::{HostState, outside_a_run};

/// When a compaction runs.
#[derive(Clone, Copy)]
enum Compaction {
    /// Only when the history is over the compaction threshold.
    IfNeeded,
    /// Whatever its size.
    Forced,
}

impl HostState {
    pub(crate) fn push_message(&mut self, message: Message) -> wasmtime::Result<()> {
        self.env()?.events.emit(EventKind::MessageCreated {
            message: message.clone(),
        });
        self.messages.push(message);
        Ok(())
    }

    fn announce_reset(&self, strategy: &str, before: usize) -> wasmtime::Result<()> {
        let env = self.env()?;
        let system = env.config.system_prompt.as_deref();
        env.events.emit(EventKind::ContextCompacted {
            strategy: strategy.to_owned(),
            tokens_before: before as u64,
            tokens_after: estimate_tokens(system, &self.messages) as u64,
            messages: self.messages.clone(),
        });
        Ok(())
    }

    /// Compacts the history whatever its estimated size (the provider said it does not
    /// fit), adding the summary's usage to the run.
    pub(crate) async fn compact_now(&mut self) -> wasmtime::Result<bool> {
        self.compact(Compaction::Forced, None).await
    }

    /// Compacts the history before a request when it needs it, as the native loop does
    /// (never past the iteration limit, where no request follows). True when it changed.
    pub(crate) async fn compact_before_request(&mut self) -> wasmtime::Result<bool> {
        if self.run.iterations >= self.env()?.config.max_iterations {
            return Ok(false);
        }
        self.compact(Compaction::IfNeeded, None).await
    }

    /// Compacts the history with the core's compaction, under `config` or the run's own,
    /// adding the summary's usage to the run. The run's services are borrowed, not cloned:
    /// this runs before every request.
    async fn compact(
        &mut self,
        when: Compaction,
        config: Option<&LoopConfig>,
    ) -> wasmtime::Result<bool> {
        let env = self.env.as_ref().ok_or_else(outside_a_run)?;
        let compactor = Compactor {
            provider: &env.provider,
            config: config.unwrap_or(&env.config),
            events: &env.events,
            cancel: &env.cancel,
        };
        let (messages, usage) = (&mut self.messages, &mut self.run.usage);
        Ok(match when {
            Compaction::IfNeeded => compactor.compact_if_needed(messages, usage).await,
            Compaction::Forced => compactor.compact_now(messages, usage).await,
        })
    }

    /// Appends the assistant message the host assembled from a finished stream, and hands
    /// back the stream's assembled parts (see `OpenStream::store`).
    pub(crate) fn store_streamed(
        &mut self,
        handle: StreamHandle,
    ) -> wasmtime::Result<Result<Vec<Part>, String>> {
        let Some(stream) = self.streams.get_mut(&handle) else {
            return Ok(Err(format!("unknown stream handle {handle}")));
        };
        let (message, parts) = match stream.store(handle) {
            Ok(stored) => stored,
            Err(e) => return Ok(Err(e)),
        };
        if let Some(message) = message {
            self.push_message(message)?;
        }
        Ok(Ok(parts))
    }

    fn tokens(&self) -> wasmtime::Result<usize> {
        Ok(estimate_tokens(
            self.env()?.config.system_prompt.as_deref(),
            &self.messages,
        ))
    }
}

impl Host for HostState {
    fn get_messages(&mut self) -> wasmtime::Result<Vec<WitMessage>> {
        Ok(self.messages.iter().map(to_wit).collect())
    }

    fn add_message(&mut self, message: WitMessage) -> wasmtime::Result<()> {
        self.push_message(from_wit(message))
    }

    fn clear_messages(&mut self) -> wasmtime::Result<()> {
        let before = self.tokens()?;
        self.messages.clear();
        self.announce_reset("clear", before)
    }

    fn get_token_count(&mut self) -> wasmtime::Result<u64> {
        Ok(self.tokens()? as u64)
    }

    async fn compact_messages(
        &mut self,
        strategy: CompactionStrategy,
    ) -> wasmtime::Result<Result<u32, String>> {
        let before_len = self.messages.len();
        let before = self.tokens()?;
        let name = match strategy {
            CompactionStrategy::KeepLast(n) => {
                let mut start = self.messages.len().saturating_sub(n as usize);
                // Never start with tool results whose calls were dropped.
                while self
                    .messages
                    .get(start)
                    .is_some_and(|m| m.role == Role::Tool)
                {
                    start += 1;
                }
                self.messages.drain(..start);
                "keep_last"
            }
            CompactionStrategy::TokenLimit(limit) => {
                while self.tokens()? > limit as usize && !self.messages.is_empty() {
                    self.messages.remove(0);
                    while self.messages.first().is_some_and(|m| m.role == Role::Tool) {
                        self.messages.remove(0);
                    }
                }
                "token_limit"
            }
            CompactionStrategy::Summarize => {
                let mut config = self.env()?.config.clone();
                // Force the summary: any size counts as too big, and pruning is skipped.
                config.compaction.max_messages = Some(0);
                config.compaction.min_prune_tokens = usize::MAX;
                self.compact(Compaction::IfNeeded, Some(&config)).await?;
                return Ok(Ok(u32::try_from(
                    before_len.saturating_sub(self.messages.len()),
                )
                .unwrap_or(u32::MAX)));
            }
        };
        let removed = before_len - self.messages.len();
        if removed > 0 {
            self.announce_reset(name, before)?;
        }
        Ok(Ok(u32::try_from(removed).unwrap_or(u32::MAX)))
    }

    fn get_state(&mut self, key: String) -> wasmtime::Result<Option<String>> {
        Ok(self.kv.get(&key).cloned())
    }

    fn set_state(&mut self, key: String, value: String) -> wasmtime::Result<()> {
        self.kv.insert(key, value);
        Ok(())
    }

    fn delete_state(&mut self, key: String) -> wasmtime::Result<()> {
        self.kv.remove(&key);
        Ok(())
    }

    fn add_streamed_message(
        &mut self,
        handle: StreamHandle,
    ) -> wasmtime::Result<Result<(), String>> {
        // The parts are dropped here: the history holds the turn.
        Ok(self.store_streamed(handle)?.map(drop))
    }

    async fn compact_if_needed(&mut self) -> wasmtime::Result<Result<bool, String>> {
        Ok(Ok(self.compact_before_request().await?))
    }
}
