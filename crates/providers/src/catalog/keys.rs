//! A provider's credential: a key or a bearer token from the environment, and whether one
//! is at hand.

use super::entries::ProviderEntry;

/// A provider's credential, by how it goes to the server.
pub(super) enum Key {
    /// A key, sent as the provider's `auth` says.
    Key(String),
    /// A bearer token from `token_env`.
    Token(String),
}

/// The trimmed value of `variable` in `env`, when it is set and not blank.
pub(super) fn set_value(
    variable: Option<&str>,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
) -> Option<String> {
    let value = env(variable?)?;
    let value = value.trim();
    (!value.is_empty()).then(|| value.to_owned())
}

/// Whether a key for the provider is at hand: set in its variable (or its token's), or a
/// command to print it.
pub(super) fn has_key(
    entry: &ProviderEntry,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
) -> bool {
    entry.key_command.is_some()
        || set_value(entry.key_env.as_deref(), env).is_some()
        || set_value(entry.token_env.as_deref(), env).is_some()
}
