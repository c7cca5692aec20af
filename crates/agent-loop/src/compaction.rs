//! Context compaction: when the estimated context passes a share of the model's window (or
//! the history passes a message count), first prune old tool outputs, then, if that is not
//! enough, summarize the older conversation with the model, keeping the most recent user
//! turns verbatim.

use crate::message::{Message, Part, Role};

/// When and how to compact.
#[derive(Debug, Clone)]
pub struct CompactionConfig {
    /// Share of the context window that triggers compaction (default 0.9).
    pub threshold_ratio: f64,
    /// Message count that also triggers it, when set.
    pub max_messages: Option<usize>,
    /// Most recent tool-output tokens never pruned (default 40,000).
    pub protect_tool_tokens: usize,
    /// Pruning happens only if it frees at least this many tokens (default 20,000).
    pub min_prune_tokens: usize,
    /// User turns kept verbatim by summarization (default 2).
    pub keep_user_turns: usize,
}

impl Default for CompactionConfig {
    fn default() -> Self {
        Self {
            threshold_ratio: 0.9,
            max_messages: None,
            protect_tool_tokens: 40_000,
            min_prune_tokens: 20_000,
            keep_user_turns: 2,
        }
    }
}

/// Text that replaces a pruned tool output.
pub const PRUNED_MARKER: &str = "[tool output pruned to save context]";

/// Prompt for the summarizing request.
pub const SUMMARY_PROMPT: &str = "Summarize the conversation so far for your own later use: the user's goals, decisions made, files read or changed, and what remains to do. Be concise and factual.";

/// Estimated tokens of a history plus system prompt.
pub fn estimate_tokens(system: Option<&str>, messages: &[Message]) -> usize {
    system.map_or(0, |s| s.len().div_ceil(4))
        + messages
            .iter()
            .map(Message::estimated_tokens)
            .sum::<usize>()
}

impl CompactionConfig {
    /// Whether a history this size needs compaction for a window of `context_window` tokens.
    pub fn needs_compaction(&self, tokens: usize, messages: usize, context_window: u64) -> bool {
        let limit = (context_window as f64 * self.threshold_ratio) as usize;
        (context_window > 0 && tokens > limit) || self.max_messages.is_some_and(|m| messages > m)
    }

    /// Replaces old tool outputs with a marker, newest first protected up to
    /// `protect_tool_tokens`. Changes nothing and returns 0 unless it frees at least
    /// `min_prune_tokens`; otherwise returns the tokens freed.
    pub fn prune_tool_outputs(&self, messages: &mut [Message]) -> usize {
        let mut seen = 0usize;
        let mut victims = Vec::new();
        let mut freed = 0usize;
        for (mi, message) in messages.iter().enumerate().rev() {
            for (pi, part) in message.parts.iter().enumerate().rev() {
                if let Part::ToolResult { content, .. } = part {
                    let tokens = content.len().div_ceil(4);
                    if seen >= self.protect_tool_tokens && content != PRUNED_MARKER {
                        victims.push((mi, pi));
                        freed += tokens.saturating_sub(PRUNED_MARKER.len().div_ceil(4));
                    }
                    seen += tokens;
                }
            }
        }
        if freed < self.min_prune_tokens {
            return 0;
        }
        for (mi, pi) in victims {
            if let Some(Part::ToolResult { content, .. }) = messages[mi].parts.get_mut(pi) {
                *content = PRUNED_MARKER.to_owned();
            }
        }
        freed
    }

    /// Index where the verbatim tail starts: the `keep_user_turns`-th user message from the
    /// end. `None` when there is nothing older to summarize.
    pub fn summary_split(&self, messages: &[Message]) -> Option<usize> {
        let mut users = 0;
        for (i, m) in messages.iter().enumerate().rev() {
            if m.role == Role::User {
                users += 1;
                if users == self.keep_user_turns.max(1) {
                    return (i > 0).then_some(i);
                }
            }
        }
        None
    }
}

/// The history after summarization: the summary as a user message, then the kept tail.
pub fn summarized_history(summary: &str, tail: &[Message]) -> Vec<Message> {
    let mut out = Vec::with_capacity(tail.len() + 1);
    out.push(Message::user(format!(
        "[Summary of the earlier conversation]\n{summary}"
    )));
    out.extend_from_slice(tail);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool_msg(bytes: usize) -> Message {
        Message {
            role: Role::Tool,
            parts: vec![Part::ToolResult {
                call_id: "c".into(),
                content: "x".repeat(bytes),
                is_error: false,
            }],
        }
    }

    #[test]
    fn prune_protects_recent_outputs() {
        let cfg = CompactionConfig::default();
        // 4 outputs of 20k tokens each: the newest two (40k) are protected.
        let mut history: Vec<Message> = (0..4).map(|_| tool_msg(80_000)).collect();
        let freed = cfg.prune_tool_outputs(&mut history);
        assert!(freed >= 39_000, "{freed}");
        let pruned: Vec<bool> = history
            .iter()
            .map(|m| matches!(&m.parts[0], Part::ToolResult { content, .. } if content == PRUNED_MARKER))
            .collect();
        assert_eq!(pruned, vec![true, true, false, false]);
    }

    #[test]
    fn prune_skips_small_gains() {
        let cfg = CompactionConfig::default();
        let mut history: Vec<Message> = vec![tool_msg(40_000), tool_msg(160_000)];
        assert_eq!(cfg.prune_tool_outputs(&mut history), 0);
    }

    #[test]
    fn split_keeps_last_two_user_turns() {
        let cfg = CompactionConfig::default();
        let h = vec![
            Message::user("1"),
            Message::text(Role::Assistant, "a"),
            Message::user("2"),
            Message::text(Role::Assistant, "b"),
            Message::user("3"),
        ];
        assert_eq!(cfg.summary_split(&h), Some(2));
        assert_eq!(cfg.summary_split(&h[2..]), None);
    }

    #[test]
    fn threshold_is_a_share_of_the_window() {
        let cfg = CompactionConfig {
            max_messages: Some(10),
            ..Default::default()
        };
        assert!(!cfg.needs_compaction(899, 1, 1000));
        assert!(cfg.needs_compaction(901, 1, 1000));
        assert!(cfg.needs_compaction(1, 11, 1000));
    }
}
