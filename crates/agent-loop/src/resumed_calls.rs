//! How a resumed run answers the calls its interrupted run made, from the record the
//! journal read back (`wonopcode_protocol::earlier_calls`): a call the run finished is answered
//! instead of run again; a call it started and never finished is run again when that is
//! safe, and otherwise follows the resume's policy ([`OnInterrupted`]). Both loops reach it
//! in the shared tool round, so the native loop and every guest get the same answers (a
//! guest re-runs, and the host answers its calls from the journal until it reaches the
//! point where the run stopped).

use wonopcode_protocol::Call;
use wonopcode_protocol::earlier_calls::{
    EarlierCall, EarlierCalls, Interrupted, OnInterrupted, interrupted_item,
};
use wonopcode_protocol::event::{Emitter, ItemStatus};
use wonopcode_protocol::permission::{PermissionDecision, PermissionGate, PermissionRequest};

use crate::tool::{Tool, ToolEnv};
use crate::tool_round::{CallOutcome, answered_without_running};

/// On a resume, the answer to `call` from what the interrupted run did: its result when it
/// finished; when it was interrupted, the tool's judgement, else the resume's policy. `None`:
/// the call runs (it never started, or it is safe or chosen to run again).
pub(crate) async fn earlier_answer(
    earlier: &EarlierCalls,
    tool: &dyn Tool,
    call: &Call,
    gate: &dyn PermissionGate,
    env: &ToolEnv,
    emitter: &Emitter,
) -> Option<CallOutcome> {
    let item = match earlier.find(emitter.context(), call)? {
        EarlierCall::Finished(item) => *item,
        EarlierCall::Interrupted => {
            let arguments: serde_json::Value =
                serde_json::from_str(&call.arguments).unwrap_or_default();
            let output = match tool.interrupted(&arguments, &env.workspace_root).await {
                Interrupted::RunAgain => return None,
                Interrupted::Done(output) => output,
                Interrupted::Unknown => {
                    let rerun = match earlier.on_interrupted {
                        OnInterrupted::Rerun => true,
                        OnInterrupted::Skip => false,
                        OnInterrupted::Ask => {
                            let request = PermissionRequest {
                                tool: call.name.clone(),
                                kind: tool.spec().kind,
                                subject: tool.permission_subject(&arguments, &env.workspace_root),
                                preview: Some(INTERRUPTED_QUESTION.to_owned()),
                            };
                            gate.ask(&request).await == PermissionDecision::Allow
                        }
                    };
                    if rerun {
                        return None;
                    }
                    tracing::info!(tool = %call.name, call = %call.id, "an interrupted call is not run again");
                    return Some(answered_without_running(
                        interrupted_item(call, NOT_RUN_AGAIN),
                        emitter.next_item_id(),
                        emitter,
                    ));
                }
            };
            let mut item = interrupted_item(call, &output);
            item.status = ItemStatus::Completed;
            item
        }
    };
    Some(answered_without_running(
        item,
        emitter.next_item_id(),
        emitter,
    ))
}

/// What a person is asked about a call the interrupted run may have run.
const INTERRUPTED_QUESTION: &str = "The run this one resumes was stopped while this call ran: it may have had its effect already. Run it again?";

/// What the model is told of an interrupted call not run again.
const NOT_RUN_AGAIN: &str = "this call was interrupted when the run stopped and was not run again on resume: it may or may not have had its effect; check before repeating it";
