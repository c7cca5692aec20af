//! Context compaction: when the estimated context passes a share of the model's window (or
//! the history passes a message count), first prune old tool outputs, then, if that is not
//! enough, summarize the older conversation with the model, keeping the most recent user
//! turns verbatim.
//!
//! Long before that, old tool outputs are cleared in batches ([`ClearToolOutputs`], as
//! Anthropic's context editing does): every request reads the whole history again, from the
//! provider's cache at a tenth of the input price, so a file read fifty responses ago is paid
//! for fifty times. Clearing in batches of at least `batch_tokens` changes the history (and
//! so what the cache holds) rarely; each cleared output says how to get it back.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use wonopcode_protocol::event::{Emitter, EventKind, Item, ItemDetails, NullSink};
use wonopcode_protocol::message::{Message, Part, Role};
use wonopcode_protocol::model::{ModelRequest, SharedModel};
use wonopcode_protocol::usage::Usage;

use crate::agent::LoopConfig;
use crate::assemble::stream_request;
use crate::hook::{HookSite, SharedHooks, TurnEvent};

/// When and how to compact.
#[derive(Debug, Clone)]
pub struct CompactionConfig {
    /// Share of the context window that triggers compaction (default 0.9).
    pub threshold_ratio: f64,
    /// Message count that also triggers it, when set.
    pub max_messages: Option<usize>,
    /// The most tokens of the most recent tool outputs never pruned (default 40,000); the
    /// newest output is never pruned, whatever its size.
    pub protect_tool_tokens: usize,
    /// Pruning happens only if it frees at least this many tokens (default 20,000).
    pub min_prune_tokens: usize,
    /// User turns kept verbatim by summarization (default 2).
    pub keep_user_turns: usize,
    /// Old tool outputs cleared in batches before the window fills; `None`: only at the
    /// threshold, with the rest of compaction.
    pub clear_tool_outputs: Option<ClearToolOutputs>,
}

/// When old tool outputs are cleared before compaction is due: once the outputs older than
/// the kept tail (the newest `keep_outputs`, and more while they fit in `keep_tokens`) add up
/// to `batch_tokens`, all of them at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClearToolOutputs {
    /// The most tokens of the newest tool outputs kept whole when they are more than
    /// `keep_outputs` (default 8,000: dozens of short outputs, three 8 KB files).
    pub keep_tokens: usize,
    /// The newest tool outputs always kept whole, whatever their size (default 3, as
    /// Anthropic's context editing keeps the three newest tool results; at least 1).
    pub keep_outputs: usize,
    /// The least a clearing frees (default 24,000): the cache is written again from the
    /// first cleared output on, so clearing less at a time would cost more than it saves.
    pub batch_tokens: usize,
}

impl Default for ClearToolOutputs {
    fn default() -> Self {
        Self {
            keep_tokens: 8_000,
            keep_outputs: 3,
            batch_tokens: 24_000,
        }
    }
}

impl Default for CompactionConfig {
    fn default() -> Self {
        Self {
            threshold_ratio: 0.9,
            max_messages: None,
            protect_tool_tokens: 40_000,
            min_prune_tokens: 20_000,
            keep_user_turns: 2,
            clear_tool_outputs: Some(ClearToolOutputs::default()),
        }
    }
}

/// Text that replaces a pruned tool output.
pub const PRUNED_MARKER: &str =
    "[this output was cleared to save context: make the same call again to see it]";

/// What replaced a pruned output before [`PRUNED_MARKER`] said how to get it back (histories
/// of runs stored then).
const OLD_PRUNED_MARKER: &str = "[tool output pruned to save context]";

/// Whether a tool output is a pruned one's marker.
pub fn is_pruned(content: &str) -> bool {
    content == PRUNED_MARKER || content == OLD_PRUNED_MARKER
}

/// The least of the history a summary asked for by hand (`/compact`) replaces: a summary
/// runs to about this much, so a shorter history is left as it is.
const MIN_SUMMARIZED_TOKENS: usize = 1_500;

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

/// A history's token estimate kept as the history grows: after an append, a request costs
/// counting the new messages, not every byte of the history again. A history that changed
/// otherwise (compaction, a guest that replaced it) is counted again. The tally holds the
/// messages it counted, so an edit through `Arc::make_mut` always makes a new one, and
/// checks they are still in place by pointer: every one ([`TokenTally::default`], for
/// histories it cannot know the changes of, such as a budget's requests), or only the last
/// ([`TokenTally::owned`], for a history whose owner forgets the tally whenever it changes it
/// other than by appending, as a [`crate::Run`] does).
#[derive(Debug, Clone, Default)]
pub struct TokenTally {
    counted: Vec<Arc<[Part]>>,
    tokens: usize,
    /// Only the last counted message is checked.
    owned: bool,
}

impl TokenTally {
    /// A tally of a history whose owner calls [`TokenTally::forget`] on any change but an
    /// append.
    pub fn owned() -> Self {
        Self {
            owned: true,
            ..Self::default()
        }
    }

    /// Counts the history again at the next estimate.
    pub fn forget(&mut self) {
        self.counted.clear();
        self.tokens = 0;
    }

    /// The estimate of `messages` plus `system` (the same as [`estimate_tokens`]).
    pub fn estimate(&mut self, system: Option<&str>, messages: &[Message]) -> usize {
        let same = |counted: &Arc<[Part]>, m: &Message| Arc::ptr_eq(counted, &m.parts);
        let appended = self.counted.len() <= messages.len()
            && if self.owned {
                self.counted
                    .last()
                    .is_none_or(|last| same(last, &messages[self.counted.len() - 1]))
            } else {
                self.counted.iter().zip(messages).all(|(c, m)| same(c, m))
            };
        if !appended {
            self.forget();
        }
        for message in &messages[self.counted.len()..] {
            self.tokens += message.estimated_tokens();
            self.counted.push(message.parts.clone());
        }
        self.tokens + system.map_or(0, |s| s.len().div_ceil(4))
    }
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
        let protect = Tail {
            tokens: self.protect_tool_tokens,
            outputs: 1,
        };
        prune(messages, protect, self.min_prune_tokens)
    }

    /// Clears old tool outputs in a batch when [`ClearToolOutputs`] says one is due for a
    /// history of `tokens`; the tokens freed (0: nothing changed).
    pub fn clear_tool_outputs(&self, messages: &mut [Message], tokens: usize) -> usize {
        match self.clear_tool_outputs {
            Some(clear) if self.may_clear(tokens) => {
                prune(messages, clear.tail(), clear.batch_tokens)
            }
            _ => 0,
        }
    }

    /// How many tokens the history must grow by before a batch can be due (0: one is due
    /// now, or clearing is off). A batch needs `batch_tokens` of old outputs; a newer output
    /// adds its own tokens and can push kept outputs out of the tail (one of the newest
    /// three, however large), so the kept tail's tokens count as already on the way. Never 0
    /// when none is due: at least the next response's output is waited for.
    pub fn clear_shortfall(&self, messages: &[Message]) -> usize {
        let Some(clear) = self.clear_tool_outputs else {
            return 0;
        };
        let (_, freed, kept) = prunable(messages, clear.tail());
        match clear.batch_tokens.checked_sub(freed) {
            None | Some(0) => 0,
            Some(short) => short.saturating_sub(kept).max(1),
        }
    }

    /// Whether a history of `tokens` may hold a batch of tool outputs to clear: below
    /// `batch_tokens` it cannot (a batch is part of the history), and the history is not
    /// walked. The kept tail can be shorter than `keep_tokens` (the outputs after the newest
    /// `keep_outputs` stop at the first that does not fit), so it is not counted here.
    pub fn may_clear(&self, tokens: usize) -> bool {
        self.clear_tool_outputs
            .is_some_and(|clear| tokens >= clear.batch_tokens)
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

/// The newest tool outputs a clearing or a pruning keeps whole: always the newest `outputs`
/// (at least one), whatever their size, and more while all of them fit in `tokens`.
#[derive(Debug, Clone, Copy)]
struct Tail {
    tokens: usize,
    outputs: usize,
}

impl ClearToolOutputs {
    fn tail(&self) -> Tail {
        Tail {
            tokens: self.keep_tokens,
            outputs: self.keep_outputs,
        }
    }
}

/// The tool outputs not cleared yet that fall outside the kept tail: where each is (message,
/// part), the tokens clearing them all would free, and the tokens of the tail's outputs.
/// Every output older than the first one outside the tail is outside it too, so the kept
/// outputs are the newest ones in a row and the cache is written again from one point.
fn prunable(messages: &[Message], keep: Tail) -> (Vec<(usize, usize)>, usize, usize) {
    let mut seen = 0usize;
    let mut victims = Vec::new();
    let mut freed = 0usize;
    let mut kept = 0usize;
    let outputs = messages.iter().enumerate().rev().flat_map(|(mi, message)| {
        message
            .parts
            .iter()
            .enumerate()
            .rev()
            .filter_map(move |(pi, part)| match part {
                Part::ToolResult { content, .. } => Some((mi, pi, content)),
                _ => None,
            })
    });
    for (i, (mi, pi, content)) in outputs.enumerate() {
        let tokens = content.len().div_ceil(4);
        seen += tokens;
        if i < keep.outputs.max(1) || seen <= keep.tokens {
            kept += tokens;
        } else if !is_pruned(content) {
            victims.push((mi, pi));
            freed += tokens.saturating_sub(PRUNED_MARKER.len().div_ceil(4));
        }
    }
    (victims, freed, kept)
}

/// Replaces the tool outputs outside the kept tail ([`prunable`]) with [`PRUNED_MARKER`],
/// when that frees at least `at_least` tokens; the tokens freed.
fn prune(messages: &mut [Message], keep: Tail, at_least: usize) -> usize {
    let (victims, freed, _) = prunable(messages, keep);
    if freed < at_least {
        return 0;
    }
    for (mi, pi) in victims {
        let parts = Arc::make_mut(&mut messages[mi].parts);
        if let Some(Part::ToolResult { content, .. }) = parts.get_mut(pi) {
            *content = PRUNED_MARKER.to_owned();
        }
    }
    freed
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

/// What compaction needs from a run: the model (to summarize), the settings, where to report,
/// and the cancellation token. The native loop and the WebAssembly host's
/// `storage.compact-if-needed` both compact through here.
pub struct Compactor<'a> {
    /// The run's model.
    pub provider: &'a SharedModel,
    /// The run's settings (compaction thresholds, system prompt, request options).
    pub config: &'a LoopConfig,
    /// The hooks told of a compaction before it happens (`PreCompact`).
    pub hooks: Option<&'a SharedHooks>,
    /// Where `context.compacted` goes.
    pub events: &'a Emitter,
    /// Cancels the summary request.
    pub cancel: &'a CancellationToken,
    /// The session, for the `PreCompact` hooks.
    pub session_id: &'a str,
    /// The workspace, for the `PreCompact` hooks.
    pub cwd: &'a std::path::Path,
    /// Why it compacts: `manual` or `auto` (`TurnEvent::Compacting`).
    pub trigger: &'a str,
    /// The caller's estimate of the history now (a run keeps one as it grows), so the check
    /// before every request does not walk the history; `None`: counted here.
    pub known_tokens: Option<usize>,
}

impl Compactor<'_> {
    /// Compacts `messages` when they pass the configured share of the model's window (or the
    /// message count): prune old tool outputs first, then summarize with the model if that was
    /// not enough. The summary's usage is added to `usage`. Returns whether anything changed.
    pub async fn compact_if_needed(&self, messages: &mut Vec<Message>, usage: &mut Usage) -> bool {
        self.compact(messages, usage, false).await
    }

    /// Compacts `messages` whatever their estimated size: the provider said they do not fit
    /// (its count beats the estimate). Prunes old tool outputs and summarizes.
    pub async fn compact_now(&self, messages: &mut Vec<Message>, usage: &mut Usage) -> bool {
        self.compact(messages, usage, true).await
    }

    async fn compact(&self, messages: &mut Vec<Message>, usage: &mut Usage, force: bool) -> bool {
        let cfg = &self.config.compaction;
        let window = self.provider.info().context_window;
        let system = self.config.system_prompt.as_deref();
        let before = self
            .known_tokens
            .unwrap_or_else(|| estimate_tokens(system, messages));
        if !force && !cfg.needs_compaction(before, messages.len(), window) {
            if cfg.clear_tool_outputs(messages, before) == 0 {
                return false;
            }
            self.events.emit(EventKind::ContextCompacted {
                strategy: "clear_tool_outputs".to_owned(),
                tokens_before: before as u64,
                tokens_after: estimate_tokens(system, messages) as u64,
                messages: messages.clone(),
            });
            return true;
        }
        if let Some(hooks) = self.hooks {
            let agent = self.config.agent_name();
            let site = HookSite::new(self.events, self.session_id, self.cwd, agent);
            let event = TurnEvent::Compacting {
                trigger: self.trigger,
            };
            // An observer: what it answers does not stop the compaction.
            hooks.turn_event(&site, event).await;
        }
        let freed = cfg.prune_tool_outputs(messages);
        let mut strategy = "prune_tool_outputs";
        let still = estimate_tokens(system, messages);
        if (force || freed == 0 || cfg.needs_compaction(still, messages.len(), window))
            && let Some(split) = cfg.summary_split(messages)
            // Asked for by hand, a summary of a short chat would come back as long as what
            // it replaced, billed for nothing.
            && (self.trigger != "manual"
                || estimate_tokens(None, &messages[..split]) >= MIN_SUMMARIZED_TOKENS)
        {
            let mut prefix = messages[..split].to_vec();
            prefix.push(Message::user(SUMMARY_PROMPT));
            let request = ModelRequest {
                context: self.events.context().clone(),
                system: self.config.system_prompt.clone(),
                messages: prefix.into(),
                tools: Vec::new(),
                options: self.config.request.clone(),
            };
            // The summary is not shown to the user as an agent message.
            let quiet = Emitter::new(Arc::new(NullSink), self.events.context().clone());
            match stream_request(
                self.provider,
                request,
                &quiet,
                self.cancel,
                self.config.stream_idle_timeout,
            )
            .await
            {
                Ok(turn) => {
                    usage.add(&turn.usage);
                    match turn.error() {
                        None => {
                            let summary = turn.text();
                            let tail = messages[split..].to_vec();
                            *messages = summarized_history(&summary, &tail);
                            strategy = "summarize";
                        }
                        Some(e) => self.warn(&e.to_string()),
                    }
                }
                Err(e) => self.warn(&e.to_string()),
            }
        } else if freed == 0 {
            return false;
        }
        let after = estimate_tokens(system, messages);
        if after >= before {
            return false;
        }
        self.events.emit(EventKind::ContextCompacted {
            strategy: strategy.to_owned(),
            tokens_before: before as u64,
            tokens_after: after as u64,
            messages: messages.clone(),
        });
        true
    }

    fn warn(&self, why: &str) {
        self.events.emit(EventKind::ItemCompleted {
            item: Item {
                id: self.events.next_item_id(),
                details: ItemDetails::Error {
                    message: format!("compaction by summary failed: {why}"),
                },
            },
        });
    }
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
            }]
            .into(),
        }
    }

    /// Where the outputs still whole are in a history of one output per message.
    fn kept(history: &[Message]) -> Vec<usize> {
        (0..history.len())
            .filter(|&i| matches!(&history[i].parts[0], Part::ToolResult { content, .. } if !is_pruned(content)))
            .collect()
    }

    #[test]
    fn old_outputs_are_cleared_in_batches_long_before_the_window_fills() {
        let cfg = CompactionConfig::default();
        let pruned = |h: &[Message]| {
            h.iter()
                .filter(|m| matches!(&m.parts[0], Part::ToolResult { content, .. } if is_pruned(content)))
                .count()
        };
        // Twelve outputs of 2,500 tokens: the nine beyond the newest three (the most that
        // fit in 8,000) free less than a batch.
        let mut history: Vec<Message> = (0..12).map(|_| tool_msg(10_000)).collect();
        let marker = PRUNED_MARKER.len().div_ceil(4);
        // 1,680 tokens of old outputs short, but the next output can push a kept one out:
        // it is looked for again after the next output.
        assert_eq!(24_000 - 9 * (2_500 - marker), 1_680);
        assert_eq!(cfg.clear_shortfall(&history), 1);
        let tokens = estimate_tokens(None, &history);
        assert_eq!(cfg.clear_tool_outputs(&mut history, tokens), 0);
        assert_eq!(pruned(&history), 0);
        // One more: the ten beyond the newest three go at once.
        history.push(tool_msg(10_000));
        let tokens = estimate_tokens(None, &history);
        let freed = cfg.clear_tool_outputs(&mut history, tokens);
        assert!(freed >= 24_000, "{freed}");
        assert_eq!(pruned(&history), 10);
        assert_eq!(kept(&history), [10, 11, 12]);
        // The next one adds too little for a batch: the history, and the cache, stay; the
        // shortfall says how much more is needed.
        history.push(tool_msg(10_000));
        let tokens = estimate_tokens(None, &history);
        // Short of one output's batch, less the three kept ones that newer outputs can push.
        assert_eq!(
            cfg.clear_shortfall(&history),
            24_000 - (2_500 - marker) - 3 * 2_500
        );
        assert_eq!(cfg.clear_tool_outputs(&mut history, tokens), 0);
        // Off, nothing is cleared before compaction is due.
        let off = CompactionConfig {
            clear_tool_outputs: None,
            ..CompactionConfig::default()
        };
        let mut history: Vec<Message> = (0..40).map(|_| tool_msg(12_000)).collect();
        assert_eq!(off.clear_tool_outputs(&mut history, 120_000), 0);
        assert!(PRUNED_MARKER.contains("make the same call again"));
        assert!(is_pruned("[tool output pruned to save context]"));
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

    /// The newest three outputs stay whole however large; the ones before them go when
    /// the tail is past the kept tokens, even a small one.
    #[test]
    fn the_newest_three_outputs_are_kept_whatever_their_size() {
        let cfg = CompactionConfig::default();
        let mut history: Vec<Message> = (0..12).map(|_| tool_msg(10_000)).collect();
        history.push(tool_msg(120_000));
        history.push(tool_msg(400));
        history.push(tool_msg(400));
        let tokens = estimate_tokens(None, &history);
        assert!(cfg.clear_tool_outputs(&mut history, tokens) >= 24_000);
        assert_eq!(
            kept(&history),
            [12, 13, 14],
            "the large output two responses ago stays"
        );
    }

    /// A batch is cleared when it is due, even with a kept tail shorter than `keep_tokens`.
    #[test]
    fn a_batch_behind_a_short_tail_is_cleared() {
        let cfg = CompactionConfig::default();
        // Three outputs of 9,000 tokens, then three of 100: 27,300 tokens in all.
        let mut history: Vec<Message> = (0..3).map(|_| tool_msg(36_000)).collect();
        history.extend((0..3).map(|_| tool_msg(400)));
        let tokens = estimate_tokens(None, &history);
        assert!(cfg.clear_tool_outputs(&mut history, tokens) >= 24_000);
        assert_eq!(kept(&history), [3, 4, 5]);
    }

    /// A short output after three large kept ones pushes one out: the shortfall counts the
    /// kept tail, so the run looks again after that output and not only after the old
    /// outputs' shortfall of history has gathered.
    #[test]
    fn the_shortfall_counts_what_the_kept_tail_can_lose() {
        let cfg = CompactionConfig::default();
        // Two old outputs of 7,600 tokens (15,160 clearable), then three of 9,000.
        let mut history: Vec<Message> = (0..2).map(|_| tool_msg(30_400)).collect();
        history.extend((0..3).map(|_| tool_msg(36_000)));
        let short = cfg.clear_shortfall(&history);
        assert!(short <= 100, "{short}");
        history.push(tool_msg(400));
        let tokens = estimate_tokens(None, &history);
        assert!(cfg.clear_tool_outputs(&mut history, tokens) >= 24_000);
        assert_eq!(kept(&history), [3, 4, 5]);
    }

    /// Short outputs are kept beyond three while they fit in the kept tokens.
    #[test]
    fn short_outputs_are_kept_while_they_fit() {
        let cfg = CompactionConfig::default();
        // 150 outputs of 250 tokens: the newest 32 fill 8,000.
        let mut history: Vec<Message> = (0..150).map(|_| tool_msg(1_000)).collect();
        let tokens = estimate_tokens(None, &history);
        assert!(cfg.clear_tool_outputs(&mut history, tokens) >= 24_000);
        assert_eq!(kept(&history), (118..150).collect::<Vec<_>>());
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

    /// The tally equals a full count after appends, an edit in place and a replacement.
    #[test]
    fn the_tally_counts_what_was_added_and_sees_edits() {
        let mut tally = TokenTally::default();
        let mut messages = vec![Message::user("hello there")];
        let full = |m: &[Message]| estimate_tokens(Some("system"), m);
        assert_eq!(tally.estimate(Some("system"), &messages), full(&messages));
        for i in 0..20 {
            messages.push(Message::new(
                Role::Tool,
                vec![Part::ToolResult {
                    call_id: format!("c{i}"),
                    content: "x".repeat(100 * i),
                    is_error: false,
                }],
            ));
            assert_eq!(tally.estimate(Some("system"), &messages), full(&messages));
        }
        // Pruning edits old messages in place: the tally sees them changed.
        let config = CompactionConfig {
            protect_tool_tokens: 10,
            min_prune_tokens: 1,
            ..CompactionConfig::default()
        };
        assert!(config.prune_tool_outputs(&mut messages) > 0);
        assert_eq!(tally.estimate(Some("system"), &messages), full(&messages));
        let tail = messages.split_off(10);
        assert_eq!(tally.estimate(None, &tail), estimate_tokens(None, &tail));

        // An owned tally checks only the last message: its owner forgets it on other changes.
        let mut owned = TokenTally::owned();
        assert_eq!(
            owned.estimate(None, &messages),
            estimate_tokens(None, &messages)
        );
        messages.push(Message::user("more"));
        assert_eq!(
            owned.estimate(None, &messages),
            estimate_tokens(None, &messages)
        );
        messages.remove(0);
        owned.forget();
        assert_eq!(
            owned.estimate(None, &messages),
            estimate_tokens(None, &messages)
        );
    }
}
