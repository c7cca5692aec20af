//! The session's commands as the editor offers them (`available_commands_update`): a prompt
//! that is `/compact` or `/clear` does what the REPL's command of that name does instead of
//! going to the model.

use agent_client_protocol::v1::schema::{AvailableCommand, AvailableCommandsUpdate, SessionUpdate};

/// A command a prompt can be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Command {
    /// Summarise the conversation now.
    Compact,
    /// Start the conversation afresh.
    Clear,
}

/// The commands, with what each does.
const COMMANDS: [(Command, &str, &str); 2] = [
    (
        Command::Compact,
        "compact",
        "Summarise the conversation so far to free the model's context",
    ),
    (
        Command::Clear,
        "clear",
        "Start the conversation afresh (the loop and its settings stay)",
    ),
];

/// The update that lists them.
pub(crate) fn available() -> SessionUpdate {
    SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(
        COMMANDS
            .iter()
            .map(|(_, name, description)| AvailableCommand::new(*name, *description))
            .collect(),
    ))
}

/// The command a prompt's text is, when it is one.
pub(crate) fn command_of(text: &str) -> Option<Command> {
    let name = text.trim().strip_prefix('/')?;
    COMMANDS
        .iter()
        .find(|(_, n, _)| *n == name)
        .map(|(command, _, _)| *command)
}
