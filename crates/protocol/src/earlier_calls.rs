//! What an interrupted run's tool calls did, for its resume: the record the journal reads
//! back from a run's events ([`EarlierCalls`]) and the words for what became of each call.
//! The engine answers a resumed run's calls from it (`wonopcode_agent_loop::resumed_calls`): a
//! call the run finished is answered instead of run again; a call it started and never
//! finished is run again when that is safe, and otherwise follows the resume's policy
//! ([`OnInterrupted`]).

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use crate::call::Call;
use crate::context_path::ContextPath;
use crate::event::{ItemStatus, ToolCallItem};
use crate::status::PendingCall;

/// What a tool's error says when the run's cancellation stopped its call (the engine's
/// `ToolError::Cancelled`): its output is "`NAME` failed: cancelled", and such a call was
/// cut off, as a kill would have.
pub const CANCELLED: &str = "cancelled";

/// What the interrupted run did with one call.
#[derive(Debug, Clone, PartialEq)]
pub enum EarlierCall {
    /// It finished: this is its final item (status, output, what it changed).
    Finished(Box<ToolCallItem>),
    /// It started and never finished: it may or may not have had its effect.
    Interrupted,
}

/// What a resume does with a call the interrupted run started and never finished, when the
/// tool cannot tell whether it had its effect (a command, a patch, an MCP server's tool).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum OnInterrupted {
    /// Run it again (a command that appends runs twice if it had already run).
    Rerun,
    /// Do not run it; the model is told it was interrupted and to check before repeating it.
    Skip,
    /// Ask the person (`--yes` runs it again; with nobody to ask, it is skipped).
    #[default]
    Ask,
}

/// Whether a call an interrupted run started and never finished had its effect, as its tool
/// judges from the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Interrupted {
    /// It had: the call is answered with this, not run.
    Done(String),
    /// It had not, or running it again does the same: it runs.
    RunAgain,
    /// The tool cannot tell: the resume's [`OnInterrupted`] decides.
    Unknown,
}

/// The calls of an interrupted run, keyed by context and call id, and the contexts it left
/// unfinished.
#[derive(Debug, Default)]
pub struct EarlierCalls {
    /// Per context and id, each call made with that id in the order made: a model may use
    /// an id again in a later turn (`call_0`), and each use is its own call.
    calls: HashMap<(ContextPath, String), Vec<Earlier>>,
    /// Per context and id, how many of its calls the resumed run has been answered from.
    served: Mutex<HashMap<(ContextPath, String), usize>>,
    /// The resume's policy for a call the tool cannot judge.
    pub on_interrupted: OnInterrupted,
    /// The contexts that had started and not ended: in the resumed run they go on where
    /// they stopped (`context.started` says `resumed`).
    pub unfinished: HashSet<ContextPath>,
    /// The calls the run waited on when it ended suspended (its root's last turn's
    /// `pending`, each in the context that made it): what [`EarlierCalls::answer`] may name.
    pub waiting: Vec<PendingCall>,
}

/// One call of the interrupted run: its tool and arguments, and what became of it.
#[derive(Debug)]
struct Earlier {
    name: String,
    arguments: String,
    call: EarlierCall,
}

impl EarlierCalls {
    /// Notes that `item` started in `context` (interrupted until it is seen finished).
    pub fn started(&mut self, context: &ContextPath, item: &ToolCallItem) {
        self.calls
            .entry((context.clone(), item.call_id.clone()))
            .or_default()
            .push(Earlier {
                name: item.name.clone(),
                arguments: item.arguments.clone(),
                call: EarlierCall::Interrupted,
            });
    }

    /// Sets what became of the latest call `key` names (a call that finished without
    /// being seen to start is noted as made).
    fn settle(&mut self, key: (ContextPath, String), item: &ToolCallItem, call: EarlierCall) {
        let made = self.calls.entry(key).or_default();
        match made.last_mut() {
            Some(last) if last.name == item.name && last.arguments == item.arguments => {
                last.call = call;
            }
            _ => made.push(Earlier {
                name: item.name.clone(),
                arguments: item.arguments.clone(),
                call,
            }),
        }
    }

    /// Notes that `item` finished in `context`. A call the permission gate suspended did not
    /// run, and is left to run again; one the run's cancellation stopped (Ctrl-C) was cut
    /// off, as a kill would have.
    pub fn finished(&mut self, context: &ContextPath, item: ToolCallItem) {
        let key = (context.clone(), item.call_id.clone());
        let output = item.output.as_deref().unwrap_or_default();
        let suspended = item.status == ItemStatus::Declined && output.starts_with(SUSPENDED);
        // The registry's words for a call stopped by the run's cancellation.
        let cancelled = item.status == ItemStatus::Failed
            && output == format!("`{}` failed: {CANCELLED}", item.name);
        if suspended {
            if let Some(made) = self.calls.get_mut(&key) {
                made.pop();
            }
        } else if cancelled {
            self.settle(key, &item, EarlierCall::Interrupted);
        } else {
            let call = EarlierCall::Finished(Box::new(item.clone()));
            self.settle(key, &item, call);
        }
    }

    /// What the interrupted run did with `call` in `context`: the next of the calls it made
    /// with that id that the resumed run has not been answered from, when it is the same
    /// call (the same tool and arguments; a live model may reuse an id). Each call is
    /// answered once: a later call with the id is the next one made with it.
    pub fn find(&self, context: &ContextPath, call: &Call) -> Option<EarlierCall> {
        let key = (context.clone(), call.id.clone());
        let made = self.calls.get(&key)?;
        let mut served = self.served.lock().unwrap_or_else(|e| e.into_inner());
        let next = served.entry(key).or_default();
        let earlier = made.get(*next)?;
        if earlier.name != call.name || earlier.arguments != call.arguments {
            return None;
        }
        *next += 1;
        Some(earlier.call.clone())
    }

    /// Answers a call the run waited on with the person's `text`: in the resumed run, the
    /// call (reached again in its context) is answered with it instead of running. `context`
    /// `None` names the only waiting call with that id. `Err`: one line naming what waits.
    pub fn answer(
        &mut self,
        context: Option<&ContextPath>,
        id: &str,
        text: &str,
    ) -> Result<(), String> {
        let matching: Vec<&PendingCall> = self
            .waiting
            .iter()
            .filter(|p| p.id == id && context.is_none_or(|c| *c == p.context))
            .collect();
        let call = match matching.as_slice() {
            [one] => (*one).clone(),
            [] => {
                return Err(format!(
                    "the answer for `{}`: the run waits on no such call; it waits on {}",
                    match context {
                        Some(c) => format!("{c}:{id}"),
                        None => id.to_owned(),
                    },
                    self.waiting_list()
                ));
            }
            _ => {
                return Err(format!(
                    "the answer for `{id}`: calls of several contexts have that id; name one as CONTEXT:{id} ({})",
                    self.waiting_list()
                ));
            }
        };
        let answered = Call {
            id: call.id.clone(),
            name: call.name,
            arguments: call.arguments,
        };
        let mut item = interrupted_item(&answered, text);
        item.status = ItemStatus::Completed;
        let finished = EarlierCall::Finished(Box::new(item.clone()));
        self.settle((call.context, call.id), &item, finished);
        Ok(())
    }

    /// The waiting calls as `CONTEXT:ID (tool)`, or `nothing` when none waits.
    pub fn waiting_list(&self) -> String {
        if self.waiting.is_empty() {
            return "nothing (the run did not end suspended)".to_owned();
        }
        self.waiting
            .iter()
            .map(|p| format!("{}:{} ({})", p.context, p.id, p.name))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// How many calls it knows.
    pub fn len(&self) -> usize {
        self.calls.values().map(Vec::len).sum()
    }

    /// Whether it knows none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many of them finished.
    pub fn finished_count(&self) -> usize {
        self.calls
            .values()
            .flatten()
            .filter(|c| matches!(c.call, EarlierCall::Finished(_)))
            .count()
    }
}

/// The item of a call answered with `output` without running (an interrupted call, a
/// waiting call the person answered): failed until said otherwise.
pub fn interrupted_item(call: &Call, output: &str) -> ToolCallItem {
    ToolCallItem {
        call_id: call.id.clone(),
        name: call.name.clone(),
        arguments: call.arguments.clone(),
        status: ItemStatus::Failed,
        output: Some(output.to_owned()),
        duration_ms: Some(0),
        command: None,
        file_change: None,
        file_changes: Vec::new(),
        server: None,
        tool: None,
    }
}

/// How the output of a call the gate suspended starts (the engine's tool round writes it).
pub const SUSPENDED: &str = "suspended: ";

#[cfg(test)]
mod tests {
    use super::*;

    fn item(id: &str, status: ItemStatus, output: &str) -> ToolCallItem {
        ToolCallItem {
            status,
            output: Some(output.into()),
            ..ToolCallItem::in_progress(id.into(), "bash".into(), "{}".into())
        }
    }

    fn call(id: &str, arguments: &str) -> Call {
        Call {
            id: id.into(),
            name: "bash".into(),
            arguments: arguments.into(),
        }
    }

    #[test]
    fn a_call_is_found_finished_interrupted_or_not_at_all() {
        let root = ContextPath::root();
        let child = root.child(1);
        let mut calls = EarlierCalls::default();
        calls.started(&root, &item("a", ItemStatus::InProgress, ""));
        calls.started(&root, &item("b", ItemStatus::InProgress, ""));
        calls.finished(&root, item("b", ItemStatus::Completed, "ok"));
        calls.started(&root, &item("c", ItemStatus::InProgress, ""));
        calls.finished(&root, item("c", ItemStatus::Declined, "suspended: ask"));
        calls.started(&root, &item("d", ItemStatus::InProgress, ""));
        calls.finished(
            &root,
            item("d", ItemStatus::Failed, "`bash` failed: cancelled"),
        );
        assert_eq!(
            calls.find(&root, &call("d", "{}")),
            Some(EarlierCall::Interrupted)
        );
        assert_eq!(
            calls.find(&root, &call("a", "{}")),
            Some(EarlierCall::Interrupted)
        );
        assert!(matches!(
            calls.find(&root, &call("b", "{}")),
            Some(EarlierCall::Finished(i)) if i.output.as_deref() == Some("ok")
        ));
        // Another context's call, a suspended call, and `b` once more: none (each call is
        // answered once; a second `b` is a call the run never made).
        assert_eq!(calls.find(&child, &call("b", "{}")), None);
        assert_eq!(calls.find(&root, &call("c", "{}")), None);
        assert_eq!(calls.find(&root, &call("b", "{}")), None);
        assert_eq!(calls.len(), 3);
    }

    #[test]
    fn an_id_used_again_in_a_later_turn_is_another_call_answered_in_its_turn() {
        let root = ContextPath::root();
        let made = |arguments: &str, status, output: &str| ToolCallItem {
            arguments: arguments.into(),
            ..item("call_0", status, output)
        };
        let mut calls = EarlierCalls::default();
        for (arguments, output) in [("{\"n\":1}", "one"), ("{\"n\":2}", "two")] {
            calls.started(&root, &made(arguments, ItemStatus::InProgress, ""));
            calls.finished(&root, made(arguments, ItemStatus::Completed, output));
        }
        calls.started(&root, &made("{}", ItemStatus::InProgress, ""));
        let output = |found: Option<EarlierCall>| match found {
            Some(EarlierCall::Finished(i)) => i.output.unwrap_or_default(),
            other => format!("{other:?}"),
        };
        // Other arguments than the next call made with the id: not that call, and it waits.
        assert_eq!(calls.find(&root, &call("call_0", "{\"n\":2}")), None);
        assert_eq!(
            output(calls.find(&root, &call("call_0", "{\"n\":1}"))),
            "one"
        );
        assert_eq!(
            output(calls.find(&root, &call("call_0", "{\"n\":2}"))),
            "two"
        );
        assert_eq!(
            calls.find(&root, &call("call_0", "{}")),
            Some(EarlierCall::Interrupted)
        );
        assert_eq!(calls.find(&root, &call("call_0", "{}")), None);
        assert_eq!((calls.len(), calls.finished_count()), (3, 2));
    }

    #[test]
    fn an_answer_finishes_the_waiting_call_of_its_context_only() {
        let root = ContextPath::root();
        let (first, second) = (root.child(1), root.child(2));
        let waiting = |context: &ContextPath| PendingCall {
            context: context.clone(),
            id: "w".into(),
            name: "bash".into(),
            arguments: "{}".into(),
        };
        let mut calls = EarlierCalls {
            waiting: vec![waiting(&first), waiting(&second)],
            ..EarlierCalls::default()
        };
        // The id is in two contexts: a bare id is ambiguous, an unknown one names them all.
        let ambiguous = calls.answer(None, "w", "x").unwrap_err();
        assert!(ambiguous.contains("name one as CONTEXT:w"), "{ambiguous}");
        let unknown = calls.answer(Some(&root), "w", "x").unwrap_err();
        assert!(unknown.contains("0:w") && unknown.contains("0.1:w (bash), 0.2:w (bash)"));
        calls.answer(Some(&second), "w", "done by hand").unwrap();
        assert!(matches!(
            calls.find(&second, &call("w", "{}")),
            Some(EarlierCall::Finished(i))
                if i.output.as_deref() == Some("done by hand") && i.status == ItemStatus::Completed
        ));
        assert_eq!(calls.find(&first, &call("w", "{}")), None, "it runs again");
    }
}
