//! Doom-loop detection inside a guest: the same tool with the same arguments several times in
//! a row (across turns; identical calls within one turn count once).

use serde_json::Value;

use crate::ToolCall;

/// Counts consecutive identical calls.
#[derive(Debug, Default)]
pub struct DoomLoop {
    last: Option<(String, Arguments)>,
    count: usize,
}

/// A call's arguments as compared: parsed JSON (so spacing and key order do not matter), or
/// the raw text when it is not JSON. Values are compared as parsed, never re-serialized.
#[derive(Debug, Clone, PartialEq)]
enum Arguments {
    Json(Value),
    Raw(String),
}

impl Arguments {
    fn of(text: &str) -> Self {
        serde_json::from_str(text).map_or_else(|_| Self::Raw(text.to_owned()), Self::Json)
    }
}

impl DoomLoop {
    /// Observes a turn's calls; returns the first call that reached `threshold` repeats, with
    /// its count.
    pub fn observe(&mut self, calls: &[ToolCall], threshold: usize) -> Option<(String, usize)> {
        let mut seen: Vec<(&str, Arguments)> = Vec::new();
        for call in calls {
            let args = Arguments::of(&call.arguments);
            if seen.iter().any(|(n, a)| *n == call.name && *a == args) {
                continue;
            }
            let repeated = self
                .last
                .as_ref()
                .is_some_and(|(n, a)| *n == call.name && *a == args);
            if repeated {
                self.count += 1;
            } else {
                self.last = Some((call.name.clone(), args.clone()));
                self.count = 1;
            }
            if self.count >= threshold {
                return Some((call.name.clone(), self.count));
            }
            seen.push((&call.name, args));
        }
        None
    }
}
