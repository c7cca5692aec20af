//! The session's modes (`session/set_mode`): how much runs without asking the editor. They
//! only answer questions the permission rules leave open: a rule that denies still denies,
//! and a command the sandbox stopped is asked about in every mode.

use agent_client_protocol::v1::schema::{SessionMode, SessionModeId, SessionModeState};
use wonopcode_tools::permission::FILE_EDIT_TOOLS;

/// How much runs unasked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Every question is asked (the rules as given).
    #[default]
    Ask,
    /// File edits in the workspace run unasked; the rest is asked.
    AutoEdit,
    /// Every question is answered yes, as `--yes` does.
    FullAuto,
}

/// The modes, with their ids, names and what each does.
const MODES: [(Mode, &str, &str, &str); 3] = [
    (
        Mode::Ask,
        "ask",
        "Ask",
        "Ask before a call the rules do not allow",
    ),
    (
        Mode::AutoEdit,
        "auto-edit",
        "Auto-edit",
        "Edit files in the workspace without asking; ask for the rest",
    ),
    (
        Mode::FullAuto,
        "full-auto",
        "Full auto",
        "Run every call the rules do not deny without asking (the sandbox still holds)",
    ),
];

impl Mode {
    /// The mode with `id`.
    pub(crate) fn of(id: &str) -> Option<Self> {
        MODES.iter().find(|m| m.1 == id).map(|m| m.0)
    }

    /// Its id.
    pub(crate) fn id(self) -> &'static str {
        MODES.iter().find(|m| m.0 == self).map_or("ask", |m| m.1)
    }

    /// Whether a call of `tool` runs without asking.
    pub(crate) fn allows(self, tool: &str) -> bool {
        match self {
            Self::Ask => false,
            // The tools that only change files in the workspace (the path guard holds).
            Self::AutoEdit => FILE_EDIT_TOOLS.contains(&tool),
            Self::FullAuto => true,
        }
    }

    /// The modes as `session/new` offers them, `self` current.
    pub(crate) fn state(self) -> SessionModeState {
        SessionModeState::new(
            SessionModeId::new(self.id()),
            MODES
                .iter()
                .map(|(_, id, name, description)| {
                    SessionMode::new(SessionModeId::new(*id), *name).description(*description)
                })
                .collect(),
        )
    }
}
