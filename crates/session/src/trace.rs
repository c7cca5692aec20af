//! `--trace FILE`: the run as Chrome trace-event JSON, which Perfetto (ui.perfetto.dev) and
//! `chrome://tracing` open as a timeline. One track per context, named by its path and
//! module; contexts and turns are complete (`X`) spans with tokens and cost as arguments;
//! tool calls are async (`b`/`e`) spans, since parallel calls overlap. Times are taken when
//! the event reaches the sink, in microseconds from the first event.

use std::collections::HashMap;
use std::path::Path;
use std::time::Instant;

use serde_json::{Value, json};
use wonopcode_protocol::event::{HookItem, ItemDetails, ToolCallItem};
use wonopcode_protocol::{ContextPath, Event, EventKind, Usage};

/// Collects a run's spans.
pub struct TraceRecorder {
    origin: Instant,
    tracks: HashMap<ContextPath, u64>,
    /// Open spans by (context, what): start time and name.
    open: HashMap<(ContextPath, String), (u64, String)>,
    events: Vec<Value>,
    root_module: String,
}

impl Default for TraceRecorder {
    fn default() -> Self {
        Self {
            origin: Instant::now(),
            tracks: HashMap::new(),
            open: HashMap::new(),
            events: vec![
                json!({"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "wonopcode"}}),
            ],
            root_module: String::new(),
        }
    }
}

fn usage_args(usage: &Usage) -> Value {
    json!({
        "input_tokens": usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens,
        "output_tokens": usage.output_tokens,
        "cost_usd": usage.cost_micro_cents.map(|c| c as f64 / 1e8),
    })
}

impl TraceRecorder {
    fn now(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_micros()).unwrap_or(u64::MAX)
    }

    /// The track of a context, named on first use.
    fn track(&mut self, context: &ContextPath, module: Option<&str>) -> u64 {
        if let Some(tid) = self.tracks.get(context) {
            return *tid;
        }
        let tid = self.tracks.len() as u64 + 1;
        self.tracks.insert(context.clone(), tid);
        let module = module.unwrap_or(&self.root_module);
        self.events.push(json!({"ph": "M", "pid": 1, "tid": tid, "name": "thread_name", "args": {"name": format!("{context} {module}")}}));
        tid
    }

    fn open(&mut self, context: &ContextPath, what: String, name: String) {
        let now = self.now();
        self.open.insert((context.clone(), what), (now, name));
    }

    /// Ends a span as a complete event; nothing when it never began.
    fn close(&mut self, context: &ContextPath, what: &str, category: &str, args: Value) {
        let Some((start, name)) = self.open.remove(&(context.clone(), what.to_owned())) else {
            return;
        };
        let tid = self.track(context, None);
        let now = self.now();
        self.events.push(json!({
            "ph": "X", "pid": 1, "tid": tid, "cat": category, "name": name,
            "ts": start, "dur": now.saturating_sub(start), "args": args,
        }));
    }

    fn tool(&mut self, context: &ContextPath, id: &str, call: &ToolCallItem, phase: &str) {
        let tid = self.track(context, None);
        let mut event = json!({
            "ph": phase, "pid": 1, "tid": tid, "cat": "tool", "name": call.name,
            "id": format!("{context}/{id}"), "ts": self.now(),
        });
        if phase == "e" {
            event["args"] = json!({"status": call.status, "duration_ms": call.duration_ms});
        } else {
            event["args"] =
                json!({"arguments": call.arguments.chars().take(200).collect::<String>()});
        }
        self.events.push(event);
    }

    /// A hook that ran, as a span on its context's track ending now, with what it decided.
    fn hook(&mut self, context: &ContextPath, hook: &HookItem) {
        let tid = self.track(context, None);
        let dur = hook.duration_ms.saturating_mul(1000);
        self.events.push(json!({
            "ph": "X", "pid": 1, "tid": tid, "cat": "hook",
            "name": format!("{} {}", hook.event, hook.hook.chars().take(60).collect::<String>()),
            "ts": self.now().saturating_sub(dur), "dur": dur,
            "args": {"decision": hook.decision, "reason": hook.reason, "tool": hook.tool},
        }));
    }

    /// Notes one event.
    pub fn record(&mut self, event: &Event) {
        let context = &event.context;
        match &event.kind {
            EventKind::SessionStarted { loop_name, .. } => {
                self.root_module.clone_from(loop_name);
                self.track(context, None);
            }
            EventKind::ContextStarted { module, task, .. } => {
                self.track(context, Some(module));
                self.open(
                    context,
                    "context".to_owned(),
                    format!("{module}: {}", task.chars().take(60).collect::<String>()),
                );
            }
            EventKind::ContextCompleted {
                status,
                error,
                duration_ms,
                usage,
                modified_files,
                ..
            } => {
                let mut args = usage_args(usage);
                args["status"] = json!(status);
                args["duration_ms"] = json!(duration_ms);
                args["modified_files"] = json!(modified_files);
                if let Some(e) = error {
                    args["error"] = json!(e);
                }
                self.close(context, "context", "context", args);
            }
            EventKind::TurnStarted => self.open(context, "turn".to_owned(), "turn".to_owned()),
            EventKind::TurnCompleted {
                status,
                iterations,
                usage,
                ..
            }
            | EventKind::TurnFailed {
                status,
                iterations,
                usage,
                ..
            } => {
                let mut args = usage_args(usage);
                args["status"] = json!(status);
                args["model_requests"] = json!(iterations);
                self.close(context, "turn", "turn", args);
            }
            EventKind::ItemStarted { item } => {
                if let Some(call) = item.details.tool_call() {
                    self.tool(context, &item.id, call, "b");
                }
            }
            EventKind::ItemCompleted { item } => {
                if let Some(call) = item.details.tool_call() {
                    self.tool(context, &item.id, call, "e");
                }
                if let ItemDetails::Hook(hook) = &item.details {
                    self.hook(context, hook);
                }
            }
            _ => {}
        }
    }

    /// Writes the trace (spans still open are left out), the tracks in path order (`0`,
    /// `0.1`, `0.1.1`, `0.2`, …) whatever order concurrent children started in.
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        let mut order: Vec<(Vec<u32>, u64)> = self
            .tracks
            .iter()
            .map(|(context, tid)| (context.numbers(), *tid))
            .collect();
        order.sort();
        let mut events = self.events.clone();
        for (index, (_, tid)) in order.iter().enumerate() {
            events.push(json!({"ph": "M", "pid": 1, "tid": tid, "name": "thread_sort_index", "args": {"sort_index": index}}));
        }
        let doc = json!({"traceEvents": events, "displayTimeUnit": "ms"});
        let text = serde_json::to_string(&doc).map_err(std::io::Error::other)?;
        std::fs::write(path, text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wonopcode_protocol::ContextStatus;

    fn at(context: &ContextPath, kind: EventKind) -> Event {
        Event {
            context: context.clone(),
            ts: String::new(),
            kind,
        }
    }

    #[test]
    fn contexts_and_turns_become_spans_on_their_own_tracks() {
        let root = ContextPath::root();
        let child = root.child(1);
        let mut trace = TraceRecorder::default();
        for event in [
            at(&root, EventKind::TurnStarted),
            at(
                &child,
                EventKind::ContextStarted {
                    module: "coder".into(),
                    task: "fix it".into(),
                    resumed: false,
                },
            ),
            at(&child, EventKind::TurnStarted),
            at(
                &child,
                EventKind::TurnCompleted {
                    status: wonopcode_protocol::LoopStatus::Complete,
                    iterations: 2,
                    usage: Usage {
                        input_tokens: 10,
                        output_tokens: 5,
                        ..Usage::default()
                    },
                    pending: Vec::new(),
                },
            ),
            at(
                &child,
                EventKind::ContextCompleted {
                    module: "coder".into(),
                    status: ContextStatus::Completed,
                    error: None,
                    duration_ms: 3,
                    requests: 1,
                    usage: Usage::default(),
                    modified_files: vec!["a.rs".into()],
                },
            ),
            at(
                &child,
                EventKind::ItemCompleted {
                    item: wonopcode_protocol::event::Item {
                        id: "item_3".into(),
                        details: ItemDetails::Hook(HookItem {
                            event: "PreToolUse".into(),
                            hook: "./guard.sh".into(),
                            call_id: Some("c1".into()),
                            tool: Some("bash".into()),
                            decision: wonopcode_protocol::event::HookVerdict::Deny,
                            reason: Some("no rm -rf".into()),
                            duration_ms: 4,
                        }),
                    },
                },
            ),
            at(
                &root,
                EventKind::TurnCompleted {
                    status: wonopcode_protocol::LoopStatus::Complete,
                    iterations: 1,
                    usage: Usage::default(),
                    pending: Vec::new(),
                },
            ),
        ] {
            trace.record(&event);
        }
        let hooks: Vec<&Value> = trace.events.iter().filter(|e| e["cat"] == "hook").collect();
        assert_eq!(hooks.len(), 1);
        assert_eq!(hooks[0]["name"], "PreToolUse ./guard.sh");
        assert_eq!(hooks[0]["dur"], 4000);
        assert_eq!(hooks[0]["args"]["decision"], "deny");
        let spans: Vec<&Value> = trace
            .events
            .iter()
            .filter(|e| e["ph"] == "X" && e["cat"] != "hook")
            .collect();
        assert_eq!(spans.len(), 3);
        assert_eq!(spans[0]["name"], "turn");
        assert_eq!(spans[0]["args"]["input_tokens"], 10);
        assert_eq!(spans[1]["name"], "coder: fix it");
        assert_eq!(spans[1]["args"]["modified_files"][0], "a.rs");
        assert_ne!(
            spans[1]["tid"], spans[2]["tid"],
            "the child has its own track"
        );
        let names: Vec<&Value> = trace
            .events
            .iter()
            .filter(|e| e["name"] == "thread_name")
            .map(|e| &e["args"]["name"])
            .collect();
        assert!(names.iter().any(|n| *n == "0.1 coder"), "{names:?}");
    }
}
