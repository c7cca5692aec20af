//! Doom-loop detection inside a guest: the same tool with the same arguments several times in
//! a row (across turns; identical calls within one turn count once).

use crate::ToolCall;

/// Counts consecutive identical calls.
#[derive(Debug, Default)]
pub struct DoomLoop {
    last: Option<(String, String)>,
    count: usize,
}

impl DoomLoop {
    /// Observes a turn's calls; returns the first call that reached `threshold` repeats, with
    /// its count.
    pub fn observe(&mut self, calls: &[ToolCall], threshold: usize) -> Option<(String, usize)> {
        let mut seen: Vec<(&str, String)> = Vec::new();
        for call in calls {
            let args = canonical(&call.arguments);
            if seen.iter().any(|(n, a)| *n == call.name && *a == args) {
                continue;
            }
            seen.push((&call.name, args.clone()));
            let key = (call.name.clone(), args);
            if self.last.as_ref() == Some(&key) {
                self.count += 1;
            } else {
                self.last = Some(key);
                self.count = 1;
            }
            if self.count >= threshold {
                return Some((call.name.clone(), self.count));
            }
        }
        None
    }
}

fn canonical(arguments: &str) -> String {
    serde_json::from_str::<serde_json::Value>(arguments)
        .map(|v| v.to_string())
        .unwrap_or_else(|_| arguments.to_owned())
}
