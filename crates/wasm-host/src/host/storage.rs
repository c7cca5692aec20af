//! `storage`: the context's history and key/value state. The history is the run's
//! (`wonopcode_agent_loop::Run`): every change is announced as an event (`message.created`,
//! `context.compacted`), so the consumer persists it exactly as for the native loop, and a
//! stored response is checked for repetition by the run's own step.

use wonopcode_agent_loop::compaction::estimate_tokens;
use wonopcode_protocol::{EventKind, Part, Role};

use wasmtime::component::HasData;

use crate::bindings::providers::{Message as WitMessage, StreamHandle};
use crate::bindings::storage::{Attachment, CompactionStrategy, Host};
use crate::host::shapes::{attachments_to_wit, message_from_wit, message_to_wit};
use crate::state::{HostState, KeyValues, MAX_ADDED_MESSAGE_BYTES, Responses, RunSlot};

/// What `storage` sees of a store: the run (its history), the streamed responses it
/// stores, and the key/value state.
pub(crate) struct StorageView<'a> {
    run: &'a mut RunSlot,
    responses: &'a mut Responses,
    kv: &'a mut KeyValues,
}

impl<'a> StorageView<'a> {
    pub(crate) fn of(state: &'a mut HostState) -> Self {
        Self {
            run: &mut state.run,
            responses: &mut state.responses,
            kv: &mut state.kv,
        }
    }
}

/// The bytes of text a part holds.
fn part_bytes(part: &Part) -> usize {
    match part {
        Part::Text { text } => text.len(),
        Part::Thinking { text, signature } => {
            text.len() + signature.as_ref().map_or(0, String::len)
        }
        Part::RedactedThinking { data } => data.len(),
        Part::ToolCall {
            id,
            name,
            arguments,
        } => id.len() + name.len() + arguments.len(),
        Part::ToolResult {
            call_id, content, ..
        } => call_id.len() + content.len(),
        Part::Image { data, .. } | Part::Document { data, .. } => data.len(),
    }
}

/// Links `storage` on [`StorageView`].
pub(crate) struct StorageData;

impl HasData for StorageData {
    type Data<'a> = StorageView<'a>;
}

/// Stores a finished stream's response through the run's step (a whole one's calls checked
/// for repetition, which may end the run) and hands back its assembled parts, moved. Shared
/// by `storage.add-streamed-message` and `providers.run-turn`.
pub(crate) async fn store_streamed(
    run: &mut RunSlot,
    responses: &mut Responses,
    handle: StreamHandle,
) -> wasmtime::Result<Result<Vec<Part>, String>> {
    let Some(stream) = responses.streams.get_mut(&handle) else {
        return Ok(Err(format!("unknown stream handle {handle}")));
    };
    if let Some(why) = stream.not_storable(handle) {
        return Ok(Err(why));
    }
    let stored = run.get_mut()?.store_response(&mut stream.response).await;
    Ok(match stored {
        Some(Ok(stored)) => {
            stream.mark_stored(stored.stored);
            Ok(stored.parts)
        }
        // Stored, and the run stopped at its repetition.
        Some(Err(e)) => {
            stream.mark_stored(std::sync::Arc::from([]));
            Err(e.to_string())
        }
        None => Err(format!("turn {handle} is already in the history")),
    })
}

impl StorageView<'_> {
    fn announce_reset(&self, strategy: &str, before: usize) -> wasmtime::Result<()> {
        let run = self.run.get()?;
        let system = run.services.config.system_prompt.as_deref();
        run.services.events.emit(EventKind::ContextCompacted {
            strategy: strategy.to_owned(),
            tokens_before: before as u64,
            tokens_after: estimate_tokens(system, &run.messages) as u64,
            messages: run.messages.to_vec(),
        });
        Ok(())
    }

    fn tokens(&mut self) -> wasmtime::Result<usize> {
        Ok(self.run.get_mut()?.estimated_tokens())
    }
}

impl Host for StorageView<'_> {
    fn get_messages(&mut self) -> wasmtime::Result<Vec<WitMessage>> {
        Ok(self
            .run
            .get()?
            .messages
            .iter()
            .map(message_to_wit)
            .collect())
    }

    fn get_attachments(&mut self, index: u32) -> wasmtime::Result<Vec<Attachment>> {
        let run = self.run.get()?;
        let message = usize::try_from(index)
            .ok()
            .and_then(|i| run.messages.get(i));
        Ok(message.map(attachments_to_wit).unwrap_or_default())
    }

    fn add_message(&mut self, message: WitMessage) -> wasmtime::Result<()> {
        let message = message_from_wit(message);
        let bytes: usize = message.parts.iter().map(part_bytes).sum();
        self.run.added_bytes = self.run.added_bytes.saturating_add(bytes);
        if self.run.added_bytes > MAX_ADDED_MESSAGE_BYTES {
            return Err(wasmtime::Error::msg(format!(
                "the guest added more than {} MiB of messages in one run (storage.add-message)",
                MAX_ADDED_MESSAGE_BYTES >> 20
            )));
        }
        self.run.get_mut()?.push_message(message);
        Ok(())
    }

    fn clear_messages(&mut self) -> wasmtime::Result<()> {
        let before = self.tokens()?;
        self.run.get_mut()?.history_mut().clear();
        self.announce_reset("clear", before)
    }

    fn get_token_count(&mut self) -> wasmtime::Result<u64> {
        Ok(self.tokens()? as u64)
    }

    async fn compact_messages(
        &mut self,
        strategy: CompactionStrategy,
    ) -> wasmtime::Result<Result<u32, String>> {
        let before = self.tokens()?;
        let run = self.run.get_mut()?;
        let before_len = run.messages.len();
        let name = match strategy {
            CompactionStrategy::KeepLast(n) => {
                let messages = run.history_mut();
                let mut start = messages.len().saturating_sub(n as usize);
                // Never start with tool results whose calls were dropped.
                while messages.get(start).is_some_and(|m| m.role == Role::Tool) {
                    start += 1;
                }
                messages.drain(..start);
                "keep_last"
            }
            CompactionStrategy::TokenLimit(limit) => {
                while self.tokens()? > limit as usize {
                    let messages = self.run.get_mut()?.history_mut();
                    if messages.is_empty() {
                        break;
                    }
                    messages.remove(0);
                    while messages.first().is_some_and(|m| m.role == Role::Tool) {
                        messages.remove(0);
                    }
                }
                "token_limit"
            }
            CompactionStrategy::Summarize => {
                run.summarize().await;
                let removed = before_len.saturating_sub(run.messages.len());
                return Ok(Ok(u32::try_from(removed).unwrap_or(u32::MAX)));
            }
        };
        let removed = before_len - self.run.get()?.messages.len();
        if removed > 0 {
            self.announce_reset(name, before)?;
        }
        Ok(Ok(u32::try_from(removed).unwrap_or(u32::MAX)))
    }

    fn get_state(&mut self, key: String) -> wasmtime::Result<Option<String>> {
        Ok(self.kv.get(&key).cloned())
    }

    fn set_state(&mut self, key: String, value: String) -> wasmtime::Result<()> {
        self.kv.set(key, value)
    }

    fn delete_state(&mut self, key: String) -> wasmtime::Result<()> {
        self.kv.remove(&key);
        Ok(())
    }

    async fn add_streamed_message(
        &mut self,
        handle: StreamHandle,
    ) -> wasmtime::Result<Result<(), String>> {
        // The parts are dropped here: the history holds the turn.
        Ok(store_streamed(self.run, self.responses, handle)
            .await?
            .map(drop))
    }

    async fn compact_if_needed(&mut self) -> wasmtime::Result<Result<bool, String>> {
        Ok(Ok(self.run.get_mut()?.compact_if_needed().await))
    }
}
