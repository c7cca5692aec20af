//! `ui`: what a guest shows goes into the same event stream the native loop emits, so the
//! terminal and `--json` look the same for both. (Streamed model output and host tool calls
//! are shown by the host itself; these calls are for anything else the guest wants to show.)
//! Questions go to the embedder's `GuestPrompter`, and give up when the run is cancelled.

use std::time::Instant;

use wasmtime::component::HasData;

use wonopcode_protocol::event::{ItemDetails, ItemStatus, ToolCallItem};
use wonopcode_protocol::{Emitter, EventKind, event::Item};

use crate::bindings::ui::{Host, MessageLevel};
use crate::state::{HostState, Place, RunSlot, ShownCall, ShownItems};

/// The names of a schema's `properties` in the order the guest wrote them (a JSON object
/// read into a map loses it; people read a form top to bottom).
struct FieldOrder(Vec<String>);

impl<'de> serde::Deserialize<'de> for FieldOrder {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        /// The keys of one object, in order.
        struct Keys(Vec<String>);
        impl<'de> serde::Deserialize<'de> for Keys {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct Visit;
                impl<'de> serde::de::Visitor<'de> for Visit {
                    type Value = Keys;
                    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                        f.write_str("an object")
                    }
                    fn visit_map<A: serde::de::MapAccess<'de>>(
                        self,
                        mut map: A,
                    ) -> Result<Keys, A::Error> {
                        let mut keys = Vec::new();
                        while let Some(key) = map.next_key::<String>()? {
                            map.next_value::<serde::de::IgnoredAny>()?;
                            keys.push(key);
                        }
                        Ok(Keys(keys))
                    }
                }
                d.deserialize_map(Visit)
            }
        }
        #[derive(serde::Deserialize)]
        struct Schema {
            #[serde(default)]
            properties: Option<Keys>,
        }
        let schema = Schema::deserialize(deserializer)?;
        Ok(Self(schema.properties.map(|k| k.0).unwrap_or_default()))
    }
}

/// What `ui` sees of a store: the run (its events, cancellation, the answer shown), the
/// items the guest shows, and its place (who answers questions, its name).
pub(crate) struct UiView<'a> {
    run: &'a mut RunSlot,
    items: &'a mut ShownItems,
    place: &'a Place,
}

impl<'a> UiView<'a> {
    pub(crate) fn of(state: &'a mut HostState) -> Self {
        Self {
            run: &mut state.run,
            items: &mut state.items,
            place: &state.place,
        }
    }
}

/// Links `ui` on [`UiView`].
pub(crate) struct UiData;

impl HasData for UiData {
    type Data<'a> = UiView<'a>;
}

/// Shows `text` as one whole item (started, one delta, completed), as a stream would.
pub(crate) fn emit_text_item(events: &Emitter, details: fn(String) -> ItemDetails, text: String) {
    let id = events.next_item_id();
    events.emit(EventKind::ItemStarted {
        item: Item {
            id: id.clone(),
            details: details(String::new()),
        },
    });
    events.emit(EventKind::ItemDelta {
        item_id: id.clone(),
        text: text.clone(),
    });
    events.emit(EventKind::ItemCompleted {
        item: Item {
            id,
            details: details(text),
        },
    });
}

impl UiView<'_> {
    /// Completes the progress item the guest showed, if one is open (it hid it, or its
    /// run ends).
    pub(crate) fn end_progress(&mut self) {
        if let (Some(item), Some(run)) = (self.items.progress.take(), &self.run.run) {
            run.services.events.emit(EventKind::ItemCompleted { item });
        }
    }
}

impl Host for UiView<'_> {
    fn send_text(&mut self, text: String) -> wasmtime::Result<()> {
        emit_text_item(
            &self.run.services()?.events,
            |text| ItemDetails::AgentMessage { text },
            text.clone(),
        );
        self.run.shown = text;
        Ok(())
    }

    fn send_thinking(&mut self, text: String) -> wasmtime::Result<()> {
        emit_text_item(
            &self.run.services()?.events,
            |text| ItemDetails::Reasoning { text },
            text,
        );
        Ok(())
    }

    fn tool_start(&mut self, call_id: String, tool_name: String) -> wasmtime::Result<()> {
        let events = &self.run.services()?.events;
        let id = events.next_item_id();
        let item = ToolCallItem::in_progress(call_id.clone(), tool_name.clone(), String::new());
        events.emit(EventKind::ItemStarted {
            item: Item {
                id: id.clone(),
                details: ItemDetails::ToolCall(item),
            },
        });
        self.items.calls.insert(
            call_id,
            ShownCall {
                item_id: id,
                name: tool_name,
                started: Instant::now(),
            },
        );
        Ok(())
    }

    fn tool_result(
        &mut self,
        call_id: String,
        result: String,
        is_error: bool,
    ) -> wasmtime::Result<()> {
        let known = self.items.calls.remove(&call_id);
        let events = &self.run.services()?.events;
        let (id, name, duration_ms) = match known {
            Some(shown) => (
                shown.item_id,
                shown.name,
                Some(u64::try_from(shown.started.elapsed().as_millis()).unwrap_or(u64::MAX)),
            ),
            None => (events.next_item_id(), String::new(), None),
        };
        let item = ToolCallItem {
            call_id,
            name,
            arguments: String::new(),
            status: if is_error {
                ItemStatus::Failed
            } else {
                ItemStatus::Completed
            },
            output: Some(result),
            duration_ms,
            command: None,
            file_change: None,
            file_changes: Vec::new(),
            server: None,
            tool: None,
        };
        events.emit(EventKind::ItemCompleted {
            item: Item {
                id,
                details: ItemDetails::ToolCall(item),
            },
        });
        Ok(())
    }

    fn show_progress(&mut self, message: String, progress: Option<f32>) -> wasmtime::Result<()> {
        let events = &self.run.services()?.events;
        let fraction = progress
            .filter(|f| f.is_finite())
            .map(|f| f.clamp(0.0, 1.0));
        let item = Item {
            id: match &self.items.progress {
                Some(open) => open.id.clone(),
                None => events.next_item_id(),
            },
            details: ItemDetails::Progress { message, fraction },
        };
        events.emit(match self.items.progress {
            Some(_) => EventKind::ItemUpdated { item: item.clone() },
            None => EventKind::ItemStarted { item: item.clone() },
        });
        self.items.progress = Some(item);
        Ok(())
    }

    fn hide_progress(&mut self) -> wasmtime::Result<()> {
        self.end_progress();
        Ok(())
    }

    fn show_message(&mut self, level: MessageLevel, message: String) -> wasmtime::Result<()> {
        let details = match level {
            MessageLevel::Info => ItemDetails::Info { message },
            MessageLevel::Warning | MessageLevel::Error => ItemDetails::Error { message },
        };
        let events = &self.run.services()?.events;
        events.emit(EventKind::ItemCompleted {
            item: Item {
                id: events.next_item_id(),
                details,
            },
        });
        Ok(())
    }

    async fn request_input(&mut self, prompt: String) -> wasmtime::Result<Option<String>> {
        let Some(prompter) = self.place.host_config.prompter.clone() else {
            tracing::info!(guest = %self.place.loop_name, "guest asked for input nobody can give: {prompt}");
            return Ok(None);
        };
        let cancel = self.run.services()?.cancel.clone();
        let guest = self.place.loop_name.clone();
        Ok(tokio::select! {
            () = cancel.cancelled() => None,
            answer = prompter.input(&guest, &prompt) => answer,
        })
    }

    async fn request_form(
        &mut self,
        message: String,
        schema: String,
    ) -> wasmtime::Result<Option<String>> {
        let (Ok(serde_json::Value::Object(parsed)), Ok(fields)) = (
            serde_json::from_str::<serde_json::Value>(&schema),
            serde_json::from_str::<FieldOrder>(&schema),
        ) else {
            tracing::info!(guest = %self.place.loop_name, "guest asked for a form whose schema is not a JSON object");
            return Ok(None);
        };
        let Some(prompter) = self.place.host_config.prompter.clone() else {
            tracing::info!(guest = %self.place.loop_name, "guest asked for a form nobody can fill in: {message}");
            return Ok(None);
        };
        let cancel = self.run.services()?.cancel.clone();
        let guest = self.place.loop_name.clone();
        let answer = tokio::select! {
            () = cancel.cancelled() => None,
            answer = prompter.form(&guest, &message, &parsed, &fields.0) => answer,
        };
        Ok(answer.map(|values| serde_json::Value::Object(values).to_string()))
    }

    async fn request_confirmation(&mut self, message: String) -> wasmtime::Result<bool> {
        let Some(prompter) = self.place.host_config.prompter.clone() else {
            tracing::info!(guest = %self.place.loop_name, "guest asked for a confirmation nobody can give: {message}");
            return Ok(false);
        };
        let cancel = self.run.services()?.cancel.clone();
        let guest = self.place.loop_name.clone();
        Ok(tokio::select! {
            () = cancel.cancelled() => false,
            answer = prompter.confirm(&guest, &message) => answer,
        })
    }
}
