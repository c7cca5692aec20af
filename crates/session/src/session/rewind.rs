//! Taking a session back to before one of its prompts: the files its run changed from
//! there on (the journal's checkpoints, `wonopcode_journal::rewind_run`), the conversation
//! (the root's messages as they were when the prompt was given), or both. A conversation
//! compacted or cleared since has no such point any more: that is refused, in words, and
//! the files can still be taken back alone.

use wonopcode_agent_loop::compaction::estimate_tokens;
use wonopcode_journal::{Rewind, SessionCommand};
use wonopcode_protocol::{EventKind, Message};

use super::Session;
use crate::error::SessionError;

/// What a rewind takes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RewindScope {
    /// The files and the conversation.
    #[default]
    Both,
    /// The files only.
    Code,
    /// The conversation only.
    Conversation,
}

impl RewindScope {
    /// The scope a word names: `both`, `code` or `conversation` (or their first letters,
    /// `b`, `c`, `v`).
    pub fn parse(word: &str) -> Option<Self> {
        match word.trim().to_lowercase().as_str() {
            "" | "b" | "both" => Some(Self::Both),
            "c" | "code" | "files" => Some(Self::Code),
            "v" | "conversation" => Some(Self::Conversation),
            _ => None,
        }
    }

    fn files(self) -> bool {
        self != Self::Conversation
    }

    fn conversation(self) -> bool {
        self != Self::Code
    }
}

/// Where a prompt began in the conversation: how many messages there were, and the last of
/// them (a conversation rewritten since, by compaction, no longer has it there).
#[derive(Debug, Clone)]
pub(super) struct PromptStart {
    len: usize,
    last: Option<Message>,
}

impl PromptStart {
    pub(super) fn of(messages: &[Message]) -> Self {
        Self {
            len: messages.len(),
            last: messages.last().cloned(),
        }
    }

    /// Whether `messages` still begin as they did then.
    fn holds_in(&self, messages: &[Message]) -> bool {
        messages.len() >= self.len
            && self
                .len
                .checked_sub(1)
                .is_none_or(|i| Some(&messages[i]) == self.last.as_ref())
    }
}

/// What a rewind did.
#[derive(Debug, Default)]
pub struct Rewound {
    /// What was worked out for the files (`None`: they were not asked for). Nothing was
    /// changed when some overlap changes that stay.
    pub files: Option<Rewind>,
    /// How many messages the conversation dropped (`None`: it was not asked for, or the
    /// files' rewind was refused).
    pub messages_dropped: Option<usize>,
}

impl Session {
    /// Takes back what `scope` names from prompt `number` (from 1) of this session's run
    /// on: its file changes (a file changed since by someone else left alone; nothing when
    /// the changes overlap others that stay), and the conversation from that prompt on.
    /// `Err`, before anything changes: no such prompt, no journal (so no checkpoints), or a
    /// conversation without that point any more.
    pub fn rewind(&mut self, number: usize, scope: RewindScope) -> Result<Rewound, SessionError> {
        let journal = self.journal.clone().ok_or_else(|| {
            SessionError::Choice("the session keeps no journal, so no checkpoints".into())
        })?;
        let prompts = journal.prompts().len();
        if !(1..=prompts).contains(&number) {
            return Err(SessionError::Choice(format!(
                "this run has {prompts} prompt(s); there is no prompt {number}"
            )));
        }
        if scope.conversation() {
            self.conversation_point(number)?;
        }
        let mut rewound = Rewound::default();
        if scope.files() {
            let files = wonopcode_journal::rewind_run(
                journal.dir(),
                &self.root,
                number - 1,
                &[],
                false,
                false,
            )
            .map_err(|e| SessionError::Choice(e.to_string()))?;
            let refused = !files.overlaps.is_empty();
            rewound.files = Some(files);
            if refused {
                return Ok(rewound);
            }
        }
        if scope.conversation() {
            rewound.messages_dropped = Some(self.rewind_conversation(number)?);
        }
        Ok(rewound)
    }

    /// Where prompt `number` began, when the conversation still holds that point.
    fn conversation_point(&self, number: usize) -> Result<PromptStart, SessionError> {
        let start = self
            .prompt_starts
            .get(number - 1)
            .cloned()
            .flatten()
            .ok_or_else(|| {
                SessionError::Choice(format!(
                    "prompt {number} was not given in this session, so its conversation cannot be taken back (the files can: `code`)"
                ))
            })?;
        if !start.holds_in(&self.messages) {
            return Err(SessionError::Choice(format!(
                "the conversation was compacted, cleared or taken back since prompt {number}, so it no longer has that point (the files can be taken back: `code`)"
            )));
        }
        Ok(start)
    }

    /// Drops the conversation from prompt `number` (from 1) on (`context.compacted`,
    /// strategy `rewind`, which the history file and the journal record; a resume gives it
    /// again in its place); how many messages it dropped.
    pub(super) fn rewind_conversation(&mut self, number: usize) -> Result<usize, SessionError> {
        let start = self.conversation_point(number)?;
        let system = self.config.system_prompt.as_deref();
        let tokens_before = estimate_tokens(system, &self.messages);
        let dropped = self.messages.len() - start.len;
        self.messages.truncate(start.len);
        self.events.emit(EventKind::ContextCompacted {
            strategy: "rewind".to_owned(),
            tokens_before: tokens_before as u64,
            tokens_after: estimate_tokens(system, &self.messages) as u64,
            messages: self.messages.clone(),
        });
        self.kept(SessionCommand::Rewind { prompt: number });
        Ok(dropped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said(text: &str) -> Message {
        Message::user(text)
    }

    #[test]
    fn a_prompts_start_holds_until_the_messages_before_it_change() {
        let mut messages = vec![said("one"), said("answer")];
        let start = PromptStart::of(&messages);
        messages.push(said("two"));
        assert!(start.holds_in(&messages));
        // Compaction rewrote what came before.
        messages[1] = said("summary");
        assert!(!start.holds_in(&messages));
        // Taken back past it.
        messages.truncate(1);
        assert!(!start.holds_in(&messages));
        assert!(PromptStart::of(&[]).holds_in(&[]));
        assert_eq!(RewindScope::parse("v"), Some(RewindScope::Conversation));
        assert_eq!(RewindScope::parse(""), Some(RewindScope::Both));
        assert_eq!(RewindScope::parse("everything"), None);
    }
}
