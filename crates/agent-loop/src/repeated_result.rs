//! A tool result the model already has. When a call of the same tool with the same
//! arguments answered the very same text earlier in this context, and that earlier result
//! is still whole in the history (not pruned by compaction), sending the text again would be
//! billed again on every later request: the model gets a one-line pointer to the earlier
//! call instead. Nothing is hidden: the text is in the conversation, once. Results shorter
//! than [`MIN_BYTES`] and errors are sent as they are. One rule for every loop that stores a
//! tool round (`Run::tool_round`).

use wonopcode_protocol::call::Call;
use wonopcode_protocol::message::{Message, Part, Role};

/// Results shorter than this are cheaper to send again than to point at.
pub const MIN_BYTES: usize = 1024;

/// The pointer to send in place of `content`, the result of `call`, when the history already
/// holds the same result of the same call.
pub fn pointer(history: &[Message], call: &Call, content: &str) -> Option<String> {
    if content.len() < MIN_BYTES {
        return None;
    }
    let arguments = normalized(&call.arguments);
    let earlier = history
        .iter()
        .rev()
        .filter(|m| m.role == Role::Assistant)
        .flat_map(|m| m.parts.iter())
        .filter_map(|part| match part {
            Part::ToolCall {
                id,
                name,
                arguments: a,
            } if *name == call.name && normalized(a) == arguments => Some(id.as_str()),
            _ => None,
        })
        .find(|id| result_of(history, id) == Some(content))?;
    Some(format!(
        "(the same {} bytes as the result of call `{earlier}` above, which this conversation still holds: nothing changed since)",
        content.len()
    ))
}

/// A call's arguments as JSON (so spacing and key order do not count), or as given.
fn normalized(arguments: &str) -> String {
    serde_json::from_str::<serde_json::Value>(arguments)
        .map_or_else(|_| arguments.to_owned(), |v| v.to_string())
}

/// The text of call `id`'s result in `history`, when it succeeded.
fn result_of<'h>(history: &'h [Message], id: &str) -> Option<&'h str> {
    history
        .iter()
        .filter(|m| m.role == Role::Tool)
        .flat_map(|m| m.parts.iter())
        .find_map(|part| match part {
            Part::ToolResult {
                call_id,
                content,
                is_error: false,
            } if call_id == id => Some(content.as_str()),
            _ => None,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exchange(id: &str, arguments: &str, result: &str) -> [Message; 2] {
        [
            Message::new(
                Role::Assistant,
                vec![Part::ToolCall {
                    id: id.into(),
                    name: "read".into(),
                    arguments: arguments.into(),
                }],
            ),
            Message::new(
                Role::Tool,
                vec![Part::ToolResult {
                    call_id: id.into(),
                    content: result.into(),
                    is_error: false,
                }],
            ),
        ]
    }

    fn call(arguments: &str) -> Call {
        Call {
            id: "new".into(),
            name: "read".into(),
            arguments: arguments.into(),
        }
    }

    #[test]
    fn the_same_result_of_the_same_call_points_at_the_earlier_one() {
        let file = "x".repeat(MIN_BYTES);
        let history = exchange("c1", r#"{"path": "a.rs"}"#, &file);
        let said = pointer(&history, &call(r#"{"path":"a.rs"}"#), &file).unwrap();
        assert!(said.contains("call `c1`"), "{said}");
        // Changed since, another file, a short result, or the earlier one pruned: sent whole.
        assert_eq!(
            pointer(
                &history,
                &call(r#"{"path":"a.rs"}"#),
                &"y".repeat(MIN_BYTES)
            ),
            None
        );
        assert_eq!(pointer(&history, &call(r#"{"path":"b.rs"}"#), &file), None);
        let short = exchange("c1", r#"{"path": "a.rs"}"#, "short");
        assert_eq!(pointer(&short, &call(r#"{"path": "a.rs"}"#), "short"), None);
        let pruned = exchange(
            "c1",
            r#"{"path": "a.rs"}"#,
            crate::compaction::PRUNED_MARKER,
        );
        assert_eq!(pointer(&pruned, &call(r#"{"path": "a.rs"}"#), &file), None);
    }
}
