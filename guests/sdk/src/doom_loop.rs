//! Doom-loop detection inside a guest: the same tool with the same arguments several times in
//! a row (across turns; identical calls within one turn count once).

use serde_json::Value;

use crate::ToolCall;

/// Counts consecutive identical calls.
#[derive(Debug, Default)]
pub struct DoomLoop {
    last: Option<Observed>,
    count: usize,
}

/// The last call seen: its arguments as written, and parsed once a comparison needed them.
#[derive(Debug)]
struct Observed {
    name: String,
    raw: String,
    parsed: Option<Arguments>,
}

/// A call's arguments as compared: parsed JSON (so spacing and key order do not matter), or
/// the raw text when it is not JSON. Values are compared as parsed, never re-serialized.
#[derive(Debug, PartialEq)]
enum Arguments {
    Json(Value),
    Raw(String),
}

impl Arguments {
    fn of(text: &str) -> Self {
        serde_json::from_str(text).map_or_else(|_| Self::Raw(text.to_owned()), Self::Json)
    }
}

impl Observed {
    /// Whether `call` is the same call. Parses only when the names match and the texts
    /// differ: another tool, or the same text, needs no JSON. `parsed` receives the call's
    /// parsed arguments when they were needed.
    fn same_as(&mut self, call: &ToolCall, parsed: &mut Option<Arguments>) -> bool {
        if self.name != call.name {
            return false;
        }
        if self.raw == call.arguments {
            return true;
        }
        let mine = self.parsed.get_or_insert_with(|| Arguments::of(&self.raw));
        *mine == *parsed.insert(Arguments::of(&call.arguments))
    }
}

impl DoomLoop {
    /// Observes a turn's calls; returns the first call that reached `threshold` repeats, with
    /// its count.
    pub fn observe(&mut self, calls: &[ToolCall], threshold: usize) -> Option<(String, usize)> {
        for (i, call) in calls.iter().enumerate() {
            // A call written exactly like an earlier one of this turn is the same request.
            let earlier = &calls[..i];
            if earlier
                .iter()
                .any(|c| c.name == call.name && c.arguments == call.arguments)
            {
                continue;
            }
            let mut parsed = None;
            let repeated = self
                .last
                .as_mut()
                .is_some_and(|last| last.same_as(call, &mut parsed));
            if repeated {
                self.count += 1;
            } else {
                self.last = Some(Observed {
                    name: call.name.clone(),
                    raw: call.arguments.clone(),
                    parsed,
                });
                self.count = 1;
            }
            if self.count >= threshold {
                return Some((call.name.clone(), self.count));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, arguments: &str) -> ToolCall {
        ToolCall {
            id: "c".to_owned(),
            name: name.to_owned(),
            arguments: arguments.to_owned(),
        }
    }

    #[test]
    fn repeats_count_across_turns_whatever_the_spacing_and_key_order() {
        let mut doom = DoomLoop::default();
        assert_eq!(doom.observe(&[call("read", r#"{"a":1,"b":2}"#)], 3), None);
        assert_eq!(
            doom.observe(&[call("read", r#"{ "b": 2, "a": 1 }"#)], 3),
            None
        );
        assert_eq!(
            doom.observe(&[call("read", r#"{"a":1,"b":2}"#)], 3),
            Some(("read".to_owned(), 3))
        );
    }

    #[test]
    fn another_tool_or_other_arguments_start_a_new_streak() {
        let mut doom = DoomLoop::default();
        doom.observe(&[call("read", r#"{"a":1}"#)], 3);
        doom.observe(&[call("read", r#"{"a":1}"#)], 3);
        assert_eq!(doom.observe(&[call("grep", r#"{"a":1}"#)], 3), None);
        assert_eq!(doom.observe(&[call("grep", r#"{"a":2}"#)], 3), None);
        assert_eq!(doom.observe(&[call("grep", r#"{"a":2}"#)], 3), None);
        assert_eq!(
            doom.observe(&[call("grep", r#"{"a":2}"#)], 3),
            Some(("grep".to_owned(), 3))
        );
    }

    #[test]
    fn identical_calls_of_one_turn_count_once_and_text_that_is_not_json_compares_as_text() {
        let mut doom = DoomLoop::default();
        let same = call("bash", "not json");
        assert_eq!(
            doom.observe(&[same.clone(), same.clone(), same.clone()], 3),
            None
        );
        assert_eq!(doom.observe(&[call("bash", "not json!")], 3), None);
        assert_eq!(doom.observe(&[call("bash", "not json!")], 3), None);
    }
}
