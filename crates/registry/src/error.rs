//! What can go wrong when resolving a loop by name or reading a registry file.

/// A registry error, as one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    /// No loop has this name.
    #[error("no agent loop named `{name}`{}", suggest(suggestions))]
    Unknown {
        /// The name asked for.
        name: String,
        /// The closest known names.
        suggestions: Vec<String>,
    },
    /// A registry file could not be read or parsed; `at` is `file:line:column` when known.
    #[error("{at}: {reason}")]
    File {
        /// Where: the file, with line and column when the parser gave them.
        at: String,
        /// What is wrong.
        reason: String,
    },
}

fn suggest(names: &[String]) -> String {
    match names {
        [] => "; `wonopcode --list-loops` shows the known loops".to_owned(),
        [one] => format!("; did you mean `{one}`?"),
        many => format!(
            "; did you mean one of: {}?",
            many.iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}
