//! The session's commands as the editor offers them (`available_commands_update`): a prompt
//! that is `/compact` or `/clear` does what the REPL's command of that name does instead of
//! going to the model, `/rewind [N]` takes back the file changes of prompt N (default: the
//! last) and every later one, and `/SKILL [REQUEST]` asks for one of the run's skills by hand (its
//! instructions, then the request, as the prompt).

use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, SessionUpdate,
    UnstructuredCommandInput,
};

/// A command a prompt can be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Command {
    /// Summarise the conversation now.
    Compact,
    /// Start the conversation afresh.
    Clear,
    /// Take back the file changes of a prompt (its number as given; empty: the last) and
    /// every later one.
    Rewind(String),
    /// Use a skill for what follows its name.
    Skill {
        /// The skill.
        name: String,
        /// What the person asked with it (maybe nothing).
        request: String,
    },
}

/// The session's own commands, with what each does; a skill of the same name is not one.
const OWN: [(&str, &str); 3] = [
    (
        "compact",
        "Summarise the conversation so far to free the model's context",
    ),
    (
        "clear",
        "Start the conversation afresh (the loop and its settings stay)",
    ),
    (
        "rewind",
        "Take back the file changes of a prompt (its number; default: the last) and every later one",
    ),
];

/// The update that lists them, with `skills` (name, description).
pub(crate) fn available(skills: &[(String, String)]) -> SessionUpdate {
    let own = OWN.iter().map(|(name, description)| {
        let command = AvailableCommand::new(*name, *description);
        match *name {
            "rewind" => command.input(AvailableCommandInput::Unstructured(
                UnstructuredCommandInput::new("a prompt's number (default: the last)"),
            )),
            _ => command,
        }
    });
    let skills = skills
        .iter()
        .filter(|(name, _)| !OWN.iter().any(|(own, _)| own == name))
        .map(|(name, description)| {
            AvailableCommand::new(name.clone(), format!("Skill: {description}")).input(
                AvailableCommandInput::Unstructured(UnstructuredCommandInput::new(
                    "what to use it for",
                )),
            )
        });
    SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(
        own.chain(skills).collect(),
    ))
}

/// The command a prompt's text is, when it is one.
pub(crate) fn command_of(text: &str, skills: &[(String, String)]) -> Option<Command> {
    let line = text.trim().strip_prefix('/')?;
    let (name, rest) = line
        .split_once(char::is_whitespace)
        .map_or((line, ""), |(name, rest)| (name, rest.trim()));
    match name {
        "compact" if rest.is_empty() => Some(Command::Compact),
        "clear" if rest.is_empty() => Some(Command::Clear),
        "rewind" => Some(Command::Rewind(rest.to_owned())),
        _ if skills.iter().any(|(skill, _)| skill == name) => Some(Command::Skill {
            name: name.to_owned(),
            request: rest.to_owned(),
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prompt_is_a_command_only_by_a_name_the_session_has() {
        let skills = [("review".to_owned(), "Review a change".to_owned())];
        assert_eq!(command_of(" /compact ", &skills), Some(Command::Compact));
        assert_eq!(command_of("/clear", &skills), Some(Command::Clear));
        assert_eq!(
            command_of("/rewind 2", &skills),
            Some(Command::Rewind("2".into()))
        );
        assert_eq!(
            command_of("/review the parser\nplease", &skills),
            Some(Command::Skill {
                name: "review".into(),
                request: "the parser\nplease".into()
            })
        );
        assert_eq!(command_of("/review", &skills).map(|_| ()), Some(()));
        assert_eq!(command_of("/unknown thing", &skills), None);
        assert_eq!(command_of("/clear everything now", &skills), None);
        assert_eq!(command_of("explain /clear", &skills), None);
    }
}
