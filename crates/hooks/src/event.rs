//! The points of a run a hook can be configured for, by Claude Code's names.

use std::fmt;

/// An event a hook is configured for (a key of the `hooks` table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HookEvent {
    /// The root context starts (or goes on from a history).
    SessionStart,
    /// A prompt, a child's task or follow-up, is about to run.
    UserPromptSubmit,
    /// A tool call is about to run.
    PreToolUse,
    /// A tool call ran.
    PostToolUse,
    /// A tool call needs the user's approval.
    PermissionRequest,
    /// A context's history is about to be compacted.
    PreCompact,
    /// A child context starts its first turn.
    SubagentStart,
    /// A child context's turn would end.
    SubagentStop,
    /// The root context's turn would end.
    Stop,
    /// The session ends.
    SessionEnd,
}

impl HookEvent {
    /// Every event, in the order Claude Code's documentation lists them.
    pub const ALL: [Self; 10] = [
        Self::SessionStart,
        Self::UserPromptSubmit,
        Self::PreToolUse,
        Self::PostToolUse,
        Self::PermissionRequest,
        Self::PreCompact,
        Self::SubagentStart,
        Self::SubagentStop,
        Self::Stop,
        Self::SessionEnd,
    ];

    /// The event's name, as a settings file spells it.
    pub fn name(self) -> &'static str {
        match self {
            Self::SessionStart => "SessionStart",
            Self::UserPromptSubmit => "UserPromptSubmit",
            Self::PreToolUse => "PreToolUse",
            Self::PostToolUse => "PostToolUse",
            Self::PermissionRequest => "PermissionRequest",
            Self::PreCompact => "PreCompact",
            Self::SubagentStart => "SubagentStart",
            Self::SubagentStop => "SubagentStop",
            Self::Stop => "Stop",
            Self::SessionEnd => "SessionEnd",
        }
    }

    /// The event named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.name() == name)
    }

    /// Whether a hook of this event decides whether a tool call runs: a hook that fails
    /// there refuses the call unless its entry says otherwise.
    pub fn gates_a_call(self) -> bool {
        matches!(self, Self::PreToolUse | Self::PermissionRequest)
    }

    /// Whether what a hook of this event prints on exit 0 (not JSON) is context for the
    /// model, as in Claude Code.
    pub fn prints_context(self) -> bool {
        matches!(self, Self::UserPromptSubmit | Self::SessionStart)
    }
}

impl fmt::Display for HookEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
